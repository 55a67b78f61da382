//! The class file as a whole: header, constant pool, members and raw attributes.
//! Attributes stay raw bytes here; the Code attribute is decoded on demand
//! ([`crate::CodeAttribute`]) so untouched parts write back byte-identical.

use crate::bytes::{put_len16, put_u16, put_u32, Reader};
use crate::pool::ConstantPool;
use crate::ClassError;

/// Oldest and newest class file major versions read (JDK 1.1 to JDK 25).
pub const MIN_MAJOR: u16 = 45;
pub const MAX_MAJOR: u16 = 69;

/// An attribute whose body is kept as raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub name_index: u16,
    pub info: Vec<u8>,
}

/// A field or a method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub access: u16,
    pub name_index: u16,
    pub descriptor_index: u16,
    pub attributes: Vec<Attribute>,
}

pub const ACC_PUBLIC: u16 = 0x0001;
pub const ACC_STATIC: u16 = 0x0008;
pub const ACC_FINAL: u16 = 0x0010;
pub const ACC_SUPER: u16 = 0x0020;
pub const ACC_NATIVE: u16 = 0x0100;
pub const ACC_ABSTRACT: u16 = 0x0400;

/// A parsed class file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassFile {
    pub minor: u16,
    pub major: u16,
    pub pool: ConstantPool,
    pub access: u16,
    pub this_class: u16,
    pub super_class: u16,
    pub interfaces: Vec<u16>,
    pub fields: Vec<Member>,
    pub methods: Vec<Member>,
    pub attributes: Vec<Attribute>,
}

impl ClassFile {
    pub fn parse(bytes: &[u8]) -> Result<Self, ClassError> {
        let mut r = Reader::new(bytes);
        let magic = r.u32()?;
        if magic != 0xCAFE_BABE {
            return Err(ClassError::BadMagic(magic));
        }
        let minor = r.u16()?;
        let major = r.u16()?;
        // 45.0-45.2 used narrower Code fields; nothing on a current JDK produces them.
        if !(MIN_MAJOR..=MAX_MAJOR).contains(&major) || (major == MIN_MAJOR && minor < 3) {
            return Err(ClassError::UnsupportedVersion { major, minor });
        }
        let pool = ConstantPool::parse(&mut r)?;
        let access = r.u16()?;
        let this_class = r.u16()?;
        let super_class = r.u16()?;
        let interfaces = (0..r.u16()?).map(|_| r.u16()).collect::<Result<_, _>>()?;
        let fields = parse_members(&mut r)?;
        let methods = parse_members(&mut r)?;
        let attributes = parse_attributes(&mut r)?;
        if r.remaining() != 0 {
            return Err(ClassError::TrailingBytes(r.remaining()));
        }
        Ok(ClassFile {
            minor,
            major,
            pool,
            access,
            this_class,
            super_class,
            interfaces,
            fields,
            methods,
            attributes,
        })
    }

    /// The class file of a `public final` class `name` (internal form, e.g.
    /// `jscope/Trace`) whose methods are all `public static native`, given as
    /// (name, descriptor): a class that only binds Rust functions to Java, in the
    /// Java 8 format (natives need no stack maps).
    pub fn natives_only(name: &str, methods: &[(&str, &str)]) -> Result<Vec<u8>, ClassError> {
        let mut pool = ConstantPool::new();
        let this_class = pool.add_class(name)?;
        let super_class = pool.add_class("java/lang/Object")?;
        let methods = methods
            .iter()
            .map(|(name, descriptor)| {
                Ok(Member {
                    access: ACC_PUBLIC | ACC_STATIC | ACC_NATIVE,
                    name_index: pool.add_utf8(name)?,
                    descriptor_index: pool.add_utf8(descriptor)?,
                    attributes: Vec::new(),
                })
            })
            .collect::<Result<Vec<_>, ClassError>>()?;
        ClassFile {
            minor: 0,
            major: 52,
            pool,
            access: ACC_PUBLIC | ACC_FINAL | ACC_SUPER,
            this_class,
            super_class,
            interfaces: Vec::new(),
            fields: Vec::new(),
            methods,
            attributes: Vec::new(),
        }
        .to_bytes()
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, ClassError> {
        let mut out = Vec::new();
        put_u32(&mut out, 0xCAFE_BABE);
        put_u16(&mut out, self.minor);
        put_u16(&mut out, self.major);
        self.pool.write(&mut out);
        put_u16(&mut out, self.access);
        put_u16(&mut out, self.this_class);
        put_u16(&mut out, self.super_class);
        put_len16(&mut out, self.interfaces.len())?;
        for i in &self.interfaces {
            put_u16(&mut out, *i);
        }
        write_members(&self.fields, &mut out)?;
        write_members(&self.methods, &mut out)?;
        write_attributes(&self.attributes, &mut out)?;
        Ok(out)
    }

    /// The internal name of this class (`java/util/ArrayList`).
    pub fn name(&self) -> Result<String, ClassError> {
        self.pool.class_name(self.this_class)
    }

    /// Finds an attribute of `attrs` by name.
    pub fn find_attribute<'a>(&self, attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
        attrs
            .iter()
            .find(|a| self.pool.utf8(a.name_index).is_ok_and(|n| n == name))
    }
}

fn parse_members(r: &mut Reader) -> Result<Vec<Member>, ClassError> {
    let count = r.u16()?;
    (0..count)
        .map(|_| {
            Ok(Member {
                access: r.u16()?,
                name_index: r.u16()?,
                descriptor_index: r.u16()?,
                attributes: parse_attributes(r)?,
            })
        })
        .collect()
}

fn write_members(members: &[Member], out: &mut Vec<u8>) -> Result<(), ClassError> {
    put_len16(out, members.len())?;
    for m in members {
        put_u16(out, m.access);
        put_u16(out, m.name_index);
        put_u16(out, m.descriptor_index);
        write_attributes(&m.attributes, out)?;
    }
    Ok(())
}

pub(crate) fn parse_attributes(r: &mut Reader) -> Result<Vec<Attribute>, ClassError> {
    let count = r.u16()?;
    (0..count)
        .map(|_| {
            let name_index = r.u16()?;
            let len = r.u32()? as usize;
            Ok(Attribute {
                name_index,
                info: r.take(len)?.to_vec(),
            })
        })
        .collect()
}

pub(crate) fn write_attributes(attrs: &[Attribute], out: &mut Vec<u8>) -> Result<(), ClassError> {
    put_len16(out, attrs.len())?;
    for a in attrs {
        put_u16(out, a.name_index);
        put_u32(
            out,
            u32::try_from(a.info.len()).map_err(|_| ClassError::TooLarge)?,
        );
        out.extend_from_slice(&a.info);
    }
    Ok(())
}
