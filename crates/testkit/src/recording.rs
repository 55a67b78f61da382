//! Recordings built in tests the way the agent writes them: a [`RecordingBuilder`]
//! interns names (strings, classes, methods, native symbols, stacks) into the
//! chunk being written ahead of the records that use them, cuts chunks where the
//! test says, and gives the file's bytes, its chunks one by one (to stream to a
//! collector) or the recording read back.

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

/// Interns strings, classes, methods and stacks by name and writes them into the
/// current chunk ahead of the records, as the agent would.
pub struct RecordingBuilder {
    header: Header,
    chunk: ChunkWriter,
    dict: Interner,
    chunks: Vec<Vec<u8>>,
}

impl Default for RecordingBuilder {
    fn default() -> Self {
        RecordingBuilder::new()
    }
}

impl RecordingBuilder {
    /// A recording with the test [`header`] (pid 4242, 1 tick = 1 µs).
    pub fn new() -> Self {
        RecordingBuilder::with_header(header())
    }

    /// A recording with `header`.
    pub fn with_header(header: Header) -> Self {
        RecordingBuilder {
            header,
            chunk: ChunkWriter::new(),
            dict: Interner::new(Recording::default()),
            chunks: vec![],
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header, to change before the bytes are made (it is written first).
    pub fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    /// The ticks of `at_ms` after the start, on this recording's clock.
    pub fn ticks(&self, at_ms: u64) -> u64 {
        let tps = match self.header.ticks_per_second {
            0 => 1_000_000_000,
            t => t,
        };
        self.header.start_ticks + at_ms * tps / 1000
    }

    /// Writes what the dictionary gained into the current chunk, ahead of the
    /// records that use it.
    fn declared<T>(&mut self, id: T) -> T {
        for r in self.dict.take_added() {
            self.chunk.dictionary_entry(&r);
        }
        id
    }

    pub fn string(&mut self, s: &str) -> StringId {
        let id = self.dict.string(s);
        self.declared(id)
    }

    /// A class by name, its source file `Simple.java`.
    pub fn class(&mut self, name: &str) -> ClassId {
        let simple = name.rsplit('.').next().unwrap_or(name);
        let file = format!("{}.java", simple.split('$').next().unwrap_or(simple));
        let id = self.dict.class(name, &file);
        self.declared(id)
    }

    /// The method `label` names, `pkg.Class.method` (public, `()V`).
    pub fn method(&mut self, label: &str) -> MethodId {
        let (class, name) = label.rsplit_once('.').unwrap_or(("", label));
        let class = if class.is_empty() {
            ClassId(0)
        } else {
            self.class(class)
        };
        let id = self.dict.method(class, name, "()V", 1);
        self.declared(id)
    }

    /// A class by name with its source file as given (empty: none).
    pub fn class_in_file(&mut self, name: &str, source_file: &str) -> ClassId {
        let id = self.dict.class(name, source_file);
        self.declared(id)
    }

    /// A method of `class` by name, JVM signature and modifiers.
    pub fn method_of(
        &mut self,
        class: ClassId,
        name: &str,
        signature: &str,
        modifiers: u32,
    ) -> MethodId {
        let id = self.dict.method(class, name, signature, modifiers);
        self.declared(id)
    }

    /// The method `label` names (`pkg.Class.method`) with its JVM `signature` and
    /// `modifiers` (0x100: a Java native method).
    pub fn method_with(&mut self, label: &str, signature: &str, modifiers: u32) -> MethodId {
        let (class, name) = label.rsplit_once('.').unwrap_or(("", label));
        let class = if class.is_empty() {
            ClassId(0)
        } else {
            self.class(class)
        };
        let id = self.dict.method(class, name, signature, modifiers);
        self.declared(id)
    }

    /// Native code: `symbol` of `library` (`libc.so.6`, `[kernel]`), as the agent
    /// names native frames (docs/FORMAT.md).
    pub fn native(&mut self, library: &str, symbol: &str) -> MethodId {
        let class = self.dict.class(library, "");
        let id = self.dict.method(class, symbol, "", 0x100);
        self.declared(id)
    }

    /// A stack of `frames`, top first; the same frames are one stack.
    pub fn stack_of(&mut self, frames: &[Frame]) -> StackId {
        let id = self.dict.stack(frames.to_vec());
        self.declared(id)
    }

    /// Declares `def`.
    pub fn thread_def(&mut self, def: ThreadDef) -> ThreadId {
        self.chunk.thread(&def);
        def.id
    }

    /// Thread `id` called `name` in the `main` group, with `id` as its Java id.
    pub fn thread_named(&mut self, id: u32, name: &str) -> ThreadId {
        self.thread_def(ThreadDef {
            id: ThreadId(id),
            java_id: id.into(),
            name: name.into(),
            group: "main".into(),
            start_order: id,
            ..ThreadDef::default()
        })
    }

    /// A user event's name (`jscope.Events.register`).
    pub fn user_event(&mut self, id: u32, name: &str) {
        let name = self.string(name);
        self.chunk.user_event_def(&UserEventDef { id, name });
    }

    pub fn event(&mut self, e: &JvmEvent) {
        self.chunk.event(e);
    }

    pub fn trace(&mut self, b: &TraceBatch) {
        self.chunk.trace(b);
    }

    pub fn call_aggregate(&mut self, a: &CallAggregate) {
        self.chunk.call_aggregate(a);
    }

    pub fn remote(&mut self, c: &RemoteCall) {
        self.chunk.remote(c);
    }

    pub fn raw_sample(&mut self, s: &Sample) {
        self.chunk.sample(s);
    }

    pub fn raw_snapshot(&mut self, s: &Snapshot) {
        self.chunk.snapshot(s);
    }

    /// The writer of the current chunk, for records the builder has no call for.
    pub fn writer(&mut self) -> &mut ChunkWriter {
        &mut self.chunk
    }

    /// The clean end at `ticks`.
    pub fn end_at(&mut self, ticks: u64) {
        self.chunk.end(ticks);
    }

    /// Java frames top first as (label, line), interpreted at bci 3.
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
        self.stack_of(&frames)
    }

    /// Frames top first as (label, line, kind). A label in brackets, or a frame
    /// of kind stub or class, is named as the agent names such frames
    /// (`[break_compiled]`, `itable stub`, `com.acme.Circle`): code of no library
    /// (a method of the class with the empty name, native, without signature) at
    /// bci -1; any other label is the Java method it names, at bci 3.
    pub fn stack_with_kinds(&mut self, frames: &[(&str, u32, FrameKind)]) -> StackId {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|&(label, line, kind)| {
                let named =
                    label.starts_with('[') || matches!(kind, FrameKind::Stub | FrameKind::Class);
                Frame {
                    method: match named {
                        true => self.native("", label),
                        false => self.method(label),
                    },
                    bci: if named { -1 } else { 3 },
                    line,
                    kind,
                }
            })
            .collect();
        self.stack_of(&frames)
    }

    /// Thread `id` with its group (`system` ones are daemons without a parent).
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
        let ticks = self.ticks(at_ms);
        self.chunk.sample(&Sample {
            request: 0,
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
        let ticks = self.ticks(at_ms);
        self.chunk.snapshot(&Snapshot {
            ticks,
            interval_ns: interval_ms * 1_000_000,
            threads,
        });
    }

    /// Counter values at the start.
    pub fn counters(&mut self, values: &[(&str, u64)]) {
        let at = self.header.start_ticks;
        self.chunk.counters(at, values);
    }

    /// Counter values at `ticks`.
    pub fn counters_at(&mut self, ticks: u64, values: &[(&str, u64)]) {
        self.chunk.counters(ticks, values);
    }

    /// The magic and header chunk a file or a stream starts with.
    pub fn file_start(&self) -> Vec<u8> {
        encode_file_start(&self.header)
    }

    /// Finishes the current chunk and hands it over, to stream it as the agent
    /// would; what it declared stays declared.
    pub fn take_chunk(&mut self) -> Vec<u8> {
        self.chunk.finish()
    }

    /// Closes the current chunk; later records go into a new one.
    pub fn cut(&mut self) {
        if !self.chunk.is_empty() {
            self.chunks.push(self.chunk.finish());
        }
    }

    /// The file's start (magic and header chunk) and its data chunks, ended
    /// cleanly `end_ms` after the start when given.
    pub fn chunks(mut self, end_ms: Option<u64>) -> (Vec<u8>, Vec<Vec<u8>>) {
        if let Some(ms) = end_ms {
            let at = self.ticks(ms);
            self.chunk.end(at);
        }
        self.cut();
        (encode_file_start(&self.header), self.chunks)
    }

    /// The recording file's bytes.
    pub fn bytes(self, end_ms: Option<u64>) -> Vec<u8> {
        let (mut out, chunks) = self.chunks(end_ms);
        for c in &chunks {
            out.extend_from_slice(c);
        }
        out
    }

    pub fn build(self, end_ms: Option<u64>) -> Recording {
        Recording::from_bytes(&self.bytes(end_ms)).expect("a readable recording")
    }
}

/// The test header: pid 4242 on `testhost`, JDK 17, started at epoch
/// 1_700_000_000 s, 1 tick = 1 µs from [`START`].
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
