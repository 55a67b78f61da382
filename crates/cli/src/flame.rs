//! `jscope flame`: collapsed stacks drawn by jscope-flame.

use std::path::Path;

use anyhow::{Context, Result};
use jscope_analysis::{collapse, CollapseOptions, Mode, StackCounts};
use jscope_flame::{render_html, render_svg, FlameGraph, Options};
use jscope_format::Recording;

use crate::analyze::{load, selection};
use crate::args::FlameArgs;
use crate::source::Loaded;

pub fn run(args: &FlameArgs) -> Result<()> {
    let Loaded { rec, title } = load(args.file.as_deref(), &args.source, Some(&args.select))?;
    let sel = selection(&args.select)?;
    crate::analyze::require_samples(&rec, &sel, &title)?;
    let counts = sel.stack_counts(&rec);
    let opts = CollapseOptions {
        lines: args.lines,
        thread_roots: args.threads,
    };
    let graph = graph_of(&rec, &counts, opts);
    let mode = sel.mode_in(&rec).map_or("no", Mode::name);
    let options = Options {
        title: args.title.clone().unwrap_or(title),
        subtitle: format!("{} {mode} samples", counts.total),
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
