//! The files uploaded for people imports: a `people_import` row each, their bytes in
//! `people_import_chunk`s, and what is deleted once no import needs them.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{ConnectionTrait, FromQueryResult, StatementBuilder, Value};
use uuid::Uuid;

use crate::CaseloadError;
use crate::people_import::upload::Upload;

/// Starts an upload of `file_name` by `user_id`; returns its id.
pub(crate) async fn begin<C: ConnectionTrait>(
    db: &C,
    user_id: Uuid,
    file_name: &str,
) -> Result<Uuid, CaseloadError> {
    let id = Uuid::now_v7();
    let mut insert = Query::insert();
    insert
        .into_table("people_import")
        .columns([
            "id",
            "created_by",
            "created_at",
            "file_name",
            "byte_size",
            "finished",
        ])
        .values_panic([
            id.into(),
            user_id.into(),
            Utc::now().into(),
            file_name.chars().take(200).collect::<String>().into(),
            0i64.into(),
            false.into(),
        ]);
    db.execute(&insert).await?;
    Ok(id)
}

/// Stores chunk number `seq` (from 0) of the upload, and counts its bytes in the upload's
/// size.
pub(crate) async fn store_chunk<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
    seq: i64,
    bytes: Vec<u8>,
) -> Result<(), CaseloadError> {
    let length = bytes.len() as i64;
    let mut insert = Query::insert();
    insert
        .into_table("people_import_chunk")
        .columns(["import_id", "seq", "data"])
        .values_panic([upload_id.into(), seq.into(), bytes.into()]);
    db.execute(&insert).await?;
    let mut grow = Query::update();
    grow.table("people_import")
        .value("byte_size", Expr::col("byte_size").add(length))
        .and_where(Expr::col("id").eq(upload_id));
    db.execute(&grow).await?;
    Ok(())
}

/// Marks the upload whole.
pub(crate) async fn finish<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
) -> Result<(), CaseloadError> {
    let mut update = Query::update();
    update
        .table("people_import")
        .value("finished", true)
        .and_where(Expr::col("id").eq(upload_id));
    db.execute(&update).await?;
    Ok(())
}

/// The upload, if it exists.
pub(crate) async fn find<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
) -> Result<Option<Upload>, CaseloadError> {
    let mut select = Query::select();
    select
        .columns([
            "id",
            "created_by",
            "file_name",
            "byte_size",
            "finished",
            "task_id",
        ])
        .from("people_import")
        .and_where(Expr::col("id").eq(upload_id));
    Ok(
        Upload::find_by_statement(StatementBuilder::build(&select, &db.get_database_backend()))
            .one(db)
            .await?,
    )
}

/// The bytes of the upload's chunks `first..=last`, in order.
pub(crate) async fn chunks<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
    (first, last): (i64, i64),
) -> Result<Vec<Vec<u8>>, CaseloadError> {
    let mut select = Query::select();
    select
        .column("data")
        .from("people_import_chunk")
        .and_where(Expr::col("import_id").eq(upload_id))
        .and_where(Expr::col("seq").between(first, last))
        .order_by("seq", sea_orm::Order::Asc);
    let rows = db
        .query_all_raw(StatementBuilder::build(&select, &db.get_database_backend()))
        .await?;
    rows.iter()
        .map(|row| Ok(row.try_get::<Vec<u8>>("", "data")?))
        .collect()
}

/// Marks the whole upload `upload_id` taken by the import task `task_id`, unless a task has
/// taken it already; returns how many uploads it took (0 or 1).
pub(crate) async fn take<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
    task_id: Uuid,
) -> Result<u64, CaseloadError> {
    let mut take = Query::update();
    take.table("people_import")
        .value("task_id", task_id)
        .and_where(Expr::col("id").eq(upload_id))
        .and_where(Expr::col("finished").eq(true))
        .and_where(Expr::col("task_id").is_null());
    Ok(db.execute(&take).await?.rows_affected())
}

#[derive(FromQueryResult)]
struct UploadId {
    id: Uuid,
}

/// Up to `limit` uploads no task has taken that were begun before `kept_since`, and uploads
/// whose task is gone.
pub(crate) async fn stale<C: ConnectionTrait>(
    db: &C,
    kept_since: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Uuid>, CaseloadError> {
    let mut task_exists = Query::select();
    task_exists
        .expr(Expr::val(1))
        .from("queue_task")
        .and_where(Expr::col(("queue_task", "id")).equals(("people_import", "task_id")));
    let mut select = Query::select();
    select
        .column(("people_import", "id"))
        .from("people_import")
        .cond_where(
            Expr::col(("people_import", "task_id"))
                .is_null()
                .and(Expr::col(("people_import", "created_at")).lt(kept_since))
                .or(Expr::col(("people_import", "task_id"))
                    .is_not_null()
                    .and(Expr::exists(task_exists).not())),
        )
        .limit(limit);
    let rows =
        UploadId::find_by_statement(StatementBuilder::build(&select, &db.get_database_backend()))
            .all(db)
            .await?;
    Ok(rows.into_iter().map(|row| row.id).collect())
}

/// Deletes what a finished import no longer needs: the file's chunks and the school ids it
/// claimed. The upload's row and its problem rows stay, for the error report.
pub(crate) async fn release_file<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
) -> Result<(), CaseloadError> {
    for table in ["people_import_seen", "people_import_chunk"] {
        let mut delete = Query::delete();
        delete
            .from_table(table)
            .and_where(Expr::col("import_id").eq(Value::from(upload_id)));
        db.execute(&delete).await?;
    }
    Ok(())
}

/// Deletes the upload and everything kept for it (its chunks, claims and problems).
pub(crate) async fn delete<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
) -> Result<(), CaseloadError> {
    for table in [
        "people_import_problem",
        "people_import_seen",
        "people_import_chunk",
        "people_import",
    ] {
        let column = if table == "people_import" {
            "id"
        } else {
            "import_id"
        };
        let mut delete = Query::delete();
        delete
            .from_table(table)
            .and_where(Expr::col(column).eq(Value::from(upload_id)));
        db.execute(&delete).await?;
    }
    Ok(())
}
