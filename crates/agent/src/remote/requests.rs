//! Requests a thread serves: the server side of a remote call (HTTP, RMI) or a
//! span of `jscope.Span`. While one is open, the thread's slot in
//! [`Requests::current`] holds its id, which the signal handler copies into every
//! sample the thread takes (one atomic load, async-signal-safe) and the event
//! callbacks into their events. A request ends on the thread that opened it; its
//! slot then holds the request it was nested in, or nothing, so a pooled thread
//! never carries a finished request's id. A virtual thread's open requests are
//! kept by its Java id: its carrier's slot takes them at each mount and drops
//! them at the unmount.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use jscope_format::RequestKind;

use crate::java_threads::ThreadKey;
use crate::tid_slots::TidSlots;

/// Requests ended and not yet drained, at most; more are counted and dropped.
const MAX_ENDED: usize = 1 << 16;

/// One request as the writer takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRequest {
    pub id: u32,
    pub parent: u32,
    pub thread: ThreadKey,
    pub kind: RequestKind,
    pub name: String,
    pub tags: String,
    pub trace_id: [u8; 16],
    pub span_id: u64,
    pub parent_span_id: u64,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub failed: bool,
}

/// What opens a request.
pub struct Opening<'a> {
    pub kind: RequestKind,
    pub name: String,
    pub tags: String,
    /// The incoming W3C `traceparent`, if any: its trace id is kept.
    pub traceparent: Option<&'a str>,
}

/// The requests open and ended in this JVM.
pub struct Requests {
    /// Linux thread id -> the innermost request open on it (or on the virtual
    /// thread it runs), for the signal handler.
    current: TidSlots,
    next: AtomicU32,
    /// Open requests by the Java id of their thread, innermost last.
    open: Mutex<Option<HashMap<i64, Vec<RawRequest>>>>,
    ended: Mutex<Vec<RawRequest>>,
    dropped: AtomicU64,
}

impl Requests {
    pub const fn new() -> Requests {
        Requests {
            current: TidSlots::new(),
            next: AtomicU32::new(1),
            open: Mutex::new(None),
            ended: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        }
    }

    /// The request thread `tid` serves now, 0 for none. Async-signal-safe.
    #[inline]
    pub fn current(&self, tid: u32) -> u32 {
        self.current.get(tid)
    }

    /// Opens a request on `thread` (which runs on Linux thread `tid`) and makes
    /// it the thread's current one; returns its id.
    pub fn begin(&self, tid: u32, thread: ThreadKey, o: Opening<'_>) -> u32 {
        let mut id = self.next.fetch_add(1, Ordering::Relaxed);
        if id == 0 {
            id = self.next.fetch_add(1, Ordering::Relaxed);
        }
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let stack = open
            .get_or_insert_with(HashMap::new)
            .entry(thread.java_id)
            .or_default();
        let outer = stack.last();
        let incoming = o.traceparent.and_then(parse_traceparent);
        let (trace_id, parent_span_id) = match (incoming, outer) {
            (Some((t, p)), _) => (t, p),
            (None, Some(outer)) => (outer.trace_id, outer.span_id),
            (None, None) => (random_trace_id(), 0),
        };
        let r = RawRequest {
            id,
            parent: outer.map_or(0, |r| r.id),
            thread,
            kind: o.kind,
            name: o.name,
            tags: o.tags,
            trace_id,
            span_id: random_u64(),
            parent_span_id,
            start_ns: crate::clock::monotonic_ns(),
            duration_ns: 0,
            failed: false,
        };
        stack.push(r);
        drop(open);
        self.current.set(tid, id);
        id
    }

    /// Ends request `id` of `thread` (and any left open inside it); the thread's
    /// current request is then the one it was nested in, or none.
    pub fn end(&self, tid: u32, thread: ThreadKey, id: u32, failed: bool) {
        let now = crate::clock::monotonic_ns();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Some(map) = open.as_mut() else {
            return;
        };
        let Some(stack) = map.get_mut(&thread.java_id) else {
            return;
        };
        let Some(at) = stack.iter().rposition(|r| r.id == id) else {
            return;
        };
        match stack.get(at.wrapping_sub(1)).map_or(0, |r| r.id) {
            0 => self.current.clear(tid),
            outer => self.current.set(tid, outer),
        }
        // Innermost first; the lock order is always open, then ended.
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        for mut r in stack.drain(at..).rev() {
            r.duration_ns = now.saturating_sub(r.start_ns);
            r.failed |= failed && r.id == id;
            if ended.len() < MAX_ENDED {
                ended.push(r);
            } else {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(ended);
        if stack.is_empty() {
            map.remove(&thread.java_id);
        }
    }

    /// The innermost request open on `thread`: (id, trace id, span id).
    pub fn innermost(&self, thread: &ThreadKey) -> Option<(u32, [u8; 16], u64)> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let r = open.as_ref()?.get(&thread.java_id)?.last()?;
        Some((r.id, r.trace_id, r.span_id))
    }

    /// Carrier `tid` now runs virtual thread `java_id` (0: none): its slot
    /// takes that thread's innermost open request, or none.
    pub fn mounted(&self, tid: u32, java_id: i64) {
        let top = (java_id != 0)
            .then(|| {
                let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
                open.as_ref()?.get(&java_id)?.last().map(|r| r.id)
            })
            .flatten();
        match top {
            Some(id) => self.current.set(tid, id),
            None => self.current.clear(tid),
        }
    }

    /// The requests ended since the last call (for the writer).
    pub fn take(&self) -> Vec<RawRequest> {
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// `00-<32 hex trace id>-<16 hex parent id>-<flags>` -> (trace id, parent span).
pub fn parse_traceparent(text: &str) -> Option<([u8; 16], u64)> {
    let mut parts = text.trim().split('-');
    let (_, trace, parent) = (parts.next()?, parts.next()?, parts.next()?);
    let trace = jscope_format::Request::parse_trace_id(&trace.to_ascii_lowercase())?;
    let parent = u64::from_str_radix(parent, 16).ok()?;
    (trace != [0; 16]).then_some((trace, parent))
}

/// A version-00 sampled traceparent for a call made inside a request of this
/// trace, with span id `span`.
#[cfg(test)]
pub fn traceparent(trace_id: &[u8; 16], span: u64) -> String {
    let trace = jscope_format::Request::format_trace_id(trace_id);
    format!("00-{trace}-{span:016x}-01")
}

fn random_trace_id() -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&random_u64().to_be_bytes());
    out[8..].copy_from_slice(&random_u64().to_be_bytes());
    out
}

/// A non-zero random u64 (W3C forbids all-zero ids): SplitMix64 over a
/// process-wide counter seeded once from the kernel's random source, so that
/// each id costs no system call (a request and its calls take three or four).
/// Ids are unique within the process and unpredictable across processes.
pub fn random_u64() -> u64 {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
    static STATE: AtomicU64 = AtomicU64::new(0);
    if STATE.load(Ordering::Relaxed) == 0 {
        let mut v = 0u64;
        // SAFETY: writes at most 8 bytes into v.
        let n = unsafe { libc::getrandom((&mut v as *mut u64).cast(), 8, 0) };
        if n != 8 {
            v = crate::clock::monotonic_ns() ^ u64::from(std::process::id()).rotate_left(32);
        }
        // Another thread may have seeded it meanwhile: the first seed stays.
        let _ = STATE.compare_exchange(0, v | 1, Ordering::Relaxed, Ordering::Relaxed);
    }
    let mut z = STATE
        .fetch_add(GAMMA, Ordering::Relaxed)
        .wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    match z ^ (z >> 31) {
        0 => 1,
        v => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_distinct_and_never_zero() {
        let ids: std::collections::HashSet<u64> = (0..100_000).map(|_| random_u64()).collect();
        assert_eq!(ids.len(), 100_000);
        assert!(!ids.contains(&0));
        // Consecutive ids share no obvious structure: about half their bits differ.
        let (a, b) = (random_u64(), random_u64());
        assert!((8..=56).contains(&(a ^ b).count_ones()), "{a:x} {b:x}");
    }

    fn opening(name: &str, traceparent: Option<&'static str>) -> Opening<'static> {
        Opening {
            kind: RequestKind::Span,
            name: name.into(),
            tags: String::new(),
            traceparent,
        }
    }

    #[test]
    fn nested_requests_restore_the_outer_one_and_a_finished_one_leaves_nothing() {
        let r = Requests::new();
        let t = ThreadKey::new(77, 1, 5);
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let outer = r.begin(77, t, opening("outer", Some(tp)));
        assert_eq!(r.current(77), outer);
        let inner = r.begin(77, t, opening("inner", None));
        assert_eq!(r.current(77), inner);
        r.end(77, t, inner, false);
        assert_eq!(r.current(77), outer);
        r.end(77, t, outer, true);
        assert_eq!(r.current(77), 0);
        let ended = r.take();
        assert_eq!(ended.len(), 2);
        let (i, o) = (&ended[0], &ended[1]);
        assert_eq!((i.name.as_str(), i.parent), ("inner", outer));
        assert_eq!(i.trace_id, o.trace_id);
        assert_eq!(i.parent_span_id, o.span_id);
        assert_eq!(o.parent_span_id, 0x00f0_67aa_0ba9_02b7);
        assert_eq!(
            jscope_format::Request {
                trace_id: o.trace_id,
                ..Default::default()
            }
            .trace_id_hex(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(o.failed && !i.failed);
    }

    #[test]
    fn a_virtual_threads_request_follows_it_across_carriers() {
        let r = Requests::new();
        let v = ThreadKey::new(0, 0, 900);
        let id = r.begin(10, v, opening("v", None));
        r.mounted(10, 0); // unmounted from carrier 10
        assert_eq!(r.current(10), 0);
        r.mounted(11, 900); // continues on carrier 11
        assert_eq!(r.current(11), id);
        r.end(11, v, id, false);
        assert_eq!(r.current(11), 0);
        assert_eq!(parse_traceparent("garbage"), None);
        let tp = traceparent(&r.take()[0].trace_id, 5);
        assert!(parse_traceparent(&tp).is_some_and(|(_, p)| p == 5));
    }
}
