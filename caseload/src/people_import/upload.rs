//! An uploaded file, kept in the database in chunks of [`CHUNK_BYTES`], so any node of a
//! cluster can run its import, a backup holds it, and it is never held whole in memory:
//! it is written a chunk at a time as it arrives and read a window at a time.

use queue::{Store, WriteClass};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};
use uuid::Uuid;

use crate::CaseloadError;
use crate::store::uploads;

/// The bytes of one stored chunk.
pub const CHUNK_BYTES: usize = 1 << 20;
/// The largest file accepted unless configured: a million people's records are about
/// 100 MB.
pub const MAX_BYTES_DEFAULT: u64 = 512 << 20;

/// An upload's row, created before its first chunk.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct Upload {
    pub id: Uuid,
    pub created_by: Uuid,
    pub file_name: String,
    /// Bytes stored so far; the whole file once the upload is finished.
    pub byte_size: i64,
    pub finished: bool,
    /// The import task that took the file, once one has.
    pub task_id: Option<Uuid>,
}

impl Upload {
    /// The bytes stored.
    pub fn size(&self) -> u64 {
        u64::try_from(self.byte_size).unwrap_or(0)
    }
}

/// A file being stored as it arrives: bytes are gathered into [`CHUNK_BYTES`] chunks, each
/// stored in a short write transaction of its own (a person is waiting on it), so neither
/// the file nor a transaction grows with its size.
pub struct UploadWriter {
    id: Uuid,
    max_bytes: u64,
    written: u64,
    next_seq: i64,
    pending: Vec<u8>,
}

impl UploadWriter {
    /// Starts storing `file_name` for `user_id`; more than `max_bytes` is refused.
    pub async fn begin(
        store: &Store,
        user_id: Uuid,
        file_name: &str,
        max_bytes: u64,
    ) -> Result<Self, CaseloadError> {
        let txn = store.begin_write_as(WriteClass::Interactive).await?;
        let id = uploads::begin(&*txn, user_id, file_name).await?;
        txn.commit().await?;
        Ok(UploadWriter {
            id,
            max_bytes,
            written: 0,
            next_seq: 0,
            pending: Vec::with_capacity(CHUNK_BYTES),
        })
    }

    /// The upload's id (to delete it if the file cannot be stored whole).
    pub fn id(&self) -> Uuid {
        self.id
    }

    /// Whether no byte has arrived yet.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Adds the next bytes of the file, storing every chunk they complete.
    pub async fn write(&mut self, store: &Store, mut bytes: &[u8]) -> Result<(), CaseloadError> {
        self.written += bytes.len() as u64;
        if self.written > self.max_bytes {
            return Err(CaseloadError::Invalid(format!(
                "the file is over the limit of {} bytes",
                self.max_bytes
            )));
        }
        while !bytes.is_empty() {
            let take = (CHUNK_BYTES - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == CHUNK_BYTES {
                self.store_pending(store).await?;
            }
        }
        Ok(())
    }

    /// Stores the last chunk and marks the upload whole.
    pub async fn finish(mut self, store: &Store) -> Result<Upload, CaseloadError> {
        if !self.pending.is_empty() {
            self.store_pending(store).await?;
        }
        let txn = store.begin_write_as(WriteClass::Interactive).await?;
        uploads::finish(&*txn, self.id).await?;
        let upload = find_upload(&*txn, self.id).await?;
        txn.commit().await?;
        upload.ok_or_else(|| {
            CaseloadError::Invalid("the upload was deleted while it was stored".to_owned())
        })
    }

    async fn store_pending(&mut self, store: &Store) -> Result<(), CaseloadError> {
        let chunk = std::mem::replace(&mut self.pending, Vec::with_capacity(CHUNK_BYTES));
        let txn = store.begin_write_as(WriteClass::Interactive).await?;
        uploads::store_chunk(&*txn, self.id, self.next_seq, chunk).await?;
        txn.commit().await?;
        self.next_seq += 1;
        Ok(())
    }
}

/// The upload, if it exists.
pub async fn find_upload<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
) -> Result<Option<Upload>, CaseloadError> {
    uploads::find(db, upload_id).await
}

/// Up to `length` bytes of the upload from `offset`, and whether they reach its end.
pub async fn read_window<C: ConnectionTrait>(
    db: &C,
    upload: &Upload,
    offset: u64,
    length: usize,
) -> Result<(Vec<u8>, bool), CaseloadError> {
    let size = upload.size();
    let end = Ord::min(size, offset + length as u64);
    if offset >= end {
        return Ok((Vec::new(), true));
    }
    let first = (offset / CHUNK_BYTES as u64) as i64;
    let last = ((end - 1) / CHUNK_BYTES as u64) as i64;
    let chunks = uploads::chunks(db, upload.id, (first, last)).await?;
    let mut bytes = Vec::with_capacity((end - offset) as usize);
    let skip = (offset - first as u64 * CHUNK_BYTES as u64) as usize;
    for (index, data) in chunks.iter().enumerate() {
        let from = if index == 0 {
            Ord::min(skip, data.len())
        } else {
            0
        };
        bytes.extend_from_slice(&data[from..]);
    }
    bytes.truncate((end - offset) as usize);
    if bytes.len() as u64 != end - offset {
        return Err(CaseloadError::Db(DbErr::Custom(format!(
            "upload {} is missing chunks {first}..={last}",
            upload.id
        ))));
    }
    Ok((bytes, end == size))
}

/// Deletes the upload and everything kept for it (its chunks, claims and problems).
pub async fn delete_upload<C: ConnectionTrait>(
    db: &C,
    upload_id: Uuid,
) -> Result<(), CaseloadError> {
    uploads::delete(db, upload_id).await
}
