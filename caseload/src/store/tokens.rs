//! The `api_token` rows: personal API tokens, kept as the SHA-256 of their secret.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Set,
};
use uuid::Uuid;

use super::entity::api_token;
use crate::CaseloadError;

/// How many unrevoked tokens `user_id` holds (expired ones included).
pub(crate) async fn unrevoked_count<C: ConnectionTrait>(
    db: &C,
    user_id: Uuid,
) -> Result<u64, CaseloadError> {
    Ok(api_token::Entity::find()
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .count(db)
        .await?)
}

/// What a new token's row holds.
pub(crate) struct NewRow<'a> {
    pub user_id: Uuid,
    pub name: &'a str,
    pub token_hash: String,
    pub can_act: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Adds a token, never used, and returns it.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    new: NewRow<'_>,
) -> Result<api_token::Model, CaseloadError> {
    Ok(api_token::ActiveModel {
        id: Set(Uuid::now_v7()),
        user_id: Set(new.user_id),
        name: Set(new.name.to_owned()),
        token_hash: Set(new.token_hash),
        can_act: Set(new.can_act),
        created_at: Set(new.created_at),
        expires_at: Set(new.expires_at),
        last_used_at: Set(None),
        revoked_at: Set(None),
    }
    .insert(db)
    .await?)
}

/// The user's tokens, newest first, revoked ones included.
pub(crate) async fn of_user<C: ConnectionTrait>(
    db: &C,
    user_id: Uuid,
) -> Result<Vec<api_token::Model>, CaseloadError> {
    Ok(api_token::Entity::find()
        .filter(api_token::Column::UserId.eq(user_id))
        .order_by_desc(api_token::Column::CreatedAt)
        .all(db)
        .await?)
}

/// Revokes the user's token `token_id` now unless it is revoked already; returns how many
/// tokens it revoked (0 or 1).
pub(crate) async fn revoke<C: ConnectionTrait>(
    db: &C,
    user_id: Uuid,
    token_id: Uuid,
) -> Result<u64, CaseloadError> {
    Ok(api_token::Entity::update_many()
        .col_expr(api_token::Column::RevokedAt, Expr::value(Utc::now()))
        .filter(api_token::Column::Id.eq(token_id))
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .exec(db)
        .await?
        .rows_affected)
}

/// The unrevoked token whose secret hashes to `token_hash`, if there is one.
pub(crate) async fn find_unrevoked<C: ConnectionTrait>(
    db: &C,
    token_hash: String,
) -> Result<Option<api_token::Model>, CaseloadError> {
    Ok(api_token::Entity::find()
        .filter(api_token::Column::TokenHash.eq(token_hash))
        .filter(api_token::Column::RevokedAt.is_null())
        .one(db)
        .await?)
}

/// Records that the token was used now.
pub(crate) async fn record_use<C: ConnectionTrait>(
    db: &C,
    token_id: Uuid,
) -> Result<(), CaseloadError> {
    api_token::Entity::update_many()
        .col_expr(api_token::Column::LastUsedAt, Expr::value(Utc::now()))
        .filter(api_token::Column::Id.eq(token_id))
        .exec(db)
        .await?;
    Ok(())
}
