//! Where the walker finds what it reads: every offset and static address it
//! needs, taken from the VM structure tables ([`VmStructs`]) of the running
//! JVM, JDK 11 to 25. What the tables do not export (the interpreter's frame
//! slots) is x86_64's fixed layout, the same on every version.
//!
//! [`Layout::resolve`] fails, naming the first entry missing, when this JVM's
//! tables lack something: the recording then falls back to AsyncGetCallTrace.

use super::structs::VmStructs;

/// Where a compiled method's sections are, which moved in JDK 23.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sections {
    /// JDK 11-22: scopes data by pointer, PcDescs and metadata by offsets from
    /// the nmethod.
    Inline {
        scopes_data_begin: usize,
        scopes_pcs_offset: usize,
        /// The PcDescs end where the dependencies start.
        dependencies_offset: usize,
        metadata_offset: usize,
    },
    /// JDK 23+: PcDescs and scopes data in the immutable data block, metadata
    /// after the relocations in the mutable data block.
    Split {
        immutable_data: usize,
        scopes_pcs_offset: usize,
        scopes_data_offset: usize,
        mutable_data: usize,
        relocation_size: usize,
    },
}

/// Where a blob's code starts, which turned from a pointer into an offset in JDK 23.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeBegin {
    Pointer(usize),
    Offset(usize),
}

/// Where a compiled method's verified entry is: a pointer before JDK 23, an
/// offset from its code's start since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifiedEntry {
    Pointer(usize),
    Offset(usize),
}

/// A C++ integer field and its width in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntField {
    pub offset: usize,
    pub bytes: u8,
}

/// How a compressed class pointer becomes a Klass*.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KlassDecoding {
    /// Addresses of the narrow-klass base and shift statics.
    pub base: usize,
    pub shift: usize,
    /// Compact object headers (JDK 24+): the narrow klass sits in the mark
    /// word's upper bits, from this bit.
    pub mark_shift: Option<u32>,
    /// `-XX:-UseCompressedClassPointers`: a full pointer after the mark word.
    pub uncompressed: bool,
}

/// The offsets and addresses the walker reads, for one JVM.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The JDK's feature version (11, 17, 21, 25).
    pub feature: u32,

    // Code cache.
    pub code_heaps: usize,
    pub code_low_bound: usize,
    pub code_high_bound: usize,
    pub array_len: usize,
    pub array_data: usize,
    pub heap_memory: usize,
    pub heap_segmap: usize,
    pub heap_log2_segment: usize,
    pub vs_low_boundary: usize,
    pub vs_high_boundary: usize,
    pub vs_low: usize,
    pub vs_high: usize,
    pub heap_block_size: usize,
    pub heap_block_used: usize,

    // CodeBlob and nmethod.
    pub blob_name: usize,
    pub blob_size: usize,
    pub blob_frame_complete: IntField,
    pub blob_frame_size: usize,
    pub blob_code_begin: CodeBegin,
    pub nm_method: usize,
    pub nm_comp_level: IntField,
    pub nm_orig_pc_offset: usize,
    pub nm_compile_id: usize,
    pub nm_verified_entry: VerifiedEntry,
    pub nm_sections: Sections,

    // Methods and classes.
    pub method_const: usize,
    pub method_access_flags: usize,
    pub const_constants: usize,
    pub const_code_size: usize,
    pub const_idnum: usize,
    pub const_size: usize,
    pub pool_holder: usize,
    pub klass_jmethod_ids: usize,
    pub klass_name: usize,
    pub symbol_length: usize,
    pub symbol_body: usize,
    pub klass_decoding: KlassDecoding,

    // Threads and frames.
    pub thread_anchor: usize,
    pub thread_state: usize,
    pub thread_stack_base: usize,
    pub thread_stack_size: usize,
    pub thread_vframe_array_head: usize,
    pub anchor_sp: usize,
    pub anchor_pc: usize,
    pub anchor_fp: usize,
    pub wrapper_anchor: usize,
    /// Words from an entry frame's fp to its JavaCallWrapper*.
    pub entry_wrapper_words: isize,
    pub call_stub_return_address: usize,

    // Compiler threads.
    pub compiler_env: usize,
    pub env_task: usize,
    pub task_method: usize,
}

/// x86_64 interpreter frame slots, in words from fp (the same on JDK 11-25).
pub const INTERP_METHOD: isize = -3;
pub const INTERP_BCP: isize = -8;
pub const INTERP_SENDER_SP: isize = -1;

/// JVM_ACC_NATIVE in a Method's access flags.
pub const ACC_NATIVE: u32 = 0x0100;

impl Layout {
    /// The layout of the JVM whose tables are `s`; `Err` names what is missing.
    pub fn resolve(s: &VmStructs, feature: u32) -> Result<Layout, String> {
        let off = |ty: &str, field: &str| {
            s.offset(ty, field)
                .ok_or_else(|| format!("{ty}::{field} is not in the VM structures"))
        };
        let addr = |ty: &str, field: &str| {
            s.address(ty, field)
                .ok_or_else(|| format!("{ty}::{field} is not in the VM structures"))
        };
        let size = |ty: &str| {
            s.size(ty)
                .ok_or_else(|| format!("type {ty} is not in the VM structures"))
        };
        let int = |ty: &str, field: &str| -> Result<IntField, String> {
            let offset = off(ty, field)?;
            let bytes = match s.type_of(ty, field).unwrap_or("int") {
                "int16_t" | "short" | "u2" | "jshort" => 2,
                "CompLevel" | "u1" | "jbyte" | "char" | "bool" => 1,
                _ => 4,
            };
            Ok(IntField { offset, bytes })
        };
        // Fields that moved between CompiledMethod (JDK 11-22) and nmethod (23+).
        let either = |a: (&str, &str), b: (&str, &str)| off(a.0, a.1).or_else(|_| off(b.0, b.1));
        let growable = ["GrowableArrayBase", "GenericGrowableArray"];
        let array_len = growable
            .iter()
            .find_map(|t| s.offset(t, "_len"))
            .ok_or("GrowableArrayBase::_len is not in the VM structures")?;
        let heap_block_size = size("HeapBlock")?;
        let blob_code_begin = match s.offset("CodeBlob", "_code_begin") {
            Some(o) => CodeBegin::Pointer(o),
            None => CodeBegin::Offset(off("CodeBlob", "_code_offset")?),
        };
        let nm_sections = match s.offset("nmethod", "_immutable_data") {
            None => Sections::Inline {
                scopes_data_begin: either(
                    ("CompiledMethod", "_scopes_data_begin"),
                    ("nmethod", "_scopes_data_begin"),
                )?,
                scopes_pcs_offset: off("nmethod", "_scopes_pcs_offset")?,
                dependencies_offset: off("nmethod", "_dependencies_offset")?,
                metadata_offset: off("nmethod", "_metadata_offset")?,
            },
            Some(immutable_data) => Sections::Split {
                immutable_data,
                scopes_pcs_offset: off("nmethod", "_scopes_pcs_offset")?,
                scopes_data_offset: off("nmethod", "_scopes_data_offset")?,
                mutable_data: off("CodeBlob", "_mutable_data")?,
                relocation_size: off("CodeBlob", "_relocation_size")?,
            },
        };
        Ok(Layout {
            feature,
            code_heaps: addr("CodeCache", "_heaps")?,
            code_low_bound: addr("CodeCache", "_low_bound")?,
            code_high_bound: addr("CodeCache", "_high_bound")?,
            array_len,
            array_data: off("GrowableArray<int>", "_data")?,
            heap_memory: off("CodeHeap", "_memory")?,
            heap_segmap: off("CodeHeap", "_segmap")?,
            heap_log2_segment: off("CodeHeap", "_log2_segment_size")?,
            vs_low_boundary: off("VirtualSpace", "_low_boundary")?,
            vs_high_boundary: off("VirtualSpace", "_high_boundary")?,
            vs_low: off("VirtualSpace", "_low")?,
            vs_high: off("VirtualSpace", "_high")?,
            heap_block_size,
            // The header is {length, used}: a size_t length before JDK 25, a
            // 32-bit one since (and the block shrank to 8 bytes).
            heap_block_used: if heap_block_size == 8 { 4 } else { 8 },
            blob_name: off("CodeBlob", "_name")?,
            blob_size: off("CodeBlob", "_size")?,
            blob_frame_complete: int("CodeBlob", "_frame_complete_offset")?,
            blob_frame_size: off("CodeBlob", "_frame_size")?,
            blob_code_begin,
            nm_method: either(("CompiledMethod", "_method"), ("nmethod", "_method"))?,
            nm_comp_level: int("nmethod", "_comp_level")?,
            nm_orig_pc_offset: off("nmethod", "_orig_pc_offset")?,
            nm_compile_id: off("nmethod", "_compile_id")?,
            nm_verified_entry: match s.offset("nmethod", "_verified_entry_point") {
                Some(o) => VerifiedEntry::Pointer(o),
                None => VerifiedEntry::Offset(off("nmethod", "_verified_entry_offset")?),
            },
            nm_sections,
            method_const: off("Method", "_constMethod")?,
            method_access_flags: off("Method", "_access_flags")?,
            const_constants: off("ConstMethod", "_constants")?,
            const_code_size: off("ConstMethod", "_code_size")?,
            const_idnum: off("ConstMethod", "_method_idnum")?,
            const_size: size("ConstMethod")?,
            pool_holder: off("ConstantPool", "_pool_holder")?,
            klass_jmethod_ids: off("InstanceKlass", "_methods_jmethod_ids")?,
            klass_name: off("Klass", "_name")?,
            symbol_length: off("Symbol", "_length")?,
            symbol_body: off("Symbol", "_body")?,
            klass_decoding: klass_decoding(s)?,
            thread_anchor: off("JavaThread", "_anchor")?,
            thread_state: off("JavaThread", "_thread_state")?,
            thread_stack_base: either(("JavaThread", "_stack_base"), ("Thread", "_stack_base"))?,
            thread_stack_size: either(("JavaThread", "_stack_size"), ("Thread", "_stack_size"))?,
            thread_vframe_array_head: off("JavaThread", "_vframe_array_head")?,
            anchor_sp: off("JavaFrameAnchor", "_last_Java_sp")?,
            anchor_pc: off("JavaFrameAnchor", "_last_Java_pc")?,
            anchor_fp: off("JavaFrameAnchor", "_last_Java_fp")?,
            wrapper_anchor: off("JavaCallWrapper", "_anchor")?,
            entry_wrapper_words: s
                .int("frame::entry_frame_call_wrapper_offset")
                .unwrap_or(-6) as isize,
            call_stub_return_address: addr("StubRoutines", "_call_stub_return_address")?,
            compiler_env: off("CompilerThread", "_env")?,
            env_task: off("ciEnv", "_task")?,
            task_method: off("CompileTask", "_method")?,
        })
    }
}

/// How this JVM compresses class pointers in object headers.
fn klass_decoding(s: &VmStructs) -> Result<KlassDecoding, String> {
    let statics = [
        ("CompressedKlassPointers", "_base", "_shift"),
        (
            "CompressedKlassPointers",
            "_narrow_klass._base",
            "_narrow_klass._shift",
        ),
        ("Universe", "_narrow_klass._base", "_narrow_klass._shift"),
    ];
    let (base, shift) = statics
        .iter()
        .find_map(|(ty, b, sh)| Some((s.address(ty, b)?, s.address(ty, sh)?)))
        .ok_or("the narrow klass base is not in the VM structures")?;
    let compact = super::flags::bool_flag(s, "UseCompactObjectHeaders").unwrap_or(false);
    let mark_shift = match (compact, s.long("markWord::klass_shift")) {
        (true, Some(shift)) => Some(shift as u32),
        (true, None) => return Err("markWord::klass_shift is not in the VM structures".into()),
        _ => None,
    };
    let uncompressed = !super::flags::bool_flag(s, "UseCompressedClassPointers").unwrap_or(true);
    Ok(KlassDecoding {
        base,
        shift,
        mark_shift,
        uncompressed,
    })
}
