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

/// How native frames are walked (`cstack=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CStack {
    /// DWARF call frame information (`.eh_frame`) through library code, frame
    /// pointers where it has none; every thread of the process.
    #[default]
    Dwarf,
    /// Frame pointers through library code, every thread of the process.
    Fp,
    /// Java frames of Java threads only (jscope's profile before native stacks).
    No,
}

impl CStack {
    pub fn parse(text: &str) -> Option<CStack> {
        match text {
            "dwarf" | "yes" => Some(CStack::Dwarf),
            "fp" => Some(CStack::Fp),
            "no" | "none" => Some(CStack::No),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            CStack::Dwarf => "dwarf",
            CStack::Fp => "fp",
            CStack::No => "no",
        }
    }

    /// Every thread sampled, with native (and kernel) frames.
    pub fn mixed(self) -> bool {
        self != CStack::No
    }
}
