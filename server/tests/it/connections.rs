//! The listener's limits, over real sockets: clients that send their headers a byte at a
//! time neither keep others from signing in nor hold their connections past the header
//! timeout, and connections over the cap wait until one ends.

use std::net::SocketAddr;
use std::time::Duration;

use migration::Migrator;
use queue::testing::TestDatabase;
use server::draining::Draining;
use server::http_server::{self, ConnectionLimits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::helpers::{PASSWORD, app};

queue::backend_tests!(Migrator =>
    slow_header_clients_neither_hold_the_node_nor_stay,
);

/// Slow-header connections in the first test.
const SLOW_CLIENTS: usize = 200;
/// The longest any answer or close may take here: far beyond the limits under test.
const PATIENCE: Duration = Duration::from_secs(30);

async fn slow_header_clients_neither_hold_the_node_nor_stay(db: TestDatabase) {
    let limits = ConnectionLimits {
        header_read_timeout: Duration::from_secs(1),
        max_connections: SLOW_CLIENTS + 16,
    };
    let (address, draining) = listen(app(&db).await, limits).await;
    let mut slow = Vec::new();
    for _ in 0..SLOW_CLIENTS {
        let mut connection = TcpStream::connect(address).await.unwrap();
        connection
            .write_all(b"GET / HTTP/1.1\r\nHost: bulk")
            .await
            .unwrap();
        slow.push(connection);
    }
    let form = format!("username=sam&password={PASSWORD}");
    let answer = exchange(
        address,
        &format!(
            "POST /api/sign_in HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nAccept: application/json\r\n\
             Content-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("bulkq_session="),
        "a sign-in among slow clients: {answer}"
    );
    for mut connection in slow {
        let mut rest = Vec::new();
        tokio::time::timeout(PATIENCE, connection.read_to_end(&mut rest))
            .await
            .expect("the server closes a connection whose headers never came")
            .ok();
    }
    draining.begin();
}

/// Connections over the cap are not served until one of those held ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_wait_for_one_to_end() {
    let db = TestDatabase::create::<Migrator>(queue::testing::Backend::Sqlite)
        .await
        .expect("SQLite is always available");
    let limits = ConnectionLimits {
        header_read_timeout: PATIENCE * 2,
        max_connections: 2,
    };
    let (address, draining) = listen(app(&db).await, limits).await;
    let held = [
        TcpStream::connect(address).await.unwrap(),
        TcpStream::connect(address).await.unwrap(),
    ];
    let third = tokio::spawn(exchange(
        address,
        "GET /healthz HTTP/1.1\r\nHost: bulkq\r\nConnection: close\r\n\r\n",
    ));
    // Served only once a held connection ends: after a moment it still waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !third.is_finished(),
        "a third connection is served at a cap of two"
    );
    drop(held);
    let answer = tokio::time::timeout(PATIENCE, third)
        .await
        .expect("the waiting connection is served once one ends")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    draining.begin();
}

/// Serves `router` under `limits` on a loopback port of its own, until the returned drain
/// begins.
async fn listen(router: axum::Router, limits: ConnectionLimits) -> (SocketAddr, Draining) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let draining = Draining::default();
    tokio::spawn(http_server::serve(
        listener,
        router,
        limits,
        draining.clone(),
    ));
    (address, draining)
}

/// Sends `request` on a new connection and returns all the server answers before closing.
async fn exchange(address: SocketAddr, request: &str) -> String {
    let mut connection = TcpStream::connect(address).await.unwrap();
    connection.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, connection.read_to_end(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}
