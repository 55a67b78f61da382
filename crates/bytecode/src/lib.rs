//! Class-file parsing, code relocation and probe insertion for exact method tracing.
//!
//! [`ClassFile`] reads and writes class files of versions 45.3 to 69 (JDK 25) and
//! writes an unchanged file back byte-identical. [`instrument`] inserts calls to
//! static `(I)V` probe methods at method entry, before every return and in a
//! catch-all handler, relocating everything that holds a code offset. Methods it
//! cannot rewrite safely are left unchanged and reported with a [`Reason`].
//! [`call_with_arguments`] hands a chosen method's arguments to a probe at its
//! entry (remote-call capture reads requests from them).
//! Pure Rust: no JVM is needed to use it.

mod bytes;
pub mod class;
pub mod code;
mod error;
pub mod frames;
pub mod insn;
mod instrument;
mod layout;
pub mod pool;
mod tables;
mod typeflow;

pub use class::{Attribute, ClassFile, Member};
pub use code::{CodeAttribute, ExceptionEntry};
pub use error::ClassError;
pub use instrument::{
    call_with_arguments, instrument, prepend_this_call, ArgumentProbes, CallSite, CallsInserted,
    Instrumented, MethodOutcome, Outcome, Probes, Reason, ARGUMENTS_PROBE_DESCRIPTOR,
    PROBE_DESCRIPTOR,
};
pub use pool::{Constant, ConstantPool};
