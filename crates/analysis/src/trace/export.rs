//! Exports of a call tree: Chrome/Perfetto trace-event JSON and collapsed stacks.

use std::collections::HashMap;
use std::io::{self, Write};

use super::engine::{THREW, UNFINISHED};
use super::tree::{CallTree, NodeRef};

impl CallTree {
    /// Chrome trace-event JSON (`{"traceEvents":[...]}`), loadable in Perfetto and
    /// chrome://tracing: one complete (`X`) event per call with times in µs,
    /// thread names as metadata, and a flow arrow from each `Thread.start` call to
    /// the first call of the thread it started.
    pub fn write_chrome(&self, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        let mut sep = Separator::default();
        sep.next(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":{}}}}}",
            self.pid,
            json_string(&format!("jvm {} {}", self.pid, self.command_line))
        )?;
        for (ti, t) in self.threads.iter().enumerate() {
            sep.next(out)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                self.pid,
                t.thread,
                json_string(&t.name)
            )?;
            for i in 0..t.nodes.len() {
                sep.next(out)?;
                self.write_complete_event(
                    NodeRef {
                        thread: ti,
                        node: i,
                    },
                    out,
                )?;
            }
        }
        for (k, &(start, b)) in self.grafts.iter().enumerate() {
            self.write_flow(k, start, b, &mut sep, out)?;
        }
        writeln!(out, "]}}")
    }

    fn write_complete_event(&self, r: NodeRef, out: &mut dyn Write) -> io::Result<()> {
        let n = self.node(r);
        write!(
            out,
            "{{\"ph\":\"X\",\"cat\":\"java\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"self_us\":{},\"corrected_us\":{}",
            json_string(self.label(n.method)),
            self.pid,
            self.threads[r.thread].thread,
            micros(n.enter_ns),
            micros(n.duration_ns()),
            micros(n.self_ns),
            micros(n.corrected_ns)
        )?;
        if n.flags & THREW != 0 {
            write!(out, ",\"threw\":true")?;
        }
        if n.flags & UNFINISHED != 0 {
            write!(out, ",\"unfinished\":true")?;
        }
        write!(out, "}}}}")
    }

    fn write_flow(
        &self,
        id: usize,
        start: NodeRef,
        thread: usize,
        sep: &mut Separator,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let Some(first) = self.thread_roots(thread).next() else {
            return Ok(());
        };
        for (ph, r) in [("s", start), ("f", first)] {
            sep.next(out)?;
            write!(
                out,
                "{{\"ph\":\"{ph}\",\"bp\":\"e\",\"cat\":\"thread\",\"name\":\"Thread.start\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                self.pid,
                self.threads[r.thread].thread,
                micros(self.node(r).enter_ns)
            )?;
        }
        Ok(())
    }

    /// Collapsed stacks weighted by self time in ns (`root;...;leaf ns`), one
    /// line per distinct path, sorted; each thread's calls are rooted at its own
    /// root calls, as flame-graph tools expect.
    pub fn write_collapsed(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut weights: HashMap<Vec<u32>, u64> = HashMap::new();
        let mut path: Vec<u32> = vec![];
        for t in &self.threads {
            for n in &t.nodes {
                path.truncate(n.depth as usize);
                path.push(n.method);
                if n.self_ns > 0 {
                    *weights.entry(path.clone()).or_default() += n.self_ns;
                }
            }
        }
        let mut lines: Vec<(String, u64)> = weights
            .into_iter()
            .map(|(p, w)| (self.path_label(&p), w))
            .collect();
        lines.sort();
        for (p, w) in lines {
            writeln!(out, "{p} {w}")?;
        }
        Ok(())
    }

    fn path_label(&self, path: &[u32]) -> String {
        path.iter()
            .map(|&m| self.label(m))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// Commas between JSON array elements.
#[derive(Default)]
struct Separator(bool);

impl Separator {
    fn next(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.0 {
            out.write_all(b",\n")?;
        }
        self.0 = true;
        Ok(())
    }
}

/// ns as µs with three decimals, the trace-event time unit.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
