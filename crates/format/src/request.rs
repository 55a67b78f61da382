//! Requests: what a thread served while its samples and events carry a request id.
//! One record per request, written when it ends: a server-side remote call (HTTP,
//! RMI), a traced method marked as an entry point, or a span opened through the
//! Java API. The W3C trace and span ids are kept as bytes where a `traceparent`
//! came in (or was made), so a request joins a trace begun elsewhere.

use crate::ids::{StringId, ThreadId};
use crate::varint::{put_i64, put_u64, Cursor};
use crate::FormatError;

pub(crate) const TAG_REQUEST: u64 = 56;

/// What opened a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum RequestKind {
    /// An HTTP request served (a servlet, Netty, the JDK's HTTP server).
    #[default]
    Http = 0,
    /// An RMI call dispatched.
    Rmi = 1,
    /// A traced method marked as an entry point (`entry=`).
    Entry = 2,
    /// A span of the Java API (`jscope.Span`).
    Span = 3,
}

impl RequestKind {
    pub fn from_u8(v: u8) -> RequestKind {
        match v {
            1 => RequestKind::Rmi,
            2 => RequestKind::Entry,
            3 => RequestKind::Span,
            _ => RequestKind::Http,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Http => "http",
            RequestKind::Rmi => "rmi",
            RequestKind::Entry => "entry",
            RequestKind::Span => "span",
        }
    }
}

/// One request a thread served: samples and events taken on `thread` while it
/// ran carry its `id` (their `request` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Request {
    /// This JVM's own id, > 0, unique within the recording.
    pub id: u64,
    /// The thread that served it (a virtual thread where one did).
    pub thread: ThreadId,
    /// When it began.
    pub ticks: u64,
    pub duration_ns: u64,
    /// The W3C trace id, all zero when none.
    pub trace_id: [u8; 16],
    /// This request's own span id (0 when none).
    pub span_id: u64,
    /// The span of the caller (the incoming traceparent's), 0 when none.
    pub parent_span_id: u64,
    /// The id of the request this one is nested in on the same thread, 0 when none.
    pub parent: u64,
    pub kind: RequestKind,
    /// What it was: `GET /path`, `Class.method`, a span's name.
    pub name: StringId,
    /// `key=value` pairs joined by `;` (a span's tags), 0 when none.
    pub tags: StringId,
    pub failed: bool,
}

impl Request {
    /// The trace id as 32 lowercase hex digits, empty when none.
    pub fn trace_id_hex(&self) -> String {
        if self.trace_id == [0; 16] {
            return String::new();
        }
        Self::format_trace_id(&self.trace_id)
    }

    /// `id` as 32 lowercase hex digits (the inverse of [`Self::parse_trace_id`]).
    pub fn format_trace_id(id: &[u8; 16]) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(32);
        for b in id {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
        out
    }

    /// The trace id of `hex` (32 hex digits), or None.
    pub fn parse_trace_id(hex: &str) -> Option<[u8; 16]> {
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(out)
    }

    /// When it ended.
    pub fn end_ticks(&self) -> u64 {
        self.ticks.saturating_add(self.duration_ns)
    }
}

pub(crate) fn encode_request(out: &mut Vec<u8>, r: &Request, dt: i64) {
    put_u64(out, r.thread.into());
    put_i64(out, dt);
    put_u64(out, r.id);
    put_u64(out, r.duration_ns);
    out.extend_from_slice(&r.trace_id);
    for v in [r.span_id, r.parent_span_id, r.parent] {
        put_u64(out, v);
    }
    out.push(r.kind as u8);
    put_u64(out, r.name.into());
    put_u64(out, r.tags.into());
    out.push(u8::from(r.failed));
}

pub(crate) fn decode_request(
    c: &mut Cursor,
    absolute: &mut dyn FnMut(ThreadId, i64) -> u64,
) -> Result<Request, FormatError> {
    let thread = c.id()?;
    let ticks = absolute(thread, c.i64()?);
    let id = c.u64()?;
    let duration_ns = c.u64()?;
    let mut trace_id = [0u8; 16];
    for b in &mut trace_id {
        *b = c.u8()?;
    }
    Ok(Request {
        id,
        thread,
        ticks,
        duration_ns,
        trace_id,
        span_id: c.u64()?,
        parent_span_id: c.u64()?,
        parent: c.u64()?,
        kind: RequestKind::from_u8(c.u8()?),
        name: c.id()?,
        tags: c.id()?,
        failed: c.u8()? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_read_and_print_as_hex() {
        let hex = "4bf92f3577b34da6a3ce929d0e0e4736";
        let id = Request::parse_trace_id(hex).unwrap();
        let r = Request {
            trace_id: id,
            ..Request::default()
        };
        assert_eq!(r.trace_id_hex(), hex);
        assert_eq!(Request::default().trace_id_hex(), "");
        assert_eq!(Request::parse_trace_id("4bf9"), None);
        assert_eq!(Request::parse_trace_id(&"z".repeat(32)), None);
    }
}
