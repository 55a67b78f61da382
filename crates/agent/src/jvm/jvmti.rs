//! [`Jvmti`]: the calls the agent makes through a jvmtiEnv, each checking its
//! error code and freeing what JVMTI allocated.

use std::ffi::{c_char, CStr};
use std::ptr::null_mut;

use super::{check, function, Jni, JvmtiError};
use crate::sys;

/// A jvmtiEnv: usable from any attached thread.
#[derive(Clone, Copy, Debug)]
pub struct Jvmti(pub *mut sys::jvmtiEnv);

// SAFETY: JVMTI functions may be called from any thread attached to the VM.
unsafe impl Send for Jvmti {}
// SAFETY: as above; the handle itself is never written.
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
            // SAFETY: JVMTI filled `count` entries, alive until drop.
            let info = unsafe { &*self.infos.add(i) };
            let n = info.frame_count.max(0) as usize;
            let frames = if n == 0 || info.frame_buffer.is_null() {
                &[][..]
            } else {
                // SAFETY: each entry's buffer holds `frame_count` frames.
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

/// HotSpot's ClassUnload extension event as current JDKs define it: the unloaded
/// class's name, since the class itself is gone.
pub type ClassUnloadCallback =
    unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut sys::JNIEnv, *const c_char);

const CLASS_UNLOAD_ID: &CStr = c"com.sun.hotspot.events.ClassUnload";

/// HotSpot's VirtualThreadMount/Unmount extension events (JDK 21+): posted on
/// the carrier with the virtual thread current, after it mounted or before it
/// unmounts. VirtualThreadStart/End (JDK 21+ standard events) take the same.
pub type VirtualThreadCallback =
    unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut sys::JNIEnv, sys::jthread);

const VTHREAD_MOUNT_ID: &CStr = c"com.sun.hotspot.events.VirtualThreadMount";
const VTHREAD_UNMOUNT_ID: &CStr = c"com.sun.hotspot.events.VirtualThreadUnmount";
/// `can_support_virtual_threads`' bit in jvmtiCapabilities (JDK 21's jvmti.h).
const CAN_SUPPORT_VIRTUAL_THREADS_BIT: usize = 44;
const VIRTUAL_THREAD_START: sys::jvmtiEvent = 87;
const VIRTUAL_THREAD_END: sys::jvmtiEvent = 88;

impl Jvmti {
    fn table(&self) -> &sys::jvmtiInterface_1_ {
        // SAFETY: a jvmtiEnv points at the VM's JVMTI function table, which lives
        // as long as the environment.
        unsafe { &**self.0 }
    }

    /// Disposes of an environment the agent made and no longer uses.
    pub fn dispose(self) {
        if let Ok(dispose) = function!(self.table(), DisposeEnvironment) {
            // SAFETY: valid env, used by nothing else (the caller's promise).
            unsafe { dispose(self.0) };
        }
    }

    pub fn deallocate(&self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        if let Ok(deallocate) = function!(self.table(), Deallocate) {
            // SAFETY: ptr came from a JVMTI allocation and is freed once.
            unsafe { deallocate(self.0, ptr) };
        }
    }

    /// Copies `bytes` into memory JVMTI allocated (what ClassFileLoadHook must return).
    pub fn allocate_copy(&self, bytes: &[u8]) -> Option<*mut u8> {
        let mut mem = null_mut();
        let allocate = function!(self.table(), Allocate).ok()?;
        // SAFETY: valid env and out-pointer.
        check(unsafe { allocate(self.0, bytes.len() as sys::jlong, &mut mem) }).ok()?;
        // SAFETY: JVMTI allocated bytes.len() writable bytes at mem.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), mem, bytes.len()) };
        Some(mem)
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

    pub fn system_property(&self, name: &str) -> Option<String> {
        let name = std::ffi::CString::new(name).ok()?;
        let mut value = null_mut();
        let get = function!(self.table(), GetSystemProperty).ok()?;
        // SAFETY: valid env, name and out-pointer.
        check(unsafe { get(self.0, name.as_ptr(), &mut value) }).ok()?;
        Some(self.take_string(value))
    }

    pub fn add_capabilities(&self, caps: &sys::jvmtiCapabilities) -> Result<(), JvmtiError> {
        let add = function!(self.table(), AddCapabilities)?;
        // SAFETY: valid env and struct.
        check(unsafe { add(self.0, caps) })
    }

    /// Asks for line numbers and source file names (always available in HotSpot).
    pub fn add_line_capabilities(&self) -> Result<(), JvmtiError> {
        let mut caps = super::no_capabilities();
        caps.set_can_get_line_numbers(1);
        caps.set_can_get_source_file_name(1);
        self.add_capabilities(&caps)
    }

    pub fn set_callbacks(&self, callbacks: &sys::jvmtiEventCallbacks) -> Result<(), JvmtiError> {
        let size = std::mem::size_of::<sys::jvmtiEventCallbacks>() as sys::jint;
        let set = function!(self.table(), SetEventCallbacks)?;
        // SAFETY: valid env; JVMTI copies the struct.
        check(unsafe { set(self.0, callbacks, size) })
    }

    pub fn set_event(&self, enabled: bool, event: sys::jvmtiEvent) -> Result<(), JvmtiError> {
        let mode = if enabled {
            sys::JVMTI_ENABLE
        } else {
            sys::JVMTI_DISABLE
        };
        let set = function!(self.table(), SetEventNotificationMode)?;
        // SAFETY: valid env; a null thread means all threads.
        check(unsafe { set(self.0, mode, event, null_mut()) })
    }

    /// Makes the JVM send `event` again for what already exists (compiled
    /// methods, generated code).
    pub fn generate_events(&self, event: sys::jvmtiEvent) -> Result<(), JvmtiError> {
        let generate = function!(self.table(), GenerateEvents)?;
        // SAFETY: valid env.
        check(unsafe { generate(self.0, event) })
    }

    pub fn set_heap_sampling_interval(&self, bytes: u32) -> Result<(), JvmtiError> {
        let set = function!(self.table(), SetHeapSamplingInterval)?;
        // SAFETY: valid env.
        check(unsafe { set(self.0, bytes.min(i32::MAX as u32) as sys::jint) })
    }

    /// Every live thread as local references, in JVMTI's order.
    pub fn all_threads(&self) -> Result<Vec<sys::jthread>, JvmtiError> {
        let (mut n, mut threads) = (0, null_mut());
        let get = function!(self.table(), GetAllThreads)?;
        // SAFETY: valid env and out-pointers.
        check(unsafe { get(self.0, &mut n, &mut threads) })?;
        Ok(self.take_array(threads, n))
    }

    /// Name, daemon flag, group and parent group of `thread`; local references it
    /// creates are deleted.
    pub fn thread_info(&self, jni: Jni, thread: sys::jthread) -> Result<ThreadInfo, JvmtiError> {
        // SAFETY: jvmtiThreadInfo is plain data (pointers and integers); all zero
        // is a valid out-buffer.
        let mut raw: sys::jvmtiThreadInfo = unsafe { std::mem::zeroed() };
        let get = function!(self.table(), GetThreadInfo)?;
        // SAFETY: valid env, thread reference and out-pointer.
        check(unsafe { get(self.0, thread, &mut raw) })?;
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
        // SAFETY: jvmtiThreadGroupInfo is plain data; all zero is a valid out-buffer.
        let mut raw: sys::jvmtiThreadGroupInfo = unsafe { std::mem::zeroed() };
        let Ok(get) = function!(self.table(), GetThreadGroupInfo) else {
            return (String::new(), null_mut());
        };
        // SAFETY: valid env, group reference and out-pointer.
        if check(unsafe { get(self.0, group, &mut raw) }).is_err() {
            return (String::new(), null_mut());
        }
        (self.take_string(raw.name), raw.parent)
    }

    pub fn thread_state(&self, thread: sys::jthread) -> u32 {
        let mut state = 0;
        let Ok(get) = function!(self.table(), GetThreadState) else {
            return 0;
        };
        // SAFETY: valid env, thread reference and out-pointer.
        match check(unsafe { get(self.0, thread, &mut state) }) {
            Ok(()) => state as u32,
            Err(_) => 0,
        }
    }

    /// The current thread as a local reference.
    pub fn current_thread(&self) -> Option<sys::jthread> {
        let mut thread = null_mut();
        let get = function!(self.table(), GetCurrentThread).ok()?;
        // SAFETY: valid env and out-pointer.
        check(unsafe { get(self.0, &mut thread) }).ok()?;
        (!thread.is_null()).then_some(thread)
    }

    pub fn all_stack_traces(&self, max_frames: u32) -> Result<StackTraces, JvmtiError> {
        let (mut infos, mut n) = (null_mut(), 0);
        let get = function!(self.table(), GetAllStackTraces)?;
        // SAFETY: valid env and out-pointers.
        check(unsafe { get(self.0, max_frames as sys::jint, &mut infos, &mut n) })?;
        Ok(StackTraces {
            jvmti: *self,
            infos,
            count: n.max(0) as usize,
        })
    }

    /// The calling thread's stack, top first, as (jmethodID, bci) with bci -1 for
    /// native frames.
    pub fn current_stack(&self, depth: u32) -> Vec<(usize, i32)> {
        self.stack_of(null_mut(), depth)
    }

    /// `thread`'s stack (null: the calling thread's), as [`Jvmti::current_stack`].
    pub fn stack_of(&self, thread: sys::jthread, depth: u32) -> Vec<(usize, i32)> {
        let Ok(get) = function!(self.table(), GetStackTrace) else {
            return Vec::new();
        };
        // SAFETY: jvmtiFrameInfo is plain data; zero is a valid value.
        let mut frames: Vec<sys::jvmtiFrameInfo> =
            vec![unsafe { std::mem::zeroed() }; depth as usize];
        let mut n = 0;
        // SAFETY: valid env, a null thread means the current one, the buffer holds
        // `depth` frames.
        let code = unsafe {
            get(
                self.0,
                thread,
                0,
                depth as sys::jint,
                frames.as_mut_ptr(),
                &mut n,
            )
        };
        if check(code).is_err() {
            return Vec::new();
        }
        frames
            .iter()
            .take(n.max(0) as usize)
            .map(|f| (f.method as usize, f.location as i32))
            .collect()
    }

    pub fn loaded_classes(&self) -> Result<Vec<sys::jclass>, JvmtiError> {
        let (mut n, mut classes) = (0, null_mut());
        let get = function!(self.table(), GetLoadedClasses)?;
        // SAFETY: valid env and out-pointers.
        check(unsafe { get(self.0, &mut n, &mut classes) })?;
        Ok(self.take_array(classes, n))
    }

    /// The class's method ids (none for an unprepared class).
    fn method_ids(&self, class: sys::jclass) -> Vec<sys::jmethodID> {
        let (mut n, mut methods) = (0, null_mut());
        let Ok(get) = function!(self.table(), GetClassMethods) else {
            return Vec::new();
        };
        // SAFETY: valid env, class reference and out-pointers.
        if check(unsafe { get(self.0, class, &mut n, &mut methods) }).is_err() {
            return Vec::new();
        }
        self.take_array(methods, n)
    }

    /// Makes JVMTI create the jmethodIDs of `class`, which the async stack walker
    /// can only report once they exist. Unprepared classes fail harmlessly.
    pub fn create_method_ids(&self, class: sys::jclass) {
        self.method_ids(class);
    }

    /// The class's methods with their names and descriptors.
    pub fn methods(&self, class: sys::jclass) -> Vec<(sys::jmethodID, String, String)> {
        self.method_ids(class)
            .into_iter()
            .map(|m| {
                let (name, sig) = self.method_name(m).unwrap_or_default();
                (m, name, sig)
            })
            .collect()
    }

    /// A method's name and descriptor.
    fn method_name(&self, method: sys::jmethodID) -> Result<(String, String), JvmtiError> {
        let (mut name, mut sig, mut generic) = (null_mut(), null_mut(), null_mut());
        let get = function!(self.table(), GetMethodName)?;
        // SAFETY: valid env, method id and out-pointers; JVMTI validates the
        // method id and reports unloaded ones as errors.
        check(unsafe { get(self.0, method, &mut name, &mut sig, &mut generic) })?;
        self.take_string(generic);
        Ok((self.take_string(name), self.take_string(sig)))
    }

    /// Everything the writer needs about a method. Fails with INVALID_METHODID when
    /// the method's class was unloaded.
    pub fn method_names(
        &self,
        jni: Jni,
        method: sys::jmethodID,
    ) -> Result<MethodNames, JvmtiError> {
        let (name, signature) = self.method_name(method)?;
        let mut names = MethodNames {
            name,
            signature,
            ..Default::default()
        };
        let t = self.table();
        let mut class = null_mut();
        let get_class = function!(t, GetMethodDeclaringClass)?;
        // SAFETY: valid env, method id and out-pointer.
        check(unsafe { get_class(self.0, method, &mut class) })?;
        let class_signature = self.class_signature(class);
        let source_file = self.source_file(class);
        jni.delete_local(class);
        (names.class_signature, names.source_file) = (class_signature?, source_file);
        let mut modifiers = 0;
        if let Ok(get) = function!(t, GetMethodModifiers) {
            // SAFETY: valid env, method id and out-pointer.
            if check(unsafe { get(self.0, method, &mut modifiers) }).is_ok() {
                names.modifiers = modifiers as u32;
            }
        }
        let mut native = 0;
        if let Ok(get) = function!(t, IsMethodNative) {
            // SAFETY: valid env, method id and out-pointer.
            if check(unsafe { get(self.0, method, &mut native) }).is_ok() {
                names.native = native != 0;
            }
        }
        names.lines = if names.native {
            Vec::new()
        } else {
            self.line_table(method)
        };
        Ok(names)
    }

    /// The JVM signature of a class (`[B`, `Ljava/lang/String;`).
    pub fn class_signature(&self, class: sys::jclass) -> Result<String, JvmtiError> {
        let mut sig = null_mut();
        let get = function!(self.table(), GetClassSignature)?;
        // SAFETY: valid env, class reference and out-pointer.
        check(unsafe { get(self.0, class, &mut sig, null_mut()) })?;
        Ok(self.take_string(sig))
    }

    /// The signature of an object's class.
    pub fn object_class_signature(&self, jni: Jni, object: sys::jobject) -> Option<String> {
        let class = jni.object_class(object);
        if class.is_null() {
            return None;
        }
        let sig = self.class_signature(class).ok();
        jni.delete_local(class);
        sig
    }

    fn source_file(&self, class: sys::jclass) -> Option<String> {
        let mut name = null_mut();
        let get = function!(self.table(), GetSourceFileName).ok()?;
        // SAFETY: valid env, class reference and out-pointer.
        check(unsafe { get(self.0, class, &mut name) }).ok()?;
        Some(self.take_string(name))
    }

    fn line_table(&self, method: sys::jmethodID) -> Vec<(i64, u32)> {
        let (mut n, mut table) = (0, null_mut());
        let Ok(get) = function!(self.table(), GetLineNumberTable) else {
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

    /// A method's bytecodes.
    pub fn bytecodes(&self, method: sys::jmethodID) -> Option<Vec<u8>> {
        let get = function!(self.table(), GetBytecodes).ok()?;
        let (mut n, mut code) = (0, null_mut());
        // SAFETY: valid env, method and out-pointers.
        check(unsafe { get(self.0, method, &mut n, &mut code) }).ok()?;
        Some(self.take_array(code, n))
    }

    /// A class's constant pool as JVMTI gives it: (entry count, the entries' bytes).
    pub fn constant_pool(&self, class: sys::jclass) -> Option<(i32, Vec<u8>)> {
        let get = function!(self.table(), GetConstantPool).ok()?;
        let (mut count, mut len, mut bytes) = (0, 0, null_mut());
        // SAFETY: valid env, class and out-pointers.
        check(unsafe { get(self.0, class, &mut count, &mut len, &mut bytes) }).ok()?;
        Some((count, self.take_array(bytes, len)))
    }

    /// The interfaces `class` declares directly, as local references.
    pub fn interfaces(&self, class: sys::jclass) -> Vec<sys::jclass> {
        let (mut n, mut list) = (0, null_mut());
        let Ok(get) = function!(self.table(), GetImplementedInterfaces) else {
            return Vec::new();
        };
        // SAFETY: valid env, class reference and out-pointers.
        if check(unsafe { get(self.0, class, &mut n, &mut list) }).is_err() {
            return Vec::new();
        }
        self.take_array(list, n)
    }

    pub fn retransform(&self, classes: &[sys::jclass]) -> Result<(), JvmtiError> {
        if classes.is_empty() {
            return Ok(());
        }
        let retransform = function!(self.table(), RetransformClasses)?;
        // SAFETY: valid env and class references.
        check(unsafe { retransform(self.0, classes.len() as sys::jint, classes.as_ptr()) })
    }

    pub fn is_modifiable(&self, class: sys::jclass) -> bool {
        let mut yes = 0;
        let Ok(is) = function!(self.table(), IsModifiableClass) else {
            return false;
        };
        // SAFETY: valid env, class reference and out-pointer.
        check(unsafe { is(self.0, class, &mut yes) }).is_ok() && yes != 0
    }

    /// Every module the VM has defined, as local references.
    pub fn all_modules(&self) -> Vec<sys::jobject> {
        let (mut n, mut modules) = (0, null_mut());
        let Ok(get) = function!(self.table(), GetAllModules) else {
            return Vec::new();
        };
        // SAFETY: valid env and out-pointers.
        if check(unsafe { get(self.0, &mut n, &mut modules) }).is_err() {
            return Vec::new();
        }
        self.take_array(modules, n)
    }

    /// Whether `package` (internal form, `a/b`) of `loader` belongs to a named
    /// module (None: cannot tell).
    pub fn in_named_module(&self, loader: sys::jobject, package: &str) -> Option<bool> {
        let get = function!(self.table(), GetNamedModule).ok()?;
        let package = std::ffi::CString::new(package).ok()?;
        let mut module = std::ptr::null_mut();
        // SAFETY: valid env, loader reference (or null), NUL-terminated name
        // and out-pointer.
        check(unsafe { get(self.0, loader, package.as_ptr(), &mut module) }).ok()?;
        Some(!module.is_null())
    }

    pub fn add_module_reads(&self, module: sys::jobject, to: sys::jobject) -> bool {
        let Ok(add) = function!(self.table(), AddModuleReads) else {
            return false;
        };
        // SAFETY: valid env and module references.
        check(unsafe { add(self.0, module, to) }).is_ok()
    }

    pub fn get_tag(&self, object: sys::jobject) -> u64 {
        let mut tag = 0;
        let Ok(get) = function!(self.table(), GetTag) else {
            return 0;
        };
        // SAFETY: valid env, object and out-pointer.
        if check(unsafe { get(self.0, object, &mut tag) }).is_err() {
            return 0;
        }
        tag as u64
    }

    pub fn set_tag(&self, object: sys::jobject, tag: u64) -> bool {
        let Ok(set) = function!(self.table(), SetTag) else {
            return false;
        };
        // SAFETY: valid env and object.
        check(unsafe { set(self.0, object, tag as sys::jlong) }).is_ok()
    }

    /// The thread owning `object`'s monitor now, as a local reference (null when
    /// none or unknown). The waiter arrays JVMTI allocates are freed.
    pub fn monitor_owner(&self, object: sys::jobject) -> sys::jthread {
        let Ok(get) = function!(self.table(), GetObjectMonitorUsage) else {
            return null_mut();
        };
        // SAFETY: jvmtiMonitorUsage is plain data; zero is a valid value.
        let mut usage: sys::jvmtiMonitorUsage = unsafe { std::mem::zeroed() };
        // SAFETY: valid env, object and out-pointer.
        if check(unsafe { get(self.0, object, &mut usage) }).is_err() {
            return null_mut();
        }
        self.deallocate(usage.waiters.cast());
        self.deallocate(usage.notify_waiters.cast());
        usage.owner
    }

    /// A breakpoint at `location` (a bci; 0 is every method's first instruction).
    pub fn set_breakpoint(&self, m: sys::jmethodID, location: i64) -> bool {
        let Ok(set) = function!(self.table(), SetBreakpoint) else {
            return false;
        };
        // SAFETY: valid env and method id; JVMTI checks the location.
        check(unsafe { set(self.0, m, location) }).is_ok()
    }

    pub fn clear_breakpoint(&self, m: sys::jmethodID, location: i64) -> bool {
        let Ok(clear) = function!(self.table(), ClearBreakpoint) else {
            return false;
        };
        // SAFETY: valid env and method id; JVMTI checks the location.
        check(unsafe { clear(self.0, m, location) }).is_ok()
    }

    /// A reference local of `thread`'s frame at `depth` (null on failure).
    pub fn local_object(&self, thread: sys::jthread, depth: i32, slot: i32) -> sys::jobject {
        let mut o = null_mut();
        let Ok(get) = function!(self.table(), GetLocalObject) else {
            return null_mut();
        };
        // SAFETY: valid env and out-pointer; JVMTI checks thread, depth and slot.
        match check(unsafe { get(self.0, thread, depth, slot, &mut o) }) {
            Ok(()) => o,
            Err(_) => null_mut(),
        }
    }

    pub fn local_long(&self, thread: sys::jthread, depth: i32, slot: i32) -> Option<i64> {
        let mut v = 0;
        let get = function!(self.table(), GetLocalLong).ok()?;
        // SAFETY: valid env and out-pointer; JVMTI checks thread, depth and slot.
        check(unsafe { get(self.0, thread, depth, slot, &mut v) }).ok()?;
        Some(v)
    }

    pub fn local_int(&self, thread: sys::jthread, depth: i32, slot: i32) -> Option<i32> {
        let mut v = 0;
        let get = function!(self.table(), GetLocalInt).ok()?;
        // SAFETY: valid env and out-pointer; JVMTI checks thread, depth and slot.
        check(unsafe { get(self.0, thread, depth, slot, &mut v) }).ok()?;
        Some(v)
    }

    /// How many frames `thread`'s stack holds.
    pub fn frame_count(&self, thread: sys::jthread) -> Option<i32> {
        let get = function!(self.table(), GetFrameCount).ok()?;
        let mut n = 0;
        // SAFETY: valid env and out-pointer; JVMTI checks the thread.
        check(unsafe { get(self.0, thread, &mut n) }).ok()?;
        Some(n)
    }

    /// Asks for a FramePop event when the current frame of `thread` returns.
    pub fn notify_frame_pop(&self, thread: sys::jthread) -> bool {
        let Ok(notify) = function!(self.table(), NotifyFramePop) else {
            return false;
        };
        // SAFETY: valid env; JVMTI checks the thread and its frame.
        check(unsafe { notify(self.0, thread, 0) }).is_ok()
    }

    /// Sets (or with None clears) the ClassUnload extension callback. False when the
    /// JVM has no such event or gives it other parameters than (JNIEnv*, const
    /// char*) (older JDKs passed a jclass, which cannot be used once unloaded).
    pub fn set_class_unload_callback(&self, callback: Option<ClassUnloadCallback>) -> bool {
        let Some(index) = self.extension_event(CLASS_UNLOAD_ID, sys::JVMTI_TYPE_CCHAR) else {
            return false;
        };
        let cb: sys::jvmtiExtensionEvent = callback.map(|f| {
            // SAFETY: the JVM calls extension callbacks with the parameters it
            // declared, which were just checked to be the callback's.
            unsafe {
                std::mem::transmute::<
                    ClassUnloadCallback,
                    unsafe extern "C" fn(*mut sys::jvmtiEnv, ...),
                >(f)
            }
        });
        self.set_extension_callback(index, cb)
    }

    /// Sets HotSpot's VirtualThreadMount and VirtualThreadUnmount extension
    /// callbacks (JDK 21+) and enables both events. False when the JVM
    /// lacks either or declares other parameters than (JNIEnv, jthread).
    pub fn set_virtual_thread_mount_callbacks(
        &self,
        mount: VirtualThreadCallback,
        unmount: VirtualThreadCallback,
    ) -> bool {
        let (Some(m), Some(u)) = (
            self.extension_event(VTHREAD_MOUNT_ID, sys::JVMTI_TYPE_JTHREAD),
            self.extension_event(VTHREAD_UNMOUNT_ID, sys::JVMTI_TYPE_JTHREAD),
        ) else {
            return false;
        };
        let erase = |f: VirtualThreadCallback| {
            // SAFETY: the JVM calls extension callbacks with the parameters it
            // declared, which were just checked to be the callback's.
            Some(unsafe {
                std::mem::transmute::<
                    VirtualThreadCallback,
                    unsafe extern "C" fn(*mut sys::jvmtiEnv, ...),
                >(f)
            })
        };
        // HotSpot sets the callback's bit only: the events are thread-filtered and
        // must be enabled too (their indexes are the event numbers).
        self.set_extension_callback(m, erase(mount))
            && self.set_extension_callback(u, erase(unmount))
            && self.set_event(true, m as sys::jvmtiEvent).is_ok()
            && self.set_event(true, u as sys::jvmtiEvent).is_ok()
    }

    /// Whether this JVM can give `can_support_virtual_threads` (JDK 21+; the bit
    /// after `can_generate_sampled_object_alloc_events`, unused before 21).
    pub fn add_virtual_thread_capability(&self) -> Result<(), JvmtiError> {
        let get = function!(self.table(), GetPotentialCapabilities)?;
        let mut potential = super::no_capabilities();
        // SAFETY: valid env and out-pointer.
        check(unsafe { get(self.0, &mut potential) })?;
        if potential
            ._bitfield_1
            .get(CAN_SUPPORT_VIRTUAL_THREADS_BIT, 1)
            == 0
        {
            return Err(JvmtiError::Code(sys::JVMTI_ERROR_NOT_AVAILABLE));
        }
        let mut caps = super::no_capabilities();
        caps._bitfield_1.set(CAN_SUPPORT_VIRTUAL_THREADS_BIT, 1, 1);
        self.add_capabilities(&caps)
    }

    /// Sets the VirtualThreadStart and VirtualThreadEnd callbacks (events 87 and
    /// 88 of JDK 21+, past the end of the JDK 17 table the bindings know) and
    /// enables both. For an environment of its own: it replaces every callback.
    pub fn set_virtual_thread_lifecycle_callbacks(
        &self,
        start: VirtualThreadCallback,
        end: VirtualThreadCallback,
    ) -> Result<(), JvmtiError> {
        #[repr(C)]
        struct Callbacks21 {
            base: sys::jvmtiEventCallbacks,
            virtual_thread_start: Option<VirtualThreadCallback>,
            virtual_thread_end: Option<VirtualThreadCallback>,
        }
        let callbacks = Callbacks21 {
            base: super::no_callbacks(),
            virtual_thread_start: Some(start),
            virtual_thread_end: Some(end),
        };
        let size = std::mem::size_of::<Callbacks21>() as sys::jint;
        let set = function!(self.table(), SetEventCallbacks)?;
        // SAFETY: valid env; JVMTI copies at most `size` bytes of the struct,
        // whose layout extends the JDK 21 table (pointers only, no padding).
        check(unsafe { set(self.0, &callbacks.base, size) })?;
        self.set_event(true, VIRTUAL_THREAD_START)?;
        self.set_event(true, VIRTUAL_THREAD_END)
    }

    /// The index of the extension event `id` when its parameters are
    /// (JNIEnv, `second`).
    fn extension_event(&self, id: &CStr, second: sys::jvmtiParamTypes) -> Option<sys::jint> {
        let get = function!(self.table(), GetExtensionEvents).ok()?;
        let (mut n, mut infos) = (0, null_mut());
        // SAFETY: valid env and out-pointers.
        if check(unsafe { get(self.0, &mut n, &mut infos) }).is_err() || infos.is_null() {
            return None;
        }
        // SAFETY: JVMTI filled n entries, freed below.
        let list = unsafe { std::slice::from_raw_parts(infos, n.max(0) as usize) };
        let index = list.iter().find_map(|e| {
            // SAFETY: ids are NUL-terminated strings.
            let this = unsafe { CStr::from_ptr(e.id) };
            (this == id && takes_jni_and(e, second)).then_some(e.extension_event_index)
        });
        for e in list {
            self.free_event_info(e);
        }
        self.deallocate(infos.cast());
        index
    }

    fn set_extension_callback(&self, index: sys::jint, cb: sys::jvmtiExtensionEvent) -> bool {
        let Ok(set) = function!(self.table(), SetExtensionEventCallback) else {
            return false;
        };
        // SAFETY: valid env and index.
        check(unsafe { set(self.0, index, cb) }).is_ok()
    }

    /// GetExtensionEvents allocates every string and array it returns.
    fn free_event_info(&self, e: &sys::jvmtiExtensionEventInfo) {
        if !e.params.is_null() {
            // SAFETY: JVMTI filled param_count entries.
            let params =
                unsafe { std::slice::from_raw_parts(e.params, e.param_count.max(0) as usize) };
            for p in params {
                self.deallocate(p.name.cast());
            }
            self.deallocate(e.params.cast());
        }
        self.deallocate(e.id.cast());
        self.deallocate(e.short_description.cast());
    }
}

/// Whether extension event `e` passes (JNIEnv, `second`).
fn takes_jni_and(e: &sys::jvmtiExtensionEventInfo, second: sys::jvmtiParamTypes) -> bool {
    if e.param_count != 2 || e.params.is_null() {
        return false;
    }
    // SAFETY: JVMTI filled param_count (2) entries.
    let p = unsafe { std::slice::from_raw_parts(e.params, 2) };
    p[0].base_type == sys::JVMTI_TYPE_JNIENV && p[1].base_type == second
}
