//! The commands over JVM events: `events` (one event per line, JPMT's command-line
//! analyzer), `locks`, `gc` and `alloc` reports. See docs/EVENTS.md.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use jscope_analysis::events::{
    age_report, alloc_report, event_tree, gc_report, live_report, lock_report, user_report,
    write_rows, AllocBy, EventFilter, EventType, RowFormat,
};
use jscope_analysis::{RequestFilter, ThreadMatcher};
use jscope_format::{EventKind, Recording};
use serde::Serialize;

use crate::duration::parse_seconds;
use crate::output::Format;
use crate::source::SourceArgs;
use crate::source::{self, Window};

/// Which events a command looks at.
#[derive(Debug, Args, Clone, Default)]
pub struct EventSelectArgs {
    /// Threads whose name contains this, or matches it as a glob when it has * or ?.
    /// Process-wide events (GC, JIT, frees, class unloads) have no thread.
    #[arg(short, long, value_name = "NAME")]
    pub thread: Option<String>,
    /// Events with a frame whose `pkg.Class.method` contains this (or matches it as
    /// a glob) in their stack; frees in their allocation's stack; other events in
    /// the traced invocations, or else the sampled stack, of their thread then.
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,
    /// Only events at or after this many seconds from the start.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub from: Option<f64>,
    /// Only events before this many seconds from the start.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub to: Option<f64>,
    /// Only events recorded while requests (served HTTP or RMI calls, spans) at
    /// least this long were served: allocations, monitor blocks, waits and parks
    /// carry their thread's request, other events none.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse_duration)]
    pub latency: Option<std::time::Duration>,
    /// Only events of one request: its trace id (as `jscope requests` lists it)
    /// or its id in the recording (several separated by commas).
    #[arg(long, value_name = "ID")]
    pub request: Option<String>,
}

impl EventSelectArgs {
    /// `--latency` and `--request` as the analysis library's filter.
    pub(crate) fn requests(&self) -> RequestFilter {
        RequestFilter {
            min_latency_ns: self.latency.map(|d| d.as_nanos() as u64),
            request: self.request.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum EventsFormat {
    /// Space-separated columns, numbers first, `#` header: fit for gnuplot and awk.
    #[default]
    Text,
    Csv,
    /// A JSON array with one event object per line (with stacks).
    Json,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Columns: time_s thread duration_ns value type thread_name subject site
(value: monitor owner thread, wait timeout ms, park timeout ns, alloc size,
free age in bytes, compiled code size, thread_start parent, user value).

Examples:
  jscope events app.jsc --type monitor --thread worker --from 2 --to 5
  jscope events app.jsc --type user --format csv > user.csv
  jscope events app.jsc --type gc > gc.dat; gnuplot -p -e \"plot 'gc.dat' using 1:3 with impulses\"
  jscope events app.jsc --tree --method com.acme.Service.handle"
)]
pub struct EventsArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Event types, comma-separated or repeated: thread_start, thread_end, monitor,
    /// wait, park, gc, alloc, free, class_load, class_unload, compiled,
    /// compiled_unload, user, start_call; or groups threads, locks, classes, jit,
    /// objects.
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    pub types: Vec<String>,
    #[command(flatten)]
    pub select: EventSelectArgs,
    #[arg(long, value_enum, default_value_t)]
    pub format: EventsFormat,
    /// Print each thread's events nested into the traced method invocations (or
    /// sample intervals) they happened in, JPMT's event trace.
    #[arg(long, conflicts_with = "intervals")]
    pub tree: bool,
    /// Per user event: count and the intervals between successive ones (min, mean,
    /// p50, p99, max) and begin -> end durations.
    #[arg(long)]
    pub intervals: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope locks app.jsc --top 5 --thread worker")]
pub struct LocksArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub select: EventSelectArgs,
    /// Number of monitor, wait and park rows to list.
    #[arg(short = 'n', long, default_value_t = 20)]
    pub top: usize,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope gc app.jsc --pauses")]
pub struct GcArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Only pauses at or after this many seconds from the start.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub from: Option<f64>,
    /// Only pauses before this many seconds from the start.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub to: Option<f64>,
    /// List every pause (start in seconds, duration).
    #[arg(long)]
    pub pauses: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ByArg {
    /// The allocating frame (`pkg.Class.method:line`).
    #[default]
    Site,
    /// The whole allocating stack.
    Stack,
    /// The allocated class.
    Class,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  jscope alloc app.jsc --by class --top 10\n  jscope alloc app.jsc --ages"
)]
pub struct AllocArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub select: EventSelectArgs,
    /// Group sampled allocations by site, stack or class.
    #[arg(long, value_enum, default_value_t)]
    pub by: ByArg,
    /// Also show object ages by class (needs the agent's object tracking): time
    /// and bytes allocated between allocation and free (JX).
    #[arg(long)]
    pub ages: bool,
    /// Only what was still alive when the recording ended (async-profiler's
    /// --live): tracked objects no free was seen for, by site, stack or class
    /// (needs the agent's object tracking, `objectages`).
    #[arg(long, conflicts_with = "ages")]
    pub live: bool,
    /// Number of rows to list.
    #[arg(short = 'n', long, default_value_t = 30)]
    pub top: usize,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

pub(crate) fn load(
    file: Option<&std::path::Path>,
    src: &SourceArgs,
    from: Option<f64>,
    to: Option<f64>,
) -> Result<Recording> {
    let window = Window {
        from_s: from,
        to_s: to,
    };
    Ok(source::load(file, src, window)?.rec)
}

pub(crate) fn filter(sel: &EventSelectArgs, types: Vec<EventType>) -> Result<EventFilter> {
    let f = EventFilter {
        types,
        thread: sel.thread.as_deref().map(ThreadMatcher::new),
        method: sel.method.as_deref().map(ThreadMatcher::new),
        from_s: sel.from,
        to_s: sel.to,
        requests: sel.requests(),
    };
    f.validate()?;
    Ok(f)
}

fn parse_types(names: &[String]) -> Result<Vec<EventType>> {
    let mut out = Vec::new();
    for n in names {
        out.extend(EventType::parse_list(n)?);
    }
    Ok(out)
}

pub fn events(args: &EventsArgs) -> Result<()> {
    let rec = load(
        args.file.as_deref(),
        &args.source,
        args.select.from,
        args.select.to,
    )?;
    let f = filter(&args.select, parse_types(&args.types)?)?;
    if args.intervals {
        let report = user_report(&rec, &f);
        let format = if args.format == EventsFormat::Json {
            Format::Json
        } else {
            Format::Text
        };
        return format.print(&report);
    }
    if args.tree {
        let tree = event_tree(&rec, &f);
        let format = if args.format == EventsFormat::Json {
            Format::Json
        } else {
            Format::Text
        };
        return format.print(&tree);
    }
    let rows = f.rows(&rec);
    match args.format {
        EventsFormat::Text => crate::output::with_stdout(|w| write_rows(&rows, RowFormat::Text, w)),
        EventsFormat::Csv => crate::output::with_stdout(|w| write_rows(&rows, RowFormat::Csv, w)),
        EventsFormat::Json => crate::output::with_stdout(|w| write_json_lines(&rows, w)),
    }
}

/// A JSON array with one element per line, so line tools still work on it.
fn write_json_lines(rows: &[impl Serialize], w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "[")?;
    for (i, r) in rows.iter().enumerate() {
        let sep = if i + 1 < rows.len() { "," } else { "" };
        writeln!(
            w,
            "{}{sep}",
            serde_json::to_string(r).map_err(io::Error::other)?
        )?;
    }
    writeln!(w, "]")
}

/// Why a result is empty, on stderr so stdout stays the result.
pub(crate) fn note(why: &str) {
    eprintln!("jscope: note: {why}");
}

pub fn locks(args: &LocksArgs) -> Result<()> {
    let rec = load(
        args.file.as_deref(),
        &args.source,
        args.select.from,
        args.select.to,
    )?;
    let types = vec![
        EventType::Monitor,
        EventType::Wait,
        EventType::Park,
        EventType::NativeLock,
    ];
    let any_lock_event = rec.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::MonitorBlocked { .. }
                | EventKind::MonitorWait { .. }
                | EventKind::Park { .. }
                | EventKind::NativeLock { .. }
        )
    });
    if !any_lock_event {
        note("the recording has no monitor, wait, park or native lock events; record with --events monitors,waits,park (or --events all,park), or --nativelock");
    }
    let mut report = lock_report(&rec, &filter(&args.select, types)?);
    report.monitors.truncate(args.top);
    report.waits.truncate(args.top);
    report.parks.truncate(args.top);
    report.native.truncate(args.top);
    args.format.print(&report)
}

pub fn gc(args: &GcArgs) -> Result<()> {
    let rec = load(args.file.as_deref(), &args.source, args.from, args.to)?;
    let sel = EventSelectArgs {
        from: args.from,
        to: args.to,
        ..Default::default()
    };
    let mut report = gc_report(&rec, &filter(&sel, vec![EventType::Gc])?);
    if args.format == Format::Json || !args.pauses {
        if !args.pauses {
            report.pauses.clear();
        }
        return args.format.print(&report);
    }
    let detailed = report.pauses.iter().any(|p| !p.detail.cause.is_empty());
    crate::output::with_stdout(|w| {
        write!(w, "{report}")?;
        write!(w, "\n{:>14} {:>14}", "start_s", "duration_ms")?;
        if detailed {
            write!(
                w,
                " {:>10} {:>23}  {:<11} collector: cause",
                "generation", "heap before -> after", "kind"
            )?;
        }
        writeln!(w)?;
        for p in &report.pauses {
            write!(w, "{:>14.6} {:>14.3}", p.time_s, p.duration_ns as f64 / 1e6)?;
            let d = &p.detail;
            if detailed && !d.cause.is_empty() {
                // Pause-only beans (ZGC's, Shenandoah's pauses) report no heap.
                let heap = if d.heap_before == 0 && d.heap_after == 0 {
                    "-".to_string()
                } else {
                    format!("{}K -> {}K", d.heap_before >> 10, d.heap_after >> 10)
                };
                let kind = if d.concurrent { "concurrent" } else { "pause" };
                let generation = if d.generation.is_empty() {
                    "-"
                } else {
                    &d.generation
                };
                write!(
                    w,
                    " {generation:>10} {heap:>23}  {kind:<11} {}: {}",
                    d.collector, d.cause
                )?;
            }
            writeln!(w)?;
        }
        Ok(())
    })
}

pub fn alloc(args: &AllocArgs) -> Result<()> {
    let rec = load(
        args.file.as_deref(),
        &args.source,
        args.select.from,
        args.select.to,
    )?;
    let f = filter(&args.select, vec![EventType::Alloc])?;
    let by = match args.by {
        ByArg::Site => AllocBy::Site,
        ByArg::Stack => AllocBy::Stack,
        ByArg::Class => AllocBy::Class,
    };
    let allocs = || {
        rec.events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Alloc { .. }))
    };
    if allocs().next().is_none() {
        note("the recording has no allocation samples; record with --events alloc");
    }
    let tracked =
        || allocs().any(|e| matches!(e.kind, EventKind::Alloc { object, .. } if object != 0));
    if args.live {
        if !tracked() {
            anyhow::bail!("no live objects: the recording's allocations carry no object ids; record with --object-ages (the agent's objectages)");
        }
        let mut live = live_report(&rec, &f, by);
        live.rows.truncate(args.top);
        return match args.format {
            Format::Json => args.format.print(&live),
            Format::Text => crate::output::with_stdout(|w| {
                writeln!(w, "Live at the end (tracked objects never freed):")?;
                write!(w, "{live}")
            }),
        };
    }
    let mut report = alloc_report(&rec, &f, by);
    report.rows.truncate(args.top);
    if !args.ages {
        return args.format.print(&report);
    }
    if !tracked() {
        let why = "no object ages: the recording's allocations carry no object ids; record with --object-ages (it implies --events alloc)";
        if args.format == Format::Text {
            return crate::output::with_stdout(|w| {
                write!(
                    w,
                    "{report}
object ages: none ({why})\n"
                )
            });
        }
        note(why);
    }
    let mut ages = age_report(&rec, &f);
    ages.rows.truncate(args.top);
    match args.format {
        Format::Json => {
            let both = serde_json::json!({ "alloc": report, "ages": ages });
            crate::output::with_stdout(|w| {
                writeln!(
                    w,
                    "{}",
                    serde_json::to_string_pretty(&both).map_err(io::Error::other)?
                )
            })
        }
        Format::Text => crate::output::with_stdout(|w| write!(w, "{report}\n{ages}")),
    }
}
