//! The jscope collector: many agents stream recording chunks to it over TCP
//! (`jscope-wire`); it stores them, keeps live state, runs analysis plugins and serves
//! an HTTP JSON API and a web UI.
//!
//! - [`ingest`]: one thread per agent connection, bounded by timeouts and frame limits;
//!   chunks are validated, decoded once, passed to every plugin and acknowledged after
//!   the store's fsync.
//! - [`ServerListener`]: plugins with `on_connect` / `on_data` / `on_disconnect`
//!   (xdProf's `ServerListener`); the store ([`StoreListener`]), the live state
//!   ([`LiveState`]) and the hot-methods table ([`HotMethodsListener`]) are plugins.
//! - [`Store`]: storage behind a trait; [`FileStore`] is the embedded default
//!   (per-JVM segment files in the recording format plus an index, retention,
//!   recovery after kill -9).
//! - [`api`]: the HTTP JSON API and the embedded UI (docs/API.md).
//!
//! - [`distributed`]: the execution tree across stored JVMs (`GET /api/distributed`),
//!   merged by `jscope_analysis::distributed` as `jscope merge --data` merges.
//! - [`view_distributed`]: a page over one merged execution tree across JVMs
//!   (`jscope view SESSION`), rows coloured by JVM.
//!
//! - [`push`]: pushed profiles (Pyroscope's `/ingest`, OTLP's
//!   `/v1development/profiles`) stored as JVMs beside the agents' (docs/COLLECTOR.md).
//!
//! [`serve`] starts everything; `jscope serve` is a thin wrapper around it.

pub mod api;
mod api_diff;
mod api_events;
mod api_jfr;
mod api_native;
mod api_queue;
mod api_select;
mod api_tags;
pub mod api_tree;
pub mod calls;
mod config;
pub mod distributed;
#[path = "ui/distributed.rs"]
mod distributed_ui;
mod error;
pub mod hot;
pub mod http;
pub mod ingest;
pub mod jvm;
pub mod listener;
pub mod live;
mod log;
pub mod push;
mod push_formats;
pub mod query;
mod server;
pub mod store;
pub mod when;

pub use config::{parse_duration, ServerConfig};
pub use distributed_ui::{view_distributed, DistributedServer};
pub use error::CollectorError;
pub use hot::HotMethodsListener;
pub use jvm::{Connection, JvmIdentity};
pub use listener::{Disconnect, ListenerError, Listeners, ServerListener, Trace};
pub use live::{LiveFigures, LiveState};
pub use log::{LogSink, MemoryLog, StderrLog};
pub use server::{serve, serve_with, view, ServerHandle};
pub use store::{ClickHouseStore, FileStore, RecordingStore, SampleFilter, Store, StoreListener};
