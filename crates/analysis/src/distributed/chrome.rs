//! The merged tree as Chrome/Perfetto trace-event JSON (`jscope tree --distributed
//! --chrome FILE`).

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::{FlatJvm, FlatNode, FlatTree};

impl FlatTree {
    /// Chrome trace-event JSON of the merged tree: a process per JVM, a complete
    /// event per call on the reference timeline (µs from the earliest call), remote
    /// calls as events on the client's thread with a flow arrow to the server's
    /// first call. Placements of other JVMs carry their uncertainty in `args`.
    pub fn chrome(&self) -> Value {
        let origin = self.nodes.iter().map(|n| n.start_ns).min().unwrap_or(0);
        let mut events: Vec<Value> = self.jvms.iter().enumerate().map(process).collect();
        // Thread ids are numbered across JVMs in order of first appearance.
        let mut tids: HashMap<(usize, &str), usize> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let next = tids.len() + 1;
            let tid = *tids.entry((n.jvm, n.thread.as_str())).or_insert(next);
            if tid == next {
                events.push(json!({"ph": "M", "name": "thread_name", "pid": n.jvm + 1, "tid": tid, "args": {"name": n.thread}}));
            }
            let ts = (n.start_ns - origin) as f64 / 1e3;
            events.push(complete(n, tid, ts));
            if n.remote.is_some() {
                events.push(json!({"ph": "s", "cat": "remote", "name": "remote call", "id": i, "pid": n.jvm + 1, "tid": tid, "ts": ts}));
            }
            // The server's first call under a remote call ends that call's arrow.
            if let Some(p) = n.parent.filter(|&p| self.nodes[p].remote.is_some()) {
                events.push(json!({"ph": "f", "bp": "e", "cat": "remote", "name": "remote call", "id": p, "pid": n.jvm + 1, "tid": tid, "ts": ts}));
            }
        }
        json!({"displayTimeUnit": "ns", "traceEvents": events})
    }

    /// [`chrome`](FlatTree::chrome) written as one line of JSON and a newline.
    pub fn write_chrome(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, &self.chrome())?;
        writeln!(out)
    }
}

/// A JVM as a process (pids from 1).
fn process((j, m): (usize, &FlatJvm)) -> Value {
    let name = format!("jvm {j} {} pid {}: {}", m.host, m.pid, m.command_line);
    json!({"ph": "M", "name": "process_name", "pid": j + 1, "tid": 0, "args": {"name": name}})
}

/// A call, or a remote call with its network and server times, at `ts` µs.
fn complete(n: &FlatNode, tid: usize, ts: f64) -> Value {
    let mut args =
        json!({"self_us": n.self_ns as f64 / 1e3, "uncertainty_us": n.uncertainty_ns as f64 / 1e3});
    if n.own_clock {
        args["own_clock"] = json!(true);
    }
    if let Some(r) = &n.remote {
        args["network_us"] = json!(r.network_ns as f64 / 1e3);
        args["server_us"] = json!(r.server_ns as f64 / 1e3);
        args["server_jvm"] = json!(r.server_jvm);
        args["conn"] = json!(format!("{}#{}", r.client, r.conn_seq));
    }
    json!({"ph": "X", "cat": if n.remote.is_some() { "remote" } else { "java" },
        "name": n.label, "pid": n.jvm + 1, "tid": tid, "ts": ts,
        "dur": n.duration_ns as f64 / 1e3, "args": args})
}
