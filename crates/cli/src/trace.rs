//! The commands over exact-tracing recordings: `tree` and `stats` (their exports
//! are `jscope export`'s, in export.rs).

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use jscope_analysis::trace::{
    CallTree, ScanProgress, SortKey, TraceError, TraceOptions, TraceStats, TreeView,
};
use jscope_analysis::ThreadMatcher;
use jscope_format::Recording;

use crate::duration::parse_duration;
use crate::output::with_output;
use crate::output::Format;

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
    /// The recording (.jsc, or a JFR file) to read.
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
    /// The recording (.jsc, or a JFR file) to read.
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

/// A JFR file's contents as `.jsc` bytes, so the trace readers take it as they take
/// a recording; None for any other file, which is streamed from disk.
fn jfr_as_jsc(path: &Path) -> Result<Option<Vec<u8>>> {
    if !crate::source::is_jfr_file(path)? {
        return Ok(None);
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let rec = jscope_jfr::read_bytes(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some(jscope_jfr::encode_jsc(&rec)))
}

/// A progress line on stderr while a recording is read, for big ones: updated in
/// place (4 times a second) when stderr is a terminal and the read has taken over
/// a second; otherwise a line every 10 seconds, so logs of long reads show it and
/// quick reads print nothing. `JSCOPE_PROGRESS=0` turns it off, `=1` prints a line
/// after every chunk.
struct Progress {
    name: String,
    start: Instant,
    last: Option<Instant>,
    tty: bool,
    always: bool,
    off: bool,
}

impl Progress {
    fn new(path: &Path) -> Progress {
        let env = std::env::var("JSCOPE_PROGRESS").unwrap_or_default();
        Progress {
            name: path.display().to_string(),
            start: Instant::now(),
            last: None,
            tty: io::stderr().is_terminal(),
            always: env == "1",
            off: env == "0",
        }
    }

    fn update(&mut self, p: ScanProgress) {
        if self.off {
            return;
        }
        let now = Instant::now();
        if !self.always {
            let (wait, every) = if self.tty {
                (Duration::from_secs(1), Duration::from_millis(250))
            } else {
                (Duration::from_secs(10), Duration::from_secs(10))
            };
            let since = self.last.unwrap_or(self.start);
            if now - self.start < wait || now - since < every {
                return;
            }
        }
        self.last = Some(now);
        let pct = if p.total_bytes > 0 {
            p.bytes as f64 * 100.0 / p.total_bytes as f64
        } else {
            0.0
        };
        let line = format!(
            "jscope: reading {}: {pct:.0}% ({} of {} MB), {:.1} M trace events, {:.0}s",
            self.name,
            p.bytes >> 20,
            p.total_bytes >> 20,
            p.events as f64 / 1e6,
            (now - self.start).as_secs_f64()
        );
        if self.tty && !self.always {
            eprint!("\r{line}\x1b[K");
        } else {
            eprintln!("{line}");
        }
    }

    /// Clears the updated line, so what follows starts on a clean line.
    fn finish(&self) {
        if self.tty && !self.always && self.last.is_some() {
            eprint!("\r\x1b[K");
        }
    }
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

/// Reads a trace file once, as the trace commands do: a JFR file converted in
/// memory, a jscope file streamed chunk by chunk with a progress line; damage is
/// a warning.
fn read_traces<T>(
    path: &Path,
    from_bytes: impl FnOnce(&[u8]) -> Result<(T, Recording), TraceError>,
    from_file: impl FnOnce(&mut dyn FnMut(ScanProgress)) -> Result<(T, Recording), TraceError>,
) -> Result<(T, Recording)> {
    crate::source::refuse_session(path)?;
    let read = match jfr_as_jsc(path)? {
        Some(bytes) => from_bytes(&bytes),
        None => {
            let mut progress = Progress::new(path);
            let read = from_file(&mut |p| progress.update(p));
            progress.finish();
            read
        }
    };
    let (t, rec) = read.with_context(|| format!("cannot read {}", path.display()))?;
    warn_damage(path, &rec);
    Ok((t, rec))
}

/// A trace file's call tree, built while it is read (see [`read_traces`]).
pub(crate) fn read_tree(path: &Path, options: &TraceOptions) -> Result<(CallTree, Recording)> {
    read_traces(
        path,
        |bytes| CallTree::from_bytes(bytes, options),
        |progress| CallTree::from_file(path, options, progress),
    )
}

/// The call tree, or an error saying why the recording has none.
fn load_tree(path: &Path, hide: &HideArgs) -> Result<CallTree> {
    let (tree, rec) = read_tree(path, &hide.options())?;
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
    let options = args.hide.options();
    let (mut stats, rec) = read_traces(
        &args.file,
        |bytes| TraceStats::from_bytes(bytes, &options),
        |progress| TraceStats::from_file(&args.file, &options, progress),
    )?;
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
