//! The command line, as clap derives it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::duration::{parse_duration, parse_seconds, parse_since, parse_time, TimeArg};

/// jscope: sample Java stacks with a JVMTI agent and analyse the recordings.
#[derive(Debug, Parser)]
#[command(name = "jscope", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a Java program with the agent loaded from the start.
    Record(RecordArgs),
    /// Start recording in a running JVM (dynamic attach).
    Attach(AttachArgs),
    /// Stop a recording started with `jscope attach` and flush its file.
    Stop(StopArgs),
    /// Start, change or stop exact method tracing in a running JVM.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Hot methods: self and total samples per method.
    Report(ReportArgs),
    /// Write a flame graph (interactive .html or static .svg).
    Flame(FlameArgs),
    /// Compare two recordings: per-method shares on both sides, ranked by change.
    Diff(DiffArgs),
    /// Print collapsed stacks (`root;...;leaf count`) for other flame-graph tools.
    Collapsed(CollapsedArgs),
    /// Print the call graph: methods and caller -> callee edges.
    Callgraph(CallgraphArgs),
    /// Show every thread and its stack at one moment (snapshot mode).
    Threads(ThreadsArgs),
    /// Show what a recording holds and how well sampling went.
    Info(InfoArgs),
    /// Run a collector: agents stream to it, it stores their data and serves a web UI.
    Serve(crate::serve::CollectorArgs),
    /// Serve the collector's web UI over one recording file, or over a session of
    /// `jscope merge` (the tree across JVMs).
    View(crate::serve::CollectorArgs),
    /// Call tree of an exact-tracing recording (threads linked to their Thread.start);
    /// with --distributed, one tree across JVMs that call each other.
    Tree(crate::distributed::TreeCommand),
    /// Merge recordings of JVMs that call each other (RMI, HTTP) into a session file.
    Merge(crate::distributed::MergeArgs),
    /// Per-method and caller -> callee call statistics of a tracing recording.
    Stats(crate::trace::StatsArgs),
    /// Export samples or traces as pprof, OTLP profiles, speedscope, Chrome trace
    /// JSON or collapsed stacks.
    Export(crate::export::ExportArgs),
    /// Convert a JFR file (JDK Flight Recorder, async-profiler) into a .jsc recording.
    Convert(crate::convert::ConvertArgs),
    /// JVM events one per line (text columns, CSV or JSON), as event trees, or user
    /// event intervals.
    Events(crate::events::EventsArgs),
    /// Most contended monitors, waits and parks: counts, blocked time, sites.
    Locks(crate::events::LocksArgs),
    /// GC pauses: count, total, max and share of wall time.
    Gc(crate::events::GcArgs),
    /// Sampled allocations by site, stack or class; object ages by class.
    Alloc(crate::events::AllocArgs),
    /// List the JVMs of this machine (pid, main class, whether jscope's agent is
    /// loaded), or with --collector those a collector knows.
    Jvms(JvmsArgs),
    /// Replay a queue from an exact trace: time in queue and service time per
    /// request, queue length over time, arrival rate, utilisation, Little's law.
    Queue(crate::queue::QueueArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  jscope jvms\n  jscope jvms --collector http://127.0.0.1:7080")]
pub struct JvmsArgs {
    /// List a running collector's JVMs instead, e.g. http://127.0.0.1:7080.
    #[arg(long, value_name = "URL")]
    pub collector: Option<String>,
    /// The collector's token (`jscope serve --token`).
    #[arg(long, value_name = "TOKEN", requires = "collector")]
    pub token: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// What the agent samples and how often.
#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// Sampling modes: cpu, wall, snapshot, combined with `+` (e.g. cpu+snapshot);
    /// none for tracing or events only.
    #[arg(short, long, default_value = "cpu")]
    pub mode: String,
    /// Sampling interval of the cpu and wall samplers (e.g. 10ms, 500us, 1s); for
    /// snapshot-only recordings, the snapshot interval.
    #[arg(short, long, value_parser = parse_duration)]
    pub interval: Option<std::time::Duration>,
    /// Interval between snapshots when combined with cpu or wall (default 100ms).
    #[arg(long, value_parser = parse_duration)]
    pub snap_interval: Option<std::time::Duration>,
    /// Maximum number of frames kept per stack.
    #[arg(short, long)]
    pub depth: Option<u32>,
    /// Recording file to write.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub tracing: TracingArgs,
    /// JVM events to record, comma-separated: threads, monitors, waits, gc, alloc,
    /// classes, jit, user, park, or all (every kind but park: `all,park`).
    #[arg(long, value_name = "LIST")]
    pub events: Option<String>,
    /// Mean bytes between allocation samples (e.g. 512k) with `--events alloc`.
    #[arg(long, value_name = "SIZE")]
    pub alloc_rate: Option<String>,
    /// Also stream the recording to a collector's agent port (`jscope serve`); several
    /// collectors joined by `|` are tried in turn, the next taking over when one dies.
    #[arg(long, value_name = "HOST:PORT[|HOST:PORT...]")]
    pub stream_to: Option<String>,
    /// The collector's token, with --stream-to.
    #[arg(long, value_name = "TOKEN", requires = "stream_to")]
    pub stream_token: Option<String>,
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// The rest of the agent's options (docs/AGENT.md): flags for the common ones,
/// `--agent-opt` for any other.
#[derive(Debug, Args, Clone, Default)]
pub struct AgentArgs {
    /// Track every sampled object until it is freed, for `jscope alloc --ages`
    /// (implies --events alloc).
    #[arg(long)]
    pub object_ages: bool,
    /// Name the owner of each contended monitor (implies --events monitors; a VM
    /// operation per contended entry).
    #[arg(long)]
    pub monitor_owners: bool,
    /// Parks shorter than this are counted, not recorded (default 20ms; 0 records
    /// every park; implies park events).
    #[arg(long, value_name = "DURATION")]
    pub park_threshold: Option<String>,
    /// A JPMT-style events config file (`observe_...` lines); see docs/AGENT.md.
    #[arg(long, value_name = "FILE")]
    pub events_config: Option<PathBuf>,
    /// Record remote calls for cross-JVM trees: all protocols, or `rmi`, `http`,
    /// `rmi+http`.
    #[arg(long, value_name = "PROTOCOLS", num_args = 0..=1, default_missing_value = "")]
    pub remote: Option<String>,
    /// Labels of the JVM, `K:V;K:V`, kept in the recording's header and by the
    /// collector (`--label K=V` says the same one at a time).
    #[arg(long, value_name = "K:V;K:V")]
    pub labels: Option<String>,
    /// A label of the JVM, `K=V` (repeatable); readers select JVMs by it.
    #[arg(long = "label", value_name = "K=V")]
    pub label: Vec<String>,
    /// The service this JVM belongs to; readers select JVMs by it (`--service`).
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Bytes of chunks kept until the collector acknowledges them, e.g. 16m
    /// (with --stream-to).
    #[arg(long, value_name = "SIZE", requires = "stream_to")]
    pub stream_buffer: Option<String>,
    /// How many threads the wall sampler signals per tick (default 16).
    #[arg(long, value_name = "N")]
    pub wall_threads: Option<u32>,
    /// Events a traced thread may have waiting for the writer (default 524288).
    #[arg(long, value_name = "N")]
    pub trace_buffer: Option<u32>,
    /// No informational lines from the agent on the JVM's stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Native stacks in cpu mode: `dwarf` (the default: every thread of the
    /// process, native frames walked by the libraries' unwind tables and kernel
    /// frames under the Java frames), `fp` (the same, native frames by frame
    /// pointers only) or `no` (Java frames of Java threads only).
    #[arg(long, value_name = "dwarf|fp|no", value_parser = ["dwarf", "fp", "no"])]
    pub cstack: Option<String>,
    /// Sample cpu mode on a perf event instead of CPU time: cpu-clock,
    /// page-faults, context-switches, or (with a PMU) cycles, instructions,
    /// cache-misses.
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
    /// Events per sample with --event (a counting event; clocks take --interval).
    #[arg(long, value_name = "N", requires = "event")]
    pub event_period: Option<u64>,
    /// Any other agent option, `KEY=VALUE` or a bare `KEY` (repeatable), passed
    /// as is: e.g. --agent-opt clockoffset=-3m.
    #[arg(long, value_name = "KEY[=VALUE]")]
    pub agent_opt: Vec<String>,
}

/// Exact method tracing (bytecode rewriting of the selected methods).
#[derive(Debug, Args, Clone, Default)]
pub struct TracingArgs {
    /// Trace the methods of these classes: globs separated by `;`, each
    /// `CLASS[#METHOD]`, `!` in front to exclude (e.g. 'com.acme.*;!com.acme.util.*').
    #[arg(long, value_name = "PATTERNS")]
    pub trace: Option<String>,
    /// A JPMT-style tracing config file (include/exclude lines, exclude-library,
    /// subclasses-of, count-untraced); see docs/AGENT.md.
    #[arg(long, value_name = "FILE")]
    pub trace_config: Option<PathBuf>,
    /// Record thread CPU time at every traced entry and exit.
    #[arg(long)]
    pub trace_cpu: bool,
    /// Record this perf counter of the thread at every traced entry and exit,
    /// instead of CPU time: page-faults, context-switches, cpu-migrations,
    /// instructions, cycles or cache-misses (the last three need a PMU).
    #[arg(long, value_name = "EVENT")]
    pub trace_counter: Option<String>,
    /// Keep only per-thread caller->callee totals (cheap, always-on timing).
    #[arg(long)]
    pub trace_agg: bool,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Start tracing, or change what is traced, in a running JVM.
    Start(TraceStartArgs),
    /// Stop tracing in a running JVM (the recording goes on) and restore its classes.
    Stop(StopArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope trace start 4242 --trace 'com.acme.*' -o trace.jsc")]
pub struct TraceStartArgs {
    /// Process id of the target JVM.
    pub pid: u32,
    #[command(flatten)]
    pub tracing: TracingArgs,
    /// Recording file, when the JVM is not recording yet.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// How long to wait for the JVM's attach listener.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  jscope record --mode cpu+snapshot -o app.jsc -- java -cp app.jar com.acme.Main"
)]
pub struct RecordArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// The Java command line: the java executable first, then its arguments.
    #[arg(last = true, required = true, value_name = "JAVA ARGS")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope attach 4242 --mode wall -o app.jsc --duration 30s")]
pub struct AttachArgs {
    /// Process id of the target JVM.
    pub pid: u32,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Record for this long, then stop (Ctrl-C stops early). Without it, the
    /// recording runs until `jscope stop PID` or the JVM exits.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// How long to wait for the JVM's attach listener.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Process id of the JVM recording.
    pub pid: u32,
    /// How long to wait for the JVM's attach listener.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: std::time::Duration,
}

/// Collector data instead of a recording file.
#[derive(Debug, Args, Clone, Default)]
pub struct SourceArgs {
    /// Read a collector's data directory (`jscope serve --data DIR`); safe while
    /// the collector runs.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["file", "collector"])]
    pub data: Option<PathBuf>,
    /// Read from a running collector, e.g. http://127.0.0.1:7080.
    #[arg(long, value_name = "URL", conflicts_with = "file")]
    pub collector: Option<String>,
    /// The collector's JVM to analyse: its id, a pid (the newest JVM with it), or
    /// `all` (merged into one profile). Needed when the collector holds more than
    /// one and neither --service nor --label narrows them.
    #[arg(long, value_name = "ID|PID|all")]
    pub jvm: Option<String>,
    /// Only the collector's JVMs of this service (agent option `service=`, or the
    /// main class); several are merged into one profile.
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Only the collector's JVMs with this label, `K=V` (repeatable: all must match).
    #[arg(long = "label", value_name = "K=V")]
    pub label: Vec<String>,
    /// The collector's token (`jscope serve --token`).
    #[arg(long, value_name = "TOKEN", requires = "collector")]
    pub token: Option<String>,
    /// The collector's JVM list once fetched (`source::Collected`): the window's
    /// origin and the command then read the same one.
    #[arg(skip)]
    pub fetched_rows: std::cell::OnceCell<Vec<jscope_store::JvmSummary>>,
}

/// Which samples an analysis looks at.
#[derive(Debug, Args, Clone, Default)]
pub struct SelectArgs {
    /// Sample source: cpu, wall or snapshot (default: the first the recording has);
    /// `jscope flame` also takes alloc (allocation samples weighted by estimated
    /// bytes) and lock (stacks weighted by lock contention time).
    #[arg(short, long)]
    pub mode: Option<String>,
    /// Threads whose name contains this, or matches it as a glob when it has * or ?.
    #[arg(short, long, value_name = "NAME")]
    pub thread: Option<String>,
    /// Thread states to keep, comma-separated: runnable, blocked, waiting,
    /// timed_waiting, sleeping, parked, native, terminated, new, unknown.
    #[arg(short, long, value_name = "STATES", value_delimiter = ',')]
    pub state: Vec<String>,
    /// Only samples at or after this time: seconds from the start (12.5; of the
    /// earliest JVM when several are merged), an RFC 3339 time
    /// (2026-11-24T03:00:00Z) or that long ago (-10m).
    #[arg(long = "from", value_name = "TIME", value_parser = parse_time, allow_hyphen_values = true)]
    pub from_at: Option<TimeArg>,
    /// Only samples before this time, given as for --from.
    #[arg(long = "to", value_name = "TIME", value_parser = parse_time, allow_hyphen_values = true)]
    pub to_at: Option<TimeArg>,
    /// Only samples of the last DURATION (10m, 1h, 1h30m, 2d): --from -DURATION.
    #[arg(long, value_name = "DURATION", value_parser = parse_since, conflicts_with = "from_at")]
    pub since: Option<u64>,
    /// A virtual thread's samples (JDK 21+) count for the virtual thread
    /// (`virtual`, the default) or for the carrier thread it ran on (`carrier`).
    #[arg(long = "group-by", value_name = "THREADS", value_parser = ["virtual", "carrier"])]
    pub group_by: Option<String>,
    /// --from as seconds from the start, once resolved (`source::resolve_window`).
    #[arg(skip)]
    pub from: Option<f64>,
    /// --to as seconds from the start, once resolved.
    #[arg(skip)]
    pub to: Option<f64>,
}

impl SelectArgs {
    /// Turns the bounds into seconds from the start; `origin_ns` (the start's
    /// epoch ns) is asked only when a bound is a wall-clock time.
    pub fn resolve(
        &mut self,
        origin_ns: impl FnOnce() -> anyhow::Result<u64>,
    ) -> anyhow::Result<()> {
        let origin = if self.has_wall_time() {
            origin_ns()?
        } else {
            0
        };
        let seconds = |bound: Option<TimeArg>| {
            bound.map(|b| match b {
                TimeArg::FromStart(s) => s,
                TimeArg::Epoch(ns) => ns.saturating_sub(origin) as f64 / 1e9,
            })
        };
        self.from = seconds(self.since.map(TimeArg::Epoch).or(self.from_at));
        self.to = seconds(self.to_at);
        Ok(())
    }

    /// Whether a bound is a wall-clock time (which needs the source's start).
    pub fn has_wall_time(&self) -> bool {
        self.since.is_some()
            || matches!(self.from_at, Some(TimeArg::Epoch(_)))
            || matches!(self.to_at, Some(TimeArg::Epoch(_)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

impl Format {
    /// Prints `v` to stdout as its text table or as pretty JSON.
    pub fn print<T: std::fmt::Display + serde::Serialize>(self, v: &T) -> anyhow::Result<()> {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        match self {
            Format::Text => write!(w, "{v}")?,
            Format::Json => writeln!(w, "{}", serde_json::to_string_pretty(v)?)?,
        }
        w.flush()?;
        Ok(())
    }
}

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
    pub trace: crate::trace_diff::TraceDiffArgs,
}

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
    /// `_[j]` JIT-compiled, `_[i]` inlined (kernel frames always end in `_[k]`).
    #[arg(long)]
    pub annotate: bool,
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
