//! speedscope's file format (https://www.speedscope.app/file-format-schema.json):
//! shared frames, then one profile per thread: `sampled` for samples (stacks root
//! first, weights in the kind's unit), `evented` for exact traces (open and close
//! events at the calls' entries and exits, in nanoseconds).

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use jscope_analysis::trace::CallTree;
use serde::Serialize;

use crate::model::{Kind, Profile as Source};

const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

#[derive(Debug, Serialize)]
pub struct File {
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    pub shared: Shared,
    pub profiles: Vec<Profile>,
    pub name: String,
    #[serde(rename = "activeProfileIndex")]
    pub active_profile_index: usize,
    pub exporter: String,
}

#[derive(Debug, Serialize)]
pub struct Shared {
    pub frames: Vec<Frame>,
}

#[derive(Debug, Serialize)]
pub struct Frame {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type")]
pub enum Profile {
    #[serde(rename = "sampled")]
    Sampled {
        name: String,
        unit: &'static str,
        #[serde(rename = "startValue")]
        start_value: u64,
        #[serde(rename = "endValue")]
        end_value: u64,
        samples: Vec<Vec<usize>>,
        weights: Vec<u64>,
    },
    #[serde(rename = "evented")]
    Evented {
        name: String,
        unit: &'static str,
        #[serde(rename = "startValue")]
        start_value: u64,
        #[serde(rename = "endValue")]
        end_value: u64,
        events: Vec<Event>,
    },
}

#[derive(Debug, Serialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub frame: usize,
    pub at: u64,
}

/// speedscope's name for a kind's weight unit.
fn unit_of(kind: Kind) -> &'static str {
    match kind.unit() {
        "bytes" => "bytes",
        "nanoseconds" => "nanoseconds",
        _ => "none",
    }
}

fn exporter() -> String {
    format!("jscope {}", env!("CARGO_PKG_VERSION"))
}

/// Sampled profiles, one per thread with samples (threads by id), each sample in
/// time order with its weight; samples without frames are left out.
pub fn sampled(src: &Source, name: &str) -> File {
    let frames = src
        .functions
        .iter()
        .map(|f| Frame {
            name: f.name.clone(),
            file: (!f.file.is_empty()).then(|| f.file.clone()),
        })
        .collect();
    let mut per_thread: BTreeMap<u32, (Vec<Vec<usize>>, Vec<u64>)> = BTreeMap::new();
    for s in &src.samples {
        let stack = &src.stacks[s.stack as usize];
        if stack.is_empty() || s.weight == 0 {
            continue;
        }
        let (samples, weights) = per_thread.entry(s.thread).or_default();
        samples.push(stack.iter().rev().map(|f| f.function as usize).collect());
        weights.push(s.weight);
    }
    let unit = unit_of(src.kind());
    let profiles = per_thread
        .into_iter()
        .map(|(thread, (samples, weights))| Profile::Sampled {
            name: format!("{} ({})", src.thread_name(thread), src.kind()),
            unit,
            start_value: 0,
            end_value: weights.iter().sum(),
            samples,
            weights,
        })
        .collect();
    File {
        schema: SCHEMA,
        shared: Shared { frames },
        profiles,
        name: name.to_string(),
        active_profile_index: 0,
        exporter: exporter(),
    }
}

/// Evented profiles of a call tree, one per traced thread: each call opens at
/// its entry and closes at its exit, nested as the calls were.
pub fn evented(tree: &CallTree, name: &str) -> File {
    let mut frames: Vec<Frame> = Vec::new();
    let mut frame_of: HashMap<u32, usize> = HashMap::new();
    let mut profiles = Vec::new();
    for t in &tree.threads {
        let mut frame = |method: u32| {
            *frame_of.entry(method).or_insert_with(|| {
                frames.push(Frame {
                    name: tree.label(method).to_string(),
                    file: None,
                });
                frames.len() - 1
            })
        };
        let mut events = Vec::new();
        // Open calls: (depth, frame, exit ns).
        let mut open: Vec<(u32, usize, u64)> = Vec::new();
        let mut last = t.first_ns;
        let close = |open: &mut Vec<(u32, usize, u64)>, events: &mut Vec<Event>, last: &mut u64| {
            let (_, frame, exit) = open.pop().expect("called with an open call");
            *last = (*last).max(exit);
            events.push(Event {
                kind: "C",
                frame,
                at: *last,
            });
        };
        for n in &t.nodes {
            while open.last().is_some_and(|o| o.0 >= n.depth) {
                close(&mut open, &mut events, &mut last);
            }
            let f = frame(n.method);
            last = last.max(n.enter_ns);
            events.push(Event {
                kind: "O",
                frame: f,
                at: last,
            });
            open.push((n.depth, f, n.exit_ns));
        }
        while !open.is_empty() {
            close(&mut open, &mut events, &mut last);
        }
        if events.is_empty() {
            continue;
        }
        profiles.push(Profile::Evented {
            name: format!("{} (trace)", t.name),
            unit: "nanoseconds",
            start_value: t.first_ns.min(events[0].at),
            end_value: last.max(t.last_ns),
            events,
        });
    }
    File {
        schema: SCHEMA,
        shared: Shared { frames },
        profiles,
        name: name.to_string(),
        active_profile_index: 0,
        exporter: exporter(),
    }
}

pub fn write(file: &File, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(&mut *out, file)?;
    out.write_all(b"\n")
}
