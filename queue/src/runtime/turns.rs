//! Owners take turns for a node's slots (ADR 0075). A claim already prefers, within a
//! priority, the owners with the fewest tasks on the node; but a node whose slots are all
//! held by one owner's long tasks claims nothing until one ends. So while every slot is
//! busy the producer looks, every [`LOOK_INTERVAL`], for other owners' due work, and for
//! each owner waiting asks one task of the owner with the most tasks on the node to yield
//! its slot at its next batch boundary. The yielded task goes back to the queue with its
//! place and its attempt kept, and resumes from its checkpoint when its turn comes again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::inflight::RunningTask;

/// How often a node whose slots are all busy looks for other owners' waiting work: a
/// waiting owner starts within about this plus one batch of a running task.
pub(crate) const LOOK_INTERVAL: Duration = Duration::from_millis(250);

/// The running tasks to ask to yield, one per waiting owner at most: for each owner with due
/// work (`waiting`: owner and the highest priority of that work), highest priority first, a
/// task of the owner with the most tasks on the node, at no higher a priority, provided that
/// owner holds at least two more slots than the waiting one (so two owners never trade a
/// slot back and forth). None while a task asked before has not yielded yet: the waiting
/// owners may be those it makes room for.
pub(crate) fn tasks_to_yield(running: &[Arc<RunningTask>], waiting: &[(Uuid, i32)]) -> Vec<Uuid> {
    if running.iter().any(|task| task.yield_asked()) {
        return Vec::new();
    }
    let staying: Vec<&RunningTask> = running.iter().map(Arc::as_ref).collect();
    let mut slots: HashMap<Uuid, usize> = HashMap::new();
    for task in &staying {
        *slots.entry(task.owner_id).or_default() += 1;
    }
    let mut waiting = waiting.to_vec();
    waiting.sort_by_key(|(_, priority)| std::cmp::Reverse(*priority));
    let mut chosen: Vec<Uuid> = Vec::new();
    for (owner, priority) in waiting {
        let theirs = slots.get(&owner).copied().unwrap_or(0);
        let giver = staying
            .iter()
            .filter(|task| task.owner_id != owner && task.priority <= priority)
            .filter(|task| !chosen.contains(&task.id))
            .filter(|task| slots[&task.owner_id] >= theirs + 2)
            .max_by_key(|task| (slots[&task.owner_id], std::cmp::Reverse(task.priority)));
        if let Some(task) = giver {
            chosen.push(task.id);
            *slots.entry(task.owner_id).or_default() -= 1;
            *slots.entry(owner).or_default() += 1;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::inflight::InFlight;

    fn node(tasks: &[(u128, i32)]) -> InFlight {
        InFlight::running_for_owners(tasks)
    }

    fn owner_of(inflight: &InFlight, id: Uuid) -> u128 {
        let running = inflight.running();
        let task = running.iter().find(|task| task.id == id).unwrap();
        task.owner_id.as_u128()
    }

    #[test]
    fn the_owner_holding_most_slots_gives_one_to_each_waiting_owner() {
        let inflight = node(&[(1, 0), (1, 0), (1, 0), (1, 0), (2, 0), (2, 0)]);
        let waiting = [(Uuid::from_u128(3), 0), (Uuid::from_u128(4), 0)];
        let chosen = tasks_to_yield(&inflight.running(), &waiting);
        // Owner 1 (4 slots) gives one to owner 3; then 1 and 2 hold 3 and 2, and owner 4
        // takes one of owner 1's again.
        assert_eq!(chosen.len(), 2);
        assert!(chosen.iter().all(|id| owner_of(&inflight, *id) == 1));
    }

    #[test]
    fn nobody_yields_to_an_owner_holding_nearly_as_many_or_to_lower_priority_work() {
        let inflight = node(&[(1, 0), (1, 0), (2, 0)]);
        assert!(tasks_to_yield(&inflight.running(), &[(Uuid::from_u128(2), 0)]).is_empty());
        let inflight = node(&[(1, 5), (1, 5), (1, 5)]);
        assert!(tasks_to_yield(&inflight.running(), &[(Uuid::from_u128(2), 0)]).is_empty());
        // An owner's own waiting work never takes its own slots.
        assert!(tasks_to_yield(&inflight.running(), &[(Uuid::from_u128(1), 9)]).is_empty());
    }

    #[test]
    fn nobody_more_is_asked_while_an_asked_task_has_not_yielded() {
        let inflight = node(&[(1, 0), (1, 0), (1, 0)]);
        let waiting = [(Uuid::from_u128(2), 0)];
        let first = tasks_to_yield(&inflight.running(), &waiting);
        assert_eq!(first.len(), 1);
        for task in inflight.running() {
            if first.contains(&task.id) {
                task.ask_to_yield();
            }
        }
        // The waiting owner is still waiting: for the slot the asked task is making.
        assert!(tasks_to_yield(&inflight.running(), &waiting).is_empty());
    }
}
