//! Where recorded JVMs are kept and read back: the read side that the `jscope` CLI
//! and the collector share.
//!
//! - [`Store`]: storage behind a trait; [`FileStore`] is the embedded default
//!   (per-JVM segment files in the recording format plus an index, stack-count
//!   summaries, retention, recovery after kill -9), [`ClickHouseStore`] keeps
//!   chunks, sample, event and call rows and stacks by hash in ClickHouse, and
//!   [`RecordingStore`] serves one recording file.
//! - [`JvmSource`]: one read interface over a store or a running collector
//!   ([`RemoteCollector`], its HTTP API): the JVM list, a JVM's recording, hot
//!   methods and stacks merged where the data lives.
//! - [`jvms`]: the JVM summary row and the selection of JVMs by id, pid, `all`,
//!   service, host and label, one for the CLI and the collector.
//! - [`identity`]: a stream's JVM identity and what its command runs;
//!   [`when`]: wall-clock moments as users type them.
//! - [`query`], [`calls`], [`distributed`]: flame graphs, hot methods, call graphs,
//!   traced and remote calls, event kinds and the tree across JVMs over a store.

pub mod calls;
mod clickhouse;
mod clickhouse_http;
pub mod distributed;
mod error;
mod file;
pub mod identity;
pub mod jvms;
mod log;
pub mod query;
mod recording;
mod remote;
mod segment;
mod source;
mod store;
mod summary;
pub mod when;

pub use clickhouse::ClickHouseStore;
pub use clickhouse_http::ClickHouseUrl;
pub use error::{SelectError, StoreError};
pub use file::FileStore;
pub use identity::JvmIdentity;
pub use jvms::{JvmSelection, JvmStatus, JvmSummary};
pub use log::{LogSink, MemoryLog, StderrLog};
pub use recording::RecordingStore;
pub use remote::{encode, RemoteCollector};
pub use source::JvmSource;
pub use store::{Counted, Retained, SampleFilter, SegmentInfo, Store, StoredJvm, StreamStatus};
