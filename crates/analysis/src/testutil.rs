//! Builds real recordings with `ChunkWriter` for the unit tests.

use jscope_format::thread_state::{
    ALIVE, BLOCKED_ON_MONITOR_ENTER, RUNNABLE, SLEEPING, WAITING, WAITING_WITH_TIMEOUT,
};
use jscope_format::*;

pub const RUNNING: u32 = ALIVE | RUNNABLE;
pub const BLOCKED: u32 = ALIVE | BLOCKED_ON_MONITOR_ENTER;
pub const ASLEEP: u32 = ALIVE | WAITING | WAITING_WITH_TIMEOUT | SLEEPING;

/// 1 tick = 1 µs, so tests also exercise the tick conversion.
pub const TICKS_PER_SECOND: u64 = 1_000_000;
pub const START: u64 = 5_000_000;

/// Interns strings, classes and methods by name and writes them into one chunk
/// ahead of the events, as the agent would.
pub struct RecordingBuilder {
    chunk: ChunkWriter,
    dict: Dictionary,
    stacks: u32,
    named_methods: u32,
    chunks: Vec<Vec<u8>>,
}

/// Methods of no library are numbered from here.
const NAMED_METHODS: u32 = 100_000;

impl RecordingBuilder {
    pub fn new() -> Self {
        RecordingBuilder {
            chunk: ChunkWriter::new(),
            dict: Dictionary::new(),
            stacks: 0,
            named_methods: 0,
            chunks: vec![],
        }
    }

    /// `label` is `pkg.Class.method`.
    pub fn method(&mut self, label: &str) -> MethodId {
        self.dict
            .method_label_with(&mut self.chunk, label, |class| {
                let simple = class.rsplit('.').next().unwrap_or(class);
                Some(format!(
                    "{}.java",
                    simple.split('$').next().unwrap_or(simple)
                ))
            })
    }

    /// Frames top first as (label, line).
    pub fn stack(&mut self, frames: &[(&str, u32)]) -> StackId {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|&(label, line)| Frame {
                method: self.method(label),
                bci: 3,
                line,
                kind: FrameKind::Interpreted,
            })
            .collect();
        self.stacks += 1;
        self.chunk.stack(StackId(self.stacks), &frames);
        StackId(self.stacks)
    }

    /// Frames top first as (label, line, kind); a label in brackets, or a
    /// frame of kind stub or class, is named as the agent names such frames
    /// (`[break_compiled]`, `itable stub`, `com.acme.Circle`): a method of no
    /// library.
    pub fn stack_of(&mut self, frames: &[(&str, u32, FrameKind)]) -> StackId {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|&(label, line, kind)| {
                let named =
                    label.starts_with('[') || matches!(kind, FrameKind::Stub | FrameKind::Class);
                Frame {
                    method: match named {
                        true => self.named(label),
                        false => self.method(label),
                    },
                    bci: if named { -1 } else { 3 },
                    line,
                    kind,
                }
            })
            .collect();
        self.stacks += 1;
        self.chunk.stack(StackId(self.stacks), &frames);
        StackId(self.stacks)
    }

    /// A method named `name` of the class with the empty name, native with an
    /// empty signature: code of no library. Numbered apart from the
    /// dictionary's methods.
    fn named(&mut self, name: &str) -> MethodId {
        let class = self.dict.class(&mut self.chunk, "", None);
        let name = self.dict.string(&mut self.chunk, name);
        self.named_methods += 1;
        let id = MethodId(NAMED_METHODS + self.named_methods);
        self.chunk.method(&MethodDef {
            id,
            class,
            name,
            signature: StringId::NONE,
            modifiers: 0x100,
        });
        id
    }

    pub fn thread(&mut self, id: u32, name: &str, group: &str, start_order: u32) {
        self.chunk.thread(&ThreadDef {
            id: ThreadId(id),
            java_id: id as i64 + 100,
            os_tid: 4000 + id,
            name: name.to_string(),
            group: group.to_string(),
            parent: if group == "system" {
                String::new()
            } else {
                "system".to_string()
            },
            start_order,
            daemon: group == "system",
        });
    }

    /// `at_ms` since the start.
    pub fn sample(&mut self, mode: SampleMode, thread: u32, at_ms: u64, stack: u32, state: u32) {
        self.sample_on(mode, (thread, 0), at_ms, stack, state);
    }

    /// A sample of virtual thread `thread` taken on `carrier` (0: a platform thread).
    pub fn sample_on(
        &mut self,
        mode: SampleMode,
        (thread, carrier): (u32, u32),
        at_ms: u64,
        stack: u32,
        state: u32,
    ) {
        let ticks = START + at_ms * TICKS_PER_SECOND / 1000;
        self.chunk.sample(&Sample {
            thread: ThreadId(thread),
            carrier: ThreadId(carrier),
            ticks,
            stack: StackId(stack),
            mode,
            weight_ns: 10_000_000,
            state,
        });
    }

    pub fn snapshot(&mut self, at_ms: u64, interval_ms: u64, threads: &[(u32, u32, u32)]) {
        let threads = threads
            .iter()
            .map(|&(thread, state, stack)| SnapshotThread {
                thread: ThreadId(thread),
                carrier: Default::default(),
                state,
                stack: StackId(stack),
            })
            .collect();
        self.chunk.snapshot(&Snapshot {
            ticks: START + at_ms * TICKS_PER_SECOND / 1000,
            interval_ns: interval_ms * 1_000_000,
            threads,
        });
    }

    pub fn counters(&mut self, values: &[(&str, u64)]) {
        self.chunk.counters(START, values);
    }

    /// Closes the current chunk; later records go into a new one.
    pub fn cut(&mut self) {
        if !self.chunk.is_empty() {
            self.chunks.push(self.chunk.finish());
        }
    }

    pub fn bytes(mut self, end_ms: Option<u64>) -> Vec<u8> {
        if let Some(ms) = end_ms {
            self.chunk.end(START + ms * TICKS_PER_SECOND / 1000);
        }
        self.cut();
        let mut out = encode_file_start(&header());
        for c in &self.chunks {
            out.extend_from_slice(c);
        }
        out
    }

    pub fn build(self, end_ms: Option<u64>) -> Recording {
        Recording::from_bytes(&self.bytes(end_ms)).expect("a readable recording")
    }
}

pub fn header() -> Header {
    Header {
        agent_version: "0.1.0".into(),
        pid: 4242,
        host: "testhost".into(),
        command_line: "java Main".into(),
        vm_name: "OpenJDK 64-Bit Server VM".into(),
        vm_vendor: "Eclipse Adoptium".into(),
        vm_version: "17.0.9+9".into(),
        java_version: "17.0.9".into(),
        os: "Linux".into(),
        arch: "amd64".into(),
        start_wall_ns: 1_700_000_000_000_000_000,
        start_ticks: START,
        ticks_per_second: TICKS_PER_SECOND,
        modes: "cpu+wall+snapshot".into(),
        interval_ns: 10_000_000,
        max_depth: 512,
        extra: vec![("note".into(), "test".into())],
    }
}

/// A file whose ticks are nanoseconds, holding what `w` wrote.
pub fn ns_file(w: &mut ChunkWriter) -> Vec<u8> {
    let header = Header {
        ticks_per_second: 1_000_000_000,
        ..Default::default()
    };
    let mut bytes = encode_file_start(&header);
    bytes.extend(w.finish());
    bytes
}

/// Declares thread `id` in the "main" group with `id` as its Java id.
pub fn main_thread(w: &mut ChunkWriter, id: u32, name: &str) {
    w.thread(&ThreadDef {
        id: ThreadId(id),
        java_id: id.into(),
        name: name.into(),
        group: "main".into(),
        ..Default::default()
    });
}

/// A trace event without CPU time or untraced calls.
pub fn trace_event(kind: TraceKind, method: MethodId, ticks: u64) -> TraceEvent {
    TraceEvent {
        kind,
        method,
        ticks,
        untraced: 0,
        cpu_ns: 0,
    }
}

/// Writes thread `id`'s `events` as one batch without CPU times.
pub fn trace_batch(w: &mut ChunkWriter, id: u32, events: Vec<TraceEvent>) {
    w.trace(&TraceBatch {
        thread: ThreadId(id),
        has_cpu: false,
        events,
    });
}
