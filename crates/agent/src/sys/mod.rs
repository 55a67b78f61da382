//! Raw JVMTI and JNI declarations, generated once by `sys-gen.sh` (see the header
//! of `jvmti.rs`); the build never runs bindgen. Generated code is exempt from
//! the crate's `undocumented_unsafe_blocks`.

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    unnecessary_transmutes,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
mod jvmti;

pub use jvmti::*;
