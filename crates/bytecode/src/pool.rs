//! The constant pool: every tag a JDK 25 class file may hold, kept exactly as read so
//! that an unchanged pool writes back byte-identical, plus lookups and appends.

use crate::bytes::{put_u16, put_u32, Reader};
use crate::ClassError;

/// One constant pool entry. Indices are raw pool indices as in the class file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constant {
    /// Modified UTF-8 bytes, kept raw so odd encodings survive a round trip.
    Utf8(Vec<u8>),
    Integer(i32),
    /// IEEE bits, so NaN payloads survive.
    Float(u32),
    Long(i64),
    Double(u64),
    Class(u16),
    String(u16),
    FieldRef {
        class: u16,
        name_and_type: u16,
    },
    MethodRef {
        class: u16,
        name_and_type: u16,
    },
    InterfaceMethodRef {
        class: u16,
        name_and_type: u16,
    },
    NameAndType {
        name: u16,
        descriptor: u16,
    },
    MethodHandle {
        kind: u8,
        reference: u16,
    },
    MethodType(u16),
    Dynamic {
        bootstrap: u16,
        name_and_type: u16,
    },
    InvokeDynamic {
        bootstrap: u16,
        name_and_type: u16,
    },
    Module(u16),
    Package(u16),
    /// Index 0 and the slot after a Long or Double: not addressable.
    Unusable,
}

impl Constant {
    fn tag(&self) -> u8 {
        match self {
            Constant::Utf8(_) => 1,
            Constant::Integer(_) => 3,
            Constant::Float(_) => 4,
            Constant::Long(_) => 5,
            Constant::Double(_) => 6,
            Constant::Class(_) => 7,
            Constant::String(_) => 8,
            Constant::FieldRef { .. } => 9,
            Constant::MethodRef { .. } => 10,
            Constant::InterfaceMethodRef { .. } => 11,
            Constant::NameAndType { .. } => 12,
            Constant::MethodHandle { .. } => 15,
            Constant::MethodType(_) => 16,
            Constant::Dynamic { .. } => 17,
            Constant::InvokeDynamic { .. } => 18,
            Constant::Module(_) => 19,
            Constant::Package(_) => 20,
            Constant::Unusable => 0,
        }
    }

    fn is_wide(&self) -> bool {
        matches!(self, Constant::Long(_) | Constant::Double(_))
    }
}

/// The constant pool, indexed as in the class file (entry 0 is unusable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantPool {
    entries: Vec<Constant>,
}

impl Default for ConstantPool {
    fn default() -> Self {
        ConstantPool::new()
    }
}

impl ConstantPool {
    /// An empty pool, for building classes from scratch.
    pub fn new() -> Self {
        ConstantPool {
            entries: vec![Constant::Unusable],
        }
    }

    pub(crate) fn parse(r: &mut Reader) -> Result<Self, ClassError> {
        let count = r.u16()?;
        let mut entries = vec![Constant::Unusable];
        while entries.len() < usize::from(count) {
            let index = entries.len() as u16;
            let entry = parse_constant(r, index)?;
            let wide = entry.is_wide();
            entries.push(entry);
            if wide {
                entries.push(Constant::Unusable);
            }
        }
        if entries.len() != usize::from(count.max(1)) {
            return Err(ClassError::BadConstantIndex(count));
        }
        Ok(ConstantPool { entries })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        put_u16(out, self.entries.len() as u16);
        for entry in &self.entries[1..] {
            write_constant(entry, out);
        }
    }

    /// The number of slots, as written in `constant_pool_count`.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.len() <= 1
    }

    pub fn get(&self, index: u16) -> Result<&Constant, ClassError> {
        match self.entries.get(usize::from(index)) {
            Some(Constant::Unusable) | None => Err(ClassError::BadConstantIndex(index)),
            Some(c) => Ok(c),
        }
    }

    /// The text of a Utf8 entry, decoded from modified UTF-8.
    pub fn utf8(&self, index: u16) -> Result<String, ClassError> {
        match self.get(index)? {
            Constant::Utf8(bytes) => {
                decode_modified_utf8(bytes).ok_or(ClassError::BadConstantIndex(index))
            }
            _ => Err(ClassError::BadConstantIndex(index)),
        }
    }

    /// The internal name (`java/lang/String`, `[I`) of a Class entry.
    pub fn class_name(&self, index: u16) -> Result<String, ClassError> {
        match self.get(index)? {
            Constant::Class(name) => self.utf8(*name),
            _ => Err(ClassError::BadConstantIndex(index)),
        }
    }

    /// Name and descriptor of a NameAndType entry.
    pub fn name_and_type(&self, index: u16) -> Result<(String, String), ClassError> {
        match self.get(index)? {
            Constant::NameAndType { name, descriptor } => {
                Ok((self.utf8(*name)?, self.utf8(*descriptor)?))
            }
            _ => Err(ClassError::BadConstantIndex(index)),
        }
    }

    /// Class, name and descriptor of a field, method or interface method reference.
    pub fn member_ref(&self, index: u16) -> Result<(String, String, String), ClassError> {
        match self.get(index)? {
            Constant::FieldRef {
                class,
                name_and_type,
            }
            | Constant::MethodRef {
                class,
                name_and_type,
            }
            | Constant::InterfaceMethodRef {
                class,
                name_and_type,
            } => {
                let (name, desc) = self.name_and_type(*name_and_type)?;
                Ok((self.class_name(*class)?, name, desc))
            }
            _ => Err(ClassError::BadConstantIndex(index)),
        }
    }

    /// Name and descriptor of an InvokeDynamic or Dynamic entry.
    pub fn dynamic(&self, index: u16) -> Result<(String, String), ClassError> {
        match self.get(index)? {
            Constant::Dynamic { name_and_type, .. }
            | Constant::InvokeDynamic { name_and_type, .. } => self.name_and_type(*name_and_type),
            _ => Err(ClassError::BadConstantIndex(index)),
        }
    }

    /// The index of an equal entry, or of a new one appended at the end.
    pub fn find_or_add(&mut self, constant: Constant) -> Result<u16, ClassError> {
        if let Some(i) = self.entries.iter().position(|e| *e == constant) {
            return Ok(i as u16);
        }
        let needed = if constant.is_wide() { 2 } else { 1 };
        if self.entries.len() + needed > usize::from(u16::MAX) {
            return Err(ClassError::ConstantPoolFull);
        }
        let index = self.entries.len() as u16;
        let wide = constant.is_wide();
        self.entries.push(constant);
        if wide {
            self.entries.push(Constant::Unusable);
        }
        Ok(index)
    }

    pub fn add_utf8(&mut self, text: &str) -> Result<u16, ClassError> {
        self.find_or_add(Constant::Utf8(encode_modified_utf8(text)))
    }

    pub fn add_class(&mut self, name: &str) -> Result<u16, ClassError> {
        let name = self.add_utf8(name)?;
        self.find_or_add(Constant::Class(name))
    }

    pub fn add_method_ref(
        &mut self,
        class: &str,
        name: &str,
        desc: &str,
    ) -> Result<u16, ClassError> {
        let class = self.add_class(class)?;
        let name = self.add_utf8(name)?;
        let descriptor = self.add_utf8(desc)?;
        let name_and_type = self.find_or_add(Constant::NameAndType { name, descriptor })?;
        self.find_or_add(Constant::MethodRef {
            class,
            name_and_type,
        })
    }
}

fn parse_constant(r: &mut Reader, index: u16) -> Result<Constant, ClassError> {
    let tag = r.u8()?;
    Ok(match tag {
        1 => {
            let len = r.u16()?;
            Constant::Utf8(r.take(usize::from(len))?.to_vec())
        }
        3 => Constant::Integer(r.u32()? as i32),
        4 => Constant::Float(r.u32()?),
        5 => Constant::Long(r.u64()? as i64),
        6 => Constant::Double(r.u64()?),
        7 => Constant::Class(r.u16()?),
        8 => Constant::String(r.u16()?),
        9 => Constant::FieldRef {
            class: r.u16()?,
            name_and_type: r.u16()?,
        },
        10 => Constant::MethodRef {
            class: r.u16()?,
            name_and_type: r.u16()?,
        },
        11 => Constant::InterfaceMethodRef {
            class: r.u16()?,
            name_and_type: r.u16()?,
        },
        12 => Constant::NameAndType {
            name: r.u16()?,
            descriptor: r.u16()?,
        },
        15 => Constant::MethodHandle {
            kind: r.u8()?,
            reference: r.u16()?,
        },
        16 => Constant::MethodType(r.u16()?),
        17 => Constant::Dynamic {
            bootstrap: r.u16()?,
            name_and_type: r.u16()?,
        },
        18 => Constant::InvokeDynamic {
            bootstrap: r.u16()?,
            name_and_type: r.u16()?,
        },
        19 => Constant::Module(r.u16()?),
        20 => Constant::Package(r.u16()?),
        _ => return Err(ClassError::UnknownConstantTag { tag, index }),
    })
}

fn write_constant(c: &Constant, out: &mut Vec<u8>) {
    if matches!(c, Constant::Unusable) {
        return;
    }
    out.push(c.tag());
    match c {
        Constant::Utf8(bytes) => {
            put_u16(out, bytes.len() as u16);
            out.extend_from_slice(bytes);
        }
        Constant::Integer(v) => put_u32(out, *v as u32),
        Constant::Float(v) => put_u32(out, *v),
        Constant::Long(v) => out.extend_from_slice(&v.to_be_bytes()),
        Constant::Double(v) => out.extend_from_slice(&v.to_be_bytes()),
        Constant::Class(i)
        | Constant::String(i)
        | Constant::MethodType(i)
        | Constant::Module(i)
        | Constant::Package(i) => put_u16(out, *i),
        Constant::FieldRef {
            class: a,
            name_and_type: b,
        }
        | Constant::MethodRef {
            class: a,
            name_and_type: b,
        }
        | Constant::InterfaceMethodRef {
            class: a,
            name_and_type: b,
        }
        | Constant::NameAndType {
            name: a,
            descriptor: b,
        }
        | Constant::Dynamic {
            bootstrap: a,
            name_and_type: b,
        }
        | Constant::InvokeDynamic {
            bootstrap: a,
            name_and_type: b,
        } => {
            put_u16(out, *a);
            put_u16(out, *b);
        }
        Constant::MethodHandle { kind, reference } => {
            out.push(*kind);
            put_u16(out, *reference);
        }
        Constant::Unusable => {}
    }
}

/// Decodes the JVM's modified UTF-8 (NUL as C0 80, supplementary characters as
/// surrogate pairs) by way of UTF-16.
pub fn decode_modified_utf8(bytes: &[u8]) -> Option<String> {
    let mut units = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (unit, len) = match b {
            0x01..=0x7f => (u16::from(b), 1),
            0xc0..=0xdf => {
                let b1 = *bytes.get(i + 1)?;
                ((u16::from(b & 0x1f) << 6) | u16::from(b1 & 0x3f), 2)
            }
            0xe0..=0xef => {
                let (b1, b2) = (*bytes.get(i + 1)?, *bytes.get(i + 2)?);
                let v = (u16::from(b & 0x0f) << 12)
                    | (u16::from(b1 & 0x3f) << 6)
                    | u16::from(b2 & 0x3f);
                (v, 3)
            }
            _ => return None,
        };
        units.push(unit);
        i += len;
    }
    String::from_utf16(&units).ok()
}

pub fn encode_modified_utf8(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for unit in text.encode_utf16() {
        match unit {
            0x01..=0x7f => out.push(unit as u8),
            0 | 0x80..=0x7ff => {
                out.push(0xc0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                out.push(0xe0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_utf8_round_trips_nul_and_supplementary_characters() {
        for text in ["plain", "nul\0here", "é€", "emoji 😀"] {
            let bytes = encode_modified_utf8(text);
            assert!(!bytes.contains(&0), "{text:?} must not encode a raw NUL");
            assert_eq!(decode_modified_utf8(&bytes).as_deref(), Some(text));
        }
        assert_eq!(encode_modified_utf8("😀").len(), 6, "two 3-byte surrogates");
    }

    #[test]
    fn find_or_add_reuses_entries_and_skips_the_second_slot_of_longs() {
        let mut pool = ConstantPool {
            entries: vec![Constant::Unusable],
        };
        let a = pool.add_class("a/B").unwrap();
        assert_eq!(pool.add_class("a/B").unwrap(), a);
        let long = pool.find_or_add(Constant::Long(7)).unwrap();
        let next = pool.add_utf8("x").unwrap();
        assert_eq!(next, long + 2);
        assert_eq!(pool.len(), usize::from(next) + 1);
    }
}
