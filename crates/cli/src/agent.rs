//! Finding the agent library and spelling its option string.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::duration::{agent_duration, parse_duration};
use clap::Args;

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
    /// With --stream-to tls://HOST:PORT: the CA (PEM) that signed the collector's
    /// certificate; default: the system's CAs.
    #[arg(long, value_name = "FILE", requires = "stream_to")]
    pub tls_ca: Option<PathBuf>,
    /// With --stream-to tls://...: a client certificate (PEM) for a collector that
    /// wants one (`serve --client-ca`).
    #[arg(long, value_name = "FILE", requires_all = ["stream_to", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// With --stream-to tls://...: do not check the collector's certificate.
    #[arg(long, requires = "stream_to")]
    pub insecure: bool,
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
    /// Sample native allocations (malloc, calloc, realloc, posix_memalign,
    /// aligned_alloc) about every BYTES allocated (default 512k; 0: every call),
    /// with the frees of the sampled blocks, for `jscope nativemem`. Write
    /// `--nativemem=BYTES` before positional arguments.
    #[arg(long, value_name = "BYTES", num_args = 0..=1, default_missing_value = "")]
    pub nativemem: Option<String>,
    /// Sample waits for pthread mutexes and read-write locks about every NS
    /// waited (default 10us; 0: every wait), for `jscope locks` and
    /// `--mode nativelock` flame graphs.
    #[arg(long, value_name = "NS", num_args = 0..=1, default_missing_value = "")]
    pub nativelock: Option<String>,
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

pub const AGENT_FILE: &str = "libjscope_agent.so";
pub const AGENT_ENV: &str = "JSCOPE_AGENT";

/// `$JSCOPE_AGENT` when set, else the library next to the `jscope` executable,
/// where `cargo build` and the release archive both put it.
pub fn find_agent() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(AGENT_ENV) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{AGENT_ENV}={} is not a file", path.display());
        }
        return absolute(&path);
    }
    let exe = std::env::current_exe().context("cannot locate the jscope executable")?;
    let path = exe.with_file_name(AGENT_FILE);
    if !path.is_file() {
        bail!(
            "agent library not found at {} (set {AGENT_ENV} to its path)",
            path.display()
        );
    }
    Ok(path)
}

pub fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

/// The agent's option string for `sampling`, writing to `file`.
pub fn agent_options(sampling: &SamplingArgs, file: &Path) -> Result<String> {
    check_modes(&sampling.mode)?;
    let file = file.to_str().context("the output path is not UTF-8")?;
    if file.contains(',') {
        // The agent splits its options at commas.
        bail!("the output path must not contain a comma: {file}");
    }
    let mut options = Vec::new();
    // Always said, `none` too: the agent's default is cpu.
    options.push(format!("mode={}", sampling.mode));
    if let Some(i) = sampling.interval {
        options.push(format!("interval={}", agent_duration(i)));
    }
    if let Some(i) = sampling.snap_interval {
        options.push(format!("snapinterval={}", agent_duration(i)));
    }
    if let Some(d) = sampling.depth {
        options.push(format!("depth={d}"));
    }
    options.extend(tracing_options(&sampling.tracing)?);
    if let Some(e) = &sampling.events {
        // The agent takes event kinds joined by `+`, since commas split its options.
        options.push(format!("events={}", e.replace(',', "+")));
    }
    options.extend(keyed("allocrate", &sampling.alloc_rate)?);
    options.extend(keyed("collector", &sampling.stream_to)?);
    options.extend(keyed("token", &sampling.stream_token)?);
    options.extend(path_option("tlsca", &sampling.tls_ca)?);
    options.extend(path_option("tlscert", &sampling.tls_cert)?);
    options.extend(path_option("tlskey", &sampling.tls_key)?);
    if sampling.insecure {
        options.push("tlsinsecure".into());
    }
    options.extend(more_options(&sampling.agent)?);
    options.push(format!("file={file}"));
    Ok(options.join(","))
}

/// The agent options of `record`'s and `attach`'s other flags and `--agent-opt`.
fn more_options(a: &AgentArgs) -> Result<Vec<String>> {
    let mut options = Vec::new();
    let flags = [
        (a.object_ages, "objectages"),
        (a.monitor_owners, "monitorowners"),
        (a.quiet, "quiet"),
    ];
    options.extend(flags.iter().filter(|f| f.0).map(|f| f.1.to_string()));
    options.extend(keyed("parkthreshold", &a.park_threshold)?);
    options.extend(keyed("cstack", &a.cstack)?);
    options.extend(keyed("event", &a.event)?);
    if let Some(n) = a.event_period {
        // After --interval's, so the count is the one the agent keeps.
        options.push(format!("interval={n}"));
    }
    options.extend(path_option("eventsconfig", &a.events_config)?);
    match a.remote.as_deref() {
        None => {}
        Some("") => options.push("remote".into()),
        Some(p) => options.push(format!("remote={}", option_value(p)?)),
    }
    for (key, value) in [("nativemem", &a.nativemem), ("nativelock", &a.nativelock)] {
        match value.as_deref() {
            None => {}
            Some("") => options.push(key.to_string()),
            Some(v) => options.push(format!("{key}={}", option_value(v)?)),
        }
    }
    options.extend(keyed("service", &a.service)?);
    let mut labels: Vec<String> = a.labels.iter().cloned().collect();
    for l in &a.label {
        match jscope_store::jvms::parse_label(l) {
            Some((k, v)) if !l.contains([';', ':']) => labels.push(format!("{k}:{v}")),
            _ => bail!("--label wants KEY=VALUE without `:` or `;`, not `{l}`"),
        }
    }
    if !labels.is_empty() {
        options.extend(keyed("labels", &Some(labels.join(";")))?);
    }
    options.extend(keyed("buffer", &a.stream_buffer)?);
    if let Some(n) = a.wall_threads {
        options.push(format!("wallthreads={n}"));
    }
    if let Some(n) = a.trace_buffer {
        options.push(format!("tracebuffer={n}"));
    }
    for o in &a.agent_opt {
        let key = o.split('=').next().unwrap_or("");
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_lowercase()) {
            bail!("--agent-opt wants KEY=VALUE or KEY with a lower-case agent option name (docs/AGENT.md), not `{o}`");
        }
        if key == "file" {
            bail!("--agent-opt file=... would clash with -o; use -o FILE");
        }
        options.push(option_value(o)?.to_string());
    }
    Ok(options)
}

/// The agent's tracing options (`trace=`, `traceconfig=`, `tracecpu`, `traceagg`).
pub fn tracing_options(t: &TracingArgs) -> Result<Vec<String>> {
    let mut options = Vec::new();
    options.extend(keyed("trace", &t.trace)?);
    options.extend(path_option("traceconfig", &t.trace_config)?);
    if t.trace_cpu {
        options.push("tracecpu".into());
    }
    options.extend(keyed("tracecounter", &t.trace_counter)?);
    if t.trace_agg {
        options.push("traceagg".into());
    }
    Ok(options)
}

/// `key=value` when the value is given.
fn keyed(key: &str, value: &Option<String>) -> Result<Option<String>> {
    value
        .as_deref()
        .map(|v| Ok(format!("{key}={}", option_value(v)?)))
        .transpose()
}

/// `key=PATH` made absolute when given: the agent opens the file from inside the
/// JVM, whose working directory differs.
fn path_option(key: &str, path: &Option<PathBuf>) -> Result<Option<String>> {
    path.as_deref()
        .map(|p| {
            Ok(format!(
                "{key}={}",
                option_value(&absolute(p)?.to_string_lossy())?
            ))
        })
        .transpose()
}

/// The agent splits its options at commas, so a value must not hold one.
fn option_value(v: &str) -> Result<&str> {
    if v.contains(',') {
        bail!("agent option values must not contain a comma: {v}");
    }
    Ok(v)
}

/// Rejects bad modes here, where the error is one clear line, rather than in
/// the JVM, which would run unprofiled.
fn check_modes(modes: &str) -> Result<()> {
    if modes == "none" {
        // Tracing or events only.
        return Ok(());
    }
    for name in modes.split('+') {
        if !matches!(name, "cpu" | "wall" | "snapshot") {
            bail!("unknown mode `{name}` (expected cpu, wall or snapshot, combined with +)");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sampling(mode: &str) -> SamplingArgs {
        SamplingArgs {
            mode: mode.into(),
            interval: Some(Duration::from_millis(5)),
            snap_interval: None,
            depth: Some(64),
            output: "out.jsc".into(),
            tracing: TracingArgs::default(),
            events: None,
            alloc_rate: None,
            stream_to: None,
            stream_token: None,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
            insecure: false,
            agent: AgentArgs::default(),
        }
    }

    #[test]
    fn options_carry_mode_interval_depth_and_file() {
        let o = agent_options(&sampling("cpu+snapshot"), Path::new("/tmp/x.jsc")).unwrap();
        assert_eq!(
            o,
            "mode=cpu+snapshot,interval=5000000ns,depth=64,file=/tmp/x.jsc"
        );
    }

    #[test]
    fn tracing_events_and_streaming_become_agent_options() {
        let mut s = sampling("none");
        s.tracing.trace = Some("com.acme.*;!com.acme.util.*".into());
        s.tracing.trace_agg = true;
        s.events = Some("gc+monitors".into());
        s.stream_to = Some("127.0.0.1:7000".into());
        let o = agent_options(&s, Path::new("/tmp/x.jsc")).unwrap();
        assert_eq!(
            o,
            "mode=none,interval=5000000ns,depth=64,trace=com.acme.*;!com.acme.util.*,traceagg,events=gc+monitors,collector=127.0.0.1:7000,file=/tmp/x.jsc"
        );
        s.tracing.trace_counter = Some("page-faults".into());
        assert!(agent_options(&s, Path::new("/tmp/x.jsc"))
            .unwrap()
            .contains(",tracecounter=page-faults,traceagg,"));
        s.tracing.trace_counter = None;
        s.events = Some("gc,monitors".into());
        assert!(agent_options(&s, Path::new("/tmp/x.jsc"))
            .unwrap()
            .contains("events=gc+monitors,"));
        s.stream_to = Some("127.0.0.1:7000|127.0.0.1:7001".into());
        assert!(agent_options(&s, Path::new("/tmp/x.jsc"))
            .unwrap()
            .contains(",collector=127.0.0.1:7000|127.0.0.1:7001,"));
        s.stream_to = Some("a,b".into());
        assert!(agent_options(&s, Path::new("/tmp/x.jsc")).is_err());
        s.stream_to = Some("tls://127.0.0.1:7000".into());
        s.tls_ca = Some("/etc/jscope/ca.pem".into());
        s.tls_cert = Some("/etc/jscope/agent.pem".into());
        s.tls_key = Some("/etc/jscope/agent-key.pem".into());
        s.insecure = true;
        assert!(agent_options(&s, Path::new("/tmp/x.jsc")).unwrap().contains(
            ",collector=tls://127.0.0.1:7000,tlsca=/etc/jscope/ca.pem,tlscert=/etc/jscope/agent.pem,tlskey=/etc/jscope/agent-key.pem,tlsinsecure,"
        ));
    }

    #[test]
    fn every_agent_option_is_reachable() {
        let mut s = sampling("cpu");
        s.stream_to = Some("127.0.0.1:7000".into());
        s.agent = AgentArgs {
            object_ages: true,
            monitor_owners: true,
            park_threshold: Some("5ms".into()),
            events_config: Some("/etc/events.cfg".into()),
            remote: Some("rmi+http".into()),
            labels: Some("app:shop;env:prod".into()),
            label: vec!["pod=a-1".into()],
            service: Some("shop".into()),
            stream_buffer: Some("32m".into()),
            wall_threads: Some(32),
            trace_buffer: Some(4096),
            quiet: true,
            cstack: Some("no".into()),
            event: Some("page-faults".into()),
            event_period: Some(100),
            nativemem: Some("64k".into()),
            nativelock: Some(String::new()),
            agent_opt: vec!["clockoffset=-3m".into()],
        };
        let o = agent_options(&s, Path::new("/tmp/x.jsc")).unwrap();
        assert!(o.ends_with(
            "collector=127.0.0.1:7000,objectages,monitorowners,quiet,parkthreshold=5ms,cstack=no,event=page-faults,interval=100,eventsconfig=/etc/events.cfg,remote=rmi+http,nativemem=64k,nativelock,service=shop,labels=app:shop;env:prod;pod:a-1,buffer=32m,wallthreads=32,tracebuffer=4096,clockoffset=-3m,file=/tmp/x.jsc"
        ), "{o}");
        s.agent = AgentArgs {
            remote: Some(String::new()),
            ..AgentArgs::default()
        };
        let o = agent_options(&s, Path::new("/tmp/x.jsc")).unwrap();
        assert!(o.contains(",remote,"), "{o}");
        s.agent.label = vec!["novalue".into()];
        assert!(agent_options(&s, Path::new("/tmp/x.jsc")).is_err());
        s.agent.label.clear();
        for bad in ["Mode=cpu", "=x", "file=/tmp/y.jsc", "a=b,c"] {
            s.agent.agent_opt = vec![bad.into()];
            assert!(agent_options(&s, Path::new("/tmp/x.jsc")).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_modes_and_commas_are_refused() {
        assert!(agent_options(&sampling("cpu+gpu"), Path::new("/tmp/x.jsc")).is_err());
        assert!(agent_options(&sampling("cpu"), Path::new("/tmp/a,b.jsc")).is_err());
    }
}
