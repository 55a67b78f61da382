//! All of the process in cpu mode: every thread sampled (Java or not), native
//! frames walked under Java frames, kernel frames from perf_events, and perf
//! events as sampling sources.
//!
//! - [`elf`], [`kallsyms`]: symbols of the loaded ELF libraries and of the
//!   kernel, read on the writer thread.
//! - [`names`]: the writer's names of native and kernel frames.
//! - [`perf`]: per-thread perf_event counters whose overflow signals their thread.
//! - [`walk`]: the handler's frame-pointer walk over library code.
//! - [`scan`]: the thread that arms threads the JVM starts outside JVMTI's view
//!   (GC workers, compiler threads, native threads) and keeps the code table fresh.

pub mod elf;
pub mod kallsyms;
pub mod names;
pub mod perf;
pub(crate) mod scan;
pub mod walk;

/// How native frames are walked (`cstack=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CStack {
    /// Frame pointers through library code, every thread of the process.
    #[default]
    Fp,
    /// Java frames of Java threads only (jscope's profile before native stacks).
    No,
}

impl CStack {
    pub fn parse(text: &str) -> Option<CStack> {
        match text {
            "fp" | "yes" => Some(CStack::Fp),
            "no" | "none" => Some(CStack::No),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            CStack::Fp => "fp",
            CStack::No => "no",
        }
    }
}
