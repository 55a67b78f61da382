//! The interface every engine implements: the cpu and wall signal samplers, the
//! snapshot sampler, the trace session, the event session, the park hooks and
//! remote capture.
//!
//! The recorder owns the recording's engines in one list: it starts them in
//! order, stops them in reverse order (rolling back the started ones when one
//! fails), then waits for their threads. The writer thread starts before them and
//! drains every started engine through the same list into its [`Sink`], and asks
//! each for its counters.
//! Output (file, collector) stays apart, in the writer and the sender.
//!
//! Methods take `&self`: the recorder's thread starts and stops an engine while
//! the writer drains it, so an engine keeps its writer-side state behind its own
//! lock (taken only by the writer) and its control state in atomics.

use std::time::Instant;

use crate::java_threads::ThreadFields;
use crate::jvm::{Jni, Jvmti, JvmtiError, Vm};
use crate::sink::Sink;
use crate::threads::ThreadTable;

/// Why a recording could not start; Display is the one line printed on stderr.
/// Engines' own errors are boxed so that this module depends on none of them.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create recording file {path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write recording file {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("this JVM has no AsyncGetCallTrace, which the cpu and wall modes need")]
    NoAsyncGetCallTrace,
    #[error("java.lang.Thread has no `tid` field; this JVM is not supported")]
    NoThreadFields,
    #[error("cannot install the sampling signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("cannot sample on event `{event}`: {reason}")]
    Event { event: &'static str, reason: String },
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    #[error("JVMTI refused to enable events: {0}")]
    Events(JvmtiError),
    #[error("cannot start tracing: {0}")]
    Trace(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot record events: {0}")]
    EventSession(Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot hook native calls: {0}")]
    Interpose(String),
}

/// What an engine may use while it starts (on a Java thread: VMInit's or the
/// attach listener's). Each engine got its options when it was made.
pub(crate) struct StartContext<'a> {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub jni: Jni,
    pub fields: ThreadFields,
    pub table: &'a std::sync::Arc<ThreadTable>,
    /// How a signal handler or a native hook finds its thread's JNIEnv,
    /// found once for the recording's engines.
    pub env: crate::jvm::current::EnvOf,
}

/// How a recording stops.
#[derive(Clone, Copy)]
pub(crate) struct StopContext {
    pub jvmti: Jvmti,
    /// The stopping thread's JNI environment when the application runs on
    /// (stop by attach): engines that changed the application's classes give
    /// them their own code back. None at VM death.
    pub restore_with: Option<Jni>,
}

/// Whether a drain emptied its engine's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drained {
    /// Nothing left for now.
    All,
    /// The chunk is full: the writer writes it and calls `drain` again.
    More,
}

pub(crate) trait Engine: Send + Sync {
    /// Starts producing. On error the recorder stops this engine (whatever part
    /// of it started) and the engines started before it.
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError>;

    /// Stops producing at once, without waiting (what is buffered stays for
    /// the writer's last drain). Harmless on an engine that never started.
    fn stop(&self, ctx: &StopContext);

    /// Stops at once what must not outlive the VM (signal sources), from any
    /// thread and without JVMTI; used as the VM unloads the agent.
    fn silence(&self) {}

    /// Waits until the engine's threads have left the VM, at most until
    /// `deadline`; called after every engine was asked to stop.
    fn wait(&self, _deadline: Instant) {}

    /// Writer thread: moves what the engine produced into the sink.
    fn drain(&self, _sink: &mut Sink) -> Drained {
        Drained::All
    }

    /// Writer thread: the engine's counters, appended in a fixed order.
    fn counters(&self, _out: &mut Vec<(&'static str, u64)>) {}
}
