//! How a claim taking turns splits among owners (ADR 0085): among the owners whose first due
//! task has the highest priority, the claim fills like water, raising the owners with the
//! fewest tasks on the claiming node to a common level, and each owner's quota is that level
//! less its tasks on the node. Each owner then gives its first due tasks up to its quota.
//! SQLite's claim computes the quotas here; PostgreSQL's claim computes the same in SQL
//! (`m20261207_001200_claims_by_quota`), where a quota per owner is a lateral `LIMIT`.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// An owner with due tasks, as its first due task (in claim order) shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DueOwner {
    pub owner_id: Uuid,
    pub priority: i32,
    pub first_due: DateTime<Utc>,
}

/// Each owner's share of a claim of `wanted` tasks, none of them zero, adding up to
/// `wanted`, for at most `most_owners` owners: those whose first due task has the highest
/// priority, fewest tasks on the node (`on_node`) first, then oldest first due task. The
/// first ones take one more each when `wanted` does not divide evenly.
pub(crate) fn quotas(
    owners: &[DueOwner],
    on_node: &[(Uuid, i64)],
    wanted: u32,
    most_owners: usize,
) -> Vec<(Uuid, i64)> {
    let Some(top) = owners.iter().map(|owner| owner.priority).max() else {
        return Vec::new();
    };
    let tasks_on_node = |owner: Uuid| {
        on_node
            .iter()
            .find(|(on, _)| *on == owner)
            .map_or(0, |(_, tasks)| *tasks)
    };
    let mut ranked: Vec<(i64, DateTime<Utc>, Uuid)> = owners
        .iter()
        .filter(|owner| owner.priority == top)
        .map(|owner| {
            let tasks = tasks_on_node(owner.owner_id);
            (tasks, owner.first_due, owner.owner_id)
        })
        .collect();
    ranked.sort();
    ranked.truncate(most_owners);
    let wanted = i64::from(wanted);
    // The most owners the water reaches: raising the first `reached` to the tasks of the
    // last of them takes fewer than `wanted`. Since the tasks only grow down the ranks, the
    // first owner it does not reach ends the search.
    let mut reached = 0_i64;
    let mut below = 0_i64;
    for (tasks, _, _) in &ranked {
        if (reached + 1) * tasks - (below + tasks) >= wanted {
            break;
        }
        reached += 1;
        below += tasks;
    }
    if reached == 0 {
        return Vec::new();
    }
    let level = (wanted + below) / reached;
    let extra = (wanted + below) % reached;
    ranked
        .iter()
        .zip(0..reached)
        .map(|((tasks, _, owner), rank)| (*owner, level - tasks + i64::from(rank < extra)))
        .filter(|(_, quota)| *quota > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    fn owner(id: u128, priority: i32, age_secs: i64) -> DueOwner {
        DueOwner {
            owner_id: Uuid::from_u128(id),
            priority,
            first_due: DateTime::UNIX_EPOCH + Duration::seconds(1_000 - age_secs),
        }
    }

    fn of(quotas: &[(Uuid, i64)]) -> Vec<(u128, i64)> {
        quotas.iter().map(|(id, n)| (id.as_u128(), *n)).collect()
    }

    #[test]
    fn the_owners_with_fewest_tasks_on_the_node_are_raised_first() {
        let owners = [owner(1, 0, 10), owner(2, 0, 5), owner(3, 0, 1)];
        // 1 holds 5, 2 holds 1, 3 none: 3 and 2 rise to 5 (9 tasks), 1 is not reached.
        let on_node = [(Uuid::from_u128(1), 5), (Uuid::from_u128(2), 1)];
        assert_eq!(of(&quotas(&owners, &on_node, 9, 100)), [(3, 5), (2, 4)]);
        // Three more: all three rise to 6.
        assert_eq!(
            of(&quotas(&owners, &on_node, 12, 100)),
            [(3, 6), (2, 5), (1, 1)]
        );
        // One fewer: to 6, 6 and 5, the one left short the owner with most (1, none).
        assert_eq!(of(&quotas(&owners, &on_node, 11, 100)), [(3, 6), (2, 5)]);
        let sum: i64 = quotas(&owners, &on_node, 1_000, 100)
            .iter()
            .map(|(_, n)| n)
            .sum();
        assert_eq!(sum, 1_000);
    }

    #[test]
    fn ties_go_to_the_oldest_first_task_and_priority_comes_first() {
        let owners = [owner(1, 0, 1), owner(2, 0, 9), owner(3, 5, 0)];
        assert_eq!(of(&quotas(&owners, &[], 4, 100)), [(3, 4)]);
        let level = [owner(1, 0, 1), owner(2, 0, 9)];
        assert_eq!(of(&quotas(&level, &[], 3, 100)), [(2, 2), (1, 1)]);
        assert_eq!(of(&quotas(&level, &[], 1, 100)), [(2, 1)]);
    }

    #[test]
    fn no_owner_gets_a_quota_of_nothing_and_the_owners_are_capped() {
        let owners = [owner(1, 0, 1), owner(2, 0, 2)];
        let on_node = [(Uuid::from_u128(1), 1), (Uuid::from_u128(2), 1)];
        assert_eq!(of(&quotas(&owners, &on_node, 1, 100)), [(2, 1)]);
        assert_eq!(of(&quotas(&owners, &[], 5, 1)), [(2, 5)]);
        assert!(quotas(&[], &[], 5, 100).is_empty());
    }
}
