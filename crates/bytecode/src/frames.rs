//! Verification types, descriptors and the StackMapTable attribute, decoded to
//! absolute offsets with full locals and stack so frames can be moved and re-encoded.

use crate::bytes::{put_len16, put_u16, Reader};
use crate::pool::ConstantPool;
use crate::ClassError;

/// A verification type. Objects are held by internal name (arrays by descriptor), and
/// `Uninit` by the code offset of its `new` instruction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum VType {
    Top,
    Int,
    Float,
    Long,
    Double,
    Null,
    UninitThis,
    Object(String),
    Uninit(u32),
}

impl VType {
    /// Long and double take two local or stack slots.
    pub fn is_wide(&self) -> bool {
        matches!(self, VType::Long | VType::Double)
    }
}

/// A stack map frame: locals and stack as entries (a long is one entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub offset: u32,
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

impl Frame {
    /// Applies `map` to the offset and to every `Uninit` offset.
    pub fn relocated(&self, map: impl Fn(u32) -> u32) -> Frame {
        let fix = |v: &VType| match v {
            VType::Uninit(o) => VType::Uninit(map(*o)),
            other => other.clone(),
        };
        Frame {
            offset: map(self.offset),
            locals: self.locals.iter().map(fix).collect(),
            stack: self.stack.iter().map(fix).collect(),
        }
    }
}

/// Parses one field descriptor at the start of `desc`; returns its type and the rest.
/// Booleans, bytes, chars and shorts are ints to the verifier.
pub fn parse_field_type(desc: &str) -> Option<(VType, &str)> {
    let first = desc.as_bytes().first()?;
    Some(match first {
        b'B' | b'C' | b'I' | b'S' | b'Z' => (VType::Int, &desc[1..]),
        b'F' => (VType::Float, &desc[1..]),
        b'J' => (VType::Long, &desc[1..]),
        b'D' => (VType::Double, &desc[1..]),
        b'L' => {
            let end = desc.find(';')?;
            (VType::Object(desc[1..end].to_string()), &desc[end + 1..])
        }
        b'[' => {
            let dims = desc.bytes().take_while(|b| *b == b'[').count();
            let (_, rest) = parse_field_type(&desc[dims..])?;
            let len = desc.len() - rest.len();
            (VType::Object(desc[..len].to_string()), rest)
        }
        _ => return None,
    })
}

/// Argument types and return type (None for void) of a method descriptor.
pub fn parse_method_descriptor(desc: &str) -> Option<(Vec<VType>, Option<VType>)> {
    let mut rest = desc.strip_prefix('(')?;
    let mut args = Vec::new();
    while !rest.starts_with(')') {
        let (t, r) = parse_field_type(rest)?;
        args.push(t);
        rest = r;
    }
    let ret = &rest[1..];
    if ret == "V" {
        return Some((args, None));
    }
    match parse_field_type(ret)? {
        (t, "") => Some((args, Some(t))),
        _ => None,
    }
}

/// The implicit frame at offset 0, from the method's descriptor.
pub fn initial_locals(
    class: &str,
    method: &str,
    desc: &str,
    is_static: bool,
) -> Option<Vec<VType>> {
    let (args, _) = parse_method_descriptor(desc)?;
    let mut locals = Vec::with_capacity(args.len() + 1);
    if !is_static {
        let this = if method == "<init>" && class != "java/lang/Object" {
            VType::UninitThis
        } else {
            VType::Object(class.to_string())
        };
        locals.push(this);
    }
    locals.extend(args);
    Some(locals)
}

/// Decodes a StackMapTable body into frames at absolute offsets.
pub fn decode_stack_map(
    info: &[u8],
    pool: &ConstantPool,
    initial: &[VType],
) -> Result<Vec<Frame>, ClassError> {
    let bad = || ClassError::BadAttribute {
        name: "StackMapTable".into(),
    };
    let mut r = Reader::new(info);
    let count = r.u16()?;
    let mut frames: Vec<Frame> = Vec::with_capacity(usize::from(count));
    let mut locals = initial.to_vec();
    for _ in 0..count {
        let (delta, frame_locals, stack) =
            decode_frame(&mut r, pool, &locals).map_err(|_| bad())?;
        let offset = match frames.last() {
            None => u32::from(delta),
            Some(prev) => prev.offset + u32::from(delta) + 1,
        };
        locals = frame_locals;
        frames.push(Frame {
            offset,
            locals: locals.clone(),
            stack,
        });
    }
    if r.remaining() != 0 {
        return Err(bad());
    }
    Ok(frames)
}

type DecodedFrame = (u16, Vec<VType>, Vec<VType>);

fn decode_frame(
    r: &mut Reader,
    pool: &ConstantPool,
    prev: &[VType],
) -> Result<DecodedFrame, ClassError> {
    let kind = r.u8()?;
    let bad = || ClassError::BadAttribute {
        name: "StackMapTable".into(),
    };
    Ok(match kind {
        0..=63 => (u16::from(kind), prev.to_vec(), vec![]),
        64..=127 => (
            u16::from(kind - 64),
            prev.to_vec(),
            vec![read_vtype(r, pool)?],
        ),
        247 => {
            let delta = r.u16()?;
            (delta, prev.to_vec(), vec![read_vtype(r, pool)?])
        }
        248..=250 => {
            let chop = usize::from(251 - kind);
            let keep = prev.len().checked_sub(chop).ok_or_else(bad)?;
            (r.u16()?, prev[..keep].to_vec(), vec![])
        }
        251 => (r.u16()?, prev.to_vec(), vec![]),
        252..=254 => {
            let delta = r.u16()?;
            let mut locals = prev.to_vec();
            for _ in 0..kind - 251 {
                locals.push(read_vtype(r, pool)?);
            }
            (delta, locals, vec![])
        }
        255 => {
            let delta = r.u16()?;
            let locals = read_vtypes(r, pool)?;
            (delta, locals, read_vtypes(r, pool)?)
        }
        _ => return Err(bad()),
    })
}

fn read_vtypes(r: &mut Reader, pool: &ConstantPool) -> Result<Vec<VType>, ClassError> {
    (0..r.u16()?).map(|_| read_vtype(r, pool)).collect()
}

fn read_vtype(r: &mut Reader, pool: &ConstantPool) -> Result<VType, ClassError> {
    Ok(match r.u8()? {
        0 => VType::Top,
        1 => VType::Int,
        2 => VType::Float,
        3 => VType::Double,
        4 => VType::Long,
        5 => VType::Null,
        6 => VType::UninitThis,
        7 => VType::Object(pool.class_name(r.u16()?)?),
        8 => VType::Uninit(u32::from(r.u16()?)),
        _ => {
            return Err(ClassError::BadAttribute {
                name: "StackMapTable".into(),
            })
        }
    })
}

/// Encodes frames (sorted by offset, final offsets) in the most compact form each allows.
pub fn encode_stack_map(
    frames: &[Frame],
    initial: &[VType],
    pool: &mut ConstantPool,
) -> Result<Vec<u8>, ClassError> {
    let mut out = Vec::new();
    put_len16(&mut out, frames.len())?;
    let mut prev_locals = initial;
    let mut prev_offset: Option<u32> = None;
    for f in frames {
        let delta = match prev_offset {
            None => f.offset,
            Some(p) => f.offset.checked_sub(p + 1).ok_or(ClassError::TooLarge)?,
        };
        let delta = u16::try_from(delta).map_err(|_| ClassError::TooLarge)?;
        encode_frame(f, delta, prev_locals, pool, &mut out)?;
        prev_locals = &f.locals;
        prev_offset = Some(f.offset);
    }
    Ok(out)
}

fn encode_frame(
    f: &Frame,
    delta: u16,
    prev: &[VType],
    pool: &mut ConstantPool,
    out: &mut Vec<u8>,
) -> Result<(), ClassError> {
    let same_locals = f.locals == prev;
    let (n, p) = (f.locals.len(), prev.len());
    match f.stack.len() {
        0 if same_locals && delta < 64 => out.push(delta as u8),
        0 if same_locals => short_frame(out, 251, delta),
        1 if same_locals && delta < 64 => {
            out.push(64 + delta as u8);
            write_vtype(&f.stack[0], pool, out)?;
        }
        1 if same_locals => {
            short_frame(out, 247, delta);
            write_vtype(&f.stack[0], pool, out)?;
        }
        0 if n < p && p - n <= 3 && prev[..n] == f.locals[..] => {
            short_frame(out, 251 - (p - n) as u8, delta)
        }
        0 if n > p && n - p <= 3 && f.locals[..p] == *prev => {
            short_frame(out, 251 + (n - p) as u8, delta);
            for v in &f.locals[p..] {
                write_vtype(v, pool, out)?;
            }
        }
        _ => {
            short_frame(out, 255, delta);
            write_vtype_list(&f.locals, pool, out)?;
            write_vtype_list(&f.stack, pool, out)?;
        }
    }
    Ok(())
}

fn short_frame(out: &mut Vec<u8>, kind: u8, delta: u16) {
    out.push(kind);
    put_u16(out, delta);
}

fn write_vtype_list(
    list: &[VType],
    pool: &mut ConstantPool,
    out: &mut Vec<u8>,
) -> Result<(), ClassError> {
    put_len16(out, list.len())?;
    list.iter().try_for_each(|v| write_vtype(v, pool, out))
}

fn write_vtype(v: &VType, pool: &mut ConstantPool, out: &mut Vec<u8>) -> Result<(), ClassError> {
    match v {
        VType::Top => out.push(0),
        VType::Int => out.push(1),
        VType::Float => out.push(2),
        VType::Double => out.push(3),
        VType::Long => out.push(4),
        VType::Null => out.push(5),
        VType::UninitThis => out.push(6),
        VType::Object(name) => {
            out.push(7);
            put_u16(out, pool.add_class(name)?);
        }
        VType::Uninit(offset) => {
            out.push(8);
            put_u16(
                out,
                u16::try_from(*offset).map_err(|_| ClassError::TooLarge)?,
            );
        }
    }
    Ok(())
}

/// Entries (a long is one entry) to slots (a long is followed by a Top).
pub fn to_slots(entries: &[VType]) -> Vec<VType> {
    let mut out = Vec::with_capacity(entries.len() + 2);
    for v in entries {
        out.push(v.clone());
        if v.is_wide() {
            out.push(VType::Top);
        }
    }
    out
}

/// Slots back to entries, dropping trailing Tops (the verifier pads with Top anyway).
pub fn to_entries(slots: &[VType]) -> Vec<VType> {
    let mut out = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        out.push(slots[i].clone());
        i += if slots[i].is_wide() { 2 } else { 1 };
    }
    while out.last() == Some(&VType::Top) {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_method_descriptors() {
        let (args, ret) = parse_method_descriptor("(IJ[[Ljava/lang/String;Z)[B").unwrap();
        assert_eq!(
            args,
            vec![
                VType::Int,
                VType::Long,
                VType::Object("[[Ljava/lang/String;".into()),
                VType::Int
            ]
        );
        assert_eq!(ret, Some(VType::Object("[B".into())));
        assert_eq!(parse_method_descriptor("()V"), Some((vec![], None)));
        assert_eq!(parse_method_descriptor("(X)V"), None);
    }

    #[test]
    fn slots_and_entries_convert_both_ways() {
        let entries = vec![VType::Int, VType::Long, VType::Object("a/B".into())];
        let slots = to_slots(&entries);
        assert_eq!(slots.len(), 4);
        assert_eq!(to_entries(&slots), entries);
    }
}
