//! The one error type of the crate; every variant renders as a single line.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why attaching to a JVM, or talking to it, failed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("no such process: {pid}")]
    NoSuchProcess { pid: u32 },

    #[error("permission denied attaching to process {pid}: {detail}")]
    PermissionDenied { pid: u32, detail: String },

    /// Sending SIGQUIT to a process without a handler for it would kill it.
    #[error(
        "process {pid} does not handle SIGQUIT (not a HotSpot JVM, still starting, \
         or run with -Xrs); refusing to signal it"
    )]
    NoSigquitHandler { pid: u32 },

    /// Its SIGQUIT handler would only print a thread dump into the application's output.
    #[error(
        "process {pid} does not accept attaching (started with -XX:+DisableAttachMechanism); \
         refusing to signal it"
    )]
    AttachDisabled { pid: u32 },

    #[error("process {pid} exited while waiting for its attach listener")]
    ProcessExited { pid: u32 },

    #[error("timed out after {waited:?} waiting for the attach listener of process {pid}")]
    Timeout { pid: u32, waited: Duration },

    /// A socket owned by someone else could be an impostor listening in the target's place.
    #[error(
        "attach socket {} is owned by uid {owner}, but process {pid} runs as uid {expected}",
        socket.display()
    )]
    SocketOwnerMismatch {
        pid: u32,
        socket: PathBuf,
        owner: u32,
        expected: u32,
    },

    #[error("process {pid} did not reply within {waited:?}")]
    ReplyTimeout { pid: u32, waited: Duration },

    #[error("invalid attach request: {0}")]
    InvalidRequest(String),

    #[error("attach protocol error: {0}")]
    Protocol(String),

    /// The VM ran the command and reported failure; `message` is what it said.
    #[error("the JVM reported failure (code {code}): {message}")]
    CommandFailed { code: i32, message: String },

    /// `code` is the VM's result code; JDK 25 answers 0 even when it did not load.
    #[error("the JVM did not load the agent: {message}")]
    AgentNotLoaded { code: i32, message: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl AttachError {
    /// Wraps an I/O error with what was being done, mapping the errno values that
    /// have a clearer variant of their own.
    pub(crate) fn io(pid: u32, context: impl Into<String>, source: io::Error) -> Self {
        let context = context.into();
        match source.raw_os_error() {
            Some(libc::ESRCH) => AttachError::NoSuchProcess { pid },
            Some(libc::EACCES) | Some(libc::EPERM) => AttachError::PermissionDenied {
                pid,
                detail: format!("{context}: {source}"),
            },
            _ => AttachError::Io { context, source },
        }
    }
}
