//! Clock offsets between JVMs from matched calls (NTP-style bounds, as Zipkin and
//! Jaeger adjust skew): a server executes a call inside the client's call, so with
//! `delta = client clock - server clock`,
//! `client start - server start <= delta <= client end - server end`.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::matching::Match;
use super::member::Member;

/// How one JVM's clock relates to the reference JVM's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClockOffset {
    /// Add to this JVM's wall-clock ns to get the reference JVM's.
    pub offset_ns: i64,
    /// The true offset is within `offset_ns ± uncertainty_ns` when `consistent`.
    pub uncertainty_ns: u64,
    /// Matched calls between this JVM and the one it was reached from.
    pub pairs: usize,
    /// False when the pairs' bounds do not intersect (drifting clocks, or a server
    /// that answered before its work ended): the estimate is then the median of the
    /// pairs' midpoints and the uncertainty their largest distance from it.
    pub consistent: bool,
    /// The JVM this one's offset was derived from (the reference for itself).
    pub via: usize,
}

/// One pair of JVMs' bounds.
#[derive(Debug, Clone, Copy)]
struct Edge {
    delta_ns: i64,
    uncertainty_ns: u64,
    pairs: usize,
    consistent: bool,
}

/// Per JVM, its offset to `reference`; None for JVMs not linked to it by matches.
pub fn estimate_offsets(
    members: &[Member],
    matches: &[Match],
    reference: usize,
) -> Vec<Option<ClockOffset>> {
    let edges = pair_edges(members, matches);
    let mut out: Vec<Option<ClockOffset>> = vec![None; members.len()];
    if reference >= members.len() {
        return out;
    }
    out[reference] = Some(ClockOffset {
        offset_ns: 0,
        uncertainty_ns: 0,
        pairs: 0,
        consistent: true,
        via: reference,
    });
    let mut queue = VecDeque::from([reference]);
    while let Some(a) = queue.pop_front() {
        let base = out[a].expect("queued JVMs have offsets");
        for (&(x, y), e) in &edges {
            // delta = x clock - y clock; offset(j) maps j's clock onto the reference's.
            let (next, delta) = match (x == a, y == a) {
                (true, false) => (y, e.delta_ns),
                (false, true) => (x, -e.delta_ns),
                _ => continue,
            };
            if out[next].is_some() {
                continue;
            }
            out[next] = Some(ClockOffset {
                offset_ns: base.offset_ns + delta,
                uncertainty_ns: base.uncertainty_ns + e.uncertainty_ns,
                pairs: e.pairs,
                consistent: base.consistent && e.consistent,
                via: a,
            });
            queue.push_back(next);
        }
    }
    out
}

/// Bounds of `client clock - server clock` per (client, server) pair of JVMs.
fn pair_edges(members: &[Member], matches: &[Match]) -> BTreeMap<(usize, usize), Edge> {
    let mut bounds: BTreeMap<(usize, usize), Vec<(i128, i128)>> = BTreeMap::new();
    for m in matches {
        let (cm, sm) = (&members[m.client.jvm], &members[m.server.jvm]);
        let (c, s) = (&cm.remotes[m.client.call], &sm.remotes[m.server.call]);
        let lo = cm.wall_ns(c.start_ns) - sm.wall_ns(s.start_ns);
        let hi = cm.wall_ns(c.end_ns) - sm.wall_ns(s.end_ns);
        bounds
            .entry((m.client.jvm, m.server.jvm))
            .or_default()
            .push((lo, hi));
    }
    bounds.into_iter().map(|(k, b)| (k, edge(&b))).collect()
}

fn edge(bounds: &[(i128, i128)]) -> Edge {
    let lo = bounds.iter().map(|b| b.0).max().unwrap_or(0);
    let hi = bounds.iter().map(|b| b.1).min().unwrap_or(0);
    if lo <= hi {
        return Edge {
            delta_ns: ((lo + hi) / 2) as i64,
            uncertainty_ns: ((hi - lo) / 2) as u64,
            pairs: bounds.len(),
            consistent: true,
        };
    }
    let mut mids: Vec<i128> = bounds.iter().map(|b| (b.0 + b.1) / 2).collect();
    mids.sort_unstable();
    let median = mids[mids.len() / 2];
    let spread = mids.iter().map(|m| (m - median).abs()).max().unwrap_or(0);
    Edge {
        delta_ns: median as i64,
        uncertainty_ns: spread as u64,
        pairs: bounds.len(),
        consistent: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersecting_bounds_give_their_midpoint_and_half_width() {
        let e = edge(&[(100, 300), (150, 400), (120, 250)]);
        assert_eq!(
            (e.delta_ns, e.uncertainty_ns, e.consistent),
            (200, 50, true)
        );
    }

    #[test]
    fn disjoint_bounds_fall_back_to_the_median_midpoint() {
        let e = edge(&[(0, 10), (100, 110), (40, 60)]);
        assert_eq!(
            (e.delta_ns, e.uncertainty_ns, e.consistent),
            (50, 55, false)
        );
    }
}
