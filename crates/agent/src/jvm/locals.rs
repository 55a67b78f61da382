//! The locals of the current thread's own frames, read with no safepoint.
//!
//! JVMTI's GetLocalObject, GetLocalInt and GetLocalLong are VM operations up to
//! JDK 18: each read stops every thread of the JVM at a safepoint, even when the
//! thread reads its own frame. A thread walking its own stack stops nothing, and
//! the JDK's live stack walker (`java.lang.LiveStackFrame`, the walker behind
//! `StackWalker` with locals) hands each frame's local slots over as an
//! `Object[]`: references as themselves, primitives boxed in a `PrimitiveSlot`.
//! [`LiveLocals`] holds that walker and a `Function` that takes the first
//! [`DEPTHS`] frames of the walk (`s -> s.limit(DEPTHS).toArray()`, built from
//! method handles once); a breakpoint handler calls it over JNI, through
//! [`Args`], which every breakpoint handler (remote calls, parks) reads its
//! frame's arguments with. The walk starts
//! at the method that hit the breakpoint: the frames below `StackWalker.walk`
//! are the JNI call's, which no walk shows.
//!
//! Slots are raw: no local variable table is needed (a class instrumented since
//! it was loaded may not have one yet), and an argument is in its slot at a
//! method's first instruction. A `long` takes two slots; on a 64-bit JVM its
//! value is in the second one's 8-byte slot (32-bit JVMs are not read).

use std::ptr::null_mut;

use super::breakpoints::Hit;
use super::{GlobalRef, Jni};
use crate::sys;

/// How many frames a walk returns (the breakpoint's frame and its callers').
pub const DEPTHS: i32 = 3;

/// The live stack walker and what a read of a frame's slots needs.
pub struct LiveLocals {
    walker: GlobalRef,
    first_frames: GlobalRef,
    primitive: GlobalRef,
    walk: usize,
    get_locals: usize,
    size: usize,
    int_value: usize,
    long_value: usize,
}

// SAFETY: global references and method ids are valid on every thread.
unsafe impl Send for LiveLocals {}
// SAFETY: as above; the struct is never changed after it is built.
unsafe impl Sync for LiveLocals {}

/// The process's live stack walker, built at its first use (None: this JVM
/// has none). Breakpoint handlers of every kind share it.
static SHARED: std::sync::OnceLock<Option<LiveLocals>> = std::sync::OnceLock::new();

/// The live stack walker, built on the calling (Java) thread at first use (a
/// thread that finds it being built by another builds its own rather than
/// wait: building runs Java code, which must not wait on a thread that may
/// wait on it).
pub fn shared(env: Jni) -> Option<&'static LiveLocals> {
    if let Some(l) = SHARED.get() {
        return l.as_ref();
    }
    let built = LiveLocals::new(env);
    let _ = SHARED.set(built);
    SHARED.get().and_then(Option::as_ref)
}

const METHOD_HANDLE: &str = "Ljava/lang/invoke/MethodHandle;";

impl LiveLocals {
    /// None when this JVM has no live stack walker or refuses to build one.
    pub fn new(env: Jni) -> Option<Self> {
        env.with_local_frame(32, || Self::build(env))
    }

    fn build(env: Jni) -> Option<Self> {
        let frame_class = env.find_class("java/lang/LiveStackFrame");
        let walker = env.call_static_object_with(
            frame_class,
            ("getStackWalker", "()Ljava/lang/StackWalker;"),
            &[],
        );
        let walker = env.global_ref(walker)?;
        let first_frames = env.global_ref(first_frames_function(env))?;
        let walker_class = env.find_class("java/lang/StackWalker");
        let walk = env.method_of(
            walker_class,
            "walk",
            "(Ljava/util/function/Function;)Ljava/lang/Object;",
        );
        let get_locals = env.method_of(frame_class, "getLocals", "()[Ljava/lang/Object;");
        let primitive_class = env.find_class("java/lang/LiveStackFrame$PrimitiveSlot");
        let size = env.method_of(primitive_class, "size", "()I");
        let int_value = env.method_of(primitive_class, "intValue", "()I");
        let long_value = env.method_of(primitive_class, "longValue", "()J");
        let primitive = env.global_ref(primitive_class)?;
        let ids = [walk, get_locals, size, int_value, long_value];
        if ids.iter().any(|m| m.is_null()) {
            return None;
        }
        Some(Self {
            walker,
            first_frames,
            primitive,
            walk: walk as usize,
            get_locals: get_locals as usize,
            size: size as usize,
            int_value: int_value as usize,
            long_value: long_value as usize,
        })
    }

    /// The current thread's top [`DEPTHS`] frames, walked once; depth 0 is
    /// the `top`th (0: the method that hit the breakpoint being handled; 1
    /// when an inserted call's native frame is above it).
    pub fn walk(&self, env: Jni, top: i32) -> Option<Walk<'_>> {
        let arg = sys::jvalue {
            l: self.first_frames.get(),
        };
        let walk = self.walk as sys::jmethodID;
        let frames = env.call_object_id(self.walker.get(), walk, &[arg]);
        (!frames.is_null()).then_some(Walk {
            live: self,
            env,
            frames,
            top,
        })
    }
}

/// The top frames of one walk (a local reference to their array, deleted on drop).
pub struct Walk<'a> {
    live: &'a LiveLocals,
    env: Jni,
    frames: sys::jobject,
    /// The walk's index of depth 0.
    top: i32,
}

impl Walk<'_> {
    /// The local slots of the frame at `depth` (0: the top one), if walked.
    pub fn frame(&self, depth: i32) -> Option<Locals<'_>> {
        let env = self.env;
        let frame = env.array_element(self.frames, depth + self.top);
        let get_locals = self.live.get_locals as sys::jmethodID;
        let slots = env.call_object_id(frame, get_locals, &[]);
        env.delete_local(frame);
        (!slots.is_null()).then_some(Locals {
            live: self.live,
            env,
            slots,
        })
    }
}

impl Drop for Walk<'_> {
    fn drop(&mut self) {
        self.env.delete_local(self.frames);
    }
}

/// `s -> s.limit(DEPTHS).toArray()` as a `java.util.function.Function`, from
/// method handles (a local reference; null on failure).
fn first_frames_function(env: Jni) -> sys::jobject {
    let type_class = env.find_class("java/lang/invoke/MethodType");
    let method_type = |descriptor: &str| {
        let d = env.new_string(descriptor);
        let from = (
            "fromMethodDescriptorString",
            "(Ljava/lang/String;Ljava/lang/ClassLoader;)Ljava/lang/invoke/MethodType;",
        );
        env.call_static_object_with(type_class, from, &[l(d), l(null_mut())])
    };
    let handles = env.find_class("java/lang/invoke/MethodHandles");
    let lookup = env.call_static_object_with(
        handles,
        ("publicLookup", "()Ljava/lang/invoke/MethodHandles$Lookup;"),
        &[],
    );
    let stream = env.find_class("java/util/stream/Stream");
    let find_virtual = (
        "findVirtual",
        "(Ljava/lang/Class;Ljava/lang/String;Ljava/lang/invoke/MethodType;)Ljava/lang/invoke/MethodHandle;",
    );
    let virtual_of = |name: &str, descriptor: &str| {
        let n = env.new_string(name);
        let t = method_type(descriptor);
        env.call_object_with(lookup, find_virtual, &[l(stream), l(n), l(t)])
    };
    let limit = virtual_of("limit", "(J)Ljava/util/stream/Stream;");
    let to_array = virtual_of("toArray", "()[Ljava/lang/Object;");
    let long_class = env.find_class("java/lang/Long");
    let depths = env.call_static_object_with(
        long_class,
        ("valueOf", "(J)Ljava/lang/Long;"),
        &[sys::jvalue { j: DEPTHS.into() }],
    );
    let bound = env.object_array(&[depths]);
    let insert = format!("({METHOD_HANDLE}I[Ljava/lang/Object;){METHOD_HANDLE}");
    let limited = env.call_static_object_with(
        handles,
        ("insertArguments", &insert),
        &[l(limit), sys::jvalue { i: 1 }, l(bound)],
    );
    let filter = format!("({METHOD_HANDLE}{METHOD_HANDLE}){METHOD_HANDLE}");
    let handle = env.call_static_object_with(
        handles,
        ("filterReturnValue", &filter),
        &[l(limited), l(to_array)],
    );
    let proxies = env.find_class("java/lang/invoke/MethodHandleProxies");
    let function = env.find_class("java/util/function/Function");
    if [limited, handle, function].iter().any(|o| o.is_null()) {
        return null_mut();
    }
    env.call_static_object_with(
        proxies,
        (
            "asInterfaceInstance",
            "(Ljava/lang/Class;Ljava/lang/invoke/MethodHandle;)Ljava/lang/Object;",
        ),
        &[l(function), l(handle)],
    )
}

fn l(o: sys::jobject) -> sys::jvalue {
    sys::jvalue { l: o }
}

/// One frame's local slots (a local reference to their `Object[]`, deleted on drop).
pub struct Locals<'a> {
    live: &'a LiveLocals,
    env: Jni,
    slots: sys::jobject,
}

impl Locals<'_> {
    /// The reference in `slot`, as a local reference; null for null, a
    /// primitive or a slot out of range.
    pub fn object(&self, slot: i32) -> sys::jobject {
        let o = self.env.array_element(self.slots, slot);
        if self.env.is_instance_of(o, self.live.primitive.get()) {
            self.env.delete_local(o);
            return null_mut();
        }
        o
    }

    /// The primitive in `slot` (a 4- or 8-byte slot, as the JVM's are).
    fn primitive(&self, slot: i32) -> Option<(i32, i64)> {
        let env = self.env;
        let o = env.array_element(self.slots, slot);
        if !env.is_instance_of(o, self.live.primitive.get()) {
            env.delete_local(o);
            return None;
        }
        let size = env.call_int_id(o, self.live.size as sys::jmethodID);
        let value = match size {
            Some(8) => env.call_long_id(o, self.live.long_value as sys::jmethodID),
            Some(4) => env
                .call_int_id(o, self.live.int_value as sys::jmethodID)
                .map(i64::from),
            _ => None,
        };
        env.delete_local(o);
        Some((size?, value?))
    }

    /// The `int` in `slot`.
    pub fn int(&self, slot: i32) -> Option<i32> {
        self.primitive(slot).map(|(_, v)| v as i32)
    }

    /// The `long` in slots `slot` and `slot + 1`: in the second one's 8-byte
    /// slot on a 64-bit JVM (None on a 32-bit one).
    pub fn long(&self, slot: i32) -> Option<i64> {
        match self.primitive(slot + 1)? {
            (8, v) => Some(v),
            _ => None,
        }
    }
}

impl Drop for Locals<'_> {
    fn drop(&mut self) {
        self.env.delete_local(self.slots);
    }
}

/// The arguments (local slots) of the frame at `depth` (0: the frame that hit
/// the breakpoint, 1: its caller) of the hit's thread. An inserted call hands
/// its method's slots over itself (`Hit::args`, depth 0 only). Otherwise they are
/// read by the thread walking its own stack (`jvm::locals`): JVMTI's own reads
/// stop every thread at a safepoint on JDK 17, several per request. A JVM
/// without the live stack walker is read through JVMTI.
pub struct Args<'a> {
    hit: &'a Hit,
    depth: i32,
    from: Source<'a>,
}

/// Where [`Args`] reads the slots of its frame.
enum Source<'a> {
    /// The inserted call's array (`Hit::args`).
    Passed,
    /// One walk of the thread's own stack.
    Walk(Walk<'a>),
    /// JVMTI's reads.
    Jvmti,
}

impl<'a> Args<'a> {
    pub fn of(hit: &'a Hit, depth: i32) -> Self {
        let from = if !hit.args.is_null() && depth == 0 {
            Source::Passed
        } else {
            let top = i32::from(hit.inserted);
            shared(hit.jni)
                .and_then(|l| l.walk(hit.jni, top))
                .map_or(Source::Jvmti, Source::Walk)
        };
        Self { hit, depth, from }
    }

    /// JVMTI's depth of the frame at `depth`: an inserted call's native frame
    /// is above it.
    fn jvmti_depth(&self, depth: i32) -> i32 {
        depth + i32::from(self.hit.inserted)
    }

    /// A reference argument, as a local reference (null when it cannot be read).
    pub fn object(&self, slot: i32) -> sys::jobject {
        self.object_at(self.depth, slot)
    }

    /// A reference argument of the frame at `depth` (below [`DEPTHS`]; the
    /// passed array holds only the frame's own).
    pub fn object_at(&self, depth: i32, slot: i32) -> sys::jobject {
        let (hit, own) = (self.hit, depth == self.depth);
        match &self.from {
            Source::Passed if own => hit.jni.array_element(hit.args, slot),
            Source::Walk(w) => w.frame(depth).map_or(null_mut(), |l| l.object(slot)),
            _ => hit
                .jvmti
                .local_object(hit.thread, self.jvmti_depth(depth), slot),
        }
    }

    /// A primitive argument: unboxed by `boxed` from the passed array, read by
    /// `walked` from the walk, or by `jvmti` at JVMTI's depth of the frame.
    fn primitive<T>(
        &self,
        slot: i32,
        boxed: impl Fn(sys::jobject) -> Option<T>,
        walked: impl Fn(&Locals) -> Option<T>,
        jvmti: impl Fn(i32) -> Option<T>,
    ) -> Option<T> {
        match &self.from {
            Source::Passed => {
                let o = self.hit.jni.array_element(self.hit.args, slot);
                let v = boxed(o);
                self.hit.jni.delete_local(o);
                v
            }
            Source::Walk(w) => walked(&w.frame(self.depth)?),
            Source::Jvmti => jvmti(self.jvmti_depth(self.depth)),
        }
    }

    pub fn int(&self, slot: i32) -> Option<i32> {
        let (jni, jvmti, thread) = (self.hit.jni, self.hit.jvmti, self.hit.thread);
        self.primitive(
            slot,
            |o| jni.call_int(o, "intValue"),
            |l| l.int(slot),
            |depth| jvmti.local_int(thread, depth, slot),
        )
    }

    /// A `long` argument in slots `slot` and `slot + 1`.
    pub fn long(&self, slot: i32) -> Option<i64> {
        let (jni, jvmti, thread) = (self.hit.jni, self.hit.jvmti, self.hit.thread);
        self.primitive(
            slot,
            |o| jni.call_long(o, "longValue"),
            |l| l.long(slot),
            |depth| jvmti.local_long(thread, depth, slot),
        )
    }
}
