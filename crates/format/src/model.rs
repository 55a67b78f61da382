//! The values a recording holds: header, dictionary entries and events.

use crate::ids::{ClassId, MethodId, StackId, StringId, ThreadId};

/// Who recorded, where, and how to turn ticks into time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub agent_version: String,
    pub pid: u32,
    pub host: String,
    pub command_line: String,
    pub vm_name: String,
    pub vm_vendor: String,
    pub vm_version: String,
    pub java_version: String,
    pub os: String,
    pub arch: String,
    /// Unix epoch nanoseconds at `start_ticks`: the recording's wall-clock anchor.
    pub start_wall_ns: u64,
    /// Monotonic clock ticks at the start of the recording.
    pub start_ticks: u64,
    /// Ticks per second; 1_000_000_000 when ticks are CLOCK_MONOTONIC nanoseconds.
    pub ticks_per_second: u64,
    /// Sampling modes joined by `+`, e.g. `cpu+snapshot`.
    pub modes: String,
    pub interval_ns: u64,
    pub max_depth: u32,
    /// Further key/values; readers keep keys they do not know here.
    pub extra: Vec<(String, String)>,
}

impl Header {
    pub fn extra(&self, key: &str) -> Option<&str> {
        self.extra
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// How a frame was executing when it was sampled, as far as the walker could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum FrameKind {
    /// A Java frame whose compilation tier is not known.
    #[default]
    Java = 0,
    Interpreted = 1,
    Compiled = 2,
    Inlined = 3,
    Native = 4,
    /// The method could not be resolved (e.g. its class was unloaded).
    Unknown = 5,
    /// Kernel code (a system call, a page fault, an interrupt), from perf_events' kernel
    /// call chain. Its method's class is `[kernel]`.
    Kernel = 6,
    /// Native code inside the JVM itself (`libjvm.so`: the interpreter's runtime, the
    /// compilers, the garbage collector), async-profiler's "C++" frames.
    Vm = 7,
    /// A Java method compiled by C1 (tiers 1 to 3); [`FrameKind::Compiled`] is C2's
    /// (or a compiled frame whose tier is not known).
    C1 = 8,
    /// Code the JVM generated that is not a Java method: a stub (arraycopy, an
    /// intrinsic, a vtable or itable stub), an adapter or a runtime stub. Its
    /// method's class is the empty library, its name the stub's.
    Stub = 9,
    /// A class shown as a frame: the receiver's class above a vtable or itable stub.
    /// Its method's class is the empty library, its name the class's.
    Class = 10,
}

impl FrameKind {
    pub fn from_u8(v: u8) -> FrameKind {
        match v {
            1 => FrameKind::Interpreted,
            2 => FrameKind::Compiled,
            3 => FrameKind::Inlined,
            4 => FrameKind::Native,
            6 => FrameKind::Kernel,
            7 => FrameKind::Vm,
            8 => FrameKind::C1,
            9 => FrameKind::Stub,
            10 => FrameKind::Class,
            0 => FrameKind::Java,
            _ => FrameKind::Unknown,
        }
    }

    /// Every kind, in byte order.
    pub const ALL: [FrameKind; 11] = [
        FrameKind::Java,
        FrameKind::Interpreted,
        FrameKind::Compiled,
        FrameKind::Inlined,
        FrameKind::Native,
        FrameKind::Unknown,
        FrameKind::Kernel,
        FrameKind::Vm,
        FrameKind::C1,
        FrameKind::Stub,
        FrameKind::Class,
    ];

    /// The kind's name as `jscope info` and the flame graph's legend spell it.
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::Java => "java",
            FrameKind::Interpreted => "interpreted",
            FrameKind::Compiled => "compiled",
            FrameKind::Inlined => "inlined",
            FrameKind::Native => "native",
            FrameKind::Unknown => "unknown",
            FrameKind::Kernel => "kernel",
            FrameKind::Vm => "vm",
            FrameKind::C1 => "c1",
            FrameKind::Stub => "stub",
            FrameKind::Class => "class",
        }
    }

    /// Whether the frame is Java code (any tier), as opposed to native, VM or kernel code.
    pub fn is_java(self) -> bool {
        matches!(
            self,
            FrameKind::Java
                | FrameKind::Interpreted
                | FrameKind::Compiled
                | FrameKind::C1
                | FrameKind::Inlined
        )
    }

    /// Whether the frame is machine code outside Java: a native library, the JVM or the
    /// kernel.
    pub fn is_native(self) -> bool {
        matches!(self, FrameKind::Native | FrameKind::Kernel | FrameKind::Vm)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Frame {
    pub method: MethodId,
    /// Bytecode index; -1 when unknown or native.
    pub bci: i32,
    /// Source line; 0 when unknown.
    pub line: u32,
    pub kind: FrameKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassDef {
    pub id: ClassId,
    /// String id of the class name in Java notation, e.g. `java.lang.String`.
    pub name: StringId,
    /// String id of the source file name; 0 when absent.
    pub source_file: StringId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MethodDef {
    pub id: MethodId,
    pub class: ClassId,
    pub name: StringId,
    pub signature: StringId,
    pub modifiers: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadDef {
    pub id: ThreadId,
    pub java_id: i64,
    /// Kernel thread id; 0 when unknown.
    pub os_tid: u32,
    pub name: String,
    pub group: String,
    /// Name of the thread group's parent group, as xdProf's JVMPI client reported it.
    pub parent: String,
    /// 1 for the first thread the agent saw start, 2 for the next, and so on.
    pub start_order: u32,
    pub daemon: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SampleMode {
    Cpu = 1,
    Wall = 2,
}

impl SampleMode {
    pub fn from_u8(v: u8) -> Option<SampleMode> {
        match v {
            1 => Some(SampleMode::Cpu),
            2 => Some(SampleMode::Wall),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SampleMode::Cpu => "cpu",
            SampleMode::Wall => "wall",
        }
    }
}

/// One signal-driven stack sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The sampled thread: a virtual thread when one was mounted on its carrier.
    pub thread: ThreadId,
    /// The carrier (platform) thread a virtual `thread` ran on; 0 when `thread`
    /// is a platform thread.
    pub carrier: ThreadId,
    pub ticks: u64,
    pub stack: StackId,
    pub mode: SampleMode,
    /// The time this sample stands for (normally the interval).
    pub weight_ns: u64,
    /// JVMTI thread state bits; 0 when unknown.
    pub state: u32,
    /// The request the thread was serving ([`crate::Request::id`]), 0 for none.
    pub request: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotThread {
    /// A virtual thread when one was mounted on its carrier.
    pub thread: ThreadId,
    /// The carrier a virtual `thread` ran on; 0 for a platform thread.
    pub carrier: ThreadId,
    pub state: u32,
    pub stack: StackId,
}

/// All Java threads at one moment (xdProf).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub ticks: u64,
    /// Achieved time since the previous snapshot; 0 for the first.
    pub interval_ns: u64,
    pub threads: Vec<SnapshotThread>,
}

/// What a method probe saw (exact tracing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TraceKind {
    Enter = 0,
    Exit = 1,
    /// The method left by throwing.
    Throw = 2,
}

impl TraceKind {
    pub fn from_u8(v: u8) -> Option<TraceKind> {
        match v {
            0 => Some(TraceKind::Enter),
            1 => Some(TraceKind::Exit),
            2 => Some(TraceKind::Throw),
            _ => None,
        }
    }
}

/// One method entry or exit on one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    pub kind: TraceKind,
    pub method: MethodId,
    pub ticks: u64,
    /// On entries: calls of untraced methods since the previous traced event on this
    /// thread (JPMT), so analysis can correct for perturbation. 0 on exits.
    pub untraced: u32,
    /// Thread CPU time in ns at this event, when the batch carries CPU time; else 0.
    pub cpu_ns: u64,
}

/// Consecutive trace events of one thread, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceBatch {
    pub thread: ThreadId,
    pub has_cpu: bool,
    pub events: Vec<TraceEvent>,
}

/// Caller→callee totals of one thread over an interval (aggregate tracing mode, JX).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallPair {
    /// 0 when the callee was called from untraced code.
    pub caller: MethodId,
    pub callee: MethodId,
    pub calls: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallAggregate {
    pub thread: ThreadId,
    /// End of the interval the totals cover; totals of successive records add up.
    pub ticks: u64,
    pub pairs: Vec<CallPair>,
}

/// Trace events by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TraceCounts {
    /// TraceBatch records.
    pub batches: u64,
    pub enters: u64,
    pub exits: u64,
    pub throws: u64,
}

impl TraceCounts {
    pub fn events(&self) -> u64 {
        self.enters + self.exits + self.throws
    }

    /// Counts one batch's events.
    pub fn add_batch(&mut self, b: &TraceBatch) {
        self.batches += 1;
        let mut k = [0u64; 3];
        for e in &b.events {
            k[e.kind as usize] += 1;
        }
        self.enters += k[TraceKind::Enter as usize];
        self.exits += k[TraceKind::Exit as usize];
        self.throws += k[TraceKind::Throw as usize];
    }

    /// Counts one batch of (enters, exits, throws).
    pub(crate) fn add_kinds(&mut self, [enters, exits, throws]: [u64; 3]) {
        self.batches += 1;
        self.enters += enters;
        self.exits += exits;
        self.throws += throws;
    }

    pub fn add(&mut self, o: &TraceCounts) {
        self.batches += o.batches;
        self.enters += o.enters;
        self.exits += o.exits;
        self.throws += o.throws;
    }
}
