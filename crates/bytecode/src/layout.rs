//! Moves instructions to make room for inserted code: computes every instruction's
//! new offset, widens short branches that no longer reach (iterating until stable,
//! since widening moves code too), and emits the relocated bytecode.

use crate::insn::{invert_condition, is_conditional, op, switch_padding, Insn, Kind};

/// Code inserted around the original instructions.
pub struct Insertions<'a> {
    /// At offset 0, before the first instruction.
    pub entry: &'a [u8],
    /// Before every return instruction (branches to the return land on it).
    pub before_return: &'a [u8],
    /// After the last instruction.
    pub tail: &'a [u8],
}

/// Where every original instruction lands.
pub struct Layout {
    /// New offset of each instruction's group (inserted code before it, then itself).
    group_start: Vec<u32>,
    /// New offset of the instruction itself.
    insn_start: Vec<u32>,
    /// Short branches turned into goto_w (conditionals: inverted if over a goto_w).
    widened: Vec<bool>,
    /// Index of the instruction at each old offset (u32::MAX between instructions).
    index_at: Vec<u32>,
    /// New offset just after the last original instruction (where `tail` goes).
    pub body_end: u32,
}

impl Layout {
    pub fn compute(insns: &[Insn], code_len: u32, ins: &Insertions) -> Layout {
        let mut index_at = vec![u32::MAX; code_len as usize + 1];
        for (i, insn) in insns.iter().enumerate() {
            index_at[insn.offset as usize] = i as u32;
        }
        let mut layout = Layout {
            group_start: vec![0; insns.len()],
            insn_start: vec![0; insns.len()],
            widened: vec![false; insns.len()],
            index_at,
            body_end: 0,
        };
        // Widening only ever grows code, so this ends after at most one pass per branch.
        loop {
            layout.place(insns, ins);
            if !layout.widen_unreachable(insns) {
                return layout;
            }
        }
    }

    fn place(&mut self, insns: &[Insn], ins: &Insertions) {
        let mut pos = ins.entry.len() as u32;
        for (i, insn) in insns.iter().enumerate() {
            self.group_start[i] = pos;
            if insn.kind == Kind::Return {
                pos += ins.before_return.len() as u32;
            }
            self.insn_start[i] = pos;
            pos += self.size(insn, i, pos);
        }
        self.body_end = pos;
    }

    fn size(&self, insn: &Insn, i: usize, pos: u32) -> u32 {
        let pad = switch_padding(pos as usize) as u32;
        match &insn.kind {
            Kind::Branch {
                opcode: op::GOTO_W, ..
            } => 5,
            Kind::Branch { opcode, .. } if self.widened[i] => {
                if is_conditional(*opcode) {
                    8
                } else {
                    5
                }
            }
            Kind::Branch { .. } => 3,
            Kind::TableSwitch { targets, .. } => 1 + pad + 12 + 4 * targets.len() as u32,
            Kind::LookupSwitch { pairs, .. } => 1 + pad + 8 + 8 * pairs.len() as u32,
            _ => insn.len,
        }
    }

    /// Marks short branches whose displacement no longer fits 16 bits.
    fn widen_unreachable(&mut self, insns: &[Insn]) -> bool {
        let mut changed = false;
        for (i, insn) in insns.iter().enumerate() {
            if let Kind::Branch { opcode, target } = insn.kind {
                if opcode == op::GOTO_W || self.widened[i] {
                    continue;
                }
                let disp = i64::from(self.new_offset(target)) - i64::from(self.insn_start[i]);
                if i16::try_from(disp).is_err() {
                    self.widened[i] = true;
                    changed = true;
                }
            }
        }
        changed
    }

    /// The new offset of old offset `old`: the start of the instruction's group, or the
    /// end of the body for the old code length. Callers pass only checked boundaries.
    pub fn new_offset(&self, old: u32) -> u32 {
        if old as usize == self.index_at.len() - 1 {
            return self.body_end;
        }
        self.group_start[self.index_at[old as usize] as usize]
    }

    /// The length of the original code.
    pub fn old_len(&self) -> u32 {
        (self.index_at.len() - 1) as u32
    }

    /// Whether `old` is an instruction boundary or the end of the code.
    pub fn is_boundary(&self, old: u32) -> bool {
        let i = old as usize;
        i + 1 == self.index_at.len() || self.index_at.get(i).is_some_and(|x| *x != u32::MAX)
    }

    /// Old offsets of the instructions after widened conditional branches: new branch
    /// targets (of the inverted condition) that need a stack map frame.
    pub fn widened_fallthroughs<'a>(&'a self, insns: &'a [Insn]) -> impl Iterator<Item = u32> + 'a {
        insns.iter().enumerate().filter_map(|(i, insn)| {
            (self.widened[i] && is_conditional(insn.opcode)).then_some(insn.offset + insn.len)
        })
    }

    #[cfg(test)]
    pub fn widened_count(&self) -> usize {
        self.widened.iter().filter(|w| **w).count()
    }

    /// The relocated code: entry, each instruction (with `before_return` ahead of
    /// returns), then the tail.
    pub fn emit(&self, insns: &[Insn], code: &[u8], ins: &Insertions) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body_end as usize + ins.tail.len());
        out.extend_from_slice(ins.entry);
        for (i, insn) in insns.iter().enumerate() {
            if insn.kind == Kind::Return {
                out.extend_from_slice(ins.before_return);
            }
            debug_assert_eq!(out.len() as u32, self.insn_start[i]);
            self.emit_one(insn, i, code, &mut out);
        }
        out.extend_from_slice(ins.tail);
        out
    }

    fn emit_one(&self, insn: &Insn, i: usize, code: &[u8], out: &mut Vec<u8>) {
        let pos = self.insn_start[i];
        let disp = |target: u32| (i64::from(self.new_offset(target)) - i64::from(pos)) as i32;
        match &insn.kind {
            Kind::Branch { opcode, target } => self.emit_branch(*opcode, i, disp(*target), out),
            Kind::TableSwitch {
                default,
                low,
                targets,
            } => {
                start_switch(out, op::TABLESWITCH, pos);
                put_i32(out, disp(*default));
                put_i32(out, *low);
                put_i32(out, *low + targets.len() as i32 - 1);
                targets.iter().for_each(|t| put_i32(out, disp(*t)));
            }
            Kind::LookupSwitch { default, pairs } => {
                start_switch(out, op::LOOKUPSWITCH, pos);
                put_i32(out, disp(*default));
                put_i32(out, pairs.len() as i32);
                for (key, t) in pairs {
                    put_i32(out, *key);
                    put_i32(out, disp(*t));
                }
            }
            _ => {
                let at = insn.offset as usize;
                out.extend_from_slice(&code[at..at + insn.len as usize]);
            }
        }
    }

    fn emit_branch(&self, opcode: u8, i: usize, disp: i32, out: &mut Vec<u8>) {
        if opcode == op::GOTO_W || (self.widened[i] && opcode == op::GOTO) {
            out.push(op::GOTO_W);
            put_i32(out, disp);
        } else if self.widened[i] {
            // if<!cond> over the goto_w (3 + 5 bytes), goto_w measured from its own start.
            out.extend_from_slice(&[invert_condition(opcode), 0, 8, op::GOTO_W]);
            put_i32(out, disp - 3);
        } else {
            out.push(opcode);
            out.extend_from_slice(&(disp as i16).to_be_bytes());
        }
    }
}

fn start_switch(out: &mut Vec<u8>, opcode: u8, pos: u32) {
    out.push(opcode);
    out.resize(out.len() + switch_padding(pos as usize), 0);
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::decode;

    fn relocate(code: &[u8], entry: &[u8], before_return: &[u8]) -> (Vec<u8>, Layout) {
        let insns = decode(code).unwrap();
        let ins = Insertions {
            entry,
            before_return,
            tail: &[],
        };
        let layout = Layout::compute(&insns, code.len() as u32, &ins);
        (layout.emit(&insns, code, &ins), layout)
    }

    #[test]
    fn branches_to_a_return_land_on_the_code_inserted_before_it() {
        // 0: iconst_0; 1: ifeq +4 (-> 5); 4: nop; 5: return
        let code = [0x03, 0x99, 0x00, 0x04, 0x00, op::RETURN];
        let (out, layout) = relocate(&code, &[0x00, 0x00], &[0x00]);
        assert_eq!(
            layout.new_offset(5),
            7,
            "group start, before the inserted nop"
        );
        assert_eq!(
            out,
            vec![0, 0, 0x03, 0x99, 0x00, 0x04, 0x00, 0x00, op::RETURN]
        );
    }

    #[test]
    fn switch_padding_is_recomputed_after_moving() {
        // 0: iconst_0; 1: tableswitch pad 2 (low 0, high 0) default/target -> 24; 24: return
        let mut code = vec![0x03, op::TABLESWITCH, 0, 0];
        for v in [23i32, 0, 0, 23] {
            code.extend_from_slice(&v.to_be_bytes());
        }
        code.extend_from_slice(&[0; 4]); // nop padding to 24
        code.push(op::RETURN);
        let (out, _) = relocate(&code, &[0x00], &[]);
        let insns = decode(&out).unwrap();
        assert_eq!(insns[2].offset, 2);
        // One byte of padding now instead of two, so the switch ends where it did.
        assert_eq!(insns[2].len, 18);
        assert_eq!(
            insns[2].kind,
            Kind::TableSwitch {
                default: 24,
                low: 0,
                targets: vec![24]
            }
        );
    }

    /// A branch over a return to a far return: the two bytes inserted before the
    /// first return push the target out of 16-bit reach.
    fn far_code(branch: &[u8]) -> Vec<u8> {
        let mut code = branch.to_vec();
        let disp = 32767 - code.len() as i16 + 1;
        code.extend_from_slice(&disp.to_be_bytes());
        code.push(op::RETURN);
        code.resize(32767, 0x00);
        code.push(op::RETURN);
        code
    }

    #[test]
    fn far_gotos_become_goto_w() {
        let code = far_code(&[0x00, op::GOTO]);
        let (out, layout) = relocate(&code, &[], &[0, 0]);
        assert_eq!(layout.widened_count(), 1);
        let insns = decode(&out).unwrap();
        let target = 32767 + 2 + 2;
        assert_eq!(
            insns[1].kind,
            Kind::Branch {
                opcode: op::GOTO_W,
                target
            }
        );
        assert_eq!(out[target as usize..], [0, 0, op::RETURN]);
    }

    #[test]
    fn far_conditionals_jump_over_a_goto_w() {
        let code = far_code(&[0x03, 0x99]);
        let (out, layout) = relocate(&code, &[], &[0, 0]);
        let insns = decode(&out).unwrap();
        assert_eq!(
            insns[1].kind,
            Kind::Branch {
                opcode: 0x9a,
                target: 9
            }
        );
        let target = 32767 + 2 + 5;
        assert_eq!(
            insns[2].kind,
            Kind::Branch {
                opcode: op::GOTO_W,
                target
            }
        );
        assert_eq!(out[target as usize..], [0, 0, op::RETURN]);
        let fall: Vec<u32> = layout
            .widened_fallthroughs(&decode(&code).unwrap())
            .collect();
        assert_eq!(fall, vec![4]);
    }
}
