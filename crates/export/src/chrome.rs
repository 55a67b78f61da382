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

/// What every slice of a function says besides its times: its name, category
/// and file as JSON, made once per function.
struct SliceText {
    /// `"cat":"cpu","name":"pkg.Class.method"`
    head: Vec<String>,
    /// `"args":{"file":"Foo.java"}`
    args: Vec<String>,
}

impl SliceText {
    fn of(src: &Source) -> SliceText {
        let cat = json!(src.kind().name());
        let (head, args) = src
            .functions
            .iter()
            .map(|f| {
                let head = format!("\"cat\":{cat},\"name\":{}", json!(f.name));
                let args = if f.file.is_empty() {
                    "\"args\":{}".to_string()
                } else {
                    format!("\"args\":{{\"file\":{}}}", json!(f.file))
                };
                (head, args)
            })
            .unzip();
        SliceText { head, args }
    }
}

/// Slices of one thread, built sample by sample and written as they close.
struct ThreadSlices<'a> {
    src: &'a Source,
    text: &'a SliceText,
    thread: u32,
    open: Vec<Open>,
    /// Where the previous sample's interval ended.
    end_ns: u64,
}

impl<'a> ThreadSlices<'a> {
    /// Closes the slices above `keep` open ones, at the previous sample's end.
    fn close_to(&mut self, keep: usize, out: &mut dyn Write) -> io::Result<()> {
        while self.open.len() > keep {
            let o = self.open.pop().expect("longer than keep");
            let f = o.frame.function as usize;
            write!(
                out,
                ",\n{{\"ph\":\"X\",{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},{}}}",
                self.text.head[f],
                self.src.pid,
                self.thread,
                micros(o.start_ns),
                micros(self.end_ns.saturating_sub(o.start_ns)),
                self.text.args[f]
            )?;
        }
        Ok(())
    }

    /// Adds a sample: frames of the same functions as the open slices (root first,
    /// whatever line they are at, and without a gap of more than one interval
    /// between the samples) stay open.
    fn add(&mut self, s: &Sample, out: &mut dyn Write) -> io::Result<()> {
        let frames = &self.src.stacks[s.stack as usize];
        let contiguous = s.time_ns <= self.end_ns.saturating_add(s.weight);
        let shared = if contiguous {
            self.open
                .iter()
                .zip(frames.iter().rev())
                .take_while(|(o, f)| o.frame.function == f.function)
                .count()
        } else {
            0
        };
        self.close_to(shared, out)?;
        for f in frames.iter().rev().skip(shared) {
            self.open.push(Open {
                frame: *f,
                start_ns: s.time_ns,
            });
        }
        self.end_ns = s.time_ns.saturating_add(s.weight);
        Ok(())
    }
}

/// Writes `{"traceEvents":[...]}`, one event per line: process and thread
/// names, then each thread's slices as they close.
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
    let text = SliceText::of(src);
    for (thread, samples) in by_thread {
        let name = json!({
            "ph": "M", "name": "thread_name", "pid": src.pid, "tid": thread,
            "args": {"name": src.thread_name(thread)},
        });
        write!(out, ",\n{name}")?;
        let mut slices = ThreadSlices {
            src,
            text: &text,
            thread,
            open: Vec::new(),
            end_ns: 0,
        };
        for s in samples {
            slices.add(s, out)?;
        }
        slices.close_to(0, out)?;
    }
    writeln!(out, "]}}")
}

/// ns as µs with three decimals, the trace-event time unit.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}
