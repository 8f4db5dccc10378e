//! Limits on signing in, so a password cannot be guessed by brute force, a flood of
//! sign-ins cannot exhaust the node, and a stranger cannot lock a user out (ADR 0068).
//!
//! Failed attempts are counted in the database (`sign_in_limit`), so the limits hold across
//! a cluster, under three keys:
//! - **per user and where from** (the client's address, or the known device the browser
//!   proves with its signed cookie, [`super::known_device`]): the guesses one client may
//!   make at one account;
//! - **per client address**: every attempt at an unknown username still costs a full
//!   password hash (so timing reveals nothing), so a client trying many usernames is slowed
//!   down too;
//! - **per user from unknown devices**: guesses from everywhere at one account. A browser
//!   that has signed in as that user before skips this limit, so wrong passwords from
//!   elsewhere never refuse the user on their own device.
//!
//! A limit is a generic cell rate: `burst` failures at once, then one per `period`; its row
//! holds when the allowance is whole again. Attempts are checked before the password is
//! hashed and counted after a failure, so sign-ins that succeed write nothing here; while a
//! node hashes at most [`CONCURRENT_HASHES_DEFAULT`] passwords at once, parallel guesses
//! can overshoot a limit by that many per node.

use std::net::IpAddr;
use std::time::Duration;

use chrono::Utc;
use queue::{Store, WriteClass};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult, StatementBuilder};
use tokio::sync::{OnceCell, Semaphore, SemaphorePermit};

use super::known_device::{DeviceId, DeviceKey};

/// Password hashes computed at once unless the server is configured otherwise: the cores
/// of the machine class this runs on.
pub const CONCURRENT_HASHES_DEFAULT: usize = 2;
/// How long a sign-in waits for its turn to hash before the node answers "busy".
const HASH_WAIT: Duration = Duration::from_secs(10);

/// Failures at one account from one client or device: 5, then one per 12 s.
const PER_USER_AND_CLIENT: Limit = Limit::new(5, 12);
/// Failures from one client address at any accounts (an office signing in at nine).
const PER_CLIENT: Limit = Limit::new(30, 2);
/// Failures at one account from every browser it has not been signed in on.
const PER_USER_FROM_UNKNOWN_DEVICES: Limit = Limit::new(10, 12);

/// Where a request came from, as the server determined it (a request extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub Option<IpAddr>);

/// `burst` failures at once, then one per `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limit {
    burst: i64,
    period_ms: i64,
}

impl Limit {
    const fn new(burst: i64, period_seconds: i64) -> Self {
        Limit {
            burst,
            period_ms: period_seconds * 1000,
        }
    }

    /// Whether one more failure is allowed while the key's allowance is whole at `free_at`.
    fn allows(self, free_at: i64, now: i64) -> bool {
        free_at - now <= (self.burst - 1) * self.period_ms
    }
}

/// The sign-in limits of a node: its hashing slots, and the key that signs known-device
/// cookies (read from the database on first use).
#[derive(Debug)]
pub struct LoginThrottle {
    hashing: Semaphore,
    device_key: OnceCell<DeviceKey>,
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
            hashing: Semaphore::new(concurrent_hashes.max(1)),
            device_key: OnceCell::new(),
        }
    }

    /// Waits for a turn to hash a password (hold the permit while hashing); `None` when
    /// every slot stayed busy for the whole wait.
    pub async fn hashing_turn(&self) -> Option<SemaphorePermit<'_>> {
        match tokio::time::timeout(HASH_WAIT, self.hashing.acquire()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }

    /// The cluster's known-device key, created by the first node to need it.
    pub async fn device_key(&self, store: &Store) -> Result<&DeviceKey, DbErr> {
        self.device_key
            .get_or_try_init(|| DeviceKey::load_or_create(store))
            .await
    }
}

/// One sign-in attempt: who at, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The username as typed, trimmed and lower-cased: the same account however spelt.
    account: String,
    client: ClientAddress,
    /// The device the browser proved it has signed in as this account on, if any.
    device: Option<DeviceId>,
}

impl Attempt {
    pub fn new(username: &str, client: ClientAddress, device: Option<DeviceId>) -> Self {
        Attempt {
            account: username.trim().to_lowercase(),
            client,
            device,
        }
    }

    /// The keys this attempt is counted under, with their limits.
    fn keys(&self) -> Vec<(String, Limit)> {
        let from = match (&self.device, self.client.0) {
            (Some(device), _) => format!("device:{device}"),
            (None, Some(address)) => format!("ip:{address}"),
            (None, None) => "unknown".to_owned(),
        };
        let mut keys = vec![(format!("user:{}|{from}", self.account), PER_USER_AND_CLIENT)];
        if let Some(address) = self.client.0 {
            keys.push((format!("client:{address}"), PER_CLIENT));
        }
        if self.device.is_none() {
            keys.push((
                format!("user:{}", self.account),
                PER_USER_FROM_UNKNOWN_DEVICES,
            ));
        }
        keys
    }

    /// Whether any of the attempt's limits is used up (a read).
    pub async fn refused(&self, db: &impl ConnectionTrait) -> Result<bool, DbErr> {
        let keys = self.keys();
        let mut select = Query::select();
        select
            .columns(["key", "free_at"])
            .from("sign_in_limit")
            .and_where(Expr::col("key").is_in(keys.iter().map(|(key, _)| key.clone())));
        let rows =
            FreeAt::find_by_statement(StatementBuilder::build(&select, &db.get_database_backend()))
                .all(db)
                .await?;
        let now = Utc::now().timestamp_millis();
        Ok(rows.iter().any(|row| {
            keys.iter()
                .any(|(key, limit)| *key == row.key && !limit.allows(row.free_at, now))
        }))
    }

    /// Counts a failed attempt under each of its keys, in one write transaction.
    pub async fn record_failure(&self, store: &Store) -> Result<(), DbErr> {
        let now = Utc::now().timestamp_millis();
        let txn = store
            .begin_write_as(WriteClass::Interactive)
            .await
            .map_err(|e| DbErr::Custom(e.to_string()))?;
        for (key, limit) in self.keys() {
            let existing = Expr::col(("sign_in_limit", "free_at"));
            let from = Expr::case(existing.clone().gt(now), existing).finally(now);
            let mut upsert = Query::insert();
            upsert
                .into_table("sign_in_limit")
                .columns(["key", "free_at"])
                .values_panic([key.into(), (now + limit.period_ms).into()])
                .on_conflict(
                    OnConflict::column("key")
                        .value("free_at", Expr::expr(from).add(limit.period_ms))
                        .to_owned(),
                );
            txn.execute(&upsert).await?;
        }
        txn.commit().await.map_err(|e| DbErr::Custom(e.to_string()))
    }
}

/// Forgets the keys whose allowance is whole again (an hourly chore).
pub async fn delete_recovered(store: &Store) -> Result<(), DbErr> {
    let txn = store
        .begin_write_as(WriteClass::Background)
        .await
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    let mut delete = Query::delete();
    delete
        .from_table("sign_in_limit")
        .and_where(Expr::col("free_at").lt(Utc::now().timestamp_millis()));
    txn.execute(&delete).await?;
    txn.commit().await.map_err(|e| DbErr::Custom(e.to_string()))
}

#[derive(Debug, FromQueryResult)]
struct FreeAt {
    key: String,
    free_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_allows_its_burst_then_one_per_period() {
        let limit = Limit::new(3, 10);
        let now = 1_000_000;
        let mut free_at = 0;
        for _ in 0..3 {
            assert!(limit.allows(free_at, now));
            free_at = Ord::max(free_at, now) + limit.period_ms;
        }
        assert!(!limit.allows(free_at, now));
        assert!(!limit.allows(free_at, now + 9_999));
        assert!(limit.allows(free_at, now + 10_000));
    }

    #[test]
    fn a_known_device_is_its_own_client_and_skips_the_account_wide_limit() {
        let client = ClientAddress(Some("192.0.2.7".parse().unwrap()));
        let keys = |attempt: Attempt| -> Vec<String> {
            attempt.keys().into_iter().map(|(key, _)| key).collect()
        };
        assert_eq!(
            keys(Attempt::new(" Kim ", client, None)),
            ["user:kim|ip:192.0.2.7", "client:192.0.2.7", "user:kim"]
        );
        let device = DeviceId::for_tests("d1");
        assert_eq!(
            keys(Attempt::new("kim", client, Some(device))),
            ["user:kim|device:d1", "client:192.0.2.7"]
        );
        assert_eq!(
            keys(Attempt::new("kim", ClientAddress(None), None)),
            ["user:kim|unknown", "user:kim"]
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
