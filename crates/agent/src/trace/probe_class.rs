//! The probe class `jscope/Trace`: synthesised at run time with the bytecode
//! crate's class writer (three `public static native (I)V` probes and
//! `started(Thread)`, which `Thread.start` calls; no code, so no javac and no
//! files), defined in the bootstrap loader so every class can see it, and bound
//! to the Rust probes with RegisterNatives.

use std::ffi::c_void;

use jscope_bytecode::{ClassFile, Probes, PROBE_DESCRIPTOR};

use super::probe;
use crate::jvm::{Jni, Jvmti};
use crate::sys;

/// Why the probe class could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeClassError {
    #[error("cannot build the probe class: {0}")]
    Build(#[from] jscope_bytecode::ClassError),
    #[error("cannot define the probe class {0} in the bootstrap loader")]
    Define(String),
    #[error("cannot bind the probe natives of {0}")]
    Natives(String),
}

/// The native `Thread.start` calls with the thread it starts (see
/// `hook::THREAD_CLASS`).
pub const STARTED: (&str, &str) = ("started", "(Ljava/lang/Thread;)V");

/// The class file of the probe class: three `public static native (I)V` and
/// [`STARTED`].
pub fn class_bytes(probes: &Probes) -> Result<Vec<u8>, jscope_bytecode::ClassError> {
    let [enter, exit, exit_throw] =
        [&probes.enter, &probes.exit, &probes.exit_throw].map(|n| (n.as_str(), PROBE_DESCRIPTOR));
    ClassFile::natives_only(&probes.class, &[enter, exit, exit_throw, STARTED])
}

/// Defines the probe class, binds its natives and lets every named module read
/// the bootstrap loader's unnamed module it lives in (instrumented JDK classes in
/// java.base and friends must be allowed to call it). Returns a global reference.
pub fn install(jvmti: Jvmti, jni: Jni, probes: &Probes) -> Result<sys::jclass, ProbeClassError> {
    let bytes = class_bytes(probes)?;
    let class = jni.define_boot_class(&probes.class, &bytes);
    if class.is_null() {
        return Err(ProbeClassError::Define(probes.class.clone()));
    }
    bind_natives(jni, class, probes)?;
    let global = jni.new_global(class);
    crate::jvm::read_by_all_modules(jvmti, jni, class);
    jni.delete_local(class);
    Ok(global)
}

fn bind_natives(jni: Jni, class: sys::jclass, probes: &Probes) -> Result<(), ProbeClassError> {
    let methods = [
        (
            probes.enter.as_str(),
            PROBE_DESCRIPTOR,
            probe::native_enter as *mut c_void,
        ),
        (
            probes.exit.as_str(),
            PROBE_DESCRIPTOR,
            probe::native_exit as *mut c_void,
        ),
        (
            probes.exit_throw.as_str(),
            PROBE_DESCRIPTOR,
            probe::native_exit_throw as *mut c_void,
        ),
        (STARTED.0, STARTED.1, probe::native_started as *mut c_void),
    ];
    if jni.register_natives(class, &methods) {
        Ok(())
    } else {
        Err(ProbeClassError::Natives(probes.class.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_bytecode::class::{ACC_NATIVE, ACC_PUBLIC, ACC_STATIC};

    #[test]
    fn the_probe_class_parses_back_with_its_static_natives() {
        let bytes = class_bytes(&Probes::default()).unwrap();
        let class = ClassFile::parse(&bytes).unwrap();
        assert_eq!(class.name().unwrap(), "jscope/Trace");
        let names: Vec<String> = class
            .methods
            .iter()
            .map(|m| class.pool.utf8(m.name_index).unwrap())
            .collect();
        assert_eq!(names, ["enter", "exit", "exitThrow", "started"]);
        assert!(class
            .methods
            .iter()
            .all(|m| m.access == ACC_PUBLIC | ACC_STATIC | ACC_NATIVE));
    }
}
