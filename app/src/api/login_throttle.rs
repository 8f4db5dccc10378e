//! Limits sign-in attempts per username, so a password cannot be guessed by brute force.
//!
//! The limit is per username rather than per client address because addresses are shared
//! (offices, proxies) and easy to rotate, while the thing to protect is each account. The
//! price is that someone hammering an account can make its owner wait a minute; that is the
//! usual trade, and it only delays, never locks out for good.

use std::num::NonZeroU32;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Attempts allowed in a burst for one username.
const BURST: u32 = 5;
/// After the burst, one more attempt per this many seconds.
const REFILL_SECONDS: u64 = 12;
/// Above this many remembered usernames, forget the ones whose limit has fully recovered.
const MAX_TRACKED_USERNAMES: usize = 10_000;

/// The sign-in attempt limiter shared by all requests of a node.
#[derive(Debug)]
pub struct LoginThrottle {
    limiter: DefaultKeyedRateLimiter<String>,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        let burst = NonZeroU32::new(BURST).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(std::time::Duration::from_secs(REFILL_SECONDS))
            .unwrap_or_else(|| Quota::per_minute(burst))
            .allow_burst(burst);
        Self {
            limiter: RateLimiter::keyed(quota),
        }
    }
}

impl LoginThrottle {
    /// Counts one attempt for `username`; `false` when it is over the limit.
    pub fn allow(&self, username: &str) -> bool {
        if self.limiter.len() > MAX_TRACKED_USERNAMES {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&username.trim().to_lowercase())
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_allowed_then_attempts_are_refused_per_username() {
        let throttle = LoginThrottle::default();
        for _ in 0..BURST {
            assert!(throttle.allow("kim"));
        }
        assert!(!throttle.allow("kim"));
        assert!(
            !throttle.allow(" KIM "),
            "the same account however it is typed"
        );
        assert!(throttle.allow("lee"), "other accounts are unaffected");
    }
}
