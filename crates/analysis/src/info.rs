//! What a recording holds and how well the sampling went.

use std::collections::BTreeMap;
use std::fmt;

use jscope_format::{FrameKind, Overview, Recording, ThreadId, TraceCounts};
use serde::Serialize;

use crate::stats::{mean, percent, quantile};
use crate::{select::count_mode, Mode};

/// Distribution of achieved intervals, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalStats {
    pub count: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl IntervalStats {
    /// `None` when there is nothing to measure.
    pub fn from_ns(mut values: Vec<u64>) -> Option<IntervalStats> {
        values.sort_unstable();
        let ms = |v: u64| v as f64 / 1e6;
        Some(IntervalStats {
            count: values.len(),
            mean_ms: mean(&values)? / 1e6,
            p50_ms: ms(quantile(&values, 0.5)?),
            p99_ms: ms(quantile(&values, 0.99)?),
            max_ms: ms(*values.last()?),
        })
    }
}

/// Achieved cpu sampling interval of one thread: the gaps between its
/// consecutive cpu samples. Only meaningful for threads that stayed on cpu,
/// so the median (robust to off-cpu gaps) is what to read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuThreadRate {
    pub thread: String,
    pub samples: u64,
    pub gaps: IntervalStats,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterValue {
    pub name: String,
    pub value: u64,
    /// For failed walks: the share of the recording's cpu and wall samples
    /// they hit, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
}

impl CounterValue {
    fn new(name: &str, value: u64) -> CounterValue {
        CounterValue {
            name: name.to_string(),
            value,
            percent: None,
        }
    }
}

/// Exact-tracing events of a recording, and whether any were lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TraceInfo {
    pub events: u64,
    pub enters: u64,
    pub exits: u64,
    pub throws: u64,
    /// TraceBatch records.
    pub batches: u64,
    /// The agent's `trace.events_dropped` counter: events lost when a thread's
    /// trace ring was full; the trace is incomplete when it is not 0.
    pub dropped: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Info {
    pub agent_version: String,
    pub pid: u32,
    pub host: String,
    pub command_line: String,
    pub vm_name: String,
    pub vm_vendor: String,
    pub vm_version: String,
    pub java_version: String,
    pub os: String,
    pub arch: String,
    pub start_unix_ns: u64,
    /// ISO 8601, UTC.
    pub start_utc: String,
    pub modes: String,
    pub requested_interval_ms: f64,
    pub max_depth: u32,
    pub extra: Vec<(String, String)>,
    pub duration_s: f64,
    pub ended_cleanly: bool,
    pub chunks: u64,
    pub skipped_records: u64,
    pub threads: usize,
    /// Stack samples per mode; snapshot counts one per thread per snapshot.
    pub samples: BTreeMap<Mode, u64>,
    pub snapshots: usize,
    pub trace: TraceInfo,
    /// Samples whose stack has no frames.
    pub empty_stacks: u64,
    /// Their share of all stack samples (snapshot threads included), in percent.
    pub empty_stacks_percent: f64,
    /// Counters naming dropped data (`*drop*`).
    pub dropped: Vec<CounterValue>,
    /// `walk.failed.<reason>` counters, by reason, each with the share of the
    /// recording's cpu and wall samples it hit.
    pub failed_walks: Vec<CounterValue>,
    pub other_counters: Vec<CounterValue>,
    /// Achieved time between snapshots (`Snapshot::interval_ns`).
    pub snapshot_interval: Option<IntervalStats>,
    /// Busiest threads' achieved cpu sampling intervals, most samples first.
    pub cpu_rates: Vec<CpuThreadRate>,
    pub damage: Option<String>,
    /// The cpu engine the agent ran (header `cpu_engine`, with `cstack` and
    /// `kernel_frames`), e.g. `perf (cstack fp, kernel frames yes)`; `None` when the
    /// header does not say (recordings from before mixed stacks: Java frames only).
    pub cpu_engine: Option<String>,
    /// What walked the Java stacks of cpu and wall samples (header
    /// `stack_walker`): `vm`, the agent's own walker over HotSpot's structures,
    /// or `asgct` (AsyncGetCallTrace), with why it fell back to it when it did
    /// (`stack_walker_fallback`); `None` when the header does not say.
    pub stack_walker: Option<String>,
    /// Threads that are not Java threads (GC workers, compiler threads, native threads).
    pub native_threads: usize,
    /// Per frame kind, the samples (and snapshot stacks) holding at least one frame of
    /// it, in [`FrameKind::ALL`] order; kinds no stack holds are left out.
    pub frame_kinds: Vec<KindCount>,
    /// JVM events (monitor, gc, alloc, user, ...) by kind, in the format's tag
    /// order ([`jscope_format::EVENT_KINDS`]); kinds the recording has none of are
    /// left out.
    pub events: Vec<EventCount>,
}

/// JVM events of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventCount {
    pub kind: String,
    pub events: u64,
}

/// Event counts by kind name, in tag order, zeros left out.
fn event_counts(by_kind: &BTreeMap<&str, u64>) -> Vec<EventCount> {
    jscope_format::EVENT_KINDS
        .iter()
        .filter_map(|k| {
            let n = by_kind.get(k.name).copied().unwrap_or(0);
            (n > 0).then(|| EventCount {
                kind: k.name.to_string(),
                events: n,
            })
        })
        .collect()
}

/// Samples holding a frame of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindCount {
    pub kind: String,
    pub samples: u64,
}

/// Header keys shown in the `cpu engine:` line rather than among the other extras.
const ENGINE_KEYS: [&str; 5] = [
    "cpu_engine",
    "cstack",
    "kernel_frames",
    "stack_walker",
    "stack_walker_fallback",
];

/// How many threads [`Info::cpu_rates`] lists.
const CPU_RATE_THREADS: usize = 10;
/// Fewer samples than this give no useful gap statistics.
const CPU_RATE_MIN_SAMPLES: usize = 10;

impl Info {
    /// The info of a whole decoded recording.
    pub fn of(rec: &Recording) -> Info {
        let mut trace = TraceCounts::default();
        for b in &rec.traces {
            trace.add_batch(b);
        }
        let mut events = BTreeMap::new();
        for e in &rec.events {
            *events.entry(e.kind.name()).or_default() += 1;
        }
        Info::build(rec, trace, event_counts(&events), rec.duration_ns())
    }

    /// The info of a recording counted with [`Overview::read_file`]: the same as
    /// [`Info::of`] of the whole recording, without holding its events (read
    /// from its chunk summaries where it has them, in well under a second
    /// whatever its size).
    pub fn of_overview(o: &Overview) -> Info {
        let events = event_counts(&o.jvm_events_by_kind);
        Info::build(&o.rec, o.trace, events, o.duration_ns())
    }

    fn build(
        rec: &Recording,
        trace: TraceCounts,
        events: Vec<EventCount>,
        duration_ns: u64,
    ) -> Info {
        let h = &rec.header;
        let (dropped, mut failed_walks, other_counters) = split_counters(rec);
        let signal_samples = count_mode(rec, Mode::Cpu) + count_mode(rec, Mode::Wall);
        for c in &mut failed_walks {
            c.percent = Some(percent(c.value, signal_samples));
        }
        let empty_stacks = count_empty_stacks(rec);
        let all_samples: u64 = Mode::ALL.into_iter().map(|m| count_mode(rec, m)).sum();
        Info {
            agent_version: h.agent_version.clone(),
            pid: h.pid,
            host: h.host.clone(),
            command_line: h.command_line.clone(),
            vm_name: h.vm_name.clone(),
            vm_vendor: h.vm_vendor.clone(),
            vm_version: h.vm_version.clone(),
            java_version: h.java_version.clone(),
            os: h.os.clone(),
            arch: h.arch.clone(),
            start_unix_ns: h.start_wall_ns,
            start_utc: utc_iso8601(h.start_wall_ns),
            modes: h.modes.clone(),
            requested_interval_ms: h.interval_ns as f64 / 1e6,
            max_depth: h.max_depth,
            extra: h.extra.clone(),
            duration_s: duration_ns as f64 / 1e9,
            ended_cleanly: rec.end_ticks.is_some(),
            chunks: rec.chunks,
            skipped_records: rec.skipped_records,
            threads: rec.threads.len(),
            samples: Mode::ALL
                .into_iter()
                .map(|m| (m, count_mode(rec, m)))
                .collect(),
            snapshots: rec.snapshots.len(),
            trace: TraceInfo {
                events: trace.events(),
                enters: trace.enters,
                exits: trace.exits,
                throws: trace.throws,
                batches: trace.batches,
                dropped: rec
                    .counters
                    .get("trace.events_dropped")
                    .copied()
                    .unwrap_or(0),
            },
            empty_stacks,
            empty_stacks_percent: percent(empty_stacks, all_samples),
            dropped,
            failed_walks,
            other_counters,
            snapshot_interval: snapshot_intervals(rec),
            cpu_rates: cpu_rates(rec),
            damage: rec.damage.as_ref().map(|d| d.to_string()),
            cpu_engine: cpu_engine(h),
            stack_walker: stack_walker(h),
            native_threads: rec
                .threads
                .values()
                .filter(|t| t.java_id == 0 && t.group == "[native]")
                .count(),
            frame_kinds: frame_kinds(rec),
            events,
        }
    }
}

fn cpu_engine(h: &jscope_format::Header) -> Option<String> {
    let engine = h.extra("cpu_engine")?;
    let mut details: Vec<String> = [("cstack", "cstack"), ("kernel_frames", "kernel frames")]
        .iter()
        .filter_map(|(key, name)| h.extra(key).map(|v| format!("{name} {v}")))
        .collect();
    details.extend(stack_walker(h).map(|w| format!("stack walker {w}")));
    Some(if details.is_empty() {
        engine.to_string()
    } else {
        format!("{engine} ({})", details.join(", "))
    })
}

/// `vm`, `asgct`, or `asgct (fell back: why)`.
fn stack_walker(h: &jscope_format::Header) -> Option<String> {
    let walker = h.extra("stack_walker")?;
    Some(match h.extra("stack_walker_fallback") {
        Some(why) => format!("{walker} (fell back: {why})"),
        None => walker.to_string(),
    })
}

fn frame_kinds(rec: &Recording) -> Vec<KindCount> {
    // Kinds per stack once (a bit per kind), then counted per sample.
    let mut masks: BTreeMap<u32, u32> = BTreeMap::new();
    let mut mask_of = |id: jscope_format::StackId| {
        *masks.entry(id.0).or_insert_with(|| {
            rec.stack(id)
                .iter()
                .fold(0u32, |m, f| m | 1 << (f.kind as u8 & 31))
        })
    };
    let mut counts = [0u64; FrameKind::ALL.len()];
    let stacks = rec.samples.iter().map(|s| s.stack).chain(
        rec.snapshots
            .iter()
            .flat_map(|s| s.threads.iter().map(|t| t.stack)),
    );
    for id in stacks {
        let m = mask_of(id);
        for (k, c) in counts.iter_mut().enumerate() {
            *c += u64::from(m >> k & 1);
        }
    }
    FrameKind::ALL
        .iter()
        .filter(|k| counts[**k as usize] > 0)
        .map(|k| KindCount {
            kind: k.name().to_string(),
            samples: counts[*k as usize],
        })
        .collect()
}

fn count_empty_stacks(rec: &Recording) -> u64 {
    let signal = rec.samples.iter().map(|s| s.stack);
    let snap = rec
        .snapshots
        .iter()
        .flat_map(|s| s.threads.iter().map(|t| t.stack));
    signal
        .chain(snap)
        .filter(|&id| rec.stack(id).is_empty())
        .count() as u64
}

type Counters = Vec<CounterValue>;

fn split_counters(rec: &Recording) -> (Counters, Counters, Counters) {
    let (mut dropped, mut failed, mut other) = (vec![], vec![], vec![]);
    for (name, &value) in &rec.counters {
        if let Some(reason) = name.strip_prefix("walk.failed.") {
            failed.push(CounterValue::new(reason, value));
        } else if name.contains("drop") {
            dropped.push(CounterValue::new(name, value));
        } else {
            other.push(CounterValue::new(name, value));
        }
    }
    (dropped, failed, other)
}

fn snapshot_intervals(rec: &Recording) -> Option<IntervalStats> {
    // The first snapshot has no predecessor and says so with 0.
    let gaps = rec
        .snapshots
        .iter()
        .map(|s| s.interval_ns)
        .filter(|&ns| ns > 0)
        .collect();
    IntervalStats::from_ns(gaps)
}

fn cpu_rates(rec: &Recording) -> Vec<CpuThreadRate> {
    let mut ticks_by_thread: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for s in rec
        .samples
        .iter()
        .filter(|s| s.mode == jscope_format::SampleMode::Cpu)
    {
        ticks_by_thread.entry(s.thread.0).or_default().push(s.ticks);
    }
    let mut rates: Vec<CpuThreadRate> = ticks_by_thread
        .into_iter()
        .filter(|(_, ticks)| ticks.len() >= CPU_RATE_MIN_SAMPLES)
        .filter_map(|(thread, ticks)| cpu_rate(rec, thread, ticks))
        .collect();
    rates.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.thread.cmp(&b.thread))
    });
    rates.truncate(CPU_RATE_THREADS);
    rates
}

fn cpu_rate(rec: &Recording, thread: u32, mut ticks: Vec<u64>) -> Option<CpuThreadRate> {
    ticks.sort_unstable();
    let gaps = ticks
        .windows(2)
        .map(|w| rec.ticks_to_ns(w[1]) - rec.ticks_to_ns(w[0]))
        .collect();
    Some(CpuThreadRate {
        thread: rec
            .threads
            .get(&ThreadId(thread))
            .map_or_else(|| format!("thread {thread}"), |t| t.name.clone()),
        samples: ticks.len() as u64,
        gaps: IntervalStats::from_ns(gaps)?,
    })
}

/// Unix nanoseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn utc_iso8601(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let millis = (unix_ns / 1_000_000) % 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), using
/// 400-year eras (146097 days each) counted from 0000-03-01 so leap days fall
/// at the end of each era-year.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_identity(f)?;
        self.fmt_contents(f)?;
        self.fmt_quality(f)
    }
}

/// The sampling modes of a header's `modes` (`cpu+snapshot`); none for a recording
/// of tracing or events only.
pub fn sampled_modes(modes: &str) -> Vec<&str> {
    modes
        .split(['+', ','])
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "none")
        .collect()
}

impl Info {
    fn sampled_modes(&self) -> Vec<&str> {
        sampled_modes(&self.modes)
    }

    /// Whether the busiest thread's median cpu gap is more than 10% off the request.
    fn median_off_request(&self) -> bool {
        let req = self.requested_interval_ms;
        self.cpu_rates
            .first()
            .is_some_and(|r| req > 0.0 && (r.gaps.p50_ms - req).abs() > req * 0.1)
    }

    /// Where the samples of failed walks went: the agent's own walker keeps
    /// every one, with the frames it found and a marker frame naming the
    /// reason; with AsyncGetCallTrace and native stacks (`cstack` dwarf or fp)
    /// the agent keeps cpu ones, under their native frames or as a one-frame
    /// `[reason]` stack; wall ones, and all of them without, are dropped.
    fn failed_walks_kept(&self) -> &'static str {
        if self.stack_walker.as_deref() == Some("vm") {
            return "each is kept, with the frames found and a marker frame such as [break_compiled] naming the reason";
        }
        let mixed = self.extra.iter().any(|(k, v)| k == "cstack" && v != "no");
        let wall = self.modes.split('+').any(|m| m == "wall");
        match (mixed, wall) {
            (true, false) => "with native stacks they are kept, under their native frames or as a one-frame [reason] stack, and counted above",
            (true, true) => "cpu samples are kept, under their native frames or as a one-frame [reason] stack; wall samples are not in the recording",
            (false, _) => "they are not in the recording, so the sample counts above leave them out",
        }
    }

    fn fmt_identity(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A JFR file has no vendor or host name: what is not known is left out
        // rather than printed as `, ` and `on  (`.
        let mut jvm = format!("{} ({})", self.vm_name, self.vm_version);
        if !self.vm_vendor.is_empty() {
            jvm = format!("{jvm}, {}", self.vm_vendor);
        }
        writeln!(f, "jvm:        {jvm}")?;
        if !self.java_version.is_empty() {
            writeln!(f, "java:       {}", self.java_version)?;
        }
        let mut process = format!("pid {}", self.pid);
        if !self.host.is_empty() {
            process = format!("{process} on {}", self.host);
        }
        let system = format!("{} {}", self.os, self.arch);
        if !system.trim().is_empty() {
            process = format!("{process} ({})", system.trim());
        }
        writeln!(f, "process:    {process}")?;
        writeln!(f, "command:    {}", self.command_line)?;
        writeln!(f, "agent:      {}", self.agent_version)?;
        writeln!(f, "started:    {}", self.start_utc)?;
        // A JFR file does not say its stack depth (0): left out, not "max depth 0".
        let depth = match self.max_depth {
            0 => String::new(),
            d => format!(", max depth {d}"),
        };
        if self.sampled_modes().is_empty() {
            writeln!(f, "settings:   no sampling (tracing or events only){depth}")?;
        } else {
            writeln!(
                f,
                "settings:   modes {}, interval {}ms{depth}",
                self.modes, self.requested_interval_ms
            )?;
        }
        for (k, v) in &self.extra {
            if !(self.cpu_engine.is_some() && ENGINE_KEYS.contains(&k.as_str())) {
                writeln!(f, "  {k}: {v}")?;
            }
        }
        if let Some(engine) = &self.cpu_engine {
            writeln!(f, "cpu engine: {engine}")?;
        }
        Ok(())
    }

    fn fmt_contents(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ending = if self.ended_cleanly {
            "ended cleanly"
        } else {
            "no end record"
        };
        writeln!(f, "duration:   {:.3}s ({ending})", self.duration_s)?;
        writeln!(
            f,
            "chunks:     {} ({} unknown records skipped)",
            self.chunks, self.skipped_records
        )?;
        if self.native_threads > 0 {
            writeln!(
                f,
                "threads:    {} ({} Java, {} native)",
                self.threads,
                self.threads - self.native_threads.min(self.threads),
                self.native_threads
            )?;
        } else {
            writeln!(f, "threads:    {}", self.threads)?;
        }
        // A mode the recording was not made with has no line: `0 wall` would
        // suggest wall sampling ran and found nothing.
        let modes = self.sampled_modes();
        let shown: Vec<_> = self
            .samples
            .iter()
            .filter(|(m, &n)| n > 0 || modes.contains(&m.name()))
            .collect();
        if shown.is_empty() {
            writeln!(f, "samples:    none (recorded without sampling)")?;
        }
        for (mode, n) in shown {
            writeln!(f, "samples:    {n} {mode}")?;
        }
        writeln!(f, "snapshots:  {}", self.snapshots)?;
        if !self.events.is_empty() {
            let kinds: Vec<String> = self
                .events
                .iter()
                .map(|e| format!("{} {}", e.events, e.kind))
                .collect();
            writeln!(f, "events:     {}", kinds.join(", "))?;
        }
        if !self.frame_kinds.is_empty() {
            let kinds: Vec<String> = self
                .frame_kinds
                .iter()
                .map(|k| format!("{} {}", k.kind, k.samples))
                .collect();
            writeln!(
                f,
                "frame kinds: {} (samples with such a frame)",
                kinds.join(", ")
            )?;
        }
        self.fmt_trace(f)?;
        if self.empty_stacks == 0 {
            return writeln!(f, "empty stacks: 0");
        }
        writeln!(
            f,
            "empty stacks: {} ({}; shown as [no_stack])",
            self.empty_stacks,
            fmt_percent(self.empty_stacks_percent)
        )
    }

    /// A line for exact tracing when there are trace events or lost ones (the CLI
    /// warns once, with the fix, when the trace is incomplete).
    fn fmt_trace(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.trace;
        if t.events == 0 && t.dropped == 0 {
            return Ok(());
        }
        writeln!(
            f,
            "trace:      {} events ({} enters, {} exits, {} throws)",
            t.events, t.enters, t.exits, t.throws
        )?;
        Ok(())
    }

    fn fmt_quality(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_counters(f, "dropped", &self.dropped)?;
        fmt_counters(f, "failed walks", &self.failed_walks)?;
        if self.failed_walks.iter().any(|c| c.value != 0) {
            writeln!(
                f,
                "  (samples whose Java stack could not be walked, in part or at all, when the signal came: native code, GC, a VM transition, a stub; percentages of the cpu and wall samples; {})",
                self.failed_walks_kept()
            )?;
        }
        fmt_counters(f, "counters", &self.other_counters)?;
        if let Some(s) = &self.snapshot_interval {
            writeln!(f, "snapshot interval: {}", fmt_stats(s))?;
        }
        if !self.cpu_rates.is_empty() {
            writeln!(
                f,
                "cpu sample gaps per thread (median is the achieved interval while on cpu):"
            )?;
        }
        for r in &self.cpu_rates {
            writeln!(
                f,
                "  {:<28} {:>7} samples, {}",
                r.thread,
                r.samples,
                fmt_stats(&r.gaps)
            )?;
        }
        if self.median_off_request() {
            writeln!(
                f,
                "  (the median differs from the requested {}ms because the kernel fires cpu-time timers on its scheduler tick, e.g. every 4ms at HZ=250, so each gap is a whole number of ticks; the mean is the rate achieved)",
                self.requested_interval_ms
            )?;
        }
        if let Some(d) = &self.damage {
            writeln!(f, "damage:     {d}")?;
        }
        Ok(())
    }
}

fn fmt_stats(s: &IntervalStats) -> String {
    format!(
        "mean {:.3}ms, p50 {:.3}ms, p99 {:.3}ms, max {:.3}ms over {}",
        s.mean_ms, s.p50_ms, s.p99_ms, s.max_ms, s.count
    )
}

/// Lists the non-zero counters; zeros are the normal case and only add noise.
fn fmt_counters(f: &mut fmt::Formatter<'_>, title: &str, counters: &[CounterValue]) -> fmt::Result {
    let nonzero: Vec<&CounterValue> = counters.iter().filter(|c| c.value != 0).collect();
    if nonzero.is_empty() {
        return writeln!(f, "{title}: none");
    }
    writeln!(f, "{title}:")?;
    for c in nonzero {
        match c.percent {
            Some(p) => writeln!(f, "  {:<40} {} ({})", c.name, c.value, fmt_percent(p))?,
            None => writeln!(f, "  {:<40} {}", c.name, c.value)?,
        }
    }
    Ok(())
}

/// A share as `0.09%`; under 0.01% as `<0.01%`, so a rare failure does not
/// read as none.
fn fmt_percent(p: f64) -> String {
    if p > 0.0 && p < 0.01 {
        return "<0.01%".to_string();
    }
    format!("{p:.2}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_golden_file_gives_the_same_info_counted_or_decoded() {
        // Written before chunk summaries: counted by decoding chunk by chunk.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../format/tests/golden/small.jsc");
        let full = Info::of(&Recording::read_file(&path).unwrap());
        let o = Overview::read_file(&path).unwrap();
        assert_eq!(o.summarized_chunks, 0);
        assert_eq!(Info::of_overview(&o), full);
        assert_eq!(full.trace, TraceInfo::default());
        let text = full.to_string();
        assert!(text.contains("samples:    3 cpu"), "{text}");
        assert!(!text.contains("trace:"), "{text}");
    }

    #[test]
    fn civil_dates_match_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(
            utc_iso8601(1_700_000_000_123_000_000),
            "2023-11-14T22:13:20.123Z"
        );
    }
}
