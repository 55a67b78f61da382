//! Probe insertion: an entry probe at offset 0, an exit probe before every return
//! and a catch-all handler (appended, last in the exception table) that calls the
//! throw probe and rethrows. Methods that cannot be rewritten safely are left as they
//! are, with a [`Reason`].

use std::collections::BTreeMap;

use crate::class::{Attribute, ClassFile, ACC_STATIC};
use crate::code::{CodeAttribute, ExceptionEntry};
use crate::frames::{decode_stack_map, encode_stack_map, initial_locals, to_entries, Frame, VType};
use crate::insn::{decode, op, Insn, Kind};
use crate::layout::{Insertions, Layout};
use crate::pool::{Constant, ConstantPool};
use crate::tables::{relocate_line_numbers, relocate_local_variables, relocate_type_annotations};
use crate::typeflow::{step, Context, State, Step};
use crate::ClassError;

/// The descriptor every probe method must have: it takes the method id.
pub const PROBE_DESCRIPTOR: &str = "(I)V";

/// The static probe methods the rewritten code calls, each `(I)V`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probes {
    /// Internal name of the class holding the probes (`jscope/Trace`).
    pub class: String,
    pub enter: String,
    pub exit: String,
    pub exit_throw: String,
}

impl Default for Probes {
    fn default() -> Self {
        Probes {
            class: "jscope/Trace".into(),
            enter: "enter".into(),
            exit: "exit".into(),
            exit_throw: "exitThrow".into(),
        }
    }
}

/// Why a selected method was left unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Abstract or native: no code to rewrite.
    NoCode,
    /// Uses jsr/ret (pre-Java-6 finally), whose subroutines this crate does not move.
    Subroutines,
    /// The rewritten code would exceed 65535 bytes.
    CodeTooLarge,
    /// max_stack would exceed 65535.
    StackTooDeep,
    /// The Code attribute or its tables do not parse, or an offset is not on an
    /// instruction boundary.
    MalformedCode,
    /// A Code sub-attribute that holds code offsets this crate does not relocate.
    UnrelocatableAttribute(String),
    /// A constructor without exactly one call that initialises `this`.
    ConstructorShape,
    /// The type interpreter could not follow the code to build a needed frame.
    Untypable { offset: u32 },
    /// No room left in the constant pool for the probe references.
    ConstantPoolFull,
    /// The class is the probe class itself: probing it would recurse forever.
    ProbeClass,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Instrumented(u32),
    Skipped(Reason),
}

/// What happened to one selected method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodOutcome {
    pub name: String,
    pub descriptor: String,
    pub outcome: Outcome,
}

/// The result of [`instrument`]: new class bytes when any method changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instrumented {
    pub bytes: Option<Vec<u8>>,
    /// One entry per method `select` chose, in class file order.
    pub methods: Vec<MethodOutcome>,
}

/// Code sub-attributes with code offsets that are refused rather than relocated: the
/// CLDC preverifier's StackMap (never loaded by a current JDK in a way that matters).
const UNRELOCATABLE: [&str; 1] = ["StackMap"];

/// Instruments every method for which `select(class, method, descriptor)` returns an
/// id. Fails only when the class itself cannot be read or written.
pub fn instrument(
    class_bytes: &[u8],
    select: impl Fn(&str, &str, &str) -> Option<u32>,
    probes: &Probes,
) -> Result<Instrumented, ClassError> {
    let mut class = ClassFile::parse(class_bytes)?;
    let class_name = class.name()?;
    let mut methods = Vec::new();
    let mut changed = false;
    let mut refs = None;
    for index in 0..class.methods.len() {
        let name = class.pool.utf8(class.methods[index].name_index)?;
        let descriptor = class.pool.utf8(class.methods[index].descriptor_index)?;
        let Some(id) = select(&class_name, &name, &descriptor) else {
            continue;
        };
        let target = MethodTarget {
            class: &class_name,
            name: &name,
            descriptor: &descriptor,
            index,
            id,
        };
        let result = if class_name == probes.class {
            Err(Reason::ProbeClass)
        } else {
            instrument_method(&mut class, &target, probes, &mut refs)
        };
        let outcome = match result {
            Ok(()) => {
                changed = true;
                Outcome::Instrumented(id)
            }
            Err(reason) => Outcome::Skipped(reason),
        };
        methods.push(MethodOutcome {
            name,
            descriptor,
            outcome,
        });
    }
    let bytes = if changed {
        Some(class.to_bytes()?)
    } else {
        None
    };
    Ok(Instrumented { bytes, methods })
}

struct MethodTarget<'a> {
    class: &'a str,
    name: &'a str,
    descriptor: &'a str,
    index: usize,
    id: u32,
}

fn instrument_method(
    class: &mut ClassFile,
    m: &MethodTarget,
    probes: &Probes,
    refs: &mut Option<ProbeRefs>,
) -> Result<(), Reason> {
    let (code_at, code, insns) = method_code(class, m.index)?;
    let analysis = MethodAnalysis::new(class, m, &code, &insns)?;
    let refs = match refs {
        Some(r) => *r,
        None => *refs.insert(ProbeRefs::new(&mut class.pool, probes)?),
    };
    let snippets = ProbeSnippets::new(&mut class.pool, refs, m.id)?;
    let ins = Insertions {
        entry: &snippets.entry,
        before_return: &snippets.exit,
        tail: &snippets.handler,
    };
    let rewritten = analysis.rewrite(&mut class.pool, &ins, true)?;
    class.methods[m.index].attributes[code_at].info =
        rewritten.to_bytes().map_err(|_| Reason::CodeTooLarge)?;
    Ok(())
}

/// A method's Code attribute (its index among the method's attributes, and
/// parsed) and its instructions, when this crate can rewrite them.
fn method_code(
    class: &ClassFile,
    method: usize,
) -> Result<(usize, CodeAttribute, Vec<Insn>), Reason> {
    let code_at = code_attribute_index(class, method).ok_or(Reason::NoCode)?;
    let code = CodeAttribute::parse(&class.methods[method].attributes[code_at].info)
        .map_err(|_| Reason::MalformedCode)?;
    let insns = decode(&code.code).map_err(|_| Reason::MalformedCode)?;
    if insns.iter().any(|i| i.kind == Kind::Subroutine) {
        return Err(Reason::Subroutines);
    }
    Ok((code_at, code, insns))
}

fn code_attribute_index(class: &ClassFile, method: usize) -> Option<usize> {
    class.methods[method]
        .attributes
        .iter()
        .position(|a| class.pool.utf8(a.name_index).is_ok_and(|n| n == "Code"))
}

/// Constant pool indices of the three probe methods, resolved once per class.
#[derive(Clone, Copy)]
struct ProbeRefs {
    enter: u16,
    exit: u16,
    exit_throw: u16,
}

impl ProbeRefs {
    fn new(pool: &mut ConstantPool, probes: &Probes) -> Result<Self, Reason> {
        let mut method = |name: &str| {
            pool.add_method_ref(&probes.class, name, PROBE_DESCRIPTOR)
                .map_err(|_| Reason::ConstantPoolFull)
        };
        Ok(ProbeRefs {
            enter: method(&probes.enter)?,
            exit: method(&probes.exit)?,
            exit_throw: method(&probes.exit_throw)?,
        })
    }
}

/// The probe calls as bytecode, for one method id.
struct ProbeSnippets {
    entry: Vec<u8>,
    exit: Vec<u8>,
    handler: Vec<u8>,
}

impl ProbeSnippets {
    fn new(pool: &mut ConstantPool, refs: ProbeRefs, id: u32) -> Result<Self, Reason> {
        let push = push_int(id as i32, pool)?;
        let call = |method: u16| {
            let mut out = push.clone();
            out.push(op::INVOKESTATIC);
            out.extend_from_slice(&method.to_be_bytes());
            out
        };
        let mut handler = call(refs.exit_throw);
        handler.push(op::ATHROW);
        Ok(ProbeSnippets {
            entry: call(refs.enter),
            exit: call(refs.exit),
            handler,
        })
    }
}

/// The shortest instruction that pushes `v`.
fn push_int(v: i32, pool: &mut ConstantPool) -> Result<Vec<u8>, Reason> {
    Ok(match v {
        -1..=5 => vec![(op::ICONST_M1 as i32 + 1 + v) as u8],
        -128..=127 => vec![op::BIPUSH, v as u8],
        -32768..=32767 => {
            let [hi, lo] = (v as i16).to_be_bytes();
            vec![op::SIPUSH, hi, lo]
        }
        _ => {
            let index = pool
                .find_or_add(Constant::Integer(v))
                .map_err(|_| Reason::ConstantPoolFull)?;
            match u8::try_from(index) {
                Ok(small) => vec![op::LDC, small],
                Err(_) => {
                    let [hi, lo] = index.to_be_bytes();
                    vec![op::LDC_W, hi, lo]
                }
            }
        }
    })
}

/// Everything learnt from the original method before rewriting it.
struct MethodAnalysis<'a> {
    code: &'a CodeAttribute,
    insns: &'a [Insn],
    initial: Vec<VType>,
    /// Decoded frames by old offset; None when the method carries no frames and
    /// must not get any (class files before 50, or 50 relying on the old verifier).
    frames: Option<BTreeMap<u32, Frame>>,
    /// Old offset where the catch-all range starts (after super()/this() in constructors).
    body_start: u32,
    this_class: String,
    attribute_names: Vec<String>,
}

impl<'a> MethodAnalysis<'a> {
    fn new(
        class: &ClassFile,
        m: &MethodTarget,
        code: &'a CodeAttribute,
        insns: &'a [Insn],
    ) -> Result<Self, Reason> {
        let pool = &class.pool;
        let attribute_names = code
            .attributes
            .iter()
            .map(|a| pool.utf8(a.name_index))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| Reason::MalformedCode)?;
        if let Some(name) = attribute_names
            .iter()
            .find(|n| UNRELOCATABLE.contains(&n.as_str()))
        {
            return Err(Reason::UnrelocatableAttribute(name.clone()));
        }
        let is_static = class.methods[m.index].access & ACC_STATIC != 0;
        let initial = initial_locals(m.class, m.name, m.descriptor, is_static)
            .ok_or(Reason::MalformedCode)?;
        let stack_map = attribute_names.iter().position(|n| n == "StackMapTable");
        let frames = match stack_map {
            Some(i) => Some(decode_frames(&code.attributes[i].info, pool, &initial)?),
            None if class.major >= 51 => Some(BTreeMap::new()),
            None => None,
        };
        let mut analysis = MethodAnalysis {
            code,
            insns,
            initial,
            frames,
            body_start: 0,
            this_class: m.class.to_string(),
            attribute_names,
        };
        if m.name == "<init>" && m.class != "java/lang/Object" {
            analysis.body_start = analysis.find_this_initialised(pool)?;
        }
        Ok(analysis)
    }

    fn context<'p>(&'p self, pool: &'p ConstantPool) -> Context<'p> {
        Context {
            code: &self.code.code,
            pool,
            this_class: &self.this_class,
        }
    }

    fn start_state(&self) -> State {
        State::from_frame(&self.initial, &[], usize::from(self.code.max_locals))
    }

    fn frame_state(&self, offset: u32) -> Option<State> {
        let f = self.frames.as_ref()?.get(&offset)?;
        Some(State::from_frame(
            &f.locals,
            &f.stack,
            usize::from(self.code.max_locals),
        ))
    }

    /// The offset just after the one `invokespecial <init>` whose receiver is the
    /// uninitialised `this`. With frames the whole method is walked, so a second such
    /// call on another path is caught; without frames (old class files) the walk stops
    /// at the first and refuses branches before it, as it cannot follow them.
    fn find_this_initialised(&self, pool: &ConstantPool) -> Result<u32, Reason> {
        let cx = self.context(pool);
        let precise = self.frames.as_ref().is_some_and(|f| !f.is_empty());
        let mut state = self.start_state();
        let mut found = Vec::new();
        for insn in self.insns {
            if let Some(s) = self.frame_state(insn.offset) {
                state = s;
            }
            let result =
                step(&mut state, insn, &cx).map_err(|u| Reason::Untypable { offset: u.offset })?;
            if result == Step::InitThis {
                found.push(insn.offset + insn.len);
                if !precise {
                    break;
                }
            }
            if !precise && found.is_empty() && transfers_control(insn) {
                return Err(Reason::ConstructorShape);
            }
        }
        match found[..] {
            [after] => Ok(after),
            _ => Err(Reason::ConstructorShape),
        }
    }

    /// The frame after the instruction ending at `offset`, from the nearest frame
    /// before it: the straight-line walk the verifier itself does.
    fn infer_frame(&self, offset: u32, pool: &ConstantPool) -> Result<Frame, Reason> {
        let cx = self.context(pool);
        let last = self.insns.partition_point(|i| i.offset < offset) - 1;
        let from = self
            .frames
            .as_ref()
            .and_then(|f| f.range(..=self.insns[last].offset).next_back())
            .map_or(0, |(o, _)| *o);
        let mut state = self.start_state();
        for insn in self
            .insns
            .iter()
            .filter(|i| i.offset >= from && i.offset <= self.insns[last].offset)
        {
            if let Some(s) = self.frame_state(insn.offset) {
                state = s;
            }
            step(&mut state, insn, &cx).map_err(|u| Reason::Untypable { offset: u.offset })?;
        }
        Ok(Frame {
            offset,
            locals: to_entries(&state.locals),
            stack: to_entries(&state.stack),
        })
    }

    /// The method with `ins` inserted; `catch_all` when `ins.tail` is the
    /// catch-all handler (it gets the last exception row and its frame).
    fn rewrite(
        &self,
        pool: &mut ConstantPool,
        ins: &Insertions,
        catch_all: bool,
    ) -> Result<CodeAttribute, Reason> {
        self.rewrite_with_stack(pool, ins, catch_all, 2)
    }

    /// As [`Self::rewrite`], with `min_stack` operand slots at least (what the
    /// inserted entry code needs on an empty stack).
    fn rewrite_with_stack(
        &self,
        pool: &mut ConstantPool,
        ins: &Insertions,
        catch_all: bool,
        min_stack: u16,
    ) -> Result<CodeAttribute, Reason> {
        let code_len = self.code.code.len() as u32;
        let layout = Layout::compute(self.insns, code_len, ins);
        let new_code = layout.emit(self.insns, &self.code.code, ins);
        if new_code.len() > usize::from(u16::MAX) {
            return Err(Reason::CodeTooLarge);
        }
        let exceptions = self.relocate_exceptions(&layout, catch_all)?;
        let attributes = self.relocate_attributes(&layout, pool, catch_all)?;
        let max_stack = self
            .code
            .max_stack
            .checked_add(1)
            .ok_or(Reason::StackTooDeep)?
            .max(min_stack);
        Ok(CodeAttribute {
            max_stack,
            max_locals: self.code.max_locals,
            code: new_code,
            exceptions,
            attributes,
        })
    }

    /// The original rows moved, then the catch-all row last so the method's own
    /// handlers keep priority.
    fn relocate_exceptions(
        &self,
        layout: &Layout,
        catch_all: bool,
    ) -> Result<Vec<ExceptionEntry>, Reason> {
        let map = |old: u16| -> Result<u16, Reason> {
            if !layout.is_boundary(u32::from(old)) {
                return Err(Reason::MalformedCode);
            }
            Ok(layout.new_offset(u32::from(old)) as u16)
        };
        let mut out = self
            .code
            .exceptions
            .iter()
            .map(|e| {
                Ok(ExceptionEntry {
                    start: map(e.start)?,
                    end: map(e.end)?,
                    handler: map(e.handler)?,
                    catch_type: e.catch_type,
                })
            })
            .collect::<Result<Vec<_>, Reason>>()?;
        if !catch_all {
            return Ok(out);
        }
        let end = layout.body_end as u16;
        out.push(ExceptionEntry {
            start: layout.new_offset(self.body_start) as u16,
            end,
            handler: end,
            catch_type: 0,
        });
        Ok(out)
    }

    fn relocate_attributes(
        &self,
        layout: &Layout,
        pool: &mut ConstantPool,
        catch_all: bool,
    ) -> Result<Vec<Attribute>, Reason> {
        let mut out = Vec::with_capacity(self.code.attributes.len() + 1);
        for (attr, name) in self.code.attributes.iter().zip(&self.attribute_names) {
            let info = match name.as_str() {
                "LineNumberTable" => relocate_line_numbers(&attr.info, layout),
                "LocalVariableTable" | "LocalVariableTypeTable" => {
                    relocate_local_variables(&attr.info, layout)
                }
                "RuntimeVisibleTypeAnnotations" | "RuntimeInvisibleTypeAnnotations" => {
                    relocate_type_annotations(&attr.info, layout)
                }
                "StackMapTable" => continue,
                _ => Some(attr.info.clone()),
            };
            let info = info.ok_or(Reason::MalformedCode)?;
            out.push(Attribute {
                name_index: attr.name_index,
                info,
            });
        }
        if self.frames.is_some() {
            let name_index = pool
                .add_utf8("StackMapTable")
                .map_err(|_| Reason::ConstantPoolFull)?;
            out.push(Attribute {
                name_index,
                info: self.stack_map(layout, pool, catch_all)?,
            });
        }
        Ok(out)
    }

    /// The old frames at their new offsets, frames for the targets that widening
    /// created, and the catch-all handler's frame (no locals, a Throwable on the stack:
    /// every local type is assignable to an absent one).
    fn stack_map(
        &self,
        layout: &Layout,
        pool: &mut ConstantPool,
        catch_all: bool,
    ) -> Result<Vec<u8>, Reason> {
        let mut frames = self.frames.clone().unwrap_or_default();
        for fallthrough in layout.widened_fallthroughs(self.insns) {
            if let std::collections::btree_map::Entry::Vacant(slot) = frames.entry(fallthrough) {
                slot.insert(self.infer_frame(fallthrough, pool)?);
            }
        }
        if !frames.values().all(|f| frame_offsets_valid(f, layout)) {
            return Err(Reason::MalformedCode);
        }
        let mut moved: Vec<Frame> = frames
            .values()
            .map(|f| f.relocated(|o| layout.new_offset(o)))
            .collect();
        if catch_all {
            moved.push(Frame {
                offset: layout.body_end,
                locals: vec![],
                stack: vec![VType::Object("java/lang/Throwable".into())],
            });
        }
        encode_stack_map(&moved, &self.initial, pool).map_err(|e| match e {
            ClassError::ConstantPoolFull => Reason::ConstantPoolFull,
            _ => Reason::CodeTooLarge,
        })
    }
}

/// Inserts `aload_0; invokestatic call` at the entry of each instance method
/// (constructors excepted) that `select(name, descriptor)` picks: the method
/// hands `this` to the static method `call` = (class, name, descriptor taking
/// one object) before its own first instruction; nothing else changes. Methods
/// that cannot be rewritten safely are left as they are. None when no method
/// changed.
pub fn prepend_this_call(
    class_bytes: &[u8],
    select: impl Fn(&str, &str) -> bool,
    call: (&str, &str, &str),
) -> Result<Option<Vec<u8>>, ClassError> {
    let mut class = ClassFile::parse(class_bytes)?;
    let class_name = class.name()?;
    let mut call_ref = None;
    let mut changed = false;
    for index in 0..class.methods.len() {
        let name = class.pool.utf8(class.methods[index].name_index)?;
        let descriptor = class.pool.utf8(class.methods[index].descriptor_index)?;
        if class.methods[index].access & ACC_STATIC != 0
            || name == "<init>"
            || !select(&name, &descriptor)
        {
            continue;
        }
        let Ok((code_at, code, insns)) = method_code(&class, index) else {
            continue;
        };
        let target = MethodTarget {
            class: &class_name,
            name: &name,
            descriptor: &descriptor,
            index,
            id: 0,
        };
        let Ok(analysis) = MethodAnalysis::new(&class, &target, &code, &insns) else {
            continue;
        };
        let method = match call_ref {
            Some(r) => r,
            None => *call_ref.insert(class.pool.add_method_ref(call.0, call.1, call.2)?),
        };
        let [hi, lo] = method.to_be_bytes();
        let entry = [op::ALOAD_0, op::INVOKESTATIC, hi, lo];
        let ins = Insertions {
            entry: &entry,
            before_return: &[],
            tail: &[],
        };
        let Ok(rewritten) = analysis.rewrite(&mut class.pool, &ins, false) else {
            continue;
        };
        class.methods[index].attributes[code_at].info = rewritten.to_bytes()?;
        changed = true;
    }
    Ok(if changed {
        Some(class.to_bytes()?)
    } else {
        None
    })
}

/// The descriptor of the entry probe [`call_with_arguments`] inserts: the
/// site's id and the method's local slots at entry.
pub const ARGUMENTS_PROBE_DESCRIPTOR: &str = "(I[Ljava/lang/Object;)V";

/// Where [`call_with_arguments`] sends a chosen method's entry and exits:
/// the internal name of a class with three static methods, `enter`
/// ([`ARGUMENTS_PROBE_DESCRIPTOR`]), `exit` and `thrown` ([`PROBE_DESCRIPTOR`]).
pub struct ArgumentProbes<'a> {
    pub class: &'a str,
    pub enter: &'a str,
    pub exit: &'a str,
    pub thrown: &'a str,
}

/// What [`call_with_arguments`] made: the new class bytes and the (name,
/// descriptor) of each method rewritten.
pub type CallsInserted = (Vec<u8>, Vec<(String, String)>);

/// A method [`call_with_arguments`] chose to rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSite {
    /// Handed to both probes.
    pub id: i32,
    /// Whether the exit probe is called before each return too, and the thrown
    /// probe when an exception leaves the method.
    pub returns: bool,
}

/// Inserts, at the entry of each method `select(name, descriptor)` picks, a
/// call to the entry probe with the site's id and an `Object[]` of the
/// method's local slots as they are at entry: element `k` holds slot `k`'s
/// value (primitives boxed: `Integer` for int, short, char, byte and boolean,
/// `Long`, `Float`, `Double`, each in its first slot; the second slot of a long
/// or double, and a constructor's uninitialised `this`, are null). When the site
/// asks for returns, the exit probe gets its id before every return
/// instruction, and the thrown probe when an exception leaves the method (a
/// catch-all handler, last in the exception table, that calls it and rethrows;
/// in a constructor it covers the code after `super()` or `this()`). Nothing
/// else changes. Returns the new class bytes and the (name, descriptor) of each
/// method rewritten; methods that cannot be rewritten safely are left out.
/// None when no method changed.
pub fn call_with_arguments(
    class_bytes: &[u8],
    select: impl Fn(&str, &str) -> Option<CallSite>,
    probes: &ArgumentProbes,
) -> Result<Option<CallsInserted>, ClassError> {
    let mut class = ClassFile::parse(class_bytes)?;
    let class_name = class.name()?;
    let mut done = Vec::new();
    for index in 0..class.methods.len() {
        let name = class.pool.utf8(class.methods[index].name_index)?;
        let descriptor = class.pool.utf8(class.methods[index].descriptor_index)?;
        let Some(site) = select(&name, &descriptor) else {
            continue;
        };
        let target = MethodTarget {
            class: &class_name,
            name: &name,
            descriptor: &descriptor,
            index,
            id: 0,
        };
        if call_method(&mut class, &target, site, probes).is_ok() {
            done.push((name, descriptor));
        }
    }
    if done.is_empty() {
        return Ok(None);
    }
    Ok(Some((class.to_bytes()?, done)))
}

fn call_method(
    class: &mut ClassFile,
    m: &MethodTarget,
    site: CallSite,
    probes: &ArgumentProbes,
) -> Result<(), Reason> {
    let (code_at, code, insns) = method_code(class, m.index)?;
    let analysis = MethodAnalysis::new(class, m, &code, &insns)?;
    let pool = &mut class.pool;
    let full = |_| Reason::ConstantPoolFull;
    let id = push_int(site.id, pool)?;
    let mut entry = id.clone();
    entry.extend(push_int(
        analysis.initial.iter().map(slots_of).sum::<i32>(),
        pool,
    )?);
    let object = pool.add_class("java/lang/Object").map_err(full)?;
    entry.push(op::ANEWARRAY);
    entry.extend_from_slice(&object.to_be_bytes());
    let mut slot = 0;
    for t in &analysis.initial {
        if let Some((load, boxing)) = load_and_box(t) {
            entry.push(op::DUP);
            entry.extend(push_int(slot, pool)?);
            entry.extend(wide_load(load, slot));
            if let Some((class, descriptor)) = boxing {
                let valueof = pool
                    .add_method_ref(class, "valueOf", descriptor)
                    .map_err(full)?;
                entry.push(op::INVOKESTATIC);
                entry.extend_from_slice(&valueof.to_be_bytes());
            }
            entry.push(op::AASTORE);
        }
        slot += slots_of(t);
    }
    let call = |pool: &mut ConstantPool, name: &str, descriptor: &str| {
        let method = pool
            .add_method_ref(probes.class, name, descriptor)
            .map_err(full)?;
        let [hi, lo] = method.to_be_bytes();
        Ok::<_, Reason>([op::INVOKESTATIC, hi, lo])
    };
    entry.extend(call(pool, probes.enter, ARGUMENTS_PROBE_DESCRIPTOR)?);
    let (mut exit, mut thrown) = (Vec::new(), Vec::new());
    if site.returns {
        exit = id.clone();
        exit.extend(call(pool, probes.exit, PROBE_DESCRIPTOR)?);
        thrown = id;
        thrown.extend(call(pool, probes.thrown, PROBE_DESCRIPTOR)?);
        thrown.push(op::ATHROW);
    }
    let ins = Insertions {
        entry: &entry,
        before_return: &exit,
        tail: &thrown,
    };
    // id, array, array, index, and a long or double: 6 slots.
    let rewritten = analysis.rewrite_with_stack(pool, &ins, site.returns, 6)?;
    class.methods[m.index].attributes[code_at].info =
        rewritten.to_bytes().map_err(|_| Reason::CodeTooLarge)?;
    Ok(())
}

fn slots_of(t: &VType) -> i32 {
    if t.is_wide() {
        2
    } else {
        1
    }
}

/// The load opcode of a local of type `t` and the `valueOf` (class,
/// descriptor) that boxes it; None for what is not passed (an uninitialised
/// `this`).
fn load_and_box(t: &VType) -> Option<(u8, Option<(&'static str, &'static str)>)> {
    Some(match t {
        VType::Int => (
            op::ILOAD,
            Some(("java/lang/Integer", "(I)Ljava/lang/Integer;")),
        ),
        VType::Long => (op::LLOAD, Some(("java/lang/Long", "(J)Ljava/lang/Long;"))),
        VType::Float => (op::FLOAD, Some(("java/lang/Float", "(F)Ljava/lang/Float;"))),
        VType::Double => (
            op::DLOAD,
            Some(("java/lang/Double", "(D)Ljava/lang/Double;")),
        ),
        VType::Object(_) | VType::Null => (op::ALOAD, None),
        VType::Top | VType::UninitThis | VType::Uninit(_) => return None,
    })
}

/// `load slot`, with `wide` when the slot does not fit a byte.
fn wide_load(load: u8, slot: i32) -> Vec<u8> {
    match u8::try_from(slot) {
        Ok(s) => vec![load, s],
        Err(_) => {
            let [hi, lo] = (slot as u16).to_be_bytes();
            vec![op::WIDE, load, hi, lo]
        }
    }
}

fn decode_frames(
    info: &[u8],
    pool: &ConstantPool,
    initial: &[VType],
) -> Result<BTreeMap<u32, Frame>, Reason> {
    let frames = decode_stack_map(info, pool, initial).map_err(|_| Reason::MalformedCode)?;
    Ok(frames.into_iter().map(|f| (f.offset, f)).collect())
}

/// A frame sits on an instruction, and so does every `new` it refers to.
fn frame_offsets_valid(f: &Frame, layout: &Layout) -> bool {
    let on_insn = |o: u32| layout.is_boundary(o) && o < layout.old_len();
    on_insn(f.offset)
        && f.locals.iter().chain(&f.stack).all(|v| match v {
            VType::Uninit(o) => on_insn(*o),
            _ => true,
        })
}

fn transfers_control(insn: &Insn) -> bool {
    matches!(
        insn.kind,
        Kind::Branch { .. } | Kind::TableSwitch { .. } | Kind::LookupSwitch { .. }
    )
}
