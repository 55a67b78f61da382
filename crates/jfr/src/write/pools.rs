//! The constant pools of a written chunk: which threads, stacks, methods,
//! classes, packages, symbols, frame types, thread states and GC names its events
//! refer to, and the checkpoint event that holds them all.
//!
//! Keys are jscope's ids moved past the keys of earlier chunks of the same file:
//! the JDK's parser takes a key it already resolved in the previous chunk as that
//! chunk's value, so a key must mean one thing in the whole file.

use std::collections::HashMap;

use jscope_format::thread_state::{self as ts, classify, StateClass};
use jscope_format::{ClassId, FrameKind, MethodId, Recording, StackId, ThreadId};

use super::out::Out;
use super::types::id;

/// The next free key of each pool, carried from chunk to chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keys {
    symbol: u64,
    class: u64,
    package: u64,
    method: u64,
    stack: u64,
    thread: u64,
    group: u64,
    gc: u64,
}

impl Default for Keys {
    /// Key 0 is a null reference: every pool starts at 1.
    fn default() -> Keys {
        Keys {
            symbol: 1,
            class: 1,
            package: 1,
            method: 1,
            stack: 1,
            thread: 1,
            group: 1,
            gc: 1,
        }
    }
}

/// Frame type keys: async-profiler's converter takes the key as the frame type
/// (0 interpreted ... 6 C1 compiled), and the JDK numbers its four the same way.
pub(crate) mod frame_type {
    pub const INTERPRETED: u8 = 0;
    pub const JIT_COMPILED: u8 = 1;
    pub const INLINED: u8 = 2;
    pub const NATIVE: u8 = 3;
    pub const CPP: u8 = 4;
    pub const KERNEL: u8 = 5;
    /// async-profiler's "C1 compiled".
    pub const C1_COMPILED: u8 = 6;
    pub const NAMES: [&str; 7] = [
        "Interpreted",
        "JIT compiled",
        "Inlined",
        "Native",
        "C++",
        "Kernel",
        "C1 compiled",
    ];
}

/// The frame type of a jscope frame. Java frames of unknown tier are JIT
/// compiled (the JDK has no other word for them); "Native" is both a Java method
/// declared `native` (the JDK's meaning) and native code (async-profiler's: see
/// [`Pools::checkpoint`]); kinds this writer does not know (added after it) are
/// written as C++ frames, which every reader shows by name.
pub(crate) fn frame_type_of(kind: FrameKind) -> u8 {
    use frame_type::*;
    match kind {
        FrameKind::Interpreted => INTERPRETED,
        FrameKind::Compiled | FrameKind::Java | FrameKind::Unknown => JIT_COMPILED,
        FrameKind::C1 => C1_COMPILED,
        FrameKind::Inlined => INLINED,
        FrameKind::Native => NATIVE,
        FrameKind::Kernel => KERNEL,
        _ => CPP,
    }
}

/// Thread state keys and the names the JDK (and jscope's reader) give them.
const STATES: [&str; 13] = [
    "STATE_DEFAULT",
    "STATE_RUNNABLE",
    "STATE_IN_NATIVE",
    "STATE_BLOCKED_ON_MONITOR_ENTER",
    "STATE_SLEEPING",
    "STATE_PARKED",
    "STATE_PARKED_TIMED",
    "STATE_IN_OBJECT_WAIT",
    "STATE_IN_OBJECT_WAIT_TIMED",
    "STATE_WAITING",
    "STATE_TIMED_WAITING",
    "STATE_NEW",
    "STATE_TERMINATED",
];

/// The index in [`STATES`] of JVMTI state bits, by the class jscope shows them as
/// (so the state reads back as the same class); `STATE_DEFAULT` when unknown, as
/// async-profiler writes its cpu samples.
fn state_index(bits: u32) -> usize {
    let timed = bits & ts::WAITING_WITH_TIMEOUT != 0;
    let object_wait = bits & ts::IN_OBJECT_WAIT != 0;
    match classify(bits) {
        StateClass::Unknown => 0,
        StateClass::Runnable => 1,
        StateClass::Native => 2,
        StateClass::Blocked => 3,
        StateClass::Sleeping => 4,
        StateClass::Parked if timed => 6,
        StateClass::Parked => 5,
        StateClass::Waiting if object_wait => 7,
        StateClass::TimedWaiting if object_wait => 8,
        StateClass::Waiting => 9,
        StateClass::TimedWaiting => 10,
        StateClass::New => 11,
        StateClass::Terminated => 12,
    }
}

/// What one chunk's events refer to.
pub(crate) struct Pools<'r> {
    rec: &'r Recording,
    base: Keys,
    stacks: Vec<bool>,
    /// Stacks made for method traces (the traced calls open at each one, as
    /// method keys), by key offset after the recording's own stacks.
    trace_stacks: Vec<Vec<u64>>,
    trace_stack_keys: HashMap<Vec<MethodId>, u64>,
    threads: Vec<bool>,
    classes: Vec<bool>,
    methods: Vec<bool>,
    states: [bool; STATES.len()],
    gc_names: HashMap<String, u64>,
    gc_causes: HashMap<String, u64>,
    gc_next: u64,
}

impl<'r> Pools<'r> {
    pub(crate) fn new(rec: &'r Recording, base: Keys) -> Pools<'r> {
        let threads = rec.threads.keys().last().map_or(0, |t| t.index() + 1);
        Pools {
            rec,
            base,
            stacks: vec![false; rec.stacks.len()],
            trace_stacks: Vec::new(),
            trace_stack_keys: HashMap::new(),
            threads: vec![false; threads],
            classes: vec![false; rec.classes.len()],
            methods: vec![false; rec.methods.len()],
            states: [false; STATES.len()],
            gc_names: HashMap::new(),
            gc_causes: HashMap::new(),
            gc_next: base.gc,
        }
    }

    /// The key of a recording stack; 0 (null) for none or an undeclared one.
    pub(crate) fn stack(&mut self, id: StackId) -> u64 {
        match self.stacks.get_mut(id.index()) {
            Some(used) if !id.is_none() && self.rec.stacks[id.index()].is_some() => {
                *used = true;
                self.base.stack + u64::from(id.0)
            }
            _ => 0,
        }
    }

    /// The key of a stack of methods, top first, made by this writer.
    pub(crate) fn trace_stack(&mut self, methods: &[MethodId]) -> u64 {
        if let Some(&k) = self.trace_stack_keys.get(methods) {
            return k;
        }
        let keys = methods.iter().map(|&m| self.method(m)).collect();
        let key = self.base.stack + (self.stacks.len() + self.trace_stacks.len()) as u64;
        self.trace_stacks.push(keys);
        self.trace_stack_keys.insert(methods.to_vec(), key);
        key
    }

    /// The key of a thread; 0 (null) for the process-wide timeline or an
    /// undeclared thread.
    pub(crate) fn thread(&mut self, id: ThreadId) -> u64 {
        match self.threads.get_mut(id.index()) {
            Some(used) if !id.is_none() && self.rec.threads.contains_key(&id) => {
                *used = true;
                self.base.thread + u64::from(id.0)
            }
            _ => 0,
        }
    }

    /// The key of a class an event names; 0 (null) for none.
    pub(crate) fn class(&mut self, id: ClassId) -> u64 {
        match self.classes.get_mut(id.index()) {
            Some(used) if !id.is_none() && self.rec.classes[id.index()].is_some() => {
                *used = true;
                self.base.class + u64::from(id.0)
            }
            _ => 0,
        }
    }

    /// The key of a method; an unknown or undeclared one is `[unknown]`.
    pub(crate) fn method(&mut self, id: MethodId) -> u64 {
        match self.methods.get_mut(id.index()) {
            Some(used) if !id.is_none() && self.rec.methods[id.index()].is_some() => {
                *used = true;
                self.base.method + u64::from(id.0)
            }
            _ => self.unknown_method_key(),
        }
    }

    fn unknown_method_key(&self) -> u64 {
        self.base.method + self.methods.len() as u64
    }

    pub(crate) fn state(&mut self, bits: u32) -> u64 {
        let i = state_index(bits);
        self.states[i] = true;
        i as u64 + 1
    }

    pub(crate) fn gc_name(&mut self, name: &str) -> u64 {
        intern(&mut self.gc_names, &mut self.gc_next, name)
    }

    pub(crate) fn gc_cause(&mut self, cause: &str) -> u64 {
        intern(&mut self.gc_causes, &mut self.gc_next, cause)
    }

    /// The checkpoint event holding every pool entry the chunk's events refer to,
    /// and the keys the next chunk starts from.
    pub(crate) fn checkpoint(mut self, start_ticks: i64) -> (Vec<u8>, Keys) {
        let mut w = PoolWriter::new(self.rec, &self.base);
        let stacks = self.write_stacks(&mut w);
        let frame_types = write_frame_types(&w.frame_types, w.mixed);
        let methods = self.write_methods(&mut w);
        let classes = self.write_classes(&mut w);
        let threads = self.write_threads(&mut w);
        let states = self.write_states();
        let pools = [
            (id::STACK_TRACE, stacks),
            (id::FRAME_TYPE, frame_types),
            (id::METHOD, methods),
            (id::CLASS, classes),
            (id::THREAD, threads),
            (id::THREAD_GROUP, w.groups.take()),
            (id::PACKAGE, w.packages.take()),
            (id::SYMBOL, w.symbols.take()),
            (id::THREAD_STATE, states),
            (id::GC_NAME, strings_pool(&self.gc_names)),
            (id::GC_CAUSE, strings_pool(&self.gc_causes)),
        ];
        let next = self.next_keys(&w);
        (checkpoint_event(&pools, start_ticks), next)
    }

    fn next_keys(&self, w: &PoolWriter) -> Keys {
        let b = self.base;
        Keys {
            symbol: w.symbols.next,
            class: b.class + self.classes.len() as u64 + 1,
            package: w.packages.next,
            method: b.method + self.methods.len() as u64 + 1,
            stack: b.stack + (self.stacks.len() + self.trace_stacks.len()) as u64 + 1,
            thread: b.thread + self.threads.len() as u64 + 1,
            group: w.groups.next,
            gc: self.gc_next,
        }
    }

    fn write_stacks(&mut self, w: &mut PoolWriter) -> Pool {
        let rec = self.rec;
        let mut pool = Pool::default();
        let used: Vec<usize> = (0..self.stacks.len()).filter(|&i| self.stacks[i]).collect();
        for i in used {
            let Some(frames) = rec.stacks[i].as_ref() else {
                continue;
            };
            pool.entry(self.base.stack + i as u64);
            pool.out.bool(false);
            pool.out.int(frames.len() as i32);
            for f in frames {
                let method = self.method(f.method);
                let ty = frame_type_of(f.kind);
                w.frame_types[ty as usize] = true;
                w.mixed |= ty == frame_type::CPP
                    || ty == frame_type::KERNEL
                    || rec.native_library(f.method).is_some();
                write_frame(&mut pool.out, method, f.line as i32, f.bci, ty);
            }
        }
        let first = self.base.stack + self.stacks.len() as u64;
        for (i, methods) in self.trace_stacks.iter().enumerate() {
            pool.entry(first + i as u64);
            pool.out.bool(false);
            pool.out.int(methods.len() as i32);
            for &key in methods {
                w.frame_types[frame_type::JIT_COMPILED as usize] = true;
                write_frame(&mut pool.out, key, 0, -1, frame_type::JIT_COMPILED);
            }
        }
        pool
    }

    fn write_methods(&mut self, w: &mut PoolWriter) -> Pool {
        let rec = self.rec;
        let mut pool = Pool::default();
        for (i, used) in self.methods.iter().enumerate() {
            let Some(m) = rec.methods[i].as_ref().filter(|_| *used) else {
                continue;
            };
            let library = rec.native_library(m.id);
            let class = match rec.class(m.class) {
                Some(_) => {
                    self.classes[m.class.index()] = true;
                    w.libraries[m.class.index()] |= library.is_some();
                    self.base.class + u64::from(m.class.0)
                }
                None => w.no_class(self.base.class),
            };
            let descriptor = match library {
                Some("[kernel]") => KERNEL_DESCRIPTOR,
                Some(_) => NATIVE_DESCRIPTOR,
                None => java_descriptor(rec.string(m.signature)),
            };
            pool.entry(self.base.method + i as u64);
            pool.out.long(class as i64);
            pool.out.long(w.symbols.key(rec.string(m.name)) as i64);
            pool.out.long(w.symbols.key(descriptor) as i64);
            pool.out.int(m.modifiers as i32);
            pool.out.bool(false);
        }
        // The method of frames that name none.
        pool.entry(self.unknown_method_key());
        pool.out.long(w.no_class(self.base.class) as i64);
        pool.out.long(w.symbols.key("[unknown]") as i64);
        pool.out.long(w.symbols.key(NATIVE_DESCRIPTOR) as i64);
        pool.out.int(0);
        pool.out.bool(false);
        pool
    }

    fn write_classes(&mut self, w: &mut PoolWriter) -> Pool {
        let rec = self.rec;
        let mut pool = Pool::default();
        if w.no_class_used {
            pool.entry(self.base.class);
            write_class(&mut pool.out, w.symbols.key(""), 0);
        }
        for (i, used) in self.classes.iter().enumerate() {
            let Some(c) = rec.classes[i].as_ref().filter(|_| *used) else {
                continue;
            };
            let name = rec.string(c.name);
            // A library (the class of native code) keeps its file name.
            let (symbol, package) = if w.libraries[i] {
                (w.symbols.key(name), 0)
            } else {
                let internal = name.replace('.', "/");
                let package = w.package(&internal);
                (w.symbols.key(&internal), package)
            };
            pool.entry(self.base.class + i as u64);
            write_class(&mut pool.out, symbol, package);
        }
        pool
    }

    fn write_threads(&mut self, w: &mut PoolWriter) -> Pool {
        let mut pool = Pool::default();
        for (id, t) in &self.rec.threads {
            if self.threads.get(id.index()) != Some(&true) {
                continue;
            }
            let java = t.java_id != 0;
            pool.entry(self.base.thread + u64::from(id.0));
            pool.out.string(Some(&t.name));
            pool.out.long(i64::from(t.os_tid));
            pool.out.string(java.then_some(t.name.as_str()));
            pool.out.long(t.java_id);
            pool.out.long(w.group(&t.group) as i64);
            pool.out.bool(t.group == "virtual");
        }
        pool
    }

    fn write_states(&self) -> Pool {
        let mut pool = Pool::default();
        for (i, name) in STATES.iter().enumerate() {
            if self.states[i] {
                pool.entry(i as u64 + 1);
                pool.out.string(Some(name));
            }
        }
        pool
    }
}

/// The descriptors async-profiler gives native code and kernel code, which its
/// converter and jscope's reader recognise.
const NATIVE_DESCRIPTOR: &str = "()L;";
const KERNEL_DESCRIPTOR: &str = "(Lk;)L;";

/// A Java method's descriptor as readers parse it (`(params)return`; the JDK's
/// `jfr print` fails on anything else): a method without one gets `()L;`.
fn java_descriptor(signature: &str) -> &str {
    if signature.starts_with('(') && signature.contains(')') {
        signature
    } else {
        NATIVE_DESCRIPTOR
    }
}

/// The frame types the stacks use; all seven when they hold native code, so
/// async-profiler's converter takes "Native" as C code there (it does when the
/// pool has "Kernel"), and as a Java method declared `native` otherwise.
fn write_frame_types(used: &[bool; 7], mixed: bool) -> Pool {
    let mut pool = Pool::default();
    for (key, name) in frame_type::NAMES.iter().enumerate() {
        if used[key] || mixed {
            pool.entry(key as u64);
            pool.out.string(Some(name));
        }
    }
    pool
}

fn intern(map: &mut HashMap<String, u64>, next: &mut u64, s: &str) -> u64 {
    if let Some(&k) = map.get(s) {
        return k;
    }
    let k = *next;
    *next += 1;
    map.insert(s.to_string(), k);
    k
}

fn strings_pool(map: &HashMap<String, u64>) -> Pool {
    let mut entries: Vec<(&u64, &String)> = map.iter().map(|(s, k)| (k, s)).collect();
    entries.sort();
    let mut pool = Pool::default();
    for (&k, s) in entries {
        pool.entry(k);
        pool.out.string(Some(s));
    }
    pool
}

fn write_frame(out: &mut Out, method: u64, line: i32, bci: i32, ty: u8) {
    out.long(method as i64);
    out.int(line);
    out.int(bci);
    out.long(i64::from(ty));
}

fn write_class(out: &mut Out, name: u64, package: u64) {
    out.long(0); // class loader: the bootstrap loader, as far as a reader knows
    out.long(name as i64);
    out.long(package as i64);
    out.int(0);
    out.bool(false);
}

/// One pool's entries, counted as they are written.
#[derive(Default)]
struct Pool {
    count: u32,
    out: Out,
}

impl Pool {
    fn entry(&mut self, key: u64) {
        self.count += 1;
        self.out.varint(key);
    }
}

/// An interned pool of strings (symbols, packages, thread groups).
struct Interned {
    keys: HashMap<String, u64>,
    next: u64,
    pool: Pool,
}

impl Interned {
    fn new(next: u64) -> Interned {
        Interned {
            keys: HashMap::new(),
            next,
            pool: Pool::default(),
        }
    }

    fn take(&mut self) -> Pool {
        std::mem::take(&mut self.pool)
    }
}

/// What writing the pools of methods, classes and threads collects on the way.
struct PoolWriter {
    symbols: Interned,
    packages: Interned,
    groups: Interned,
    frame_types: [bool; 7],
    mixed: bool,
    /// Classes that stand for a native library, by class id.
    libraries: Vec<bool>,
    no_class_used: bool,
}

impl PoolWriter {
    fn new(rec: &Recording, base: &Keys) -> PoolWriter {
        PoolWriter {
            symbols: Interned::new(base.symbol),
            packages: Interned::new(base.package),
            groups: Interned::new(base.group),
            frame_types: [false; 7],
            mixed: false,
            libraries: vec![false; rec.classes.len()],
            no_class_used: false,
        }
    }

    /// The class of methods that name none (its name is empty).
    fn no_class(&mut self, base: u64) -> u64 {
        self.no_class_used = true;
        base
    }

    fn package(&mut self, internal_class: &str) -> u64 {
        let Some((package, _)) = internal_class.rsplit_once('/') else {
            return 0;
        };
        if let Some(&k) = self.packages.keys.get(package) {
            return k;
        }
        let name = self.symbols.key(package);
        let p = &mut self.packages;
        let k = p.next;
        p.next += 1;
        p.keys.insert(package.to_string(), k);
        p.pool.entry(k);
        p.pool.out.long(name as i64);
        p.pool.out.bool(true);
        k
    }

    fn group(&mut self, name: &str) -> u64 {
        if name.is_empty() {
            return 0;
        }
        let g = &mut self.groups;
        if let Some(&k) = g.keys.get(name) {
            return k;
        }
        let k = g.next;
        g.next += 1;
        g.keys.insert(name.to_string(), k);
        g.pool.entry(k);
        g.pool.out.long(0);
        g.pool.out.string(Some(name));
        k
    }
}

impl Interned {
    /// The key of a symbol, written to the pool the first time.
    fn key(&mut self, s: &str) -> u64 {
        if let Some(&k) = self.keys.get(s) {
            return k;
        }
        let k = self.next;
        self.next += 1;
        self.keys.insert(s.to_string(), k);
        self.pool.entry(k);
        self.pool.out.utf8(s);
        k
    }
}

/// The checkpoint event: every non-empty pool (the JDK's parser refuses a pool
/// of no entries), as the only checkpoint of its chunk (delta 0).
fn checkpoint_event(pools: &[(i64, Pool)], start_ticks: i64) -> Vec<u8> {
    let mut body = Out::default();
    body.long(1); // the checkpoint event's type
    body.long(start_ticks);
    body.long(0); // duration
    body.long(0); // delta to the previous checkpoint: none
    body.u8(0); // type flags
    let pools: Vec<&(i64, Pool)> = pools.iter().filter(|(_, p)| p.count > 0).collect();
    body.int(pools.len() as i32);
    for (ty, pool) in pools {
        body.long(*ty);
        body.int(pool.count as i32);
        body.buf.extend_from_slice(&pool.out.buf);
    }
    let mut event = Out::default();
    event.event(&body.buf);
    event.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_format::thread_state::classify;

    #[test]
    fn every_state_class_reads_back_as_itself() {
        let bits = [
            0,
            ts::ALIVE | ts::RUNNABLE,
            ts::ALIVE | ts::RUNNABLE | ts::IN_NATIVE,
            ts::ALIVE | ts::BLOCKED_ON_MONITOR_ENTER,
            ts::ALIVE | ts::WAITING | ts::WAITING_WITH_TIMEOUT | ts::SLEEPING,
            ts::ALIVE | ts::WAITING | ts::WAITING_INDEFINITELY | ts::PARKED,
            ts::ALIVE | ts::WAITING | ts::WAITING_WITH_TIMEOUT | ts::PARKED,
            ts::ALIVE | ts::WAITING | ts::WAITING_INDEFINITELY | ts::IN_OBJECT_WAIT,
            ts::ALIVE | ts::WAITING | ts::WAITING_WITH_TIMEOUT | ts::IN_OBJECT_WAIT,
            ts::ALIVE | ts::WAITING | ts::WAITING_INDEFINITELY,
            ts::ALIVE | ts::WAITING | ts::WAITING_WITH_TIMEOUT,
            ts::RUNNABLE,
            ts::TERMINATED,
        ];
        for b in bits {
            let name = STATES[state_index(b)];
            let back = crate::build::state_bits(name);
            assert_eq!(classify(back), classify(b), "{b:#x} as {name}");
        }
    }

    #[test]
    fn frame_kinds_map_to_the_types_readers_know() {
        use frame_type::*;
        assert_eq!(frame_type_of(FrameKind::Interpreted), INTERPRETED);
        assert_eq!(frame_type_of(FrameKind::Java), JIT_COMPILED);
        assert_eq!(frame_type_of(FrameKind::Inlined), INLINED);
        assert_eq!(frame_type_of(FrameKind::Native), NATIVE);
        assert_eq!(frame_type_of(FrameKind::Vm), CPP);
        assert_eq!(frame_type_of(FrameKind::Kernel), KERNEL);
        assert_eq!(NAMES[6], "C1 compiled");
    }
}
