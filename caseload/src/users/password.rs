//! Password hashes: argon2 with the `argon2` crate's default Argon2id parameters, which
//! follow the OWASP recommendation. Hashing is deliberately slow, so it runs on tokio's
//! blocking pool rather than stalling the async workers that serve requests.
//!
//! Each hash works in 19 MiB of memory. Allocated afresh for every check, that memory
//! stayed with the process: once glibc has freed one such block it serves the next ones
//! from the heap of whichever blocking thread asks, and keeps each heap's share, so a node
//! signing people in held over 300 MiB (ADR 0045). The blocks are therefore kept and
//! reused: as many as hashes ever ran at once, which the sign-in throttle bounds.

use std::sync::{Mutex, OnceLock};

use argon2::password_hash::{Output, PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use uuid::Uuid;

use crate::CaseloadError;

/// The working memory of the node's hashes.
static SPARE_MEMORY: SpareMemory = SpareMemory::new();

/// A new user's password hash, in PHC string form.
pub(super) async fn hash_password(password: String) -> Result<String, CaseloadError> {
    run_blocking(move || {
        let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(hash_error)
    })
    .await
}

/// Whether `password` is the one `stored_hash` was made from.
pub(super) async fn verify_password(
    password: String,
    stored_hash: String,
) -> Result<bool, CaseloadError> {
    run_blocking(move || {
        let parsed = PasswordHash::new(&stored_hash).map_err(hash_error)?;
        let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
            return Err(CaseloadError::PasswordHash(
                "hash without salt or output".into(),
            ));
        };
        let algorithm = Algorithm::try_from(parsed.algorithm).map_err(hash_error)?;
        let version = parsed
            .version
            .map(Version::try_from)
            .transpose()
            .map_err(hash_error)?
            .unwrap_or_default();
        let params = Params::try_from(&parsed).map_err(hash_error)?;
        let mut salt_bytes = [0u8; 64];
        let salt = salt.decode_b64(&mut salt_bytes).map_err(hash_error)?;
        let argon2 = Argon2::new(algorithm, version, params);
        let mut output = vec![0u8; expected.len()];
        SPARE_MEMORY
            .lend(argon2.params().block_count(), |memory| {
                argon2.hash_password_into_with_memory(
                    password.as_bytes(),
                    salt,
                    &mut output,
                    memory,
                )
            })
            .map_err(hash_error)?;
        // `Output`'s equality takes the same time wherever the two differ.
        Ok(Output::new(&output).map_err(hash_error)? == expected)
    })
    .await
}

/// Working memory of finished hashes, waiting for the next one.
struct SpareMemory(Mutex<Vec<Vec<Block>>>);

impl SpareMemory {
    const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// Runs `hash` with `blocks` blocks of working memory, a finished hash's if one is spare.
    fn lend<T>(&self, blocks: usize, hash: impl FnOnce(&mut [Block]) -> T) -> T {
        let spare = self.0.lock().ok().and_then(|mut spare| spare.pop());
        let mut memory = match spare {
            Some(memory) if memory.len() == blocks => memory,
            _ => vec![Block::default(); blocks],
        };
        let result = hash(&mut memory);
        if let Ok(mut spare) = self.0.lock() {
            spare.push(memory);
        }
        result
    }
}

/// A valid argon2 hash of a random secret, verified against when the username is unknown.
pub(super) fn unknown_user_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
        Argon2::default()
            .hash_password(Uuid::new_v4().as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .unwrap_or_default()
    })
}

fn hash_error(error: impl std::fmt::Display) -> CaseloadError {
    CaseloadError::PasswordHash(error.to_string())
}

async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CaseloadError> + Send + 'static,
) -> Result<T, CaseloadError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| CaseloadError::PasswordHash(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_password_matches_its_own_hash_only() {
        let hash = hash_password("correct horse".into()).await.unwrap();
        assert!(
            verify_password("correct horse".into(), hash.clone())
                .await
                .unwrap()
        );
        assert!(
            !verify_password("correct hors".into(), hash.clone())
                .await
                .unwrap()
        );
        assert!(!verify_password(String::new(), hash).await.unwrap());
    }

    #[tokio::test]
    async fn hashes_made_elsewhere_verify() {
        // Argon2id and Argon2i, other costs, as another tool (or older defaults) wrote them.
        for algorithm in [Algorithm::Argon2id, Algorithm::Argon2i] {
            let params = Params::new(8 * 1024, 3, 1, Some(24)).unwrap();
            let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
            let hash = Argon2::new(algorithm, Version::V0x10, params)
                .hash_password(b"s3cret", &salt)
                .unwrap()
                .to_string();
            assert!(
                verify_password("s3cret".into(), hash.clone())
                    .await
                    .unwrap()
            );
            assert!(!verify_password("S3cret".into(), hash).await.unwrap());
        }
    }

    #[tokio::test]
    async fn a_malformed_hash_is_an_error_not_a_match() {
        for stored in [
            "",
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ",
            "plain text",
        ] {
            assert!(verify_password("x".into(), stored.into()).await.is_err());
        }
    }

    #[test]
    fn working_memory_is_reused_and_sized_to_the_hash() {
        let spare = SpareMemory::new();
        let first = spare.lend(64, |memory| memory.as_ptr() as usize);
        assert_eq!(spare.lend(64, |memory| memory.as_ptr() as usize), first);
        assert_eq!(spare.lend(128, |memory| memory.len()), 128);
        // Two hashes at once take two blocks of memory; both are kept.
        spare.lend(128, |_| spare.lend(128, |_| ()));
        assert_eq!(spare.0.lock().unwrap().len(), 2);
    }
}
