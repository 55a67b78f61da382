//! Thin typed wrappers over the raw JavaVM, JNIEnv and jvmtiEnv function tables:
//! each call checks its error code and frees what JVMTI allocated, so the rest of
//! the agent never handles JVMTI memory by hand.
//!
//! The raw pointer arguments (jobject, jclass, jmethodID, ...) are JVM handles that
//! callers received from the JVM; the agent never dereferences them itself, so the
//! wrappers are not `unsafe fn`s.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;

use crate::sys;

/// A JVMTI error code, displayed with its name where the agent knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("JVMTI error {0} ({name})", name = error_name(*.0))]
pub struct JvmtiError(pub u32);

fn error_name(code: u32) -> &'static str {
    match code {
        sys::JVMTI_ERROR_INVALID_THREAD => "invalid thread",
        sys::JVMTI_ERROR_THREAD_NOT_ALIVE => "thread not alive",
        sys::JVMTI_ERROR_INVALID_CLASS => "invalid class",
        sys::JVMTI_ERROR_CLASS_NOT_PREPARED => "class not prepared",
        sys::JVMTI_ERROR_INVALID_METHODID => "invalid method id",
        sys::JVMTI_ERROR_NOT_AVAILABLE => "not available",
        sys::JVMTI_ERROR_MUST_POSSESS_CAPABILITY => "capability missing",
        sys::JVMTI_ERROR_ABSENT_INFORMATION => "absent information",
        sys::JVMTI_ERROR_NATIVE_METHOD => "native method",
        sys::JVMTI_ERROR_WRONG_PHASE => "wrong phase",
        sys::JVMTI_ERROR_UNATTACHED_THREAD => "unattached thread",
        _ => "other",
    }
}

/// Turns a JVMTI return code into a Result.
pub(crate) fn check(code: sys::jvmtiError) -> Result<(), JvmtiError> {
    if code == sys::JVMTI_ERROR_NONE {
        Ok(())
    } else {
        Err(JvmtiError(code))
    }
}

/// The JavaVM: the one handle valid on every thread.
#[derive(Clone, Copy, Debug)]
pub struct Vm(pub *mut sys::JavaVM);

// SAFETY: the JavaVM pointer is process-wide and its functions are thread-safe.
unsafe impl Send for Vm {}
unsafe impl Sync for Vm {}

impl Vm {
    fn table(&self) -> &sys::JNIInvokeInterface_ {
        // SAFETY: a JavaVM handed to the agent points at the VM's function table.
        unsafe { &**self.0 }
    }

    /// The interface `version` for the calling thread, or null when the thread is
    /// not attached. Async-signal-safe in HotSpot (it reads the current thread from
    /// thread-local storage), which the signal handler relies on.
    pub fn get_env(&self, version: u32) -> *mut c_void {
        let mut env = null_mut();
        let Some(get_env) = self.table().GetEnv else {
            return null_mut();
        };
        // SAFETY: valid VM and out-pointer.
        match unsafe { get_env(self.0, &mut env, version as sys::jint) } {
            0 => env,
            _ => null_mut(),
        }
    }

    /// A JVMTI environment for this agent.
    pub fn jvmti(&self) -> Option<Jvmti> {
        let env = self.get_env(sys::JVMTI_VERSION_1_2);
        (!env.is_null()).then_some(Jvmti(env.cast()))
    }

    /// Attaches the calling native thread as a daemon Java thread named `name`.
    pub fn attach_daemon(&self, name: &str) -> Option<Jni> {
        let name = CString::new(name).ok()?;
        let mut args = sys::JavaVMAttachArgs {
            version: sys::JNI_VERSION_1_6 as sys::jint,
            name: name.as_ptr() as *mut c_char,
            group: null_mut(),
        };
        let mut env = null_mut();
        let attach = self.table().AttachCurrentThreadAsDaemon?;
        // SAFETY: valid VM, out-pointer and args living through the call.
        let rc = unsafe {
            attach(
                self.0,
                &mut env,
                (&mut args as *mut sys::JavaVMAttachArgs).cast(),
            )
        };
        (rc == 0 && !env.is_null()).then_some(Jni(env.cast()))
    }

    /// Detaches the calling thread (which must hold no monitors or frames).
    pub fn detach(&self) {
        if let Some(detach) = self.table().DetachCurrentThread {
            // SAFETY: valid VM; detaching an unattached thread is a harmless error.
            unsafe { detach(self.0) };
        }
    }
}

/// A JNIEnv: valid only on the thread it belongs to.
#[derive(Clone, Copy, Debug)]
pub struct Jni(pub *mut sys::JNIEnv);

impl Jni {
    /// The JNI function table, for wrappers elsewhere in the agent.
    pub(crate) fn table(&self) -> &sys::JNINativeInterface_ {
        // SAFETY: a JNIEnv points at the VM's function table.
        unsafe { &**self.0 }
    }

    pub fn find_class(&self, name: &str) -> sys::jclass {
        let Ok(name) = CString::new(name) else {
            return null_mut();
        };
        // SAFETY: valid env and NUL-terminated name.
        let class =
            unsafe { (self.table().FindClass.expect("JNI FindClass"))(self.0, name.as_ptr()) };
        self.clear_exception();
        class
    }

    pub fn field_id(&self, class: sys::jclass, name: &str, sig: &str) -> sys::jfieldID {
        let (Ok(name), Ok(sig)) = (CString::new(name), CString::new(sig)) else {
            return null_mut();
        };
        let get = self.table().GetFieldID.expect("JNI GetFieldID");
        // SAFETY: valid env, class reference and strings.
        let id = unsafe { get(self.0, class, name.as_ptr(), sig.as_ptr()) };
        self.clear_exception();
        id
    }

    pub fn long_field(&self, object: sys::jobject, field: sys::jfieldID) -> i64 {
        // SAFETY: the caller passes a field id of type long on object's class.
        unsafe { (self.table().GetLongField.expect("JNI GetLongField"))(self.0, object, field) }
    }

    /// System.getProperty(name) through Java, for properties the Java library sets
    /// (java.version, os.name, ...) that JVMTI's GetSystemProperty does not know.
    pub fn java_system_property(&self, name: &str) -> Option<String> {
        let t = self.table();
        let c_name = CString::new(name).ok()?;
        let system = self.find_class("java/lang/System");
        if system.is_null() {
            return None;
        }
        // SAFETY (all calls): valid env, class and method references; every local
        // reference created is deleted before returning.
        let get = unsafe {
            (t.GetStaticMethodID?)(
                self.0,
                system,
                c"getProperty".as_ptr(),
                c"(Ljava/lang/String;)Ljava/lang/String;".as_ptr(),
            )
        };
        let key = unsafe { (t.NewStringUTF?)(self.0, c_name.as_ptr()) };
        let mut value = None;
        if !get.is_null() && !key.is_null() {
            let args = [sys::jvalue { l: key }];
            let result =
                unsafe { (t.CallStaticObjectMethodA?)(self.0, system, get, args.as_ptr()) };
            // A throwing getProperty returns null; the exception must be cleared
            // before any other JNI call.
            self.clear_exception();
            value = self.string_of(result);
            self.delete_local(result);
        }
        self.clear_exception();
        self.delete_local(key);
        self.delete_local(system);
        value
    }

    /// The contents of a java.lang.String reference (modified UTF-8 read as
    /// UTF-8); None for null or when the JVM cannot give them (the exception
    /// cleared).
    pub fn string_of(&self, s: sys::jobject) -> Option<String> {
        if s.is_null() {
            return None;
        }
        let t = self.table();
        // SAFETY: s is a live String reference; the chars are released below.
        let chars = unsafe { (t.GetStringUTFChars?)(self.0, s, null_mut()) };
        if chars.is_null() {
            self.clear_exception();
            return None;
        }
        let value = unsafe { CStr::from_ptr(chars) }
            .to_string_lossy()
            .into_owned();
        unsafe { (t.ReleaseStringUTFChars?)(self.0, s, chars) };
        Some(value)
    }

    /// Clears a pending exception (a failed lookup must not leak one into Java).
    pub fn clear_exception(&self) {
        let table = self.table();
        // SAFETY: valid env.
        unsafe {
            if (table.ExceptionCheck.expect("JNI ExceptionCheck"))(self.0) != 0 {
                (table.ExceptionClear.expect("JNI ExceptionClear"))(self.0);
            }
        }
    }

    pub fn delete_local(&self, object: sys::jobject) {
        if !object.is_null() {
            // SAFETY: object is a local reference of this thread.
            unsafe { (self.table().DeleteLocalRef.expect("JNI DeleteLocalRef"))(self.0, object) };
        }
    }

    /// Raises the number of local references this frame may hold, right after a
    /// JVMTI call created many (-Xcheck:jni warns when the planned capacity is
    /// exceeded).
    pub fn ensure_local_capacity(&self, capacity: usize) {
        let ensure = self
            .table()
            .EnsureLocalCapacity
            .expect("JNI EnsureLocalCapacity");
        // SAFETY: valid env.
        if unsafe { ensure(self.0, capacity.min(i32::MAX as usize) as sys::jint) } != 0 {
            self.clear_exception();
        }
    }

    pub fn new_global(&self, object: sys::jobject) -> sys::jobject {
        // SAFETY: object is a live reference of this thread.
        unsafe { (self.table().NewGlobalRef.expect("JNI NewGlobalRef"))(self.0, object) }
    }

    pub fn delete_global(&self, object: sys::jobject) {
        if !object.is_null() {
            // SAFETY: object is a global reference created by new_global.
            unsafe { (self.table().DeleteGlobalRef.expect("JNI DeleteGlobalRef"))(self.0, object) };
        }
    }

    /// Runs `f` inside a fresh local reference frame so that references it creates
    /// on a long-lived native thread are freed when it returns.
    pub fn with_local_frame<R>(&self, capacity: i32, f: impl FnOnce() -> R) -> R {
        let table = self.table();
        // SAFETY: valid env; frames are pushed and popped in pairs.
        let pushed =
            unsafe { (table.PushLocalFrame.expect("JNI PushLocalFrame"))(self.0, capacity) } == 0;
        let result = f();
        if pushed {
            unsafe { (table.PopLocalFrame.expect("JNI PopLocalFrame"))(self.0, null_mut()) };
        } else {
            self.clear_exception();
        }
        result
    }
}

/// A jvmtiEnv: usable from any attached thread.
#[derive(Clone, Copy, Debug)]
pub struct Jvmti(pub *mut sys::jvmtiEnv);

// SAFETY: JVMTI functions may be called from any thread attached to the VM.
unsafe impl Send for Jvmti {}
unsafe impl Sync for Jvmti {}

/// What GetThreadInfo and GetThreadGroupInfo tell about a thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub name: String,
    pub daemon: bool,
    pub group: String,
    pub parent: String,
}

/// One thread's stack from GetAllStackTraces, top frame first.
pub struct StackTrace<'a> {
    pub thread: sys::jthread,
    pub state: u32,
    pub frames: &'a [sys::jvmtiFrameInfo],
}

/// The buffer GetAllStackTraces returned; deallocated on drop.
pub struct StackTraces {
    jvmti: Jvmti,
    infos: *mut sys::jvmtiStackInfo,
    count: usize,
}

impl StackTraces {
    pub fn iter(&self) -> impl Iterator<Item = StackTrace<'_>> {
        (0..self.count).map(move |i| {
            // SAFETY: JVMTI filled `count` entries, each with `frame_count` frames.
            let info = unsafe { &*self.infos.add(i) };
            let n = info.frame_count.max(0) as usize;
            let frames = if n == 0 {
                &[][..]
            } else {
                unsafe { std::slice::from_raw_parts(info.frame_buffer, n) }
            };
            StackTrace {
                thread: info.thread,
                state: info.state as u32,
                frames,
            }
        })
    }
}

impl Drop for StackTraces {
    fn drop(&mut self) {
        self.jvmti.deallocate(self.infos.cast());
    }
}

/// Names of a method and its class as JVMTI reports them.
#[derive(Debug, Clone, Default)]
pub struct MethodNames {
    pub name: String,
    pub signature: String,
    pub modifiers: u32,
    pub native: bool,
    /// JVM class signature, e.g. `Ljava/lang/String;`.
    pub class_signature: String,
    pub source_file: Option<String>,
    /// (start bci, line) pairs sorted by bci; empty when unknown.
    pub lines: Vec<(i64, u32)>,
}

impl Jvmti {
    /// The JVMTI function table, for wrappers elsewhere in the agent.
    pub(crate) fn table(&self) -> &sys::jvmtiInterface_1_ {
        // SAFETY: a jvmtiEnv points at the VM's JVMTI function table.
        unsafe { &**self.0 }
    }

    pub fn deallocate(&self, ptr: *mut u8) {
        if !ptr.is_null() {
            // SAFETY: ptr came from a JVMTI allocation.
            unsafe { (self.table().Deallocate.expect("JVMTI Deallocate"))(self.0, ptr) };
        }
    }

    /// Copies a JVMTI-allocated C string and frees it.
    fn take_string(&self, ptr: *mut c_char) -> String {
        if ptr.is_null() {
            return String::new();
        }
        // SAFETY: JVMTI returns NUL-terminated modified UTF-8.
        let s = unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned();
        self.deallocate(ptr.cast());
        s
    }

    pub fn system_property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        let mut value = null_mut();
        let get = self.table().GetSystemProperty?;
        // SAFETY: valid env, name and out-pointer.
        check(unsafe { get(self.0, name.as_ptr(), &mut value) }).ok()?;
        Some(self.take_string(value))
    }

    /// Asks for line numbers and source file names (always available in HotSpot).
    pub fn add_line_capabilities(&self) -> Result<(), JvmtiError> {
        // SAFETY: an all-zero capabilities struct is valid.
        let mut caps: sys::jvmtiCapabilities = unsafe { std::mem::zeroed() };
        caps.set_can_get_line_numbers(1);
        caps.set_can_get_source_file_name(1);
        // SAFETY: valid env and struct.
        check(unsafe {
            (self.table().AddCapabilities.expect("JVMTI AddCapabilities"))(self.0, &caps)
        })
    }

    pub fn set_callbacks(&self, callbacks: &sys::jvmtiEventCallbacks) -> Result<(), JvmtiError> {
        let size = std::mem::size_of::<sys::jvmtiEventCallbacks>() as sys::jint;
        let set = self
            .table()
            .SetEventCallbacks
            .expect("JVMTI SetEventCallbacks");
        // SAFETY: valid env; JVMTI copies the struct.
        check(unsafe { set(self.0, callbacks, size) })
    }

    pub fn set_event(&self, enabled: bool, event: sys::jvmtiEvent) -> Result<(), JvmtiError> {
        let mode = if enabled {
            sys::JVMTI_ENABLE
        } else {
            sys::JVMTI_DISABLE
        };
        let set = self
            .table()
            .SetEventNotificationMode
            .expect("JVMTI SetEventNotificationMode");
        // SAFETY: valid env; a null thread means all threads.
        check(unsafe { set(self.0, mode, event, null_mut()) })
    }

    /// Copies a JVMTI-allocated array of `n` items and frees it.
    fn take_array<T: Copy>(&self, ptr: *mut T, n: sys::jint) -> Vec<T> {
        if ptr.is_null() {
            return Vec::new();
        }
        // SAFETY: JVMTI allocated `n` items at ptr.
        let v = unsafe { std::slice::from_raw_parts(ptr, n.max(0) as usize) }.to_vec();
        self.deallocate(ptr.cast());
        v
    }

    /// Every live thread as local references, in JVMTI's order.
    pub fn all_threads(&self) -> Result<Vec<sys::jthread>, JvmtiError> {
        let (mut n, mut threads) = (0, null_mut());
        // SAFETY: valid env and out-pointers.
        check(unsafe {
            (self.table().GetAllThreads.expect("JVMTI GetAllThreads"))(self.0, &mut n, &mut threads)
        })?;
        Ok(self.take_array(threads, n))
    }

    /// Name, daemon flag, group and parent group of `thread`; local references it
    /// creates are deleted.
    pub fn thread_info(&self, jni: Jni, thread: sys::jthread) -> Result<ThreadInfo, JvmtiError> {
        // SAFETY: an all-zero info struct is a valid out-buffer.
        let mut raw: sys::jvmtiThreadInfo = unsafe { std::mem::zeroed() };
        // SAFETY: valid env, thread reference and out-pointer.
        check(unsafe {
            (self.table().GetThreadInfo.expect("JVMTI GetThreadInfo"))(self.0, thread, &mut raw)
        })?;
        let mut info = ThreadInfo {
            name: self.take_string(raw.name),
            daemon: raw.is_daemon != 0,
            ..Default::default()
        };
        jni.delete_local(raw.context_class_loader);
        if !raw.thread_group.is_null() {
            let (group, parent) = self.group_info(raw.thread_group);
            info.group = group;
            if !parent.is_null() {
                info.parent = self.group_info(parent).0;
                jni.delete_local(parent);
            }
            jni.delete_local(raw.thread_group);
        }
        Ok(info)
    }

    /// A group's name and its parent group (a local reference or null).
    fn group_info(&self, group: sys::jthreadGroup) -> (String, sys::jthreadGroup) {
        // SAFETY: an all-zero info struct is a valid out-buffer.
        let mut raw: sys::jvmtiThreadGroupInfo = unsafe { std::mem::zeroed() };
        let get = self
            .table()
            .GetThreadGroupInfo
            .expect("JVMTI GetThreadGroupInfo");
        // SAFETY: valid env, group reference and out-pointer.
        if check(unsafe { get(self.0, group, &mut raw) }).is_err() {
            return (String::new(), null_mut());
        }
        (self.take_string(raw.name), raw.parent)
    }

    pub fn thread_state(&self, thread: sys::jthread) -> u32 {
        let mut state = 0;
        let get = self.table().GetThreadState.expect("JVMTI GetThreadState");
        // SAFETY: valid env, thread reference and out-pointer.
        match check(unsafe { get(self.0, thread, &mut state) }) {
            Ok(()) => state as u32,
            Err(_) => 0,
        }
    }

    /// The current thread as a local reference.
    pub fn current_thread(&self) -> Option<sys::jthread> {
        let mut thread = null_mut();
        let get = self
            .table()
            .GetCurrentThread
            .expect("JVMTI GetCurrentThread");
        // SAFETY: valid env and out-pointer.
        check(unsafe { get(self.0, &mut thread) }).ok()?;
        (!thread.is_null()).then_some(thread)
    }

    pub fn all_stack_traces(&self, max_frames: u32) -> Result<StackTraces, JvmtiError> {
        let (mut infos, mut n) = (null_mut(), 0);
        let get = self
            .table()
            .GetAllStackTraces
            .expect("JVMTI GetAllStackTraces");
        // SAFETY: valid env and out-pointers.
        check(unsafe { get(self.0, max_frames as sys::jint, &mut infos, &mut n) })?;
        Ok(StackTraces {
            jvmti: *self,
            infos,
            count: n.max(0) as usize,
        })
    }

    pub fn loaded_classes(&self) -> Result<Vec<sys::jclass>, JvmtiError> {
        let (mut n, mut classes) = (0, null_mut());
        let get = self
            .table()
            .GetLoadedClasses
            .expect("JVMTI GetLoadedClasses");
        // SAFETY: valid env and out-pointers.
        check(unsafe { get(self.0, &mut n, &mut classes) })?;
        Ok(self.take_array(classes, n))
    }

    /// Makes JVMTI create the jmethodIDs of `class`, which the async stack walker
    /// can only report once they exist. Unprepared classes fail harmlessly.
    pub fn create_method_ids(&self, class: sys::jclass) {
        let (mut n, mut methods) = (0, null_mut());
        let get = self.table().GetClassMethods.expect("JVMTI GetClassMethods");
        // SAFETY: valid env, class reference and out-pointers.
        if check(unsafe { get(self.0, class, &mut n, &mut methods) }).is_ok() {
            self.deallocate(methods.cast());
        }
    }

    /// Everything the writer needs about a method. Fails with INVALID_METHODID when
    /// the method's class was unloaded.
    pub fn method_names(
        &self,
        jni: Jni,
        method: sys::jmethodID,
    ) -> Result<MethodNames, JvmtiError> {
        let t = self.table();
        let (mut name, mut sig, mut class, mut modifiers, mut native) =
            (null_mut(), null_mut(), null_mut(), 0, 0);
        // SAFETY (all calls below): valid env, method id and out-pointers; JVMTI
        // validates the method id and reports unloaded ones as errors.
        check(unsafe {
            (t.GetMethodName.expect("GetMethodName"))(
                self.0,
                method,
                &mut name,
                &mut sig,
                null_mut(),
            )
        })?;
        let mut names = MethodNames {
            name: self.take_string(name),
            signature: self.take_string(sig),
            ..Default::default()
        };
        check(unsafe {
            (t.GetMethodDeclaringClass.expect("GetMethodDeclaringClass"))(
                self.0, method, &mut class,
            )
        })?;
        let class_names = self.class_names(class);
        jni.delete_local(class);
        (names.class_signature, names.source_file) = class_names?;
        if check(unsafe {
            (t.GetMethodModifiers.expect("GetMethodModifiers"))(self.0, method, &mut modifiers)
        })
        .is_ok()
        {
            names.modifiers = modifiers as u32;
        }
        if check(unsafe {
            (t.IsMethodNative.expect("IsMethodNative"))(self.0, method, &mut native)
        })
        .is_ok()
        {
            names.native = native != 0;
        }
        names.lines = if names.native {
            Vec::new()
        } else {
            self.line_table(method)
        };
        Ok(names)
    }

    fn class_names(&self, class: sys::jclass) -> Result<(String, Option<String>), JvmtiError> {
        Ok((self.class_signature(class)?, self.source_file(class)))
    }

    fn class_signature(&self, class: sys::jclass) -> Result<String, JvmtiError> {
        let mut sig = null_mut();
        let get = self
            .table()
            .GetClassSignature
            .expect("JVMTI GetClassSignature");
        // SAFETY: valid env, class reference and out-pointer.
        check(unsafe { get(self.0, class, &mut sig, null_mut()) })?;
        Ok(self.take_string(sig))
    }

    fn source_file(&self, class: sys::jclass) -> Option<String> {
        let mut name = null_mut();
        let get = self.table().GetSourceFileName?;
        // SAFETY: valid env, class reference and out-pointer.
        check(unsafe { get(self.0, class, &mut name) }).ok()?;
        Some(self.take_string(name))
    }

    fn line_table(&self, method: sys::jmethodID) -> Vec<(i64, u32)> {
        let (mut n, mut table) = (0, null_mut());
        let Some(get) = self.table().GetLineNumberTable else {
            return Vec::new();
        };
        // SAFETY: valid env, method id and out-pointers.
        if check(unsafe { get(self.0, method, &mut n, &mut table) }).is_err() {
            return Vec::new();
        }
        let entries: Vec<sys::jvmtiLineNumberEntry> = self.take_array(table, n);
        let mut lines: Vec<(i64, u32)> = entries
            .iter()
            .map(|e| (e.start_location, e.line_number as u32))
            .collect();
        lines.sort_unstable();
        lines
    }
}

/// The source line of `bci` given (start bci, line) pairs sorted by bci; 0 = unknown.
pub fn line_of(lines: &[(i64, u32)], bci: i64) -> u32 {
    let after = lines.partition_point(|(start, _)| *start <= bci);
    if after == 0 {
        return 0;
    }
    lines[after - 1].1
}

/// `Ljava/util/Map$Entry;` -> `java.util.Map$Entry`; `[I` -> `int[]`.
pub fn class_name_from_signature(sig: &str) -> String {
    let dims = sig.bytes().take_while(|b| *b == b'[').count();
    let base = match &sig[dims..] {
        "Z" => "boolean".to_string(),
        "B" => "byte".to_string(),
        "C" => "char".to_string(),
        "S" => "short".to_string(),
        "I" => "int".to_string(),
        "J" => "long".to_string(),
        "F" => "float".to_string(),
        "D" => "double".to_string(),
        "V" => "void".to_string(),
        s => s
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
            .unwrap_or(s)
            .replace('/', "."),
    };
    base + &"[]".repeat(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_from_the_last_entry_at_or_before_the_bci() {
        let lines = [(0, 10), (4, 11), (9, 14)];
        assert_eq!(line_of(&lines, 0), 10);
        assert_eq!(line_of(&lines, 3), 10);
        assert_eq!(line_of(&lines, 4), 11);
        assert_eq!(line_of(&lines, 100), 14);
        assert_eq!(line_of(&lines, -1), 0);
        assert_eq!(line_of(&[], 5), 0);
    }

    #[test]
    fn class_signatures_become_java_names() {
        assert_eq!(
            class_name_from_signature("Ljava/lang/String;"),
            "java.lang.String"
        );
        assert_eq!(
            class_name_from_signature("Ljava/util/Map$Entry;"),
            "java.util.Map$Entry"
        );
        assert_eq!(class_name_from_signature("[I"), "int[]");
        assert_eq!(
            class_name_from_signature("[[Ljava/lang/Object;"),
            "java.lang.Object[][]"
        );
    }

    #[test]
    fn errors_name_the_code() {
        assert_eq!(
            JvmtiError(23).to_string(),
            "JVMTI error 23 (invalid method id)"
        );
    }
}
