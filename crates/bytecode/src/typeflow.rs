//! A straight-line type interpreter over verification types, the same way the
//! verifier walks a basic block: it starts from a stack map frame and applies each
//! instruction. Used to build a frame where none was (after a widened branch) and to
//! find the call that initialises `this` in a constructor.

use crate::bytes::be_u16;
use crate::frames::{parse_field_type, parse_method_descriptor, to_slots, VType};
use crate::insn::{op, Insn};
use crate::pool::{Constant, ConstantPool};

/// The interpreter met something it cannot type (a malformed or unusual method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Untypable {
    pub offset: u32,
}

/// Locals and stack in slot form: a long or double is followed by a Top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

/// What the interpreter needs besides the state.
pub struct Context<'a> {
    pub code: &'a [u8],
    pub pool: &'a ConstantPool,
    pub this_class: &'a str,
}

impl State {
    /// The state a frame describes, with locals padded to `max_locals`.
    pub fn from_frame(locals: &[VType], stack: &[VType], max_locals: usize) -> State {
        let mut slots = to_slots(locals);
        if slots.len() < max_locals {
            slots.resize(max_locals, VType::Top);
        }
        State {
            locals: slots,
            stack: to_slots(stack),
        }
    }

    fn push(&mut self, v: VType) {
        let wide = v.is_wide();
        self.stack.push(v);
        if wide {
            self.stack.push(VType::Top);
        }
    }

    fn pop_slots(&mut self, n: usize) -> Option<Vec<VType>> {
        let at = self.stack.len().checked_sub(n)?;
        Some(self.stack.split_off(at))
    }

    /// Pops one value (two slots for a long or double).
    fn pop(&mut self) -> Option<VType> {
        let top = self.stack.pop()?;
        if top == VType::Top && self.stack.last().is_some_and(VType::is_wide) {
            return self.stack.pop();
        }
        Some(top)
    }

    fn pop_n(&mut self, n: usize) -> Option<()> {
        (0..n).try_for_each(|_| self.pop().map(drop))
    }

    fn load(&mut self, index: usize) -> Option<()> {
        let v = self.locals.get(index)?.clone();
        self.push(v);
        Some(())
    }

    fn store(&mut self, index: usize) -> Option<()> {
        let v = self.pop()?;
        let wide = v.is_wide();
        if self.locals.len() < index + 1 + usize::from(wide) {
            return None;
        }
        // Overwriting the second half of a long kills the long.
        if index > 0 && self.locals[index - 1].is_wide() {
            self.locals[index - 1] = VType::Top;
        }
        self.locals[index] = v;
        if wide {
            self.locals[index + 1] = VType::Top;
        }
        Some(())
    }

    fn replace_all(&mut self, from: &VType, to: &VType) {
        for v in self.locals.iter_mut().chain(self.stack.iter_mut()) {
            if v == from {
                *v = to.clone();
            }
        }
    }
}

/// The effect of an `invokespecial <init>` the interpreter saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Plain,
    /// This instruction initialised `this` (the super()/this() call of a constructor).
    InitThis,
}

/// Applies one instruction to `state`.
pub fn step(state: &mut State, insn: &Insn, cx: &Context) -> Result<Step, Untypable> {
    let fail = Untypable {
        offset: insn.offset,
    };
    step_inner(state, insn, cx).ok_or(fail)
}

fn step_inner(s: &mut State, insn: &Insn, cx: &Context) -> Option<Step> {
    let pc = insn.offset as usize;
    let code = cx.code;
    let u16_at = |at: usize| be_u16(code, pc + at);
    let o = insn.opcode;
    match o {
        0x00 => {}
        op::ACONST_NULL => s.push(VType::Null),
        0x02..=0x08 | op::BIPUSH | op::SIPUSH => s.push(VType::Int),
        0x09 | 0x0a => s.push(VType::Long),
        0x0b..=0x0d => s.push(VType::Float),
        0x0e | 0x0f => s.push(VType::Double),
        op::LDC => s.push(ldc_type(cx.pool, u16::from(code[pc + 1]))?),
        op::LDC_W | op::LDC2_W => s.push(ldc_type(cx.pool, u16_at(1))?),
        0x15..=0x19 => s.load(usize::from(code[pc + 1]))?,
        0x1a..=0x2d => s.load(usize::from((o - 0x1a) % 4))?,
        0x2e..=0x35 => array_load(s, o)?,
        0x36..=0x3a => s.store(usize::from(code[pc + 1]))?,
        0x3b..=0x4e => s.store(usize::from((o - 0x3b) % 4))?,
        0x4f..=0x56 => s.pop_n(3)?,
        0x57..=0x5f => stack_op(s, o)?,
        0x60..=0x83 => arithmetic(s, o)?,
        op::IINC => {}
        0x85..=0x93 => conversion(s, o)?,
        0x94..=0x98 => {
            s.pop_n(2)?;
            s.push(VType::Int);
        }
        0x99..=0x9e | op::IFNULL | op::IFNONNULL => s.pop_n(1)?,
        0x9f..=0xa6 => s.pop_n(2)?,
        op::GOTO | op::GOTO_W => {}
        op::TABLESWITCH | op::LOOKUPSWITCH => s.pop_n(1)?,
        op::IRETURN..=0xb0 => s.pop_n(1)?,
        op::RETURN => {}
        0xb2..=0xb5 => field_op(s, o, cx, u16_at(1))?,
        0xb6..=0xba => return invoke(s, o, cx, u16_at(1)),
        op::NEW => s.push(VType::Uninit(insn.offset)),
        0xbc => {
            s.pop_n(1)?;
            s.push(VType::Object(newarray_type(code[pc + 1])?.to_string()));
        }
        0xbd => {
            s.pop_n(1)?;
            s.push(VType::Object(array_of(
                &cx.pool.class_name(u16_at(1)).ok()?,
            )));
        }
        0xbe => {
            s.pop_n(1)?;
            s.push(VType::Int);
        }
        op::ATHROW | 0xc2 | 0xc3 => s.pop_n(1)?,
        0xc0 => {
            s.pop_n(1)?;
            s.push(VType::Object(cx.pool.class_name(u16_at(1)).ok()?));
        }
        0xc1 => {
            s.pop_n(1)?;
            s.push(VType::Int);
        }
        op::WIDE => wide(s, code, pc)?,
        0xc5 => {
            s.pop_n(usize::from(code[pc + 3]))?;
            s.push(VType::Object(cx.pool.class_name(u16_at(1)).ok()?));
        }
        _ => return None,
    }
    Some(Step::Plain)
}

fn ldc_type(pool: &ConstantPool, index: u16) -> Option<VType> {
    Some(match pool.get(index).ok()? {
        Constant::Integer(_) => VType::Int,
        Constant::Float(_) => VType::Float,
        Constant::Long(_) => VType::Long,
        Constant::Double(_) => VType::Double,
        Constant::String(_) => VType::Object("java/lang/String".into()),
        Constant::Class(_) => VType::Object("java/lang/Class".into()),
        Constant::MethodType(_) => VType::Object("java/lang/invoke/MethodType".into()),
        Constant::MethodHandle { .. } => VType::Object("java/lang/invoke/MethodHandle".into()),
        Constant::Dynamic { .. } => parse_field_type(&pool.dynamic(index).ok()?.1)?.0,
        _ => return None,
    })
}

fn array_load(s: &mut State, o: u8) -> Option<()> {
    s.pop_n(1)?;
    let array = s.pop()?;
    let v = match o {
        0x2e | 0x33..=0x35 => VType::Int,
        0x2f => VType::Long,
        0x30 => VType::Float,
        0x31 => VType::Double,
        _ => match array {
            VType::Null => VType::Null,
            VType::Object(desc) => parse_field_type(desc.strip_prefix('[')?)?.0,
            _ => return None,
        },
    };
    s.push(v);
    Some(())
}

/// pop, pop2, dup*, swap: slot shuffles, exactly as the verifier does them.
fn stack_op(s: &mut State, o: u8) -> Option<()> {
    let take = [1, 2, 1, 2, 3, 2, 3, 4, 2][usize::from(o - 0x57)];
    let v = s.pop_slots(take)?;
    let order: &[usize] = match o {
        0x57 | 0x58 => &[],
        0x59 => &[0, 0],
        0x5a => &[1, 0, 1],
        0x5b => &[2, 0, 1, 2],
        0x5c => &[0, 1, 0, 1],
        0x5d => &[1, 2, 0, 1, 2],
        0x5e => &[2, 3, 0, 1, 2, 3],
        _ => &[1, 0],
    };
    s.stack.extend(order.iter().map(|i| v[*i].clone()));
    Some(())
}

fn arithmetic(s: &mut State, o: u8) -> Option<()> {
    let by_kind = [VType::Int, VType::Long, VType::Float, VType::Double];
    let (pops, result) = match o {
        0x60..=0x73 => (2, by_kind[usize::from(o - 0x60) % 4].clone()),
        0x74..=0x77 => (1, by_kind[usize::from(o - 0x74)].clone()),
        // Shifts, and/or/xor: even opcodes are the int forms.
        _ => (2, if o & 1 == 0 { VType::Int } else { VType::Long }),
    };
    s.pop_n(pops)?;
    s.push(result);
    Some(())
}

fn conversion(s: &mut State, o: u8) -> Option<()> {
    use VType::*;
    let result = [
        Long, Float, Double, Int, Float, Double, Int, Long, Double, Int, Long, Float, Int, Int, Int,
    ][usize::from(o - 0x85)]
    .clone();
    s.pop_n(1)?;
    s.push(result);
    Some(())
}

fn field_op(s: &mut State, o: u8, cx: &Context, index: u16) -> Option<()> {
    let (_, _, desc) = cx.pool.member_ref(index).ok()?;
    let (t, _) = parse_field_type(&desc)?;
    match o {
        0xb2 => s.push(t),
        0xb3 => s.pop_n(1)?,
        0xb4 => {
            s.pop_n(1)?;
            s.push(t);
        }
        _ => s.pop_n(2)?,
    }
    Some(())
}

fn invoke(s: &mut State, o: u8, cx: &Context, index: u16) -> Option<Step> {
    let (name, desc) = if o == 0xba {
        cx.pool.dynamic(index).ok()?
    } else {
        let (_, name, desc) = cx.pool.member_ref(index).ok()?;
        (name, desc)
    };
    let (args, ret) = parse_method_descriptor(&desc)?;
    s.pop_n(args.len())?;
    let mut step = Step::Plain;
    if o != op::INVOKESTATIC && o != 0xba {
        let receiver = s.pop()?;
        if o == op::INVOKESPECIAL && name == "<init>" {
            step = initialise(s, &receiver, cx)?;
        }
    }
    if let Some(t) = ret {
        s.push(t);
    }
    Some(step)
}

/// After `<init>`, every copy of the uninitialised receiver becomes the real type.
fn initialise(s: &mut State, receiver: &VType, cx: &Context) -> Option<Step> {
    match receiver {
        VType::UninitThis => {
            s.replace_all(receiver, &VType::Object(cx.this_class.to_string()));
            Some(Step::InitThis)
        }
        VType::Uninit(at) => {
            let at = *at as usize;
            if cx.code.get(at) != Some(&op::NEW) {
                return None;
            }
            let created = cx.pool.class_name(be_u16(cx.code, at + 1)).ok()?;
            s.replace_all(receiver, &VType::Object(created));
            Some(Step::Plain)
        }
        _ => None,
    }
}

fn wide(s: &mut State, code: &[u8], pc: usize) -> Option<()> {
    let o = code[pc + 1];
    let index = usize::from(be_u16(code, pc + 2));
    match o {
        0x15..=0x19 => s.load(index),
        0x36..=0x3a => s.store(index),
        op::IINC => Some(()),
        _ => None,
    }
}

fn newarray_type(atype: u8) -> Option<&'static str> {
    Some(match atype {
        4 => "[Z",
        5 => "[C",
        6 => "[F",
        7 => "[D",
        8 => "[B",
        9 => "[S",
        10 => "[I",
        11 => "[J",
        _ => return None,
    })
}

/// The descriptor of an array of `class` (an internal name or an array descriptor).
fn array_of(class: &str) -> String {
    if class.starts_with('[') {
        format!("[{class}")
    } else {
        format!("[L{class};")
    }
}
