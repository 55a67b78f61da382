//! Text renderings of the event reports, as `jscope locks`, `gc`, `alloc` and
//! `events --intervals` print them.

use std::fmt;

use super::reports::{AgeReport, AllocBy, AllocReport, GcReport, LockReport, SiteRow, UserReport};
use crate::trace::fmt_ns;

/// How many sites a monitor, wait or park row lists.
const SITES: usize = 3;

fn ns(v: u64) -> String {
    fmt_ns(v as f64)
}

/// Bytes as `12.3 MB` (powers of 1024).
pub(crate) fn bytes_text(v: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut x = v as f64;
    let mut i = 0;
    while x >= 1024.0 && i + 1 < UNITS.len() {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v} B")
    } else {
        format!("{x:.1} {}", UNITS[i])
    }
}

fn opt_ns(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), ns)
}

fn write_sites(f: &mut fmt::Formatter<'_>, sites: &[SiteRow]) -> fmt::Result {
    for s in sites.iter().take(SITES) {
        writeln!(
            f,
            "      {:>6} {:>10}  at {}",
            s.count,
            ns(s.total_ns),
            s.stack.join(" <- ")
        )?;
    }
    if sites.len() > SITES {
        writeln!(f, "      ... {} more sites", sites.len() - SITES)?;
    }
    Ok(())
}

impl fmt::Display for LockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Contended monitors ({}):", self.monitors.len())?;
        writeln!(
            f,
            "  {:>6} {:>10} {:>10} {:>10}  class",
            "count", "total", "max", "mean"
        )?;
        for m in &self.monitors {
            writeln!(
                f,
                "  {:>6} {:>10} {:>10} {:>10}  {}",
                m.count,
                ns(m.total_ns),
                ns(m.max_ns),
                ns(m.mean_ns),
                m.class
            )?;
            write_sites(f, &m.sites)?;
        }
        writeln!(f, "\nWaits ({}):", self.waits.len())?;
        writeln!(
            f,
            "  {:>6} {:>10} {:>10} {:>8} {:>9}  class",
            "count", "total", "max", "timeout", "timed out"
        )?;
        for w in &self.waits {
            writeln!(
                f,
                "  {:>6} {:>10} {:>10} {:>8} {:>9}  {}",
                w.count,
                ns(w.total_ns),
                ns(w.max_ns),
                w.with_timeout,
                w.timed_out,
                w.class
            )?;
            write_sites(f, &w.sites)?;
        }
        writeln!(f, "\nParks ({}):", self.parks.len())?;
        writeln!(f, "  {:>6} {:>10} {:>10}  blocker", "count", "total", "max")?;
        for p in &self.parks {
            let blocker = if p.blocker.is_empty() {
                "(none)"
            } else {
                &p.blocker
            };
            writeln!(
                f,
                "  {:>6} {:>10} {:>10}  {}",
                p.count,
                ns(p.total_ns),
                ns(p.max_ns),
                blocker
            )?;
            write_sites(f, &p.sites)?;
        }
        if self.native.is_empty() {
            return Ok(());
        }
        // Only recordings with native lock waits (the agent's nativelock) have them.
        writeln!(f, "\nNative locks ({}, sampled):", self.native.len())?;
        writeln!(f, "  {:>7} {:>10} {:>10}  lock", "samples", "total", "max")?;
        for n in &self.native {
            writeln!(
                f,
                "  {:>7} {:>10} {:>10}  {} {}",
                n.samples,
                ns(n.total_ns),
                ns(n.max_ns),
                n.function,
                n.lock
            )?;
            write_sites(f, &n.sites)?;
        }
        Ok(())
    }
}

impl fmt::Display for GcReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "GC pauses: {}", self.count)?;
        writeln!(f, "total:     {}", ns(self.total_ns))?;
        writeln!(f, "max:       {}", ns(self.max_ns))?;
        writeln!(f, "mean:      {}", ns(self.mean_ns))?;
        writeln!(
            f,
            "wall time: {} ({:.3}% in GC)",
            ns(self.wall_ns),
            self.wall_percent
        )?;
        let concurrent = self.pauses.iter().filter(|p| p.detail.concurrent).count();
        if concurrent > 0 {
            writeln!(f, "concurrent cycles: {concurrent} (not counted as pauses)")?;
        }
        Ok(())
    }
}

impl fmt::Display for AllocReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.by {
            AllocBy::Site => "site",
            AllocBy::Stack => "stack",
            AllocBy::Class => "class",
        };
        // Known only for the samples that carry their object's size.
        let known = |n: u64, of: u64, sizeless: u64| {
            if sizeless > 0 && sizeless == of {
                "-".to_string()
            } else {
                n.to_string()
            }
        };
        let sampled = if self.sizeless > 0 && self.sizeless == self.count {
            "object sizes not recorded".to_string()
        } else {
            format!("{} bytes", self.bytes)
        };
        writeln!(
            f,
            "Sampled allocations: {} ({sampled}), by {what}:",
            self.count
        )?;
        let objects = match self.sizeless {
            0 => format!("{} objects", self.est_objects),
            n if n == self.count => {
                "objects unknown (the samples do not record their object's size)".to_string()
            }
            n => format!(
                "{} objects (leaving out {n} samples without their object's size)",
                self.est_objects
            ),
        };
        writeln!(
            f,
            "Estimated allocated: {} bytes ({}), {objects}{}",
            self.est_bytes,
            bytes_text(self.est_bytes),
            if self.weights_recorded {
                ""
            } else {
                " (weights estimated from events.allocrate)"
            }
        )?;
        writeln!(
            f,
            "{:>14} {:>11} {:>7} {:>8} {:>12}  {what}",
            "est. bytes", "est. objs", "%", "samples", "sampled"
        )?;
        for r in &self.rows {
            write!(
                f,
                "{:>14} {:>11} {:>7.2} {:>8} {:>12}  {}",
                r.est_bytes,
                known(r.est_objects, r.count, r.sizeless),
                r.percent,
                r.count,
                known(r.bytes, r.count, r.sizeless),
                r.key
            )?;
            if !r.top_class.is_empty() {
                write!(f, "  ({})", r.top_class)?;
            }
            writeln!(f)?;
            if r.stack.len() > 1 {
                writeln!(f, "{:>58}{}", "<- ", r.stack[1..].join(" <- "))?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for AgeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Object ages: {} tracked objects freed, {} not freed",
            self.freed, self.live
        )?;
        write!(
            f,
            "{:>7} {:>7} {:>10} {:>10} {:>10} {:>10} ",
            "freed", "live", "p50 age", "max age", "p50 bytes", "max bytes"
        )?;
        for b in &self.ns_buckets {
            write!(f, "{:>7}", b.label)?;
        }
        writeln!(f, "  class")?;
        for r in &self.rows {
            let bytes = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |b| b.to_string());
            write!(
                f,
                "{:>7} {:>7} {:>10} {:>10} {:>10} {:>10} ",
                r.freed,
                r.live,
                opt_ns(r.p50_ns),
                opt_ns(r.max_ns),
                bytes(r.p50_bytes),
                bytes(r.max_bytes)
            )?;
            for n in &r.by_ns {
                write!(f, "{n:>7}")?;
            }
            writeln!(f, "  {}", r.class)?;
        }
        Ok(())
    }
}

impl fmt::Display for UserReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  event",
            "count", "min", "mean", "p50", "p99", "max", "scoped"
        )?;
        for r in &self.rows {
            let mean = r.interval_mean_ns.map(|m| m.round() as u64);
            let scoped = r.scoped_mean_ns.map(|m| m.round() as u64);
            writeln!(
                f,
                "{:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
                r.count,
                opt_ns(r.interval_min_ns),
                opt_ns(mean),
                opt_ns(r.interval_p50_ns),
                opt_ns(r.interval_p99_ns),
                opt_ns(r.interval_max_ns),
                opt_ns(scoped),
                r.name
            )?;
        }
        Ok(())
    }
}
