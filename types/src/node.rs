//! A queue node as administrators see it on Queue health.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Whether a node works, stopped cleanly, or went silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeState {
    /// Sending heartbeats: it claims and runs tasks.
    Live,
    /// Shut down cleanly, having handed its tasks back.
    Stopped,
    /// Silent for the node timeout, or replaced by a newer start of the same system id: the
    /// rescuer returns its tasks to the queue, by the same rule.
    Dead,
}

impl NodeState {
    /// The state of a node whose last heartbeat was `silent` ago.
    pub fn of(stopped: bool, replaced: bool, silent: Duration, node_timeout: Duration) -> Self {
        if stopped {
            NodeState::Stopped
        } else if replaced || silent >= node_timeout {
            NodeState::Dead
        } else {
            NodeState::Live
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            NodeState::Live => "LIVE",
            NodeState::Stopped => "STOPPED",
            NodeState::Dead => "DEAD",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_or_a_newer_start_means_dead_and_a_clean_stop_wins() {
        let timeout = Duration::from_secs(30);
        let of = |stopped, replaced, silent| {
            NodeState::of(stopped, replaced, Duration::from_secs(silent), timeout)
        };
        assert_eq!(of(false, false, 5), NodeState::Live);
        assert_eq!(of(false, false, 30), NodeState::Dead);
        assert_eq!(of(false, true, 5), NodeState::Dead);
        assert_eq!(of(true, true, 600), NodeState::Stopped);
    }
}
