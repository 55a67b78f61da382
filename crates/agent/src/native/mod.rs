//! Native code: symbols of the loaded ELF libraries and of the kernel, for mixed stacks.

pub mod elf;
pub mod kallsyms;
