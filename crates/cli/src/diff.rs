//! `jscope diff BASE NEW`: which methods' shares of the samples changed between
//! two recordings, as a table and as a differential flame graph; exact-trace
//! recordings go to [`crate::trace_diff`].

use std::path::Path;

use anyhow::{bail, Context, Result};
use jscope_analysis::{diff_hot, hot_methods, CollapseOptions, Mode, Selection, StackCounts};
use jscope_flame::{render_diff_html, render_diff_svg, FlameGraph, Options};

use crate::analyze::{require_recorded, selection};
use crate::args::{DiffArgs, SourceArgs};
use crate::duration::parse_seconds;
use crate::source::{Loaded, Window};

pub fn run(args: &DiffArgs) -> Result<()> {
    if crate::trace_diff::try_streamed(args)? {
        return Ok(());
    }
    let (base, base_range) = load_side("base", &args.base, args)?;
    let (new, new_range) = load_side("new", &args.new, args)?;
    if crate::trace_diff::applies(args, &base, &new) {
        return crate::trace_diff::run(args, &base, &new);
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
    crate::analyze::warn_incomplete(&s.rec, mode, &counts, &title);
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
