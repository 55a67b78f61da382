//! Where engines drain to, on the writer thread ([`Sink`]): the chunk being
//! built, the dictionaries, and the mapping from producers' threads to the
//! recording's threads. The writer owns it; engines only see it in `drain`.

use std::collections::HashMap;
use std::sync::Arc;

use jscope_format::{ChunkWriter, Frame, FrameKind, MethodId, ThreadDef, ThreadId};

use crate::frames::{
    untyped, CallFrame, JavaType, BETWEEN_PC, BREAK, KERNEL_PC, NATIVE_PC, RECEIVER, SEGMENT_END,
    STUB_PC,
};
use crate::java_threads::{EnvMapper, ThreadKey};
use crate::jvm::{Jni, Jvmti};
use crate::native::names::{jni_matches, NativeNames, Preload};
use crate::symbols::Symbols;
use crate::threads::{kernel_thread_name, ThreadEntry, ThreadTable};

/// A chunk is written when it holds this much (or when the writer's flush
/// interval has passed).
pub(crate) const FLUSH_BYTES: usize = 1 << 20;

/// Where engines drain to, on the writer thread: the chunk being built, the
/// dictionaries, and the mapping from producers' threads to recording threads
/// (whose definitions it writes as they are first used or change).
pub(crate) struct Sink {
    pub jvmti: Jvmti,
    pub jni: Jni,
    pub chunk: ChunkWriter,
    pub symbols: Symbols,
    pub table: Arc<ThreadTable>,
    env_mapper: Option<EnvMapper>,
    /// JNIEnvs that matched no live thread (it ended before the writer looked).
    unmatched_envs: HashMap<usize, u32>,
    /// Revision of each thread definition already written.
    emitted: HashMap<u32, u32>,
    native: NativeNames,
    /// The method id and kind of each native (false) or kernel (true) address
    /// named so far; addresses whose library was not found are left out.
    native_frames: rustc_hash::FxHashMap<(usize, bool), (u32, FrameKind)>,
    /// The stack id of each walked stack (its raw frames) whose every frame
    /// was named for good: a stack seen again costs one lookup, not one per
    /// frame.
    walked_stacks: rustc_hash::FxHashMap<Box<[CallFrame]>, u32>,
    /// Frames held by `walked_stacks`, which starts over past
    /// [`WALKED_FRAMES`].
    walked_frames: usize,
    /// The stack id of each reason given to [`Sink::unknown_stack`].
    unknown_stacks: HashMap<&'static str, u32>,
    /// The recording's last drain: whatever is buffered goes now.
    pub last_drain: bool,
    /// Describes a virtual thread at its first sighting (the virtual-thread
    /// tracker's names, given by the writer so that the sink sits below it).
    describe_virtual: DescribeVirtual,
}

/// Frames the cache of walked stacks holds at most (16 bytes each).
const WALKED_FRAMES: usize = 1 << 21;

/// A virtual thread's description from its Java id and a way to name its
/// carrier (a Linux thread id).
pub(crate) type DescribeVirtual = fn(i64, &dyn Fn(u32) -> Option<String>) -> crate::jvm::ThreadInfo;

impl Sink {
    pub fn new(
        jvmti: Jvmti,
        jni: Jni,
        table: Arc<ThreadTable>,
        env_mapper: Option<EnvMapper>,
        describe_virtual: DescribeVirtual,
    ) -> Sink {
        Sink {
            describe_virtual,
            jvmti,
            jni,
            chunk: ChunkWriter::new(),
            symbols: Symbols::default(),
            table,
            env_mapper,
            unmatched_envs: HashMap::new(),
            emitted: HashMap::new(),
            native: NativeNames::default(),
            native_frames: Default::default(),
            walked_stacks: Default::default(),
            walked_frames: 0,
            unknown_stacks: HashMap::new(),
            last_drain: false,
        }
    }

    /// The recording threads whose definitions were written.
    pub fn emitted(&self) -> impl Iterator<Item = u32> + '_ {
        self.emitted.keys().copied()
    }

    /// True when the chunk should be written before more is added: an engine
    /// far behind returns [`Drained::More`] then rather than make one huge chunk.
    pub fn chunk_full(&self) -> bool {
        self.chunk.raw_len() >= FLUSH_BYTES
    }

    /// The stack id of `frames` (jmethodID, bci or line), top first; methods are
    /// named through JVMTI.
    pub fn stack(&mut self, frames: impl Iterator<Item = (usize, i32)>) -> u32 {
        let (jvmti, jni) = (self.jvmti, self.jni);
        let mut resolve =
            move |key: usize| jvmti.method_names(jni, key as crate::sys::jmethodID).ok();
        self.symbols.stack(&mut self.chunk, frames, &mut resolve)
    }

    /// Whether native frames can be named without the writer reading symbol
    /// tables first (see [`Preload`]); always true on the last drain.
    pub fn native_names_ready(&mut self, preload: Option<&Preload>) -> bool {
        self.native.ready(preload, self.last_drain)
    }

    /// The process's mappings changed (a library was loaded since the last
    /// drain): native frames are named from them at once.
    pub fn native_maps_changed(&mut self) {
        self.native.maps_changed();
    }

    /// The stack id of a mixed stack, top first: native and kernel program
    /// counters (lineno NATIVE_PC, KERNEL_PC) named from the libraries' symbols,
    /// then segments of native frames found between Java frames (BETWEEN_PC,
    /// each closed by SEGMENT_END), then Java frames (jmethodID, bci) named
    /// through JVMTI. Each segment goes right above the Java native method
    /// whose JNI function is its bottom `Java_` frame; a segment with none, or
    /// whose method is not among the Java frames below the previous one
    /// placed, is dropped.
    pub fn mixed_stack(&mut self, frames: impl Iterator<Item = (usize, i32)>) -> u32 {
        let (jvmti, jni) = (self.jvmti, self.jni);
        let mut resolve =
            move |key: usize| jvmti.method_names(jni, key as crate::sys::jmethodID).ok();
        let mut top = Vec::new();
        let mut segments: Vec<Vec<Frame>> = Vec::new();
        let mut segment = Vec::new();
        let mut java = Vec::new();
        for (key, lineno) in frames {
            match lineno {
                NATIVE_PC | KERNEL_PC => top.push(self.native_frame(key, lineno == KERNEL_PC).0),
                BETWEEN_PC => segment.push(self.native_frame(key, false).0),
                SEGMENT_END => segments.push(std::mem::take(&mut segment)),
                _ => java.push(
                    self.symbols
                        .frame(&mut self.chunk, key, lineno, &mut resolve),
                ),
            }
        }
        // (index of the Java frame, the segment above it), in stack order.
        let mut placed: Vec<(usize, Vec<Frame>)> = Vec::new();
        let mut below = 0;
        for mut segment in segments {
            let name = |f: &Frame| self.symbols.method_name(f.method.0).map(|(_, n)| n);
            let Some(bottom) = segment
                .iter()
                .rposition(|f| name(f).is_some_and(|n| n.starts_with("Java_")))
            else {
                continue;
            };
            let symbol = name(&segment[bottom]).unwrap_or_default();
            let owner = java[below..].iter().position(|f: &Frame| {
                f.kind == FrameKind::Native
                    && self
                        .symbols
                        .method_name(f.method.0)
                        .is_some_and(|(class, method)| jni_matches(symbol, class, method))
            });
            if let Some(i) = owner {
                segment.truncate(bottom + 1);
                placed.push((below + i, segment));
                below += i + 1;
            }
        }
        let mut stack = top;
        let mut placed = placed.into_iter().peekable();
        for (i, frame) in java.into_iter().enumerate() {
            if let Some((_, segment)) = placed.next_if(|(at, _)| *at == i) {
                stack.extend(segment);
            }
            stack.push(frame);
        }
        self.symbols.stack_of(&mut self.chunk, stack)
    }

    /// The stack id of the frames a VM structure walk wrote, in stack order:
    /// typed Java frames, native and kernel frames, stubs, receiver classes
    /// and the marker of a walk that stopped early; `name` names the stub,
    /// receiver and marker frames.
    pub fn walked_stack(
        &mut self,
        frames: &[CallFrame],
        name: &mut dyn FnMut(i32, usize) -> String,
    ) -> u32 {
        // Looked up by the frames as they are: a stack seen before allocates nothing.
        if let Some(&id) = self.walked_stacks.get(frames) {
            return id;
        }
        let (jvmti, jni) = (self.jvmti, self.jni);
        let mut resolve =
            move |key: usize| jvmti.method_names(jni, key as crate::sys::jmethodID).ok();
        let mut stack = Vec::with_capacity(frames.len());
        // Whether every frame is named for good (a library not found yet, or
        // a method not resolved, may be named later).
        let mut settled = true;
        for f in frames {
            let value = f.method as usize;
            let frame = match f.lineno {
                NATIVE_PC | KERNEL_PC => {
                    let (frame, found) = self.native_frame(value, f.lineno == KERNEL_PC);
                    settled &= found;
                    frame
                }
                STUB_PC => self.named_frame(&name(f.lineno, value), FrameKind::Stub),
                RECEIVER => self.named_frame(&name(f.lineno, value), FrameKind::Class),
                BREAK => self.named_frame(&name(f.lineno, value), FrameKind::Unknown),
                lineno => {
                    let (kind, bci) = untyped(lineno).map_or((None, lineno), |(k, b)| (Some(k), b));
                    let mut frame = self
                        .symbols
                        .frame(&mut self.chunk, value, bci, &mut resolve);
                    settled &= frame.method.0 != 0;
                    if frame.kind == FrameKind::Java {
                        frame.kind = kind.map_or(FrameKind::Java, frame_kind);
                    }
                    frame
                }
            };
            stack.push(frame);
        }
        let id = self.symbols.stack_of(&mut self.chunk, stack);
        if settled {
            if self.walked_frames + frames.len() > WALKED_FRAMES {
                self.walked_stacks.clear();
                self.walked_frames = 0;
            }
            self.walked_frames += frames.len();
            self.walked_stacks.insert(frames.into(), id);
        }
        id
    }

    /// A frame named `name` of no library (a stub, a class, a marker).
    fn named_frame(&mut self, name: &str, kind: FrameKind) -> Frame {
        let lib: std::sync::Arc<str> = std::sync::Arc::from("");
        Frame {
            method: MethodId(self.symbols.native_method(&mut self.chunk, &lib, name)),
            bci: -1,
            line: 0,
            kind,
        }
    }

    /// The frame of native (or kernel) program counter `pc`, named from the
    /// libraries' (or the kernel's) symbols, and whether its library was found
    /// (if not, a later frame at the same address may be named better).
    fn native_frame(&mut self, pc: usize, kernel: bool) -> (Frame, bool) {
        let address = (pc, kernel);
        let (id, kind, found) = match self.native_frames.get(&address) {
            Some(&(id, kind)) => (id, kind, true),
            None => {
                let (n, found) = self.native.name(pc, kernel);
                let id = self.symbols.native_method(&mut self.chunk, &n.lib, &n.name);
                if found {
                    self.native_frames.insert(address, (id, n.kind));
                }
                (id, n.kind, found)
            }
        };
        let frame = Frame {
            method: MethodId(id),
            bci: -1,
            line: 0,
            kind,
        };
        (frame, found)
    }

    /// A one-frame stack `[reason]` (as async-profiler names such time), for CPU
    /// time whose stack could not be walked: a native-code frame of no library,
    /// so every reader labels it by its name alone.
    pub fn unknown_stack(&mut self, reason: &'static str) -> u32 {
        if let Some(&id) = self.unknown_stacks.get(reason) {
            return id;
        }
        let lib: std::sync::Arc<str> = std::sync::Arc::from("");
        let id = self
            .symbols
            .native_method(&mut self.chunk, &lib, &format!("[{reason}]"));
        let frame = Frame {
            method: MethodId(id),
            bci: -1,
            line: 0,
            kind: FrameKind::Unknown,
        };
        let id = self.symbols.stack_of(&mut self.chunk, vec![frame]);
        self.unknown_stacks.insert(reason, id);
        id
    }

    /// The method id of jmethodID `key`, named through JVMTI.
    pub fn method(&mut self, key: usize) -> u32 {
        let (jvmti, jni) = (self.jvmti, self.jni);
        let mut resolve =
            move |key: usize| jvmti.method_names(jni, key as crate::sys::jmethodID).ok();
        self.symbols.method_id(&mut self.chunk, key, &mut resolve)
    }

    /// The class id of a JVM class signature (`Ljava/lang/String;`).
    pub fn class(&mut self, signature: &str) -> u32 {
        self.symbols.class_id(&mut self.chunk, signature)
    }

    /// The string id of `text`.
    pub fn string(&mut self, text: &str) -> u32 {
        self.symbols.string(&mut self.chunk, text)
    }

    /// The string id of `text`, one of the endless strings requests bring
    /// (see `Symbols::transient_string`).
    pub fn transient_string(&mut self, text: &str) -> u32 {
        self.symbols.transient_string(&mut self.chunk, text)
    }

    /// The recording thread of an event's thread, named by its Java id when
    /// known and its definition written; None for the agent's own threads.
    pub fn event_thread(&mut self, key: ThreadKey) -> Option<u32> {
        let ThreadKey { tid, env, java_id } = key;
        if self.table.is_agent(tid) {
            return None;
        }
        if tid == 0 && env == 0 && java_id != 0 {
            // Known only by its Java id: a virtual thread (JDK 21+).
            return Some(self.virtual_thread(java_id));
        }
        let by_java_id = (java_id != 0)
            .then(|| self.table.order_of_java_id(java_id))
            .flatten();
        let t = by_java_id.unwrap_or_else(|| self.thread_of(tid, env));
        self.emit_thread(t);
        Some(t)
    }

    /// The recording thread of a cpu sample's platform thread, the agent's own
    /// included (their CPU time is the process's), its definition written.
    pub fn cpu_sample_thread(&mut self, tid: u32, env: usize) -> u32 {
        let t = self.thread_of(tid, env);
        self.emit_thread(t);
        t
    }

    /// The recording thread of virtual thread `java_id` (JDK 21+), described and
    /// its definition written at its first sighting.
    pub fn virtual_thread(&mut self, java_id: i64) -> u32 {
        let t = match self.table.order_of_java_id(java_id) {
            Some(t) => t,
            None => {
                let table = self.table.clone();
                let carrier_name = |tid: u32| {
                    let order = table.order_of_tid(tid)?;
                    table.changed_since(order, u32::MAX).map(|e| e.info.name)
                };
                let info = (self.describe_virtual)(java_id, &carrier_name);
                self.table.see(java_id, info, None)
            }
        };
        self.emit_thread(t);
        t
    }

    /// True for a thread JVMTI shows as a java.lang.Thread. Such a thread is never
    /// struck out, whatever its failed walks say: an application thread can give
    /// "unknown, not Java" several times in a row (in the VM while classes load and
    /// GCs run, on a loaded machine), and striking it out lost all its samples.
    pub fn is_java_thread(&mut self, tid: u32, env: usize) -> bool {
        if self.table.java_id_of_tid(tid).is_some_and(|id| id != 0) {
            return true;
        }
        env != 0 && self.java_thread_by_env(tid, env).is_some()
    }

    /// The recording thread of the Java thread whose JNIEnv is `env`, found
    /// through JVMTI and learnt for Linux thread `tid`; None when JVMTI shows no
    /// java.lang.Thread for it.
    fn java_thread_by_env(&mut self, tid: u32, env: usize) -> Option<u32> {
        let (java_id, info) = self
            .env_mapper
            .and_then(|m| m.find(self.jvmti, self.jni, env))?;
        Some(self.table.see(java_id, info, Some(tid)))
    }

    /// The recording's thread id for Linux thread `tid`: known from ThreadStart or
    /// a snapshot, else found through its JNIEnv, else named from /proc.
    pub fn thread_of(&mut self, tid: u32, env: usize) -> u32 {
        if let Some(order) = self.table.order_of_tid(tid) {
            return order;
        }
        if env == 0 {
            // Not attached to the VM: a native thread, named by the kernel.
            return self.table.see_anonymous(tid, kernel_thread_name(tid));
        }
        if let Some(&order) = self.unmatched_envs.get(&env) {
            return order;
        }
        if let Some(order) = self.java_thread_by_env(tid, env) {
            return order;
        }
        let order = self.table.see_anonymous(tid, kernel_thread_name(tid));
        self.unmatched_envs.insert(env, order);
        order
    }

    /// Writes the thread's definition if it is new or changed since last written.
    pub fn emit_thread(&mut self, order: u32) {
        let known = self.emitted.get(&order).copied().unwrap_or(0);
        let Some(entry) = self.table.changed_since(order, known) else {
            return;
        };
        self.emitted.insert(order, entry.revision);
        self.chunk.thread(&thread_def(entry));
    }
}

/// The recording's frame kind of a Java frame the VM structure walker typed.
fn frame_kind(t: JavaType) -> FrameKind {
    match t {
        JavaType::Interpreted => FrameKind::Interpreted,
        JavaType::C1 => FrameKind::C1,
        JavaType::C2 | JavaType::CompileTask => FrameKind::Compiled,
        JavaType::Inlined => FrameKind::Inlined,
        JavaType::Native => FrameKind::Native,
    }
}

/// The recording's definition of a thread.
pub(crate) fn thread_def(entry: ThreadEntry) -> ThreadDef {
    ThreadDef {
        id: ThreadId(entry.order),
        java_id: entry.java_id,
        os_tid: entry.os_tid,
        name: entry.info.name,
        group: entry.info.group,
        parent: entry.info.parent,
        start_order: entry.order,
        daemon: entry.info.daemon,
    }
}
