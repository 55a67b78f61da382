//! `jscope diff BASE NEW`: which methods' shares of the samples changed between
//! two recordings, as a table and as a differential flame graph; exact-trace
//! recordings go to [`crate::trace_diff`].

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use jscope_analysis::{diff_hot, hot_methods, CollapseOptions, Mode, Selection, StackCounts};
use jscope_flame::{render_diff_html, render_diff_svg, FlameGraph, Options};

use crate::analyze::{require_samples, selection};
use crate::args::{DiffArgs, Format, SourceArgs};
use crate::source::Loaded;

pub fn run(args: &DiffArgs) -> Result<()> {
    if crate::trace_diff::try_streamed(args)? {
        return Ok(());
    }
    let base = load_side("base", &args.base)?;
    let new = load_side("new", &args.new)?;
    if crate::trace_diff::applies(args, &base, &new) {
        return crate::trace_diff::run(args, &base, &new);
    }
    let mut sel = selection(&args.select)?;
    // One mode for both sides: comparing cpu shares with wall shares means nothing.
    if sel.mode.is_none() {
        sel.mode = Mode::primary(&base.rec).or_else(|| Mode::primary(&new.rec));
    }
    let (base_hot, base_counts) = side_table(&base, &sel, "base")?;
    let (new_hot, new_counts) = side_table(&new, &sel, "new")?;
    let mut diff = diff_hot(&base_hot, &new_hot);
    if let Some(out) = &args.output {
        let graphs = (graph_of(&base, &base_counts), graph_of(&new, &new_counts));
        write_graph(args, out, &base, &new, &sel, graphs)?;
    }
    diff.truncate(args.top);
    let mut w = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Text => write!(w, "{diff}")?,
        Format::Json => writeln!(w, "{}", serde_json::to_string_pretty(&diff)?)?,
    }
    w.flush()?;
    Ok(())
}

fn load_side(side: &str, path: &Path) -> Result<Loaded> {
    crate::analyze::load(Some(path), &SourceArgs::default(), None)
        .with_context(|| format!("{side} side"))
}

/// The side's hot-method table and the stack counts it was made of; an error
/// naming the side when it has no selected samples.
fn side_table(
    s: &Loaded,
    sel: &Selection,
    side: &str,
) -> Result<(jscope_analysis::HotMethods, StackCounts)> {
    require_samples(&s.rec, sel, &format!("the {side} side {}", s.title))?;
    let counts = sel.stack_counts(&s.rec);
    let mode = sel.mode_in(&s.rec);
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
