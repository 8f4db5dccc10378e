//! How many live update streams each user may hold open on a node. Each open dashboard tab
//! holds one; a script opening hundreds would hold a connection and a subscription each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

/// Streams per user unless configured otherwise: browsers keep at most six connections to
/// one site open over HTTP/1.1, so a seventh tab could not stream anyway.
pub const STREAMS_PER_USER_DEFAULT: usize = 6;

/// The open streams of a node, per user.
#[derive(Debug, Clone)]
pub struct StreamLimit {
    open: Arc<Mutex<HashMap<Uuid, usize>>>,
    per_user: usize,
}

/// One open stream; the count goes down when it is dropped (the stream ended).
#[derive(Debug)]
pub struct StreamSlot {
    limit: StreamLimit,
    user: Uuid,
}

impl StreamLimit {
    pub fn new(per_user: usize) -> Self {
        Self {
            open: Arc::default(),
            per_user: per_user.max(1),
        }
    }

    /// The most streams one user may hold.
    pub fn per_user(&self) -> usize {
        self.per_user
    }

    /// A slot for another stream of `user`, or `None` when they hold the most already.
    pub fn open(&self, user: Uuid) -> Option<StreamSlot> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(user).or_default();
        if *count >= self.per_user {
            return None;
        }
        *count += 1;
        Some(StreamSlot {
            limit: self.clone(),
            user,
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self
            .limit
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_user_gets_their_own_few_slots_back_when_streams_end() {
        let limit = StreamLimit::new(2);
        let (kim, lee) = (Uuid::now_v7(), Uuid::now_v7());
        let first = limit.open(kim).unwrap();
        let _second = limit.open(kim).unwrap();
        assert!(limit.open(kim).is_none());
        assert!(limit.open(lee).is_some(), "other users are unaffected");
        drop(first);
        assert!(limit.open(kim).is_some(), "an ended stream frees its slot");
    }
}
