//! Statistics of aggregate-mode recordings (JX): the agent kept only per-thread
//! caller→callee totals, so there is no self time, spread or percentile.

use jscope_format::{MethodId, Recording};

use super::engine::Anomalies;
use super::stats::{dropped_events, pair_key, pair_rows, MethodStats, PairAcc, PairMap};
use super::TraceStats;

/// Sums every thread's caller→callee totals over the recording (successive
/// records of a thread add up) and derives per-method calls, total, min and max.
/// A recursive method's nested calls each count in its total, as in trace mode.
pub fn aggregate_stats(rec: &Recording) -> TraceStats {
    let mut pairs = PairMap::default();
    for a in &rec.call_aggregates {
        for p in &a.pairs {
            pairs
                .entry(pair_key(p.caller, p.callee))
                .or_default()
                .add(p.calls, p.total_ns, p.min_ns, p.max_ns);
        }
    }
    let mut by_callee = PairMap::default();
    for (&k, p) in &pairs {
        by_callee
            .entry(u64::from(k as u32))
            .or_default()
            .add(p.calls, p.total, p.min, p.max);
    }
    let mut methods: Vec<MethodStats> = by_callee
        .iter()
        .filter(|(_, p)| p.calls > 0)
        .map(|(&id, p)| method_row(rec, id as u32, p))
        .collect();
    methods.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.method.cmp(&b.method))
    });
    TraceStats {
        aggregate_mode: true,
        percentiles_exact: false,
        events: 0,
        calls: methods.iter().map(|m| m.calls).sum(),
        dropped_events: dropped_events(rec),
        probe_cost_ns: None,
        counter: None,
        anomalies: Anomalies::default(),
        methods,
        pairs: pair_rows(rec, &pairs),
    }
}

fn method_row(rec: &Recording, id: u32, p: &PairAcc) -> MethodStats {
    MethodStats {
        method: rec.method_label(MethodId(id)),
        method_id: id,
        calls: p.calls,
        total_ns: p.total,
        self_ns: None,
        min_ns: p.min,
        max_ns: p.max,
        mean_ns: p.total as f64 / p.calls as f64,
        stddev_ns: None,
        p50_ns: None,
        p90_ns: None,
        p99_ns: None,
        corrected_total_ns: None,
        corrected_self_ns: None,
        threw: 0,
        cpu_ns: None,
        self_cpu_ns: None,
        counter: None,
    }
}
