//! Instruction boundaries and the operands that hold code offsets.

use crate::bytes::{be_i16, be_i32};

pub mod op {
    pub const ACONST_NULL: u8 = 0x01;
    pub const ALOAD_0: u8 = 0x2a;
    pub const ICONST_M1: u8 = 0x02;
    pub const BIPUSH: u8 = 0x10;
    pub const SIPUSH: u8 = 0x11;
    pub const LDC: u8 = 0x12;
    pub const LDC_W: u8 = 0x13;
    pub const LDC2_W: u8 = 0x14;
    pub const ILOAD: u8 = 0x15;
    pub const LLOAD: u8 = 0x16;
    pub const FLOAD: u8 = 0x17;
    pub const DLOAD: u8 = 0x18;
    pub const ALOAD: u8 = 0x19;
    pub const AASTORE: u8 = 0x53;
    pub const DUP: u8 = 0x59;
    pub const IINC: u8 = 0x84;
    pub const IFEQ: u8 = 0x99;
    pub const IF_ACMPNE: u8 = 0xa6;
    pub const GOTO: u8 = 0xa7;
    pub const JSR: u8 = 0xa8;
    pub const RET: u8 = 0xa9;
    pub const TABLESWITCH: u8 = 0xaa;
    pub const LOOKUPSWITCH: u8 = 0xab;
    pub const IRETURN: u8 = 0xac;
    pub const RETURN: u8 = 0xb1;
    pub const INVOKESPECIAL: u8 = 0xb7;
    pub const INVOKESTATIC: u8 = 0xb8;
    pub const NEW: u8 = 0xbb;
    pub const ANEWARRAY: u8 = 0xbd;
    pub const ATHROW: u8 = 0xbf;
    pub const WIDE: u8 = 0xc4;
    pub const IFNULL: u8 = 0xc6;
    pub const IFNONNULL: u8 = 0xc7;
    pub const GOTO_W: u8 = 0xc8;
    pub const JSR_W: u8 = 0xc9;
}

/// What an instruction means for relocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// No code offsets: copied verbatim.
    Plain,
    /// if*, goto or goto_w with its absolute target.
    Branch { opcode: u8, target: u32 },
    TableSwitch {
        default: u32,
        low: i32,
        targets: Vec<u32>,
    },
    LookupSwitch {
        default: u32,
        pairs: Vec<(i32, u32)>,
    },
    /// ireturn .. return.
    Return,
    /// jsr, jsr_w or ret: subroutines, which this crate does not relocate.
    Subroutine,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    pub offset: u32,
    pub len: u32,
    pub opcode: u8,
    pub kind: Kind,
}

/// Why code could not be split into instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCode {
    pub offset: u32,
}

/// Splits `code` into instructions with absolute branch targets.
pub fn decode(code: &[u8]) -> Result<Vec<Insn>, BadCode> {
    let mut out = Vec::new();
    let mut pc = 0usize;
    while pc < code.len() {
        let insn = decode_one(code, pc).ok_or(BadCode { offset: pc as u32 })?;
        pc += insn.len as usize;
        out.push(insn);
    }
    Ok(out)
}

fn decode_one(code: &[u8], pc: usize) -> Option<Insn> {
    let opcode = code[pc];
    let (len, kind) = match opcode {
        0x99..=0xa7 | op::IFNULL | op::IFNONNULL => {
            need(code, pc, 3)?;
            (
                3,
                Kind::Branch {
                    opcode,
                    target: rel(pc, i32::from(be_i16(code, pc + 1)))?,
                },
            )
        }
        op::GOTO_W => {
            need(code, pc, 5)?;
            (
                5,
                Kind::Branch {
                    opcode,
                    target: rel(pc, be_i32(code, pc + 1))?,
                },
            )
        }
        op::JSR => (3, Kind::Subroutine),
        op::RET => (2, Kind::Subroutine),
        op::JSR_W => (5, Kind::Subroutine),
        op::TABLESWITCH => decode_table(code, pc)?,
        op::LOOKUPSWITCH => decode_lookup(code, pc)?,
        op::IRETURN..=op::RETURN => (1, Kind::Return),
        op::WIDE => (
            if *code.get(pc + 1)? == op::IINC { 6 } else { 4 },
            Kind::Plain,
        ),
        _ => (fixed_len(opcode)?, Kind::Plain),
    };
    need(code, pc, len)?;
    Some(Insn {
        offset: pc as u32,
        len: len as u32,
        opcode,
        kind,
    })
}

fn need(code: &[u8], pc: usize, len: usize) -> Option<()> {
    (pc + len <= code.len()).then_some(())
}

fn rel(pc: usize, delta: i32) -> Option<u32> {
    u32::try_from(pc as i64 + i64::from(delta)).ok()
}

/// Bytes from after the opcode to the next multiple of four.
pub fn switch_padding(pc: usize) -> usize {
    3 - (pc % 4)
}

fn decode_table(code: &[u8], pc: usize) -> Option<(usize, Kind)> {
    let base = pc + 1 + switch_padding(pc);
    need(code, base, 12)?;
    let default = rel(pc, be_i32(code, base))?;
    let (low, high) = (be_i32(code, base + 4), be_i32(code, base + 8));
    let count = usize::try_from(i64::from(high) - i64::from(low) + 1).ok()?;
    need(code, base + 12, count.checked_mul(4)?)?;
    let targets = (0..count)
        .map(|i| rel(pc, be_i32(code, base + 12 + 4 * i)))
        .collect::<Option<_>>()?;
    Some((
        base + 12 + 4 * count - pc,
        Kind::TableSwitch {
            default,
            low,
            targets,
        },
    ))
}

fn decode_lookup(code: &[u8], pc: usize) -> Option<(usize, Kind)> {
    let base = pc + 1 + switch_padding(pc);
    need(code, base, 8)?;
    let default = rel(pc, be_i32(code, base))?;
    let count = usize::try_from(be_i32(code, base + 4)).ok()?;
    need(code, base + 8, count.checked_mul(8)?)?;
    let pairs = (0..count)
        .map(|i| {
            let at = base + 8 + 8 * i;
            Some((be_i32(code, at), rel(pc, be_i32(code, at + 4))?))
        })
        .collect::<Option<_>>()?;
    Some((
        base + 8 + 8 * count - pc,
        Kind::LookupSwitch { default, pairs },
    ))
}

/// Length of every fixed-size instruction; None for invalid opcodes.
fn fixed_len(opcode: u8) -> Option<usize> {
    Some(match opcode {
        0x00..=0x0f => 1,
        op::BIPUSH => 2,
        op::SIPUSH => 3,
        op::LDC => 2,
        op::LDC_W | op::LDC2_W => 3,
        0x15..=0x19 => 2,
        0x1a..=0x35 => 1,
        0x36..=0x3a => 2,
        0x3b..=0x83 => 1,
        op::IINC => 3,
        0x85..=0x98 => 1,
        op::RET => 2,
        0xb2..=0xb8 => 3,
        0xb9 | 0xba => 5,
        0xbb => 3,
        0xbc => 2,
        0xbd => 3,
        0xbe | 0xbf => 1,
        0xc0 | 0xc1 => 3,
        0xc2 | 0xc3 => 1,
        0xc5 => 4,
        _ => return None,
    })
}

/// The conditional branch taken exactly when `opcode` is not.
pub fn invert_condition(opcode: u8) -> u8 {
    match opcode {
        op::IFNULL => op::IFNONNULL,
        op::IFNONNULL => op::IFNULL,
        // ifeq/ifne, iflt/ifge, ... come in pairs starting at an even opcode (0x99 is odd).
        o => {
            if (o - op::IFEQ) & 1 == 0 {
                o + 1
            } else {
                o - 1
            }
        }
    }
}

pub fn is_conditional(opcode: u8) -> bool {
    matches!(
        opcode,
        op::IFEQ..=op::IF_ACMPNE | op::IFNULL | op::IFNONNULL
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverts_every_condition_pairwise() {
        for o in (op::IFEQ..=op::IF_ACMPNE).chain([op::IFNULL, op::IFNONNULL]) {
            let inv = invert_condition(o);
            assert_ne!(inv, o);
            assert_eq!(invert_condition(inv), o);
        }
        assert_eq!(invert_condition(0x99), 0x9a); // ifeq <-> ifne
        assert_eq!(invert_condition(0x9b), 0x9c); // iflt <-> ifge
    }

    #[test]
    fn decodes_switch_padding_and_targets() {
        // nop; tableswitch at 1: pad 2, default +20, low 0, high 1, targets +16, +18.
        let mut code = vec![0x00, op::TABLESWITCH, 0, 0];
        for v in [20i32, 0, 1, 16, 18] {
            code.extend_from_slice(&v.to_be_bytes());
        }
        code.extend_from_slice(&[0xb1; 4]);
        let insns = decode(&code).unwrap();
        assert_eq!(insns[1].len, 23);
        assert_eq!(
            insns[1].kind,
            Kind::TableSwitch {
                default: 21,
                low: 0,
                targets: vec![17, 19]
            }
        );
    }
}
