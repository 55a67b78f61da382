//! Differences between two sampled recordings (or two selections): which
//! methods' shares of the samples grew and which shrank.
//!
//! Each side is normalised to its own selected samples, so a 30 s recording
//! compares fairly with a 10 s one; the change is in percentage points. A change
//! is significant when a two-proportion z-test of the method's self or total
//! share (the smaller p-value, doubled for the two tests) stays below
//! [`SIGNIFICANT_Q`] after Benjamini-Hochberg over all methods, and the share
//! moved at least [`MIN_POINTS`] points: sampling noise alone rarely passes both.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::{HotMethod, HotMethods, Mode};

/// Where a method (or, in a trace diff, a subtree) was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    Both,
    /// Only in the base: it disappeared.
    Base,
    /// Only in the new side: it appeared.
    New,
}

/// One method's shares on both sides. A side that never saw the method has 0
/// samples and 0 % there, and [`presence`](MethodDiff::presence) says so.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodDiff {
    pub method: String,
    pub presence: Presence,
    pub base_self_samples: u64,
    pub base_total_samples: u64,
    pub new_self_samples: u64,
    pub new_total_samples: u64,
    pub base_self_percent: f64,
    pub base_total_percent: f64,
    pub new_self_percent: f64,
    pub new_total_percent: f64,
    /// `new_self_percent - base_self_percent`, in percentage points.
    pub self_delta: f64,
    /// `new_total_percent - base_total_percent`, in percentage points.
    pub total_delta: f64,
    /// Benjamini-Hochberg q-value of the change (see the module's docs).
    pub q_value: f64,
    /// Whether the change is more than sampling noise.
    pub significant: bool,
}

/// The false-discovery rate under which a change counts as significant.
pub const SIGNIFICANT_Q: f64 = 0.01;
/// The least change of share, in points, that counts as significant.
pub const MIN_POINTS: f64 = 1.0;

/// Two-sided p-value of a two-proportion z-test: `x1` of `n1` against `x2` of `n2`.
fn two_proportion_p(x1: u64, n1: u64, x2: u64, n2: u64) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (n1, n2) = (n1 as f64, n2 as f64);
    let pooled = (x1 as f64 + x2 as f64) / (n1 + n2);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    if se == 0.0 {
        return 1.0;
    }
    let z = (x1 as f64 / n1 - x2 as f64 / n2).abs() / se;
    crate::trace::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The method-share comparison of two sides, rows ranked by the absolute
/// change of self share, then of total share (largest first), then by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotDiff {
    pub mode: Option<Mode>,
    /// Selected samples of the base side, the base of its percentages.
    pub base_samples: u64,
    /// Selected samples of the new side.
    pub new_samples: u64,
    pub methods: Vec<MethodDiff>,
}

/// Compares two whole hot-method tables (see [`hot_methods`](crate::hot_methods)).
/// Give untruncated tables; truncate the diff instead.
pub fn diff_hot(base: &HotMethods, new: &HotMethods) -> HotDiff {
    let mut sides: BTreeMap<&str, (Option<&HotMethod>, Option<&HotMethod>)> = BTreeMap::new();
    for m in &base.methods {
        sides.entry(&m.method).or_default().0 = Some(m);
    }
    for m in &new.methods {
        sides.entry(&m.method).or_default().1 = Some(m);
    }
    let mut methods: Vec<MethodDiff> = sides
        .into_iter()
        .map(|(method, (b, n))| {
            let presence = match (b, n) {
                (Some(_), Some(_)) => Presence::Both,
                (Some(_), None) => Presence::Base,
                _ => Presence::New,
            };
            let get = |m: Option<&HotMethod>| {
                m.map_or((0, 0, 0.0, 0.0), |m| {
                    (
                        m.self_samples,
                        m.total_samples,
                        m.self_percent,
                        m.total_percent,
                    )
                })
            };
            let (bs, bt, bsp, btp) = get(b);
            let (ns, nt, nsp, ntp) = get(n);
            MethodDiff {
                method: method.to_string(),
                presence,
                base_self_samples: bs,
                base_total_samples: bt,
                new_self_samples: ns,
                new_total_samples: nt,
                base_self_percent: bsp,
                base_total_percent: btp,
                new_self_percent: nsp,
                new_total_percent: ntp,
                self_delta: nsp - bsp,
                total_delta: ntp - btp,
                q_value: 1.0,
                significant: false,
            }
        })
        .collect();
    let p: Vec<Option<f64>> = methods
        .iter()
        .map(|m| {
            let ps = two_proportion_p(
                m.base_self_samples,
                base.samples,
                m.new_self_samples,
                new.samples,
            );
            let pt = two_proportion_p(
                m.base_total_samples,
                base.samples,
                m.new_total_samples,
                new.samples,
            );
            Some((2.0 * ps.min(pt)).min(1.0))
        })
        .collect();
    for (m, q) in methods.iter_mut().zip(crate::trace::benjamini_hochberg(&p)) {
        m.q_value = q.unwrap_or(1.0);
        m.significant =
            m.q_value < SIGNIFICANT_Q && m.self_delta.abs().max(m.total_delta.abs()) >= MIN_POINTS;
    }
    methods.sort_by(|a, b| {
        b.self_delta
            .abs()
            .total_cmp(&a.self_delta.abs())
            .then_with(|| b.total_delta.abs().total_cmp(&a.total_delta.abs()))
            .then_with(|| a.method.cmp(&b.method))
    });
    HotDiff {
        mode: new.mode.or(base.mode),
        base_samples: base.samples,
        new_samples: new.samples,
        methods,
    }
}

impl HotDiff {
    /// Keeps the first `n` rows (the largest changes).
    pub fn truncate(&mut self, n: usize) {
        self.methods.truncate(n);
    }
}

impl fmt::Display for HotDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = self.mode.map_or("none", Mode::name);
        writeln!(
            f,
            "base {} samples, new {} samples ({mode}); shares of each side's samples, change in percentage points; * more than sampling noise (q < {SIGNIFICANT_Q})",
            self.base_samples, self.new_samples
        )?;
        writeln!(
            f,
            "{:>7} {:>7} {:>8}  {:>7} {:>7} {:>8}    method",
            "self", "self", "self", "total", "total", "total"
        )?;
        writeln!(
            f,
            "{:>7} {:>7} {:>8}  {:>7} {:>7} {:>8}",
            "base%", "new%", "change", "base%", "new%", "change"
        )?;
        for m in &self.methods {
            let tag = match m.presence {
                Presence::Both => "",
                Presence::Base => "  (base only)",
                Presence::New => "  (new only)",
            };
            writeln!(
                f,
                "{:>6.2}% {:>6.2}% {:>+8.2}  {:>6.2}% {:>6.2}% {:>+8.2}  {} {}{tag}",
                m.base_self_percent,
                m.new_self_percent,
                m.self_delta,
                m.base_total_percent,
                m.new_total_percent,
                m.total_delta,
                if m.significant { '*' } else { ' ' },
                m.method
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use jscope_format::{Recording, SampleMode};

    use super::*;
    use crate::{hot_methods, Selection};
    use jscope_testkit::recording::*;

    /// `a`, `b` and `c` samples of cpu on one thread, each under `demo.Main.run`;
    /// `gone` samples of `demo.Old.gone` when non-zero.
    fn side(a: u64, b: u64, c: u64, gone: u64) -> Recording {
        let mut rb = RecordingBuilder::new();
        rb.thread(1, "main", "main", 1);
        let mut at = 0;
        for (method, n) in [
            ("demo.Work.a", a),
            ("demo.Work.b", b),
            ("demo.Work.c", c),
            ("demo.Old.gone", gone),
        ] {
            if n == 0 {
                continue;
            }
            let stack = rb.stack(&[(method, 1), ("demo.Main.run", 2)]);
            for _ in 0..n {
                rb.sample(SampleMode::Cpu, 1, at, stack.0, RUNNING);
                at += 10;
            }
        }
        rb.build(Some(at + 10))
    }

    fn hot(rec: &Recording) -> HotMethods {
        let sel = Selection::default();
        hot_methods(rec, sel.mode_in(rec), &sel.stack_counts(rec))
    }

    fn row<'d>(d: &'d HotDiff, method: &str) -> &'d MethodDiff {
        d.methods.iter().find(|m| m.method == method).unwrap()
    }

    #[test]
    fn a_real_change_is_significant_and_noise_is_not() {
        // 400 samples a side: b from a third to about half is far beyond noise.
        let d = diff_hot(&hot(&side(133, 133, 134, 0)), &hot(&side(100, 200, 100, 0)));
        let b = row(&d, "demo.Work.b");
        assert!(b.significant && b.q_value < 1e-4, "{b:?}");
        // The same split give or take a few samples: nothing is.
        let d = diff_hot(&hot(&side(133, 133, 134, 0)), &hot(&side(128, 139, 133, 0)));
        assert!(d.methods.iter().all(|m| !m.significant), "{d:#?}");
        // A small side moves a lot by chance: 6 of 20 against 4 of 20 is not a change.
        let d = diff_hot(&hot(&side(6, 7, 7, 0)), &hot(&side(4, 8, 8, 0)));
        assert!(!row(&d, "demo.Work.a").significant);
    }

    #[test]
    fn shares_are_normalised_per_side_and_ranked_by_change() {
        // base: a, b, c, gone 10 each of 40; new: a 10, b 60, c 10 of 80.
        let base = side(10, 10, 10, 10);
        let new = side(10, 60, 10, 0);
        let d = diff_hot(&hot(&base), &hot(&new));
        assert_eq!((d.base_samples, d.new_samples), (40, 80));
        assert_eq!(d.mode, Some(Mode::Cpu));
        let names: Vec<&str> = d.methods.iter().map(|m| m.method.as_str()).collect();
        // b +50, gone -25, a and c -12.5 each (name order), run 0
        assert_eq!(
            names,
            [
                "demo.Work.b",
                "demo.Old.gone",
                "demo.Work.a",
                "demo.Work.c",
                "demo.Main.run"
            ]
        );
        let b = row(&d, "demo.Work.b");
        assert_eq!(b.presence, Presence::Both);
        assert_eq!((b.base_self_samples, b.new_self_samples), (10, 60));
        assert_eq!((b.base_self_percent, b.new_self_percent), (25.0, 75.0));
        assert_eq!((b.self_delta, b.total_delta), (50.0, 50.0));
        let a = row(&d, "demo.Work.a");
        assert_eq!((a.base_self_percent, a.new_self_percent), (25.0, 12.5));
        assert_eq!(a.self_delta, -12.5);
        let gone = row(&d, "demo.Old.gone");
        assert_eq!(gone.presence, Presence::Base);
        assert_eq!((gone.new_self_samples, gone.new_self_percent), (0, 0.0));
        assert_eq!(gone.self_delta, -25.0);
        let run = row(&d, "demo.Main.run");
        assert_eq!(
            (run.base_total_percent, run.new_total_percent),
            (100.0, 100.0)
        );
        assert_eq!((run.self_delta, run.total_delta), (0.0, 0.0));
    }

    #[test]
    fn methods_of_the_new_side_only_are_marked() {
        let base = side(10, 0, 0, 0);
        let new = side(5, 15, 0, 0);
        let mut d = diff_hot(&hot(&base), &hot(&new));
        let b = row(&d, "demo.Work.b");
        assert_eq!(b.presence, Presence::New);
        assert_eq!((b.base_self_percent, b.new_self_percent), (0.0, 75.0));
        // a -75 and b +75 tie on both changes, so name order decides
        assert_eq!(d.methods[0].method, "demo.Work.a");
        assert_eq!(d.methods[0].self_delta, -75.0);
        assert_eq!(d.methods[1].method, "demo.Work.b");
        let text = d.to_string();
        assert!(text.contains("demo.Work.b  (new only)"), "{text}");
        assert!(text.contains("100.00%  25.00%   -75.00"), "{text}");
        d.truncate(2);
        assert_eq!(d.methods.len(), 2);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["methods"][1]["presence"], "new");
        assert_eq!(json["methods"][1]["self_delta"], 75.0);
    }

    #[test]
    fn identical_sides_show_no_change() {
        let d = diff_hot(&hot(&side(3, 4, 5, 0)), &hot(&side(6, 8, 10, 0)));
        assert!(d.methods.iter().all(|m| m.self_delta.abs() < 1e-9
            && m.total_delta.abs() < 1e-9
            && m.presence == Presence::Both));
    }
}
