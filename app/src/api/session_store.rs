//! A tower-sessions store on the product's own database (the `web_session` table), so
//! sign-ins survive a restart and every node of a cluster sees the same sessions, on SQLite
//! and PostgreSQL alike, through the same migrations as everything else. On SQLite its
//! writes take the queue store's write slot as a person's (a sign-in must not wait behind
//! the background batches, nor in SQLite's sleeping busy handler).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue::{Store, WriteClass};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, Set, SqlErr};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};

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
    /// Sessions in `store`'s database, writing through its write slot.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

#[async_trait]
impl SessionStore for DatabaseSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // Ids are random 128-bit values; a collision is astronomically unlikely, but if one
        // happens the insert fails on the primary key and a fresh id is drawn.
        let _slot = self.slot(WriteClass::Interactive).await?;
        loop {
            match web_session::Entity::insert(active_model(record)?)
                .exec(self.store.db())
                .await
            {
                Ok(_) => return Ok(()),
                Err(error)
                    if matches!(error.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) =>
                {
                    record.id = Id::default();
                }
                Err(error) => return Err(backend(error)),
            }
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let _slot = self.slot(WriteClass::Interactive).await?;
        web_session::Entity::insert(active_model(record)?)
            .on_conflict(
                OnConflict::column(web_session::Column::Id)
                    .update_columns([web_session::Column::Data, web_session::Column::ExpiryDate])
                    .to_owned(),
            )
            .exec(self.store.db())
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn load(&self, session_id: &Id) -> session_store::Result<Option<Record>> {
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

    async fn delete(&self, session_id: &Id) -> session_store::Result<()> {
        let _slot = self.slot(WriteClass::Interactive).await?;
        web_session::Entity::delete_by_id(session_id.to_string())
            .exec(self.store.db())
            .await
            .map_err(backend)?;
        Ok(())
    }
}

#[async_trait]
impl ExpiredDeletion for DatabaseSessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        let _slot = self.slot(WriteClass::Background).await?;
        web_session::Entity::delete_many()
            .filter(web_session::Column::ExpiryDate.lte(Utc::now()))
            .exec(self.store.db())
            .await
            .map_err(backend)?;
        Ok(())
    }
}

impl DatabaseSessionStore {
    /// SQLite: the write slot, held while one statement runs.
    async fn slot(&self, class: WriteClass) -> session_store::Result<Option<queue::WritePass>> {
        self.store.write_slot(class).await.map_err(backend)
    }
}

fn active_model(record: &Record) -> session_store::Result<web_session::ActiveModel> {
    let data =
        serde_json::to_vec(record).map_err(|e| session_store::Error::Encode(e.to_string()))?;
    let expiry = record.expiry_date;
    let expiry_date = DateTime::from_timestamp(expiry.unix_timestamp(), expiry.nanosecond())
        .ok_or_else(|| session_store::Error::Encode(format!("expiry out of range: {expiry}")))?;
    Ok(web_session::ActiveModel {
        id: Set(record.id.to_string()),
        data: Set(data),
        expiry_date: Set(expiry_date),
    })
}

fn backend(error: DbErr) -> session_store::Error {
    session_store::Error::Backend(error.to_string())
}
