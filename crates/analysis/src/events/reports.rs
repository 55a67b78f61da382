//! Reports over the selected events: contended monitors, waits and parks; GC pauses;
//! allocation by site, stack or class; object ages by class; user events and the
//! intervals between them.

use std::collections::{HashMap, HashSet};

use jscope_format::{
    alloc_sample_weight, ClassId, EventKind, JvmEvent, Recording, StackId, UserEventKind,
};
use serde::Serialize;

use super::rows::{user_event_name, Ages};
use super::{class_name, frames_of, site_of, EventFilter, EventType};
use crate::stats::{mean, percent, quantile};

/// Where a blocking event happened: one distinct stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteRow {
    /// Top frame, `pkg.Class.method:line`.
    pub site: String,
    /// Frames top first.
    pub stack: Vec<String>,
    pub count: u64,
    pub total_ns: u64,
}

/// Contended `synchronized` entries on monitors of one class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonitorRow {
    pub class: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    /// Distinct monitor objects (0 when the agent did not identify them).
    pub objects: u64,
    /// Largest total first.
    pub sites: Vec<SiteRow>,
}

/// `Object.wait` calls on monitors of one class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitRow {
    pub class: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    /// Waits that were given a timeout, and those that ended by it.
    pub with_timeout: u64,
    pub timed_out: u64,
    pub sites: Vec<SiteRow>,
}

/// `LockSupport.park` calls by blocker class (empty: no blocker).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParkRow {
    pub blocker: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub sites: Vec<SiteRow>,
}

/// The most contended monitors, waits and parks, and the native (pthread)
/// locks waited for, each sorted by total time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockReport {
    pub monitors: Vec<MonitorRow>,
    pub waits: Vec<WaitRow>,
    pub parks: Vec<ParkRow>,
    /// Sampled waits for native locks (the agent's `nativelock`), by lock;
    /// times are the samples' estimates.
    pub native: Vec<super::NativeLockRow>,
}

/// Counts and times of one group of blocking events, with their sites.
#[derive(Default)]
struct Blocking {
    count: u64,
    total_ns: u64,
    max_ns: u64,
    sites: HashMap<StackId, (u64, u64)>,
    objects: std::collections::HashSet<u64>,
    with_timeout: u64,
    timed_out: u64,
}

impl Blocking {
    fn add(&mut self, duration_ns: u64, stack: StackId) {
        self.count += 1;
        self.total_ns += duration_ns;
        self.max_ns = self.max_ns.max(duration_ns);
        let s = self.sites.entry(stack).or_default();
        s.0 += 1;
        s.1 += duration_ns;
    }

    fn sites(&self, rec: &Recording) -> Vec<SiteRow> {
        let mut out: Vec<SiteRow> = self
            .sites
            .iter()
            .map(|(&stack, &(count, total_ns))| SiteRow {
                site: site_of(rec, stack),
                stack: frames_of(rec, stack),
                count,
                total_ns,
            })
            .collect();
        out.sort_by(|a, b| (b.total_ns, b.count, &a.site).cmp(&(a.total_ns, a.count, &b.site)));
        out
    }
}

fn by_total<K: Ord + Clone>(map: HashMap<K, Blocking>) -> Vec<(K, Blocking)> {
    let mut v: Vec<(K, Blocking)> = map.into_iter().collect();
    v.sort_by(|a, b| (b.1.total_ns, b.1.count, &a.0).cmp(&(a.1.total_ns, a.1.count, &b.0)));
    v
}

/// Contended monitors (count, total and max blocked time, sites), waits (count,
/// total, timeouts), parks and native lock waits of the selected events.
pub fn lock_report(rec: &Recording, filter: &EventFilter) -> LockReport {
    let (mut monitors, mut waits, mut parks) = (HashMap::new(), HashMap::new(), HashMap::new());
    for e in filter.select(rec) {
        match e.kind {
            EventKind::MonitorBlocked {
                duration_ns,
                class,
                object,
                stack,
                ..
            } => {
                let b: &mut Blocking = monitors.entry(class_name(rec, class)).or_default();
                b.add(duration_ns, stack);
                if object != 0 {
                    b.objects.insert(object);
                }
            }
            EventKind::MonitorWait {
                duration_ns,
                class,
                timeout_ms,
                timed_out,
                stack,
                ..
            } => {
                let b: &mut Blocking = waits.entry(class_name(rec, class)).or_default();
                b.add(duration_ns, stack);
                b.with_timeout += u64::from(timeout_ms > 0);
                b.timed_out += u64::from(timed_out);
            }
            EventKind::Park {
                duration_ns,
                blocker_class,
                stack,
                ..
            } => {
                let name = if blocker_class.is_none() {
                    String::new()
                } else {
                    class_name(rec, blocker_class)
                };
                let b: &mut Blocking = parks.entry(name).or_default();
                b.add(duration_ns, stack);
            }
            _ => {}
        }
    }
    LockReport {
        monitors: by_total(monitors)
            .into_iter()
            .map(|(class, b)| MonitorRow {
                sites: b.sites(rec),
                class,
                count: b.count,
                total_ns: b.total_ns,
                max_ns: b.max_ns,
                mean_ns: b.total_ns / b.count.max(1),
                objects: b.objects.len() as u64,
            })
            .collect(),
        waits: by_total(waits)
            .into_iter()
            .map(|(class, b)| WaitRow {
                sites: b.sites(rec),
                class,
                count: b.count,
                total_ns: b.total_ns,
                max_ns: b.max_ns,
                with_timeout: b.with_timeout,
                timed_out: b.timed_out,
            })
            .collect(),
        parks: by_total(parks)
            .into_iter()
            .map(|(blocker, b)| ParkRow {
                sites: b.sites(rec),
                blocker,
                count: b.count,
                total_ns: b.total_ns,
                max_ns: b.max_ns,
            })
            .collect(),
        native: super::native_lock_rows(rec, filter),
    }
}

/// One garbage collection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcPause {
    pub time_s: f64,
    pub duration_ns: u64,
    #[serde(flatten)]
    pub detail: GcDetail,
}

/// What the JVM's GC notification said about a collection; all empty/0 when the
/// recording has only the JVMTI pause.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcDetail {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub collector: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cause: String,
    /// `young`, `old` (mixed or concurrent), `full`; empty when unknown.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub generation: String,
    /// Heap used before and after, bytes (all heap pools); 0 unknown.
    #[serde(skip_serializing_if = "is_zero")]
    pub heap_before: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub heap_after: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub gc_id: u64,
    /// A concurrent cycle (not a pause): its length is `duration_ns`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub concurrent: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The generation's name (`young`, `old`, `full`), empty for 0 or unknown.
pub fn generation_name(g: u64) -> &'static str {
    match g {
        jscope_format::GC_YOUNG => "young",
        jscope_format::GC_OLD => "old",
        jscope_format::GC_FULL => "full",
        _ => "",
    }
}

/// The duration and details of a GC event; `None` for other events.
pub fn gc_of(rec: &Recording, e: &JvmEvent) -> Option<(u64, GcDetail)> {
    let EventKind::Gc {
        duration_ns,
        collector,
        cause,
        generation,
        heap_before,
        heap_after,
        gc_id,
        concurrent,
    } = e.kind
    else {
        return None;
    };
    let name = |id: jscope_format::StringId| {
        if id.0 == 0 {
            String::new()
        } else {
            rec.string(id).to_string()
        }
    };
    Some((
        duration_ns,
        GcDetail {
            collector: name(collector),
            cause: name(cause),
            generation: generation_name(generation).to_string(),
            heap_before,
            heap_after,
            gc_id,
            concurrent,
        },
    ))
}

/// GC pauses: count, total, max and their share of the wall time (concurrent
/// cycles are listed but not counted as pauses).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcReport {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    /// The wall time the share is of: the window, or the whole recording.
    pub wall_ns: u64,
    pub wall_percent: f64,
    pub pauses: Vec<GcPause>,
}

/// The selected GC events (thread and method filters do not apply: GC has neither).
pub fn gc_report(rec: &Recording, filter: &EventFilter) -> GcReport {
    let f = EventFilter {
        types: vec![EventType::Gc],
        thread: None,
        method: None,
        ..filter.clone()
    };
    let pauses: Vec<GcPause> = f
        .select(rec)
        .into_iter()
        .filter_map(|e| {
            gc_of(rec, e).map(|(duration_ns, detail)| GcPause {
                time_s: rec.ticks_to_ns(e.ticks) as f64 / 1e9,
                duration_ns,
                detail,
            })
        })
        .collect();
    let paused = || pauses.iter().filter(|p| !p.detail.concurrent);
    let total_ns: u64 = paused().map(|p| p.duration_ns).sum();
    let count = paused().count() as u64;
    let wall_ns = window_ns(rec, filter);
    GcReport {
        count,
        total_ns,
        max_ns: paused().map(|p| p.duration_ns).max().unwrap_or(0),
        mean_ns: total_ns / count.max(1),
        wall_ns,
        wall_percent: percent(total_ns, wall_ns),
        pauses,
    }
}

fn window_ns(rec: &Recording, filter: &EventFilter) -> u64 {
    let end = rec.duration_ns() as f64 / 1e9;
    let to = filter.to_s.map_or(end, |t| t.min(end));
    let from = filter.from_s.unwrap_or(0.0).max(0.0);
    ((to - from).max(0.0) * 1e9) as u64
}

/// What allocations are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocBy {
    /// The top frame (`pkg.Class.method:line`).
    #[default]
    Site,
    /// The whole stack.
    Stack,
    Class,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocRow {
    /// The site, the top frame of the stack, or the class.
    pub key: String,
    /// By stack: its frames, top first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// The class allocated most (in bytes) at this site or stack.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub top_class: String,
    /// The sampled objects' own bytes and their number.
    pub bytes: u64,
    pub count: u64,
    /// Estimated bytes and objects allocated: the samples' weights, and the
    /// objects they stand for (weight / size each).
    pub est_bytes: u64,
    pub est_objects: u64,
    /// Samples whose object size the source did not record (JFR's
    /// `jdk.ObjectAllocationSample`): in `est_bytes`, not in `bytes` or `est_objects`.
    #[serde(skip_serializing_if = "is_zero")]
    pub sizeless: u64,
    /// Share of the estimated bytes.
    pub percent: f64,
}

/// Allocations grouped by site, stack or class, most estimated bytes first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocReport {
    pub by: AllocBy,
    pub bytes: u64,
    pub count: u64,
    pub est_bytes: u64,
    pub est_objects: u64,
    /// Samples without an object size (see [`AllocRow::sizeless`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub sizeless: u64,
    /// Whether the weights were recorded (else estimated from `events.allocrate`).
    pub weights_recorded: bool,
    pub rows: Vec<AllocRow>,
}

#[derive(Default)]
struct AllocSum {
    bytes: u64,
    count: u64,
    est_bytes: u64,
    est_objects: f64,
    sizeless: u64,
    stack: StackId,
    classes: HashMap<ClassId, u64>,
}

impl AllocSum {
    fn add(&mut self, class: ClassId, size: u64, weight: u64, stack: StackId) {
        self.bytes += size;
        self.count += 1;
        self.est_bytes += weight;
        // A sample without its object's size stands for bytes, not a number of
        // objects: counting it as weight/1 or as one object would both be wrong.
        if size == 0 {
            self.sizeless += 1;
        } else {
            self.est_objects += weight as f64 / size as f64;
        }
        self.stack = stack;
        *self.classes.entry(class).or_default() += weight;
    }
}

/// The bytes each allocation sample stands for: its recorded weight, or for
/// recordings from before weights, the estimate from its size and the header's
/// sampling interval (`events.allocrate`; the sizes themselves without one).
#[derive(Debug, Clone, Copy)]
pub struct AllocWeights {
    interval: Option<u64>,
}

impl AllocWeights {
    pub fn of(rec: &Recording) -> AllocWeights {
        AllocWeights {
            interval: rec
                .header
                .extra("events.allocrate")
                .and_then(|v| v.parse().ok()),
        }
    }

    /// The weight of an event; `None` when it is no allocation sample.
    pub fn weight(&self, e: &JvmEvent) -> Option<u64> {
        match e.kind {
            EventKind::Alloc { weight, .. } if weight != 0 => Some(weight),
            EventKind::Alloc { size, .. } => Some(match self.interval {
                Some(i) => alloc_sample_weight(size, i),
                None => size,
            }),
            _ => None,
        }
    }
}

pub fn alloc_report(rec: &Recording, filter: &EventFilter, by: AllocBy) -> AllocReport {
    let f = EventFilter {
        types: vec![EventType::Alloc],
        ..filter.clone()
    };
    let events = f.select(rec);
    alloc_report_of(rec, &events, by)
}

/// [`alloc_report`] over chosen allocation events (the live ones for `--live`).
fn alloc_report_of(rec: &Recording, events: &[&JvmEvent], by: AllocBy) -> AllocReport {
    let weights = AllocWeights::of(rec);
    let mut groups: HashMap<String, AllocSum> = HashMap::new();
    let mut all = AllocSum::default();
    let mut recorded = true;
    for e in events {
        let EventKind::Alloc {
            class,
            size,
            stack,
            weight: w,
            ..
        } = e.kind
        else {
            continue;
        };
        recorded &= w != 0;
        let weight = weights.weight(e).unwrap_or(size);
        let key = match by {
            AllocBy::Site => site_of(rec, stack),
            AllocBy::Stack => frames_of(rec, stack).join(";"),
            AllocBy::Class => class_name(rec, class),
        };
        groups
            .entry(key)
            .or_default()
            .add(class, size, weight, stack);
        all.add(class, size, weight, stack);
    }
    let mut rows: Vec<AllocRow> = groups
        .into_iter()
        .map(|(key, g)| alloc_row(rec, by, key, g, all.est_bytes))
        .collect();
    rows.sort_by(|a, b| (b.est_bytes, b.count, &a.key).cmp(&(a.est_bytes, a.count, &b.key)));
    AllocReport {
        by,
        bytes: all.bytes,
        count: all.count,
        est_bytes: all.est_bytes,
        est_objects: all.est_objects.round() as u64,
        sizeless: all.sizeless,
        weights_recorded: recorded && all.count > 0,
        rows,
    }
}

/// What was still alive at the end (async-profiler's `--live`): the tracked
/// sampled objects (`objectages`) the filter selects that no free event
/// reported, grouped as [`alloc_report`]. Objects that were garbage but not yet
/// collected when the recording ended count as live.
pub fn live_report(rec: &Recording, filter: &EventFilter, by: AllocBy) -> AllocReport {
    let freed: HashSet<u64> = rec
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::ObjectFree { object, .. } => Some(object),
            _ => None,
        })
        .collect();
    let f = EventFilter {
        types: vec![EventType::Alloc],
        ..filter.clone()
    };
    let live: Vec<&JvmEvent> = f
        .select(rec)
        .into_iter()
        .filter(|e| {
            matches!(e.kind, EventKind::Alloc { object, .. } if object != 0 && !freed.contains(&object))
        })
        .collect();
    alloc_report_of(rec, &live, by)
}

fn alloc_row(rec: &Recording, by: AllocBy, key: String, g: AllocSum, total: u64) -> AllocRow {
    let top = g
        .classes
        .iter()
        .max_by_key(|(&c, &b)| (b, std::cmp::Reverse(c)));
    let (key, stack, top_class) = match by {
        AllocBy::Class => (key, vec![], String::new()),
        AllocBy::Site => (
            key,
            vec![],
            top.map(|(&c, _)| class_name(rec, c)).unwrap_or_default(),
        ),
        AllocBy::Stack => (
            site_of(rec, g.stack),
            frames_of(rec, g.stack),
            top.map(|(&c, _)| class_name(rec, c)).unwrap_or_default(),
        ),
    };
    AllocRow {
        key,
        stack,
        top_class,
        bytes: g.bytes,
        count: g.count,
        est_bytes: g.est_bytes,
        est_objects: g.est_objects.round() as u64,
        sizeless: g.sizeless,
        percent: percent(g.est_bytes, total),
    }
}

/// A histogram bucket: ages below `upper` (and at or above the previous bucket's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgeBucket {
    pub label: &'static str,
    /// `None` for the last, open bucket.
    pub upper: Option<u64>,
}

const NS_BUCKETS: [(&str, Option<u64>); 9] = [
    ("<1us", Some(1_000)),
    ("<10us", Some(10_000)),
    ("<100us", Some(100_000)),
    ("<1ms", Some(1_000_000)),
    ("<10ms", Some(10_000_000)),
    ("<100ms", Some(100_000_000)),
    ("<1s", Some(1_000_000_000)),
    ("<10s", Some(10_000_000_000)),
    (">=10s", None),
];

const BYTE_BUCKETS: [(&str, Option<u64>); 8] = [
    ("<1KB", Some(1 << 10)),
    ("<10KB", Some(10 << 10)),
    ("<100KB", Some(100 << 10)),
    ("<1MB", Some(1 << 20)),
    ("<10MB", Some(10 << 20)),
    ("<100MB", Some(100 << 20)),
    ("<1GB", Some(1 << 30)),
    (">=1GB", None),
];

fn bucket(bounds: &[(&str, Option<u64>)], v: u64) -> usize {
    bounds
        .iter()
        .position(|(_, upper)| upper.is_none_or(|u| v < u))
        .unwrap_or(bounds.len() - 1)
}

fn buckets(bounds: &[(&'static str, Option<u64>)]) -> Vec<AgeBucket> {
    bounds
        .iter()
        .map(|&(label, upper)| AgeBucket { label, upper })
        .collect()
}

/// Ages of the freed sampled objects of one class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgeRow {
    pub class: String,
    /// Tracked objects of the class that were freed, and not (yet) freed.
    pub freed: u64,
    pub live: u64,
    /// Freed objects per [`AgeReport::ns_buckets`] bucket.
    pub by_ns: Vec<u64>,
    /// Freed objects per [`AgeReport::byte_buckets`] bucket.
    pub by_bytes: Vec<u64>,
    pub p50_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub p50_bytes: Option<u64>,
    pub max_bytes: Option<u64>,
}

/// Object ages (JX): in ns and in bytes allocated between birth and death, by class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgeReport {
    pub ns_buckets: Vec<AgeBucket>,
    pub byte_buckets: Vec<AgeBucket>,
    pub freed: u64,
    pub live: u64,
    /// Most tracked objects first.
    pub rows: Vec<AgeRow>,
}

#[derive(Default)]
struct ClassAges {
    ns: Vec<u64>,
    bytes: Vec<u64>,
    live: u64,
}

/// Ages of the tracked objects whose allocation the filter selects.
pub fn age_report(rec: &Recording, filter: &EventFilter) -> AgeReport {
    let ages = Ages::of(rec);
    let frees: HashMap<u64, (u64, u64)> = rec
        .events
        .iter()
        .filter_map(|e| match *e {
            JvmEvent {
                ticks,
                kind:
                    EventKind::ObjectFree {
                        object,
                        allocated_total,
                    },
                ..
            } => Some((object, (ticks, allocated_total))),
            _ => None,
        })
        .collect();
    let f = EventFilter {
        types: vec![EventType::Alloc],
        ..filter.clone()
    };
    let mut classes: HashMap<ClassId, ClassAges> = HashMap::new();
    for e in f.select(rec) {
        let EventKind::Alloc { object, class, .. } = e.kind else {
            continue;
        };
        let (Some(born), true) = (ages.0.get(&object), object != 0) else {
            continue;
        };
        let c = classes.entry(class).or_default();
        match frees.get(&object) {
            Some(&(ticks, total)) => {
                c.ns.push(
                    rec.ticks_to_ns(ticks)
                        .saturating_sub(rec.ticks_to_ns(born.ticks)),
                );
                c.bytes.push(total.saturating_sub(born.allocated_total));
            }
            None => c.live += 1,
        }
    }
    let mut rows: Vec<AgeRow> = classes
        .into_iter()
        .map(|(class, c)| age_row(rec, class, c))
        .collect();
    rows.sort_by(|a, b| (b.freed + b.live, &a.class).cmp(&(a.freed + a.live, &b.class)));
    AgeReport {
        ns_buckets: buckets(&NS_BUCKETS),
        byte_buckets: buckets(&BYTE_BUCKETS),
        freed: rows.iter().map(|r| r.freed).sum(),
        live: rows.iter().map(|r| r.live).sum(),
        rows,
    }
}

fn age_row(rec: &Recording, class: ClassId, mut c: ClassAges) -> AgeRow {
    c.ns.sort_unstable();
    c.bytes.sort_unstable();
    let mut by_ns = vec![0; NS_BUCKETS.len()];
    c.ns.iter()
        .for_each(|&v| by_ns[bucket(&NS_BUCKETS, v)] += 1);
    let mut by_bytes = vec![0; BYTE_BUCKETS.len()];
    c.bytes
        .iter()
        .for_each(|&v| by_bytes[bucket(&BYTE_BUCKETS, v)] += 1);
    AgeRow {
        class: class_name(rec, class),
        freed: c.ns.len() as u64,
        live: c.live,
        by_ns,
        by_bytes,
        p50_ns: quantile(&c.ns, 0.5),
        max_ns: c.ns.last().copied(),
        p50_bytes: quantile(&c.bytes, 0.5),
        max_bytes: c.bytes.last().copied(),
    }
}

/// One user event name: how often it was logged and the intervals between
/// successive occurrences (JX's figure 7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserRow {
    pub name: String,
    /// Instants plus begins: each logged occurrence once.
    pub count: u64,
    pub instants: u64,
    pub begins: u64,
    pub ends: u64,
    pub value_sum: i64,
    /// Between successive occurrences (instants and begins, all threads, time order).
    pub interval_min_ns: Option<u64>,
    pub interval_mean_ns: Option<f64>,
    pub interval_max_ns: Option<u64>,
    pub interval_p50_ns: Option<u64>,
    pub interval_p99_ns: Option<u64>,
    /// Begin to end on the same thread.
    pub scoped_mean_ns: Option<f64>,
    pub scoped_max_ns: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserReport {
    /// By name.
    pub rows: Vec<UserRow>,
}

#[derive(Default)]
struct UserSum {
    times: Vec<u64>,
    instants: u64,
    begins: u64,
    ends: u64,
    value_sum: i64,
    scoped: Vec<u64>,
}

pub fn user_report(rec: &Recording, filter: &EventFilter) -> UserReport {
    let f = EventFilter {
        types: vec![EventType::User],
        ..filter.clone()
    };
    let mut sums: HashMap<String, UserSum> = HashMap::new();
    let mut pairs = super::rows::UserPairs::default();
    for e in f.select(rec) {
        let JvmEvent {
            thread,
            ticks,
            kind: EventKind::User { event, kind, value },
        } = *e
        else {
            continue;
        };
        let s = sums.entry(user_event_name(rec, event)).or_default();
        s.value_sum = s.value_sum.wrapping_add(value);
        let ns = rec.ticks_to_ns(ticks);
        match kind {
            UserEventKind::Instant => s.instants += 1,
            UserEventKind::Begin => s.begins += 1,
            UserEventKind::End => s.ends += 1,
        }
        if kind != UserEventKind::End {
            s.times.push(ns);
        }
        if let Some(b) = pairs.step(thread, event, kind, ticks) {
            s.scoped.push(ns.saturating_sub(rec.ticks_to_ns(b)));
        }
    }
    let mut rows: Vec<UserRow> = sums
        .into_iter()
        .map(|(name, s)| user_row(name, s))
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    UserReport { rows }
}

fn user_row(name: String, mut s: UserSum) -> UserRow {
    s.times.sort_unstable();
    let mut gaps: Vec<u64> = s.times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    UserRow {
        name,
        count: s.instants + s.begins,
        instants: s.instants,
        begins: s.begins,
        ends: s.ends,
        value_sum: s.value_sum,
        interval_min_ns: gaps.first().copied(),
        interval_mean_ns: mean(&gaps),
        interval_max_ns: gaps.last().copied(),
        interval_p50_ns: quantile(&gaps, 0.5),
        interval_p99_ns: quantile(&gaps, 0.99),
        scoped_mean_ns: mean(&s.scoped),
        scoped_max_ns: s.scoped.iter().max().copied(),
    }
}
