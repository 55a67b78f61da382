//! [`Jni`]: the calls the agent makes through a JNIEnv, each clearing any Java
//! exception it causes, and [`GlobalRef`].

use std::ffi::{c_void, CStr, CString};
use std::ptr::null_mut;

use super::ids::{self, Member};
use super::{function, Vm};
use crate::sys;

/// A JNIEnv: valid only on the thread it belongs to.
#[derive(Clone, Copy, Debug)]
pub struct Jni(pub *mut sys::JNIEnv);

impl Jni {
    fn table(&self) -> &sys::JNINativeInterface_ {
        // SAFETY: a JNIEnv handed to the agent points at the VM's function table,
        // which lives as long as the VM.
        unsafe { &**self.0 }
    }

    /// The JavaVM this env belongs to.
    pub fn java_vm(&self) -> Option<Vm> {
        let get = function!(self.table(), GetJavaVM).ok()?;
        let mut vm = null_mut();
        // SAFETY: valid env and out-pointer.
        (unsafe { get(self.0, &mut vm) } == 0 && !vm.is_null()).then_some(Vm(vm))
    }

    /// A class by its JVM name (`java/lang/Thread`) as a local reference; null
    /// when not found (the exception cleared).
    pub fn find_class(&self, name: &str) -> sys::jclass {
        let (Ok(name), Ok(find)) = (CString::new(name), function!(self.table(), FindClass)) else {
            return null_mut();
        };
        // SAFETY: valid env and NUL-terminated name.
        let class = unsafe { find(self.0, name.as_ptr()) };
        self.clear_exception();
        class
    }

    /// An instance field's id; null when there is none (the exception cleared).
    pub fn field_id(&self, class: sys::jclass, name: &str, sig: &str) -> sys::jfieldID {
        let (Ok(name), Ok(sig)) = (CString::new(name), CString::new(sig)) else {
            return null_mut();
        };
        let Ok(get) = function!(self.table(), GetFieldID) else {
            return null_mut();
        };
        // SAFETY: valid env, class reference and strings.
        let id = unsafe { get(self.0, class, name.as_ptr(), sig.as_ptr()) };
        self.clear_exception();
        id
    }

    /// A `long` field of `object`; 0 when the JVM has no GetLongField.
    pub fn long_field(&self, object: sys::jobject, field: sys::jfieldID) -> i64 {
        let Ok(get) = function!(self.table(), GetLongField) else {
            return 0;
        };
        // SAFETY: the caller passes a field id of type long on object's class.
        unsafe { get(self.0, object, field) }
    }

    /// An object field of `object` by id, as a local reference (null when null
    /// or on failure).
    pub fn object_field_by_id(&self, object: sys::jobject, field: sys::jfieldID) -> sys::jobject {
        if object.is_null() || field.is_null() {
            return null_mut();
        }
        let Ok(get) = function!(self.table(), GetObjectField) else {
            return null_mut();
        };
        // SAFETY: valid env; the caller passes a field id of an object field of
        // object's class.
        let value = unsafe { get(self.0, object, field) };
        self.clear_exception();
        value
    }

    /// An object field by name and type, or null (no such field, or null value).
    pub fn object_field(&self, o: sys::jobject, name: &str, sig: &str) -> sys::jobject {
        let id = self.member_of(o, Member::Field, name, sig);
        self.object_field_by_id(o, id.cast())
    }

    /// The id of method or field `name` of `o`'s class, asked of the JVM once
    /// per class ([`ids`]); null when there is none (the exception cleared).
    fn member_of(&self, o: sys::jobject, member: Member, name: &str, sig: &str) -> *mut c_void {
        let class = self.object_class(o);
        let id = ids::id_of(self, class, (member, name, sig), || match member {
            Member::Method => self.method_id(class, name, sig).cast(),
            Member::Field => self.field_id(class, name, sig).cast(),
        });
        self.delete_local(class);
        id
    }

    /// Sets an object field of `o` by name and type (a final one too: JNI does
    /// not check); false when there is no such field.
    pub fn set_object_field(
        &self,
        o: sys::jobject,
        (name, sig): (&str, &str),
        value: sys::jobject,
    ) -> bool {
        let id: sys::jfieldID = self.member_of(o, Member::Field, name, sig).cast();
        let Ok(set) = function!(self.table(), SetObjectField) else {
            return false;
        };
        if id.is_null() {
            return false;
        }
        // SAFETY: id is an object field of o's class of type `sig`, and the
        // caller passes a value of that type.
        unsafe { set(self.0, o, id, value) };
        !self.clear_exception()
    }

    /// The class of `o` as a local reference (null for null).
    pub fn object_class(&self, o: sys::jobject) -> sys::jclass {
        if o.is_null() {
            return null_mut();
        }
        let Ok(get) = function!(self.table(), GetObjectClass) else {
            return null_mut();
        };
        // SAFETY: valid env and live reference.
        unsafe { get(self.0, o) }
    }

    /// An instance method of `o`'s class; null when none (the exception cleared).
    fn method(&self, o: sys::jobject, name: &str, sig: &str) -> sys::jmethodID {
        self.member_of(o, Member::Method, name, sig).cast()
    }

    fn method_id(&self, class: sys::jclass, name: &str, sig: &str) -> sys::jmethodID {
        let (Ok(name), Ok(sig)) = (CString::new(name), CString::new(sig)) else {
            return null_mut();
        };
        let Ok(get) = function!(self.table(), GetMethodID) else {
            return null_mut();
        };
        // SAFETY: valid env, class reference and strings.
        let id = unsafe { get(self.0, class, name.as_ptr(), sig.as_ptr()) };
        if self.clear_exception() {
            return null_mut();
        }
        id
    }

    /// An instance method of `class` (an interface's too); null when none (the
    /// exception cleared).
    pub fn method_of(&self, class: sys::jclass, name: &str, sig: &str) -> sys::jmethodID {
        if class.is_null() {
            return null_mut();
        }
        self.method_id(class, name, sig)
    }

    /// `o.m(args...)` for a method id of `o`'s class returning an object; null on
    /// any failure (the exception cleared).
    pub fn call_object_id(
        &self,
        o: sys::jobject,
        m: sys::jmethodID,
        args: &[sys::jvalue],
    ) -> sys::jobject {
        let Ok(call) = function!(self.table(), CallObjectMethodA) else {
            return null_mut();
        };
        if o.is_null() || m.is_null() {
            return null_mut();
        }
        // SAFETY: m is a method of o's class whose parameters match args.
        let r = unsafe { call(self.0, o, m, args.as_ptr()) };
        if self.clear_exception() {
            return null_mut();
        }
        r
    }

    /// `o.m()` for a method id of `o`'s class returning a long.
    pub fn call_long_id(&self, o: sys::jobject, m: sys::jmethodID) -> Option<i64> {
        let call = function!(self.table(), CallLongMethodA).ok()?;
        if o.is_null() || m.is_null() {
            return None;
        }
        // SAFETY: m is a no-argument method of o's class returning a long.
        let r = unsafe { call(self.0, o, m, null_mut()) };
        (!self.clear_exception()).then_some(r)
    }

    /// `o.m()` for a method id of `o`'s class returning an int.
    pub fn call_int_id(&self, o: sys::jobject, m: sys::jmethodID) -> Option<i32> {
        let call = function!(self.table(), CallIntMethodA).ok()?;
        if o.is_null() || m.is_null() {
            return None;
        }
        // SAFETY: m is a no-argument method of o's class returning an int.
        let r = unsafe { call(self.0, o, m, null_mut()) };
        (!self.clear_exception()).then_some(r)
    }

    /// A new `Object[]` of `items` (local references); null on failure.
    pub fn object_array(&self, items: &[sys::jobject]) -> sys::jobject {
        let t = self.table();
        let (Ok(new), Ok(set)) = (
            function!(t, NewObjectArray),
            function!(t, SetObjectArrayElement),
        ) else {
            return null_mut();
        };
        let class = self.find_class("java/lang/Object");
        if class.is_null() {
            return null_mut();
        }
        // SAFETY: valid env and class; the elements are set below.
        let array = unsafe { new(self.0, items.len() as sys::jsize, class, null_mut()) };
        self.delete_local(class);
        if self.clear_exception() || array.is_null() {
            return null_mut();
        }
        for (i, item) in items.iter().enumerate() {
            // SAFETY: array is an Object[] of items.len() elements.
            unsafe { set(self.0, array, i as sys::jsize, *item) };
        }
        if self.clear_exception() {
            self.delete_local(array);
            return null_mut();
        }
        array
    }

    /// Element `i` of an object array, as a local reference (null when out of
    /// range, the exception cleared).
    pub fn array_element(&self, array: sys::jobject, i: i32) -> sys::jobject {
        let Ok(get) = function!(self.table(), GetObjectArrayElement) else {
            return null_mut();
        };
        if array.is_null() || i < 0 {
            return null_mut();
        }
        // SAFETY: array is an object array; JNI checks the index (an exception).
        let o = unsafe { get(self.0, array, i) };
        if self.clear_exception() {
            return null_mut();
        }
        o
    }

    /// Whether `o` (not null) is an instance of `class`.
    pub fn is_instance_of(&self, o: sys::jobject, class: sys::jclass) -> bool {
        let Ok(is) = function!(self.table(), IsInstanceOf) else {
            return false;
        };
        // SAFETY: valid env and live references.
        !o.is_null() && !class.is_null() && unsafe { is(self.0, o, class) } != 0
    }

    /// `o.name()` for a method returning an object; null on any failure.
    pub fn call_object(&self, o: sys::jobject, name: &str, sig: &str) -> sys::jobject {
        self.call_object_with(o, (name, sig), &[])
    }

    /// `o.name(args...)` for a method returning an object; null on any failure.
    pub fn call_object_with(
        &self,
        o: sys::jobject,
        (name, sig): (&str, &str),
        args: &[sys::jvalue],
    ) -> sys::jobject {
        let m = if o.is_null() {
            null_mut()
        } else {
            self.method(o, name, sig)
        };
        let Ok(call) = function!(self.table(), CallObjectMethodA) else {
            return null_mut();
        };
        if m.is_null() {
            return null_mut();
        }
        // SAFETY: m is a method of o's class whose parameters match args.
        let r = unsafe { call(self.0, o, m, args.as_ptr()) };
        if self.clear_exception() {
            return null_mut();
        }
        r
    }

    /// `o.name(args...)` for a void method; false on any failure.
    pub fn call_void_with(
        &self,
        o: sys::jobject,
        (name, sig): (&str, &str),
        args: &[sys::jvalue],
    ) -> bool {
        if o.is_null() {
            return false;
        }
        let m = self.method(o, name, sig);
        let Ok(call) = function!(self.table(), CallVoidMethodA) else {
            return false;
        };
        if m.is_null() {
            return false;
        }
        // SAFETY: m is a void method of o's class whose parameters match args.
        unsafe { call(self.0, o, m, args.as_ptr()) };
        !self.clear_exception()
    }

    /// `class.name(args...)` for a static method returning an object; null on any
    /// failure (the exception cleared).
    pub fn call_static_object_with(
        &self,
        class: sys::jclass,
        (name, sig): (&str, &str),
        args: &[sys::jvalue],
    ) -> sys::jobject {
        let t = self.table();
        let (Ok(get), Ok(call), Ok(n), Ok(s)) = (
            function!(t, GetStaticMethodID),
            function!(t, CallStaticObjectMethodA),
            CString::new(name),
            CString::new(sig),
        ) else {
            return null_mut();
        };
        if class.is_null() {
            return null_mut();
        }
        // SAFETY: valid env, class reference and strings.
        let m = unsafe { get(self.0, class, n.as_ptr(), s.as_ptr()) };
        if self.clear_exception() || m.is_null() {
            return null_mut();
        }
        // SAFETY: m is a static method of class whose parameters match args.
        let r = unsafe { call(self.0, class, m, args.as_ptr()) };
        if self.clear_exception() {
            return null_mut();
        }
        r
    }

    /// A new instance of `class` with no constructor run (JNI AllocObject); null
    /// on failure.
    pub fn alloc_object(&self, class: sys::jclass) -> sys::jobject {
        let Ok(alloc) = function!(self.table(), AllocObject) else {
            return null_mut();
        };
        if class.is_null() {
            return null_mut();
        }
        // SAFETY: valid env and class reference.
        let o = unsafe { alloc(self.0, class) };
        if self.clear_exception() {
            return null_mut();
        }
        o
    }

    /// `o.name()` for a method returning an int.
    pub fn call_int(&self, o: sys::jobject, name: &str) -> Option<i32> {
        if o.is_null() {
            return None;
        }
        let m = self.method(o, name, "()I");
        let call = function!(self.table(), CallIntMethodA).ok()?;
        if m.is_null() {
            return None;
        }
        // SAFETY: m is a no-argument method of o's class returning an int.
        let r = unsafe { call(self.0, o, m, null_mut()) };
        (!self.clear_exception()).then_some(r)
    }

    /// `o.name()` for a method returning a long.
    pub fn call_long(&self, o: sys::jobject, name: &str) -> Option<i64> {
        if o.is_null() {
            return None;
        }
        let m = self.method(o, name, "()J");
        let call = function!(self.table(), CallLongMethodA).ok()?;
        if m.is_null() {
            return None;
        }
        // SAFETY: m is a no-argument method of o's class returning a long.
        let r = unsafe { call(self.0, o, m, null_mut()) };
        (!self.clear_exception()).then_some(r)
    }

    /// `o.name()` as a Rust string, for a method returning a String.
    pub fn call_string(&self, o: sys::jobject, name: &str) -> Option<String> {
        let s = self.call_object(o, name, "()Ljava/lang/String;");
        let v = self.string_of(s);
        self.delete_local(s);
        v
    }

    /// The class name of an object (`java.lang.String`).
    pub fn class_name(&self, o: sys::jobject) -> Option<String> {
        let class = self.call_object(o, "getClass", "()Ljava/lang/Class;");
        let v = self.call_string(class, "getName");
        self.delete_local(class);
        v
    }

    /// System.getProperty(name) through Java, for properties the Java library sets
    /// (java.version, os.name, ...) that JVMTI's GetSystemProperty does not know.
    pub fn java_system_property(&self, name: &str) -> Option<String> {
        let system = self.find_class("java/lang/System");
        if system.is_null() {
            return None;
        }
        let value = self.static_string_call(system, name);
        self.delete_local(system);
        value
    }

    fn static_string_call(&self, system: sys::jclass, name: &str) -> Option<String> {
        let t = self.table();
        let get_method = function!(t, GetStaticMethodID).ok()?;
        let call = function!(t, CallStaticObjectMethodA).ok()?;
        // SAFETY: valid env and class reference, NUL-terminated literals.
        let get = unsafe {
            get_method(
                self.0,
                system,
                c"getProperty".as_ptr(),
                c"(Ljava/lang/String;)Ljava/lang/String;".as_ptr(),
            )
        };
        let key = self.new_string(name);
        let mut value = None;
        if !get.is_null() && !key.is_null() {
            let args = [sys::jvalue { l: key }];
            // SAFETY: get is System.getProperty(String), args one String.
            let result = unsafe { call(self.0, system, get, args.as_ptr()) };
            // A throwing getProperty returns null; the exception must be cleared
            // before any other JNI call.
            self.clear_exception();
            value = self.string_of(result);
            self.delete_local(result);
        }
        self.clear_exception();
        self.delete_local(key);
        value
    }

    /// [`Jni::string_of`] without the JVM's copy: a string of up to `SHORT`
    /// chars is read into a buffer here (two JNI calls, no allocation in the
    /// JVM), a longer one as `string_of` reads it.
    pub fn short_string_of(&self, s: sys::jobject) -> Option<String> {
        const SHORT: usize = 512;
        if s.is_null() {
            return None;
        }
        let t = self.table();
        let (length, region) = (
            function!(t, GetStringLength).ok()?,
            function!(t, GetStringRegion).ok()?,
        );
        // SAFETY: s is a live String reference.
        let len = unsafe { length(self.0, s) };
        let n = usize::try_from(len).ok()?;
        if n > SHORT {
            return self.string_of(s);
        }
        let mut buf = [0u16; SHORT];
        // SAFETY: [0, len) is within the string (strings do not change) and
        // buf holds len chars.
        unsafe { region(self.0, s, 0, len, buf.as_mut_ptr()) };
        Some(String::from_utf16_lossy(&buf[..n]))
    }

    /// Writes `bytes` at the start of the Java byte array `array`; false (and
    /// nothing written) when it is null or shorter.
    pub fn set_bytes(&self, array: sys::jobject, bytes: &[u8]) -> bool {
        if array.is_null() {
            return false;
        }
        let t = self.table();
        let (Ok(length), Ok(set)) = (
            function!(t, GetArrayLength),
            function!(t, SetByteArrayRegion),
        ) else {
            return false;
        };
        let Ok(len) = sys::jsize::try_from(bytes.len()) else {
            return false;
        };
        // SAFETY: array is a live byte[] reference (the caller's argument).
        if unsafe { length(self.0, array) } < len {
            return false;
        }
        // SAFETY: [0, len) is within the array, and bytes holds len bytes.
        unsafe { set(self.0, array, 0, len, bytes.as_ptr().cast()) };
        true
    }

    /// The contents of a java.lang.String reference (modified UTF-8 read as
    /// UTF-8); None for null or when the JVM cannot give them (the exception
    /// cleared).
    pub fn string_of(&self, s: sys::jobject) -> Option<String> {
        if s.is_null() {
            return None;
        }
        let t = self.table();
        let (get, release) = (
            function!(t, GetStringUTFChars).ok()?,
            function!(t, ReleaseStringUTFChars).ok()?,
        );
        // SAFETY: s is a live String reference; the chars are released below.
        let chars = unsafe { get(self.0, s, null_mut()) };
        if chars.is_null() {
            self.clear_exception();
            return None;
        }
        // SAFETY: GetStringUTFChars returns a NUL-terminated string, alive until
        // released.
        let value = unsafe { CStr::from_ptr(chars) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: chars came from GetStringUTFChars on s and is released once.
        unsafe { release(self.0, s, chars) };
        Some(value)
    }

    /// A new java.lang.String (null on failure).
    pub fn new_string(&self, text: &str) -> sys::jobject {
        let (Ok(c), Ok(new)) = (CString::new(text), function!(self.table(), NewStringUTF)) else {
            return null_mut();
        };
        // SAFETY: valid env and NUL-terminated modified UTF-8 (ASCII here).
        let s = unsafe { new(self.0, c.as_ptr()) };
        if self.clear_exception() {
            return null_mut();
        }
        s
    }

    /// Clears a pending exception (a failed lookup must not leak one into Java);
    /// true when there was one.
    pub fn clear_exception(&self) -> bool {
        let t = self.table();
        let (Ok(check), Ok(clear)) = (function!(t, ExceptionCheck), function!(t, ExceptionClear))
        else {
            return false;
        };
        // SAFETY: valid env; both calls are allowed with an exception pending.
        unsafe {
            let pending = check(self.0) != 0;
            if pending {
                clear(self.0);
            }
            pending
        }
    }

    pub fn delete_local(&self, object: sys::jobject) {
        if object.is_null() {
            return;
        }
        if let Ok(delete) = function!(self.table(), DeleteLocalRef) {
            // SAFETY: object is a local reference of this thread.
            unsafe { delete(self.0, object) };
        }
    }

    /// Raises the number of local references this frame may hold, right after a
    /// JVMTI call created many (-Xcheck:jni warns when the planned capacity is
    /// exceeded).
    pub fn ensure_local_capacity(&self, capacity: usize) {
        let Ok(ensure) = function!(self.table(), EnsureLocalCapacity) else {
            return;
        };
        // SAFETY: valid env.
        if unsafe { ensure(self.0, capacity.min(i32::MAX as usize) as sys::jint) } != 0 {
            self.clear_exception();
        }
    }

    /// A local reference of this thread to `object` (a global reference).
    pub fn new_local(&self, object: sys::jobject) -> sys::jobject {
        if object.is_null() {
            return null_mut();
        }
        let Ok(new) = function!(self.table(), NewLocalRef) else {
            return null_mut();
        };
        // SAFETY: object is a live reference.
        unsafe { new(self.0, object) }
    }

    /// A global reference to `object` (null for null or on failure).
    pub fn new_global(&self, object: sys::jobject) -> sys::jobject {
        if object.is_null() {
            return null_mut();
        }
        let Ok(new) = function!(self.table(), NewGlobalRef) else {
            return null_mut();
        };
        // SAFETY: object is a live reference of this thread.
        unsafe { new(self.0, object) }
    }

    pub fn delete_global(&self, object: sys::jobject) {
        if object.is_null() {
            return;
        }
        if let Ok(delete) = function!(self.table(), DeleteGlobalRef) {
            // SAFETY: object is a global reference created by new_global.
            unsafe { delete(self.0, object) };
        }
    }

    /// A weak global reference to `object` (null for null or on failure).
    pub fn new_weak_global(&self, object: sys::jobject) -> sys::jobject {
        if object.is_null() {
            return null_mut();
        }
        let Ok(new) = function!(self.table(), NewWeakGlobalRef) else {
            return null_mut();
        };
        // SAFETY: object is a live reference of this thread.
        let weak = unsafe { new(self.0, object) };
        self.clear_exception();
        weak
    }

    pub fn delete_weak_global(&self, weak: sys::jobject) {
        if weak.is_null() {
            return;
        }
        if let Ok(delete) = function!(self.table(), DeleteWeakGlobalRef) {
            // SAFETY: weak is a weak global reference made by new_weak_global.
            unsafe { delete(self.0, weak) };
        }
    }

    /// Whether two references (local, global or weak) refer to the same object.
    pub fn is_same_object(&self, a: sys::jobject, b: sys::jobject) -> bool {
        let Ok(same) = function!(self.table(), IsSameObject) else {
            return false;
        };
        // SAFETY: valid env and references (a weak one may be cleared: it then
        // compares equal to null only).
        unsafe { same(self.0, a, b) != 0 }
    }

    /// A [`GlobalRef`] to `object`; None for null or on failure.
    pub fn global_ref(&self, object: sys::jobject) -> Option<GlobalRef> {
        let global = self.new_global(object);
        (!global.is_null()).then_some(GlobalRef(global))
    }

    /// Runs `f` inside a fresh local reference frame so that references it creates
    /// on a long-lived native thread are freed when it returns.
    pub fn with_local_frame<R>(&self, capacity: i32, f: impl FnOnce() -> R) -> R {
        let t = self.table();
        let (Ok(push), Ok(pop)) = (function!(t, PushLocalFrame), function!(t, PopLocalFrame))
        else {
            return f();
        };
        // SAFETY: valid env; frames are pushed and popped in pairs.
        let pushed = unsafe { push(self.0, capacity) } == 0;
        let result = f();
        if pushed {
            // SAFETY: pops the frame pushed above; no result reference is kept.
            unsafe { pop(self.0, null_mut()) };
        } else {
            self.clear_exception();
        }
        result
    }

    /// Defines a class in the bootstrap loader (a null loader); null on failure,
    /// with the exception cleared.
    pub fn define_boot_class(&self, name: &str, bytes: &[u8]) -> sys::jclass {
        self.define_class(name, null_mut(), bytes)
    }

    /// Defines a class in `loader` (null: the bootstrap loader); null on
    /// failure (a class of that name already defined there too), with the
    /// exception cleared.
    pub fn define_class(&self, name: &str, loader: sys::jobject, bytes: &[u8]) -> sys::jclass {
        let (Ok(name), Ok(define)) = (CString::new(name), function!(self.table(), DefineClass))
        else {
            return null_mut();
        };
        // SAFETY: valid env, name, loader reference (or null) and class bytes
        // for the duration of the call.
        let class = unsafe {
            define(
                self.0,
                name.as_ptr(),
                loader,
                bytes.as_ptr().cast(),
                bytes.len() as sys::jsize,
            )
        };
        self.clear_exception();
        class
    }

    /// Binds `methods` (name, JVM descriptor, function) of `class`; false (with the
    /// Java exception cleared) when the JVM refuses.
    pub fn register_natives(
        &self,
        class: sys::jclass,
        methods: &[(&str, &str, *mut c_void)],
    ) -> bool {
        let Ok(register) = function!(self.table(), RegisterNatives) else {
            return false;
        };
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
        // SAFETY: valid env, class and method table; the strings outlive the call.
        let ok = unsafe { register(self.0, class, table.as_ptr(), table.len() as sys::jint) } == 0;
        self.clear_exception();
        ok
    }

    /// `class.getModule()`, as a local reference (null on failure).
    pub fn module_of(&self, class: sys::jclass) -> sys::jobject {
        let class_class = self.find_class("java/lang/Class");
        if class_class.is_null() {
            return null_mut();
        }
        let get = self.method_id(class_class, "getModule", "()Ljava/lang/Module;");
        self.delete_local(class_class);
        let Ok(call) = function!(self.table(), CallObjectMethodA) else {
            return null_mut();
        };
        if get.is_null() {
            return null_mut();
        }
        // SAFETY: get is Class.getModule(), called on a class with no arguments.
        let module = unsafe { call(self.0, class, get, std::ptr::null()) };
        self.clear_exception();
        module
    }

    /// The superclass of `class` as a local reference (null for Object and interfaces).
    pub fn superclass(&self, class: sys::jclass) -> sys::jclass {
        let Ok(get) = function!(self.table(), GetSuperclass) else {
            return null_mut();
        };
        // SAFETY: valid env and class reference.
        unsafe { get(self.0, class) }
    }
}

/// A weak global reference, deleted when dropped (as [`GlobalRef`]): it does
/// not keep its object alive, and compares equal to null once the object is
/// collected.
#[derive(Debug)]
pub struct WeakRef(sys::jobject);

impl WeakRef {
    /// A weak reference to `object`; None for null or on failure.
    pub fn new(jni: Jni, object: sys::jobject) -> Option<WeakRef> {
        let weak = jni.new_weak_global(object);
        (!weak.is_null()).then_some(WeakRef(weak))
    }

    /// Whether `object` is the object referred to (false once it was collected).
    pub fn is(&self, jni: Jni, object: sys::jobject) -> bool {
        !object.is_null() && jni.is_same_object(self.0, object)
    }
}

impl Drop for WeakRef {
    fn drop(&mut self) {
        if let Some(jni) = Vm::remembered().and_then(|vm| vm.jni()) {
            jni.delete_weak_global(self.0);
        }
    }
}

/// A global reference, deleted when dropped (through the dropping thread's
/// JNIEnv; on a thread not attached to the JVM it is left to the VM).
#[derive(Debug)]
pub struct GlobalRef(sys::jobject);

impl GlobalRef {
    pub fn get(&self) -> sys::jobject {
        self.0
    }

    /// Keeps the reference for the rest of the process.
    pub fn leak(self) -> sys::jobject {
        let object = self.0;
        std::mem::forget(self);
        object
    }
}

impl Drop for GlobalRef {
    fn drop(&mut self) {
        if let Some(jni) = Vm::remembered().and_then(|vm| vm.jni()) {
            jni.delete_global(self.0);
        }
    }
}
