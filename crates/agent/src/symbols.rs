//! Interning for the writer: strings, classes, methods and stacks get dense ids
//! from 1, and each new entry's dictionary record goes into the chunk being built
//! right before the first record that refers to it. Every entry is also kept so
//! that the whole dictionary can be declared again ([`Symbols::declare_all`]) for a
//! collector that lost a chunk. Except the strings a request brings (its path,
//! its traceparent, a span's tags: [`Symbols::transient_string`]), which are
//! endless in number: each is declared in every chunk that refers to it and
//! forgotten with the chunk, so that they cost the agent no memory over time.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use jscope_format::{ChunkWriter, ClassDef, Frame, FrameKind, MethodDef};
use jscope_format::{ClassId, MethodId, StackId, StringId};

use crate::jvm::{class_name_from_signature, line_of, MethodNames};

/// What the writer keeps per jmethodID.
#[derive(Debug, Clone)]
struct MethodEntry {
    /// Recording id; 0 when the method could not be resolved.
    id: u32,
    native: bool,
    lines: Vec<(i64, u32)>,
}

/// The writer's dictionaries.
#[derive(Default)]
pub struct Symbols {
    strings: HashMap<Arc<str>, u32>,
    classes: HashMap<String, u32>,
    methods: HashMap<usize, MethodEntry>,
    /// Native functions by (library, symbol): their method ids.
    natives: HashMap<(Arc<str>, String), u32>,
    stacks: HashMap<Vec<(u32, i32, u8)>, u32>,
    unresolved: u64,
    /// The transient strings of the chunk being built (`transient_string`).
    transient: HashMap<Arc<str>, u32>,
    /// The last string id given.
    last_string: u32,
    /// Every string kept (all but the transient ones), in id order.
    string_list: Vec<(u32, Arc<str>)>,
    /// Every other entry declared so far, in id order (id = index + 1).
    class_list: Vec<ClassDef>,
    method_list: Vec<MethodDef>,
    stack_list: Vec<Vec<Frame>>,
}

/// Splits a stream of records into chunks of about `limit` uncompressed bytes.
pub struct ChunkCutter {
    out: ChunkWriter,
    chunks: Vec<Vec<u8>>,
    limit: usize,
}

impl ChunkCutter {
    pub fn new(limit: usize) -> ChunkCutter {
        ChunkCutter {
            out: ChunkWriter::new(),
            chunks: Vec::new(),
            limit,
        }
    }

    /// Writes records with `write`; starts a new chunk once this one is full.
    pub fn record(&mut self, write: impl FnOnce(&mut ChunkWriter)) {
        write(&mut self.out);
        if self.out.raw_len() >= self.limit {
            self.chunks.push(self.out.finish());
        }
    }

    pub fn finish(mut self) -> Vec<Vec<u8>> {
        if !self.out.is_empty() {
            self.chunks.push(self.out.finish());
        }
        self.chunks
    }
}

impl Symbols {
    pub fn string(&mut self, out: &mut ChunkWriter, s: &str) -> u32 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.next_string_id();
        let s: Arc<str> = Arc::from(s);
        self.strings.insert(s.clone(), id);
        out.string(StringId(id), &s);
        self.string_list.push((id, s));
        id
    }

    /// The id of a string that comes with a request, valid in the chunk being
    /// built only: declared there once, never kept, never declared again (a
    /// string already kept keeps its id).
    pub fn transient_string(&mut self, out: &mut ChunkWriter, s: &str) -> u32 {
        /// At most this many are remembered for one chunk; past that each use
        /// declares its string.
        const PER_CHUNK: usize = 4096;
        if let Some(&id) = self.strings.get(s).or_else(|| self.transient.get(s)) {
            return id;
        }
        let id = self.next_string_id();
        out.transient_string(StringId(id), s);
        if self.transient.len() < PER_CHUNK {
            self.transient.insert(Arc::from(s), id);
        }
        id
    }

    /// Kept and transient strings take their ids from one sequence.
    fn next_string_id(&mut self) -> u32 {
        self.last_string += 1;
        self.last_string
    }

    /// The chunk being built was written: its transient strings are forgotten.
    pub fn chunk_written(&mut self) {
        self.transient.clear();
    }

    /// Classes are keyed by JVM signature and source file: two loaders' copies of
    /// one class share an entry, which is what a profile reader wants.
    fn class(&mut self, out: &mut ChunkWriter, signature: &str, source: Option<&str>) -> u32 {
        let key = format!("{signature}\0{}", source.unwrap_or(""));
        if let Some(&id) = self.classes.get(&key) {
            return id;
        }
        let name = self.string(out, &class_name_from_signature(signature));
        let source_file = source.map_or(0, |s| self.string(out, s));
        let id = self.class_list.len() as u32 + 1;
        self.classes.insert(key, id);
        let def = ClassDef {
            id: ClassId(id),
            name: StringId(name),
            source_file: StringId(source_file),
        };
        out.class(&def);
        self.class_list.push(def);
        id
    }

    fn define_method(&mut self, out: &mut ChunkWriter, names: &MethodNames) -> u32 {
        let class = self.class(out, &names.class_signature, names.source_file.as_deref());
        let name = self.string(out, &names.name);
        let signature = self.string(out, &names.signature);
        let id = self.method_list.len() as u32 + 1;
        let def = MethodDef {
            id: MethodId(id),
            class: ClassId(class),
            name: StringId(name),
            signature: StringId(signature),
            modifiers: names.modifiers,
        };
        out.method(&def);
        self.method_list.push(def);
        id
    }

    /// Defines a method known by name rather than by jmethodID (a traced method:
    /// the tracer names its probe ids itself); returns its recording id.
    pub fn define(&mut self, out: &mut ChunkWriter, names: &MethodNames) -> u32 {
        self.define_method(out, names)
    }

    /// The id of the class with JVM signature `signature` (an event's class).
    pub fn class_id(&mut self, out: &mut ChunkWriter, signature: &str) -> u32 {
        self.class(out, signature, None)
    }

    /// The recording id of jmethodID `key` (0 when it cannot be resolved).
    pub fn method_id(
        &mut self,
        out: &mut ChunkWriter,
        key: usize,
        resolve: &mut dyn FnMut(usize) -> Option<MethodNames>,
    ) -> u32 {
        self.method(out, key, resolve).id
    }

    /// The entry for jmethodID `key`, resolving it with `resolve` the first time.
    /// `resolve` returns None when the method is gone (its class was unloaded);
    /// such frames become frames of the unknown method 0.
    fn method(
        &mut self,
        out: &mut ChunkWriter,
        key: usize,
        resolve: &mut dyn FnMut(usize) -> Option<MethodNames>,
    ) -> &MethodEntry {
        if !self.methods.contains_key(&key) {
            let entry = match resolve(key) {
                Some(names) => MethodEntry {
                    id: self.define_method(out, &names),
                    native: names.native,
                    lines: names.lines,
                },
                None => {
                    self.unresolved += 1;
                    MethodEntry {
                        id: 0,
                        native: false,
                        lines: Vec::new(),
                    }
                }
            };
            self.methods.insert(key, entry);
        }
        &self.methods[&key]
    }

    /// The method id of native function `name` in library `lib` (a file name,
    /// `[kernel]` or `[unknown]`): a method of the class named by the library,
    /// with an empty signature and the native modifier.
    pub fn native_method(&mut self, out: &mut ChunkWriter, lib: &Arc<str>, name: &str) -> u32 {
        if let Some(&id) = self.natives.get(&(lib.clone(), name.to_string())) {
            return id;
        }
        let key = format!("\0native\0{lib}");
        let class = match self.classes.get(&key) {
            Some(&id) => id,
            None => {
                let class_name = self.string(out, lib);
                let id = self.class_list.len() as u32 + 1;
                self.classes.insert(key, id);
                let def = ClassDef {
                    id: ClassId(id),
                    name: StringId(class_name),
                    source_file: StringId(0),
                };
                out.class(&def);
                self.class_list.push(def);
                id
            }
        };
        let name_id = self.string(out, name);
        let signature = self.string(out, "");
        let id = self.method_list.len() as u32 + 1;
        let def = MethodDef {
            id: MethodId(id),
            class: ClassId(class),
            name: StringId(name_id),
            signature: StringId(signature),
            modifiers: 0x100,
        };
        out.method(&def);
        self.method_list.push(def);
        self.natives.insert((lib.clone(), name.to_string()), id);
        id
    }

    /// The class and method names of recording method `id` (for a native
    /// function: its library and symbol).
    pub fn method_name(&self, id: u32) -> Option<(&str, &str)> {
        let m = self.method_list.get((id as usize).checked_sub(1)?)?;
        let c = self.class_list.get((m.class.0 as usize).checked_sub(1)?)?;
        let string = |s: StringId| -> Option<&str> {
            let at = self.string_list.binary_search_by_key(&s.0, |e| e.0).ok()?;
            Some(&self.string_list[at].1)
        };
        Some((string(c.name)?, string(m.name)?))
    }

    /// A frame for (jmethodID, bci) with its line and kind.
    pub fn frame(
        &mut self,
        out: &mut ChunkWriter,
        key: usize,
        bci: i32,
        resolve: &mut dyn FnMut(usize) -> Option<MethodNames>,
    ) -> Frame {
        let m = self.method(out, key, resolve);
        let kind = match (m.id, m.native) {
            (0, _) => FrameKind::Unknown,
            (_, true) => FrameKind::Native,
            _ => FrameKind::Java,
        };
        let bci = if kind == FrameKind::Java {
            bci.max(-1)
        } else {
            -1
        };
        let line = if bci >= 0 {
            line_of(&m.lines, bci as i64)
        } else {
            0
        };
        Frame {
            method: MethodId(m.id),
            bci,
            line,
            kind,
        }
    }

    /// The id of the stack made of `frames` (jmethodID, bci), top first.
    pub fn stack(
        &mut self,
        out: &mut ChunkWriter,
        frames: impl Iterator<Item = (usize, i32)>,
        resolve: &mut dyn FnMut(usize) -> Option<MethodNames>,
    ) -> u32 {
        let frames: Vec<Frame> = frames
            .map(|(key, bci)| self.frame(out, key, bci, resolve))
            .collect();
        self.stack_of(out, frames)
    }

    /// The id of the stack made of `frames`, top first.
    pub fn stack_of(&mut self, out: &mut ChunkWriter, frames: Vec<Frame>) -> u32 {
        let key: Vec<(u32, i32, u8)> = frames
            .iter()
            .map(|f| (f.method.0, f.bci, f.kind as u8))
            .collect();
        if let Some(&id) = self.stacks.get(&key) {
            return id;
        }
        let id = self.stack_list.len() as u32 + 1;
        self.stacks.insert(key, id);
        out.stack(StackId(id), &frames);
        self.stack_list.push(frames);
        id
    }

    /// Whether jmethodID `key`, already seen in a stack, is a native method.
    pub fn is_native(&self, key: usize) -> bool {
        self.methods.get(&key).is_some_and(|m| m.native)
    }

    /// Declares every entry again, each after the entries it refers to.
    pub fn declare_all(&self, out: &mut ChunkCutter) {
        for (id, s) in &self.string_list {
            out.record(|w| w.string(StringId(*id), s));
        }
        for c in &self.class_list {
            out.record(|w| w.class(c));
        }
        for m in &self.method_list {
            out.record(|w| w.method(m));
        }
        for (i, frames) in self.stack_list.iter().enumerate() {
            out.record(|w| w.stack(StackId(i as u32 + 1), frames));
        }
    }

    /// Methods that could not be resolved so far.
    pub fn unresolved(&self) -> u64 {
        self.unresolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_format::{encode_file_start, Header, Recording};

    fn names(class: &str, method: &str) -> MethodNames {
        MethodNames {
            name: method.into(),
            signature: "()V".into(),
            modifiers: 1,
            native: method == "sleep",
            class_signature: format!("L{class};"),
            source_file: Some("Demo.java".into()),
            lines: vec![(0, 10), (5, 12)],
        }
    }

    /// jmethodIDs 1..=3 are known methods; anything else behaves like an unloaded class.
    fn resolver(calls: &mut u32) -> impl FnMut(usize) -> Option<MethodNames> + '_ {
        move |key| {
            *calls += 1;
            match key {
                1 => Some(names("demo/Hot", "spin")),
                2 => Some(names("demo/Hot", "main")),
                3 => Some(names("java/lang/Thread", "sleep")),
                _ => None,
            }
        }
    }

    fn read(out: &mut ChunkWriter) -> Recording {
        let mut bytes = encode_file_start(&Header::default());
        bytes.extend(out.finish());
        Recording::from_bytes(&bytes).unwrap()
    }

    #[test]
    fn stacks_resolve_once_and_read_back_with_lines() {
        let (mut symbols, mut out, mut calls) = (Symbols::default(), ChunkWriter::new(), 0);
        let mut resolve = resolver(&mut calls);
        let a = symbols.stack(&mut out, [(1, 6), (2, 0)].into_iter(), &mut resolve);
        let b = symbols.stack(&mut out, [(1, 6), (2, 0)].into_iter(), &mut resolve);
        let c = symbols.stack(&mut out, [(1, 1), (2, 0)].into_iter(), &mut resolve);
        drop(resolve);
        assert_eq!((a, b, c), (1, 1, 2));
        assert_eq!(calls, 2, "each jmethodID is resolved once");
        let rec = read(&mut out);
        let top = rec.stack(StackId(a))[0];
        assert_eq!(rec.frame_label(&top), "demo.Hot.spin:12");
        assert_eq!(
            rec.frame_label(&rec.stack(StackId(c))[0]),
            "demo.Hot.spin:10"
        );
        assert_eq!(rec.stack(StackId(a))[1].line, 10);
    }

    #[test]
    fn native_and_unloaded_methods_get_their_kinds() {
        let (mut symbols, mut out, mut calls) = (Symbols::default(), ChunkWriter::new(), 0);
        let mut resolve = resolver(&mut calls);
        let id = symbols.stack(
            &mut out,
            [(3, -3), (99, 4), (2, 0)].into_iter(),
            &mut resolve,
        );
        drop(resolve);
        let rec = read(&mut out);
        let frames = rec.stack(StackId(id));
        assert_eq!(frames[0].kind, FrameKind::Native);
        assert_eq!(rec.method_label(frames[0].method), "java.lang.Thread.sleep");
        assert_eq!(
            (frames[1].method, frames[1].kind),
            (MethodId::NONE, FrameKind::Unknown)
        );
        assert_eq!(symbols.unresolved(), 1);
        assert!(symbols.is_native(3) && !symbols.is_native(2) && !symbols.is_native(99));
    }

    #[test]
    fn transient_strings_live_in_the_chunks_that_use_them_and_are_never_kept() {
        let (mut symbols, mut out) = (Symbols::default(), ChunkWriter::new());
        let get = symbols.string(&mut out, "GET");
        let path = symbols.transient_string(&mut out, "/users/1");
        assert_eq!(symbols.transient_string(&mut out, "/users/1"), path);
        assert_eq!(
            symbols.transient_string(&mut out, "GET"),
            get,
            "kept: its id"
        );
        let first = read(&mut out);
        symbols.chunk_written();
        let again = symbols.transient_string(&mut out, "/users/1");
        let post = symbols.string(&mut out, "POST");
        let second = read(&mut out);
        assert!(
            get < path && path < again && again < post,
            "one sequence of ids"
        );
        assert_eq!(first.string(StringId(path)), "/users/1");
        assert_eq!(second.string(StringId(again)), "/users/1");
        assert_eq!(second.string(StringId(post)), "POST");
        assert_eq!(
            second.string(StringId(path)),
            "",
            "declared in its own chunk only"
        );
        let mut cut = ChunkCutter::new(1 << 20);
        symbols.declare_all(&mut cut);
        let mut resent = encode_file_start(&Header::default());
        resent.extend(cut.finish().concat());
        let resent = Recording::from_bytes(&resent).unwrap();
        let named = |id| resent.string(StringId(id)).to_string();
        assert_eq!([named(get), named(post)], ["GET", "POST"]);
        assert_eq!(
            [named(path), named(again)],
            ["", ""],
            "transients are not kept"
        );
        assert_eq!(symbols.string_list.len(), 2, "GET and POST");
        symbols.chunk_written();
        assert!(symbols.transient.is_empty());
    }

    #[test]
    fn declare_all_alone_defines_what_earlier_chunks_did() {
        let (mut symbols, mut out, mut calls) = (Symbols::default(), ChunkWriter::new(), 0);
        let mut resolve = resolver(&mut calls);
        let a = symbols.stack(&mut out, [(1, 6), (2, 0)].into_iter(), &mut resolve);
        let first = out.finish();
        let b = symbols.stack(&mut out, [(3, -3), (2, 0)].into_iter(), &mut resolve);
        drop(resolve);
        let second = out.finish();
        let mut cut = ChunkCutter::new(64);
        symbols.declare_all(&mut cut);
        let dictionary = cut.finish();
        assert!(dictionary.len() > 1, "a small limit cuts several chunks");

        let mut full = encode_file_start(&Header::default());
        full.extend(first.iter().chain(&second));
        let full = Recording::from_bytes(&full).unwrap();
        let mut resent = encode_file_start(&Header::default());
        resent.extend(dictionary.concat());
        let resent = Recording::from_bytes(&resent).unwrap();
        assert!(resent.damage.is_none());
        for id in [a, b] {
            assert_eq!(resent.stack(StackId(id)), full.stack(StackId(id)));
            let labels = |r: &Recording| -> Vec<String> {
                r.stack(StackId(id))
                    .iter()
                    .map(|f| r.frame_label(f))
                    .collect()
            };
            assert_eq!(labels(&resent), labels(&full));
        }
        assert_eq!(resent.strings, full.strings);
        assert_eq!(resent.methods, full.methods);
        assert_eq!(resent.classes, full.classes);
    }
}
