//! The commands over exact-tracing recordings: `tree` and `stats` (their exports
//! are `jscope export`'s, in export.rs).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use jscope_analysis::trace::{CallTree, SortKey, TraceOptions, TraceStats, TreeView};
use jscope_analysis::ThreadMatcher;
use jscope_format::Recording;

use crate::args::Format;
use crate::duration::parse_duration;

/// Which methods the trace commands leave out.
#[derive(Debug, Args, Clone, Default)]
pub struct HideArgs {
    /// Leave out methods whose `pkg.Class.method` contains this (or matches it as a
    /// glob with * and ?); their callees attach to the nearest shown caller and their
    /// own time counts as its self time. Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub hide: Vec<String>,
}

impl HideArgs {
    fn options(&self) -> TraceOptions {
        TraceOptions::hiding(&self.hide)
    }
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  jscope tree app.jsc --thread main --depth 6 --min-duration 1ms"
)]
pub struct TreeArgs {
    /// The recording (.jsc) to read.
    pub file: PathBuf,
    /// Only threads whose name contains this, or matches it as a glob with * or ?.
    #[arg(short, long, value_name = "NAME")]
    pub thread: Option<String>,
    /// Levels to show below the virtual root (1 = each thread's root calls).
    #[arg(short, long, value_name = "N")]
    pub depth: Option<usize>,
    /// Leave out calls shorter than this (e.g. 500us, 2ms), with what they called.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub min_duration: Option<std::time::Duration>,
    #[command(flatten)]
    pub hide: HideArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum SortArg {
    #[default]
    Total,
    #[value(name = "self")]
    SelfTime,
    Calls,
    Max,
    Stddev,
}

impl From<SortArg> for SortKey {
    fn from(s: SortArg) -> SortKey {
        match s {
            SortArg::Total => SortKey::Total,
            SortArg::SelfTime => SortKey::SelfTime,
            SortArg::Calls => SortKey::Calls,
            SortArg::Max => SortKey::Max,
            SortArg::Stddev => SortKey::Stddev,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope stats app.jsc --sort self --top 20")]
pub struct StatsArgs {
    /// The recording (.jsc) to read.
    pub file: PathBuf,
    /// Order of the method rows, largest first.
    #[arg(long, value_enum, default_value_t)]
    pub sort: SortArg,
    /// Number of methods (and of caller -> callee pairs) to list.
    #[arg(short = 'n', long, default_value_t = 50)]
    pub top: usize,
    #[command(flatten)]
    pub hide: HideArgs,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// The recording's bytes; a JFR file is read and handed on as `.jsc` bytes, so
/// the streaming trace readers take it as they take a recording.
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !jscope_jfr::is_jfr(&bytes) {
        return Ok(bytes);
    }
    let rec = jscope_jfr::read_bytes(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(jscope_jfr::encode_jsc(&rec))
}

/// Damage is a warning, worded as the other commands word it.
fn warn_damage(path: &Path, rec: &Recording) {
    if let Some(damage) = &rec.damage {
        eprintln!(
            "jscope: warning: {} is {damage}; read up to there",
            path.display()
        );
    }
}

/// One line when the recording's trace lost events (info and stats print it).
pub fn warn_incomplete(rec: &Recording) {
    if let Some(note) = jscope_analysis::trace::incomplete_note(rec) {
        eprintln!("jscope: warning: {note}");
    }
}

/// The call tree, or an error saying why the recording has none.
fn load_tree(path: &Path, hide: &HideArgs) -> Result<CallTree> {
    let bytes = read_bytes(path)?;
    let (tree, rec) = CallTree::from_bytes(&bytes, &hide.options())
        .with_context(|| format!("cannot read {}", path.display()))?;
    warn_damage(path, &rec);
    if tree.events == 0 {
        if !rec.call_aggregates.is_empty() {
            bail!(
                "{} is an aggregate-mode recording: it has caller -> callee totals but no calls to build a tree from (use jscope stats)",
                path.display()
            );
        }
        bail!(
            "{} has no trace events (record with tracing on)",
            path.display()
        );
    }
    Ok(tree)
}

/// Writes to the output file or to buffered stdout, flushing at the end so a
/// closed pipe surfaces as an error (treated as success by main).
fn with_output(
    output: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    match output {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = BufWriter::new(file);
            write(&mut out).with_context(|| format!("cannot write {}", path.display()))?;
            out.flush()?;
        }
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            write(&mut out)?;
            out.flush()?;
        }
    }
    Ok(())
}

pub fn tree(args: &TreeArgs) -> Result<()> {
    let tree = load_tree(&args.file, &args.hide)?;
    let view = TreeView {
        thread: args.thread.as_deref().map(ThreadMatcher::new),
        max_depth: args.depth,
        min_duration_ns: args.min_duration.map_or(0, |d| d.as_nanos() as u64),
    };
    with_output(None, |w| tree.write_text(&view, w))
}

pub fn stats(args: &StatsArgs) -> Result<()> {
    let bytes = read_bytes(&args.file)?;
    let (mut stats, rec) = TraceStats::from_bytes(&bytes, &args.hide.options())
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    warn_damage(&args.file, &rec);
    warn_incomplete(&rec);
    if stats.events == 0 && !stats.aggregate_mode {
        bail!(
            "{} has no trace events or call aggregates (record with tracing on)",
            args.file.display()
        );
    }
    stats.sort(args.sort.into());
    stats.truncate(args.top);
    match args.format {
        Format::Text => with_output(None, |w| write!(w, "{stats}")),
        Format::Json => {
            let text = serde_json::to_string_pretty(&stats)?;
            with_output(None, |w| writeln!(w, "{text}"))
        }
    }
}
