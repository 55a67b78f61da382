//! Relocation of the debug tables inside Code that hold code offsets.

use crate::bytes::{put_u16, Reader};
use crate::layout::Layout;

/// LineNumberTable: every start_pc moves with its instruction, except that the
/// method's first line also covers the entry probe inserted before it (a stack
/// walked inside the probe then still has a line for the method).
pub fn relocate_line_numbers(info: &[u8], layout: &Layout) -> Option<Vec<u8>> {
    let mut r = Reader::new(info);
    let count = r.u16().ok()?;
    let mut out = Vec::with_capacity(info.len());
    put_u16(&mut out, count);
    for _ in 0..count {
        let start = u32::from(r.u16().ok()?);
        let line = r.u16().ok()?;
        put_u16(&mut out, moved_keeping_start(start, layout)?);
        put_u16(&mut out, line);
    }
    (r.remaining() == 0).then_some(out)
}

/// LocalVariableTable and LocalVariableTypeTable: the [start, start+length) range
/// moves; the end may be the code length. A range from offset 0 (parameters and
/// `this`) keeps starting at 0: the entry probe does not touch locals, and a
/// debugger or JVMTI reading a parameter at the method's entry (a breakpoint at
/// location 0) would otherwise get INVALID_SLOT.
pub fn relocate_local_variables(info: &[u8], layout: &Layout) -> Option<Vec<u8>> {
    let mut r = Reader::new(info);
    let count = r.u16().ok()?;
    let mut out = Vec::with_capacity(info.len());
    put_u16(&mut out, count);
    for _ in 0..count {
        let start = u32::from(r.u16().ok()?);
        let end = start + u32::from(r.u16().ok()?);
        let (new_start, new_end) = (moved_keeping_start(start, layout)?, moved(end, layout)?);
        put_u16(&mut out, new_start);
        put_u16(&mut out, new_end - new_start);
        out.extend_from_slice(r.take(6).ok()?);
    }
    (r.remaining() == 0).then_some(out)
}

/// As [`moved`], but offset 0 stays 0 (it then also covers the entry probe).
fn moved_keeping_start(old: u32, layout: &Layout) -> Option<u16> {
    if old == 0 {
        return Some(0);
    }
    moved(old, layout)
}

fn moved(old: u32, layout: &Layout) -> Option<u16> {
    if !layout.is_boundary(old) {
        return None;
    }
    u16::try_from(layout.new_offset(old)).ok()
}

/// Runtime(In)VisibleTypeAnnotations of a Code attribute: offset targets (instanceof,
/// new, casts, method references) follow their instruction, local variable targets
/// their range. Catch targets index the exception table, whose old rows keep their
/// positions. Everything else is copied.
pub fn relocate_type_annotations(info: &[u8], layout: &Layout) -> Option<Vec<u8>> {
    let mut r = Reader::new(info);
    let mut out = Vec::with_capacity(info.len());
    let count = r.u16().ok()?;
    put_u16(&mut out, count);
    for _ in 0..count {
        relocate_type_annotation(&mut r, &mut out, layout)?;
    }
    (r.remaining() == 0).then_some(out)
}

fn relocate_type_annotation(r: &mut Reader, out: &mut Vec<u8>, layout: &Layout) -> Option<()> {
    let target = r.u8().ok()?;
    out.push(target);
    match target {
        0x40 | 0x41 => {
            let n = r.u16().ok()?;
            put_u16(out, n);
            for _ in 0..n {
                let start = u32::from(r.u16().ok()?);
                let end = start + u32::from(r.u16().ok()?);
                let (new_start, new_end) =
                    (moved_keeping_start(start, layout)?, moved(end, layout)?);
                put_u16(out, new_start);
                put_u16(out, new_end - new_start);
                out.extend_from_slice(r.take(2).ok()?);
            }
        }
        0x42 => out.extend_from_slice(r.take(2).ok()?),
        0x43..=0x4b => {
            put_u16(out, moved(u32::from(r.u16().ok()?), layout)?);
            if target >= 0x47 {
                out.push(r.u8().ok()?);
            }
        }
        // Class, method and field targets never appear inside Code.
        _ => return None,
    }
    let path_len = r.u8().ok()?;
    out.push(path_len);
    out.extend_from_slice(r.take(2 * usize::from(path_len)).ok()?);
    copy_annotation_body(r, out)
}

/// type_index, then the element-value pairs, copied unchanged.
fn copy_annotation_body(r: &mut Reader, out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(r.take(2).ok()?);
    let pairs = r.u16().ok()?;
    put_u16(out, pairs);
    for _ in 0..pairs {
        out.extend_from_slice(r.take(2).ok()?);
        copy_element_value(r, out)?;
    }
    Some(())
}

fn copy_element_value(r: &mut Reader, out: &mut Vec<u8>) -> Option<()> {
    let tag = r.u8().ok()?;
    out.push(tag);
    match tag {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => {
            out.extend_from_slice(r.take(2).ok()?)
        }
        b'e' => out.extend_from_slice(r.take(4).ok()?),
        b'@' => copy_annotation_body(r, out)?,
        b'[' => {
            let n = r.u16().ok()?;
            put_u16(out, n);
            for _ in 0..n {
                copy_element_value(r, out)?;
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::{decode, op};
    use crate::layout::Insertions;

    /// 0: new; 3: dup; 4: invokespecial; 7: astore_0; 8: aload_0; 9: instanceof; 12: pop; 13: return
    const CODE: [u8; 14] = [
        op::NEW,
        0,
        1,
        0x59,
        0xb7,
        0,
        2,
        0x4b,
        0x2a,
        0xc1,
        0,
        1,
        0x57,
        op::RETURN,
    ];

    fn layout() -> Layout {
        let insns = decode(&CODE).unwrap();
        let ins = Insertions {
            entry: &[0, 0, 0],
            before_return: &[0, 0],
            tail: &[],
        };
        Layout::compute(&insns, CODE.len() as u32, &ins)
    }

    #[test]
    fn type_annotation_offsets_follow_their_instructions() {
        let mut info = vec![0, 3];
        // new at 0 (0x44), no path, type 9, one pair with a nested array of enums
        info.extend_from_slice(&[
            0x44, 0, 0, 0, 0, 9, 0, 1, 0, 5, b'[', 0, 1, b'e', 0, 6, 0, 7,
        ]);
        // instanceof at 9 (0x43), a path of one step
        info.extend_from_slice(&[0x43, 0, 9, 1, 3, 0, 0, 9, 0, 0]);
        // local variable 0 over [8, 14), the whole tail including the return
        info.extend_from_slice(&[0x40, 0, 1, 0, 8, 0, 6, 0, 0, 0, 0, 9, 0, 0]);
        let out = relocate_type_annotations(&info, &layout()).unwrap();
        assert_eq!(out.len(), info.len());
        assert_eq!(out[3..5], [0, 3], "new moved by the entry probe");
        assert_eq!(out[21..23], [0, 12], "instanceof moved too");
        // [8, 14) became [11, 19): the exit probe before the return is inside the range.
        assert_eq!(out[33..37], [0, 11, 0, 8]);
    }

    #[test]
    fn malformed_type_annotations_are_refused() {
        assert_eq!(
            relocate_type_annotations(&[0, 1, 0x44, 0, 1], &layout()),
            None,
            "offset 1 is mid-instruction"
        );
        assert_eq!(
            relocate_type_annotations(&[0, 1, 0x10, 0, 0], &layout()),
            None,
            "supertype target in code"
        );
    }
}
