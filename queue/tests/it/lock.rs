//! The scheduler lock: one holder at a time under a race of many pools, expiry of a dead
//! holder's lock (at most), the minimum hold after a fast job (at least), extension, and
//! every operation needing just one connection of its pool.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use queue::Store;
use queue::testing::TestDatabase;

queue::backend_tests!(queue::schema::QueueMigrator =>
    ten_pools_racing_never_hold_the_lock_twice,
    a_dead_holders_lock_expires_after_lock_at_most_for,
    a_fast_job_keeps_the_lock_for_lock_at_least_for,
    a_holder_extends_its_lock_until_it_has_expired,
    a_pool_of_one_connection_takes_extends_and_releases_the_lock,
);

const NAME: &str = "nightly-report";
const LONG: Duration = Duration::from_secs(60);
/// A hold short enough to wait out, long enough that a step of the test stalled by a busy
/// machine (the whole suite runs in parallel on two cores) does not outlive it: at 400 ms,
/// an extension came too late under CI's load.
const SHORT: Duration = Duration::from_millis(1500);

/// Whether another holder ("peer") gets the lock `name` now.
async fn peer_acquires(store: &Store, name: &str) -> bool {
    store
        .lock_try_acquire(name, "peer", LONG)
        .await
        .unwrap()
        .is_some()
}

async fn ten_pools_racing_never_hold_the_lock_twice(db: TestDatabase) {
    const CONTENDERS: usize = 10;
    const ACQUISITIONS: usize = 300;
    let holding = Arc::new(AtomicUsize::new(0));
    let acquired = Arc::new(AtomicUsize::new(0));
    let mut racers = tokio::task::JoinSet::new();
    for n in 0..CONTENDERS {
        // Each contender has its own connection pool, as separate nodes would.
        let conn = queue::database::connect(&db.url, 2).await.unwrap();
        let store = Store::new(conn);
        let (holding, acquired) = (holding.clone(), acquired.clone());
        racers.spawn(async move {
            let holder = format!("node-{n}");
            let mut mine = 0;
            while acquired.load(Ordering::SeqCst) < ACQUISITIONS {
                let Some(grant) = store.lock_try_acquire(NAME, &holder, LONG).await.unwrap() else {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                };
                assert_eq!(
                    holding.fetch_add(1, Ordering::SeqCst),
                    0,
                    "{holder} got the lock while someone held it"
                );
                acquired.fetch_add(1, Ordering::SeqCst);
                mine += 1;
                tokio::task::yield_now().await;
                holding.fetch_sub(1, Ordering::SeqCst);
                store.lock_release(grant, Duration::ZERO).await.unwrap();
            }
            mine
        });
    }
    let per_contender: Vec<usize> = racers.join_all().await;
    let total: usize = per_contender.iter().sum();
    assert!(total >= ACQUISITIONS, "{per_contender:?}");
    // The race is real: more than one contender won at some point.
    assert!(
        per_contender.iter().filter(|&&n| n > 0).count() > 1,
        "{per_contender:?}"
    );
}

async fn a_dead_holders_lock_expires_after_lock_at_most_for(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let at_most = SHORT;
    let dead = store
        .lock_try_acquire(NAME, "dead-node", at_most)
        .await
        .unwrap()
        .expect("a free lock is acquired");
    assert!(!peer_acquires(&store, NAME).await);
    let held = store.lock_list_held().await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].locked_by, "dead-node");

    tokio::time::sleep(at_most + Duration::from_millis(100)).await;
    let peer = store
        .lock_try_acquire(NAME, "peer", LONG)
        .await
        .unwrap()
        .expect("an expired lock is free");
    // The dead holder coming back cannot release (or extend) the peer's lock.
    store.lock_release(dead, Duration::ZERO).await.unwrap();
    let held = store.lock_list_held().await.unwrap();
    assert_eq!(held[0].locked_by, "peer");
    assert_eq!(held[0].locked_at, peer.locked_at);
}

async fn a_fast_job_keeps_the_lock_for_lock_at_least_for(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let at_least = SHORT;
    let grant = store
        .lock_try_acquire(NAME, "fast", LONG)
        .await
        .unwrap()
        .unwrap();
    store.lock_release(grant, at_least).await.unwrap();
    // Released, but held until locked_at + at_least: a peer with a late clock cannot rerun it.
    assert!(!peer_acquires(&store, NAME).await);
    tokio::time::sleep(at_least + Duration::from_millis(100)).await;
    assert!(peer_acquires(&store, NAME).await);

    // Released after at_least has passed: free at once.
    let other = "other-job";
    let grant = store
        .lock_try_acquire(other, "slow", LONG)
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    store
        .lock_release(grant, Duration::from_millis(10))
        .await
        .unwrap();
    assert!(peer_acquires(&store, other).await);
}

async fn a_holder_extends_its_lock_until_it_has_expired(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let mut grant = store
        .lock_try_acquire(NAME, "long-job", SHORT)
        .await
        .unwrap()
        .unwrap();
    let step = SHORT / 2;
    for _ in 0..3 {
        tokio::time::sleep(step).await;
        assert!(store.lock_extend(&mut grant, SHORT).await.unwrap());
        assert!(!peer_acquires(&store, NAME).await);
    }
    // Three half-holds after acquiring, the lock is still held thanks to the extensions;
    // once it is allowed to lapse, extending fails and a peer takes over.
    tokio::time::sleep(SHORT + Duration::from_millis(100)).await;
    assert!(!store.lock_extend(&mut grant, SHORT).await.unwrap());
    assert!(peer_acquires(&store, NAME).await);
}

/// Each lock operation reads the database's clock on its own transaction's connection: a
/// node whose periodic jobs all held a transaction while each waited for a second
/// connection to read the clock waited out the pool's 30 s acquire timeout (a three-node
/// periodic test saw one run in 20 s). With a single connection that wait is certain.
async fn a_pool_of_one_connection_takes_extends_and_releases_the_lock(db: TestDatabase) {
    let store = Store::new(queue::database::connect(&db.url, 1).await.unwrap());
    let round = async {
        let mut grant = store
            .lock_try_acquire(NAME, "solo", LONG)
            .await
            .unwrap()
            .expect("nobody else holds it");
        assert!(store.lock_extend(&mut grant, LONG).await.unwrap());
        store.lock_release(grant, Duration::ZERO).await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(10), round)
        .await
        .expect("a lock operation waited for a second connection");
    assert!(peer_acquires(&store, NAME).await, "the release let it go");
}
