//! Per-method and caller→callee statistics, streamed: no call tree is built.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use jscope_format::{MethodId, Recording};
use serde::Serialize;

use super::engine::{Anomalies, Call, CallSink, THREW};
use super::histogram::Durations;
use super::TraceStats;

/// How the rows of a statistics table are ordered (largest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SortKey {
    #[default]
    Total,
    #[serde(rename = "self")]
    SelfTime,
    Calls,
    Max,
    Stddev,
}

impl FromStr for SortKey {
    type Err = String;

    fn from_str(s: &str) -> Result<SortKey, String> {
        Ok(match s {
            "total" => SortKey::Total,
            "self" => SortKey::SelfTime,
            "calls" => SortKey::Calls,
            "max" => SortKey::Max,
            "stddev" => SortKey::Stddev,
            _ => {
                return Err(format!(
                    "unknown sort key `{s}` (expected total, self, calls, max or stddev)"
                ))
            }
        })
    }
}

/// One method's calls. Times are in ns; a recursive method's nested calls each
/// count in `total_ns`, as each is a call of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodStats {
    pub method: String,
    pub method_id: u32,
    pub calls: u64,
    pub total_ns: u64,
    /// None for aggregate-mode recordings, which do not carry it.
    pub self_ns: Option<u64>,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// Population standard deviation.
    pub stddev_ns: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// Total and self time minus the probe cost inside them (trace mode only).
    pub corrected_total_ns: Option<u64>,
    pub corrected_self_ns: Option<u64>,
    /// Calls that left by throwing.
    pub threw: u64,
    /// Thread CPU time of the calls, when the agent recorded it (`tracecpu`).
    pub cpu_ns: Option<u64>,
    /// The part of `cpu_ns` not in traced calls inside.
    pub self_cpu_ns: Option<u64>,
    /// The recording's per-call perf counter (`tracecounter=`), in place of
    /// the CPU time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter: Option<CounterStats>,
}

/// A perf event's counts in one method's calls (`tracecounter=`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterStats {
    /// The perf event's name (`page-faults`, `instructions`, ...).
    pub event: String,
    pub total: u64,
    pub per_call: f64,
    /// Counts not in traced calls inside.
    #[serde(rename = "self")]
    pub self_count: u64,
}

/// Calls of `callee` made directly by `caller` (0 = from untraced code or a root).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairStats {
    pub caller: String,
    pub callee: String,
    pub caller_id: u32,
    pub callee_id: u32,
    pub calls: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

#[derive(Debug, Clone, Default)]
struct MethodAcc {
    calls: u64,
    total: u64,
    self_ns: u64,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
    corrected_total: u64,
    corrected_self: u64,
    threw: u64,
    cpu: Option<u64>,
    self_cpu: Option<u64>,
    durations: Durations,
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PairAcc {
    pub(crate) calls: u64,
    pub(crate) total: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
}

impl PairAcc {
    #[inline]
    pub(crate) fn add(&mut self, calls: u64, total: u64, min: u64, max: u64) {
        self.min = if self.calls == 0 {
            min
        } else {
            self.min.min(min)
        };
        self.max = self.max.max(max);
        self.calls += calls;
        self.total += total;
    }
}

/// A fast hasher for the (caller, callee) keys: one multiply per key.
#[derive(Default, Clone, Copy)]
pub(crate) struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, v: u64) {
        // murmur3's finaliser: caller and callee bits reach every bit of the hash,
        // which the table needs in both its low (index) and high (tag) bits.
        let mut h = v;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        self.0 = h ^ (h >> 33);
    }
}

pub(crate) type PairMap = HashMap<u64, PairAcc, std::hash::BuildHasherDefault<PairHasher>>;

pub(crate) fn pair_key(caller: MethodId, callee: MethodId) -> u64 {
    (u64::from(caller) << 32) | u64::from(callee)
}

/// The statistics sink of the stack algorithm.
#[derive(Default)]
pub(crate) struct StatsSink {
    methods: Vec<MethodAcc>,
    pairs: PairMap,
    pub(crate) calls: u64,
}

impl CallSink for StatsSink {
    #[inline]
    fn enter(&mut self, _thread: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        0
    }

    #[inline]
    fn exit(&mut self, c: &Call) {
        self.calls += 1;
        let d = c.duration_ns();
        let i = c.method as usize;
        if self.methods.len() <= i {
            self.methods.resize_with(i + 1, MethodAcc::default);
        }
        self.methods[i].add(c, d);
        self.pairs
            .entry(pair_key(MethodId(c.caller), MethodId(c.method)))
            .or_default()
            .add(1, d, d, d);
    }
}

impl MethodAcc {
    #[inline]
    fn add(&mut self, c: &Call, d: u64) {
        self.min = if self.calls == 0 { d } else { self.min.min(d) };
        self.max = self.max.max(d);
        self.calls += 1;
        self.total += d;
        self.self_ns += c.self_ns;
        self.corrected_total += c.corrected_ns;
        self.corrected_self += c.corrected_self_ns;
        self.threw += u64::from(c.flags & THREW != 0);
        if let Some(cpu) = c.cpu_ns {
            *self.cpu.get_or_insert(0) += cpu;
        }
        if let Some(cpu) = c.self_cpu_ns {
            *self.self_cpu.get_or_insert(0) += cpu;
        }
        // Welford: stable for long runs of similar durations.
        let delta = d as f64 - self.mean;
        self.mean += delta / self.calls as f64;
        self.m2 += delta * (d as f64 - self.mean);
        self.durations.add(d);
    }

    fn finish(mut self, rec: &Recording, id: u32, counter: Option<&str>) -> MethodStats {
        let counted = counter.zip(self.cpu).map(|(event, total)| CounterStats {
            event: event.to_string(),
            total,
            per_call: total as f64 / self.calls.max(1) as f64,
            self_count: self.self_cpu.unwrap_or(0),
        });
        let cpu = |v| if counter.is_some() { None } else { v };
        MethodStats {
            method: rec.method_label(MethodId(id)),
            method_id: id,
            calls: self.calls,
            total_ns: self.total,
            self_ns: Some(self.self_ns),
            min_ns: self.min,
            max_ns: self.max,
            mean_ns: self.mean,
            stddev_ns: Some((self.m2 / self.calls as f64).sqrt()),
            p50_ns: self.durations.quantile(0.5),
            p90_ns: self.durations.quantile(0.9),
            p99_ns: self.durations.quantile(0.99),
            corrected_total_ns: Some(self.corrected_total),
            corrected_self_ns: Some(self.corrected_self),
            threw: self.threw,
            cpu_ns: cpu(self.cpu),
            self_cpu_ns: cpu(self.self_cpu),
            counter: counted,
        }
    }
}

impl StatsSink {
    /// Whether every percentile is exact (no method spilled into the histogram).
    fn exact(&self) -> bool {
        self.methods.iter().all(|m| m.durations.is_exact())
    }

    pub(crate) fn finish(self, rec: &Recording, anomalies: Anomalies, events: u64) -> TraceStats {
        let exact = self.exact();
        let counter = rec.header.extra("trace.counter");
        let methods = self
            .methods
            .into_iter()
            .enumerate()
            .filter(|(_, m)| m.calls > 0)
            .map(|(id, m)| m.finish(rec, id as u32, counter))
            .collect();
        TraceStats {
            aggregate_mode: false,
            percentiles_exact: exact,
            events,
            calls: self.calls,
            dropped_events: dropped_events(rec),
            probe_cost_ns: None,
            counter: counter.map(String::from),
            anomalies,
            methods,
            pairs: pair_rows(rec, &self.pairs),
        }
    }
}

/// The recording's count of dropped trace events.
pub(crate) fn dropped_events(rec: &Recording) -> u64 {
    rec.counters
        .get("trace.events_dropped")
        .copied()
        .unwrap_or(0)
}

pub(crate) fn pair_rows(rec: &Recording, pairs: &PairMap) -> Vec<PairStats> {
    let mut rows: Vec<PairStats> = pairs
        .iter()
        .map(|(&k, p)| {
            let (caller, callee) = ((k >> 32) as u32, k as u32);
            PairStats {
                caller: if caller == 0 {
                    "[root]".into()
                } else {
                    rec.method_label(MethodId(caller))
                },
                callee: rec.method_label(MethodId(callee)),
                caller_id: caller,
                callee_id: callee,
                calls: p.calls,
                total_ns: p.total,
                min_ns: p.min,
                max_ns: p.max,
                mean_ns: p.total as f64 / p.calls.max(1) as f64,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.callee.cmp(&b.callee))
    });
    rows
}

impl TraceStats {
    /// Orders methods by `key`, largest first; ties by name.
    pub fn sort(&mut self, key: SortKey) {
        let value = |m: &MethodStats| -> f64 {
            match key {
                SortKey::Total => m.total_ns as f64,
                SortKey::SelfTime => m.self_ns.unwrap_or(m.total_ns) as f64,
                SortKey::Calls => m.calls as f64,
                SortKey::Max => m.max_ns as f64,
                SortKey::Stddev => m.stddev_ns.unwrap_or(0.0),
            }
        };
        self.methods.sort_by(|a, b| {
            value(b)
                .total_cmp(&value(a))
                .then_with(|| a.method.cmp(&b.method))
        });
    }

    /// Keeps the first `n` methods and pairs.
    pub fn truncate(&mut self, n: usize) {
        self.methods.truncate(n);
        self.pairs.truncate(n);
    }

    pub fn method(&self, label: &str) -> Option<&MethodStats> {
        self.methods.iter().find(|m| m.method == label)
    }

    pub fn pair(&self, caller: &str, callee: &str) -> Option<&PairStats> {
        self.pairs
            .iter()
            .find(|p| p.caller == caller && p.callee == callee)
    }
}

/// `1.234ms`-style durations for tables.
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.3}s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.3}us", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| fmt_ns(v as f64))
}

impl fmt::Display for TraceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_summary(f)?;
        match &self.counter {
            Some(event) => self.write_counter_table(f, event)?,
            None => self.write_table(f, 12, &["cpu".to_string()], |m| vec![opt(m.cpu_ns)])?,
        }
        self.write_pairs(f)
    }
}

/// The timing columns every method table starts with, right-aligned to the widths
/// of `timing_columns`.
fn timing_heads() -> String {
    format!(
        "{:>10} {:>12} {:>12} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12}",
        "calls",
        "total",
        "self",
        "min",
        "max",
        "mean",
        "stddev",
        "p50",
        "p90",
        "p99",
        "total(corr)",
        "self(corr)"
    )
}

fn timing_columns(m: &MethodStats) -> String {
    format!(
        "{:>10} {:>12} {:>12} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12}",
        m.calls,
        fmt_ns(m.total_ns as f64),
        opt(m.self_ns),
        fmt_ns(m.min_ns as f64),
        fmt_ns(m.max_ns as f64),
        fmt_ns(m.mean_ns),
        m.stddev_ns.map_or_else(|| "-".into(), fmt_ns),
        opt(m.p50_ns),
        opt(m.p90_ns),
        opt(m.p99_ns),
        opt(m.corrected_total_ns),
        opt(m.corrected_self_ns),
    )
}

impl TraceStats {
    /// One row per method: the timing columns, then `extra` columns of `width`
    /// under `heads`, then the method.
    fn write_table(
        &self,
        f: &mut fmt::Formatter<'_>,
        width: usize,
        heads: &[String],
        extra: impl Fn(&MethodStats) -> Vec<String>,
    ) -> fmt::Result {
        let cells = |values: &[String]| {
            values
                .iter()
                .map(|v| format!("{v:>width$}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        writeln!(f, "{} {}  method", timing_heads(), cells(heads))?;
        for m in &self.methods {
            writeln!(
                f,
                "{} {}  {}",
                timing_columns(m),
                cells(&extra(m)),
                m.method
            )?;
        }
        Ok(())
    }

    fn write_summary(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.aggregate_mode {
            writeln!(f, "aggregate-mode recording: per caller->callee totals only; no self time, stddev or percentiles")?;
        } else {
            writeln!(f, "{} events, {} calls", self.events, self.calls)?;
            if !self.percentiles_exact {
                writeln!(
                    f,
                    "percentiles within 0.4% (log-linear histogram above 4096 calls of a method)"
                )?;
            }
        }
        match self.probe_cost_ns {
            Some(c) => writeln!(f, "probe cost {c} ns per probe: (corr) columns subtract it")?,
            None if !self.aggregate_mode => writeln!(
                f,
                "no probe cost in the recording: (corr) columns equal the measured times"
            )?,
            None => {}
        }
        let a = &self.anomalies;
        if *a != Anomalies::default() {
            writeln!(
                f,
                "anomalies: {} mismatched exits ({} frames closed), {} unmatched exits, {} unfinished calls",
                a.mismatched_exits, a.closed_by_mismatch, a.unmatched_exits, a.unfinished
            )?;
        }
        writeln!(f)
    }

    /// The table of a recording whose events carry a perf counter
    /// (`tracecounter=`): its total, mean per call and self counts in place of
    /// the cpu column.
    fn write_counter_table(&self, f: &mut fmt::Formatter<'_>, event: &str) -> fmt::Result {
        let heads = [
            event.to_string(),
            format!("{event}/call"),
            format!("{event}(self)"),
        ];
        self.write_table(f, 14, &heads, |m| match &m.counter {
            Some(c) => vec![
                c.total.to_string(),
                format!("{:.2}", c.per_call),
                c.self_count.to_string(),
            ],
            None => vec!["-".to_string(); 3],
        })
    }

    fn write_pairs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\n{:>10} {:>12} {:>11} {:>11} {:>11}  caller -> callee",
            "calls", "total", "min", "max", "mean"
        )?;
        for p in &self.pairs {
            writeln!(
                f,
                "{:>10} {:>12} {:>11} {:>11} {:>11}  {} -> {}",
                p.calls,
                fmt_ns(p.total_ns as f64),
                fmt_ns(p.min_ns as f64),
                fmt_ns(p.max_ns as f64),
                fmt_ns(p.mean_ns),
                p.caller,
                p.callee
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use jscope_format::*;

    use crate::trace::{TraceOptions, TraceStats};
    use crate::Info;

    /// One call of method 1 on thread 1, and the agent's counters saying `dropped`
    /// events were lost.
    fn recording(dropped: u64) -> Vec<u8> {
        let mut w = ChunkWriter::new();
        let ev = |kind, ticks| TraceEvent {
            kind,
            method: MethodId(1),
            ticks,
            untraced: 0,
            cpu_ns: 0,
        };
        w.trace(&TraceBatch {
            thread: ThreadId(1),
            has_cpu: false,
            events: vec![ev(TraceKind::Enter, 10), ev(TraceKind::Exit, 30)],
        });
        w.counters(40, &[("trace.events_dropped", dropped)]);
        let mut bytes = encode_file_start(&Header {
            ticks_per_second: 1_000_000_000,
            ..Default::default()
        });
        bytes.extend(w.finish_indexed());
        bytes
    }

    #[test]
    fn stats_and_info_count_dropped_trace_events() {
        let bytes = recording(5);
        let (stats, rec) = TraceStats::from_bytes(&bytes, &TraceOptions::default()).unwrap();
        assert_eq!((stats.events, stats.dropped_events), (2, 5));
        let info = Info::of(&rec);
        assert_eq!(info.trace.dropped, 5);
        assert!(crate::trace::incomplete_note(&rec)
            .unwrap()
            .starts_with("trace incomplete: 5 events dropped"));

        let bytes = recording(0);
        let (stats, rec) = TraceStats::from_bytes(&bytes, &TraceOptions::default()).unwrap();
        assert_eq!(stats.dropped_events, 0);
        assert_eq!(crate::trace::incomplete_note(&rec), None);
    }
}
