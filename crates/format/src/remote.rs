//! Remote calls (JaViz): one record on the client for each call it made, one on the
//! server for each call it executed. Readers link the two by connection identity and
//! per-connection order, never by comparing the clocks of different machines.

use crate::ids::{StackId, StringId, ThreadId};
use crate::varint::{put_i64, put_u64, Cursor};
use crate::FormatError;

pub(crate) const TAG_CLIENT: u64 = 48;
pub(crate) const TAG_SERVER: u64 = 49;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RemoteSide {
    /// This JVM made the call (RMI stub / HTTP client).
    Client = 0,
    /// This JVM executed the call (RMI dispatch / HTTP handler).
    Server = 1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RemoteProtocol {
    Rmi = 1,
    Http = 2,
}

/// One remote call as one side saw it. Hosts, object and method names and request
/// ids are string ids; endpoints are from this side's point of view (`local` is this
/// JVM's end of the connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteCall {
    pub side: RemoteSide,
    pub protocol: RemoteProtocol,
    pub thread: ThreadId,
    /// Start of the call on this side.
    pub ticks: u64,
    pub duration_ns: u64,
    pub local_host: StringId,
    pub local_port: u32,
    pub remote_host: StringId,
    pub remote_port: u32,
    /// 1 for the first call on this connection, 2 for the next, ...
    pub conn_seq: u64,
    /// RMI: the remote object's id; HTTP: the request path.
    pub object: StringId,
    /// RMI: the method hash; HTTP: 0.
    pub method_hash: u64,
    /// RMI: the method name and descriptor; HTTP: the request method.
    pub method: StringId,
    /// An optional in-band id (W3C traceparent, or jscope's own), 0 when none.
    pub request_id: StringId,
    pub stack: StackId,
    /// Whether the call ended with an exception (or an HTTP status >= 500).
    pub failed: bool,
}

pub(crate) fn encode_remote(out: &mut Vec<u8>, c: &RemoteCall, dt: i64) -> u64 {
    put_u64(out, c.thread.into());
    put_i64(out, dt);
    out.push(c.protocol as u8);
    put_u64(out, c.duration_ns);
    for v in [c.local_host.0, c.local_port, c.remote_host.0, c.remote_port] {
        put_u64(out, v.into());
    }
    put_u64(out, c.conn_seq);
    put_u64(out, c.object.into());
    put_u64(out, c.method_hash);
    for v in [c.method.0, c.request_id.0, c.stack.0] {
        put_u64(out, v.into());
    }
    out.push(u8::from(c.failed));
    match c.side {
        RemoteSide::Client => TAG_CLIENT,
        RemoteSide::Server => TAG_SERVER,
    }
}

pub(crate) fn decode_remote(
    t: u64,
    c: &mut Cursor,
    absolute: &mut dyn FnMut(ThreadId, i64) -> u64,
) -> Result<RemoteCall, FormatError> {
    let side = if t == TAG_CLIENT {
        RemoteSide::Client
    } else {
        RemoteSide::Server
    };
    let thread = c.id()?;
    let ticks = absolute(thread, c.i64()?);
    let protocol = match c.u8()? {
        1 => RemoteProtocol::Rmi,
        2 => RemoteProtocol::Http,
        p => {
            return Err(FormatError::Malformed(format!(
                "unknown remote protocol {p}"
            )))
        }
    };
    Ok(RemoteCall {
        side,
        protocol,
        thread,
        ticks,
        duration_ns: c.u64()?,
        local_host: c.id()?,
        local_port: c.u32()?,
        remote_host: c.id()?,
        remote_port: c.u32()?,
        conn_seq: c.u64()?,
        object: c.id()?,
        method_hash: c.u64()?,
        method: c.id()?,
        request_id: c.id()?,
        stack: c.id()?,
        failed: c.u8()? != 0,
    })
}
