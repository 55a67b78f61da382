//! `jscope export`: a recording (file, collector data or JFR, through the usual
//! loader) in another tool's format, written by jscope-export.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use jscope_analysis::trace::{CallTree, TraceOptions};
use jscope_analysis::{Mode, Selection};
use jscope_export::{Export, Format, Kind, Request};
use jscope_format::Recording;

use crate::analyze::{load, require_samples};
use crate::output::with_output;
use crate::select::{selection, SelectArgs};

use crate::source::{Loaded, SourceArgs};
use crate::trace::HideArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Gzipped pprof profile.proto (go tool pprof, Pyroscope, Grafana).
    Pprof,
    /// OTLP profiles ExportProfilesServiceRequest, protobuf binary.
    Otlp,
    /// The same OTLP request as OTLP/JSON.
    OtlpJson,
    /// speedscope JSON: sampled profiles per thread, evented ones for traces.
    Speedscope,
    /// Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing).
    Chrome,
    /// Collapsed stacks (`root;...;leaf value`) for flame-graph tools.
    Collapsed,
    /// JDK Flight Recorder: the whole recording (or the --mode asked) for JMC, IDEs, `jfr`.
    Jfr,
}

impl From<ExportFormat> for Format {
    fn from(f: ExportFormat) -> Format {
        match f {
            ExportFormat::Pprof => Format::Pprof,
            ExportFormat::Otlp => Format::Otlp,
            ExportFormat::OtlpJson => Format::OtlpJson,
            ExportFormat::Speedscope => Format::Speedscope,
            ExportFormat::Chrome => Format::Chrome,
            ExportFormat::Collapsed => Format::Collapsed,
            ExportFormat::Jfr => Format::Jfr,
        }
    }
}

#[derive(Debug, Args)]
#[command(
    mut_arg("mode", |a| a.help("What to export: cpu, wall, snapshot, alloc, lock, trace, nativemem, leak (native blocks still held: in-use memory) or nativelock (default: trace for a tracing recording, else the first sampled mode; for otlp, every kind the recording has; for jfr, everything the recording holds)")),
    after_help = "Examples:\n  jscope export app.jsc --format pprof -o app.pb.gz && go tool pprof -top app.pb.gz\n  jscope export app.jsc --format speedscope --mode wall -o app.speedscope.json\n  jscope export --collector http://127.0.0.1:7080 --jvm 4242 --format otlp -o app.otlp\n  jscope export app.jsc --format chrome -o app.trace.json\n  jscope export app.jsc --format collapsed > app.collapsed\n  jscope export app.jsc --format jfr -o app.jfr && jfr summary app.jfr"
)]
pub struct ExportArgs {
    /// The recording (.jsc, or a JFR file) to read; or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub hide: HideArgs,
    /// Name Java frames with how they ran, as async-profiler's --annotate: `_[0]`
    /// interpreted, `_[1]` C1, `_[j]` JIT-compiled, `_[i]` inlined and class
    /// frames (kernel frames always end in `_[k]`).
    #[arg(long)]
    pub annotate: bool,
}

pub fn run(args: &ExportArgs) -> Result<()> {
    let kind = args
        .select
        .mode
        .as_deref()
        .map(str::parse::<Kind>)
        .transpose()?;
    if args.output.is_none()
        && matches!(
            args.format,
            ExportFormat::Pprof | ExportFormat::Otlp | ExportFormat::Jfr
        )
    {
        bail!("pprof, otlp and jfr output is binary: give -o FILE");
    }
    let trace = TraceOptions::hiding(&args.hide.hide);
    let (Loaded { rec, title }, tree) = load_streaming_traces(args, kind, &trace)?;
    // The sample filters without the mode, which jscope-export's kinds replace.
    let sel = selection(&SelectArgs {
        mode: None,
        ..args.select.clone()
    })?;
    if let Some(mode) = kind.and_then(sample_mode) {
        let wanted = Selection {
            mode: Some(mode),
            ..sel.clone()
        };
        require_samples(&rec, &wanted, &title)?;
    }
    if let Some(k @ (Kind::Alloc | Kind::Lock)) = kind {
        if !jscope_export::has_kind(&rec, k) {
            bail!("{title} has no {k} events; {}", record_hint(k));
        }
    }
    let request = Request {
        kind,
        selection: sel,
        trace,
        name: title,
        annotate: args.annotate,
    };
    warn_incomplete(&rec, &request, args.format.into());
    let export = match tree {
        Some(tree) if tree.events > 0 || kind == Some(Kind::Trace) => {
            Export::of_trace(&rec, tree, &request, args.format.into())?
        }
        _ => Export::new(&rec, &request, args.format.into())?,
    };
    with_output(args.output.as_deref(), |w| export.write(w))
}

/// The recording; a jscope file whose traces are exported (the default kind,
/// or `--mode trace`) has its call tree built while it is read, as `jscope tree`
/// does, so its trace events are never all in memory at once. Anything else
/// (collector data, other file formats) goes through the usual loader.
fn load_streaming_traces(
    args: &ExportArgs,
    kind: Option<Kind>,
    trace: &TraceOptions,
) -> Result<(Loaded, Option<CallTree>)> {
    // A JFR export holds the trace events themselves.
    let streamable = args.source.data.is_none()
        && args.source.collector.is_none()
        && args.format != ExportFormat::Jfr;
    if let (Some(path), true, None | Some(Kind::Trace)) = (&args.file, streamable, kind) {
        if let Ok((tree, rec)) = crate::trace::read_tree(path, trace) {
            // Without trace events the tree is empty and the recording whole.
            let title = crate::source::title_of(path);
            return Ok((Loaded { rec, title }, Some(tree)));
        }
    }
    Ok((
        load(args.file.as_deref(), &args.source, Some(&args.select))?,
        None,
    ))
}

/// The one-line warning of incomplete stacks for the samples a profile
/// export shows (a JFR export holds the recording itself, every mode).
fn warn_incomplete(rec: &Recording, request: &Request, format: Format) {
    let kinds = jscope_export::kinds(rec, request, format);
    let modes = kinds.into_iter().filter_map(sample_mode);
    let modes: Vec<Mode> = match (format, request.kind) {
        (Format::Jfr, None) => Mode::ALL.to_vec(),
        _ => modes.collect(),
    };
    for mode in modes {
        let sel = Selection {
            mode: Some(mode),
            ..request.selection.clone()
        };
        let counts = sel.stack_counts(rec);
        crate::output::warn_incomplete(rec, Some(mode), &counts, &request.name);
    }
}

fn sample_mode(k: Kind) -> Option<Mode> {
    match k {
        Kind::Cpu => Some(Mode::Cpu),
        Kind::Wall => Some(Mode::Wall),
        Kind::Snapshot => Some(Mode::Snapshot),
        _ => None,
    }
}

fn record_hint(k: Kind) -> &'static str {
    match k {
        Kind::Alloc => "record with --events alloc",
        _ => "record with --events monitors or --events park",
    }
}
