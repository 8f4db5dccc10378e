//! The RabbitMQ broker for tests of the wake-up hints (features `testing` and `amqp`).

use std::time::Duration;

/// The broker tried when `TEST_AMQP_URL` names none: the local RabbitMQ with its default
/// account and vhost.
const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// How long the availability check waits for the broker.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The RabbitMQ URL for tests, or `None` when no broker answers.
///
/// `TEST_AMQP_URL` wins, then the local default. When `BULKQ_REQUIRE_RABBITMQ` is set (the
/// test command sets it when the broker's port answers) an unreachable broker is a failure
/// rather than a skip, so a broken broker cannot pass for a missing one.
pub async fn rabbitmq_url() -> Option<String> {
    let url = std::env::var("TEST_AMQP_URL").unwrap_or_else(|_| DEFAULT_AMQP_URL.to_owned());
    let connect = lapin::Connection::connect(&url, lapin::ConnectionProperties::default());
    let error = match tokio::time::timeout(PROBE_TIMEOUT, connect).await {
        Ok(Ok(connection)) => {
            let _ = connection.close(200, "OK".into()).await;
            return Some(url);
        }
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!("no answer within {PROBE_TIMEOUT:?}"),
    };
    if std::env::var_os("BULKQ_REQUIRE_RABBITMQ").is_some() {
        panic!("RabbitMQ is required but {url} does not answer: {error}");
    }
    eprintln!("RabbitMQ SKIPPED: {url} does not answer: {error}");
    None
}
