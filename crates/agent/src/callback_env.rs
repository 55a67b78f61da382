//! The JNI and JVMTI calls of the breakpoint captures (remote calls, parks), on
//! the raw pointers their callbacks are handed, each clearing any exception it
//! causes.

use std::ffi::{CStr, CString};
use std::ptr::null_mut;

use crate::sys;

#[derive(Clone, Copy)]
pub struct Env(pub *mut sys::JNIEnv);

impl Env {
    fn t(&self) -> &sys::JNINativeInterface_ {
        // SAFETY: a JNIEnv handed to a JVMTI callback points at the function table.
        unsafe { &**self.0 }
    }

    fn clear(&self) -> bool {
        let t = self.t();
        // SAFETY: valid env.
        unsafe {
            let pending = (t.ExceptionCheck.expect("JNI ExceptionCheck"))(self.0) != 0;
            if pending {
                (t.ExceptionClear.expect("JNI ExceptionClear"))(self.0);
            }
            pending
        }
    }

    pub fn delete(&self, o: sys::jobject) {
        if !o.is_null() {
            // SAFETY: o is a local reference of this env.
            unsafe { (self.t().DeleteLocalRef.expect("JNI DeleteLocalRef"))(self.0, o) };
        }
    }

    /// An object field by name and type, or null (no such field, or null value).
    pub fn object_field(&self, o: sys::jobject, name: &str, sig: &str) -> sys::jobject {
        let (Ok(name), Ok(sig)) = (CString::new(name), CString::new(sig)) else {
            return null_mut();
        };
        let t = self.t();
        // SAFETY: valid env and live reference; failures leave an exception cleared below.
        unsafe {
            let class = (t.GetObjectClass.expect("JNI GetObjectClass"))(self.0, o);
            let id =
                (t.GetFieldID.expect("JNI GetFieldID"))(self.0, class, name.as_ptr(), sig.as_ptr());
            self.delete(class);
            if self.clear() || id.is_null() {
                return null_mut();
            }
            (t.GetObjectField.expect("JNI GetObjectField"))(self.0, o, id)
        }
    }

    fn method(&self, o: sys::jobject, name: &str, sig: &str) -> sys::jmethodID {
        let (Ok(name), Ok(sig)) = (CString::new(name), CString::new(sig)) else {
            return null_mut();
        };
        let t = self.t();
        // SAFETY: valid env and live reference.
        unsafe {
            let class = (t.GetObjectClass.expect("JNI GetObjectClass"))(self.0, o);
            let id = (t.GetMethodID.expect("JNI GetMethodID"))(
                self.0,
                class,
                name.as_ptr(),
                sig.as_ptr(),
            );
            self.delete(class);
            if self.clear() {
                return null_mut();
            }
            id
        }
    }

    /// `o.name()` for a method returning an object; null on any failure.
    pub fn call_object(&self, o: sys::jobject, name: &str, sig: &str) -> sys::jobject {
        if o.is_null() {
            return null_mut();
        }
        let m = self.method(o, name, sig);
        if m.is_null() {
            return null_mut();
        }
        // SAFETY: m is a no-argument method of o's class returning an object.
        let r = unsafe {
            (self.t().CallObjectMethodA.expect("JNI CallObjectMethodA"))(self.0, o, m, null_mut())
        };
        if self.clear() {
            return null_mut();
        }
        r
    }

    /// `o.name()` for a method returning an int.
    pub fn call_int(&self, o: sys::jobject, name: &str) -> Option<i32> {
        if o.is_null() {
            return None;
        }
        let m = self.method(o, name, "()I");
        if m.is_null() {
            return None;
        }
        // SAFETY: m is a no-argument method of o's class returning an int.
        let r = unsafe {
            (self.t().CallIntMethodA.expect("JNI CallIntMethodA"))(self.0, o, m, null_mut())
        };
        (!self.clear()).then_some(r)
    }

    /// The text of a java.lang.String (None for null or on failure).
    pub fn string(&self, s: sys::jobject) -> Option<String> {
        crate::jvm::Jni(self.0).string_of(s)
    }

    /// `o.name()` as a Rust string, for a method returning a String.
    pub fn call_string(&self, o: sys::jobject, name: &str) -> Option<String> {
        let s = self.call_object(o, name, "()Ljava/lang/String;");
        let v = self.string(s);
        self.delete(s);
        v
    }

    /// A global reference to `o` (kept across callbacks), or null.
    pub fn new_global(&self, o: sys::jobject) -> sys::jobject {
        if o.is_null() {
            return null_mut();
        }
        // SAFETY: o is a live local reference of this env.
        unsafe { (self.t().NewGlobalRef.expect("JNI NewGlobalRef"))(self.0, o) }
    }

    pub fn delete_global(&self, o: sys::jobject) {
        if !o.is_null() {
            // SAFETY: o is a global reference made by new_global.
            unsafe { (self.t().DeleteGlobalRef.expect("JNI DeleteGlobalRef"))(self.0, o) };
        }
    }

    /// A new java.lang.String (null on failure).
    pub fn new_string(&self, text: &str) -> sys::jobject {
        let Ok(c) = CString::new(text) else {
            return null_mut();
        };
        // SAFETY: valid env and NUL-terminated modified UTF-8 (ASCII here).
        let s = unsafe { (self.t().NewStringUTF.expect("JNI NewStringUTF"))(self.0, c.as_ptr()) };
        if self.clear() {
            return null_mut();
        }
        s
    }

    /// `o.name(args...)` for a method returning an object; null on any failure.
    pub fn call_object_with(
        &self,
        o: sys::jobject,
        (name, sig): (&str, &str),
        args: &[sys::jvalue],
    ) -> sys::jobject {
        if o.is_null() {
            return null_mut();
        }
        let m = self.method(o, name, sig);
        if m.is_null() {
            return null_mut();
        }
        // SAFETY: m is a method of o's class whose parameters match args.
        let r = unsafe {
            (self.t().CallObjectMethodA.expect("JNI CallObjectMethodA"))(
                self.0,
                o,
                m,
                args.as_ptr(),
            )
        };
        if self.clear() {
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
        if m.is_null() {
            return false;
        }
        // SAFETY: m is a void method of o's class whose parameters match args.
        unsafe {
            (self.t().CallVoidMethodA.expect("JNI CallVoidMethodA"))(self.0, o, m, args.as_ptr())
        };
        !self.clear()
    }

    /// The class name of an object (`java.lang.String`).
    pub fn class_name(&self, o: sys::jobject) -> Option<String> {
        let class = self.call_object(o, "getClass", "()Ljava/lang/Class;");
        let v = self.call_string(class, "getName");
        self.delete(class);
        v
    }
}

#[derive(Clone, Copy)]
pub struct Ti(pub *mut sys::jvmtiEnv);

// SAFETY: a jvmtiEnv may be used from any thread.
unsafe impl Send for Ti {}
unsafe impl Sync for Ti {}

impl Ti {
    fn t(&self) -> &sys::jvmtiInterface_1_ {
        // SAFETY: a jvmtiEnv points at the JVMTI function table.
        unsafe { &**self.0 }
    }

    fn free(&self, p: *mut u8) {
        if !p.is_null() {
            // SAFETY: p came from a JVMTI allocation.
            unsafe { (self.t().Deallocate.expect("JVMTI Deallocate"))(self.0, p) };
        }
    }

    fn take(&self, p: *mut std::ffi::c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: JVMTI strings are NUL-terminated.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        self.free(p.cast());
        s
    }

    pub fn class_signature(&self, class: sys::jclass) -> String {
        let (mut sig, mut generic) = (null_mut(), null_mut());
        // SAFETY: valid env, class and out-pointers.
        unsafe {
            (self.t().GetClassSignature.expect("JVMTI GetClassSignature"))(
                self.0,
                class,
                &mut sig,
                &mut generic,
            )
        };
        self.take(generic);
        self.take(sig)
    }

    /// The class's methods with their names and descriptors.
    pub fn methods(&self, class: sys::jclass) -> Vec<(sys::jmethodID, String, String)> {
        let (mut n, mut ids) = (0, null_mut());
        // SAFETY: valid env, class and out-pointers.
        let err = unsafe {
            (self.t().GetClassMethods.expect("JVMTI GetClassMethods"))(
                self.0, class, &mut n, &mut ids,
            )
        };
        if err != 0 || ids.is_null() {
            return vec![];
        }
        // SAFETY: JVMTI allocated n method ids at ids.
        let list = unsafe { std::slice::from_raw_parts(ids, n.max(0) as usize) }.to_vec();
        self.free(ids.cast());
        list.into_iter()
            .map(|m| {
                let (mut name, mut sig, mut generic) = (null_mut(), null_mut(), null_mut());
                // SAFETY: valid env, method id and out-pointers.
                unsafe {
                    (self.t().GetMethodName.expect("JVMTI GetMethodName"))(
                        self.0,
                        m,
                        &mut name,
                        &mut sig,
                        &mut generic,
                    )
                };
                self.take(generic);
                (m, self.take(name), self.take(sig))
            })
            .collect()
    }

    /// A breakpoint at `location` (a bci; 0 is every method's first instruction).
    pub fn set_breakpoint(&self, m: sys::jmethodID, location: i64) -> bool {
        // SAFETY: valid env and method id; JVMTI checks the location.
        unsafe { (self.t().SetBreakpoint.expect("JVMTI SetBreakpoint"))(self.0, m, location) == 0 }
    }

    pub fn clear_breakpoint(&self, m: sys::jmethodID, location: i64) -> bool {
        // SAFETY: valid env and method id; JVMTI checks the location.
        unsafe {
            (self.t().ClearBreakpoint.expect("JVMTI ClearBreakpoint"))(self.0, m, location) == 0
        }
    }

    /// A reference local of the current thread's frame at `depth`.
    pub fn local_object(&self, thread: sys::jthread, depth: i32, slot: i32) -> sys::jobject {
        let mut o = null_mut();
        // SAFETY: the current thread's own frame; valid out-pointer.
        let err = unsafe {
            (self.t().GetLocalObject.expect("JVMTI GetLocalObject"))(
                self.0, thread, depth, slot, &mut o,
            )
        };
        if err == 0 {
            o
        } else {
            null_mut()
        }
    }

    pub fn local_long(&self, thread: sys::jthread, depth: i32, slot: i32) -> Option<i64> {
        let mut v = 0;
        // SAFETY: the current thread's own frame; valid out-pointer.
        let err = unsafe {
            (self.t().GetLocalLong.expect("JVMTI GetLocalLong"))(
                self.0, thread, depth, slot, &mut v,
            )
        };
        (err == 0).then_some(v)
    }

    pub fn local_int(&self, thread: sys::jthread, depth: i32, slot: i32) -> Option<i32> {
        let mut v = 0;
        // SAFETY: the current thread's own frame; valid out-pointer.
        let err = unsafe {
            (self.t().GetLocalInt.expect("JVMTI GetLocalInt"))(self.0, thread, depth, slot, &mut v)
        };
        (err == 0).then_some(v)
    }

    /// Asks for a FramePop event when the current frame of `thread` returns.
    pub fn notify_frame_pop(&self, thread: sys::jthread) -> bool {
        // SAFETY: the current thread's own frame.
        unsafe { (self.t().NotifyFramePop.expect("JVMTI NotifyFramePop"))(self.0, thread, 0) == 0 }
    }
}
