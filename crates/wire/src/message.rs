//! The messages, their frames, and reading/writing them on a byte stream.

use std::fmt;
use std::io::{ErrorKind, Read, Write};

use crate::codec::{put_bytes, put_str, put_u32, put_u64, Fields};
use crate::WireError;

/// Sent once by the client before any frame: 7 magic bytes, then the version.
pub const PREAMBLE: &[u8; 7] = b"JSCWIRE";
pub const PROTOCOL_VERSION: u8 = 1;

const FRAME_HEAD: usize = 5;

mod kind {
    pub const HELLO: u8 = 1;
    pub const ACCEPT: u8 = 2;
    pub const REFUSE: u8 = 3;
    pub const CHUNK: u8 = 4;
    pub const ACK: u8 = 5;
    pub const BYE: u8 = 6;
}

/// The client's opening message: who it is and where its stream resumes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hello {
    /// Empty when the collector needs none.
    pub token: String,
    /// Names the stream (one JVM run) across reconnections; see `valid_stream_id`.
    pub stream: String,
    /// The lowest sequence number the client can still send (1 for a new stream).
    /// When the collector holds less than `next_seq - 1`, the chunks between were lost.
    pub next_seq: u64,
    /// Free-form key/values the collector indexes (e.g. `app=shop`).
    pub labels: Vec<(String, String)>,
    /// `jscope_format::encode_file_start` output: magic and header chunk.
    pub header: Vec<u8>,
}

/// The collector's yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accept {
    /// Highest sequence number already durable for this stream; 0 when none.
    pub acked: u64,
    /// The largest frame the collector accepts.
    pub max_frame: u32,
    /// The collector's name and version, for logs.
    pub server: String,
}

/// Why the collector said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RefuseCode {
    BadToken = 1,
    UnsupportedVersion = 2,
    BadHello = 3,
    /// Another connection is streaming the same stream id.
    Busy = 4,
    /// The collector is at its connection limit.
    Full = 5,
    ShuttingDown = 6,
    /// The collector's store failed (down, full): try later, or another collector.
    StoreUnavailable = 7,
    Other = 255,
}

impl RefuseCode {
    fn from_u8(v: u8) -> RefuseCode {
        use RefuseCode::*;
        [
            BadToken,
            UnsupportedVersion,
            BadHello,
            Busy,
            Full,
            ShuttingDown,
            StoreUnavailable,
        ]
        .into_iter()
        .find(|c| *c as u8 == v)
        .unwrap_or(Other)
    }

    /// Whether a client should try again later (with backoff) rather than give up.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            RefuseCode::Busy
                | RefuseCode::Full
                | RefuseCode::ShuttingDown
                | RefuseCode::StoreUnavailable
        )
    }
}

impl fmt::Display for RefuseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            RefuseCode::BadToken => "bad token",
            RefuseCode::UnsupportedVersion => "unsupported version",
            RefuseCode::BadHello => "bad hello",
            RefuseCode::Busy => "stream busy",
            RefuseCode::Full => "collector full",
            RefuseCode::ShuttingDown => "shutting down",
            RefuseCode::StoreUnavailable => "store unavailable",
            RefuseCode::Other => "other",
        };
        f.write_str(name)
    }
}

/// One protocol message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello(Hello),
    Accept(Accept),
    Refuse {
        code: RefuseCode,
        message: String,
    },
    /// `chunk` is one framed chunk (`ChunkWriter::finish` output), stored as is.
    Chunk {
        seq: u64,
        chunk: Vec<u8>,
    },
    Ack {
        seq: u64,
    },
    Bye,
}

impl Message {
    pub fn name(&self) -> &'static str {
        match self {
            Message::Hello(_) => "hello",
            Message::Accept(_) => "accept",
            Message::Refuse { .. } => "refuse",
            Message::Chunk { .. } => "chunk",
            Message::Ack { .. } => "ack",
            Message::Bye => "bye",
        }
    }

    fn kind(&self) -> u8 {
        match self {
            Message::Hello(_) => kind::HELLO,
            Message::Accept(_) => kind::ACCEPT,
            Message::Refuse { .. } => kind::REFUSE,
            Message::Chunk { .. } => kind::CHUNK,
            Message::Ack { .. } => kind::ACK,
            Message::Bye => kind::BYE,
        }
    }

    /// The whole frame: kind, length and payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut payload = Vec::new();
        self.encode_payload(&mut payload);
        let mut out = Vec::with_capacity(FRAME_HEAD + payload.len());
        out.push(self.kind());
        put_u32(&mut out, payload.len() as u32);
        out.extend_from_slice(&payload);
        out
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Message::Hello(h) => encode_hello(out, h),
            Message::Accept(a) => {
                put_u64(out, a.acked);
                put_u32(out, a.max_frame);
                put_str(out, &a.server);
            }
            Message::Refuse { code, message } => {
                out.push(*code as u8);
                put_str(out, message);
            }
            Message::Chunk { seq, chunk } => {
                put_u64(out, *seq);
                out.extend_from_slice(chunk);
            }
            Message::Ack { seq } => put_u64(out, *seq),
            Message::Bye => {}
        }
    }

    /// Decodes a frame's payload given its kind byte.
    pub fn decode(kind: u8, payload: &[u8]) -> Result<Message, WireError> {
        match kind {
            kind::HELLO => decode_hello(payload).map(Message::Hello),
            kind::ACCEPT => decode_accept(payload).map(Message::Accept),
            kind::REFUSE => decode_refuse(payload),
            kind::CHUNK => decode_chunk(payload),
            kind::ACK => {
                let mut f = Fields::new("ack", payload);
                let seq = f.u64()?;
                f.finish()?;
                Ok(Message::Ack { seq })
            }
            kind::BYE => Fields::new("bye", payload).finish().map(|_| Message::Bye),
            other => Err(WireError::malformed(
                "frame",
                format!("unknown kind {other}"),
            )),
        }
    }
}

fn encode_hello(out: &mut Vec<u8>, h: &Hello) {
    put_str(out, &h.token);
    put_str(out, &h.stream);
    put_u64(out, h.next_seq);
    put_u32(out, h.labels.len() as u32);
    for (k, v) in &h.labels {
        put_str(out, k);
        put_str(out, v);
    }
    put_bytes(out, &h.header);
}

fn decode_hello(payload: &[u8]) -> Result<Hello, WireError> {
    let mut f = Fields::new("hello", payload);
    let token = f.string()?;
    let stream = f.string()?;
    let next_seq = f.u64()?;
    let n = f.u32()? as usize;
    // Each label takes at least 8 bytes, so `n` cannot ask for more than the payload holds.
    if n > payload.len() / 8 {
        return Err(WireError::malformed("hello", "label count too large"));
    }
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        labels.push((f.string()?, f.string()?));
    }
    let header = f.bytes()?.to_vec();
    f.finish()?;
    Ok(Hello {
        token,
        stream,
        next_seq,
        labels,
        header,
    })
}

fn decode_accept(payload: &[u8]) -> Result<Accept, WireError> {
    let mut f = Fields::new("accept", payload);
    let a = Accept {
        acked: f.u64()?,
        max_frame: f.u32()?,
        server: f.string()?,
    };
    f.finish()?;
    Ok(a)
}

fn decode_refuse(payload: &[u8]) -> Result<Message, WireError> {
    let mut f = Fields::new("refuse", payload);
    let code = RefuseCode::from_u8(f.u8()?);
    let message = f.string()?;
    f.finish()?;
    Ok(Message::Refuse { code, message })
}

fn decode_chunk(payload: &[u8]) -> Result<Message, WireError> {
    let mut f = Fields::new("chunk", payload);
    let seq = f.u64()?;
    if seq == 0 {
        return Err(WireError::malformed("chunk", "sequence number 0"));
    }
    Ok(Message::Chunk {
        seq,
        chunk: f.rest().to_vec(),
    })
}

/// Writes the client preamble.
pub fn write_preamble(w: &mut impl Write) -> Result<(), WireError> {
    w.write_all(PREAMBLE)?;
    w.write_all(&[PROTOCOL_VERSION])?;
    Ok(())
}

/// Reads and checks the client preamble (server side).
pub fn read_preamble(r: &mut impl Read) -> Result<(), WireError> {
    let mut buf = [0u8; 8];
    read_full(r, &mut buf, 0, 8)?;
    if &buf[..7] != PREAMBLE {
        return Err(WireError::BadPreamble);
    }
    if buf[7] != PROTOCOL_VERSION {
        return Err(WireError::UnsupportedVersion(buf[7]));
    }
    Ok(())
}

/// Writes one message as a frame (not flushed).
pub fn write_message(w: &mut impl Write, m: &Message) -> Result<(), WireError> {
    w.write_all(&m.encode())?;
    Ok(())
}

/// Writes a chunk frame without first copying the chunk into a `Message`.
pub(crate) fn write_chunk(w: &mut impl Write, seq: u64, chunk: &[u8]) -> Result<(), WireError> {
    let mut head = [0u8; FRAME_HEAD + 8];
    head[0] = kind::CHUNK;
    head[1..5].copy_from_slice(&((chunk.len() + 8) as u32).to_le_bytes());
    head[5..].copy_from_slice(&seq.to_le_bytes());
    w.write_all(&head)?;
    w.write_all(chunk)?;
    Ok(())
}

/// Reads one frame and decodes it. A frame longer than `max` is refused before its
/// payload is read. With a read timeout on the stream, a timeout before the first byte
/// is [`WireError::Idle`] (the caller may keep waiting); one after it is
/// [`WireError::Stalled`] (the peer stopped mid-frame).
pub fn read_message(r: &mut impl Read, max: u32) -> Result<Message, WireError> {
    let mut head = [0u8; FRAME_HEAD];
    read_full(r, &mut head, 0, FRAME_HEAD)?;
    let len = u32::from_le_bytes(head[1..5].try_into().expect("4 bytes"));
    if len > max {
        return Err(WireError::FrameTooLarge { len, max });
    }
    let mut payload = vec![0u8; len as usize];
    read_full(r, &mut payload, FRAME_HEAD, FRAME_HEAD + len as usize)?;
    Message::decode(head[0], &payload)
}

/// Fills `buf`; `before` bytes of the same frame were read earlier, `want` in all.
fn read_full(
    r: &mut impl Read,
    buf: &mut [u8],
    before: usize,
    want: usize,
) -> Result<(), WireError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if before + got == 0 => return Err(WireError::Closed),
            Ok(0) => {
                return Err(WireError::malformed(
                    "frame",
                    format!(
                        "connection closed mid-frame ({} of {want} bytes)",
                        before + got
                    ),
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) && before + got == 0 => return Err(WireError::Idle),
            Err(e) if is_timeout(&e) => {
                return Err(WireError::Stalled {
                    got: before + got,
                    want,
                })
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}
