//! Park events (JFR's jdk.ThreadPark): every `LockSupport.park*` call of a
//! platform thread that lasts at least `parkthreshold=` becomes a Park event.
//!
//! The hook: a JVMTI environment of its own, created at JVM start (breakpoints
//! and local variables are capabilities HotSpot grants only while the agent
//! loads), sets two breakpoints in each `park*` method around its call of
//! `Unsafe.park`, found in the method's bytecodes: one just before the call
//! (the park starts) and one just after it (the park ended). Compared with a
//! breakpoint at the entry and a frame pop at the return, nothing else changes
//! for the thread: a pending frame pop puts the whole thread in interpreted
//! mode (its compiled frames deoptimised) for the park's length. A method with a
//! breakpoint runs interpreted, which costs little next to parking.
//!
//! Virtual threads (JDK 21+) take `park*`'s other branch: the carrier is
//! released through `VirtualThreads.park*` (JDK 21) or
//! `JavaLangAccess.parkVirtualThread` (JDK 25) instead of `Unsafe.park`. Those
//! calls get the same pair of breakpoints; a virtual thread may resume on
//! another carrier, so its park's start is kept by its Java id rather than in
//! the carrier's thread-local, and the event is the virtual thread's. A
//! carrier thread's own idle parks are recorded like any platform thread's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use jscope_bytecode::{insn, ClassFile, ConstantPool};

use super::callbacks;
use super::queue::RawKind;
use super::{on, Kinds};
use crate::clock;
use crate::jvm::breakpoints::{self, Handler, Hit};
use crate::jvm::locals::Args;
use crate::jvm::{Jni, Jvmti, JvmtiError, Vm};
use crate::sys;

const LOCK_SUPPORT: &str = "java/util/concurrent/locks/LockSupport";
/// The call `park*` makes on platform threads, as its constant pool names it.
const UNSAFE_PARK: (&str, &str, &str) = ("jdk/internal/misc/Unsafe", "park", "(ZJ)V");
const INVOKEVIRTUAL: u8 = 0xb6;
const INVOKESTATIC: u8 = 0xb8;
const INVOKEINTERFACE: u8 = 0xb9;

/// The calls `park*` makes on virtual threads: JDK 21's and JDK 25's.
fn is_virtual_park((class, name, desc): (&str, &str, &str)) -> bool {
    matches!(
        (class, name, desc),
        (
            "jdk/internal/misc/VirtualThreads",
            "park" | "parkUntil",
            "()V" | "(J)V"
        ) | (
            "jdk/internal/access/JavaLangAccess",
            "parkVirtualThread",
            "()V" | "(J)V"
        )
    )
}

/// A virtual thread's park under way: when it began, its site (an index into
/// the sites) and its timeout argument as read then (the frame is gone when
/// the park ends at a mount).
#[derive(Clone, Copy)]
struct VirtualPark {
    since: u64,
    site: usize,
    timeout_arg: i64,
    /// The request it served when it parked (its carrier's slot holds the
    /// virtual thread's while mounted; at the mount that ends the park it may
    /// not yet).
    request: u32,
}

fn virtual_parks() -> std::sync::MutexGuard<'static, Option<HashMap<i64, VirtualPark>>> {
    super::STATE
        .park
        .virtual_parks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Why park events cannot be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ParkError {
    #[error("park events need the agent loaded at JVM start (-agentpath)")]
    NotAtStart,
    #[error("park events could not be set up when the agent loaded (see above)")]
    FailedAtLoad,
    #[error("no JVMTI environment for park events")]
    NoEnv,
    #[error(
        "the JVM refused the capabilities park events need (breakpoints, locals, bytecodes): {0}"
    )]
    Capabilities(JvmtiError),
    #[error("cannot set the park callbacks: {0}")]
    Callbacks(JvmtiError),
    #[error("no Unsafe.park call found in {LOCK_SUPPORT}'s park methods")]
    NoCallSites,
}

/// The park hooks' state, in the events' static: the breakpoint callbacks find
/// it without a recording at hand (the environment is made when the agent loads).
pub(crate) struct ParkState {
    /// The park environment; 0 until `install` made it.
    env: AtomicUsize,
    /// Set when `install` was asked for park events and failed.
    failed: AtomicBool,
    /// The remote capture's environment, when it has one: HotSpot grants the
    /// breakpoint capability to a single environment, so park events share it.
    shared: AtomicUsize,
    /// Thread.parkBlocker's field id (0 unknown: blockers are not named).
    blocker_field: AtomicUsize,
    threshold_ns: AtomicU64,
    /// Parks seen that were shorter than the threshold.
    pub short: AtomicU64,
    /// Ends of parks whose start was not seen (the recording began mid-park).
    pub unmatched: AtomicU64,
    /// The call sites, found once (LockSupport is never unloaded).
    sites: OnceLock<Vec<Site>>,
    /// Virtual threads' parks not ended yet, by Java id.
    virtual_parks: Mutex<Option<HashMap<i64, VirtualPark>>>,
}

impl ParkState {
    pub(crate) const fn new() -> ParkState {
        ParkState {
            env: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            shared: AtomicUsize::new(0),
            blocker_field: AtomicUsize::new(0),
            threshold_ns: AtomicU64::new(0),
            short: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            sites: OnceLock::new(),
            virtual_parks: Mutex::new(None),
        }
    }
}

/// Where a park method's timeout is, by the argument slot of its `long`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timeout {
    None,
    /// Relative, in ns (`parkNanos`).
    Nanos(i32),
    /// A wall-clock deadline in ms since the epoch (`parkUntil`).
    Until(i32),
}

/// One `Unsafe.park` call inside a park method.
#[derive(Debug, Clone, Copy)]
struct Site {
    method: usize,
    /// The call's bci, and the next instruction's.
    before: i64,
    after: i64,
    timeout: Timeout,
    /// The virtual-thread branch's call.
    virtual_thread: bool,
}

/// The park methods of JDK 17 and 25, by name and descriptor, and where their
/// timeout is. (JDK 25's `parkUntil(Object, long)` calls `parkUntil(long)`
/// rather than `Unsafe.park`: its park is seen there, blocker included, since
/// the blocker is read from the thread.)
fn variant(name: &str, desc: &str) -> Option<Timeout> {
    Some(match (name, desc) {
        ("park", "()V" | "(Ljava/lang/Object;)V") => Timeout::None,
        ("parkNanos", "(J)V") => Timeout::Nanos(0),
        ("parkNanos", "(Ljava/lang/Object;J)V") => Timeout::Nanos(1),
        ("parkUntil", "(J)V") => Timeout::Until(0),
        ("parkUntil", "(Ljava/lang/Object;J)V") => Timeout::Until(1),
        _ => return None,
    })
}

/// Creates the park environment while the agent loads, when `park` is asked
/// for. Its events stay off until a recording arms it.
pub fn install(vm: Vm, options: &super::EventOptions) -> Result<(), ParkError> {
    if !options.kinds.contains(Kinds::PARK) || super::STATE.park.env.load(Ordering::Acquire) != 0 {
        return Ok(());
    }
    let result = make_env(vm);
    super::STATE
        .park
        .failed
        .store(result.is_err(), Ordering::Relaxed);
    result
}

/// Why parks cannot be recorded, when `installed` is false.
pub fn unavailable() -> ParkError {
    match super::STATE.park.failed.load(Ordering::Relaxed) {
        true => ParkError::FailedAtLoad,
        false => ParkError::NotAtStart,
    }
}

fn make_env(vm: Vm) -> Result<(), ParkError> {
    let shared = super::STATE.park.shared.load(Ordering::Acquire);
    if shared != 0 {
        // The capture's callback hands park's breakpoints over.
        let env = Jvmti(shared as *mut sys::jvmtiEnv);
        add_capabilities(env)?;
        env.set_event(true, sys::JVMTI_EVENT_BREAKPOINT)
            .map_err(ParkError::Callbacks)?;
        super::STATE.park.env.store(shared, Ordering::Release);
        return Ok(());
    }
    let jvmti = vm.jvmti().ok_or(ParkError::NoEnv)?;
    if let Err(e) = add_capabilities(jvmti).and_then(|()| set_callback(jvmti)) {
        jvmti.dispose();
        return Err(e);
    }
    super::STATE
        .park
        .env
        .store(jvmti.0 as usize, Ordering::Release);
    Ok(())
}

fn add_capabilities(jvmti: Jvmti) -> Result<(), ParkError> {
    let mut caps = crate::jvm::no_capabilities();
    caps.set_can_generate_breakpoint_events(1);
    caps.set_can_access_local_variables(1);
    caps.set_can_get_bytecodes(1);
    caps.set_can_get_constant_pool(1);
    jvmti.add_capabilities(&caps).map_err(|e| match e {
        JvmtiError::Missing(_) => ParkError::NoEnv,
        e => ParkError::Capabilities(e),
    })
}

fn set_callback(jvmti: Jvmti) -> Result<(), ParkError> {
    let mut cb = crate::jvm::no_callbacks();
    breakpoints::install(&mut cb);
    jvmti.set_callbacks(&cb).map_err(ParkError::Callbacks)?;
    jvmti
        .set_event(true, sys::JVMTI_EVENT_BREAKPOINT)
        .map_err(ParkError::Callbacks)
}

/// Whether `install` made the park environment (the agent loaded at start).
pub fn installed() -> bool {
    super::STATE.park.env.load(Ordering::Acquire) != 0
}

/// Called by the remote capture once its environment exists, before `install`.
pub fn share_env(jvmti: Jvmti) {
    super::STATE
        .park
        .shared
        .store(jvmti.0 as usize, Ordering::Release);
}

fn env() -> Option<Jvmti> {
    let env = super::STATE.park.env.load(Ordering::Acquire);
    (env != 0).then_some(Jvmti(env as *mut sys::jvmtiEnv))
}

/// Sets the breakpoints for a recording; on a Java thread.
pub fn arm(jni: Jni, threshold_ns: u64) -> Result<(), ParkError> {
    let jvmti = env().ok_or(ParkError::NotAtStart)?;
    super::STATE
        .park
        .threshold_ns
        .store(threshold_ns, Ordering::Relaxed);
    let thread = jni.find_class("java/lang/Thread");
    if !thread.is_null() {
        let field = jni.field_id(thread, "parkBlocker", "Ljava/lang/Object;");
        super::STATE
            .park
            .blocker_field
            .store(field as usize, Ordering::Relaxed);
        jni.delete_local(thread);
    }
    let sites = super::STATE.park.sites.get_or_init(|| {
        let class = jni.find_class(LOCK_SUPPORT);
        let sites = if class.is_null() {
            Vec::new()
        } else {
            find_sites(jvmti, class)
        };
        jni.delete_local(class);
        sites
    });
    if sites.is_empty() {
        return Err(ParkError::NoCallSites);
    }
    for s in sites {
        for location in [s.before, s.after] {
            // False for DUPLICATE: armed by an earlier recording not disarmed.
            let _ = breakpoints::set(jvmti, s.method as sys::jmethodID, location, HANDLER);
        }
    }
    Ok(())
}

/// Removes the breakpoints: the park methods run at full speed again.
pub fn disarm() {
    let (Some(jvmti), Some(sites)) = (env(), super::STATE.park.sites.get()) else {
        return;
    };
    for s in sites {
        for location in [s.before, s.after] {
            let _ = jvmti.clear_breakpoint(s.method as sys::jmethodID, location);
        }
    }
}

/// The `Unsafe.park` calls of LockSupport's park methods.
fn find_sites(jvmti: Jvmti, class: sys::jclass) -> Vec<Site> {
    let Some(pool) = constant_pool(jvmti, class) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (method, name, desc) in jvmti.methods(class) {
        let Some(timeout) = variant(&name, &desc) else {
            continue;
        };
        let Some(code) = jvmti.bytecodes(method) else {
            continue;
        };
        for (before, after, virtual_thread) in park_calls(&code, &pool) {
            out.push(Site {
                method: method as usize,
                before: before.into(),
                after: after.into(),
                timeout,
                virtual_thread,
            });
        }
    }
    out
}

/// (call bci, next bci, virtual) of each `invokevirtual Unsafe.park(ZJ)V` in
/// `code`, and of each call of a virtual thread's park (virtual: true).
fn park_calls(code: &[u8], pool: &ConstantPool) -> Vec<(u32, u32, bool)> {
    let Ok(insns) = insn::decode(code) else {
        return Vec::new();
    };
    insns
        .iter()
        .filter(|i| matches!(i.opcode, INVOKEVIRTUAL | INVOKESTATIC | INVOKEINTERFACE))
        .filter_map(|i| {
            // decode checked that the instruction's bytes are there.
            let at = i.offset as usize;
            let index = u16::from_be_bytes([code[at + 1], code[at + 2]]);
            let (c, n, d) = pool.member_ref(index).ok()?;
            let called = (c.as_str(), n.as_str(), d.as_str());
            let virtual_thread = match i.opcode {
                INVOKEVIRTUAL if called == UNSAFE_PARK => false,
                INVOKESTATIC | INVOKEINTERFACE if is_virtual_park(called) => true,
                _ => return None,
            };
            Some((i.offset, i.offset + i.len, virtual_thread))
        })
        .collect()
}

/// The class's constant pool, read through JVMTI (whose indices are the ones
/// GetBytecodes' instructions use) and parsed by wrapping it in an empty class.
fn constant_pool(jvmti: Jvmti, class: sys::jclass) -> Option<ConstantPool> {
    let (count, raw) = jvmti.constant_pool(class)?;
    let count = u16::try_from(count).ok()?;
    ClassFile::parse(&empty_class_around(count, &raw))
        .ok()
        .map(|c| c.pool)
}

/// A class file with the given pool and nothing else.
fn empty_class_around(count: u16, pool: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pool.len() + 24);
    out.extend_from_slice(&0xCAFE_BABEu32.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 61]);
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(pool);
    // access, this, super, then no interfaces, fields, methods or attributes.
    out.extend_from_slice(&[0; 14]);
    out
}

/// Where park's breakpoints go.
const HANDLER: Handler = Handler {
    on_breakpoint: on_park_breakpoint,
};

/// A breakpoint of park's: the park starts before `Unsafe.park`, ends after it.
fn on_park_breakpoint(hit: &Hit) {
    let sites = super::STATE.park.sites.get().map_or(&[][..], Vec::as_slice);
    let Some((index, site)) = sites.iter().enumerate().find(|(_, s)| {
        s.method == hit.method as usize && (s.before == hit.location || s.after == hit.location)
    }) else {
        return;
    };
    if !on(Kinds::PARK) {
        return;
    }
    let now = clock::monotonic_ns();
    if site.virtual_thread {
        virtual_park(hit, (index, site), now);
    } else if hit.location == site.before {
        super::WAITS.with(|w| w.parked_since.set(now));
    } else if hit.location == site.after {
        let since = super::WAITS.with(|w| w.parked_since.replace(0));
        if since == 0 {
            // A virtual thread whose park unmounted it does not always stop at
            // its own call's next instruction when it resumes (a thawed frame),
            // but it does at this one, where both branches return.
            if crate::jvm::thread::current_is_virtual(hit.jni) {
                let id = crate::jvm::thread::java_id(hit.jni, hit.thread);
                end_virtual_park(hit.jvmti, hit.jni, hit.thread, id, now);
                return;
            }
            super::STATE.park.unmatched.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Read in its frame only for a park long enough to be recorded.
        parked(
            hit.jvmti,
            hit.jni,
            hit.thread,
            site,
            (since, now, None),
            || timeout_arg(hit, site),
        );
    }
}

/// A breakpoint around a virtual thread's park (at site number `index`): it
/// unmounts in between and may come back on another carrier, so the start is
/// kept by its Java id.
fn virtual_park(hit: &Hit, (index, site): (usize, &Site), now: u64) {
    let id = crate::jvm::thread::java_id(hit.jni, hit.thread);
    if id == 0 {
        return;
    }
    if hit.location == site.before {
        let park = VirtualPark {
            since: now,
            site: index,
            timeout_arg: timeout_arg(hit, site),
            request: callbacks::current_request(),
        };
        virtual_parks()
            .get_or_insert_with(HashMap::new)
            .insert(id, park);
        return;
    }
    // A park that returned without unmounting (a mount ends the others).
    end_virtual_park(hit.jvmti, hit.jni, hit.thread, id, now);
}

/// VirtualThreadMount (see `crate::trace::vthreads`): a virtual thread that
/// parked comes back, its park over (its own breakpoint after the call is not
/// reliably reached by a frame thawed at the mount). `id` is its Java id.
pub fn virtual_thread_mounted(jni: Jni, vthread: sys::jthread, id: i64) {
    if !on(Kinds::PARK) {
        return;
    }
    let Some(jvmti) = env() else {
        return;
    };
    end_virtual_park(jvmti, jni, vthread, id, clock::monotonic_ns());
}

/// Virtual thread `id`'s park, if one is open, ended at `now`: recorded at the
/// site where it began.
fn end_virtual_park(jvmti: Jvmti, jni: Jni, vthread: sys::jthread, id: i64, now: u64) {
    let Some(p) = virtual_parks().as_mut().and_then(|m| m.remove(&id)) else {
        return;
    };
    if let Some(site) = super::STATE.park.sites.get().and_then(|s| s.get(p.site)) {
        parked(
            jvmti,
            jni,
            vthread,
            site,
            (p.since, now, Some(p.request)),
            || p.timeout_arg,
        );
    }
}

/// The park method's timeout argument (0 without one), read in its frame
/// as the remote breakpoints read theirs ([`Args`]: the thread walking its
/// own stack, no safepoint).
fn timeout_arg(hit: &Hit, site: &Site) -> i64 {
    match site.timeout {
        Timeout::None => 0,
        Timeout::Nanos(slot) | Timeout::Until(slot) => Args::of(hit, 0).long(slot).unwrap_or(0),
    }
}

/// A park of this thread ended: queued when long enough, counted otherwise.
/// It served `request` (0: none; None: the request the thread serves now,
/// read only for a park that is queued). `timeout_arg` gives the park's
/// timeout argument, asked only when queued.
fn parked(
    jvmti: Jvmti,
    jni: Jni,
    thread: sys::jthread,
    site: &Site,
    (since, end, request): (u64, u64, Option<u32>),
    timeout_arg: impl FnOnce() -> i64,
) {
    let duration_ns = end.saturating_sub(since);
    if duration_ns < super::STATE.park.threshold_ns.load(Ordering::Relaxed) {
        super::STATE.park.short.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // Read for every variant: `park()` may follow LockSupport.setCurrentBlocker.
    let blocker = blocker_class(jvmti, jni, thread);
    let timeout_ns = match site.timeout {
        Timeout::None => 0,
        Timeout::Nanos(_) => timeout_arg().max(0) as u64,
        Timeout::Until(_) => until_timeout(timeout_arg(), duration_ns),
    };
    let key = if site.virtual_thread {
        // The virtual thread's own, whichever carrier it ended on (the writer
        // names a thread known only by its Java id as a virtual thread).
        let id = crate::jvm::thread::java_id(jni, thread);
        crate::java_threads::ThreadKey::new(0, 0, id)
    } else {
        crate::java_threads::ThreadKey::of(jni, thread)
    };
    let kind = RawKind::Park {
        duration_ns,
        blocker,
        timeout_ns,
        stack: jvmti.current_stack(super::depth()),
        request: request.unwrap_or_else(|| callbacks::request_of(&key)),
    };
    callbacks::push_key(key, since, kind);
}

/// A `parkUntil` deadline (ms since the epoch) as the timeout it was when the
/// park began, `duration_ns` ago; 0 for a deadline already past.
fn until_timeout(deadline_ms: i64, duration_ns: u64) -> u64 {
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let began_ns = now_ns - i128::from(duration_ns);
    (i128::from(deadline_ms) * 1_000_000 - began_ns).clamp(0, i128::from(u64::MAX)) as u64
}

/// The class signature of the thread's parkBlocker (set before the call by the
/// park method, or by `setCurrentBlocker`, and cleared after the breakpoint).
fn blocker_class(jvmti: Jvmti, jni: Jni, thread: sys::jthread) -> Option<String> {
    let field = super::STATE.park.blocker_field.load(Ordering::Relaxed);
    if field == 0 || thread.is_null() {
        return None;
    }
    let blocker = jni.object_field_by_id(thread, field as sys::jfieldID);
    let class = jvmti.object_class_signature(jni, blocker);
    jni.delete_local(blocker);
    class
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_bytecode::Constant;

    #[test]
    fn park_methods_of_jdk_17_and_25_are_known() {
        assert_eq!(variant("park", "()V"), Some(Timeout::None));
        assert_eq!(
            variant("parkNanos", "(Ljava/lang/Object;J)V"),
            Some(Timeout::Nanos(1))
        );
        assert_eq!(variant("parkUntil", "(J)V"), Some(Timeout::Until(0)));
        assert_eq!(variant("unpark", "(Ljava/lang/Thread;)V"), None);
    }

    fn method_ref(pool: &mut ConstantPool, (c, n, d): (&str, &str, &str)) -> u16 {
        let class = pool.add_class(c).unwrap();
        let name = pool.add_utf8(n).unwrap();
        let descriptor = pool.add_utf8(d).unwrap();
        let nt = pool
            .find_or_add(Constant::NameAndType { name, descriptor })
            .unwrap();
        pool.find_or_add(Constant::MethodRef {
            class,
            name_and_type: nt,
        })
        .unwrap()
    }

    #[test]
    fn only_calls_of_unsafe_park_are_sites() {
        let mut pool = ConstantPool::new();
        let park = method_ref(&mut pool, UNSAFE_PARK);
        let virt = method_ref(&mut pool, ("java/lang/Thread", "isVirtual", "()Z"));
        let [p1, p2] = park.to_be_bytes();
        let [v1, v2] = virt.to_be_bytes();
        // aload_0; invokevirtual isVirtual; pop; aconst_null; iconst_0; lconst_0;
        // invokevirtual park; return
        let code = [
            0x2a,
            INVOKEVIRTUAL,
            v1,
            v2,
            0x57,
            0x01,
            0x03,
            0x09,
            INVOKEVIRTUAL,
            p1,
            p2,
            0xb1,
        ];
        assert_eq!(park_calls(&code, &pool), vec![(8, 11, false)]);
        assert!(park_calls(&[0xff], &pool).is_empty(), "undecodable code");
    }

    #[test]
    fn virtual_threads_park_calls_of_jdk_21_and_25_are_sites() {
        let mut pool = ConstantPool::new();
        let jdk21 = method_ref(
            &mut pool,
            ("jdk/internal/misc/VirtualThreads", "park", "(J)V"),
        );
        let other = method_ref(
            &mut pool,
            ("jdk/internal/misc/VirtualThreads", "unpark", "(J)V"),
        );
        let [a1, a2] = jdk21.to_be_bytes();
        let [o1, o2] = other.to_be_bytes();
        // lload_0; invokestatic park(J); lload_0; invokestatic unpark(J); return
        let code = [0x1e, INVOKESTATIC, a1, a2, 0x1e, INVOKESTATIC, o1, o2, 0xb1];
        assert_eq!(park_calls(&code, &pool), vec![(1, 4, true)]);
        assert!(is_virtual_park((
            "jdk/internal/access/JavaLangAccess",
            "parkVirtualThread",
            "()V"
        )));
        assert!(!is_virtual_park((
            "jdk/internal/access/JavaLangAccess",
            "unparkVirtualThread",
            "(Ljava/lang/Thread;)V"
        )));
    }

    #[test]
    fn deadlines_become_timeouts_from_the_parks_start() {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        // Parked 100 ms ago until 50 ms from now: a timeout of about 150 ms.
        let t = until_timeout(now_ms + 50, 100_000_000);
        assert!((140_000_000..=160_000_000).contains(&t), "{t}");
        assert_eq!(until_timeout(now_ms - 10_000, 0), 0);
    }

    #[test]
    fn a_pool_survives_the_empty_class_around_it() {
        let bytes = ClassFile::natives_only("a/B", &[("f", "()V")]).unwrap();
        let mut class = ClassFile::parse(&bytes).unwrap();
        class.methods.clear();
        class.attributes.clear();
        let bytes = class.to_bytes().unwrap();
        // Magic, versions and count before the pool; 14 bytes of empty class after.
        let count = u16::from_be_bytes([bytes[8], bytes[9]]);
        let wrapped = empty_class_around(count, &bytes[10..bytes.len() - 14]);
        assert_eq!(ClassFile::parse(&wrapped).unwrap().pool, class.pool);
    }
}
