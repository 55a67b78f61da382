//! The commands that read a recording: report, collapsed, callgraph, threads, info.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use jscope_analysis::{
    call_graph, count_mode, hot_methods, threads_at, CallGraph, DotOptions, Info, Mode, Selection,
    ThreadMatcher,
};
use jscope_format::{Overview, Recording};
use serde::Serialize;

use crate::duration::parse_seconds;
use crate::output::{warn_incomplete, with_stdout, Format};
use crate::remote_profile::Remote;
use crate::select::{selection, SelectArgs};
use crate::source::{self, Loaded, SourceArgs, Window};
use clap::Args;

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  jscope report app.jsc --top 20 --thread worker --state runnable"
)]
pub struct ReportArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Number of methods to list.
    #[arg(short = 'n', long, default_value_t = 30)]
    pub top: usize,
    #[command(flatten)]
    pub select: SelectArgs,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope callgraph app.jsc --dot | dot -Tsvg > callgraph.svg")]
pub struct CallgraphArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Write Graphviz dot instead of text.
    #[arg(long, conflicts_with = "format")]
    pub dot: bool,
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Leave out methods on fewer than this percentage of samples.
    #[arg(long, default_value_t = 0.5, value_name = "PERCENT")]
    pub node_min: f64,
    /// Leave out calls on fewer than this percentage of samples.
    #[arg(long, default_value_t = 0.1, value_name = "PERCENT")]
    pub edge_min: f64,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope threads app.jsc --at 12.5")]
pub struct ThreadsArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Seconds from the start; the nearest snapshot is shown (default: the last).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub at: Option<f64>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope info app.jsc --format json")]
pub struct InfoArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Reads the recording of a command: a file or a collector's JVM, fetching only the
/// `--from`/`--to` window of collector data.
pub fn load(file: Option<&Path>, src: &SourceArgs, sel: Option<&SelectArgs>) -> Result<Loaded> {
    let window = sel.map_or_else(Window::default, |s| Window {
        from_s: s.from,
        to_s: s.to,
    });
    source::load(file, src, window)
}

fn print_json(value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    with_stdout(|w| writeln!(w, "{text}"))
}

/// Fails with why a sample view would be empty, and what to record instead, when
/// the recording was made without the selected mode (or without sampling). When the
/// mode was recorded but caught nothing (a short run, or damage before the first
/// sample) the view goes on with a note.
pub fn require_samples(rec: &Recording, sel: &Selection, title: &str) -> Result<()> {
    if let Some(m) = require_recorded(rec, sel, title)? {
        if !note_empty_window(rec, sel, m, title) {
            note_empty_selection(rec, sel, m, title);
        }
    }
    Ok(())
}

/// A note when `--thread` or `--state` leaves none of the recording's `m`
/// samples, saying which: a thread pattern that names no thread (with some that
/// exist), or the states the samples have instead (cpu and wall samples carry
/// `unknown` unless the agent recorded states).
fn note_empty_selection(rec: &Recording, sel: &Selection, m: Mode, title: &str) {
    if sel.samples(rec).next().is_some() {
        return;
    }
    if let Some(matcher) = &sel.thread {
        if !rec.threads.values().any(|t| matcher.matches(&t.name)) {
            let pattern = match matcher {
                ThreadMatcher::Substring(s) => s.clone(),
                ThreadMatcher::Glob(p) => p.iter().collect(),
            };
            let mut names: Vec<&str> = rec.threads.values().map(|t| t.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            let more = names.len().saturating_sub(8);
            names.truncate(8);
            let more = if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            };
            eprintln!(
                "jscope: note: --thread '{pattern}' matches no thread of {title} (its threads: {}{more})",
                names.join(", ")
            );
            return;
        }
    }
    if sel.states.is_empty() {
        return;
    }
    let any_state = Selection {
        states: Vec::new(),
        ..sel.clone()
    };
    let mut by_state: std::collections::BTreeMap<String, u64> = Default::default();
    for s in any_state.samples(rec) {
        *by_state
            .entry(jscope_format::thread_state::classify(s.state).to_string())
            .or_default() += 1;
    }
    if by_state.is_empty() {
        return;
    }
    let has: Vec<String> = by_state.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let wanted: Vec<String> = sel.states.iter().map(|c| c.to_string()).collect();
    let why = if by_state.keys().all(|k| k == "unknown") {
        "; cpu and wall samples carry a state only when the agent recorded it, snapshots always do"
    } else {
        ""
    };
    eprintln!(
        "jscope: note: no {m} sample of {title} is in state {} (they are: {}{why})",
        wanted.join(","),
        has.join(", ")
    );
}

/// [`require_samples`] without the note on an empty window (for `diff`, whose
/// error on an empty side says it), giving the mode the view will show.
pub fn require_recorded(rec: &Recording, sel: &Selection, title: &str) -> Result<Option<Mode>> {
    let recorded = jscope_analysis::sampled_modes(&rec.header.modes);
    // Samples of each mode in the whole recording, before any filter; counted once.
    let counts = Mode::ALL.map(|m| (m, count_mode(rec, m)));
    let samples_of = |m: Mode| counts.iter().find(|(c, _)| *c == m).map_or(0, |c| c.1);
    let has: Vec<String> = counts
        .iter()
        .filter(|&&(_, n)| n > 0)
        .map(|(m, n)| format!("{n} {m}"))
        .collect();
    let wanted = sel
        .mode
        .or_else(|| counts.iter().find(|c| c.1 > 0).map(|c| c.0))
        .or_else(|| recorded.first().and_then(|m| m.parse().ok()));
    if recorded.is_empty() && has.is_empty() && rec.damage.is_some() {
        // A JFR file's modes are what it was read to hold: cut before its first
        // sample, it says nothing of how it was recorded.
        bail!("{title} holds no samples before its damage (the warning above says where)");
    }
    match wanted {
        None if recorded.is_empty() => {
            bail!("{title} holds no samples: {}", no_sampling(rec, Mode::Cpu))
        }
        Some(m) if samples_of(m) == 0 && !recorded.contains(&m.name()) => {
            if has.is_empty() && recorded.is_empty() {
                bail!("{title} has no {m} samples: {}", no_sampling(rec, m));
            }
            let it_has = if has.is_empty() {
                format!("it was recorded with --mode {}", recorded.join("+"))
            } else {
                format!("it has {}", has.join(", "))
            };
            bail!(
                "{title} has no {m} samples ({it_has}); record with --mode {} to get them, or choose another --mode",
                with_mode(rec, m)
            )
        }
        Some(m) if samples_of(m) == 0 && rec.damage.is_none() => {
            eprintln!(
                "jscope: note: {title} has no {m} samples although {m} sampling was on (the program ran {:.2} s; a short or idle run catches none)",
                rec.duration_ns() as f64 / 1e9
            );
            Ok(None)
        }
        Some(m) => Ok(Some(m)),
        None => Ok(None),
    }
}

/// A note when `--from`/`--to`/`--since` leaves none of the recording's `m`
/// samples (a window past its end, or `--since 10m` on an older file), instead of
/// an empty view with no word why.
fn note_empty_window(rec: &Recording, sel: &Selection, m: Mode, title: &str) -> bool {
    if sel.from_s.is_none() && sel.to_s.is_none() {
        return false;
    }
    let window = Selection {
        mode: Some(m),
        from_s: sel.from_s,
        to_s: sel.to_s,
        ..Selection::default()
    };
    if window.samples(rec).next().is_some() {
        return false;
    }
    let bound = |b: Option<f64>| b.map_or(String::new(), |s| format!("{s:.3}"));
    eprintln!(
        "jscope: note: {title} has no {m} samples in the window {}..{} s (seconds from its start; --since and wall-clock times are turned into those); it runs from 0 to {:.3} s",
        bound(sel.from_s),
        bound(sel.to_s),
        rec.duration_ns() as f64 / 1e9
    );
    true
}

/// The `--mode` that adds `m` to what the recording was made with (`cpu+wall`).
fn with_mode(rec: &Recording, m: Mode) -> String {
    let modes: Vec<&str> = jscope_analysis::sampled_modes(&rec.header.modes)
        .into_iter()
        .filter(|s| *s != m.name())
        .collect();
    if modes.is_empty() {
        m.name().to_string()
    } else {
        format!("{}+{m}", modes.join("+"))
    }
}

/// What a recording without samples holds instead, and how to get samples.
fn no_sampling(rec: &Recording, m: Mode) -> String {
    let mut holds = Vec::new();
    if !rec.traces.is_empty() || !rec.call_aggregates.is_empty() {
        holds.push("traces (see jscope tree / stats)");
    }
    if !rec.events.is_empty() {
        holds.push("events (see jscope events / locks / gc / alloc)");
    }
    let what = if holds.is_empty() {
        "it was recorded without sampling".to_string()
    } else {
        format!(
            "it was recorded without sampling and holds {}",
            holds.join(" and ")
        )
    };
    format!("{what}; record with --mode {m} for samples")
}

pub fn report(args: &ReportArgs) -> Result<()> {
    // A collector merges the selected JVMs' tables itself.
    let remote = Remote::of(args.file.as_deref(), &args.source, &args.select)?;
    if let Some(hot) = remote.map(|r| r.hot(args.top)).transpose()?.flatten() {
        return args.format.print(&hot);
    }
    let Loaded { rec, title } = load(args.file.as_deref(), &args.source, Some(&args.select))?;
    let sel = selection(&args.select)?;
    require_samples(&rec, &sel, &title)?;
    let (mode, counts) = (sel.mode_in(&rec), sel.stack_counts(&rec));
    warn_incomplete(&rec, mode, &counts, &title);
    let mut hot = hot_methods(&rec, mode, &counts);
    hot.truncate(args.top);
    args.format.print(&hot)
}

pub fn callgraph(args: &CallgraphArgs) -> Result<()> {
    let Loaded { rec, title } = load(args.file.as_deref(), &args.source, Some(&args.select))?;
    let sel = selection(&args.select)?;
    require_samples(&rec, &sel, &title)?;
    let counts = sel.stack_counts(&rec);
    warn_incomplete(&rec, sel.mode_in(&rec), &counts, &title);
    let graph = call_graph(&rec, &counts);
    if args.dot {
        let opts = DotOptions {
            node_min_percent: args.node_min,
            edge_min_percent: args.edge_min,
            title,
        };
        return with_stdout(|w| graph.write_dot(&opts, w));
    }
    match args.format.unwrap_or_default() {
        Format::Text => with_stdout(|w| write_graph_text(&graph, args.node_min, w)),
        Format::Json => print_json(&graph),
    }
}

/// Each method above the threshold with the calls it makes, hottest first.
fn write_graph_text(g: &CallGraph, node_min: f64, w: &mut dyn Write) -> io::Result<()> {
    let pct = |n: u64| {
        if g.total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / g.total as f64
        }
    };
    writeln!(w, "{} samples", g.total)?;
    for (i, node) in g
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| pct(n.total_samples) >= node_min)
    {
        writeln!(
            w,
            "{:>6.2}% total {:>6.2}% self  {}",
            pct(node.total_samples),
            pct(node.self_samples),
            node.label
        )?;
        for e in g.edges.iter().filter(|e| e.caller == i) {
            writeln!(
                w,
                "          -> {:>6.2}%  {}",
                pct(e.samples),
                g.nodes[e.callee].label
            )?;
        }
    }
    Ok(())
}

pub fn threads(args: &ThreadsArgs) -> Result<()> {
    let Loaded { rec, title } = load(args.file.as_deref(), &args.source, None)?;
    if let Some(at) = args.at {
        let end = rec.duration_ns() as f64 / 1e9;
        if at > end && !rec.snapshots.is_empty() {
            bail!("--at {at} is past the end of {title}, which lasts {end:.2} s; choose --at between 0 and {end:.2}");
        }
    }
    let view = threads_at(&rec, args.at)?;
    args.format.print(&view)
}

pub fn info(args: &InfoArgs) -> Result<()> {
    let info = match (&args.file, &args.source.data, &args.source.collector) {
        // A jscope file is counted from its chunk summaries, without decoding its
        // events (a JFR file is read whole, below).
        (Some(path), None, None)
            if !crate::source::is_jfr_file(path)? && !crate::source::is_session(path)? =>
        {
            let o = Overview::read_file(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if let Some(damage) = &o.rec.damage {
                eprintln!(
                    "jscope: warning: {} is {damage}; read up to there",
                    path.display()
                );
            }
            crate::trace::warn_incomplete(&o.rec);
            Info::of_overview(&o)
        }
        _ => {
            let rec = load(args.file.as_deref(), &args.source, None)?.rec;
            crate::trace::warn_incomplete(&rec);
            Info::of(&rec)
        }
    };
    args.format.print(&info)
}
