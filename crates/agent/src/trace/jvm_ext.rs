//! The few JVMTI and JNI calls only tracing needs (class definition, natives,
//! modules, retransformation), wrapped like `crate::jvm` wraps the rest: each
//! call checks its result and frees what JVMTI allocated.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_void, CStr, CString};
use std::ptr::null_mut;

use crate::jvm::{check, Jni, Jvmti, JvmtiError};
use crate::sys;

/// Retransformation and class-file hooks for every class (always available in
/// HotSpot, in the live phase too).
pub fn add_capabilities(jvmti: Jvmti) -> Result<(), JvmtiError> {
    // SAFETY: an all-zero capabilities struct is valid.
    let mut caps: sys::jvmtiCapabilities = unsafe { std::mem::zeroed() };
    caps.set_can_retransform_classes(1);
    caps.set_can_generate_all_class_hook_events(1);
    let add = jvmti
        .table()
        .AddCapabilities
        .expect("JVMTI AddCapabilities");
    // SAFETY: valid env and struct.
    check(unsafe { add(jvmti.0, &caps) })
}

pub fn set_class_hook(jvmti: Jvmti, enabled: bool) -> Result<(), JvmtiError> {
    jvmti.set_event(enabled, sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)
}

pub fn retransform(jvmti: Jvmti, classes: &[sys::jclass]) -> Result<(), JvmtiError> {
    if classes.is_empty() {
        return Ok(());
    }
    let f = jvmti
        .table()
        .RetransformClasses
        .expect("JVMTI RetransformClasses");
    // SAFETY: valid env and class references.
    check(unsafe { f(jvmti.0, classes.len() as sys::jint, classes.as_ptr()) })
}

pub fn is_modifiable(jvmti: Jvmti, class: sys::jclass) -> bool {
    let mut yes = 0;
    let f = jvmti
        .table()
        .IsModifiableClass
        .expect("JVMTI IsModifiableClass");
    // SAFETY: valid env, class reference and out-pointer.
    check(unsafe { f(jvmti.0, class, &mut yes) }).is_ok() && yes != 0
}

/// Copies `bytes` into memory JVMTI allocated (what ClassFileLoadHook must return).
pub fn allocate_copy(jvmti: Jvmti, bytes: &[u8]) -> Option<*mut u8> {
    let mut mem = null_mut();
    let f = jvmti.table().Allocate?;
    // SAFETY: valid env and out-pointer.
    check(unsafe { f(jvmti.0, bytes.len() as sys::jlong, &mut mem) }).ok()?;
    // SAFETY: JVMTI allocated bytes.len() writable bytes at mem.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), mem, bytes.len()) };
    Some(mem)
}

/// The JVM signature of a class (`Ljava/lang/String;`).
pub fn class_signature(jvmti: Jvmti, class: sys::jclass) -> Option<String> {
    let mut sig = null_mut();
    let f = jvmti.table().GetClassSignature?;
    // SAFETY: valid env, class reference and out-pointer.
    check(unsafe { f(jvmti.0, class, &mut sig, null_mut()) }).ok()?;
    // SAFETY: JVMTI returns a NUL-terminated string, freed right after.
    let s = unsafe { CStr::from_ptr(sig) }
        .to_string_lossy()
        .into_owned();
    jvmti.deallocate(sig.cast());
    Some(s)
}

/// Every module the VM has defined, as local references.
pub fn all_modules(jvmti: Jvmti) -> Vec<sys::jobject> {
    let (mut n, mut modules) = (0, null_mut());
    let Some(f) = jvmti.table().GetAllModules else {
        return Vec::new();
    };
    // SAFETY: valid env and out-pointers.
    if check(unsafe { f(jvmti.0, &mut n, &mut modules) }).is_err() || modules.is_null() {
        return Vec::new();
    }
    // SAFETY: JVMTI allocated n references.
    let v = unsafe { std::slice::from_raw_parts(modules, n.max(0) as usize) }.to_vec();
    jvmti.deallocate(modules.cast());
    v
}

pub fn add_module_reads(jvmti: Jvmti, module: sys::jobject, to: sys::jobject) -> bool {
    let Some(f) = jvmti.table().AddModuleReads else {
        return false;
    };
    // SAFETY: valid env and module references.
    check(unsafe { f(jvmti.0, module, to) }).is_ok()
}

/// Defines a class in the bootstrap loader (a null loader); null on failure,
/// with the exception cleared.
pub fn define_boot_class(jni: Jni, name: &str, bytes: &[u8]) -> sys::jclass {
    let Ok(name) = CString::new(name) else {
        return null_mut();
    };
    let f = jni.table().DefineClass.expect("JNI DefineClass");
    // SAFETY: valid env, name and class bytes for the duration of the call.
    let class = unsafe {
        f(
            jni.0,
            name.as_ptr(),
            null_mut(),
            bytes.as_ptr().cast(),
            bytes.len() as sys::jsize,
        )
    };
    jni.clear_exception();
    class
}

/// Binds `methods` (name, JVM descriptor, function) of `class`; false (with the
/// Java exception cleared) when the JVM refuses.
pub fn register_natives(
    jni: Jni,
    class: sys::jclass,
    methods: &[(&str, &str, *mut c_void)],
) -> bool {
    let names: Vec<(CString, CString)> = methods
        .iter()
        .map(|(name, sig, _)| {
            (
                CString::new(*name).unwrap_or_default(),
                CString::new(*sig).unwrap_or_default(),
            )
        })
        .collect();
    let table: Vec<sys::JNINativeMethod> = names
        .iter()
        .zip(methods)
        .map(|((name, sig), (_, _, f))| sys::JNINativeMethod {
            name: name.as_ptr() as *mut _,
            signature: sig.as_ptr() as *mut _,
            fnPtr: *f,
        })
        .collect();
    let f = jni.table().RegisterNatives.expect("JNI RegisterNatives");
    // SAFETY: valid env, class and method table; the strings outlive the call.
    let ok = unsafe { f(jni.0, class, table.as_ptr(), table.len() as sys::jint) } == 0;
    jni.clear_exception();
    ok
}

/// `class.getModule()`, as a local reference (null on failure).
pub fn module_of(jni: Jni, class: sys::jclass) -> sys::jobject {
    let t = jni.table();
    let class_class = jni.find_class("java/lang/Class");
    if class_class.is_null() {
        return null_mut();
    }
    // SAFETY (both calls): valid env, class and method references.
    let get = unsafe {
        (t.GetMethodID.expect("JNI GetMethodID"))(
            jni.0,
            class_class,
            c"getModule".as_ptr(),
            c"()Ljava/lang/Module;".as_ptr(),
        )
    };
    jni.delete_local(class_class);
    if get.is_null() {
        jni.clear_exception();
        return null_mut();
    }
    let call = t.CallObjectMethodA.expect("JNI CallObjectMethodA");
    let module = unsafe { call(jni.0, class, get, std::ptr::null()) };
    jni.clear_exception();
    module
}

/// The superclass of `class` as a local reference (null for Object and interfaces).
pub fn superclass(jni: Jni, class: sys::jclass) -> sys::jclass {
    let f = jni.table().GetSuperclass.expect("JNI GetSuperclass");
    // SAFETY: valid env and class reference.
    unsafe { f(jni.0, class) }
}

/// The interfaces `class` declares directly, as local references.
pub fn interfaces(jvmti: Jvmti, class: sys::jclass) -> Vec<sys::jclass> {
    let (mut n, mut list) = (0, null_mut());
    let Some(f) = jvmti.table().GetImplementedInterfaces else {
        return Vec::new();
    };
    // SAFETY: valid env, class reference and out-pointers.
    if check(unsafe { f(jvmti.0, class, &mut n, &mut list) }).is_err() || list.is_null() {
        return Vec::new();
    }
    // SAFETY: JVMTI allocated n references.
    let v = unsafe { std::slice::from_raw_parts(list, n.max(0) as usize) }.to_vec();
    jvmti.deallocate(list.cast());
    v
}
