//! `jscope diff BASE NEW` on two exact-trace recordings: per-method call
//! statistics with a significance test over the per-call durations, and the call
//! trees compared path by path (subtrees on one side only, paths whose calls or
//! durations changed).

use std::io::{self, BufWriter, Write};

use anyhow::{bail, Result};
use clap::Args;
use jscope_analysis::trace::{DiffOptions, TraceDiff, TraceOptions};

use crate::args::{DiffArgs, Format};
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
    /// Traces: leave out methods whose `pkg.Class.method` contains this (or matches
    /// it as a glob); their callees attach to the nearest shown caller. Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub hide: Vec<String>,
}

/// True when both sides are exact-trace recordings and nothing asks for samples.
pub fn applies(args: &DiffArgs, base: &Loaded, new: &Loaded) -> bool {
    args.select.mode.is_none() && !base.rec.traces.is_empty() && !new.rec.traces.is_empty()
}

pub fn run(args: &DiffArgs, base: &Loaded, new: &Loaded) -> Result<()> {
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
    let options = DiffOptions {
        alpha: t.alpha,
        min_change: t.min_change / 100.0,
    };
    let mut diff = TraceDiff::of(&base.rec, &new.rec, &TraceOptions::hiding(&t.hide), options);
    diff.truncate(args.top);
    let mut w = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Text => write!(w, "{diff}")?,
        Format::Json => writeln!(w, "{}", serde_json::to_string_pretty(&diff)?)?,
    }
    w.flush()?;
    Ok(())
}
