//! One JVM of a distributed session: its call tree and its remote-call records,
//! resolved to strings and to ns since its recording's start.

use std::collections::HashMap;

use jscope_format::StringId;
use jscope_format::{Recording, RemoteCall, RemoteProtocol, RemoteSide};
use serde::Serialize;

use crate::trace::{CallTree, TraceError, TraceOptions};

/// One end of a connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Endpoint {
    pub host: String,
    pub port: u32,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// A remote-call record of one JVM with its ids resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remote {
    pub side: RemoteSideName,
    pub protocol: ProtocolName,
    /// The recording's thread id (as in [`ThreadTree::thread`](crate::trace::ThreadTree)).
    pub thread: u32,
    /// ns since this JVM's recording start, on this JVM's clock.
    pub start_ns: u64,
    pub end_ns: u64,
    /// This JVM's end of the connection.
    pub local: Endpoint,
    pub remote: Endpoint,
    pub conn_seq: u64,
    pub object: String,
    pub method_hash: u64,
    pub method: String,
    pub request_id: Option<String>,
    pub failed: bool,
}

impl Remote {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// [`RemoteSide`] as serialisable data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteSideName {
    Client,
    Server,
}

/// [`RemoteProtocol`] as serialisable data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolName {
    Rmi,
    Http,
}

impl std::fmt::Display for ProtocolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProtocolName::Rmi => "rmi",
            ProtocolName::Http => "http",
        })
    }
}

/// One JVM's recording, ready to be merged.
#[derive(Debug, Clone)]
pub struct Member {
    /// How the user named it (usually the file path).
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub command_line: String,
    /// Unix epoch ns at the recording's start: this JVM's wall clock, which may be
    /// skewed against the others'.
    pub start_wall_ns: u64,
    pub tree: CallTree,
    /// In recording order.
    pub remotes: Vec<Remote>,
    /// Recording thread id -> index in `tree.threads`.
    thread_index: HashMap<u32, usize>,
}

impl Member {
    /// From a decoded recording (with its trace events).
    pub fn of(name: &str, rec: &Recording, options: &TraceOptions) -> Member {
        Self::assemble(name, rec, CallTree::of(rec, options))
    }

    /// From a recording's bytes; trace events are streamed into the tree, not kept.
    pub fn from_bytes(
        name: &str,
        bytes: &[u8],
        options: &TraceOptions,
    ) -> Result<Member, TraceError> {
        let (tree, rec) = CallTree::from_bytes(bytes, options)?;
        Ok(Self::assemble(name, &rec, tree))
    }

    /// From a file.
    pub fn read_file(path: &std::path::Path, options: &TraceOptions) -> Result<Member, TraceError> {
        let bytes =
            // The caller names the file (`cannot read FILE: ...`).
            std::fs::read(path).map_err(|e| TraceError::Io(e.to_string()))?;
        Self::from_bytes(&path.display().to_string(), &bytes, options)
    }

    fn assemble(name: &str, rec: &Recording, tree: CallTree) -> Member {
        let clock = RelClock::of(rec);
        let thread_index = tree
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (t.thread, i))
            .collect();
        Member {
            thread_index,
            name: name.to_string(),
            host: rec.header.host.clone(),
            pid: rec.header.pid,
            command_line: rec.header.command_line.clone(),
            start_wall_ns: rec.header.start_wall_ns,
            tree,
            remotes: rec
                .remote_calls
                .iter()
                .map(|c| resolve(rec, &clock, c))
                .collect(),
        }
    }

    /// This JVM's wall-clock ns of a time given in ns since its recording's start.
    pub fn wall_ns(&self, rel_ns: u64) -> i128 {
        self.start_wall_ns as i128 + rel_ns as i128
    }

    /// Index in `tree.threads` of a recording thread id.
    pub(crate) fn thread_index(&self, thread: u32) -> Option<usize> {
        self.thread_index.get(&thread).copied()
    }
}

/// Ticks to ns since the recording start, as the trace module converts them, so
/// remote records and call nodes share one time base.
struct RelClock {
    start: u64,
    tps: u64,
}

impl RelClock {
    fn of(rec: &Recording) -> RelClock {
        RelClock {
            start: rec.header.start_ticks,
            tps: rec.header.ticks_per_second,
        }
    }

    fn ns(&self, ticks: u64) -> u64 {
        let rel = ticks.saturating_sub(self.start);
        match self.tps {
            0 | 1_000_000_000 => rel,
            tps => (rel as u128 * 1_000_000_000 / tps as u128) as u64,
        }
    }
}

fn resolve(rec: &Recording, clock: &RelClock, c: &RemoteCall) -> Remote {
    let s = |id: StringId| rec.string(id).to_string();
    let start_ns = clock.ns(c.ticks);
    Remote {
        side: match c.side {
            RemoteSide::Client => RemoteSideName::Client,
            RemoteSide::Server => RemoteSideName::Server,
        },
        protocol: match c.protocol {
            RemoteProtocol::Rmi => ProtocolName::Rmi,
            RemoteProtocol::Http => ProtocolName::Http,
        },
        thread: c.thread.0,
        start_ns,
        end_ns: start_ns.saturating_add(c.duration_ns),
        local: Endpoint {
            host: s(c.local_host),
            port: c.local_port,
        },
        remote: Endpoint {
            host: s(c.remote_host),
            port: c.remote_port,
        },
        conn_seq: c.conn_seq,
        object: s(c.object),
        method_hash: c.method_hash,
        method: s(c.method),
        request_id: (c.request_id != StringId::NONE).then(|| s(c.request_id)),
        failed: c.failed,
    }
}
