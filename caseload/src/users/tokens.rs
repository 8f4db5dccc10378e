//! Personal API tokens: how a program acts as its user on the JSON API without a password.
//!
//! A token is 256 random bits, shown once; the database keeps only its SHA-256 (a slow hash
//! buys nothing against a random secret and would cost every API call a core's time). A
//! token is read-only or may also act, may expire, can be revoked, and stops working the
//! moment its user is disabled.

pub use bulkq_types::accounts::TokenInfo;
use chrono::{DateTime, Duration, Utc};
use sea_orm::ConnectionTrait;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use bulkq_types::audit::AuditAct;
use bulkq_types::text::{Lines, control_character_problem};

use super::{StaffUser, find_user};
use crate::CaseloadError;
use crate::audit::{self, Actor};
use crate::store;
use crate::store::entity::api_token;
use crate::store::tokens::NewRow;

/// What every token starts with, so a leaked one is recognisable (secret scanners, logs).
pub const TOKEN_PREFIX: &str = "bq_";
/// The longest token name.
pub const MAX_TOKEN_NAME_LEN: usize = 64;
/// The longest life a token may be given.
pub const MAX_TOKEN_DAYS: u32 = 366;
/// The most live (unrevoked) tokens one user may hold.
pub const MAX_TOKENS_PER_USER: u64 = 50;
/// A use is recorded only when the last recorded one is older than this, so a busy program
/// costs a write a minute, not one per call.
pub const LAST_USE_RESOLUTION: Duration = Duration::minutes(1);

/// What a new token is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub name: String,
    /// Read-and-act (`true`) or read-only.
    pub can_act: bool,
    /// Days until it expires; `None` for never.
    pub expires_in_days: Option<u32>,
}

impl From<api_token::Model> for TokenInfo {
    fn from(row: api_token::Model) -> Self {
        TokenInfo {
            id: row.id,
            name: row.name,
            can_act: row.can_act,
            created_at: row.created_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
            live: row.revoked_at.is_none() && row.expires_at.is_none_or(|at| at > Utc::now()),
            revoked_at: row.revoked_at,
        }
    }
}

/// Who a presented token acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenHolder {
    pub user: StaffUser,
    pub token: TokenInfo,
}

/// Creates a token for `user_id` and returns it with its secret (the only time it exists
/// outside the caller).
pub async fn create_token<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    user_id: Uuid,
    new: NewToken,
) -> Result<(TokenInfo, String), CaseloadError> {
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > MAX_TOKEN_NAME_LEN {
        return Err(CaseloadError::Invalid(format!(
            "a token's name must have 1 to {MAX_TOKEN_NAME_LEN} characters"
        )));
    }
    if let Some(problem) = control_character_problem(name, Lines::One) {
        return Err(CaseloadError::Invalid(format!("token name: {problem}")));
    }
    if let Some(days) = new.expires_in_days
        && !(1..=MAX_TOKEN_DAYS).contains(&days)
    {
        return Err(CaseloadError::Invalid(format!(
            "a token expires after 1 to {MAX_TOKEN_DAYS} days, or never"
        )));
    }
    let live = store::tokens::unrevoked_count(db, user_id).await?;
    if live >= MAX_TOKENS_PER_USER {
        return Err(CaseloadError::Invalid(format!(
            "you hold {MAX_TOKENS_PER_USER} tokens already; revoke one first"
        )));
    }
    let secret = new_secret();
    let now = Utc::now();
    let row = NewRow {
        user_id,
        name,
        token_hash: secret_hash(&secret),
        can_act: new.can_act,
        created_at: now,
        expires_at: new
            .expires_in_days
            .map(|days| now + Duration::days(days.into())),
    };
    let row = store::tokens::insert(db, row).await?;
    let detail = format!(
        "{}, {}",
        if new.can_act {
            "read and act"
        } else {
            "read only"
        },
        match new.expires_in_days {
            Some(days) => format!("expires in {days} days"),
            None => "never expires".to_owned(),
        }
    );
    let target = format!("{} ({})", row.name, row.id);
    audit::record(db, by, AuditAct::TokenCreate, &[target], detail).await?;
    Ok((row.into(), secret))
}

/// The user's tokens, newest first, revoked ones included.
pub async fn list_tokens<C: ConnectionTrait>(
    db: &C,
    user_id: Uuid,
) -> Result<Vec<TokenInfo>, CaseloadError> {
    Ok(store::tokens::of_user(db, user_id)
        .await?
        .into_iter()
        .map(TokenInfo::from)
        .collect())
}

/// Revokes one of the user's own tokens; `false` when they hold no live token of that id.
pub async fn revoke_token<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    user_id: Uuid,
    token_id: Uuid,
) -> Result<bool, CaseloadError> {
    let revoked = store::tokens::revoke(db, user_id, token_id).await? == 1;
    if revoked {
        audit::record(db, by, AuditAct::TokenRevoke, &[token_id], "").await?;
    }
    Ok(revoked)
}

/// Who `secret` acts for: `None` unless it is a live token (not revoked, not expired) of an
/// enabled user.
pub async fn token_holder<C: ConnectionTrait>(
    db: &C,
    secret: &str,
) -> Result<Option<TokenHolder>, CaseloadError> {
    if !looks_like_a_token(secret) {
        return Ok(None);
    }
    let Some(row) = store::tokens::find_unrevoked(db, secret_hash(secret)).await? else {
        return Ok(None);
    };
    let user_id = row.user_id;
    let token = TokenInfo::from(row);
    if !token.live {
        return Ok(None);
    }
    let Some(user) = find_user(db, user_id).await? else {
        return Ok(None);
    };
    Ok(Some(TokenHolder { user, token }))
}

/// Whether a use of `token` now should be written (see [`LAST_USE_RESOLUTION`]).
pub fn use_worth_recording(token: &TokenInfo, now: DateTime<Utc>) -> bool {
    token
        .last_used_at
        .is_none_or(|last| now - last >= LAST_USE_RESOLUTION)
}

/// Records that the token was used now.
pub async fn record_use<C: ConnectionTrait>(db: &C, token_id: Uuid) -> Result<(), CaseloadError> {
    store::tokens::record_use(db, token_id).await
}

/// A fresh secret: the prefix and 256 random bits in hex.
fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    let mut secret = String::with_capacity(TOKEN_PREFIX.len() + 64);
    secret.push_str(TOKEN_PREFIX);
    secret.push_str(&hex(&bytes));
    secret
}

/// Whether `secret` has a token's shape (so junk costs no query).
fn looks_like_a_token(secret: &str) -> bool {
    secret
        .strip_prefix(TOKEN_PREFIX)
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What the database keeps of a secret.
fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_token_shape_and_differ() {
        let (a, b) = (new_secret(), new_secret());
        assert!(looks_like_a_token(&a) && looks_like_a_token(&b));
        assert_ne!(a, b);
        assert_ne!(secret_hash(&a), secret_hash(&b));
        assert_eq!(secret_hash(&a).len(), 64);
        for junk in [
            "",
            "bq_",
            "bq_xyz",
            &a[..a.len() - 1],
            &a.replace("bq_", "bx_"),
        ] {
            assert!(!looks_like_a_token(junk), "{junk}");
        }
    }

    #[test]
    fn a_use_is_written_once_a_minute() {
        let now = Utc::now();
        let mut token = TokenInfo {
            id: Uuid::nil(),
            name: "n".into(),
            can_act: false,
            created_at: now,
            expires_at: None,
            last_used_at: None,
            revoked_at: None,
            live: true,
        };
        assert!(use_worth_recording(&token, now));
        token.last_used_at = Some(now - Duration::seconds(30));
        assert!(!use_worth_recording(&token, now));
        token.last_used_at = Some(now - Duration::seconds(61));
        assert!(use_worth_recording(&token, now));
    }
}
