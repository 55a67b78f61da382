//! Frames a profile shows that the recording does not hold: the allocated
//! class at the leaf of an allocation stack, `[no_stack]` for a sample
//! without frames. They are added to the recording as the agent adds its own
//! stub, class and marker frames, as methods of the class entry with the
//! empty name (code of no library), so every reader labels them by their name
//! alone.

use std::collections::HashMap;

use jscope_format::{
    ClassDef, ClassId, Frame, FrameKind, MethodDef, MethodId, Recording, StackId, StringId,
};

use crate::labels::NO_STACK;

/// `ACC_NATIVE`: with an empty signature, marks a method as code of a library.
const NATIVE: u32 = 0x100;

/// Allocation stacks as async-profiler's and JFR's users read them: the
/// allocated class (`java.lang.String`, `byte[]`) as the leaf frame, of kind
/// [`FrameKind::Class`], above the method that allocated it. Each stack and
/// class pair becomes one stack of the recording, added on first use.
#[derive(Debug, Default)]
pub struct AllocationStacks {
    stacks: HashMap<(u32, String), StackId>,
    frames: NamedFrames,
}

impl AllocationStacks {
    pub fn new() -> AllocationStacks {
        AllocationStacks::default()
    }

    /// The stack shown for an allocation of `class` at `stack`: `stack` itself
    /// when the class is not known.
    pub fn stack(&mut self, rec: &mut Recording, stack: StackId, class: ClassId) -> StackId {
        let name = match rec.class(class) {
            Some(c) if !class.is_none() => rec.string(c.name).to_string(),
            _ => return stack,
        };
        self.stack_named(rec, stack, &name)
    }

    /// [`AllocationStacks::stack`] of a class given by name (Java notation),
    /// for stores that keep class names rather than ids.
    pub fn stack_named(&mut self, rec: &mut Recording, stack: StackId, class: &str) -> StackId {
        if class.is_empty() {
            return stack;
        }
        let key = (stack.0, class.to_string());
        if let Some(&id) = self.stacks.get(&key) {
            return id;
        }
        let mut frames = vec![self.frames.frame(rec, class, FrameKind::Class)];
        frames.extend_from_slice(rec.stack(stack));
        let id = add_stack(rec, frames);
        self.stacks.insert(key, id);
        id
    }
}

/// Gives every cpu and wall sample and snapshot thread without a frame the
/// one-frame stack `[no_stack]` (kind unknown), as every view shows them, for
/// writers of the recording itself (JFR), whose readers would otherwise show
/// nothing for them.
pub fn fill_empty_stacks(rec: &mut Recording) {
    let empty = |rec: &Recording, id: StackId| rec.stack(id).is_empty();
    let mut no_stack = None;
    let mut shown = |rec: &mut Recording| -> StackId {
        *no_stack.get_or_insert_with(|| {
            let frame = NamedFrames::default().frame(rec, NO_STACK, FrameKind::Unknown);
            add_stack(rec, vec![frame])
        })
    };
    for i in 0..rec.samples.len() {
        if empty(rec, rec.samples[i].stack) {
            rec.samples[i].stack = shown(rec);
        }
    }
    for i in 0..rec.snapshots.len() {
        for j in 0..rec.snapshots[i].threads.len() {
            if empty(rec, rec.snapshots[i].threads[j].stack) {
                rec.snapshots[i].threads[j].stack = shown(rec);
            }
        }
    }
}

/// Methods named by what they stand for, of the class entry with the empty
/// name, added to a recording once each.
#[derive(Debug, Default)]
struct NamedFrames {
    library: Option<ClassId>,
    methods: HashMap<String, MethodId>,
}

impl NamedFrames {
    fn frame(&mut self, rec: &mut Recording, name: &str, kind: FrameKind) -> Frame {
        let method = match self.methods.get(name) {
            Some(&m) => m,
            None => {
                let m = self.add_method(rec, name);
                self.methods.insert(name.to_string(), m);
                m
            }
        };
        Frame {
            method,
            bci: -1,
            line: 0,
            kind,
        }
    }

    fn add_method(&mut self, rec: &mut Recording, name: &str) -> MethodId {
        let class = *self.library.get_or_insert_with(|| library(rec));
        let name = add_string(rec, name);
        let id = MethodId(next_index(rec.methods.len()) as u32);
        put(
            &mut rec.methods,
            id.index(),
            MethodDef {
                id,
                class,
                name,
                signature: StringId::NONE,
                modifiers: NATIVE,
            },
        );
        id
    }
}

/// The recording's class entry with the empty name, added when it has none.
fn library(rec: &mut Recording) -> ClassId {
    let existing = rec
        .classes
        .iter()
        .flatten()
        .find(|c| !c.id.is_none() && rec.string(c.name).is_empty());
    if let Some(c) = existing {
        return c.id;
    }
    let id = ClassId(next_index(rec.classes.len()) as u32);
    put(
        &mut rec.classes,
        id.index(),
        ClassDef {
            id,
            name: StringId::NONE,
            source_file: StringId::NONE,
        },
    );
    id
}

fn add_string(rec: &mut Recording, s: &str) -> StringId {
    if rec.strings.is_empty() {
        rec.strings.push(String::new());
    }
    rec.strings.push(s.to_string());
    StringId(rec.strings.len() as u32 - 1)
}

fn add_stack(rec: &mut Recording, frames: Vec<Frame>) -> StackId {
    let id = StackId(next_index(rec.stacks.len()) as u32);
    put(&mut rec.stacks, id.index(), frames);
    id
}

/// The next free index of a table whose index 0 means none.
fn next_index(len: usize) -> usize {
    len.max(1)
}

fn put<T>(v: &mut Vec<Option<T>>, i: usize, value: T) {
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(value);
}
