//! How the node's process gives memory back.
//!
//! glibc's allocator serves a large block (1 MiB and up, say) by mapping fresh pages that it
//! unmaps when the block is freed, but after each such free it raises the size it maps
//! for to that block's size, and from then on serves blocks below it from the heap of
//! whichever thread asks. Each of the node's threads has a heap of its own, and a heap
//! keeps what it once held: a node with two dozen database threads and a blocking pool
//! reached 250 MiB where the same work needs 150 (ADR 0045). Fixing the size keeps large
//! blocks mapped only while they are in use.

/// Blocks of at least this many bytes are mapped for their own use and unmapped when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MAP_FROM_BYTES: libc::c_int = 1 << 20;

/// Sets the allocator's threshold for the whole process (any thread, any time).
pub fn give_large_blocks_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes a setting of glibc's allocator, which guards it with
    // its own lock; blocks allocated before keep being freed the way they were made.
    unsafe {
        if libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_FROM_BYTES) == 0 {
            tracing::warn!("the allocator refused a fixed mapping threshold");
        }
    }
}
