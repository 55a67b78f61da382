//! Names: JFR's classes, methods, stack traces and threads become jscope's
//! dictionaries, each declared once however many chunks (and pool keys) refer to it.

use std::collections::{BTreeMap, HashMap};

use jscope_format::{
    ClassDef, ClassId, Frame, FrameKind, MethodDef, MethodId, Recording, StackId, StringId,
    ThreadDef, ThreadId,
};

use crate::metadata::IdMap;
use crate::value::{Value, View};

/// What a chunk's pool keys were turned into; keys are only valid within a chunk.
#[derive(Default)]
struct ChunkIds {
    stacks: IdMap<StackId>,
    methods: IdMap<MethodId>,
    classes: IdMap<ClassId>,
    threads: IdMap<ThreadId>,
}

/// The dictionaries being built, and what the current chunk's pool keys became.
pub(crate) struct Names {
    strings: Vec<String>,
    classes: Vec<Option<ClassDef>>,
    methods: Vec<Option<MethodDef>>,
    stacks: Vec<Option<Vec<Frame>>>,
    threads: BTreeMap<ThreadId, ThreadDef>,
    string_ids: HashMap<String, StringId>,
    class_ids: HashMap<String, ClassId>,
    method_ids: HashMap<(ClassId, StringId, StringId), MethodId>,
    stack_ids: HashMap<Vec<Frame>, StackId>,
    thread_ids: HashMap<(i64, i64, String), ThreadId>,
    chunk: ChunkIds,
}

impl Default for Names {
    fn default() -> Names {
        Names {
            strings: vec![String::new()],
            classes: Vec::new(),
            methods: Vec::new(),
            stacks: Vec::new(),
            threads: BTreeMap::new(),
            string_ids: HashMap::new(),
            class_ids: HashMap::new(),
            method_ids: HashMap::new(),
            stack_ids: HashMap::new(),
            thread_ids: HashMap::new(),
            chunk: ChunkIds::default(),
        }
    }
}

impl Names {
    /// Pool keys of the previous chunk mean nothing in the next.
    pub(crate) fn new_chunk(&mut self) {
        self.chunk = ChunkIds::default();
    }

    /// Moves the dictionaries into `rec`.
    pub(crate) fn into_recording(self, rec: &mut Recording) {
        rec.strings = self.strings;
        rec.classes = self.classes;
        rec.methods = self.methods;
        rec.stacks = self.stacks;
        rec.threads = self.threads;
    }

    pub(crate) fn string(&mut self, s: &str) -> StringId {
        if s.is_empty() {
            return StringId::NONE;
        }
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = StringId(self.strings.len() as u32);
        self.strings.push(s.to_owned());
        self.string_ids.insert(s.to_owned(), id);
        id
    }

    fn class_named(&mut self, name: &str) -> ClassId {
        if name.is_empty() {
            return ClassId::NONE;
        }
        if let Some(&id) = self.class_ids.get(name) {
            return id;
        }
        let id = ClassId(self.classes.len().max(1) as u32);
        let def = ClassDef {
            id,
            name: self.string(name),
            source_file: StringId::NONE,
        };
        put(&mut self.classes, id.index(), def);
        self.class_ids.insert(name.to_owned(), id);
        id
    }

    /// A `java.lang.Class` value (or pool reference) as a class id.
    pub(crate) fn class(&mut self, v: &View, raw: &Value) -> ClassId {
        let key = pool_key(raw);
        if let Some(id) = key.and_then(|k| self.chunk.classes.get(&k)) {
            return *id;
        }
        let name = v.string(raw, "name").unwrap_or_default().replace('/', ".");
        let id = self.class_named(&name);
        if let Some(k) = key {
            self.chunk.classes.insert(k, id);
        }
        id
    }

    pub(crate) fn method(&mut self, v: &View, raw: &Value) -> MethodId {
        let key = pool_key(raw);
        if let Some(id) = key.and_then(|k| self.chunk.methods.get(&k)) {
            return *id;
        }
        let class = self.class(v, v.raw(raw, "type"));
        let name = self.string(&v.string(raw, "name").unwrap_or_default());
        let signature = self.string(&v.string(raw, "descriptor").unwrap_or_default());
        let modifiers = v.int(raw, "modifiers").unwrap_or(0) as u32;
        let id = self.intern_method(class, name, signature, modifiers);
        if let Some(k) = key {
            self.chunk.methods.insert(k, id);
        }
        id
    }

    pub(crate) fn stack(&mut self, v: &View, raw: &Value) -> StackId {
        let key = pool_key(raw);
        if let Some(id) = key.and_then(|k| self.chunk.stacks.get(&k)) {
            return *id;
        }
        let frames = match v.get(raw, "frames") {
            Value::Array(items) => items.iter().map(|f| self.frame(v, f)).collect(),
            _ => Vec::new(),
        };
        let id = if frames.is_empty() {
            StackId::NONE
        } else {
            let next = StackId(self.stacks.len().max(1) as u32);
            let id = *self.stack_ids.entry(frames.clone()).or_insert(next);
            if id == next {
                put(&mut self.stacks, id.index(), frames);
            }
            id
        };
        if let Some(k) = key {
            self.chunk.stacks.insert(k, id);
        }
        id
    }

    fn frame(&mut self, v: &View, f: &Value) -> Frame {
        let method = self.method(v, v.raw(f, "method"));
        let kind = v
            .as_string(v.get(f, "type"))
            .map_or(FrameKind::Java, |t| frame_kind(&t));
        let method = match kind {
            FrameKind::Kernel => self.kernel_method(method),
            FrameKind::Native | FrameKind::Vm => self.native_method(method),
            _ => method,
        };
        Frame {
            method,
            bci: v.int(f, "bytecodeIndex").unwrap_or(-1) as i32,
            line: v.int(f, "lineNumber").unwrap_or(0).max(0) as u32,
            kind,
        }
    }

    /// A kernel frame's method as jscope's mixed stacks write it: class `[kernel]`, no
    /// signature, native modifiers, so it reads `symbol_[k]`.
    fn kernel_method(&mut self, method: MethodId) -> MethodId {
        let Some(def) = self.methods.get(method.index()).and_then(Option::as_ref) else {
            return method;
        };
        let name = self.strings[def.name.index()].clone();
        let name = name.strip_suffix("_[k]").unwrap_or(&name).to_string();
        let class = self.class_named("[kernel]");
        let name = self.string(&name);
        self.intern_method(class, name, StringId::NONE, 0x100)
    }

    /// async-profiler's native and C++ frames (class the library, `libc.so.6`, or
    /// empty; descriptor `()L;`) as jscope's mixed stacks write native code: no
    /// signature, native modifiers, so they read `symbol [libc.so.6]` as the
    /// agent's do, not `libc.so.6.symbol`. A Java native method (the JDK's
    /// `Native` frames) has a real descriptor and stays a Java method.
    fn native_method(&mut self, method: MethodId) -> MethodId {
        let Some(def) = self.methods.get(method.index()).and_then(Option::as_ref) else {
            return method;
        };
        if self.strings[def.signature.index()] != ASYNC_PROFILER_NATIVE_DESCRIPTOR {
            return method;
        }
        let (class, name) = (def.class, def.name);
        self.intern_method(class, name, StringId::NONE, 0x100)
    }

    /// The id of the method `class.name signature`, defined with `modifiers` when
    /// it is new (one definition per class, name and signature).
    fn intern_method(
        &mut self,
        class: ClassId,
        name: StringId,
        signature: StringId,
        modifiers: u32,
    ) -> MethodId {
        let next = MethodId(self.methods.len().max(1) as u32);
        let id = *self
            .method_ids
            .entry((class, name, signature))
            .or_insert(next);
        if id == next {
            let def = MethodDef {
                id,
                class,
                name,
                signature,
                modifiers,
            };
            put(&mut self.methods, id.index(), def);
        }
        id
    }

    pub(crate) fn thread(&mut self, v: &View, raw: &Value) -> ThreadId {
        let key = pool_key(raw);
        if let Some(id) = key.and_then(|k| self.chunk.threads.get(&k)) {
            return *id;
        }
        if matches!(v.pools.resolve(raw), Value::Null) {
            return ThreadId::NONE;
        }
        let java_id = v.int(raw, "javaThreadId").unwrap_or(0);
        let os_tid = v.int(raw, "osThreadId").unwrap_or(0);
        let name = v
            .string(raw, "javaName")
            .filter(|n| !n.is_empty())
            .or_else(|| v.string(raw, "osName"))
            .unwrap_or_default();
        let next = ThreadId(self.threads.len() as u32 + 1);
        let id = *self
            .thread_ids
            .entry((java_id, os_tid, name.clone()))
            .or_insert(next);
        if id == next {
            let group = v.string(v.get(raw, "group"), "name").unwrap_or_default();
            // Threads without a Java id (async-profiler's GC, compiler and native
            // threads) are native threads, as the agent writes them.
            let group = if group.is_empty() && java_id == 0 {
                "[native]".to_string()
            } else {
                group
            };
            self.threads.insert(
                id,
                ThreadDef {
                    id,
                    java_id,
                    os_tid: os_tid as u32,
                    name,
                    group,
                    parent: String::new(),
                    start_order: id.0,
                    daemon: false,
                },
            );
        }
        if let Some(k) = key {
            self.chunk.threads.insert(k, id);
        }
        id
    }
}

fn pool_key(v: &Value) -> Option<i64> {
    match v {
        Value::Ref { key, .. } => Some(*key),
        _ => None,
    }
}

fn put<T>(v: &mut Vec<Option<T>>, i: usize, value: T) {
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(value);
}

/// The descriptor async-profiler gives the methods of native and C++ frames.
const ASYNC_PROFILER_NATIVE_DESCRIPTOR: &str = "()L;";

/// JFR's frame type names (async-profiler adds `C1 compiled`, `C++` for code in the
/// JVM, `Kernel`).
fn frame_kind(name: &str) -> FrameKind {
    match name {
        "Interpreted" => FrameKind::Interpreted,
        "JIT compiled" => FrameKind::Compiled,
        "C1 compiled" => FrameKind::C1,
        "Inlined" => FrameKind::Inlined,
        "Native" => FrameKind::Native,
        "C++" => FrameKind::Vm,
        "Kernel" => FrameKind::Kernel,
        _ => FrameKind::Java,
    }
}
