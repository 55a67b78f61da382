//! Native memory and native locks (`nativemem`, `nativelock`): the agent's
//! hooks in the loaded objects' import slots, so that a sampled `malloc`,
//! `calloc`, `realloc`, `posix_memalign` or `aligned_alloc`, or a contended
//! `pthread_mutex_lock`, `pthread_rwlock_rdlock` or `pthread_rwlock_wrlock`,
//! is written with its mixed stack, and a `free` of a sampled block with the
//! sample's id.
//!
//! - [`got`]: finding and diverting the objects' import slots (and giving them
//!   back), with no `LD_PRELOAD`, so that attach works too; `dlopen` is hooked
//!   as well, and the writer looks for new objects every drain, so objects
//!   loaded later are hooked too.
//! - [`hooks`]: the hooks themselves; [`per_thread`]: the recursion guard and
//!   the sampling countdowns; [`table`]: the lock-free table of sampled blocks
//!   still held; [`stack`]: the walk from inside a hook.
//! - [`InterposeEngine`]: start (patch), stop (unpublish, wait for the hooks
//!   in flight, give the slots back) and the writer's drain.
//!
//! The state the hooks read is one [`Shared`] per recording, leaked (a hook
//! may still run on it after the recording stopped) and published through
//! `STATE.memory` and `STATE.locks` while recording. A hook that finds work to do
//! counts itself in flight and checks the pointer again, so once stop has
//! unpublished it and seen no hook in flight, no sample or free can still
//! reach the rings: the writer's last drain has them all.
//!
//! A forked child unpublishes both in the child (`pthread_atfork`): its hooks
//! pass straight through, whatever the parent was doing at the fork.

pub mod got;
mod hooks;
pub mod options;
pub(crate) mod per_thread;
mod stack;
pub mod table;

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use jscope_format::{EventKind, JvmEvent, RequestId, StackId, ThreadId};

use crate::engine::{Drained, Engine, StartContext, StartError, StopContext};
use crate::frames::CallFrame;
use crate::hotspot::names::{GeneratedCode, GeneratedNames};
use crate::hotspot::HotSpot;
use crate::java_threads::ThreadKey;
use crate::ring::{RingHeader, SampleRing, ABANDONED};
use crate::sink::Sink;
pub use options::NativeOptions;
use per_thread::Busy;
use stack::StackWalker;
use table::BlockTable;

/// A sample's kind in the ring.
const ALLOC: u8 = 1;
const LOCK: u8 = 2;

/// Bytes of frames the sample ring may take: 4096 samples at the default
/// depth, a few hundred ms of a busy allocator's samples at the default rate
/// while the writer waits for a cpu on a loaded machine.
const RING_FRAME_BYTES: usize = 16 << 20;
/// Frees of sampled blocks the ring holds between two drains.
const FREE_RING: usize = 1 << 15;
/// The writer is woken early after this many frees or samples.
const WAKE_EVERY_FREES: u64 = FREE_RING as u64 / 4;
const WAKE_EVERY_SAMPLES: u64 = 64;
/// Waits for hooks in flight at stop at most this long.
const STOP_WAIT: Duration = Duration::from_secs(1);

/// A sampled call, as the hook leaves it for the writer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NativeSample {
    kind: u8,
    num_frames: i32,
    vm_walk: bool,
    tid: u32,
    env: usize,
    vthread: i64,
    ticks: u64,
    /// Bytes asked for, or nanoseconds waited.
    amount: u64,
    weight: u64,
    address: u64,
    /// The allocating function, or the lock function.
    call: u64,
    id: u64,
    /// The request the thread was serving (0: none).
    request: u32,
}

impl RingHeader for NativeSample {
    fn frame_count(&self) -> i32 {
        self.num_frames
    }

    fn abandoned() -> NativeSample {
        NativeSample {
            num_frames: ABANDONED,
            ..NativeSample::default()
        }
    }
}

/// A sampled block freed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FreeRecord {
    ticks: u64,
    id: u64,
    address: u64,
    abandoned: bool,
}

impl RingHeader for FreeRecord {
    fn frame_count(&self) -> i32 {
        0
    }

    fn abandoned() -> FreeRecord {
        FreeRecord {
            abandoned: true,
            ..FreeRecord::default()
        }
    }
}

/// Counter names in index order.
const COUNTER_NAMES: [&str; 8] = [
    "nativemem.samples",
    "nativemem.dropped",
    "nativemem.untracked",
    "nativemem.frees",
    "nativemem.frees_dropped",
    "nativelock.samples",
    "nativelock.dropped",
    "interpose.walk_failed",
];
const MEM_SAMPLES: usize = 0;
const MEM_DROPPED: usize = 1;
const UNTRACKED: usize = 2;
const FREES: usize = 3;
const FREES_DROPPED: usize = 4;
const LOCK_SAMPLES: usize = 5;
const LOCK_DROPPED: usize = 6;
const WALK_FAILED: usize = 7;

/// One recording's state the hooks read.
pub(crate) struct Shared {
    /// Numbers the recording, for the threads' countdowns.
    recording: u32,
    mem_interval: u64,
    lock_interval: u64,
    table: BlockTable,
    samples: SampleRing<NativeSample>,
    frees: SampleRing<FreeRecord>,
    next_id: AtomicU64,
    /// Hooks doing sampled work now (see the module doc).
    in_flight: AtomicUsize,
    walker: StackWalker,
    counters: [AtomicU64; COUNTER_NAMES.len()],
}

/// The hooks' process-wide state: what they read on every call, and the
/// patching of the libraries' tables, which outlives recordings.
struct HookState {
    /// The recording whose native allocations are sampled, if any.
    memory: AtomicPtr<Shared>,
    /// The recording whose native lock waits are sampled, if any.
    locks: AtomicPtr<Shared>,
    /// Recordings started so far (their numbers).
    recordings: AtomicU32,
    /// The first hook to panic, for the writer's one report.
    panicked: AtomicPtr<u8>,
    panic_name_len: AtomicUsize,
    /// The patched libraries' tables, kept to restore them.
    patcher: Mutex<Option<Patcher>>,
    /// Objects and slots the running (or last) recording diverted, for its
    /// counters.
    patched_objects: AtomicU64,
    patched_slots: AtomicU64,
    at_fork: Once,
}

static STATE: HookState = HookState {
    memory: AtomicPtr::new(std::ptr::null_mut()),
    locks: AtomicPtr::new(std::ptr::null_mut()),
    recordings: AtomicU32::new(0),
    panicked: AtomicPtr::new(std::ptr::null_mut()),
    panic_name_len: AtomicUsize::new(0),
    patcher: Mutex::new(None),
    patched_objects: AtomicU64::new(0),
    patched_slots: AtomicU64::new(0),
    at_fork: Once::new(),
};

#[inline(always)]
fn memory() -> Option<&'static Shared> {
    // SAFETY: only leaked states are published.
    unsafe { STATE.memory.load(Ordering::Acquire).as_ref() }
}

#[inline(always)]
fn locks() -> Option<&'static Shared> {
    // SAFETY: as above.
    unsafe { STATE.locks.load(Ordering::Acquire).as_ref() }
}

/// A hook caught a panic: the recording's hooks stop (their state may be half
/// updated) and the writer says so once. Allocation-free.
#[cold]
fn hook_panicked(name: &'static str) {
    STATE.memory.store(std::ptr::null_mut(), Ordering::SeqCst);
    STATE.locks.store(std::ptr::null_mut(), Ordering::SeqCst);
    if STATE
        .panicked
        .compare_exchange(
            std::ptr::null_mut(),
            name.as_ptr() as *mut u8,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_ok()
    {
        STATE.panic_name_len.store(name.len(), Ordering::Release);
    }
    crate::jvm::entry::count_panic();
}

/// The first hook that panicked, once.
fn take_panic() -> Option<&'static str> {
    let len = STATE.panic_name_len.swap(0, Ordering::AcqRel);
    let ptr = STATE.panicked.load(Ordering::Acquire);
    if len == 0 || ptr.is_null() {
        return None;
    }
    // SAFETY: a &'static str's bytes, stored by hook_panicked.
    std::str::from_utf8(unsafe { std::slice::from_raw_parts(ptr, len) }).ok()
}

/// A hook counted in flight; uncounted when dropped.
struct InFlight(&'static Shared);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A sampled block taken out of the table by a `realloc` before the real call.
pub(crate) struct HeldBlock {
    shared: &'static Shared,
    address: usize,
    id: u64,
    _in_flight: InFlight,
}

impl HeldBlock {
    /// The realloc failed: the block is still the caller's.
    pub fn keep(self) {
        if !self.shared.table.insert(self.address, self.id) {
            self.shared.count(UNTRACKED);
        }
    }

    /// The realloc replaced the block.
    pub fn freed(self) {
        self.shared.push_free(self.id, self.address);
    }
}

impl Shared {
    fn count(&self, index: usize) {
        self.counters[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts this hook in flight while `published` is this state; None once
    /// the recording has stopped.
    fn enter(&'static self, published: &AtomicPtr<Shared>) -> Option<InFlight> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let in_flight = InFlight(self);
        std::ptr::eq(published.load(Ordering::SeqCst), self).then_some(in_flight)
    }

    /// A sampled allocation of `size` bytes at `address`.
    #[cold]
    #[inline(never)]
    fn sample_alloc(&'static self, address: usize, size: u64, weight: u64, call: u64) {
        let Some(_in_flight) = self.enter(&STATE.memory) else {
            return;
        };
        let _busy = Busy::enter();
        crate::jvm::entry::panic_test::maybe_panic("nativemem");
        let Some(mut claim) = self.samples.try_claim() else {
            self.count(MEM_DROPPED);
            return;
        };
        let mut id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if !self.table.insert(address, id) {
            self.count(UNTRACKED);
            id = 0;
        }
        let depth = self.samples.depth();
        // SAFETY: the claimed slot has room for depth frames.
        let frames = unsafe { std::slice::from_raw_parts_mut(claim.frames_ptr(), depth) };
        let walked = self.walker.walk(frames);
        let n = self.counters[MEM_SAMPLES].fetch_add(1, Ordering::Relaxed);
        claim.publish(NativeSample {
            kind: ALLOC,
            num_frames: walked.frames as i32,
            vm_walk: walked.vm_walk,
            tid: walked.tid,
            env: walked.env,
            vthread: walked.vthread,
            ticks: crate::clock::monotonic_ns(),
            amount: size,
            weight,
            address: address as u64,
            call,
            id,
            request: crate::remote::requests().current(walked.tid),
        });
        self.wake_writer_now_and_then(n);
    }

    /// A sampled wait of `waited` ns from `start` for the lock at `address`.
    #[cold]
    #[inline(never)]
    fn sample_lock(&'static self, address: usize, start: u64, waited: u64, weight: u64, lock: u64) {
        let Some(_in_flight) = self.enter(&STATE.locks) else {
            return;
        };
        let _busy = Busy::enter();
        crate::jvm::entry::panic_test::maybe_panic("nativelock");
        let Some(mut claim) = self.samples.try_claim() else {
            self.count(LOCK_DROPPED);
            return;
        };
        let depth = self.samples.depth();
        // SAFETY: the claimed slot has room for depth frames.
        let frames = unsafe { std::slice::from_raw_parts_mut(claim.frames_ptr(), depth) };
        let walked = self.walker.walk(frames);
        claim.publish(NativeSample {
            kind: LOCK,
            num_frames: walked.frames as i32,
            vm_walk: walked.vm_walk,
            tid: walked.tid,
            env: walked.env,
            vthread: walked.vthread,
            ticks: start,
            amount: waited,
            weight,
            address: address as u64,
            call: lock,
            id: 0,
            request: crate::remote::requests().current(walked.tid),
        });
        self.wake_writer_now_and_then(self.counters[LOCK_SAMPLES].fetch_add(1, Ordering::Relaxed));
    }

    fn wake_writer_now_and_then(&self, n: u64) {
        if n.is_multiple_of(WAKE_EVERY_SAMPLES) {
            crate::thread_ring::wake_consumer();
        }
    }

    /// `free(address)` of a block the table may hold.
    #[cold]
    #[inline(never)]
    fn note_free(&'static self, address: usize) {
        let Some(_in_flight) = self.enter(&STATE.memory) else {
            return;
        };
        if let Some(id) = self.table.remove(address) {
            self.push_free(id, address);
        }
    }

    /// Takes block `address` out of the table for a realloc of it.
    #[cold]
    #[inline(never)]
    fn take_block(&'static self, address: usize) -> Option<HeldBlock> {
        let in_flight = self.enter(&STATE.memory)?;
        let id = self.table.remove(address)?;
        Some(HeldBlock {
            shared: self,
            address,
            id,
            _in_flight: in_flight,
        })
    }

    fn push_free(&self, id: u64, address: usize) {
        let Some(claim) = self.frees.try_claim() else {
            self.count(FREES_DROPPED);
            return;
        };
        claim.publish(FreeRecord {
            ticks: crate::clock::monotonic_ns(),
            id,
            address: address as u64,
            abandoned: false,
        });
        let n = self.counters[FREES].fetch_add(1, Ordering::Relaxed);
        if n.is_multiple_of(WAKE_EVERY_FREES) {
            crate::thread_ring::wake_consumer();
        }
    }
}

/// The slots diverted so far, and what was asked to be hooked.
struct Patcher {
    got: got::Got,
    imports: Vec<got::Import>,
    /// The loader's counts at the last round.
    seen: (u64, u64),
}

/// An address in the agent's own code.
fn own_code() -> usize {
    own_code as *const () as usize
}

impl Patcher {
    /// Diverts the slots of objects loaded since the last round.
    fn round(&mut self) {
        let seen = got::loader_generation();
        if seen == self.seen {
            return;
        }
        self.seen = seen;
        let stats = self.got.patch(&self.imports, own_code());
        STATE
            .patched_objects
            .fetch_add(stats.objects as u64, Ordering::Relaxed);
        STATE
            .patched_slots
            .fetch_add(stats.slots as u64, Ordering::Relaxed);
    }
}

/// An object was loaded (the dlopen hook): its slots are diverted now, and
/// its code is unwound from now on.
fn loaded_more() {
    if (memory().is_none() && locks().is_none()) || per_thread::busy() {
        return;
    }
    let _busy = Busy::enter();
    if let Some(p) = STATE
        .patcher
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
    {
        p.round();
    }
    crate::native::walk::refresh_code_ranges();
}

/// The child of a fork has no writer: its hooks pass through.
extern "C" fn forked_child() {
    STATE.memory.store(std::ptr::null_mut(), Ordering::SeqCst);
    STATE.locks.store(std::ptr::null_mut(), Ordering::SeqCst);
}

extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> libc::c_int;
}

/// The header's keys for the native hooks.
pub fn header_extra(options: &NativeOptions) -> Vec<(String, String)> {
    options.header_extra()
}

/// The native hooks as an engine.
pub(crate) struct InterposeEngine {
    options: NativeOptions,
    depth: usize,
    interleave: bool,
    /// `cstack` unwinds by DWARF rows (else frame pointers).
    dwarf: bool,
    /// The cpu engine runs with native frames: it builds the unwind tables
    /// and reads the symbol tables.
    cpu_mixed: bool,
    hotspot: Mutex<Option<std::sync::Arc<HotSpot>>>,
    shared: OnceLock<&'static Shared>,
    symbols: OnceLock<Arc<crate::native::names::Preload>>,
    drain: Mutex<NativeDrain>,
}

#[derive(Default)]
struct NativeDrain {
    names: GeneratedNames,
    generated: GeneratedCode,
    /// Samples taken out of the ring while the symbol tables are still being
    /// read, so that the ring keeps room for the hooks meanwhile.
    /// Frames as (lineno, value) pairs.
    waiting: Vec<(NativeSample, Vec<(i32, usize)>)>,
    /// The loader's counts when the writer last named frames.
    loader: (u64, u64),
}

/// Samples kept waiting for the symbol tables at most (the rest are dropped
/// and counted, as a full ring's would be).
const WAITING: usize = 1 << 16;

impl InterposeEngine {
    /// `native`: what to record; `depth`, `cstack`: how stacks are walked, as
    /// for cpu samples; `cpu`: whether cpu samples are taken too.
    pub fn new(
        native: NativeOptions,
        depth: u32,
        cstack: crate::native::CStack,
        cpu: bool,
        hotspot: Option<std::sync::Arc<HotSpot>>,
    ) -> InterposeEngine {
        InterposeEngine {
            options: native,
            depth: depth as usize,
            interleave: cstack.interleaved(),
            dwarf: cstack.dwarf(),
            cpu_mixed: cpu && cstack.mixed(),
            hotspot: Mutex::new(hotspot),
            shared: OnceLock::new(),
            symbols: OnceLock::new(),
            drain: Mutex::default(),
        }
    }

    fn imports(&self) -> Vec<got::Import> {
        let mut imports = vec![hooks::dlopen_import()];
        if self.options.mem.is_some() {
            imports.extend(hooks::memory_imports());
        }
        if self.options.lock.is_some() {
            imports.extend(hooks::lock_imports());
        }
        imports
    }

    fn on_sample(
        &self,
        d: &mut NativeDrain,
        sink: &mut Sink,
        h: &NativeSample,
        frames: &[CallFrame],
    ) {
        if h.num_frames == ABANDONED {
            return;
        }
        let Some(mut thread) = sink.event_thread(ThreadKey::new(h.tid, h.env, 0)) else {
            return;
        };
        if h.vthread != 0 {
            thread = sink.virtual_thread(h.vthread);
        }
        let stack = if frames.is_empty() {
            if let Some(s) = self.shared.get() {
                s.count(WALK_FAILED);
            }
            sink.unknown_stack("no_frames")
        } else if h.vm_walk {
            let hs = self.shared.get().and_then(|s| s.walker.hotspot.as_deref());
            let source = hs.map(|hs| (&d.generated, hs));
            let names = &mut d.names;
            sink.walked_stack(frames, &mut |lineno, value| {
                names.name(source, lineno, value)
            })
        } else {
            sink.mixed_stack(frames.iter().map(|f| (f.method as usize, f.lineno)))
        };
        let stack = StackId(stack);
        let kind = match h.kind {
            ALLOC => EventKind::NativeAlloc {
                size: h.amount,
                weight: h.weight,
                address: h.address,
                call: h.call,
                id: h.id,
                stack,
                request: RequestId(u64::from(h.request)),
            },
            _ => EventKind::NativeLock {
                duration_ns: h.amount,
                weight: h.weight,
                address: h.address,
                lock: h.call,
                stack,
                request: RequestId(u64::from(h.request)),
            },
        };
        sink.chunk
            .event(&JvmEvent::on(ThreadId(thread), h.ticks, kind));
    }
}

impl Engine for InterposeEngine {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        if !self.options.any() {
            return Ok(());
        }
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            return Err(StartError::Interpose(
                "native hooks need x86-64 Linux".into(),
            ));
        }
        if !self.cpu_mixed {
            crate::native::walk::use_dwarf(self.dwarf);
            // The hooks' stacks have no kernel frames: no kernel symbols.
            let preload = crate::native::names::Preload::start_with(
                ctx.table.clone(),
                false,
                Box::new(|_| {}),
            );
            if let Some(preload) = preload {
                let _ = self.symbols.set(preload);
            }
        }
        crate::native::walk::refresh_code_ranges();
        // SAFETY: registers a handler that only stores two pointers.
        STATE.at_fork.call_once(|| unsafe {
            pthread_atfork(None, None, Some(forked_child));
        });
        let shared = self.publish(ctx);
        let _ = self.shared.set(shared);
        STATE.patched_objects.store(0, Ordering::Relaxed);
        STATE.patched_slots.store(0, Ordering::Relaxed);
        let mut patcher = STATE.patcher.lock().unwrap_or_else(|e| e.into_inner());
        let p = patcher.insert(Patcher {
            got: got::Got::default(),
            imports: self.imports(),
            seen: (u64::MAX, u64::MAX),
        });
        p.round();
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        self.silence();
        let Some(shared) = self.shared.get() else {
            return;
        };
        let deadline = Instant::now() + STOP_WAIT;
        while shared.in_flight.load(Ordering::SeqCst) != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        if let Some(mut p) = STATE
            .patcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            p.got.restore();
        }
    }

    fn silence(&self) {
        if let Some(shared) = self.shared.get() {
            let me = *shared as *const Shared as *mut Shared;
            let _ = STATE.memory.compare_exchange(
                me,
                std::ptr::null_mut(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            let _ = STATE.locks.compare_exchange(
                me,
                std::ptr::null_mut(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
    }

    fn drain(&self, sink: &mut Sink) -> Drained {
        let Some(shared) = self.shared.get() else {
            return Drained::All;
        };
        if let Some(name) = take_panic() {
            eprintln!("jscope: internal error in the {name} hook; native memory and locks are no longer recorded");
        }
        let mut d = self.drain.lock().unwrap_or_else(|e| e.into_inner());
        if !sink.native_names_ready(self.symbols.get().map(|p| &**p)) {
            while d.waiting.len() < WAITING
                && shared
                    .samples
                    .pop(|h, frames| {
                        let frames = frames.iter().map(|f| (f.lineno, f.method as usize));
                        d.waiting.push((*h, frames.collect()));
                    })
                    .is_some()
            {}
            return Drained::All;
        }
        let loader = got::loader_generation();
        if std::mem::replace(&mut d.loader, loader) != loader {
            // Frames in a library loaded since the last drain get its name.
            sink.native_maps_changed();
        }
        for (h, frames) in std::mem::take(&mut d.waiting) {
            let frames: Vec<CallFrame> = frames
                .into_iter()
                .map(|(lineno, value)| CallFrame {
                    lineno,
                    method: value as *mut std::ffi::c_void,
                })
                .collect();
            self.on_sample(&mut d, sink, &h, &frames);
        }
        if !sink.last_drain {
            // Objects loaded without the dlopen hook (by the loader itself,
            // or from code that calls dlopen through another name).
            let _busy = Busy::enter();
            if let Some(p) = STATE
                .patcher
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
            {
                p.round();
            }
        }
        while shared
            .frees
            .pop(|h, _| {
                if !h.abandoned {
                    let kind = EventKind::NativeFree {
                        id: h.id,
                        address: h.address,
                    };
                    sink.chunk.event(&JvmEvent::global(h.ticks, kind));
                }
            })
            .is_some()
        {}
        while shared
            .samples
            .pop(|h, frames| self.on_sample(&mut d, sink, h, frames))
            .is_some()
        {
            if sink.chunk_full() {
                return Drained::More;
            }
        }
        Drained::All
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        let Some(shared) = self.shared.get() else {
            return;
        };
        for (i, name) in COUNTER_NAMES.iter().enumerate() {
            let keep = match name.split('.').next() {
                Some("nativemem") => self.options.mem.is_some(),
                Some("nativelock") => self.options.lock.is_some(),
                _ => true,
            };
            if keep {
                out.push((name, shared.counters[i].load(Ordering::Relaxed)));
            }
        }
        out.push((
            "interpose.objects",
            STATE.patched_objects.load(Ordering::Relaxed),
        ));
        out.push((
            "interpose.slots",
            STATE.patched_slots.load(Ordering::Relaxed),
        ));
    }
}

impl InterposeEngine {
    /// Builds the recording's state and publishes it to the hooks.
    fn publish(&self, ctx: &StartContext<'_>) -> &'static Shared {
        let depth = self.depth.max(1);
        let slot_bytes = depth * std::mem::size_of::<CallFrame>();
        let capacity = (RING_FRAME_BYTES / slot_bytes).clamp(256, 8192);
        let interval = self.options.mem.unwrap_or(0);
        let hotspot = self
            .hotspot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let shared = Shared {
            recording: STATE.recordings.fetch_add(1, Ordering::Relaxed) + 1,
            mem_interval: interval,
            lock_interval: self.options.lock.unwrap_or(0),
            table: BlockTable::new(table_entries(self.options.mem)),
            samples: SampleRing::new(capacity, depth),
            frees: SampleRing::new(FREE_RING, 1),
            next_id: AtomicU64::new(1),
            in_flight: AtomicUsize::new(0),
            walker: StackWalker {
                env: ctx.env,
                hotspot,
                asgct: crate::jvm::asgct::Asgct::find(),
                interleave: self.interleave,
                own: got::code_range_of(own_code()).unwrap_or((0, 0)),
            },
            counters: std::array::from_fn(|_| AtomicU64::new(0)),
        };
        let shared: &'static Shared = Box::leak(Box::new(shared));
        let ptr = shared as *const Shared as *mut Shared;
        if self.options.mem.is_some() {
            STATE.memory.store(ptr, Ordering::SeqCst);
        }
        if self.options.lock.is_some() {
            STATE.locks.store(ptr, Ordering::SeqCst);
        }
        shared
    }
}

/// Slots of the block table: room for the sampled blocks of about 8 GiB held
/// at once (16 Ki slots at the default 512 KiB), at most 1 Mi (16 MiB).
fn table_entries(interval: Option<u64>) -> usize {
    let interval = interval.unwrap_or(u64::MAX).max(1);
    ((8u64 << 30) / interval).clamp(16 << 10, 1 << 20) as usize
}
