//! `jscope flame`: collapsed stacks drawn by jscope-flame.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use jscope_analysis::events::{weighted_stacks, EventFilter, EventWeight};
use jscope_analysis::{collapse, Annotation, CollapseOptions, Mode, StackCounts, ThreadMatcher};
use jscope_flame::{render_html, render_svg, FlameGraph, Options};
use jscope_format::Recording;

use crate::analyze::load;
use crate::output::with_stdout;
use crate::remote_profile::Remote;
use crate::select::selection;
use crate::select::SelectArgs;
use crate::source::{Loaded, SourceArgs};
use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope flame app.jsc -o app.html --mode wall --thread main")]
pub struct FlameArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output file; .svg gives a static SVG, anything else an HTML page.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Label frames with their line numbers.
    #[arg(long)]
    pub lines: bool,
    /// Put each thread's name at the root of its stacks.
    #[arg(long)]
    pub threads: bool,
    /// Draw icicles (roots at the top).
    #[arg(long)]
    pub inverted: bool,
    /// Title of the graph (default: the file name).
    #[arg(long)]
    pub title: Option<String>,
    /// Width of the image in pixels.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope collapsed app.jsc --lines > app.collapsed")]
pub struct CollapsedArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Label frames with their line numbers (`pkg.Class.method:123`).
    #[arg(long)]
    pub lines: bool,
    /// Put each thread's name at the root of its stacks.
    #[arg(long)]
    pub threads: bool,
    /// Mark how each Java frame ran, as async-profiler does: `_[0]` interpreted,
    /// `_[1]` C1, `_[j]` JIT-compiled, `_[i]` inlined and class frames (kernel
    /// frames always end in `_[k]`).
    #[arg(long)]
    pub annotate: bool,
}

pub fn run(args: &FlameArgs) -> Result<()> {
    // A collector merges the selected JVMs' stacks itself (not thread roots).
    let remote = match args.threads {
        true => None,
        false => Remote::of(args.file.as_deref(), &args.source, &args.select)?,
    };
    let (graph, title, subtitle) = match remote
        .map(|r| r.stacks(args.lines, Annotation::Kinds))
        .transpose()?
        .flatten()
    {
        Some(got) => {
            let mode = got.mode.map_or("no", Mode::name);
            let subtitle = format!("{} {mode} samples", got.graph.total());
            (got.graph, got.title, subtitle)
        }
        None => {
            let (Loaded { rec, title }, counts, subtitle) =
                counted(args.file.as_deref(), &args.source, &args.select)?;
            let opts = CollapseOptions {
                lines: args.lines,
                thread_roots: args.threads,
                // Frames carry their kind so the graph colours (and splits) them by it.
                annotate: Annotation::Kinds,
            };
            (graph_of(&rec, &counts, opts), title, subtitle)
        }
    };
    let options = Options {
        title: args.title.clone().unwrap_or(title),
        subtitle,
        width_px: args.width,
        inverted: args.inverted,
        ..Options::default()
    };
    let page = if is_svg(&args.output) {
        render_svg(&graph, &options)
    } else {
        render_html(&graph, &options)
    };
    std::fs::write(&args.output, page)
        .with_context(|| format!("cannot write {}", args.output.display()))
}

/// The recording and its counted stacks with a subtitle saying what they
/// count: samples of a mode, or with `--mode alloc`/`lock` event stacks
/// weighted by estimated bytes or contention time (`jscope flame`, `collapsed`).
pub(crate) fn counted(
    file: Option<&Path>,
    source: &SourceArgs,
    select: &SelectArgs,
) -> Result<(Loaded, StackCounts, String)> {
    let weighted = select.mode.as_deref().and_then(EventWeight::parse);
    let Some(what) = weighted else {
        let loaded = load(file, source, Some(select))?;
        let sel = selection(select)?;
        crate::analyze::require_samples(&loaded.rec, &sel, &loaded.title)?;
        let counts = sel.stack_counts(&loaded.rec);
        let mode = sel.mode_in(&loaded.rec);
        crate::output::warn_incomplete(&loaded.rec, mode, &counts, &loaded.title);
        let subtitle = format!("{} {} samples", counts.total, mode.map_or("no", Mode::name));
        return Ok((loaded, counts, subtitle));
    };
    // The window selects events here, not samples (load's check is about samples).
    let mut loaded = load(file, source, None)?;
    let (counts, subtitle) = event_counts(&mut loaded.rec, select, what, &loaded.title)?;
    Ok((loaded, counts, subtitle))
}

/// `--mode alloc` and `--mode lock`: the event stacks weighted by estimated
/// bytes or contention time, and the graph's subtitle; an allocation's stack
/// ends in the allocated class.
fn event_counts(
    rec: &mut Recording,
    select: &SelectArgs,
    what: EventWeight,
    title: &str,
) -> Result<(StackCounts, String)> {
    if !select.state.is_empty() {
        bail!(
            "--state selects samples; --mode {} draws events",
            what.name()
        );
    }
    let filter = EventFilter {
        thread: select.thread.as_deref().map(ThreadMatcher::new),
        from_s: select.from,
        to_s: select.to,
        requests: crate::select::requests(select),
        ..Default::default()
    };
    filter.validate()?;
    let counts = weighted_stacks(rec, &filter, what);
    if counts.total == 0 {
        let how = match what {
            EventWeight::Alloc => "record with --events alloc (the agent's events=alloc)",
            EventWeight::Lock => {
                "record with --events monitors,park (the agent's events=monitors+park)"
            }
            EventWeight::NativeMem => "record with --nativemem (the agent's nativemem)",
            EventWeight::Leak => {
                "no sampled native block was left unfreed (record with --nativemem)"
            }
            EventWeight::NativeLock => "record with --nativelock (the agent's nativelock)",
        };
        bail!("{title} has no {} events to draw; {how}", what.name());
    }
    let subtitle = format!("{} {}", counts.total, what.unit());
    Ok((counts, subtitle))
}

/// The flame graph of a recording's counted stacks.
pub(crate) fn graph_of(rec: &Recording, counts: &StackCounts, opts: CollapseOptions) -> FlameGraph {
    let mut graph = FlameGraph::new();
    for (frames, n) in collapse(rec, counts, opts).stacks {
        graph.add(&frames, n);
    }
    graph
}

/// Whether an output path asks for SVG rather than an HTML page.
pub(crate) fn is_svg(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
}

pub fn collapsed(args: &CollapsedArgs) -> Result<()> {
    if !args.threads {
        let remote = Remote::of(args.file.as_deref(), &args.source, &args.select)?;
        let stacks = remote
            .map(|r| r.stacks(args.lines, annotation(args.annotate)))
            .transpose()?;
        if let Some(got) = stacks.flatten() {
            return with_stdout(|w| w.write_all(got.graph.to_collapsed().as_bytes()));
        }
    }
    // Samples, or with --mode alloc|lock weighted event stacks (as jscope flame).
    let (Loaded { rec, .. }, counts, _) =
        counted(args.file.as_deref(), &args.source, &args.select)?;
    let opts = CollapseOptions {
        lines: args.lines,
        thread_roots: args.threads,
        annotate: annotation(args.annotate),
    };
    let stacks = collapse(&rec, &counts, opts);
    with_stdout(|w| stacks.write_to(w))
}

/// What `collapsed --annotate` marks: each Java frame's tier, as async-profiler does.
fn annotation(annotate: bool) -> Annotation {
    match annotate {
        true => Annotation::Tiers,
        false => Annotation::None,
    }
}
