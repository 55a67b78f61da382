//! Native memory and native locks (the agent's `nativemem` and `nativelock`):
//! allocated bytes and calls by stack, library, Java caller or C function;
//! the sampled blocks not freed by the end of the recording or of a window
//! (leaks); and native lock waits beside Java's monitors and parks.
//!
//! An allocation sample stands for `weight` bytes (the sampling's unbiased
//! estimate) and so for `weight / size` calls of its size; a block freed is
//! matched to its sample by the id the agent gave both.

use std::collections::HashMap;
use std::fmt;

use jscope_format::{native_call_name, EventKind, JvmEvent, Recording, StackId};
use serde::Serialize;

use super::render::bytes_text;
use super::{frames_of, EventFilter, EventType};
use crate::labels::method_label;

/// One native allocation sample, with the moment its block was freed.
#[derive(Debug, Clone, Copy)]
pub struct NativeAllocation<'r> {
    pub event: &'r JvmEvent,
    pub size: u64,
    pub weight: u64,
    pub address: u64,
    pub call: u64,
    pub id: u64,
    pub stack: StackId,
    /// When its block was freed, if that happened in the recording (and, with
    /// a window, before its end).
    pub freed_ticks: Option<u64>,
}

impl NativeAllocation<'_> {
    /// Whether the block was still held at the end (of the window): a sample
    /// whose free the agent did not follow (id 0) is never said to be.
    pub fn leaked(&self) -> bool {
        self.id != 0 && self.freed_ticks.is_none()
    }

    /// The calls this sample stands for (`weight / size`; one for `size` 0).
    pub fn calls(&self) -> f64 {
        match self.size {
            0 => 1.0,
            size => self.weight as f64 / size as f64,
        }
    }
}

/// The native allocation samples `filter` selects (thread, window, method),
/// in time order, each with the time its block was freed: frees anywhere in
/// the recording before the end of the window count. A free is its
/// allocation's when both its id and its address are the allocation's: ids
/// number one JVM's samples, so JVMs merged into one recording repeat them.
pub fn native_allocations<'r>(
    rec: &'r Recording,
    filter: &EventFilter,
) -> Vec<NativeAllocation<'r>> {
    let in_window = |ticks: u64| {
        let s = rec.ticks_to_ns(ticks) as f64 / 1e9;
        filter.to_s.is_none_or(|to| s < to)
    };
    let freed: HashMap<(u64, u64), u64> = rec
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::NativeFree { id, address } if id != 0 && in_window(e.ticks) => {
                Some(((id, address), e.ticks))
            }
            _ => None,
        })
        .collect();
    let f = EventFilter {
        types: vec![EventType::NativeAlloc],
        ..filter.clone()
    };
    f.select(rec)
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::NativeAlloc {
                size,
                weight,
                address,
                call,
                id,
                stack,
                ..
            } => Some(NativeAllocation {
                event: e,
                size,
                weight,
                address,
                call,
                id,
                stack,
                freed_ticks: freed.get(&(id, address)).copied().filter(|&t| t >= e.ticks),
            }),
            _ => None,
        })
        .collect()
}

/// What a native memory report groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NativeBy {
    /// Each distinct stack.
    #[default]
    Stack,
    /// The library of the code that called the allocator.
    Library,
    /// The nearest Java method (a `native` method, or the Java code that
    /// called into the JVM); `[no Java frame]` on threads without one.
    Caller,
    /// The C function that called the allocator.
    Function,
}

impl NativeBy {
    pub fn parse(s: &str) -> Option<NativeBy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "stack" | "stacks" => Some(NativeBy::Stack),
            "library" | "lib" => Some(NativeBy::Library),
            "caller" | "java" => Some(NativeBy::Caller),
            "function" | "site" => Some(NativeBy::Function),
            _ => None,
        }
    }
}

/// Where a stack allocated: the C function calling the allocator, its
/// library, and the nearest Java method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NativeSite {
    pub function: String,
    pub library: String,
    pub caller: String,
}

impl NativeSite {
    /// The site of stack `stack`.
    pub fn of(rec: &Recording, stack: StackId) -> NativeSite {
        let frames = rec.stack(stack);
        let (function, library) = match frames.first() {
            Some(f) => (
                method_label(rec, f.method),
                rec.native_library(f.method)
                    .map_or("[java]".to_string(), |l| match l {
                        "" => "[unknown]".to_string(),
                        l => l.to_string(),
                    }),
            ),
            None => ("[no stack]".to_string(), "[unknown]".to_string()),
        };
        let caller = frames
            .iter()
            .find(|f| {
                rec.native_library(f.method).is_none()
                    && (f.kind.is_java() || f.kind == jscope_format::FrameKind::Native)
            })
            .map_or("[no Java frame]".to_string(), |f| {
                method_label(rec, f.method)
            });
        NativeSite {
            function,
            library,
            caller,
        }
    }
}

/// One group of a native memory report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NativeMemRow {
    /// The group: a stack's top frame, a library, a Java method or a C function.
    pub key: String,
    /// Estimated bytes.
    pub bytes: u64,
    /// Estimated calls (allocations, or blocks held).
    pub calls: u64,
    pub samples: u64,
    /// Share of the report's bytes, in percent.
    pub percent: f64,
    /// The site of the group's heaviest stack.
    pub site: NativeSite,
    /// The group's heaviest stack, top first.
    pub stack: Vec<String>,
}

/// Native allocations (or the blocks not freed) grouped, heaviest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NativeMemReport {
    pub by: NativeBy,
    /// Blocks not freed by the end of the recording or window, rather than
    /// every allocation.
    pub leaks: bool,
    /// The agent's mean bytes between samples (`nativemem.interval`).
    pub interval: Option<u64>,
    /// Estimated bytes of what is reported.
    pub bytes: u64,
    /// Estimated calls (blocks).
    pub calls: u64,
    pub samples: u64,
    /// Estimated bytes of the selected allocations that were freed.
    pub freed_bytes: u64,
    /// Samples whose free the agent could not follow: left out of leaks.
    pub untracked: u64,
    /// Allocations by function: `malloc`, `calloc`, ... -> estimated bytes.
    pub by_call: Vec<(String, u64)>,
    pub rows: Vec<NativeMemRow>,
}

#[derive(Default)]
struct Group {
    bytes: u64,
    calls: f64,
    samples: u64,
    stacks: HashMap<StackId, u64>,
}

/// Allocated bytes and calls of the native allocations `filter` selects,
/// grouped `by`; with `leaks`, only the blocks still held at the end of the
/// recording (or of the filter's window).
pub fn native_mem_report(
    rec: &Recording,
    filter: &EventFilter,
    by: NativeBy,
    leaks: bool,
) -> NativeMemReport {
    let all = native_allocations(rec, filter);
    let mut groups: HashMap<String, Group> = HashMap::new();
    let mut sites: HashMap<StackId, NativeSite> = HashMap::new();
    let mut by_call: HashMap<&'static str, u64> = HashMap::new();
    let (mut freed_bytes, mut untracked) = (0, 0);
    for a in &all {
        if a.freed_ticks.is_some() {
            freed_bytes += a.weight;
        }
        if a.id == 0 {
            untracked += 1;
        }
        if leaks && !a.leaked() {
            continue;
        }
        let site = sites
            .entry(a.stack)
            .or_insert_with(|| NativeSite::of(rec, a.stack));
        let key = match by {
            NativeBy::Stack => format!("#{}", a.stack.0),
            NativeBy::Library => site.library.clone(),
            NativeBy::Caller => site.caller.clone(),
            NativeBy::Function => site.function.clone(),
        };
        let g = groups.entry(key).or_default();
        g.bytes += a.weight;
        g.calls += a.calls();
        g.samples += 1;
        *g.stacks.entry(a.stack).or_default() += a.weight;
        *by_call.entry(native_call_name(a.call)).or_default() += a.weight;
    }
    let bytes: u64 = groups.values().map(|g| g.bytes).sum();
    let mut rows: Vec<NativeMemRow> = groups
        .into_iter()
        .map(|(key, g)| {
            let heaviest = g
                .stacks
                .iter()
                .max_by_key(|(s, w)| (**w, std::cmp::Reverse(s.0)))
                .map_or(StackId::NONE, |(s, _)| *s);
            let site = sites
                .get(&heaviest)
                .cloned()
                .unwrap_or_else(|| NativeSite::of(rec, heaviest));
            NativeMemRow {
                key: match by {
                    NativeBy::Stack => site.function.clone(),
                    _ => key,
                },
                bytes: g.bytes,
                calls: g.calls.round() as u64,
                samples: g.samples,
                percent: crate::stats::percent(g.bytes, bytes),
                site,
                stack: frames_of(rec, heaviest),
            }
        })
        .collect();
    rows.sort_by(|a, b| (b.bytes, &a.key, &a.stack).cmp(&(a.bytes, &b.key, &b.stack)));
    let mut by_call: Vec<(String, u64)> = by_call
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    by_call.sort_by(|a, b| (b.1, &a.0).cmp(&(a.1, &b.0)));
    NativeMemReport {
        by,
        leaks,
        interval: rec
            .header
            .extra("nativemem.interval")
            .and_then(|v| v.parse().ok()),
        bytes,
        calls: rows.iter().map(|r| r.calls).sum(),
        samples: rows.iter().map(|r| r.samples).sum(),
        freed_bytes,
        untracked,
        by_call,
        rows,
    }
}

/// Native lock waits on one lock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NativeLockRow {
    /// `pthread_mutex_lock`, `pthread_rwlock_rdlock` or `pthread_rwlock_wrlock`.
    pub function: String,
    /// The lock's address, `0x...`.
    pub lock: String,
    pub samples: u64,
    /// Estimated time blocked (the samples' weights).
    pub total_ns: u64,
    /// The longest wait sampled.
    pub max_ns: u64,
    pub sites: Vec<super::SiteRow>,
}

/// The sampled native lock waits `filter` selects, by lock, most time first.
pub fn native_lock_rows(rec: &Recording, filter: &EventFilter) -> Vec<NativeLockRow> {
    let f = EventFilter {
        types: vec![EventType::NativeLock],
        ..filter.clone()
    };
    #[derive(Default)]
    struct Lock {
        samples: u64,
        total_ns: u64,
        max_ns: u64,
        sites: HashMap<StackId, (u64, u64)>,
    }
    let mut locks: HashMap<(u64, u64), Lock> = HashMap::new();
    for e in f.select(rec) {
        let EventKind::NativeLock {
            duration_ns,
            weight,
            address,
            lock,
            stack,
            ..
        } = e.kind
        else {
            continue;
        };
        let l = locks.entry((address, lock)).or_default();
        l.samples += 1;
        l.total_ns += weight;
        l.max_ns = l.max_ns.max(duration_ns);
        let s = l.sites.entry(stack).or_default();
        s.0 += 1;
        s.1 += weight;
    }
    let mut rows: Vec<NativeLockRow> = locks
        .into_iter()
        .map(|((address, lock), l)| {
            let mut sites: Vec<super::SiteRow> = l
                .sites
                .into_iter()
                .map(|(stack, (count, total_ns))| super::SiteRow {
                    site: super::site_of(rec, stack),
                    stack: frames_of(rec, stack),
                    count,
                    total_ns,
                })
                .collect();
            sites.sort_by(|a, b| {
                (b.total_ns, b.count, &a.site).cmp(&(a.total_ns, a.count, &b.site))
            });
            NativeLockRow {
                function: jscope_format::native_lock_name(lock).to_string(),
                lock: format!("{address:#x}"),
                samples: l.samples,
                total_ns: l.total_ns,
                max_ns: l.max_ns,
                sites,
            }
        })
        .collect();
    rows.sort_by(|a, b| (b.total_ns, b.samples, &a.lock).cmp(&(a.total_ns, a.samples, &b.lock)));
    rows
}

/// How many report rows the text shows.
const TEXT_ROWS: usize = 40;

impl fmt::Display for NativeMemReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self
            .interval
            .map(|i| match i {
                0 => "every call".to_string(),
                i => format!("one per {} allocated", bytes_text(i)),
            })
            .unwrap_or_else(|| "interval unknown".to_string());
        let what = if self.leaks {
            "Native memory not freed"
        } else {
            "Native allocations"
        };
        writeln!(
            f,
            "{what}: {} in {} {} (estimated from {} samples, {rate})",
            bytes_text(self.bytes),
            self.calls,
            if self.leaks { "blocks" } else { "calls" },
            self.samples
        )?;
        if !self.leaks {
            let calls: Vec<String> = self
                .by_call
                .iter()
                .map(|(c, b)| format!("{c} {}", bytes_text(*b)))
                .collect();
            writeln!(
                f,
                "  by function: {}; freed {}",
                calls.join(", "),
                bytes_text(self.freed_bytes)
            )?;
        } else if self.untracked > 0 {
            writeln!(
                f,
                "  {} samples whose frees were not followed are left out",
                self.untracked
            )?;
        }
        let by = match self.by {
            NativeBy::Stack => "stack (top frame)",
            NativeBy::Library => "library",
            NativeBy::Caller => "Java caller",
            NativeBy::Function => "function",
        };
        writeln!(
            f,
            "\n  {:>10} {:>6} {:>10} {:>7}  {by}",
            "bytes", "%", "calls", "samples"
        )?;
        for r in self.rows.iter().take(TEXT_ROWS) {
            writeln!(
                f,
                "  {:>10} {:>5.1}% {:>10} {:>7}  {}",
                bytes_text(r.bytes),
                r.percent,
                r.calls,
                r.samples,
                r.key
            )?;
            match self.by {
                NativeBy::Stack => {
                    for frame in &r.stack {
                        writeln!(f, "  {:>37}  {frame}", "")?;
                    }
                }
                _ => writeln!(
                    f,
                    "  {:>37}  in {} from {}",
                    "", r.site.function, r.site.caller
                )?,
            }
        }
        if self.rows.len() > TEXT_ROWS {
            writeln!(f, "  ... {} more", self.rows.len() - TEXT_ROWS)?;
        }
        Ok(())
    }
}
