//! Limits on signing in, so a password cannot be guessed by brute force and a flood of
//! sign-ins cannot exhaust the node.
//!
//! - **Per username**: the thing to protect is each account, and addresses are shared
//!   (offices, proxies) and easy to rotate. The price is that someone hammering an account
//!   can make its owner wait a minute; that is the usual trade, and it only delays.
//! - **Per client address**: every attempt at an unknown username still costs a full
//!   password hash (so timing reveals nothing), so a client trying many usernames is slowed
//!   down too. The address is the connection's peer, or the `X-Forwarded-For` hop that the
//!   node's own proxy added when the server is told to trust one (see [`ClientAddress`]).
//! - **Password hashes at once**: each argon2 check takes about 19 MiB and a core for tens of
//!   milliseconds, so only a few run at a time; the others wait their turn, briefly.
//!
//! The limits are kept in each node's memory: in a cluster behind a load balancer a client
//! may get up to one allowance per node.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Attempts allowed in a burst for one username.
const BURST: u32 = 5;
/// After the burst, one more attempt per this many seconds.
const REFILL_SECONDS: u64 = 12;
/// Attempts allowed in a burst from one client address (an office signing in at nine).
const CLIENT_BURST: u32 = 30;
/// After the burst, one more attempt from the address per this many seconds.
const CLIENT_REFILL_SECONDS: u64 = 2;
/// Above this many remembered keys, forget the ones whose limit has fully recovered.
const MAX_TRACKED_KEYS: usize = 10_000;
/// Password hashes computed at once unless the server is configured otherwise: the cores
/// of the machine class this runs on.
pub const CONCURRENT_HASHES_DEFAULT: usize = 2;
/// How long a sign-in waits for its turn to hash before the node answers "busy".
const HASH_WAIT: Duration = Duration::from_secs(10);

/// Where a request came from, as the server determined it (a request extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub Option<IpAddr>);

/// The sign-in limits shared by all requests of a node.
#[derive(Debug)]
pub struct LoginThrottle {
    per_username: DefaultKeyedRateLimiter<String>,
    per_client: DefaultKeyedRateLimiter<IpAddr>,
    hashing: Semaphore,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        Self::new(CONCURRENT_HASHES_DEFAULT)
    }
}

impl LoginThrottle {
    /// Limits that compute at most `concurrent_hashes` password hashes at once.
    pub fn new(concurrent_hashes: usize) -> Self {
        Self {
            per_username: RateLimiter::keyed(quota(BURST, REFILL_SECONDS)),
            per_client: RateLimiter::keyed(quota(CLIENT_BURST, CLIENT_REFILL_SECONDS)),
            hashing: Semaphore::new(concurrent_hashes.max(1)),
        }
    }

    /// Counts one attempt for `username` from `client`; `false` when either is over its
    /// limit.
    pub fn allow(&self, username: &str, client: ClientAddress) -> bool {
        if self.per_username.len() > MAX_TRACKED_KEYS {
            self.per_username.retain_recent();
        }
        if self.per_client.len() > MAX_TRACKED_KEYS {
            self.per_client.retain_recent();
        }
        let client_ok = client
            .0
            .is_none_or(|address| self.per_client.check_key(&address).is_ok());
        client_ok
            && self
                .per_username
                .check_key(&username.trim().to_lowercase())
                .is_ok()
    }

    /// Waits for a turn to hash a password (hold the permit while hashing); `None` when
    /// every slot stayed busy for the whole wait.
    pub async fn hashing_turn(&self) -> Option<SemaphorePermit<'_>> {
        match tokio::time::timeout(HASH_WAIT, self.hashing.acquire()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }
}

/// `burst` attempts at once, then one per `refill_seconds`.
fn quota(burst: u32, refill_seconds: u64) -> Quota {
    let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(Duration::from_secs(refill_seconds))
        .unwrap_or_else(|| Quota::per_minute(burst))
        .allow_burst(burst)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWHERE: ClientAddress = ClientAddress(None);

    #[test]
    fn a_burst_is_allowed_then_attempts_are_refused_per_username() {
        let throttle = LoginThrottle::default();
        for _ in 0..BURST {
            assert!(throttle.allow("kim", NOWHERE));
        }
        assert!(!throttle.allow("kim", NOWHERE));
        assert!(
            !throttle.allow(" KIM ", NOWHERE),
            "the same account however it is typed"
        );
        assert!(
            throttle.allow("lee", NOWHERE),
            "other accounts are unaffected"
        );
    }

    #[test]
    fn one_client_trying_many_usernames_is_refused() {
        let throttle = LoginThrottle::default();
        let client = ClientAddress(Some("192.0.2.7".parse().unwrap()));
        for n in 0..CLIENT_BURST {
            assert!(throttle.allow(&format!("user{n}"), client));
        }
        assert!(!throttle.allow("fresh-name", client));
        let other = ClientAddress(Some("192.0.2.8".parse().unwrap()));
        assert!(
            throttle.allow("fresh-name", other),
            "other clients are unaffected"
        );
    }

    #[tokio::test]
    async fn hashes_take_turns() {
        let throttle = LoginThrottle::new(1);
        let first = throttle.hashing_turn().await.unwrap();
        assert!(
            throttle.hashing.try_acquire().is_err(),
            "the only slot is taken"
        );
        drop(first);
        assert!(throttle.hashing_turn().await.is_some());
    }
}
