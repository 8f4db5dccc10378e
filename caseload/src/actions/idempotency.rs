//! Idempotent submissions (the IETF httpapi `Idempotency-Key` draft): a client names each
//! submission with a key of its choosing, and sending the same key again, however often and
//! however concurrently, makes no second task.
//!
//! - Same key, same request: the reply names the task the first request made, whatever its
//!   status now.
//! - Same key, another request: refused ([`super::spec::SubmitError::KeyReused`]), since
//!   the client is confused about what it sent.
//!
//! A key belongs to the user who sent it (two users may pick the same one) and is stored as
//! the task's engine `unique_key`: concurrent requests meet at the engine's unique index,
//! which lets one insert and hands the others that task; later requests find it by the key
//! while the task is kept (the retention period, 7 days by default).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The longest key accepted (a UUID, which the draft suggests, has 36 characters).
pub const MAX_KEY_LEN: usize = 200;

/// A client's key for one submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key, if it is 1 to [`MAX_KEY_LEN`] visible ASCII characters; else what is wrong.
    pub fn parse(key: &str) -> Result<Self, String> {
        let visible = |c: char| c.is_ascii_graphic();
        if key.is_empty() || key.len() > MAX_KEY_LEN || !key.chars().all(visible) {
            return Err(format!(
                "an idempotency key has 1 to {MAX_KEY_LEN} visible ASCII characters"
            ));
        }
        Ok(Self(key.to_owned()))
    }

    /// The engine's unique key for this key sent by `owner`.
    pub(crate) fn unique_key(&self, owner: Uuid) -> String {
        format!("idempotency:{owner}:{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_visible_ascii_and_belong_to_their_sender() {
        let key = IdempotencyKey::parse("4c1e9d1e-0b8f-4f6a-9a53-1f7f3c1c2d10").unwrap();
        let (kim, lee) = (Uuid::now_v7(), Uuid::now_v7());
        assert_ne!(key.unique_key(kim), key.unique_key(lee));
        for bad in [
            "",
            "with space",
            "tab\there",
            "ключ",
            &"k".repeat(MAX_KEY_LEN + 1),
        ] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
