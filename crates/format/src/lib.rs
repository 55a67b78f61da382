//! The jscope recording format, on disk and on the wire.
//!
//! A recording is an 8-byte magic followed by chunks. Each chunk is length-prefixed,
//! CRC32C-checked and zstd-compressed; it holds records: dictionary entries (strings,
//! classes, methods, threads, stacks) and events (samples, snapshots, counters) with
//! per-thread delta timestamps. The first chunk holds the header. A reader keeps every
//! chunk before the first damaged one. See docs/FORMAT.md for the byte-level layout.

mod chunk;
mod dictionary;
mod events;
mod ids;
mod model;
mod overview;
mod read;
mod record;
mod remap;
mod remote;
mod request;
mod stream;
mod summary;
pub mod thread_state;
mod varint;
mod write;

pub use chunk::{
    check_magic, frame_chunk, frame_chunk_into, frame_chunk_plain, peek_frame, split_chunk,
    ChunkKind, RawChunk, Split, MAGIC, MAX_CHUNK_BYTES, VERSION_MAJOR, VERSION_MINOR,
};
pub use dictionary::Dictionary;
pub use events::{
    alloc_sample_weight, native_call_name, native_lock_name, EventField, EventKind, EventKindInfo,
    FieldValue, JvmEvent, UserEventDef, UserEventKind, EVENT_KINDS, GC_FULL, GC_OLD, GC_YOUNG,
    NATIVE_ALIGNED_ALLOC, NATIVE_CALLOC, NATIVE_MALLOC, NATIVE_MUTEX, NATIVE_POSIX_MEMALIGN,
    NATIVE_REALLOC, NATIVE_RWLOCK_READ, NATIVE_RWLOCK_WRITE,
};
pub use ids::{ClassId, IdMap, MethodId, RequestId, StackId, StringId, ThreadId};
pub use model::*;
pub use overview::Overview;
pub use read::{ChunkReader, Damage, Recording};
pub use record::{decode_payload, decode_payload_counting_traces, Record};
pub use remap::{Interner, Remapper, Threads};
pub use remote::{RemoteCall, RemoteProtocol, RemoteSide};
pub use request::{Request, RequestKind};
pub use stream::ChunkStream;
pub use summary::{decode_summary, ChunkSummary};
pub use thread_state::StateClass;
pub use write::{encode_file_start, ChunkWriter};

/// Why bytes could not be read as a recording or a chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("not a jscope recording: {0}")]
    NotARecording(String),
    /// The magic is right but the header chunk is cut or damaged: the JVM stopped
    /// (or the copy was cut) before the header was complete.
    #[error("damaged recording: {0}")]
    DamagedHeader(String),
    #[error("unsupported format version {0}.{1}")]
    UnsupportedVersion(u8, u8),
    #[error("checksum mismatch")]
    Checksum,
    #[error("record ends early")]
    Truncated,
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("{0}")]
    Io(String),
}
