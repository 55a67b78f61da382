//! A Java thread's events on their way to the writer (trace probes, user events):
//! a single-producer single-consumer ring. The thread writes slots and then
//! publishes `head`; the writer reads up to `head` and then publishes `tail`. On a
//! full ring [`ThreadRing::push`] drops the event and counts it, so a producer
//! never waits; trace probes push through a [`Producer`] handle and may instead
//! wait for room with [`Producer::refresh_room`] (see `trace::probe`). A ring
//! crossing half full wakes its consumer early through the wake hook, which
//! whoever owns the consumer sets ([`set_wake_hook`]); this module knows nothing
//! of the writer.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::java_threads::ThreadKey;

/// Wakes a parked consumer thread, at most once until the consumer rearms it.
/// Lives as long as the process (see [`set_wake_hook`]).
pub(crate) struct Wake {
    thread: std::thread::Thread,
    woken: AtomicBool,
}

impl Wake {
    /// A hook that wakes the calling thread.
    pub(crate) fn for_current_thread() -> Wake {
        Wake {
            thread: std::thread::current(),
            woken: AtomicBool::new(false),
        }
    }

    /// Unparks the consumer unless that was done since it last rearmed
    /// (lock-free; at most one wake-up per poll).
    pub(crate) fn wake(&self) {
        // A plain load first: producers with full rings call this on every event,
        // and a locked swap each time would cost them more than the event itself.
        if self.woken.load(Ordering::Relaxed) || self.woken.swap(true, Ordering::Relaxed) {
            return;
        }
        self.thread.unpark();
    }

    /// Called by the consumer each time it wakes, so the next wake-up unparks it.
    pub(crate) fn rearm(&self) {
        self.woken.store(false, Ordering::Relaxed);
    }
}

/// The consumer's wake hook; null while none is set.
static WAKE: AtomicPtr<Wake> = AtomicPtr::new(std::ptr::null_mut());

/// Sets the hook the rings call when they fill: the owner of the consumer (the
/// writer, as it starts) leaks one per start (a few bytes per recording), so a
/// producer never reads a freed one.
pub(crate) fn set_wake_hook(hook: &'static Wake) {
    WAKE.store(hook as *const Wake as *mut Wake, Ordering::Release);
}

/// Wakes the consumer, if a hook is set.
pub(crate) fn wake_consumer() {
    let hook = WAKE.load(Ordering::Acquire);
    // SAFETY: only leaked (never freed) hooks are stored in WAKE.
    if let Some(hook) = unsafe { hook.as_ref() } {
        hook.wake();
    }
}

/// Types whose all-zero bytes are a valid value, so a ring's slots can be fresh
/// zero pages (see [`Slots`]): pages are committed only once a thread writes that
/// far, and an idle thread's ring costs almost nothing.
///
/// # Safety
/// Implement only for types of plain integers (no references, no niches).
pub unsafe trait ZeroValid: Copy {}

pub struct ThreadRing<T> {
    slots: Slots<T>,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// The producing thread.
    pub thread: ThreadKey,
    /// Set when the thread is gone: once drained the ring is forgotten.
    pub ended: AtomicBool,
    /// Events dropped because the ring was full (written by the producer only).
    pub dropped: AtomicU64,
}

// SAFETY: a slot is written only by the owning thread before `head` is released
// past it, and read only by the writer after acquiring that `head`; the writer
// releases `tail` only after it has read the slots, so the two never overlap.
unsafe impl<T: Send> Sync for ThreadRing<T> {}

impl<T: ZeroValid> ThreadRing<T> {
    /// A ring of `capacity` events (rounded up to a power of two).
    pub fn new(capacity: usize, thread: ThreadKey) -> ThreadRing<T> {
        let capacity = capacity.max(1).next_power_of_two();
        ThreadRing {
            slots: Slots::zeroed(capacity),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            thread,
            ended: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        }
    }

    /// Producer side; false (and counted) when the writer has fallen behind.
    /// `room` is the producer's own cache of the index it may fill up to (the
    /// consumer's tail plus the capacity when last read; start it at 0), so the
    /// hot path reads the consumer's cache line only when that room runs out.
    #[inline(always)]
    pub fn push(&self, e: T, room: &mut usize) -> bool {
        if self.try_push(e, room) {
            return true;
        }
        self.count_drop();
        false
    }

    /// Producer side: like [`ThreadRing::push`] but a full ring only wakes the
    /// consumer; the caller decides whether to wait ([`ThreadRing::refresh_room`])
    /// or to drop ([`ThreadRing::count_drop`]).
    #[inline(always)]
    pub fn try_push(&self, e: T, room: &mut usize) -> bool {
        let len = self.slots.len();
        let head = self.head.load(Ordering::Relaxed);
        if head >= *room {
            let tail = self.tail.load(Ordering::Acquire);
            *room = tail + len;
            if head >= *room {
                wake_consumer();
                return false;
            }
            if head - tail >= len / 2 {
                wake_consumer(); // still over half full
            }
        }
        // SAFETY: see the Sync impl; this slot is not readable by the writer yet.
        unsafe { *self.slots[head & (len - 1)].get() = e };
        self.head.store(head + 1, Ordering::Release);
        if head + 1 == *room - len / 2 {
            wake_consumer(); // crossing half full: wake the writer early
        }
        true
    }

    /// Producer side: counts an event that did not fit.
    #[inline]
    pub fn count_drop(&self) {
        // Only this thread writes the count: no locked instruction.
        let n = self.dropped.load(Ordering::Relaxed);
        self.dropped.store(n + 1, Ordering::Relaxed);
        wake_consumer();
    }
}

/// The producing thread's own handle on its ring, for the hottest producers (the
/// trace probes): it keeps the head index, the room left and the index at which
/// the consumer is woken early (half full) in the producer's memory, so a push
/// reads nothing the consumer writes until its room runs out and touches the
/// shared ring only to publish `head`. At most one `Producer` per ring, and no
/// [`ThreadRing::push`] beside it.
pub struct Producer<T> {
    ring: Arc<ThreadRing<T>>,
    /// The ring's slots (owned by `ring`, which this handle keeps alive).
    slots: *mut UnsafeCell<T>,
    mask: usize,
    /// The next index to fill; `ring.head` is published from it.
    head: usize,
    /// The index this producer may fill up to (the consumer's tail plus the
    /// capacity when last read).
    room: usize,
    /// Reaching this index wakes the consumer early: the ring is half full.
    wake_at: usize,
}

// SAFETY: the slots pointer belongs to the Arc'd ring held beside it; the handle
// moves between threads (a virtual thread's events go through whichever carrier
// runs it) but is used by one at a time (`&mut self`).
unsafe impl<T: Send> Send for Producer<T> {}

impl<T: ZeroValid> Producer<T> {
    /// The only producer of `ring` from now on.
    pub fn new(ring: Arc<ThreadRing<T>>) -> Producer<T> {
        let slots = ring.slots.as_ptr().cast_mut();
        let mask = ring.slots.len() - 1;
        let head = ring.head.load(Ordering::Relaxed);
        Producer {
            ring,
            slots,
            mask,
            head,
            room: 0,
            wake_at: usize::MAX,
        }
    }

    pub fn ring(&self) -> &Arc<ThreadRing<T>> {
        &self.ring
    }

    /// Like [`ThreadRing::try_push`]: false when the ring is full (the consumer
    /// is woken; the caller waits with [`Producer::refresh_room`] or counts a drop
    /// with [`ThreadRing::count_drop`]).
    #[inline(always)]
    pub fn try_push(&mut self, e: T) -> bool {
        if !self.reserve() {
            return false;
        }
        self.push_reserved(e);
        true
    }

    /// True when the ring has room for one more event (see [`Producer::try_push`]).
    /// Hot callers check this before they build the event, so that nothing
    /// between building it and storing it makes the compiler keep it on the
    /// stack: storing a struct that was just spilled to the stack reloads it with
    /// wider loads than its stores, which the CPU cannot forward (a stall of
    /// about 15 cycles, paid twice per traced call).
    #[inline(always)]
    pub fn reserve(&mut self) -> bool {
        self.head < self.room || self.reread_tail()
    }

    /// Stores `e` after a [`Producer::reserve`] that returned true.
    #[inline(always)]
    pub fn push_reserved(&mut self, e: T) {
        let head = self.head;
        debug_assert!(head < self.room);
        // SAFETY: `head < room` (reserved): the consumer has freed this slot and
        // reads it only after `head` is published past it below (see
        // ThreadRing's Sync impl).
        unsafe { UnsafeCell::raw_get(self.slots.add(head & self.mask)).write(e) };
        self.head = head + 1;
        self.ring.head.store(head + 1, Ordering::Release);
        if head + 1 == self.wake_at {
            wake_consumer_cold(); // crossing half full: wake the writer early
        }
    }

    /// The room ran out: rereads the consumer's tail; false (the consumer woken)
    /// when the ring is still full.
    #[cold]
    #[inline(never)]
    fn reread_tail(&mut self) -> bool {
        let len = self.mask + 1;
        let tail = self.ring.tail.load(Ordering::Acquire);
        self.set_room(tail);
        if self.head >= self.room {
            wake_consumer();
            return false;
        }
        if self.head - tail >= len / 2 {
            wake_consumer(); // still over half full
        }
        true
    }

    fn set_room(&mut self, tail: usize) {
        let len = self.mask + 1;
        self.room = tail + len;
        self.wake_at = tail + len / 2;
    }

    /// Rereads the consumer's tail; true when the ring has room for an event.
    #[inline]
    pub fn refresh_room(&mut self) -> bool {
        let tail = self.ring.tail.load(Ordering::Acquire);
        self.set_room(tail);
        self.head < self.room
    }
}

#[cold]
#[inline(never)]
fn wake_consumer_cold() {
    wake_consumer();
}

impl<T> ThreadRing<T> {
    /// Consumer side: hands every published event to `f`, oldest first.
    pub fn drain(&self, f: impl FnMut(&T)) -> usize {
        self.drain_max(usize::MAX, f)
    }

    /// Consumer side: hands at most `max` published events to `f`, oldest first.
    pub fn drain_max(&self, max: usize, mut f: impl FnMut(&T)) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self
            .head
            .load(Ordering::Acquire)
            .min(tail.saturating_add(max));
        for i in tail..head {
            // SAFETY: see the Sync impl; slots below `head` are published.
            f(unsafe { &*self.slots[i & (self.slots.len() - 1)].get() });
        }
        self.tail.store(head, Ordering::Release);
        head - tail
    }

    /// Consumer side: hands `f` at most `max` of the oldest published events as
    /// one slice, read in place (up to the end of the slots, where the ring
    /// wraps), then frees them for the producer; returns how many.
    pub fn drain_slice(&self, max: usize, f: impl FnOnce(&[T])) -> usize {
        let len = self.slots.len();
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        let start = tail & (len - 1);
        let n = (head - tail).min(max).min(len - start);
        let slots = &self.slots[start..start + n];
        // SAFETY: UnsafeCell<T> has T's layout; slots between `tail` and `head`
        // are published and the producer writes none of them before `tail` moves
        // past it (see the Sync impl), which happens below, after `f`.
        f(unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<T>(), n) });
        self.tail.store(tail + n, Ordering::Release);
        n
    }

    /// Published events not drained yet.
    pub fn pending(&self) -> u64 {
        let head = self.head.load(Ordering::Acquire);
        head.saturating_sub(self.tail.load(Ordering::Relaxed)) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Acquire) == self.tail.load(Ordering::Relaxed)
    }
}

/// Forgets the rings of ended threads that hold nothing more, adding their drop
/// counts to `dropped_ended` and handing each to `forgotten`.
pub fn forget_ended<T>(
    rings: &mut Vec<Arc<ThreadRing<T>>>,
    dropped_ended: &AtomicU64,
    mut forgotten: impl FnMut(&Arc<ThreadRing<T>>),
) {
    rings.retain(|r| {
        let gone = r.ended.load(Ordering::Acquire) && r.is_empty();
        if gone {
            dropped_ended.fetch_add(r.dropped.load(Ordering::Relaxed), Ordering::Relaxed);
            forgotten(r);
        }
        !gone
    });
}

/// Rings at least this big get pages of their own.
const MAPPED_BYTES: usize = 256 << 10;

/// A ring's zeroed slots. A big ring (a trace ring is 12 MiB by default) is an
/// anonymous mapping of its own, committed only as the thread writes into it.
/// calloc gives that only while glibc serves the size by mmap: once a freed block
/// has raised its mmap threshold (to as much as 32 MiB), the next ring comes from
/// a heap and is zeroed whole, so every traced thread cost its full 12 MiB of RSS
/// (200 threads alive: 2 GB); a user-event ring (384 KiB) alike. Small rings (a
/// virtual thread's 96 KiB trace ring) stay on
/// the heap: one mapping each could run into the kernel's map count.
struct Slots<T> {
    ptr: std::ptr::NonNull<UnsafeCell<T>>,
    len: usize,
    /// Mapped (munmap on drop) or from the global allocator.
    mapped: bool,
}

// SAFETY: Slots owns its memory as a Box<[UnsafeCell<T>]> would.
unsafe impl<T: Send> Send for Slots<T> {}

impl<T: ZeroValid> Slots<T> {
    fn zeroed(len: usize) -> Slots<T> {
        let layout = Self::layout(len);
        assert!(layout.size() > 0, "ring events have a size");
        if layout.size() >= MAPPED_BYTES {
            if let Some(ptr) = map_zeroed(layout.size()) {
                return Slots {
                    ptr: ptr.cast(),
                    len,
                    mapped: true,
                };
            }
        }
        // SAFETY: the layout is non-empty (checked); all-zero bytes are a valid T
        // (ZeroValid); Drop frees exactly this allocation with this layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = std::ptr::NonNull::new(ptr) else {
            std::alloc::handle_alloc_error(layout);
        };
        Slots {
            ptr: ptr.cast(),
            len,
            mapped: false,
        }
    }
}

impl<T> Slots<T> {
    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::array::<UnsafeCell<T>>(len).expect("ring size")
    }
}

/// Fresh zero pages (page-aligned, so aligned for any slot), or None.
fn map_zeroed(bytes: usize) -> Option<std::ptr::NonNull<u8>> {
    // SAFETY: a new private anonymous mapping at an address the kernel picks;
    // nothing else refers to it.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return None;
    }
    std::ptr::NonNull::new(ptr.cast())
}

impl<T> std::ops::Deref for Slots<T> {
    type Target = [UnsafeCell<T>];

    fn deref(&self) -> &[UnsafeCell<T>] {
        // SAFETY: `ptr` holds `len` zero-initialised slots (ZeroValid) that live
        // as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.len);
        if self.mapped {
            // SAFETY: the mapping made in `zeroed`, of this size, unmapped once.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), layout.size()) };
        } else {
            // SAFETY: allocated in `zeroed` with this layout, freed once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Ev(u64);
    // SAFETY: a plain integer.
    unsafe impl ZeroValid for Ev {}

    /// A trace event's size.
    #[derive(Clone, Copy)]
    struct Ev24([u64; 3]);
    // SAFETY: plain integers.
    unsafe impl ZeroValid for Ev24 {}

    fn rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn big_rings_commit_only_what_is_written_even_after_one_was_freed() {
        const EVENTS: usize = 1 << 19; // a trace ring's default: 12 MiB
        let key = ThreadKey::new(1, 2, 3);
        // Freeing one raises glibc's mmap threshold; calloc then served the
        // next rings from a heap and zeroed all their pages.
        drop(ThreadRing::<Ev24>::new(EVENTS, key));
        let before = rss_kib();
        let rings: Vec<_> = (0..16)
            .map(|_| ThreadRing::<Ev24>::new(EVENTS, key))
            .collect();
        let mut room = 0;
        assert!(rings[0].push(Ev24([1, 2, 3]), &mut room));
        let grown = rss_kib().saturating_sub(before);
        assert!(grown < 16 << 10, "16 rings of 12 MiB took {grown} KiB");
        let mut seen = vec![];
        rings[0].drain(|e| seen.push(e.0));
        assert_eq!(seen, [[1, 2, 3]]);
    }

    #[test]
    fn slices_end_where_the_ring_wraps_and_free_their_slots() {
        let ring = ThreadRing::<Ev>::new(4, ThreadKey::new(1, 2, 3));
        let mut room = 0;
        for i in 0..3 {
            assert!(ring.push(Ev(i), &mut room));
        }
        let mut seen = vec![];
        assert_eq!(
            ring.drain_slice(2, |s| seen.extend(s.iter().map(|e| e.0))),
            2
        );
        for i in 3..6 {
            assert!(ring.push(Ev(i), &mut room), "room freed by the slice");
        }
        assert!(!ring.push(Ev(6), &mut room), "full");
        // Slots 2 and 3, then (wrapped) 0 and 1.
        assert_eq!(
            ring.drain_slice(8, |s| seen.extend(s.iter().map(|e| e.0))),
            2
        );
        assert_eq!(
            ring.drain_slice(8, |s| seen.extend(s.iter().map(|e| e.0))),
            2
        );
        assert_eq!(ring.drain_slice(8, |s| assert!(s.is_empty())), 0);
        assert_eq!(seen, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_full_ring_drops_and_counts_and_takes_again_once_drained() {
        let ring = ThreadRing::<Ev>::new(3, ThreadKey::new(1, 2, 3));
        let mut room = 0;
        let pushed: Vec<bool> = (0..6).map(|i| ring.push(Ev(i), &mut room)).collect();
        assert_eq!(pushed, [true, true, true, true, false, false]);
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 2);
        let mut seen = vec![];
        assert_eq!(ring.drain_max(3, |e| seen.push(e.0)), 3);
        assert_eq!(ring.pending(), 1);
        assert!(ring.push(Ev(9), &mut room));
        ring.drain(|e| seen.push(e.0));
        assert_eq!(seen, [0, 1, 2, 3, 9]);
        assert!(ring.is_empty());
    }

    #[test]
    fn ended_rings_are_forgotten_once_empty_keeping_their_drops() {
        let total = AtomicU64::new(0);
        let (a, b) = (
            Arc::new(ThreadRing::<Ev>::new(1, ThreadKey::new(1, 0, 0))),
            Arc::new(ThreadRing::<Ev>::new(1, ThreadKey::new(2, 0, 0))),
        );
        let mut room = 0;
        a.push(Ev(1), &mut room);
        a.push(Ev(2), &mut room); // dropped
        a.ended.store(true, Ordering::Release);
        b.ended.store(true, Ordering::Release);
        let mut rings = vec![a.clone(), b];
        forget_ended(&mut rings, &total, |_| ());
        assert_eq!(rings.len(), 1, "a still holds an event");
        a.drain(|_| {});
        forget_ended(&mut rings, &total, |_| ());
        assert!(rings.is_empty());
        assert_eq!(total.load(Ordering::Relaxed), 1);
    }
}
