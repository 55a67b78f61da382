//! Errors of the analysis library.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum AnalysisError {
    #[error("unknown mode `{0}` (expected cpu, wall or snapshot)")]
    UnknownMode(String),
    #[error("unknown thread state `{0}` (expected runnable, blocked, waiting, timed_waiting, sleeping, parked, native, terminated, new or unknown)")]
    UnknownState(String),
    #[error("unknown thread grouping `{0}` (expected virtual or carrier)")]
    UnknownGrouping(String),
    #[error("the recording has no snapshots (record with --mode snapshot)")]
    NoSnapshots,
    #[error("invalid time window: from {from}s is after to {to}s")]
    EmptyWindow { from: f64, to: f64 },
}
