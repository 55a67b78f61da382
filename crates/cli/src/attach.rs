//! `jscope attach` and `jscope stop`: load the agent into a running JVM.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::agent::{absolute, agent_options, find_agent, tracing_options};
use crate::agent::{SamplingArgs, TracingArgs};
use crate::duration::parse_duration;
use crate::signals;
use clap::{Args, Subcommand};

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

pub fn attach(args: &AttachArgs) -> Result<()> {
    needs_no_start(&args.sampling)?;
    let agent = find_agent()?;
    // The agent opens the file from inside the JVM, whose working directory differs.
    let file = absolute(&args.sampling.output)?;
    let options = agent_options(&args.sampling, &file)?;
    load(args.pid, args.timeout, &agent, &options)?;
    eprintln!("jscope: recording pid {} to {}", args.pid, file.display());
    let Some(duration) = args.duration else {
        eprintln!("jscope: stop with `jscope stop {}`", args.pid);
        return Ok(());
    };
    signals::catch_interrupts();
    wait(duration);
    let stop = if args.sampling.agent.quiet {
        "stop,quiet"
    } else {
        "stop"
    };
    load(args.pid, args.timeout, &agent, stop)?;
    eprintln!("jscope: stopped; recording written to {}", file.display());
    Ok(())
}

/// What only an agent loaded at JVM start can record is refused here, in the
/// attaching user's terminal: the agent attached with park among other event
/// kinds records the others and says why parks are missing only in the target
/// JVM's stderr.
fn needs_no_start(sampling: &SamplingArgs) -> Result<()> {
    let raw = |key: &str| {
        let prefix = format!("{key}=");
        sampling
            .agent
            .agent_opt
            .iter()
            .filter_map(move |o| o.strip_prefix(&prefix).map(str::to_string))
    };
    let events: Vec<String> = sampling
        .events
        .iter()
        .cloned()
        .chain(raw("events"))
        .collect();
    let park = events
        .iter()
        .any(|e| e.split([',', '+', ';', ':']).any(|k| k.trim() == "park"));
    let threshold =
        sampling.agent.park_threshold.is_some() || raw("parkthreshold").next().is_some();
    if park || threshold {
        bail!("park events need the agent loaded at JVM start (jscope record, or -agentpath); attach records the other event kinds: leave out park");
    }
    if sampling.agent.remote.is_some() {
        bail!("--remote needs the agent loaded at JVM start (jscope record, or -agentpath)");
    }
    Ok(())
}

pub fn stop(args: &StopArgs) -> Result<()> {
    let agent = find_agent()?;
    load(args.pid, args.timeout, &agent, "stop")?;
    eprintln!("jscope: stopped the recording in pid {}", args.pid);
    Ok(())
}

/// `jscope trace start|stop PID`: exact tracing switched on a running JVM.
pub fn trace(command: &TraceCommand) -> Result<()> {
    let agent = find_agent()?;
    match command {
        TraceCommand::Start(args) => {
            let options = trace_start_options(args)?;
            load(args.pid, args.timeout, &agent, &options)?;
            eprintln!("jscope: tracing in pid {}", args.pid);
        }
        TraceCommand::Stop(args) => {
            load(args.pid, args.timeout, &agent, "tracestop")?;
            eprintln!("jscope: stopped tracing in pid {}", args.pid);
        }
    }
    Ok(())
}

fn trace_start_options(args: &TraceStartArgs) -> Result<String> {
    let mut options = tracing_options(&args.tracing)?;
    if args.tracing.trace.is_none() && args.tracing.trace_config.is_none() {
        bail!("say what to trace with --trace PATTERNS or --trace-config FILE");
    }
    if let Some(out) = &args.output {
        // The agent opens the file from inside the JVM, whose working directory differs.
        options.push(format!("file={}", absolute(out)?.display()));
    }
    Ok(options.join(","))
}

/// Sleeps for `duration` or until Ctrl-C, whichever comes first.
fn wait(duration: Duration) {
    let deadline = Instant::now() + duration;
    while !signals::interrupted() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

fn load(pid: u32, timeout: Duration, agent: &Path, options: &str) -> Result<()> {
    let vm = jscope_attach::attach(pid, timeout)
        .with_context(|| format!("cannot attach to pid {pid}"))?;
    let code = vm
        .load_agent(agent, options)
        .with_context(|| format!("pid {pid} could not load {}", agent.display()))?;
    if code != 0 {
        bail!(
            "the agent in pid {pid} refused `{options}` (code {code}; the JVM's stderr says why)"
        );
    }
    Ok(())
}
