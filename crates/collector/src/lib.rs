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
//! - Storage is `jscope_store`'s: the [`Store`] trait, the embedded `FileStore` and
//!   the `ClickHouseStore`, shared with the CLI, which reads the same stores; the
//!   store is a plugin too ([`StoreListener`]).
//! - [`api`]: the HTTP JSON API and the embedded UI (docs/API.md).
//!
//! - [`view_distributed`]: a page over one merged execution tree across JVMs
//!   (`jscope view SESSION`), rows coloured by JVM.
//!
//! - [`push`]: pushed profiles (Pyroscope's `/ingest`, OTLP's
//!   `/v1development/profiles`) stored as JVMs beside the agents' (docs/COLLECTOR.md).
//!
//! [`serve`] starts everything; `jscope serve` is a thin wrapper around it.

pub mod api;
mod config;
#[path = "ui/distributed.rs"]
mod distributed_ui;
mod error;
pub mod histogram;
pub mod hot;
pub mod http;
pub mod ingest;
pub mod listener;
pub mod live;
pub mod metrics;
pub mod push;
mod server;

pub use config::{parse_duration, ServerConfig};
pub use distributed_ui::{view_distributed, DistributedServer};
pub use error::CollectorError;
pub use hot::HotMethodsListener;
pub use jscope_store::{LogSink, MemoryLog, StderrLog, Store};
pub use listener::{
    Connection, Disconnect, ListenerError, Listeners, ServerListener, StoreListener, Trace,
};
pub use live::{LiveFigures, LiveState};
pub use server::{serve, serve_with, view, ServerHandle};
