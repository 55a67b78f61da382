//! The probe class `jscope/Trace`: three `public static native (I)V` probes and
//! `started(Thread)`, which `Thread.start` calls, bound to the Rust probes; a
//! class of natives as `jvm::native_class` makes them.

use std::ffi::c_void;

use jscope_bytecode::{Probes, PROBE_DESCRIPTOR};

use super::probe;
use crate::jvm::native_class::{self, Native, NativeClassError};
use crate::jvm::{Jni, Jvmti};
use crate::sys;

/// The native `Thread.start` calls with the thread it starts (see
/// `hook::THREAD_CLASS`).
pub const STARTED: (&str, &str) = ("started", "(Ljava/lang/Thread;)V");

/// The probe class's natives: three `(I)V` probes and [`STARTED`].
fn natives(probes: &Probes) -> [Native<'_>; 4] {
    [
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
    ]
}

/// Defines the probe class with its natives bound (`jvm::native_class`).
/// Returns a global reference.
pub fn install(jvmti: Jvmti, jni: Jni, probes: &Probes) -> Result<sys::jclass, NativeClassError> {
    let class = native_class::define(jvmti, jni, &probes.class, &natives(probes))?;
    let global = jni.new_global(class);
    jni.delete_local(class);
    Ok(global)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_bytecode::class::{ACC_NATIVE, ACC_PUBLIC, ACC_STATIC};
    use jscope_bytecode::ClassFile;

    #[test]
    fn the_probe_class_parses_back_with_its_static_natives() {
        let probes = Probes::default();
        let bytes = native_class::class_bytes(&probes.class, &natives(&probes)).unwrap();
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
