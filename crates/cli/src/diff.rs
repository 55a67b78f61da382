//! `jscope diff BASE NEW`: which methods' shares of the samples changed between
//! two recordings, as a table and as a differential flame graph; on two exact-trace
//! recordings, per-method call statistics with a significance test over the
//! per-call durations, and the call trees compared path by path (subtrees on one
//! side only, paths whose calls or durations changed).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use jscope_analysis::trace::{DiffOptions, TraceDiff, TraceOptions};
use jscope_analysis::{diff_hot, hot_methods, CollapseOptions, Mode, Selection, StackCounts};
use jscope_flame::{render_diff_html, render_diff_svg, FlameGraph, Options};
use jscope_format::{ChunkReader, Recording};

use crate::analyze::require_recorded;
use crate::duration::{parse_duration, parse_seconds};
use crate::output::Format;
use crate::select::{selection, SelectArgs};
use crate::source::{Loaded, SourceArgs, Window};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  jscope diff before.jsc after.jsc --top 20\n  jscope diff before.jsc after.jsc --mode wall --thread worker -o diff.html\n  jscope diff --collector http://127.0.0.1:7080 4242 4377 -o diff.html\n  jscope diff --collector http://127.0.0.1:7080 4242@0..60 4242@60..120\n  jscope diff --collector http://127.0.0.1:7080 version=1.4 version=1.5\n  jscope diff traced-before.jsc traced-after.jsc --format json"
)]
pub struct DiffArgs {
    /// The base side, the "before": a recording (.jsc or JFR), or with --collector/--data a
    /// JVM's id or pid, or `service=NAME` and/or labels `K=V` joined by commas (every
    /// matching JVM, merged); either may end in @FROM..TO (seconds from its start,
    /// either bound may be left out) to take only that time range.
    pub base: PathBuf,
    /// The new side, the "after", given as BASE is (e.g. 4242@0..30 and 4242@30..60).
    pub new: PathBuf,
    /// Both sides are JVMs of this running collector, e.g. http://127.0.0.1:7080.
    #[arg(long, value_name = "URL", conflicts_with = "data")]
    pub collector: Option<String>,
    /// Both sides are JVMs of this collector data directory (`jscope serve --data DIR`).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The collector's token (`jscope serve --token`).
    #[arg(long, value_name = "TOKEN", requires = "collector")]
    pub token: Option<String>,
    /// Number of methods to list (the largest changes).
    #[arg(short = 'n', long, default_value_t = 30)]
    pub top: usize,
    /// The same selection is applied to both sides; without --mode, the base's
    /// first mode with samples (cpu, wall, snapshot) is used for both.
    #[command(flatten)]
    pub select: SelectArgs,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Also write a differential flame graph: .svg gives a static SVG, anything
    /// else an HTML page (the new side's shape; red grew, blue shrank).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Title of the flame graph (default: BASE vs NEW).
    #[arg(long)]
    pub title: Option<String>,
    /// Exact-trace recordings on both sides (and no --mode) get a statistics and
    /// call-tree diff instead.
    #[command(flatten)]
    pub trace: TraceDiffArgs,
}

pub fn run(args: &DiffArgs) -> Result<()> {
    if try_streamed_traces(args)? {
        return Ok(());
    }
    let (base, base_range) = load_side("base", &args.base, args)?;
    let (new, new_range) = load_side("new", &args.new, args)?;
    if traces_apply(args, &base, &new) {
        return diff_traces(args, &base, &new);
    }
    let mut sel = selection(&args.select)?;
    // One mode for both sides: comparing cpu shares with wall shares means nothing.
    if sel.mode.is_none() {
        sel.mode = Mode::primary(&base.rec).or_else(|| Mode::primary(&new.rec));
    }
    let (base_hot, base_counts) = side_table(&base, &base_range.narrow(&sel), "base")?;
    let (new_hot, new_counts) = side_table(&new, &new_range.narrow(&sel), "new")?;
    let mut diff = diff_hot(&base_hot, &new_hot);
    if let Some(out) = &args.output {
        let graphs = (graph_of(&base, &base_counts), graph_of(&new, &new_counts));
        write_graph(args, out, &base, &new, &sel, graphs)?;
    }
    diff.truncate(args.top);
    args.format.print(&diff)
}

/// A side's own time range (`SIDE@FROM..TO`), in seconds from its start.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Range {
    from_s: Option<f64>,
    to_s: Option<f64>,
}

impl Range {
    /// The selection with the side's range in place of `--from`/`--to`.
    fn narrow(&self, sel: &Selection) -> Selection {
        let mut s = sel.clone();
        if *self != Range::default() {
            s.from_s = self.from_s;
            s.to_s = self.to_s;
        }
        s
    }
}

/// `SIDE` or `SIDE@FROM..TO`: the side (a file, or a collector's JVM id or pid) and
/// its range; a suffix that is not a range stays part of the side.
fn split_side(spec: &str) -> Result<(&str, Range)> {
    let Some((side, range)) = spec.rsplit_once('@') else {
        return Ok((spec, Range::default()));
    };
    let Some((from, to)) = range.split_once("..") else {
        return Ok((spec, Range::default()));
    };
    let bound = |t: &str| -> Result<Option<f64>> {
        if t.trim().is_empty() {
            return Ok(None);
        }
        parse_seconds(t).map(Some).map_err(|e| {
            anyhow::anyhow!(
                "{e} in {spec:?}: give SIDE@FROM..TO, seconds from its start (e.g. 4242@0..30)"
            )
        })
    };
    let r = Range {
        from_s: bound(from)?,
        to_s: bound(to)?,
    };
    if let (Some(f), Some(t)) = (r.from_s, r.to_s) {
        if t <= f {
            bail!("the range of {spec:?} ends before it starts");
        }
    }
    if side.is_empty() {
        bail!("{spec:?} names no recording or JVM before the @");
    }
    Ok((side, r))
}

/// A side: a recording file, or with `--collector`/`--data` a collector's JVM; only
/// its range's data is fetched from a collector.
fn load_side(side: &str, spec: &Path, args: &DiffArgs) -> Result<(Loaded, Range)> {
    let text = spec.to_string_lossy();
    let (what, range) = split_side(&text).with_context(|| format!("{side} side"))?;
    let remote = args.collector.is_some() || args.data.is_some();
    let mut src = SourceArgs {
        data: args.data.clone(),
        collector: args.collector.clone(),
        jvm: remote.then(|| what.to_string()),
        token: args.token.clone(),
        ..SourceArgs::default()
    };
    if remote && what.contains('=') {
        select_by_tags(&mut src, what);
    }
    let file = (!remote).then(|| Path::new(what));
    let window = Window {
        from_s: range.from_s.or(args.select.from),
        to_s: range.to_s.or(args.select.to),
    };
    let mut loaded =
        crate::source::load(file, &src, window).with_context(|| format!("{side} side"))?;
    if range != Range::default() {
        let bound = |b: Option<f64>| b.map_or(String::new(), |s| format!("{s}"));
        loaded.title = format!(
            "{} {}..{} s",
            loaded.title,
            bound(range.from_s),
            bound(range.to_s)
        );
    }
    Ok((loaded, range))
}

/// A side given as `service=NAME` and/or labels `K=V`, joined by commas (all must
/// match): every JVM of the collector that matches, merged into one side.
fn select_by_tags(src: &mut SourceArgs, what: &str) {
    src.jvm = Some("all".to_string());
    for tag in what.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match tag.strip_prefix("service=") {
            Some(service) => src.service = Some(service.to_string()),
            None => src.label.push(tag.to_string()),
        }
    }
}

/// The side's hot-method table and the stack counts it was made of; an error
/// naming the side when it has no selected samples.
fn side_table(
    s: &Loaded,
    sel: &Selection,
    side: &str,
) -> Result<(jscope_analysis::HotMethods, StackCounts)> {
    let title = format!("the {side} side {}", s.title);
    require_recorded(&s.rec, sel, &title)?;
    let counts = sel.stack_counts(&s.rec);
    let mode = sel.mode_in(&s.rec);
    crate::output::warn_incomplete(&s.rec, mode, &counts, &title);
    if counts.total == 0 {
        bail!(
            "the {side} side {} has no {} samples{}; nothing to compare",
            s.title,
            mode.map_or("stack", Mode::name),
            if sel.thread.is_some()
                || !sel.states.is_empty()
                || sel.from_s.is_some()
                || sel.to_s.is_some()
            {
                " in the selection (--thread, --state, --from, --to)"
            } else {
                ""
            }
        );
    }
    Ok((hot_methods(&s.rec, mode, &counts), counts))
}

fn graph_of(s: &Loaded, counts: &StackCounts) -> FlameGraph {
    // Unannotated: a method interpreted on one side and compiled on the other is
    // one method that changed, not one gone and one new.
    crate::flame::graph_of(&s.rec, counts, CollapseOptions::default())
}

fn write_graph(
    args: &DiffArgs,
    out: &Path,
    base: &Loaded,
    new: &Loaded,
    sel: &Selection,
    (base_graph, new_graph): (FlameGraph, FlameGraph),
) -> Result<()> {
    let mode = sel.mode.map_or("no", Mode::name);
    let options = Options {
        title: args
            .title
            .clone()
            .unwrap_or_else(|| format!("{} vs {}", base.title, new.title)),
        subtitle: format!(
            "{mode} samples: base {}, new {}; width is the new side, colour the change of share (red grew, blue shrank)",
            base_graph.total(),
            new_graph.total()
        ),
        ..Options::default()
    };
    let page = if crate::flame::is_svg(out) {
        render_diff_svg(&new_graph, &base_graph, &options)
    } else {
        render_diff_html(&new_graph, &base_graph, &options)
    };
    std::fs::write(out, page).with_context(|| format!("cannot write {}", out.display()))
}

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
    #[arg(long, value_name = "D", default_value = "1us", value_parser = parse_duration)]
    pub min_delta: std::time::Duration,
    /// Traces: leave out methods whose `pkg.Class.method` contains this (or matches
    /// it as a glob); their callees attach to the nearest shown caller. Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub hide: Vec<String>,
}

/// True when both sides are exact-trace recordings and nothing asks for samples.
fn traces_apply(args: &DiffArgs, base: &Loaded, new: &Loaded) -> bool {
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
fn try_streamed_traces(args: &DiffArgs) -> Result<bool> {
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
    let options = trace_options(args)?;
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

fn trace_options(args: &DiffArgs) -> Result<DiffOptions> {
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
fn diff_traces(args: &DiffArgs, base: &Loaded, new: &Loaded) -> Result<()> {
    let diff = TraceDiff::of(
        &base.rec,
        &new.rec,
        &TraceOptions::hiding(&args.trace.hide),
        trace_options(args)?,
    );
    write_diff(args, diff)
}

fn write_diff(args: &DiffArgs, mut diff: TraceDiff) -> Result<()> {
    diff.truncate(args.top);
    args.format.print(&diff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from_s: Option<f64>, to_s: Option<f64>) -> Range {
        Range { from_s, to_s }
    }

    #[test]
    fn a_side_may_end_in_a_range_of_seconds() {
        let ok = |spec| split_side(spec).unwrap();
        assert_eq!(ok("base.jsc"), ("base.jsc", Range::default()));
        assert_eq!(ok("4242@0..30"), ("4242", range(Some(0.0), Some(30.0))));
        assert_eq!(ok("4242@12.5.."), ("4242", range(Some(12.5), None)));
        assert_eq!(ok("vm-1-2@..10s"), ("vm-1-2", range(None, Some(10.0))));
        // An @ without a range is part of the name.
        assert_eq!(ok("runs/a@b.jsc"), ("runs/a@b.jsc", Range::default()));
        let err = |spec| split_side(spec).unwrap_err().to_string();
        assert_eq!(
            err("4242@x..1"),
            "bad time `x` (expected seconds from the start, e.g. 12.5) in \"4242@x..1\": give SIDE@FROM..TO, seconds from its start (e.g. 4242@0..30)"
        );
        assert_eq!(
            err("4242@5..2"),
            "the range of \"4242@5..2\" ends before it starts"
        );
        assert_eq!(
            err("@0..1"),
            "\"@0..1\" names no recording or JVM before the @"
        );
    }

    #[test]
    fn a_sides_range_replaces_from_and_to() {
        let sel = Selection {
            from_s: Some(1.0),
            to_s: Some(2.0),
            ..Selection::default()
        };
        let own = range(Some(5.0), None).narrow(&sel);
        assert_eq!((own.from_s, own.to_s), (Some(5.0), None));
        let shared = Range::default().narrow(&sel);
        assert_eq!((shared.from_s, shared.to_s), (Some(1.0), Some(2.0)));
    }
}
