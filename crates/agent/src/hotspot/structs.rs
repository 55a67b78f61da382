//! HotSpot's exported description of itself: the tables libjvm publishes for
//! its Serviceability Agent (`gHotSpotVMStructs`, `gHotSpotVMTypes`,
//! `gHotSpotVMIntConstants`, `gHotSpotVMLongConstants`), read once at start,
//! off the signal handler, into maps by name. Each table is an array of
//! entries whose field offsets and stride are themselves exported, so the
//! reader depends on no C++ layout of its own; the last entry has a null name.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};

/// A field of a HotSpot type: its offset in an instance, or the address of a
/// static field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Offset(usize),
    Static(usize),
}

/// A field and the C++ type it is declared with (`int`, `int16_t`, `CompLevel`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub field: Field,
    pub type_name: String,
}

/// The four tables, by name.
#[derive(Debug, Default, Clone)]
pub struct VmStructs {
    /// (type, field) → where it is, and its declared type.
    pub fields: HashMap<(String, String), Entry>,
    /// type → its size in bytes.
    pub sizes: HashMap<String, usize>,
    pub ints: HashMap<String, i64>,
    pub longs: HashMap<String, i64>,
}

impl VmStructs {
    /// Reads the tables of the libjvm loaded in this process; None when they
    /// are not exported (not HotSpot, or a stripped build).
    pub fn read() -> Option<VmStructs> {
        let mut s = VmStructs::default();
        // SAFETY: each table and its layout variables are what libjvm exports
        // for the Serviceability Agent; read_* checks each symbol exists.
        unsafe {
            read_fields(&mut s.fields)?;
            read_types(&mut s.sizes)?;
            read_constants("Int", &mut s.ints, |p| i64::from(*p.cast::<i32>()))?;
            read_constants("Long", &mut s.longs, |p| *p.cast::<i64>())?;
        }
        Some(s)
    }

    /// The offset of instance field `field` of `ty`.
    pub fn offset(&self, ty: &str, field: &str) -> Option<usize> {
        match self.fields.get(&(ty.to_string(), field.to_string()))?.field {
            Field::Offset(o) => Some(o),
            Field::Static(_) => None,
        }
    }

    /// The address of static field `field` of `ty`.
    pub fn address(&self, ty: &str, field: &str) -> Option<usize> {
        match self.fields.get(&(ty.to_string(), field.to_string()))?.field {
            Field::Static(a) => Some(a),
            Field::Offset(_) => None,
        }
    }

    /// The declared C++ type of a field (`int`, `int16_t`, `CompLevel`).
    pub fn type_of(&self, ty: &str, field: &str) -> Option<&str> {
        self.fields
            .get(&(ty.to_string(), field.to_string()))
            .map(|e| e.type_name.as_str())
    }

    /// The size of type `ty`.
    pub fn size(&self, ty: &str) -> Option<usize> {
        self.sizes.get(ty).copied()
    }

    /// An int constant.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.ints.get(name).copied()
    }

    /// A long constant.
    pub fn long(&self, name: &str) -> Option<i64> {
        self.longs.get(name).copied()
    }
}

/// The value of exported variable `name` (a `uint64_t` or a pointer).
unsafe fn exported_word(name: &CStr) -> Option<usize> {
    // SAFETY: dlsym with RTLD_DEFAULT searches the global scope, where the
    // launcher loaded libjvm.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: the symbol is a word-sized variable.
    Some(unsafe { *p.cast::<usize>() })
}

fn word(name: &str) -> Option<usize> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: a NUL-terminated symbol name.
    unsafe { exported_word(&name) }
}

/// The string a table entry points to at `at`, or None for the terminator.
unsafe fn string_at(at: *const u8) -> Option<String> {
    // SAFETY: the field holds a `const char*` (maybe null).
    let p = unsafe { *at.cast::<*const c_char>() };
    if p.is_null() {
        return None;
    }
    // SAFETY: HotSpot's table strings are NUL-terminated literals.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Entries of table `table` (stride `stride`), each handed to `each` until
/// its name at `name_offset` is null. A bound keeps a broken table from
/// running on.
unsafe fn entries(table: &str, stride: &str, name_offset: &str, mut each: impl FnMut(*const u8)) {
    let (Some(base), Some(stride), Some(name_offset)) =
        (word(table), word(stride), word(name_offset))
    else {
        return;
    };
    if base == 0 || stride == 0 {
        return;
    }
    for i in 0..100_000 {
        let entry = (base + i * stride) as *const u8;
        // SAFETY: within the table, whose terminator ends this loop.
        if unsafe { string_at(entry.add(name_offset)) }.is_none() {
            return;
        }
        each(entry);
    }
}

unsafe fn read_fields(out: &mut HashMap<(String, String), Entry>) -> Option<()> {
    let type_name = word("gHotSpotVMStructEntryTypeNameOffset")?;
    let type_string = word("gHotSpotVMStructEntryTypeStringOffset")?;
    let field_name = word("gHotSpotVMStructEntryFieldNameOffset")?;
    let is_static = word("gHotSpotVMStructEntryIsStaticOffset")?;
    let offset = word("gHotSpotVMStructEntryOffsetOffset")?;
    let address = word("gHotSpotVMStructEntryAddressOffset")?;
    // SAFETY: entries of the exported table, read at its exported offsets.
    unsafe {
        entries(
            "gHotSpotVMStructs",
            "gHotSpotVMStructEntryArrayStride",
            "gHotSpotVMStructEntryTypeNameOffset",
            |e| {
                let (Some(ty), Some(name)) =
                    (string_at(e.add(type_name)), string_at(e.add(field_name)))
                else {
                    return;
                };
                let field = if *e.add(is_static).cast::<i32>() != 0 {
                    Field::Static(*e.add(address).cast::<usize>())
                } else {
                    Field::Offset(*e.add(offset).cast::<u64>() as usize)
                };
                let type_name = string_at(e.add(type_string)).unwrap_or_default();
                out.insert((ty, name), Entry { field, type_name });
            },
        );
    }
    (!out.is_empty()).then_some(())
}

unsafe fn read_types(out: &mut HashMap<String, usize>) -> Option<()> {
    let size = word("gHotSpotVMTypeEntrySizeOffset")?;
    let name = word("gHotSpotVMTypeEntryTypeNameOffset")?;
    // SAFETY: entries of the exported table, read at its exported offsets.
    unsafe {
        entries(
            "gHotSpotVMTypes",
            "gHotSpotVMTypeEntryArrayStride",
            "gHotSpotVMTypeEntryTypeNameOffset",
            |e| {
                if let Some(ty) = string_at(e.add(name)) {
                    out.insert(ty, *e.add(size).cast::<u64>() as usize);
                }
            },
        );
    }
    (!out.is_empty()).then_some(())
}

unsafe fn read_constants(
    kind: &str,
    out: &mut HashMap<String, i64>,
    value: impl Fn(*const u8) -> i64,
) -> Option<()> {
    let name = word(&format!("gHotSpotVM{kind}ConstantEntryNameOffset"))?;
    let at = word(&format!("gHotSpotVM{kind}ConstantEntryValueOffset"))?;
    // SAFETY: entries of the exported table, read at its exported offsets.
    unsafe {
        entries(
            &format!("gHotSpotVM{kind}Constants"),
            &format!("gHotSpotVM{kind}ConstantEntryArrayStride"),
            &format!("gHotSpotVM{kind}ConstantEntryNameOffset"),
            |e| {
                if let Some(n) = string_at(e.add(name)) {
                    out.insert(n, value(e.add(at)));
                }
            },
        );
    }
    Some(())
}
