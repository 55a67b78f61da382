//! All of the process in cpu mode: every thread sampled (Java or not), native
//! frames walked under Java frames, kernel frames from perf_events, and perf
//! events as sampling sources.
//!
//! - [`elf`], [`kallsyms`]: symbols of the loaded ELF libraries and of the
//!   kernel, read on the writer thread.
//! - [`names`]: the writer's names of native and kernel frames.
//! - [`perf`]: per-thread perf_event counters whose overflow signals their thread.
//! - [`cfi`]: DWARF unwind tables of the loaded objects for `cstack=dwarf`,
//!   built off the handler.
//! - [`walk`]: the handler's walk over library code (unwind rows or frame
//!   pointers).
//! - [`scan`]: the thread that arms threads the JVM starts outside JVMTI's view
//!   (GC workers, compiler threads, native threads) and keeps the code table fresh.

pub mod cfi;
pub mod elf;
pub mod kallsyms;
pub mod names;
pub mod perf;
pub(crate) mod scan;
pub mod walk;

/// How stacks are walked (`cstack=`): which Java walker, and how native
/// frames are unwound and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CStack {
    /// The walker over HotSpot's VM structures for Java frames, native frames
    /// (DWARF) above the Java frames; every thread of the process. Falls back
    /// to [`CStack::Asgct`] where the structures cannot be used.
    #[default]
    Vm,
    /// As [`CStack::Vm`], with native frames between Java frames too, in their
    /// true place.
    Vmx,
    /// AsyncGetCallTrace for Java frames, native frames (DWARF) above them and
    /// found between them by a search of the stack.
    Asgct,
    /// As [`CStack::Vm`] (native frames by DWARF unwind rows).
    Dwarf,
    /// As [`CStack::Vm`], native frames by frame pointers only.
    Fp,
    /// Java frames of Java threads only (jscope's profile before native stacks).
    No,
}

impl CStack {
    pub fn parse(text: &str) -> Option<CStack> {
        match text {
            "vm" => Some(CStack::Vm),
            "vmx" => Some(CStack::Vmx),
            "asgct" => Some(CStack::Asgct),
            "dwarf" | "yes" => Some(CStack::Dwarf),
            "fp" => Some(CStack::Fp),
            "no" | "none" => Some(CStack::No),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            CStack::Vm => "vm",
            CStack::Vmx => "vmx",
            CStack::Asgct => "asgct",
            CStack::Dwarf => "dwarf",
            CStack::Fp => "fp",
            CStack::No => "no",
        }
    }

    /// Every thread sampled, with native (and kernel) frames.
    pub fn mixed(self) -> bool {
        self != CStack::No
    }

    /// Native code unwound by DWARF rows (else by frame pointers). With
    /// `cstack=no` too: its frames are not kept, but a Java thread in a leaf
    /// call from compiled code (libm, the VM's clock) is unwound to its Java
    /// frames through them.
    pub fn dwarf(self) -> bool {
        self != CStack::Fp
    }

    /// Java frames by the VM structure walker (else AsyncGetCallTrace).
    pub fn vm_walker(self) -> bool {
        self != CStack::Asgct
    }

    /// Native frames between Java frames, in their place.
    pub fn interleaved(self) -> bool {
        self == CStack::Vmx
    }
}
