//! Analyses of a jscope [`Recording`](jscope_format::Recording).
//!
//! Every analysis starts from a [`Selection`]: which samples (cpu, wall or
//! snapshot threads), of which threads, in which states and time window. The
//! selected samples are then folded into one of the views:
//!
//! - [`hot_methods`]: self and total samples per method (a "top" table);
//! - [`collapse`]: collapsed stacks, root first, the input of flame graphs;
//! - [`call_graph`]: methods and caller→callee edges, with Graphviz output;
//! - [`threads_at`]: every thread of the snapshot nearest a moment (xdProf's view);
//! - [`Info`]: what a recording holds and how well sampling went;
//! - [`diff_hot`]: two hot-method tables compared, shares normalised per side;
//! - [`incomplete_stacks`]: how many of the selected samples have an unknown,
//!   broken or empty stack, and why, for readers to warn when they weigh on a
//!   profile.
//!
//! A sample whose stack has no frame at all is shown in every view as the one
//! frame [`NO_STACK`], never left out.
//!
//! Exact-tracing recordings (method entries and exits) are analysed by [`trace`]:
//! call trees, call statistics and exports.
//!
//! JVM events (monitors, waits, GC, allocations, object ages, user events) are
//! analysed by [`events`]: event rows, reports and event trees.
//!
//! Recordings of several JVMs that call each other (RMI, HTTP) are merged by
//! [`distributed`]: remote calls matched across JVMs, one execution tree.
//!
//! The views are plain data (serde-serialisable) with `Display` or `write_*`
//! renderings, so binaries stay thin.

mod callgraph;
mod collapsed;
mod diff;
pub mod distributed;
mod error;
pub mod events;
mod glob;
mod hot;
mod incomplete;
mod info;
mod labels;
mod queue;
mod requests;
mod select;
mod stats;
mod synthetic;
mod threads;
pub mod trace;

pub use callgraph::{call_graph, CallEdge, CallGraph, CallNode, DotOptions};
pub use collapsed::{collapse, CollapseOptions, Collapsed};
pub use diff::{diff_hot, HotDiff, MethodDiff, Presence};
pub use error::AnalysisError;
pub use glob::ThreadMatcher;
pub use hot::{hot_methods, HotMethod, HotMethods};
pub use incomplete::{incomplete_stacks, marker_reason, IncompleteStacks, WARN_PERCENT};
pub use info::civil_from_days;
pub use info::{
    sampled_modes, CounterValue, CpuThreadRate, EventCount, Info, IntervalStats, KindCount,
    TraceInfo,
};
pub use labels::{kind_suffix, method_label, source_file, Annotation, NO_STACK};
pub use queue::{
    erlang_c, replay_queue, replay_queue_bytes, ErlangC, LengthPoint, QueueError, QueueReport,
    QueueSpec, QueueSummary, Request,
};
pub use requests::{
    request_rows, JvmRecording, OutgoingCall, RequestFilter, RequestPart, RequestRow,
};
pub use select::{
    count_mode, parse_state, Mode, Selection, StackCounts, StackSample, ThreadGrouping,
};
pub use synthetic::{fill_empty_stacks, AllocationStacks};
pub use threads::{threads_at, FrameRow, ThreadRow, ThreadsView};

#[cfg(test)]
mod stack_tests;
#[cfg(test)]
mod tests;
