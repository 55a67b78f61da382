//! The `jscope` binary: parses the command line and hands each command to the
//! libraries. Errors are one `jscope: ...` line and exit code 1; a closed
//! stdout (`jscope collapsed f | head`) is success.

mod agent;
mod analyze;
mod attach;
mod convert;
mod diff;
mod distributed;
mod duration;
mod events;
mod export;
mod flame;
mod jvms;
mod merge_rec;
mod nativemem;
mod output;
mod queue;
mod record;
mod remote_profile;
mod requests;
mod select;
mod serve;
mod signals;
mod source;
mod trace;

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

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
    Record(record::RecordArgs),
    /// Start recording in a running JVM (dynamic attach).
    Attach(attach::AttachArgs),
    /// Stop a recording started with `jscope attach` and flush its file.
    Stop(attach::StopArgs),
    /// Start, change or stop exact method tracing in a running JVM.
    #[command(subcommand)]
    Trace(attach::TraceCommand),
    /// Hot methods: self and total samples per method.
    Report(analyze::ReportArgs),
    /// Write a flame graph (interactive .html or static .svg).
    Flame(flame::FlameArgs),
    /// Compare two recordings: per-method shares on both sides, ranked by change.
    Diff(diff::DiffArgs),
    /// Print collapsed stacks (`root;...;leaf count`) for other flame-graph tools.
    Collapsed(flame::CollapsedArgs),
    /// Print the call graph: methods and caller -> callee edges.
    Callgraph(analyze::CallgraphArgs),
    /// Show every thread and its stack at one moment (snapshot mode).
    Threads(analyze::ThreadsArgs),
    /// Show what a recording holds and how well sampling went.
    Info(analyze::InfoArgs),
    /// Requests the JVMs served (HTTP and RMI calls, jscope.Span spans), slowest
    /// first, with the id `--request` takes.
    Requests(requests::RequestsArgs),
    /// Run a collector: agents stream to it, it stores their data and serves a web UI.
    Serve(serve::CollectorArgs),
    /// Serve the collector's web UI over one recording file, or over a session of
    /// `jscope merge` (the tree across JVMs).
    View(serve::CollectorArgs),
    /// Call tree of an exact-tracing recording (threads linked to their Thread.start);
    /// with --distributed, one tree across JVMs that call each other.
    Tree(distributed::TreeCommand),
    /// Merge recordings of JVMs that call each other (RMI, HTTP) into a session file.
    Merge(distributed::MergeArgs),
    /// Per-method and caller -> callee call statistics of a tracing recording.
    Stats(trace::StatsArgs),
    /// Export samples or traces as pprof, OTLP profiles, speedscope, Chrome trace
    /// JSON or collapsed stacks.
    Export(export::ExportArgs),
    /// Convert a JFR file (JDK Flight Recorder, async-profiler) into a .jsc recording.
    Convert(convert::ConvertArgs),
    /// JVM events one per line (text columns, CSV or JSON), as event trees, or user
    /// event intervals.
    Events(events::EventsArgs),
    /// Most contended monitors, waits and parks, and native lock waits: counts,
    /// blocked time, sites.
    Locks(events::LocksArgs),
    /// GC pauses: count, total, max and share of wall time.
    Gc(events::GcArgs),
    /// Sampled allocations by site, stack or class; object ages by class.
    Alloc(events::AllocArgs),
    /// Native allocations (malloc and its kin) by stack, library, Java caller or
    /// C function; with --leaks, what was never freed.
    Nativemem(nativemem::NativememArgs),
    /// List the JVMs of this machine (pid, main class, whether jscope's agent is
    /// loaded), or with --collector those a collector knows.
    Jvms(jvms::JvmsArgs),
    /// Replay a queue from an exact trace: time in queue and service time per
    /// request, queue length over time, arrival rate, utilisation, Little's law.
    Queue(queue::QueueArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, &std::env::args().collect::<Vec<_>>()),
    };
    match run(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jscope: {}", one_line(&error_text(&e)));
            ExitCode::from(1)
        }
    }
}

/// Runs a command; the result is the process exit code.
fn run(mut command: Command) -> anyhow::Result<u8> {
    resolve_times(&mut command)?;
    match &command {
        Command::Record(a) => record::run(a).map(|code| code.clamp(0, 255) as u8),
        Command::Attach(a) => attach::attach(a).map(|_| 0),
        Command::Stop(a) => attach::stop(a).map(|_| 0),
        Command::Trace(t) => attach::trace(t).map(|_| 0),
        Command::Report(a) => analyze::report(a).map(|_| 0),
        Command::Flame(a) => flame::run(a).map(|_| 0),
        Command::Diff(a) => diff::run(a).map(|_| 0),
        Command::Collapsed(a) => flame::collapsed(a).map(|_| 0),
        Command::Callgraph(a) => analyze::callgraph(a).map(|_| 0),
        Command::Threads(a) => analyze::threads(a).map(|_| 0),
        Command::Info(a) => analyze::info(a).map(|_| 0),
        Command::Requests(a) => requests::run(a).map(|_| 0),
        Command::Serve(a) => serve::run("serve", a).map(|_| 0),
        Command::View(a) => serve::run("view", a).map(|_| 0),
        Command::Tree(a) if a.distributed => distributed::tree(a).map(|_| 0),
        Command::Tree(a) => trace::tree(&a.tree).map(|_| 0),
        Command::Merge(a) => distributed::merge(a).map(|_| 0),
        Command::Stats(a) => trace::stats(a).map(|_| 0),
        Command::Export(a) => export::run(a).map(|_| 0),
        Command::Convert(a) => convert::run(a).map(|_| 0),
        Command::Events(a) => events::events(a).map(|_| 0),
        Command::Locks(a) => events::locks(a).map(|_| 0),
        Command::Gc(a) => events::gc(a).map(|_| 0),
        Command::Alloc(a) => events::alloc(a).map(|_| 0),
        Command::Nativemem(a) => nativemem::run(a).map(|_| 0),
        Command::Jvms(a) => jvms::jvms(a).map(|_| 0),
        Command::Queue(a) => queue::run(a).map(|_| 0),
    }
}

/// Resolves the time window of every command that has one, before it runs.
pub fn resolve_times(command: &mut Command) -> Result<()> {
    match command {
        Command::Report(a) => source::resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Flame(a) => source::resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Collapsed(a) => {
            source::resolve_window(a.file.as_deref(), &a.source, &mut a.select)
        }
        Command::Callgraph(a) => {
            source::resolve_window(a.file.as_deref(), &a.source, &mut a.select)
        }
        Command::Export(a) => source::resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Diff(a) => {
            if a.select.has_wall_time() {
                bail!("jscope diff takes --from/--to as seconds from each side's start (or SIDE@FROM..TO), not wall-clock times");
            }
            a.select.resolve(|| Ok(0))
        }
        _ => Ok(()),
    }
}

/// The error and its causes joined by `: `, each cause once: an error whose
/// message already ends with its source's text (as thiserror's `{source}` does)
/// does not repeat it.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// Help and version go to stdout with success; anything else is a one-line
/// error naming the problem, with exit code 1 like every other failure.
fn usage_error(e: clap::Error, argv: &[String]) -> ExitCode {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = write!(io::stdout(), "{e}");
        return ExitCode::SUCCESS;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = write!(io::stderr(), "{e}");
        return ExitCode::from(1);
    }
    let text = e.render().to_string();
    let message = text.split("\n\nUsage:").next().unwrap_or(&text);
    let message = message.trim().trim_start_matches("error: ");
    // Said once, by the `(see jscope CMD --help)` below.
    let message = message.replace("For more information, try '--help'.", "");
    if let Some(hint) = record_hint(&e, argv) {
        eprintln!("jscope: {}; {hint}", one_line(&message));
        return ExitCode::from(1);
    }
    // The command's own help, which lists its options (`jscope report --help`).
    let help = match argv.get(1) {
        Some(cmd) if e.kind() != ErrorKind::InvalidSubcommand && !cmd.starts_with('-') => {
            format!("jscope {cmd} --help")
        }
        _ => "jscope --help".to_string(),
    };
    eprintln!("jscope: {} (see {help})", one_line(&message));
    ExitCode::from(1)
}

/// `jscope record -o f.jsc java -cp app.jar Main` (no `--`): the java command is
/// taken for jscope's own arguments; say where the `--` goes.
fn record_hint(e: &clap::Error, argv: &[String]) -> Option<String> {
    if argv.get(1).map(String::as_str) != Some("record") || argv.iter().any(|a| a == "--") {
        return None;
    }
    let missing_command =
        e.kind() == ErrorKind::MissingRequiredArgument && e.to_string().contains("JAVA ARGS");
    if e.kind() != ErrorKind::UnknownArgument && !missing_command {
        return None;
    }
    Some("put `--` before the java command: jscope record -o app.jsc -- java -cp app.jar com.acme.Main".into())
}

/// Joins a possibly multi-line message into one line; clap's `tip:` lines are
/// set off with `; ` rather than run on (`'--bogus' found; tip: ...`).
fn one_line(text: &str) -> String {
    let mut out = String::new();
    for line in text.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(if line.starts_with("tip:") { "; " } else { " " });
        }
        out.push_str(line);
    }
    out
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}
