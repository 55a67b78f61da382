//! The agent-to-collector protocol: what travels over one TCP connection between an
//! agent (or any client) and the collector.
//!
//! ```text
//! client → server   preamble  "JSCWIRE" version:u8
//! client → server   Hello     token, stream id, next seq, labels, recording header bytes
//! server → client   Accept    highest seq already durable for this stream, frame limit
//!                 | Refuse    reason code and message, then the server closes
//! client → server   Chunk     seq:u64, one framed chunk exactly as ChunkWriter::finish made it
//! server → client   Ack       highest seq made durable (fsync'd) so far
//! client → server   Bye       clean end; the server answers with a last Ack and closes
//! ```
//! Every message is a frame `kind:u8 len:u32le payload[len]`; `len` is checked against a
//! limit before anything is allocated. Sequence numbers start at 1 and grow by one per
//! chunk; a reconnecting client resends every chunk above the acknowledged sequence
//! number from the Accept, and the server ignores (but acknowledges) any it already has.
//!
//! This crate has both sides: [`Message`] encode/decode and [`read_message`] /
//! [`write_message`] for servers, and [`WireClient`] plus [`Outbox`] — a blocking,
//! thread-friendly client with a bounded resend buffer — for agents and load generators.
//! It has no async runtime so the agent stays light. See docs/COLLECTOR.md.

mod client;
mod codec;
mod message;
mod outbox;

pub use client::{ClientConfig, WireClient};
pub use message::{
    read_message, read_preamble, write_message, write_preamble, Accept, Hello, Message, RefuseCode,
    PREAMBLE, PROTOCOL_VERSION,
};
pub use outbox::{Outbox, Pushed};

/// Frames larger than this are refused unless a peer configures otherwise: a chunk
/// holds about one second of samples, far below it.
pub const DEFAULT_MAX_FRAME: u32 = 16 << 20;

/// Longest stream id accepted; ids name directories on the collector.
pub const MAX_STREAM_ID: usize = 128;

/// Why a protocol exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection closed by peer")]
    Closed,
    #[error("no data for the read timeout")]
    Idle,
    #[error("peer stalled in the middle of a frame ({got} of {want} bytes)")]
    Stalled { got: usize, want: usize },
    #[error("not a jscope wire connection (bad preamble)")]
    BadPreamble,
    #[error("unsupported protocol version {0} (this side speaks {PROTOCOL_VERSION})")]
    UnsupportedVersion(u8),
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    FrameTooLarge { len: u32, max: u32 },
    #[error("malformed {what}: {why}")]
    Malformed { what: &'static str, why: String },
    #[error("unexpected {got} frame (wanted {want})")]
    Unexpected {
        got: &'static str,
        want: &'static str,
    },
    #[error("refused by the collector ({code}): {message}")]
    Refused { code: RefuseCode, message: String },
    #[error("could not connect to {addr}: {why}")]
    Connect { addr: String, why: String },
    /// The TLS handshake failed: the server's certificate is not trusted, expired or
    /// for another host, the server wanted a client certificate, or it speaks no TLS.
    #[error("TLS with {addr} failed: {why}")]
    Tls { addr: String, why: String },
    /// The peer answered the hello with something that is not this protocol: another
    /// service on that port, such as the collector's own web port.
    #[error("not a jscope collector: it answered {answer}{hint}")]
    NotACollector { answer: String, hint: &'static str },
}

impl WireError {
    pub(crate) fn malformed(what: &'static str, why: impl Into<String>) -> WireError {
        WireError::Malformed {
            what,
            why: why.into(),
        }
    }
}

/// Checks that a stream id is usable as a file name on any collector: 1 to
/// [`MAX_STREAM_ID`] characters of `A-Z a-z 0-9 . _ -`, not starting with a dot.
pub fn valid_stream_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_STREAM_ID
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A stream id for a JVM: host, pid and start time make it unique and let a restarted
/// agent in the same process (same header) resume its own stream.
pub fn stream_id_for(header: &jscope_format::Header) -> String {
    let host: String = header
        .host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    format!("{host}-{}-{}", header.pid, header.start_wall_ns)
}

#[cfg(test)]
mod tests;
