//! `jscope diff BASE NEW` on two exact-trace recordings: per-method call
//! statistics with a significance test over the per-call durations, and the call
//! trees compared path by path (subtrees on one side only, paths whose calls or
//! durations changed).

use anyhow::{bail, Context, Result};
use clap::Args;
use jscope_analysis::trace::{DiffOptions, TraceDiff, TraceOptions};
use jscope_format::{ChunkReader, Recording};

use crate::args::DiffArgs;
use crate::source::Loaded;

/// The options of `jscope diff` that apply to exact-trace recordings.
#[derive(Debug, Args, Clone)]
pub struct TraceDiffArgs {
    /// Traces: false discovery rate of the Benjamini-Hochberg procedure over the
    /// per-method (and per call path) tests.
    #[arg(long, value_name = "Q", default_value_t = 0.01)]
    pub alpha: f64,
    /// Traces: smallest change of the median duration (or of a call count), in
    /// percent, that is reported as a change.
    #[arg(long, value_name = "PERCENT", default_value_t = 10.0)]
    pub min_change: f64,
    /// Traces: smallest change of the median duration that is reported (probes
    /// cost tens of ns, clocks tick in 10-40 ns steps).
    #[arg(long, value_name = "D", default_value = "1us", value_parser = crate::duration::parse_duration)]
    pub min_delta: std::time::Duration,
    /// Traces: leave out methods whose `pkg.Class.method` contains this (or matches
    /// it as a glob); their callees attach to the nearest shown caller. Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub hide: Vec<String>,
}

/// True when both sides are exact-trace recordings and nothing asks for samples.
pub fn applies(args: &DiffArgs, base: &Loaded, new: &Loaded) -> bool {
    args.select.mode.is_none() && !base.rec.traces.is_empty() && !new.rec.traces.is_empty()
}

/// Whether a recording's header says the agent traced events (`trace.mode`),
/// read from its first chunk only.
fn traced_events(bytes: &[u8]) -> bool {
    let Ok(mut chunks) = ChunkReader::new(bytes) else {
        return false;
    };
    let Some(first) = chunks.next() else {
        return false;
    };
    let end = first.offset as usize + first.stored_len;
    Recording::from_bytes(&bytes[..end.min(bytes.len())])
        .is_ok_and(|r| r.header.extra("trace.mode") == Some("events"))
}

/// Streams the diff when both files' headers say they hold trace events and
/// nothing asks for samples: the events are not kept, only the per-method and
/// per-path samples. Ok(false) leaves the diff to the decoded path.
pub fn try_streamed(args: &DiffArgs) -> Result<bool> {
    // Sides from a collector, or a given mode, take the decoded path.
    if args.select.mode.is_some() || args.collector.is_some() || args.data.is_some() {
        return Ok(false);
    }
    // A file that cannot be read is left to the decoded path, which words the error.
    let Ok(base) = std::fs::read(&args.base) else {
        return Ok(false);
    };
    if !traced_events(&base) {
        return Ok(false);
    }
    let Ok(new) = std::fs::read(&args.new) else {
        return Ok(false);
    };
    if !traced_events(&new) {
        return Ok(false);
    }
    let options = options(args)?;
    let (diff, brec, nrec) = TraceDiff::from_bytes(
        &base,
        &new,
        &TraceOptions::hiding(&args.trace.hide),
        options,
    )
    .context("cannot read the recordings")?;
    for (path, rec) in [(&args.base, &brec), (&args.new, &nrec)] {
        if let Some(damage) = &rec.damage {
            eprintln!(
                "jscope: warning: {} is {damage}; read up to there",
                path.display()
            );
        }
    }
    for (side, path, calls) in [
        ("base", &args.base, diff.base_calls),
        ("new", &args.new, diff.new_calls),
    ] {
        if calls == 0 {
            bail!(
                "the {side} side {} has no traced calls to compare",
                path.display()
            );
        }
    }
    write_diff(args, diff)?;
    Ok(true)
}

fn options(args: &DiffArgs) -> Result<DiffOptions> {
    let t = &args.trace;
    if !(t.alpha > 0.0 && t.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1 (got {})", t.alpha);
    }
    if !(t.min_change >= 0.0 && t.min_change.is_finite()) {
        bail!(
            "--min-change must be a percentage >= 0 (got {})",
            t.min_change
        );
    }
    if args.output.is_some() {
        bail!("differential flame graphs (-o) are drawn from samples; these are exact-trace recordings (give --mode to compare their samples)");
    }
    Ok(DiffOptions {
        alpha: t.alpha,
        min_change: t.min_change / 100.0,
        min_delta_ns: t.min_delta.as_nanos() as u64,
    })
}

/// The diff of two decoded recordings (traces started on a running JVM, whose
/// headers do not say so).
pub fn run(args: &DiffArgs, base: &Loaded, new: &Loaded) -> Result<()> {
    let diff = TraceDiff::of(
        &base.rec,
        &new.rec,
        &TraceOptions::hiding(&args.trace.hide),
        options(args)?,
    );
    write_diff(args, diff)
}

fn write_diff(args: &DiffArgs, mut diff: TraceDiff) -> Result<()> {
    diff.truncate(args.top);
    args.format.print(&diff)
}
