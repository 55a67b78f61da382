//! Chrome trace-event JSON of samples (Perfetto, chrome://tracing): per thread,
//! each sample covers its interval, and a frame that stays on the stack over
//! consecutive samples is one slice, so the slices nest as a flame chart over time.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::json;

use crate::model::{Frame, Profile as Source, Sample};

/// A slice still open on a thread: its frame and when it began (ns).
struct Open {
    frame: Frame,
    start_ns: u64,
}

/// Slices of one thread, built sample by sample.
struct ThreadSlices<'a> {
    src: &'a Source,
    thread: u32,
    open: Vec<Open>,
    /// Where the previous sample's interval ended.
    end_ns: u64,
}

impl<'a> ThreadSlices<'a> {
    fn new(src: &'a Source, thread: u32) -> Self {
        ThreadSlices {
            src,
            thread,
            open: Vec::new(),
            end_ns: 0,
        }
    }

    /// Closes the slices above `keep` open ones, at the previous sample's end.
    fn close_to(&mut self, keep: usize, out: &mut Vec<serde_json::Value>) {
        while self.open.len() > keep {
            let o = self.open.pop().expect("longer than keep");
            out.push(self.slice(&o));
        }
    }

    fn slice(&self, o: &Open) -> serde_json::Value {
        let f = &self.src.functions[o.frame.function as usize];
        let mut args = json!({});
        if !f.file.is_empty() {
            args["file"] = json!(f.file);
        }
        json!({
            "ph": "X",
            "cat": self.src.kind().name(),
            "name": f.name,
            "pid": self.src.pid,
            "tid": self.thread,
            "ts": micros(o.start_ns),
            "dur": micros(self.end_ns.saturating_sub(o.start_ns)),
            "args": args,
        })
    }

    /// Adds a sample: frames of the same functions as the open slices (root first,
    /// whatever line they are at, and without a gap of more than one interval
    /// between the samples) stay open.
    fn add(&mut self, s: &Sample, out: &mut Vec<serde_json::Value>) {
        let frames: Vec<Frame> = self.src.stacks[s.stack as usize]
            .iter()
            .rev()
            .copied()
            .collect();
        let contiguous = s.time_ns <= self.end_ns.saturating_add(s.weight);
        let shared = if contiguous {
            self.open
                .iter()
                .zip(&frames)
                .take_while(|(o, f)| o.frame.function == f.function)
                .count()
        } else {
            0
        };
        self.close_to(shared, out);
        for f in &frames[shared..] {
            self.open.push(Open {
                frame: *f,
                start_ns: s.time_ns,
            });
        }
        self.end_ns = s.time_ns.saturating_add(s.weight);
    }
}

/// Writes `{"traceEvents":[...]}`, one event per line: process and thread
/// names, then each thread's slices (built and written a thread at a time).
pub fn write(src: &Source, out: &mut dyn Write) -> io::Result<()> {
    write!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let process = json!({
        "ph": "M", "name": "process_name", "pid": src.pid, "tid": 0,
        "args": {"name": format!("jvm {} {}", src.pid, src.command_line)},
    });
    serde_json::to_writer(&mut *out, &process)?;
    let mut by_thread: BTreeMap<u32, Vec<&Sample>> = BTreeMap::new();
    for s in &src.samples {
        by_thread.entry(s.thread).or_default().push(s);
    }
    let mut events = Vec::new();
    for (thread, samples) in by_thread {
        events.push(json!({
            "ph": "M", "name": "thread_name", "pid": src.pid, "tid": thread,
            "args": {"name": src.thread_name(thread)},
        }));
        let mut slices = ThreadSlices::new(src, thread);
        for s in samples {
            slices.add(s, &mut events);
        }
        slices.close_to(0, &mut events);
        for e in events.drain(..) {
            out.write_all(b",\n")?;
            serde_json::to_writer(&mut *out, &e)?;
        }
    }
    writeln!(out, "]}}")
}

/// ns as µs, the trace-event time unit.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}
