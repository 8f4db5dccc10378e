//! A tower-sessions store on the product's own database (the `web_session` table), so
//! sign-ins survive a restart and every node of a cluster sees the same sessions, on SQLite
//! and PostgreSQL alike, through the same migrations as everything else. Its writes are the
//! queue store's write transactions of a person (on SQLite a sign-in must not wait behind
//! the background batches, nor in SQLite's sleeping busy handler).
//!
//! The server saves a signed-in user's session on each of their requests, so that its expiry
//! moves on with their activity (`server::session_renewal`); a save that would change
//! nothing but that expiry, by less than [`EXPIRY_REFRESH_INTERVAL`], is skipped, so a busy
//! user costs one write a minute rather than one per request.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue::{Store, WriteClass, WriteTransaction};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, NotSet, QueryFilter, Set, SqlErr};
use uuid::Uuid;

use crate::api::ssr::SESSION_USER_ID;
use tower_sessions::cookie::time::Duration;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};

/// How far a session's expiry must have moved on before a save that changes nothing else
/// writes it.
pub const EXPIRY_REFRESH_INTERVAL: Duration = Duration::minutes(1);

mod web_session {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "web_session")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        /// The session record (its id, data and expiry) as JSON.
        pub data: Vec<u8>,
        pub expiry_date: DateTimeUtc,
        /// The signed-in user, so that disabling them can end their sessions.
        pub user_id: Option<Uuid>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Sessions kept in the `web_session` table.
#[derive(Debug, Clone)]
pub struct DatabaseSessionStore {
    store: Store,
}

impl DatabaseSessionStore {
    /// Sessions in `store`'s database, written in its write transactions.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

#[async_trait]
impl SessionStore for DatabaseSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // Ids are random 128-bit values; a collision is astronomically unlikely, but if one
        // happens the insert fails on the primary key and a fresh id is drawn.
        loop {
            let txn = self.begin(WriteClass::Interactive).await?;
            match web_session::Entity::insert(active_model(record)?)
                .exec(&*txn)
                .await
            {
                Ok(_) => return txn.commit().await.map_err(backend),
                Err(error)
                    if matches!(error.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) =>
                {
                    record.id = Id::default();
                }
                Err(error) => return Err(backend(error)),
            }
        }
    }

    /// Updates a stored session, never inserts one: tower-sessions saves only sessions it
    /// loaded (new ones go to `create`), so a row that is gone was deleted meanwhile, by a
    /// sign-out, a disabled account or expiry, and a request still in flight must not bring
    /// it back.
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        if self.only_expiry_moved_a_little(record).await? {
            return Ok(());
        }
        let row = active_model(record)?;
        let txn = self.begin(WriteClass::Interactive).await?;
        web_session::Entity::update_many()
            .set(web_session::ActiveModel { id: NotSet, ..row })
            .filter(web_session::Column::Id.eq(record.id.to_string()))
            .exec(&*txn)
            .await
            .map_err(backend)?;
        txn.commit().await.map_err(backend)
    }

    async fn load(&self, session_id: &Id) -> session_store::Result<Option<Record>> {
        self.stored(session_id).await
    }

    async fn delete(&self, session_id: &Id) -> session_store::Result<()> {
        let txn = self.begin(WriteClass::Interactive).await?;
        web_session::Entity::delete_by_id(session_id.to_string())
            .exec(&*txn)
            .await
            .map_err(backend)?;
        txn.commit().await.map_err(backend)
    }
}

#[async_trait]
impl ExpiredDeletion for DatabaseSessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        let txn = self.begin(WriteClass::Background).await?;
        web_session::Entity::delete_many()
            .filter(web_session::Column::ExpiryDate.lte(Utc::now()))
            .exec(&*txn)
            .await
            .map_err(backend)?;
        txn.commit().await.map_err(backend)
    }
}

impl DatabaseSessionStore {
    /// Ends every session of `user_id` (disabled, or their password reset); runs in the
    /// caller's transaction, so it commits with the change that calls for it.
    pub async fn delete_sessions_of(
        txn: &impl sea_orm::ConnectionTrait,
        user_id: Uuid,
    ) -> Result<u64, DbErr> {
        Ok(web_session::Entity::delete_many()
            .filter(web_session::Column::UserId.eq(user_id))
            .exec(txn)
            .await?
            .rows_affected)
    }

    /// The unexpired record stored under `session_id`, if any.
    async fn stored(&self, session_id: &Id) -> session_store::Result<Option<Record>> {
        let row = web_session::Entity::find_by_id(session_id.to_string())
            .filter(web_session::Column::ExpiryDate.gt(Utc::now()))
            .one(self.store.db())
            .await
            .map_err(backend)?;
        row.map(|row| {
            serde_json::from_slice(&row.data)
                .map_err(|e| session_store::Error::Decode(e.to_string()))
        })
        .transpose()
    }

    /// Whether `record` is stored already with the same data and an expiry at most
    /// [`EXPIRY_REFRESH_INTERVAL`] before its own (never after it: a shortened session is
    /// written at once). A read, which needs no write slot.
    async fn only_expiry_moved_a_little(&self, record: &Record) -> session_store::Result<bool> {
        Ok(self.stored(&record.id).await?.is_some_and(|stored| {
            stored.data == record.data
                && (Duration::ZERO..EXPIRY_REFRESH_INTERVAL)
                    .contains(&(record.expiry_date - stored.expiry_date))
        }))
    }

    /// A write transaction of `class` (see `queue::Store::begin_write_as`).
    async fn begin(&self, class: WriteClass) -> session_store::Result<WriteTransaction> {
        self.store.begin_write_as(class).await.map_err(backend)
    }
}

fn active_model(record: &Record) -> session_store::Result<web_session::ActiveModel> {
    let data =
        serde_json::to_vec(record).map_err(|e| session_store::Error::Encode(e.to_string()))?;
    let expiry = record.expiry_date;
    let expiry_date = DateTime::from_timestamp(expiry.unix_timestamp(), expiry.nanosecond())
        .ok_or_else(|| session_store::Error::Encode(format!("expiry out of range: {expiry}")))?;
    let user_id = record
        .data
        .get(SESSION_USER_ID)
        .and_then(|id| serde_json::from_value::<Uuid>(id.clone()).ok());
    Ok(web_session::ActiveModel {
        id: Set(record.id.to_string()),
        data: Set(data),
        expiry_date: Set(expiry_date),
        user_id: Set(user_id),
    })
}

fn backend(error: DbErr) -> session_store::Error {
    session_store::Error::Backend(error.to_string())
}
