//! The ClassFileLoadHook: for each class loaded or retransformed while tracing is
//! on, the filters pick methods, the registry gives them probe ids and the
//! bytecode crate inserts the probes. A class the rewriter cannot read is left as
//! it is and counted; so is each method it refuses.

use std::collections::HashMap;
use std::ffi::{c_char, c_uchar};
use std::sync::atomic::Ordering;

use jscope_bytecode::{instrument, prepend_this_call, ClassFile, Outcome};

use super::filter::is_library;
use super::probe::{COUNT_BIT, LIBRARY_BIT};
use super::registry::{self, ProbeMethod};
use super::{session, Session};
use crate::jvm::entry::{guarded_in, TRACE};
use crate::jvm::{self, Jvmti};
use crate::sys;

/// Classes never given probes. java.lang.Object: its constructor runs for every
/// allocation and C2 crashed (JDK 17, SIGSEGV in find_instance_klass while
/// compiling an instrumented `Object.<init>` after retransformation).
const NEVER_TRACED: [&str; 1] = ["java/lang/Object"];

/// The class whose `start` methods always tell the probes which thread they
/// start (`jscope/Trace.started(this)` at their entry), whatever the filters, so
/// analysis links each started thread to the call that started it.
pub const THREAD_CLASS: &str = "java/lang/Thread";

const ACC_NATIVE: u16 = 0x0100;
const ACC_ABSTRACT: u16 = 0x0400;

/// The JVMTI callback (installed by lib.rs with the others).
///
/// # Safety
/// Called by the JVM only, with the pointers the JVMTI specification describes:
/// a NUL-terminated `name` (or null), `class_data_len` readable bytes at
/// `class_data`, and writable out-pointers.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn on_class_file_load(
    jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    _class_being_redefined: sys::jclass,
    _loader: sys::jobject,
    name: *const c_char,
    _protection_domain: sys::jobject,
    class_data_len: sys::jint,
    class_data: *const c_uchar,
    new_class_data_len: *mut sys::jint,
    new_class_data: *mut *mut c_uchar,
) {
    guarded_in(&TRACE, "class_file_load_hook", (), || {
        let Some(session) = session() else {
            return;
        };
        // Hidden classes have no name and are never traced.
        jvm::replace_class_file(
            Jvmti(jvmti),
            name,
            class_data_len,
            class_data,
            new_class_data_len,
            new_class_data,
            |name, bytes| rewrite(&session, name, bytes),
        );
    })
}

/// The instrumented class file, or None to leave the class unchanged.
pub fn rewrite(session: &Session, internal_name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    if internal_name == THREAD_CLASS {
        return rewrite_thread(session, bytes);
    }
    rewrite_selected(session, internal_name, bytes)
}

/// java.lang.Thread: `started(this)` at the entry of its `start` methods (the
/// probes come first when the filters select `start` too, so the marker lands
/// inside its traced call), then the probes the filters select.
fn rewrite_thread(session: &Session, bytes: &[u8]) -> Option<Vec<u8>> {
    let (name, descriptor) = super::probe_class::STARTED;
    let call = (session.probes.class.as_str(), name, descriptor);
    let marked = match prepend_this_call(bytes, |m, _| m == "start", call) {
        Ok(Some(b)) => b,
        _ => {
            session
                .counters
                .class_errors
                .fetch_add(1, Ordering::Relaxed);
            return rewrite_selected(session, THREAD_CLASS, bytes);
        }
    };
    session.instrumented(&THREAD_CLASS.replace('/', "."));
    Some(rewrite_selected(session, THREAD_CLASS, &marked).unwrap_or(marked))
}

/// The class file with the probes the filters select, or None when none.
fn rewrite_selected(session: &Session, internal_name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    if internal_name == session.probes.class
        || internal_name.starts_with("jscope/")
        || NEVER_TRACED.contains(&internal_name)
    {
        return None;
    }
    let dotted = internal_name.replace('/', ".");
    let with_subclasses = session.has_subclass_rules();
    if !with_subclasses && !session.wants_class(&dotted) {
        return None;
    }
    let class = match ClassFile::parse(bytes) {
        Ok(c) => c,
        Err(_) => {
            session
                .counters
                .class_errors
                .fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    if with_subclasses {
        session.learn_ancestry(&dotted, &class);
    }
    let ids = select_methods(session, &class, &dotted);
    if ids.is_empty() {
        return None;
    }
    let select = |_: &str, method: &str, desc: &str| {
        ids.get(&(method.to_string(), desc.to_string())).copied()
    };
    let result = match instrument(bytes, select, &session.probes) {
        Ok(r) => r,
        Err(_) => {
            session
                .counters
                .class_errors
                .fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    count(session, &result.methods);
    if result.bytes.is_some() {
        session.instrumented(&dotted);
    }
    result.bytes
}

fn count(session: &Session, methods: &[jscope_bytecode::MethodOutcome]) {
    let c = &session.counters;
    let done = methods
        .iter()
        .filter(|m| matches!(m.outcome, Outcome::Instrumented(_)))
        .count() as u64;
    let counting = methods
        .iter()
        .filter(|m| m.outcome == Outcome::Instrumented(COUNT_BIT))
        .count() as u64;
    c.methods_instrumented
        .fetch_add(done - counting, Ordering::Relaxed);
    c.methods_counting.fetch_add(counting, Ordering::Relaxed);
    c.methods_skipped
        .fetch_add(methods.len() as u64 - done, Ordering::Relaxed);
    if done > 0 {
        c.classes_instrumented.fetch_add(1, Ordering::Relaxed);
    }
}

/// Probe ids of the methods of `class` the filters select, keyed by (name,
/// descriptor); abstract and native methods have no code to probe.
fn select_methods(
    session: &Session,
    class: &ClassFile,
    dotted: &str,
) -> HashMap<(String, String), u32> {
    let mut ids = HashMap::new();
    let Ok(internal) = class.name() else {
        return ids;
    };
    let source_file = source_file(class);
    let library_bit = if is_library(dotted) { LIBRARY_BIT } else { 0 };
    let filters = session.filters();
    let counts = filters.counts_class(dotted);
    let extends = |base: &str| session.extends(dotted, base);
    for m in &class.methods {
        if m.access & (ACC_NATIVE | ACC_ABSTRACT) != 0 {
            continue;
        }
        let (Ok(name), Ok(descriptor)) = (
            class.pool.utf8(m.name_index),
            class.pool.utf8(m.descriptor_index),
        ) else {
            continue;
        };
        if !filters.traces(dotted, &name, &extends) {
            if counts {
                ids.insert((name, descriptor), COUNT_BIT);
            }
            continue;
        }
        let index = registry::index_of(ProbeMethod {
            class: internal.clone(),
            name: name.clone(),
            descriptor: descriptor.clone(),
            access: m.access,
            source_file: source_file.clone(),
        });
        ids.insert((name, descriptor), index | library_bit);
    }
    ids
}

fn source_file(class: &ClassFile) -> Option<String> {
    let attr = class.find_attribute(&class.attributes, "SourceFile")?;
    let index = u16::from_be_bytes([*attr.info.first()?, *attr.info.get(1)?]);
    class.pool.utf8(index).ok()
}

/// Dotted names of the direct superclass and interfaces of `class`.
pub fn direct_supers(class: &ClassFile) -> Vec<String> {
    let mut supers = Vec::new();
    if class.super_class != 0 {
        if let Ok(s) = class.pool.class_name(class.super_class) {
            supers.push(s.replace('/', "."));
        }
    }
    for i in &class.interfaces {
        if let Ok(s) = class.pool.class_name(*i) {
            supers.push(s.replace('/', "."));
        }
    }
    supers
}
