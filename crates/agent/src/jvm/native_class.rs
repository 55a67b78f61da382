//! Classes of static natives the agent makes at run time: synthesised with the
//! bytecode crate's class writer (no code, so no javac and no files), defined in
//! the bootstrap loader so every class can see them, bound to Rust functions
//! with RegisterNatives and readable by every named module. Exact tracing's
//! probes (`jscope/Trace`) and the remote captures' inserted calls
//! (`jscope/Remote`) call into the agent through them.

use std::ffi::c_void;

use jscope_bytecode::ClassFile;

use super::{Jni, Jvmti};
use crate::sys;

/// Why a class of natives could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum NativeClassError {
    #[error("cannot build the probe class: {0}")]
    Build(#[from] jscope_bytecode::ClassError),
    #[error("cannot define the probe class {0} in the bootstrap loader")]
    Define(String),
    #[error("cannot bind the probe natives of {0}")]
    Natives(String),
}

/// A `public static native` method: name, descriptor, the function it is bound to.
pub type Native<'a> = (&'a str, &'a str, *mut c_void);

/// The class file of `name` with `natives` (their functions are not needed).
pub fn class_bytes(name: &str, natives: &[Native]) -> Result<Vec<u8>, jscope_bytecode::ClassError> {
    let methods: Vec<(&str, &str)> = natives.iter().map(|(n, d, _)| (*n, *d)).collect();
    ClassFile::natives_only(name, &methods)
}

/// Defines class `name` of `natives` in the bootstrap loader, binds them and
/// lets every named module read the bootstrap loader's unnamed module it lives
/// in (instrumented JDK classes in java.base and friends must be allowed to
/// call it). Returns a local reference to the class.
pub fn define(
    jvmti: Jvmti,
    jni: Jni,
    name: &str,
    natives: &[Native],
) -> Result<sys::jclass, NativeClassError> {
    let bytes = class_bytes(name, natives)?;
    let class = jni.define_boot_class(name, &bytes);
    if class.is_null() {
        return Err(NativeClassError::Define(name.to_string()));
    }
    if !jni.register_natives(class, natives) {
        jni.delete_local(class);
        return Err(NativeClassError::Natives(name.to_string()));
    }
    read_by_all_modules(jvmti, jni, class);
    Ok(class)
}

/// Lets every named module read `class`'s module (a class the agent defined in
/// the bootstrap loader, which instrumented JDK classes call). Modules defined
/// later (application layers) are not covered; their classes
/// fail with IllegalAccessError only if instrumented, which docs/AGENT.md notes.
fn read_by_all_modules(jvmti: Jvmti, jni: Jni, class: sys::jclass) {
    let target = jni.module_of(class);
    if target.is_null() {
        return; // JDK 8: no modules, nothing to open
    }
    let modules = jvmti.all_modules();
    // GetAllModules hands back one local reference per module at once (68 on a
    // full JDK 17), above the frame's 32 that -Xcheck:jni warns about.
    jni.ensure_local_capacity(modules.len() + 64);
    for module in modules {
        jvmti.add_module_reads(module, target);
        jni.delete_local(module);
    }
    jni.delete_local(target);
}
