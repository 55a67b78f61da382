//! GC details (issue 16): JVMTI's GarbageCollectionStart/Finish give only the
//! pause. The cause, the collector's name, the kind of collection and the heap
//! before and after come from the JVM's own GC notifications
//! (`com.sun.management.GarbageCollectionNotificationInfo`), which every
//! GarbageCollectorMXBean sends to its NotificationListeners after each
//! collection, on a Java thread (the JVM's service or notification thread).
//!
//! The listener is a tiny bootstrap class, `jscope.GcListener implements
//! javax.management.NotificationListener`, synthesised here whose one method,
//! `handleNotification`, is native and bound to [`handle_notification`]; an
//! instance is made without a constructor (JNI AllocObject) and added to every
//! GarbageCollectorMXBean. The native reads the notification through JNI and
//! queues a [`GcNote`]; the writer matches each note to the JVMTI pause it
//! describes (see `drain`).

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use jscope_bytecode::class::{ACC_FINAL, ACC_NATIVE, ACC_PUBLIC, ACC_SUPER};
use jscope_bytecode::{ClassError, ClassFile, ConstantPool, Member};
use jscope_format::{GC_FULL, GC_OLD, GC_YOUNG};

use super::{on, Kinds};
use crate::clock;
use crate::jvm::entry::{guarded_in, EVENTS};
use crate::jvm::Jni;
use crate::sys;

pub const CLASS_NAME: &str = "jscope/GcListener";
const HANDLE: (&str, &str) = (
    "handleNotification",
    "(Ljavax/management/Notification;Ljava/lang/Object;)V",
);
const GC_NOTIFICATION: &str = "com.sun.management.gc.notification";
/// Notes waiting for the writer before new ones are dropped.
const MAX_NOTES: usize = 4096;

/// One GC notification, as read on the notifying thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcNote {
    /// CLOCK_MONOTONIC ns when the notification arrived (after the collection).
    pub arrival_ns: u64,
    /// GcInfo's start and end, ms since the JVM started.
    pub start_ms: u64,
    pub end_ms: u64,
    pub collector: String,
    pub cause: String,
    pub generation: u64,
    pub heap_before: u64,
    pub heap_after: u64,
    pub gc_id: u64,
    pub concurrent: bool,
}

impl GcNote {
    pub fn duration_ns(&self) -> u64 {
        self.end_ms.saturating_sub(self.start_ms) * 1_000_000
    }
}

pub(crate) struct GcState {
    /// The listener (a global reference), once per process.
    listener: OnceLock<usize>,
    /// Names of the heap's memory pools (the notification's maps hold every pool).
    heap_pools: Mutex<Vec<String>>,
    notes: Mutex<Vec<GcNote>>,
    dropped: AtomicU64,
}

impl GcState {
    pub(crate) const fn new() -> GcState {
        GcState {
            listener: OnceLock::new(),
            heap_pools: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        }
    }
}

/// The notes queued since the last call.
pub fn take_notes() -> Vec<GcNote> {
    std::mem::take(
        &mut *super::STATE
            .gc
            .notes
            .lock()
            .unwrap_or_else(|e| e.into_inner()),
    )
}

/// Notes dropped because the writer fell behind.
pub fn dropped() -> u64 {
    super::STATE.gc.dropped.load(Ordering::Relaxed)
}

/// Whether the listener is registered.
pub fn installed() -> bool {
    super::STATE.gc.listener.get().is_some()
}

/// The listener class: `public final class jscope.GcListener implements
/// NotificationListener` with one `public native` method and no constructor
/// (Java 8 format: natives need no stack maps).
pub fn class_bytes() -> Result<Vec<u8>, ClassError> {
    let mut pool = ConstantPool::new();
    let this_class = pool.add_class(CLASS_NAME)?;
    let super_class = pool.add_class("java/lang/Object")?;
    let listener = pool.add_class("javax/management/NotificationListener")?;
    let method = Member {
        access: ACC_PUBLIC | ACC_NATIVE,
        name_index: pool.add_utf8(HANDLE.0)?,
        descriptor_index: pool.add_utf8(HANDLE.1)?,
        attributes: Vec::new(),
    };
    ClassFile {
        minor: 0,
        major: 52,
        pool,
        access: ACC_PUBLIC | ACC_FINAL | ACC_SUPER,
        this_class,
        super_class,
        interfaces: vec![listener],
        fields: Vec::new(),
        methods: vec![method],
        attributes: Vec::new(),
    }
    .to_bytes()
}

/// Why the listener could not be registered (GC pauses are still recorded).
#[derive(Debug, thiserror::Error)]
pub enum GcListenerError {
    #[error("cannot build jscope.GcListener: {0}")]
    Build(#[from] ClassError),
    #[error("cannot define jscope.GcListener (no java.management module?)")]
    Define,
    #[error("cannot bind the native of jscope.GcListener")]
    Natives,
    #[error("no GarbageCollectorMXBean took the listener")]
    Register,
}

/// Defines the listener class, makes one listener and adds it to every
/// GarbageCollectorMXBean; once per process. Runs on a Java thread.
pub fn install(jni: Jni) -> Result<(), GcListenerError> {
    if installed() {
        return Ok(());
    }
    let bytes = class_bytes()?;
    jni.with_local_frame(64, || {
        let class = jni.define_boot_class(CLASS_NAME, &bytes);
        if class.is_null() {
            return Err(GcListenerError::Define);
        }
        let f = handle_notification as *mut c_void;
        if !jni.register_natives(class, &[(HANDLE.0, HANDLE.1, f)]) {
            return Err(GcListenerError::Natives);
        }
        let listener = jni.alloc_object(class);
        if listener.is_null() {
            return Err(GcListenerError::Define);
        }
        let factory = jni.find_class("java/lang/management/ManagementFactory");
        *super::STATE.gc.heap_pools.lock().unwrap_or_else(|e| e.into_inner()) = heap_pools(jni, factory);
        let beans = jni.call_static_object_with(
            factory,
            ("getGarbageCollectorMXBeans", "()Ljava/util/List;"),
            &[],
        );
        let mut added = 0;
        for bean in list_items(jni, beans) {
            let args = [
                sys::jvalue { l: listener },
                sys::jvalue { l: null_mut() },
                sys::jvalue { l: null_mut() },
            ];
            let sig = "(Ljavax/management/NotificationListener;Ljavax/management/NotificationFilter;Ljava/lang/Object;)V";
            if jni.call_void_with(bean, ("addNotificationListener", sig), &args) {
                added += 1;
            }
            jni.delete_local(bean);
        }
        if added == 0 {
            return Err(GcListenerError::Register);
        }
        let _ = super::STATE.gc.listener.set(jni.new_global(listener) as usize);
        Ok(())
    })
}

/// The elements of a java.util.List, as local references.
fn list_items(jni: Jni, list: sys::jobject) -> Vec<sys::jobject> {
    let n = jni.call_int(list, "size").unwrap_or(0).max(0);
    (0..n)
        .map(|i| jni.call_object_with(list, ("get", "(I)Ljava/lang/Object;"), &[sys::jvalue { i }]))
        .filter(|o| !o.is_null())
        .collect()
}

/// The names of the memory pools of type HEAP.
fn heap_pools(jni: Jni, factory: sys::jclass) -> Vec<String> {
    let pools =
        jni.call_static_object_with(factory, ("getMemoryPoolMXBeans", "()Ljava/util/List;"), &[]);
    let mut names = Vec::new();
    for pool in list_items(jni, pools) {
        let kind = jni.call_object(pool, "getType", "()Ljava/lang/management/MemoryType;");
        if jni.call_string(kind, "name").as_deref() == Some("HEAP") {
            names.extend(jni.call_string(pool, "getName"));
        }
        jni.delete_local(kind);
        jni.delete_local(pool);
    }
    jni.delete_local(pools);
    names
}

/// Used bytes summed over the heap pools of a `Map<String, MemoryUsage>`.
fn heap_used(jni: Jni, usage: sys::jobject, pools: &[String]) -> u64 {
    let mut used = 0u64;
    for name in pools {
        let key = jni.new_string(name);
        let u = jni.call_object_with(
            usage,
            ("get", "(Ljava/lang/Object;)Ljava/lang/Object;"),
            &[sys::jvalue { l: key }],
        );
        used += jni.call_long(u, "getUsed").unwrap_or(0).max(0) as u64;
        jni.delete_local(u);
        jni.delete_local(key);
    }
    used
}

/// Folds `next`, a later collection in the same pause, into `first`: the
/// collectors joined with ` + `, the heap before the first and after the last,
/// the larger generation (a full collection after a scavenge is full), the
/// last's cause and id.
pub fn join(first: &mut GcNote, mut next: GcNote) {
    // Notes may come in either order: the earlier collection leads (of two
    // starting in the same ms, the one that ended first; ids count per collector).
    if (next.start_ms, next.end_ms, next.generation)
        < (first.start_ms, first.end_ms, first.generation)
    {
        std::mem::swap(first, &mut next);
    }
    if first.collector != next.collector {
        first.collector = format!("{} + {}", first.collector, next.collector);
    }
    if first.cause != next.cause {
        first.cause = next.cause;
    }
    first.end_ms = first.end_ms.max(next.end_ms);
    first.generation = first.generation.max(next.generation);
    first.heap_after = next.heap_after;
    first.gc_id = next.gc_id;
}

/// Whether `note` (one collection, or several joined) accounts for a pause of
/// `duration_ns`, within GcInfo's ms resolution.
pub fn covers(note: &GcNote, duration_ns: u64) -> bool {
    // Both GcInfo times are truncated to ms: its duration is within 1 ms of
    // the pause's (a little more for the events' own skew).
    let note_ms = note.end_ms.saturating_sub(note.start_ms) as f64;
    (duration_ns as f64 / 1e6 - note_ms).abs() <= 1.5
}

/// The kind of collection a notification describes: (generation, concurrent).
pub fn classify(collector: &str, action: &str) -> (u64, bool) {
    let (c, a) = (collector.to_ascii_lowercase(), action.to_ascii_lowercase());
    let concurrent = c.contains("cycles") || c.contains("concurrent") || a.contains("cycle");
    let young = c.contains("young")
        || c.contains("minor")
        || c.contains("scavenge")
        || c == "copy"
        || c.contains("parnew");
    let generation = if a.contains("minor") || young {
        GC_YOUNG
    } else if a.contains("major") && !concurrent {
        GC_FULL
    } else if concurrent || c.contains("old") || c.contains("major") {
        GC_OLD
    } else {
        0
    };
    (generation, concurrent)
}

/// `jscope.GcListener.handleNotification`, on the JVM's notifying thread.
unsafe extern "C" fn handle_notification(
    env: *mut sys::JNIEnv,
    _this: sys::jobject,
    notification: sys::jobject,
    _handback: sys::jobject,
) {
    guarded_in(&EVENTS, "gc_notification", (), || {
        if !on(Kinds::GC) || notification.is_null() {
            return;
        }
        let arrival_ns = clock::monotonic_ns();
        let jni = Jni(env);
        let note = jni.with_local_frame(32, || read_note(jni, notification, arrival_ns));
        if let Some(note) = note {
            let mut notes = super::STATE
                .gc
                .notes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if notes.len() < MAX_NOTES {
                notes.push(note);
            } else {
                super::STATE.gc.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
}

fn read_note(jni: Jni, n: sys::jobject, arrival_ns: u64) -> Option<GcNote> {
    if jni.call_string(n, "getType")? != GC_NOTIFICATION {
        return None;
    }
    let data = jni.call_object(n, "getUserData", "()Ljava/lang/Object;");
    let class = jni.find_class("com/sun/management/GarbageCollectionNotificationInfo");
    let info = jni.call_static_object_with(
        class,
        (
            "from",
            "(Ljavax/management/openmbean/CompositeData;)Lcom/sun/management/GarbageCollectionNotificationInfo;",
        ),
        &[sys::jvalue { l: data }],
    );
    let collector = jni.call_string(info, "getGcName")?;
    let action = jni.call_string(info, "getGcAction").unwrap_or_default();
    let cause = jni.call_string(info, "getGcCause").unwrap_or_default();
    let gc = jni.call_object(info, "getGcInfo", "()Lcom/sun/management/GcInfo;");
    let pools = super::STATE
        .gc
        .heap_pools
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let before = jni.call_object(gc, "getMemoryUsageBeforeGc", "()Ljava/util/Map;");
    let after = jni.call_object(gc, "getMemoryUsageAfterGc", "()Ljava/util/Map;");
    let (generation, concurrent) = classify(&collector, &action);
    Some(GcNote {
        arrival_ns,
        start_ms: jni.call_long(gc, "getStartTime").unwrap_or(0).max(0) as u64,
        end_ms: jni.call_long(gc, "getEndTime").unwrap_or(0).max(0) as u64,
        collector,
        cause,
        generation,
        heap_before: heap_used(jni, before, &pools),
        heap_after: heap_used(jni, after, &pools),
        gc_id: jni.call_long(gc, "getId").unwrap_or(0).max(0) as u64,
        concurrent,
    })
}

/// Matches GC notes to JVMTI pauses. A note's GcInfo times count ms from a
/// JVM-internal origin (not quite the JVM's start: no clock the agent can read
/// shares it exactly), and notes come late, sometimes in bursts, so the origin
/// on the monotonic clock is learned from the data: each pause that ended
/// before a note arrived and lasted about as long votes for the offset
/// `pause start - note start`; true pairs all vote for the same offset (within
/// a ms, GcInfo's resolution), wrong pairs scatter. The best-voted offset
/// wins, and each note takes the pause nearest its start at that offset.
#[derive(Debug, Default)]
pub struct Matcher {
    /// Votes for each offset, over every batch so far (the offset settles as
    /// collections accumulate).
    votes: std::collections::HashMap<i64, u32>,
}

/// How far a pause may be from a note's start at the offset (ms) and match.
const MATCH_SLACK_MS: i64 = 3;

/// Whether a pause could be the one `n` describes: it ended before the note
/// arrived and lasted as long within GcInfo's ms resolution.
fn fits(n: &GcNote, &(s, d): &(u64, u64)) -> bool {
    s + d <= n.arrival_ns && covers(n, d)
}

impl Matcher {
    /// Counts the votes of newly arrived notes against the pauses still unpaired.
    pub fn vote(&mut self, notes: &[GcNote], pauses: &[(u64, u64)]) {
        for n in notes.iter().filter(|n| !n.concurrent) {
            for p in pauses.iter().filter(|p| fits(n, p)) {
                let d = (p.0 / 1_000_000) as i64 - n.start_ms as i64;
                *self.votes.entry(d).or_default() += 1;
            }
        }
    }

    fn score(&self, d: i64) -> u32 {
        (d - 1..=d + 1)
            .map(|k| self.votes.get(&k).copied().unwrap_or(0))
            .sum()
    }

    /// The best-voted offset and its score (ties: the smaller offset).
    fn best(&self) -> Option<(u32, i64)> {
        self.votes
            .keys()
            .map(|&d| (self.score(d), -d))
            .max()
            .map(|(score, d)| (score, -d))
    }

    /// Whether the offset is settled: at least two votes, and more than any
    /// offset away from it has.
    pub fn confident(&self) -> bool {
        let Some((score, d)) = self.best() else {
            return false;
        };
        let rival = self
            .votes
            .keys()
            .filter(|&&k| (k - d).abs() > 2)
            .map(|&k| self.score(k))
            .max()
            .unwrap_or(0);
        score >= 2 && score > rival
    }

    /// For each note, the index in `pauses` ((start, duration) in ns) of the
    /// pause it describes at the learned offset ([`Matcher::vote`] first); None
    /// for concurrent cycles and when none fits. A pause is given to one note,
    /// or to several that lie wholly inside it (below).
    pub fn match_all(&self, notes: &[GcNote], pauses: &[(u64, u64)]) -> Vec<Option<usize>> {
        // Periodic collections make the votes a lattice (a note also fits the
        // pause one period earlier), so of the best-voted offsets the one that
        // pairs the most notes of this batch wins (ties: more votes).
        let mut candidates: Vec<(u32, i64)> =
            self.votes.keys().map(|&d| (self.score(d), d)).collect();
        candidates.sort_by(|a, b| b.cmp(a));
        candidates.truncate(8);
        let best = candidates
            .iter()
            .map(|&(votes, d)| {
                let m = assign(d, notes, pauses);
                (m.iter().filter(|x| x.is_some()).count(), votes, -d, m)
            })
            .max_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        match best {
            Some((.., m)) => m,
            None => vec![None; notes.len()],
        }
    }
}

/// Pairs notes with pauses at `offset` ms: each note takes the free pause that
/// fits nearest its start; then a note whose whole span lies in a pause (free
/// or just taken) joins it (Parallel's System.gc(): a scavenge, then a full
/// collection, between one GarbageCollectionStart and Finish; the full one fits
/// the pause's length within GcInfo's ms, and the scavenge, which did not, must
/// join it rather than be written as a collection of its own).
fn assign(offset: i64, notes: &[GcNote], pauses: &[(u64, u64)]) -> Vec<Option<usize>> {
    let mut taken = vec![false; pauses.len()];
    let mut matched: Vec<Option<usize>> = notes
        .iter()
        .map(|n| {
            if n.concurrent {
                return None;
            }
            let expected = n.start_ms as i64 + offset;
            let (off, i) = pauses
                .iter()
                .enumerate()
                .filter(|&(i, p)| !taken[i] && fits(n, p))
                .map(|(i, p)| (((p.0 / 1_000_000) as i64 - expected).abs(), i))
                .min()?;
            if off > MATCH_SLACK_MS {
                return None;
            }
            taken[i] = true;
            Some(i)
        })
        .collect();
    for (n, m) in notes.iter().zip(matched.iter_mut()) {
        if m.is_some() || n.concurrent {
            continue;
        }
        let (start, end) = (n.start_ms as i64 + offset, n.end_ms as i64 + offset);
        // Of the pauses that hold it (within the slack), the one needing the
        // least slack: the next collection's scavenge may start within the
        // slack of the previous pause's end.
        *m = pauses
            .iter()
            .enumerate()
            .filter(|&(_, &(s, d))| s + d <= n.arrival_ns)
            .filter_map(|(i, &(s, d))| {
                let (ps, pe) = ((s / 1_000_000) as i64, ((s + d) / 1_000_000) as i64);
                let slack = (ps - start).max(end - pe).max(0);
                (slack <= MATCH_SLACK_MS).then_some((slack, i))
            })
            .min()
            .map(|(_, i)| i);
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_class_parses() {
        let bytes = class_bytes().unwrap();
        let c = ClassFile::parse(&bytes).unwrap();
        assert_eq!(c.name().unwrap(), CLASS_NAME);
        assert_eq!(c.interfaces.len(), 1);
        assert_eq!(c.methods.len(), 1);
    }

    #[test]
    fn collections_are_classified_by_collector_and_action() {
        assert_eq!(
            classify("G1 Young Generation", "end of minor GC"),
            (GC_YOUNG, false)
        );
        assert_eq!(
            classify("G1 Old Generation", "end of major GC"),
            (GC_FULL, false)
        );
        assert_eq!(
            classify("MarkSweepCompact", "end of major GC"),
            (GC_FULL, false)
        );
        assert_eq!(classify("Copy", "end of minor GC"), (GC_YOUNG, false));
        assert!(classify("G1 Concurrent GC", "end of concurrent GC pause").1);
        assert_eq!(classify("ZGC Cycles", "end of GC cycle"), (GC_OLD, true));
        assert_eq!(
            classify("ZGC Minor Cycles", "end of GC cycle"),
            (GC_YOUNG, true)
        );
    }

    fn note(arrival_ns: u64, start_ms: u64, end_ms: u64) -> GcNote {
        GcNote {
            arrival_ns,
            start_ms,
            end_ms,
            collector: "G1 Young Generation".into(),
            cause: "G1 Evacuation Pause".into(),
            generation: GC_YOUNG,
            heap_before: 0,
            heap_after: 0,
            gc_id: 1,
            concurrent: false,
        }
    }

    #[test]
    fn parallels_system_gc_is_one_pause_whichever_note_fits_it() {
        const MS: u64 = 1_000_000;
        let mut m = Matcher::default();
        // Offset 1000 ms. Pause 1: a 64 ms scavenge then a 7 ms full collection
        // (neither note fits 71 ms); pause 2: a 1 ms scavenge then a 15 ms full
        // one, which fits the 16.4 ms pause by itself.
        let pauses = [
            (1100 * MS, 71 * MS + 400_000),
            (1300 * MS, 16 * MS + 400_000),
        ];
        let young = |arrival, start, end| GcNote {
            collector: "PS Scavenge".into(),
            cause: "System.gc()".into(),
            heap_before: 30,
            heap_after: 20,
            gc_id: 1,
            ..note(arrival, start, end)
        };
        let full = |arrival, start, end| GcNote {
            collector: "PS MarkSweep".into(),
            cause: "System.gc()".into(),
            generation: GC_FULL,
            heap_before: 20,
            heap_after: 5,
            gc_id: 2,
            ..note(arrival, start, end)
        };
        let notes = [
            young(1400 * MS, 100, 164),
            full(1400 * MS, 164, 171),
            full(1401 * MS, 301, 316),
            young(1401 * MS, 300, 301),
        ];
        m.vote(&notes, &pauses);
        assert_eq!(
            m.match_all(&notes, &pauses),
            [Some(0), Some(0), Some(1), Some(1)]
        );
        // Joined in either order, the earlier collection leads.
        let mut first = notes[2].clone();
        join(&mut first, notes[3].clone());
        assert_eq!(first.collector, "PS Scavenge + PS MarkSweep");
        assert_eq!((first.heap_before, first.heap_after), (30, 5));
        assert_eq!(
            (first.generation, first.start_ms, first.end_ms),
            (GC_FULL, 300, 316)
        );
    }

    #[test]
    fn notes_match_the_pause_they_describe() {
        const MS: u64 = 1_000_000;
        let mut m = Matcher::default();
        // GcInfo's origin is at 1000 ms; pauses at 1100 (3 ms), 1105 (2 ms, a
        // pause without a notification), 1120 (12 ms), 1300 (5 ms); the notes
        // come late, in one burst.
        let pauses = [
            (1100 * MS, 3 * MS + 300_000),
            (1105 * MS, 2 * MS),
            (1120 * MS + 500_000, 12 * MS),
            (1300 * MS, 5 * MS),
        ];
        let notes = [
            note(1390 * MS, 100, 103),
            note(1391 * MS, 120, 132),
            note(1392 * MS, 300, 305),
        ];
        m.vote(&notes[..1], &pauses);
        assert!(!m.confident(), "one note is no evidence");
        m.vote(&notes[1..], &pauses);
        assert!(m.confident());
        assert_eq!(m.match_all(&notes, &pauses), [Some(0), Some(2), Some(3)]);
        // Later batches keep the offset; a note that arrived before the pause
        // ended does not take it.
        let later = [(2000 * MS, 4 * MS)];
        m.vote(&[note(2010 * MS, 1000, 1004)], &later);
        assert_eq!(m.match_all(&[note(2003 * MS, 1000, 1004)], &later), [None]);
        assert_eq!(
            m.match_all(&[note(2010 * MS, 1000, 1004)], &later),
            [Some(0)]
        );
    }
}
