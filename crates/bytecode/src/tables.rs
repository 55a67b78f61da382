//! Relocation of the debug tables inside Code that hold code offsets.

use crate::bytes::{put_u16, Reader};
use crate::layout::Layout;

/// LineNumberTable: every start_pc moves with its instruction.
pub fn relocate_line_numbers(info: &[u8], layout: &Layout) -> Option<Vec<u8>> {
    let mut r = Reader::new(info);
    let count = r.u16().ok()?;
    let mut out = Vec::with_capacity(info.len());
    put_u16(&mut out, count);
    for _ in 0..count {
        let start = u32::from(r.u16().ok()?);
        let line = r.u16().ok()?;
        put_u16(&mut out, moved(start, layout)?);
        put_u16(&mut out, line);
    }
    (r.remaining() == 0).then_some(out)
}

/// LocalVariableTable and LocalVariableTypeTable: the [start, start+length) range
/// moves; the end may be the code length.
pub fn relocate_local_variables(info: &[u8], layout: &Layout) -> Option<Vec<u8>> {
    let mut r = Reader::new(info);
    let count = r.u16().ok()?;
    let mut out = Vec::with_capacity(info.len());
    put_u16(&mut out, count);
    for _ in 0..count {
        let start = u32::from(r.u16().ok()?);
        let end = start + u32::from(r.u16().ok()?);
        let (new_start, new_end) = (moved(start, layout)?, moved(end, layout)?);
        put_u16(&mut out, new_start);
        put_u16(&mut out, new_end - new_start);
        out.extend_from_slice(r.take(6).ok()?);
    }
    (r.remaining() == 0).then_some(out)
}

fn moved(old: u32, layout: &Layout) -> Option<u16> {
    if !layout.is_boundary(old) {
        return None;
    }
    u16::try_from(layout.new_offset(old)).ok()
}
