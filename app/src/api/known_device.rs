//! Known-device cookies: proof that a browser has signed in as an account before, so that
//! strangers' wrong passwords for that account never refuse it (see `login_throttle`).
//!
//! After each sign-in the browser gets a cookie for that account (one per account, so a
//! shared computer keeps each), holding a random device id and the time it was issued,
//! signed with HMAC-SHA-256 under a key the cluster keeps in the database. Nothing is
//! written per device; a cookie is good for [`DEVICE_COOKIE_LIFETIME`].

use chrono::Utc;
use hmac::{Hmac, KeyInit, Mac};
use queue::{Store, WriteClass};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbErr, StatementBuilder};
use sha2::{Digest, Sha256};

/// How long a known-device cookie is honoured (and kept by the browser).
pub const DEVICE_COOKIE_LIFETIME: chrono::Duration = chrono::Duration::days(180);
/// What every known-device cookie's name starts with.
const COOKIE_PREFIX: &str = "bulkq_device_";
/// The signing key's row in `server_secret`.
const KEY_NAME: &str = "known_device_key";

/// The id a known-device cookie carries: random, so the limits can tell devices apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceId(String);

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
impl DeviceId {
    pub fn for_tests(id: &str) -> Self {
        DeviceId(id.to_owned())
    }
}

/// The cluster's key for known-device cookies.
#[derive(Clone)]
pub struct DeviceKey([u8; 32]);

impl std::fmt::Debug for DeviceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceKey(..)")
    }
}

impl DeviceKey {
    /// The key stored in the database, storing a fresh random one first if there is none
    /// (the first node to ask wins; the others read its key).
    pub async fn load_or_create(store: &Store) -> Result<Self, DbErr> {
        let fresh: [u8; 32] = rand::random();
        let txn = store
            .begin_write_as(WriteClass::Interactive)
            .await
            .map_err(|e| DbErr::Custom(e.to_string()))?;
        let mut insert = Query::insert();
        insert
            .into_table("server_secret")
            .columns(["name", "value"])
            .values_panic([KEY_NAME.into(), fresh.to_vec().into()])
            .on_conflict(OnConflict::column("name").do_nothing().to_owned());
        txn.execute(&insert).await?;
        let mut select = Query::select();
        select
            .column("value")
            .from("server_secret")
            .and_where(Expr::col("name").eq(KEY_NAME));
        let row = txn
            .query_one_raw(StatementBuilder::build(
                &select,
                &txn.get_database_backend(),
            ))
            .await?
            .ok_or_else(|| DbErr::RecordNotFound(KEY_NAME.into()))?;
        let stored: Vec<u8> = row.try_get("", "value")?;
        txn.commit()
            .await
            .map_err(|e| DbErr::Custom(e.to_string()))?;
        let key = stored
            .try_into()
            .map_err(|_| DbErr::Custom(format!("{KEY_NAME} is not 32 bytes")))?;
        Ok(DeviceKey(key))
    }

    /// The `Set-Cookie` value recognising this browser for `username` from now on.
    pub fn cookie_for(&self, username: &str, secure: bool) -> String {
        let account = account(username);
        let device = hex(&rand::random::<[u8; 16]>());
        let issued = Utc::now().timestamp();
        let signature = self.sign(&account, &device, issued);
        format!(
            "{}={device}.{issued}.{signature}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{}",
            cookie_name(&account),
            DEVICE_COOKIE_LIFETIME.num_seconds(),
            if secure { "; Secure" } else { "" }
        )
    }

    /// The device that the request's `Cookie` headers prove has signed in as `username`
    /// within the cookie's lifetime, if any.
    pub fn recognise<'a>(
        &self,
        username: &str,
        cookie_headers: impl IntoIterator<Item = &'a str>,
    ) -> Option<DeviceId> {
        let account = account(username);
        let name = cookie_name(&account);
        let value = cookie_headers
            .into_iter()
            .flat_map(|header| header.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(cookie, _)| *cookie == name)?
            .1;
        let mut parts = value.split('.');
        let (device, issued, signature) = (parts.next()?, parts.next()?, parts.next()?);
        let issued: i64 = issued.parse().ok()?;
        let age = Utc::now().timestamp() - issued;
        let fresh = (0..DEVICE_COOKIE_LIFETIME.num_seconds()).contains(&age);
        let signature = unhex(signature)?;
        let valid = self
            .mac(&account, device, issued)
            .verify_slice(&signature)
            .is_ok();
        (fresh && valid && parts.next().is_none()).then(|| DeviceId(device.to_owned()))
    }

    fn sign(&self, account: &str, device: &str, issued: i64) -> String {
        hex(&self.mac(account, device, issued).finalize().into_bytes())
    }

    fn mac(&self, account: &str, device: &str, issued: i64) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(format!("v1|{account}|{device}|{issued}").as_bytes());
        mac
    }
}

/// The account a username names, however it was typed.
fn account(username: &str) -> String {
    username.trim().to_lowercase()
}

/// One cookie per account, named without revealing the account.
fn cookie_name(account: &str) -> String {
    let digest = Sha256::digest(account.as_bytes());
    format!("{COOKIE_PREFIX}{}", hex(&digest[..8]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Cookie` header a browser would send back for a `Set-Cookie` value.
    fn sent_back(set_cookie: &str) -> String {
        set_cookie.split(';').next().unwrap().to_owned()
    }

    #[test]
    fn a_cookie_proves_its_account_only_under_its_key() {
        let key = DeviceKey([7; 32]);
        let cookie = sent_back(&key.cookie_for(" Kim ", false));
        let other_cookies = format!("bulkq_session=abc; {cookie}; theme=dark");
        assert!(key.recognise("kim", [other_cookies.as_str()]).is_some());
        assert!(key.recognise("KIM", [cookie.as_str()]).is_some());
        assert!(key.recognise("lee", [cookie.as_str()]).is_none());
        assert!(
            DeviceKey([8; 32])
                .recognise("kim", [cookie.as_str()])
                .is_none()
        );
        assert!(key.recognise("kim", []).is_none());
    }

    #[test]
    fn a_tampered_or_stale_cookie_proves_nothing() {
        let key = DeviceKey([7; 32]);
        let cookie = sent_back(&key.cookie_for("kim", true));
        let (name, value) = cookie.split_once('=').unwrap();
        let mut parts: Vec<String> = value.split('.').map(str::to_owned).collect();
        let old = Utc::now().timestamp() - DEVICE_COOKIE_LIFETIME.num_seconds() - 1;
        let stale = format!(
            "{name}={}.{old}.{}",
            parts[0],
            key.sign("kim", &parts[0], old)
        );
        assert!(key.recognise("kim", [stale.as_str()]).is_none());
        parts[1] = (Utc::now().timestamp() - 5).to_string();
        let moved = format!("{name}={}", parts.join("."));
        assert!(key.recognise("kim", [moved.as_str()]).is_none());
        for junk in ["", ".", "a.b.c", "x.1.zz", "x.1.abc"] {
            let junk = format!("{name}={junk}");
            assert!(key.recognise("kim", [junk.as_str()]).is_none(), "{junk}");
        }
    }

    #[test]
    fn the_cookie_is_kept_for_its_lifetime_and_out_of_scripts() {
        let cookie = DeviceKey([1; 32]).cookie_for("kim", true);
        assert!(cookie.starts_with(COOKIE_PREFIX), "{cookie}");
        assert!(cookie.contains("; Max-Age=15552000; HttpOnly; SameSite=Lax; Secure"));
        assert!(!cookie.contains("kim"));
    }
}
