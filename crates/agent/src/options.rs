//! Parsing of the agent option string (`key=value,key,...`) into [`Options`].
//!
//! Pure code: no JVM needed, so every rule is unit-tested here.

use std::time::Duration;

pub use crate::clock::DEFAULT_INTERVAL;
/// Default interval between two snapshots of all threads.
pub const DEFAULT_SNAP_INTERVAL: Duration = Duration::from_millis(100);
/// Default maximum number of frames kept per stack.
pub const DEFAULT_DEPTH: u32 = 256;
/// Default number of threads signalled per wall-clock tick.
pub const DEFAULT_WALL_THREADS: u32 = 16;
/// Default output file name pattern (used unless only a collector is asked for).
pub const DEFAULT_FILE: &str = "jscope-%p.jsc";
/// Default bound of the chunks kept for the collector until it acknowledges them.
pub const DEFAULT_BUFFER: usize = 16 << 20;
/// Smaller resend buffers could not hold one chunk.
pub const MIN_BUFFER: usize = 4 << 10;
pub const MAX_BUFFER: usize = 1 << 30;

/// Frames deeper than this are never walked: the ring's slots are sized by depth.
pub const MAX_DEPTH: u32 = 2048;
/// Intervals below this would make the agent the main load on the machine.
pub const MIN_INTERVAL: Duration = Duration::from_micros(100);

/// A problem with the option string; its Display is the one line printed on stderr.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionsError {
    #[error("unknown option `{0}`")]
    UnknownKey(String),
    #[error("option `{0}` needs a value (`{0}=...`)")]
    MissingValue(String),
    #[error("option `{0}` takes no value")]
    UnexpectedValue(String),
    #[error("unknown mode `{0}` (expected cpu, wall or snapshot, combined with `+`, or none)")]
    UnknownMode(String),
    #[error("bad duration `{value}` for `{key}` (expected e.g. 10ms, 500us, 1s; at least 100us)")]
    BadDuration { key: String, value: String },
    #[error("bad number `{value}` for `{key}` (expected an integer from 1 to {max})")]
    BadNumber {
        key: String,
        value: String,
        max: u32,
    },
    #[error("unknown event `{0}` (expected cpu-clock, page-faults, context-switches, cycles, instructions or cache-misses)")]
    UnknownEvent(String),
    #[error("option `event` samples in cpu mode, which `mode={0}` leaves out (e.g. mode=cpu+{0})")]
    EventWithoutCpu(String),
    #[error("bad cstack `{0}` (expected vm, vmx, asgct, dwarf, fp or no)")]
    BadCStack(String),
    #[error("bad event count `{0}` for `interval` (expected an integer from 1)")]
    BadEventCount(String),
    #[error("empty file name")]
    EmptyFile,
    #[error("bad collector address `{0}` (expected HOST:PORT, several joined by |)")]
    BadCollector(String),
    #[error("bad size `{value}` for `{key}` (expected e.g. 512k, 16m; from 4k to 1g)")]
    BadSize { key: String, value: String },
    #[error("bad labels `{0}` (expected key:value;key:value)")]
    BadLabels(String),
    #[error("bad service name `{0}` (expected a name without `:`, `;` or `,`)")]
    BadService(String),
    #[error("option `{0}` only applies with `collector=HOST:PORT`")]
    NeedsCollector(String),
    #[error("collectors must all be tls://HOST:PORT or all HOST:PORT")]
    MixedTls,
    #[error("tlsca, tlscert, tlskey and tlsinsecure only apply with `collector=tls://HOST:PORT`")]
    NeedsTls,
    #[error("a client certificate needs both tlscert and tlskey")]
    HalfClientCert,
    /// A tracing option (crate::trace) with its own message.
    #[error("{0}")]
    Trace(String),
    /// An events option (crate::events) with its own message.
    #[error("{0}")]
    Events(String),
    /// A remote-call option (crate::remote) with its own message.
    #[error("{0}")]
    Remote(String),
    /// A native hooks option (crate::interpose) with its own message.
    #[error("{0}")]
    Native(String),
}

/// Which sampling engines run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    pub cpu: bool,
    pub wall: bool,
    pub snapshot: bool,
}

impl Modes {
    /// The header's spelling, e.g. "cpu+snapshot".
    pub fn label(&self) -> String {
        let names = [
            (self.cpu, "cpu"),
            (self.wall, "wall"),
            (self.snapshot, "snapshot"),
        ];
        let on: Vec<&str> = names
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        on.join("+")
    }

    /// True when a signal-driven engine needs the async stack walker.
    pub fn signals(&self) -> bool {
        self.cpu || self.wall
    }
}

/// Where and how to stream chunks to a collector (`collector=HOST:PORT|HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectorOptions {
    /// The collectors to try in turn, each `HOST:PORT`, resolved when connecting.
    pub addrs: Vec<String>,
    /// Empty when the collector needs none.
    pub token: String,
    pub labels: Vec<(String, String)>,
    /// Bytes of chunks kept until acknowledged; beyond it chunks are dropped.
    pub buffer: usize,
    /// `collector=tls://...`: what the TLS client trusts and shows; `None` is plain TCP.
    pub tls: Option<TlsOptions>,
}

/// `tlsca=FILE` (else the system's CAs), `tlscert=FILE` and `tlskey=FILE` (a client
/// certificate), `tlsinsecure` (no check of the collector's certificate).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    pub ca: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    pub insecure: bool,
}

impl CollectorOptions {
    /// The collectors as the option gives them (`HOST:PORT`, or several joined
    /// by `|`), for the header and messages.
    pub fn addr(&self) -> String {
        let scheme = if self.tls.is_some() { "tls://" } else { "" };
        let all: Vec<String> = self.addrs.iter().map(|a| format!("{scheme}{a}")).collect();
        all.join("|")
    }
}

/// Everything the option string can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub modes: Modes,
    /// Interval of the cpu and wall engines.
    pub interval: Duration,
    /// Interval of the snapshot engine.
    pub snap_interval: Duration,
    /// File name pattern (%p and %t not yet expanded) when given; see [`Options::file_pattern`].
    pub file: Option<String>,
    pub collector: Option<CollectorOptions>,
    pub depth: u32,
    pub wall_threads: u32,
    /// Stop a running recording instead of starting one (dynamic attach).
    pub stop: bool,
    /// No informational lines on stderr (errors are still printed).
    pub quiet: bool,
    /// Exact method tracing (`trace=`, `traceconfig=`, ...; see crate::trace).
    pub trace: crate::trace::TraceOptions,
    /// JVM and user events (`events=`, `allocrate=`, ...; see crate::events).
    pub events: crate::events::EventOptions,
    /// Remote calls (`remote`) and a simulated clock offset (`clockoffset=`).
    pub remote: crate::remote::RemoteOptions,
    /// The service this JVM belongs to (`service=NAME`), in the header; empty: none.
    pub service: String,
    /// Labels (`labels=K:V;K:V`), in the header and sent to a collector.
    pub labels: Vec<(String, String)>,
    /// The stack walker, native frames and non-Java threads in cpu mode
    /// (`cstack=vm|vmx|asgct|dwarf|fp|no`).
    pub cstack: crate::native::CStack,
    /// The perf event cpu mode samples on (`event=`), with its period (events,
    /// or nanoseconds for clocks); None: the thread's CPU time every `interval`.
    pub event: Option<(crate::native::perf::PerfKind, u64)>,
    /// Native allocations and native lock waits (`nativemem=`, `nativelock=`;
    /// see crate::interpose).
    pub native: crate::interpose::NativeOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            modes: Modes {
                cpu: true,
                ..Modes::default()
            },
            interval: DEFAULT_INTERVAL,
            snap_interval: DEFAULT_SNAP_INTERVAL,
            file: None,
            collector: None,
            depth: DEFAULT_DEPTH,
            wall_threads: DEFAULT_WALL_THREADS,
            stop: false,
            quiet: false,
            trace: Default::default(),
            events: Default::default(),
            remote: Default::default(),
            service: String::new(),
            labels: Vec::new(),
            cstack: crate::native::CStack::default(),
            event: None,
            native: Default::default(),
        }
    }
}

impl Options {
    /// Parses `key=value,...`; an empty or absent string gives the defaults. One
    /// pair of surrounding double quotes is ignored (attach tools pass them on).
    pub fn parse(text: &str) -> Result<Options, OptionsError> {
        let text = text.trim();
        let text = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(text);
        let mut options = Options::default();
        let mut interval_text: Option<String> = None;
        let mut snap_interval = None;
        let mut link = LinkOptions::default();
        let mut mode_given = false;
        // `events=gc,alloc`: the kinds after the first are bare items.
        let mut in_events = false;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            let continues_events = std::mem::replace(&mut in_events, key == "events")
                && value.is_none()
                && crate::events::EventOptions::continues_list(key);
            if continues_events {
                in_events = true;
                options.events.add_kind(key).map_err(OptionsError::Events)?;
                continue;
            }
            match key {
                "mode" => {
                    options.modes = parse_modes(need(key, value)?)?;
                    mode_given = true;
                }
                "interval" => interval_text = Some(need(key, value)?.to_string()),
                "cstack" => {
                    let v = need(key, value)?;
                    options.cstack = crate::native::CStack::parse(v)
                        .ok_or_else(|| OptionsError::BadCStack(v.to_string()))?;
                }
                "event" => {
                    let v = need(key, value)?;
                    let kind = crate::native::perf::PerfKind::parse(v)
                        .ok_or_else(|| OptionsError::UnknownEvent(v.to_string()))?;
                    options.event = Some((kind, kind.default_period()));
                }
                "snapinterval" => snap_interval = Some(parse_duration(key, need(key, value)?)?),
                "file" => options.file = Some(parse_file(need(key, value)?)?),
                "collector" => link.addrs = Some(parse_collectors(need(key, value)?)?),
                "token" => link.token = Some(need(key, value)?.to_string()),
                "tlsca" => link.tls.ca = Some(need(key, value)?.to_string()),
                "tlscert" => link.tls.cert = Some(need(key, value)?.to_string()),
                "tlskey" => link.tls.key = Some(need(key, value)?.to_string()),
                "tlsinsecure" => link.tls.insecure = flag(key, value)?,
                "labels" => options.labels = parse_labels(need(key, value)?)?,
                "service" => options.service = parse_service(need(key, value)?)?,
                "buffer" => link.buffer = Some(parse_size(key, need(key, value)?)?),
                "depth" => options.depth = parse_number(key, need(key, value)?, MAX_DEPTH)?,
                "wallthreads" => {
                    options.wall_threads = parse_number(key, need(key, value)?, 1 << 16)?
                }
                "stop" => options.stop = flag(key, value)?,
                "quiet" => options.quiet = flag(key, value)?,
                k if crate::events::EventOptions::owns(k) => {
                    options.events.set(k, value).map_err(OptionsError::Events)?
                }
                k if crate::trace::TraceOptions::owns(k) => {
                    options.trace.set(k, value).map_err(OptionsError::Trace)?
                }
                k if crate::remote::RemoteOptions::owns(k) => {
                    options.remote.set(k, value).map_err(OptionsError::Remote)?
                }
                k if crate::interpose::NativeOptions::owns(k) => {
                    options.native.set(k, value).map_err(OptionsError::Native)?
                }
                _ => return Err(OptionsError::UnknownKey(key.to_string())),
            }
        }
        if (options.trace.enabled() || options.native.any()) && !mode_given {
            // Tracing or native hooks alone: no sampling unless asked.
            options.modes = Modes::default();
        }
        // `interval=` counts events for a counting event, else it is a duration.
        let mut interval = None;
        match (&mut options.event, interval_text) {
            (Some((kind, period)), Some(text)) if !kind.is_clock() => {
                *period = text
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(OptionsError::BadEventCount(text))?;
            }
            (event, Some(text)) => {
                let d = parse_duration("interval", &text)?;
                if let Some((_, period)) = event {
                    *period = d.as_nanos() as u64;
                }
                interval = Some(d);
            }
            _ => {}
        }
        if options.event.is_some() && !mode_given {
            options.modes = Modes {
                cpu: true,
                ..Modes::default()
            };
        }
        if options.event.is_some() && !options.modes.cpu {
            // Else the event was dropped without a word (mode=wall recorded wall).
            let label = options.modes.label();
            let label = if label.is_empty() {
                "none".into()
            } else {
                label
            };
            return Err(OptionsError::EventWithoutCpu(label));
        }
        options.apply_intervals(interval, snap_interval);
        options.collector = link.finish(&options.labels)?;
        Ok(options)
    }

    /// What one cpu sample stands for: nanoseconds of CPU time, or the event
    /// period when sampling on a counting event.
    pub fn cpu_weight(&self) -> u64 {
        match self.event {
            Some((_, period)) => period,
            None => self.interval.as_nanos() as u64,
        }
    }

    /// The file to write: the one given, else the default unless the chunks go to a
    /// collector only.
    pub fn file_pattern(&self) -> Option<&str> {
        match (&self.file, &self.collector) {
            (Some(file), _) => Some(file),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_FILE),
        }
    }

    /// `interval=` sets the snapshot interval too when snapshot is the only mode,
    /// so `mode=snapshot,interval=50ms` means what it says.
    fn apply_intervals(&mut self, interval: Option<Duration>, snap: Option<Duration>) {
        if let Some(i) = interval {
            self.interval = i;
        }
        let snapshot_only = !self.modes.signals();
        self.snap_interval = match (snap, interval) {
            (Some(s), _) => s,
            (None, Some(i)) if snapshot_only => i,
            _ => DEFAULT_SNAP_INTERVAL,
        };
    }
}

/// The collector options as given, checked together once all are known.
#[derive(Default)]
struct LinkOptions {
    addrs: Option<Vec<String>>,
    token: Option<String>,
    buffer: Option<usize>,
    tls: TlsOptions,
}

impl LinkOptions {
    fn finish(self, labels: &[(String, String)]) -> Result<Option<CollectorOptions>, OptionsError> {
        let Some(addrs) = self.addrs else {
            let stray = [
                ("token", self.token.is_some()),
                ("buffer", self.buffer.is_some()),
                ("tlsca", self.tls.ca.is_some()),
                ("tlscert", self.tls.cert.is_some()),
                ("tlskey", self.tls.key.is_some()),
                ("tlsinsecure", self.tls.insecure),
            ];
            return match stray.iter().find(|(_, given)| *given) {
                Some((key, _)) => Err(OptionsError::NeedsCollector(key.to_string())),
                None => Ok(None),
            };
        };
        let tls_given = self.tls != TlsOptions::default();
        let with_tls = addrs.iter().filter(|a| a.starts_with("tls://")).count();
        if with_tls != 0 && with_tls != addrs.len() {
            return Err(OptionsError::MixedTls);
        }
        if with_tls == 0 && tls_given {
            return Err(OptionsError::NeedsTls);
        }
        if self.tls.cert.is_some() != self.tls.key.is_some() {
            return Err(OptionsError::HalfClientCert);
        }
        let addrs = addrs
            .into_iter()
            .map(|a| a.trim_start_matches("tls://").to_string())
            .collect();
        Ok(Some(CollectorOptions {
            addrs,
            tls: (with_tls != 0).then_some(self.tls),
            token: self.token.unwrap_or_default(),
            labels: labels.to_vec(),
            buffer: self.buffer.unwrap_or(DEFAULT_BUFFER),
        }))
    }
}

fn need<'a>(key: &str, value: Option<&'a str>) -> Result<&'a str, OptionsError> {
    value.ok_or_else(|| OptionsError::MissingValue(key.to_string()))
}

fn flag(key: &str, value: Option<&str>) -> Result<bool, OptionsError> {
    match value {
        None | Some("true") | Some("1") => Ok(true),
        Some("false") | Some("0") => Ok(false),
        Some(_) => Err(OptionsError::UnexpectedValue(key.to_string())),
    }
}

fn parse_modes(text: &str) -> Result<Modes, OptionsError> {
    let mut modes = Modes::default();
    // No sampling, as `jscope record --mode none` asks: tracing or events alone.
    if text.trim() == "none" {
        return Ok(modes);
    }
    for name in text.split('+').map(str::trim) {
        match name {
            "cpu" => modes.cpu = true,
            "wall" => modes.wall = true,
            "snapshot" => modes.snapshot = true,
            _ => return Err(OptionsError::UnknownMode(name.to_string())),
        }
    }
    Ok(modes)
}

/// Parses `10ms`, `500us`, `2s`, `100000ns`; a bare number is milliseconds.
pub fn parse_duration(key: &str, text: &str) -> Result<Duration, OptionsError> {
    let bad = || OptionsError::BadDuration {
        key: key.to_string(),
        value: text.to_string(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let nanos_per_unit: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" | "" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad()),
    };
    let d = Duration::from_nanos(n.checked_mul(nanos_per_unit).ok_or_else(bad)?);
    if d < MIN_INTERVAL {
        return Err(bad());
    }
    Ok(d)
}

fn parse_number(key: &str, text: &str, max: u32) -> Result<u32, OptionsError> {
    let bad = || OptionsError::BadNumber {
        key: key.to_string(),
        value: text.to_string(),
        max,
    };
    match text.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

fn parse_file(text: &str) -> Result<String, OptionsError> {
    if text.is_empty() {
        return Err(OptionsError::EmptyFile);
    }
    Ok(text.to_string())
}

/// Checks `HOST:PORT|HOST:PORT|...`: one or more collectors, tried in turn.
fn parse_collectors(text: &str) -> Result<Vec<String>, OptionsError> {
    text.split('|').map(|a| parse_collector(a.trim())).collect()
}

/// Checks `HOST:PORT` (a bracketed IPv6 host included) without resolving it: name
/// resolution could block, and the JVM must not wait for it.
fn parse_collector(text: &str) -> Result<String, OptionsError> {
    let bad = || OptionsError::BadCollector(text.to_string());
    let addr = text.strip_prefix("tls://").unwrap_or(text);
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    match port.parse::<u16>() {
        Ok(p) if p != 0 && !host.is_empty() => Ok(text.to_string()),
        _ => Err(bad()),
    }
}

/// A service name: anything printable but `;` and `:`, which the header's label
/// list uses (commas already split the options).
fn parse_service(text: &str) -> Result<String, OptionsError> {
    if text.is_empty() || text.contains([';', ':']) || text.chars().any(char::is_control) {
        return Err(OptionsError::BadService(text.to_string()));
    }
    Ok(text.to_string())
}

/// The header's spelling of labels, `key:value;key:value`, as `labels=` takes them.
pub fn labels_text(labels: &[(String, String)]) -> String {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    pairs.join(";")
}

/// Parses `key:value;key:value` (an empty string is no labels).
fn parse_labels(text: &str) -> Result<Vec<(String, String)>, OptionsError> {
    let bad = || OptionsError::BadLabels(text.to_string());
    text.split(';')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().into(), v.trim().into())),
            _ => Err(bad()),
        })
        .collect()
}

/// Parses a byte size: `65536`, `512k`, `16m`, `1g` (powers of 1024).
pub fn parse_size(key: &str, text: &str) -> Result<usize, OptionsError> {
    let bad = || OptionsError::BadSize {
        key: key.to_string(),
        value: text.to_string(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: usize = digits.parse().map_err(|_| bad())?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        _ => return Err(bad()),
    };
    let bytes = n.checked_mul(1 << shift).ok_or_else(bad)?;
    if !(MIN_BUFFER..=MAX_BUFFER).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes)
}

/// Expands `%p` (pid) and `%t` (start time, yyyymmdd-hhmmss) in a file pattern;
/// `%%` is a literal percent sign.
pub fn expand_file_pattern(pattern: &str, pid: u32, start_time: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&pid.to_string()),
            Some('t') => out.push_str(start_time),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_string_gives_cpu_defaults() {
        let o = Options::parse("").unwrap();
        assert_eq!(o, Options::default());
        assert_eq!(o.modes.label(), "cpu");
        assert_eq!(o.interval, Duration::from_millis(10));
        assert_eq!(o.snap_interval, Duration::from_millis(100));
        assert_eq!(o.file_pattern(), Some("jscope-%p.jsc"));
        assert_eq!(o.collector, None);
    }

    #[test]
    fn tls_collectors_take_their_files() {
        let o = Options::parse(
            "collector=tls://a:7000|tls://[::1]:7001,tlsca=/ca.pem,tlscert=/c.pem,tlskey=/k.pem",
        )
        .unwrap();
        let c = o.collector.unwrap();
        assert_eq!(c.addrs, ["a:7000", "[::1]:7001"]);
        assert_eq!(c.addr(), "tls://a:7000|tls://[::1]:7001");
        let tls = c.tls.unwrap();
        assert_eq!(tls.ca.as_deref(), Some("/ca.pem"));
        assert_eq!(tls.key.as_deref(), Some("/k.pem"));
        assert!(!tls.insecure);
        let insecure = Options::parse("collector=tls://a:1,tlsinsecure").unwrap();
        assert!(insecure.collector.unwrap().tls.unwrap().insecure);
        let plain = Options::parse("collector=a:1").unwrap();
        assert_eq!(plain.collector.unwrap().tls, None);
        let err = |s: &str| Options::parse(s).unwrap_err().to_string();
        assert_eq!(
            err("collector=tls://a:1|b:2"),
            "collectors must all be tls://HOST:PORT or all HOST:PORT"
        );
        assert!(err("collector=a:1,tlsca=/ca.pem").starts_with("tlsca, tlscert"));
        assert!(err("tlsca=/ca.pem").contains("only applies with"));
        assert_eq!(
            err("collector=tls://a:1,tlscert=/c.pem"),
            "a client certificate needs both tlscert and tlskey"
        );
        assert!(err("collector=tls://a").starts_with("bad collector address"));
    }

    #[test]
    fn collector_options_parse_together() {
        let o = Options::parse(
            "collector=127.0.0.1:7000,token=s3cret,buffer=512k,labels=app:shop; env : prod",
        )
        .unwrap();
        let c = o.collector.clone().unwrap();
        assert_eq!(c.addr(), "127.0.0.1:7000");
        assert_eq!(c.addrs, ["127.0.0.1:7000"]);
        assert_eq!(c.token, "s3cret");
        assert_eq!(c.buffer, 512 << 10);
        assert_eq!(
            c.labels,
            [("app".into(), "shop".into()), ("env".into(), "prod".into())]
        );
        assert_eq!(o.file_pattern(), None, "a collector alone writes no file");
        let both = Options::parse("collector=[::1]:7000,file=x.jsc").unwrap();
        assert_eq!(both.file_pattern(), Some("x.jsc"));
        assert_eq!(both.collector.unwrap().buffer, DEFAULT_BUFFER);
        let several = Options::parse("collector=a:7000| [::1]:7001|c:7002").unwrap();
        let c = several.collector.unwrap();
        assert_eq!(c.addrs, ["a:7000", "[::1]:7001", "c:7002"]);
        assert_eq!(c.addr(), "a:7000|[::1]:7001|c:7002");
    }

    #[test]
    fn sizes_take_k_m_g() {
        let s = |t| parse_size("buffer", t);
        assert_eq!(s("65536"), Ok(65536));
        assert_eq!(s("16m"), Ok(16 << 20));
        assert_eq!(s("1G"), Ok(1 << 30));
        assert_eq!(s("4k"), Ok(4096));
        assert!(s("1k").is_err(), "below the minimum");
        assert!(s("2g").is_err(), "above the maximum");
        assert!(s("16x").is_err());
        assert!(s("m").is_err());
    }

    #[test]
    fn bad_collector_options_name_the_problem() {
        let err = |s| Options::parse(s).unwrap_err().to_string();
        assert_eq!(
            err("collector=localhost"),
            "bad collector address `localhost` (expected HOST:PORT, several joined by |)"
        );
        assert_eq!(
            err("collector=a:1|b"),
            "bad collector address `b` (expected HOST:PORT, several joined by |)"
        );
        assert!(err("collector=a:1|").starts_with("bad collector address ``"));
        assert!(err("collector=:7000").starts_with("bad collector address"));
        assert!(err("collector=h:99999").starts_with("bad collector address"));
        assert_eq!(
            err("token=x"),
            "option `token` only applies with `collector=HOST:PORT`"
        );
        assert!(err("collector=h:1,labels=novalue").starts_with("bad labels"));
        assert!(err("collector=h:1,buffer=lots").starts_with("bad size `lots`"));
    }

    #[test]
    fn service_and_labels_stand_without_a_collector() {
        let o = Options::parse("service=shop,labels=env:prod;pod:a-1").unwrap();
        assert_eq!(o.service, "shop");
        let labels = vec![("env".into(), "prod".into()), ("pod".into(), "a-1".into())];
        assert_eq!(o.labels, labels);
        assert_eq!(labels_text(&o.labels), "env:prod;pod:a-1");
        assert!(o.collector.is_none());
        let err = |s| Options::parse(s).unwrap_err().to_string();
        assert!(err("service=a:b").starts_with("bad service name"));
        assert!(err("service=").starts_with("bad service name"));
    }

    #[test]
    fn modes_combine_with_plus() {
        let o = Options::parse("mode=cpu+snapshot").unwrap();
        assert!(o.modes.cpu && o.modes.snapshot && !o.modes.wall);
        assert_eq!(o.modes.label(), "cpu+snapshot");
        assert_eq!(Options::parse("mode=wall").unwrap().modes.label(), "wall");
    }

    #[test]
    fn durations_take_units() {
        let d = |s| parse_duration("interval", s);
        assert_eq!(d("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(d("3ms"), Ok(Duration::from_millis(3)));
        assert_eq!(d("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(d("500000ns"), Ok(Duration::from_micros(500)));
        assert_eq!(d("7"), Ok(Duration::from_millis(7)));
        assert!(d("10m").is_err());
        assert!(d("ms").is_err());
        assert!(d("10ns").is_err(), "below the minimum interval");
    }

    #[test]
    fn interval_applies_to_snapshot_only_when_it_is_the_only_mode() {
        let o = Options::parse("mode=snapshot,interval=50ms").unwrap();
        assert_eq!(o.snap_interval, Duration::from_millis(50));
        let o = Options::parse("mode=cpu+snapshot,interval=5ms").unwrap();
        assert_eq!(o.interval, Duration::from_millis(5));
        assert_eq!(o.snap_interval, Duration::from_millis(100));
        let o = Options::parse("mode=cpu+snapshot,interval=5ms,snapinterval=1s").unwrap();
        assert_eq!(o.snap_interval, Duration::from_secs(1));
    }

    #[test]
    fn all_keys_parse() {
        let o = Options::parse("file=/tmp/x-%p.jsc, depth=64,wallthreads=4,quiet,stop").unwrap();
        assert_eq!(o.file_pattern(), Some("/tmp/x-%p.jsc"));
        assert_eq!(o.depth, 64);
        assert_eq!(o.wall_threads, 4);
        assert!(o.quiet && o.stop);
    }

    #[test]
    fn surrounding_quotes_are_ignored() {
        let o = Options::parse("\"mode=wall,depth=8\"").unwrap();
        assert_eq!((o.modes.label().as_str(), o.depth), ("wall", 8));
    }

    #[test]
    fn bad_options_name_the_problem() {
        let err = |s| Options::parse(s).unwrap_err().to_string();
        assert_eq!(err("bogus=1"), "unknown option `bogus`");
        assert_eq!(
            err("mode=cpu+gpu"),
            "unknown mode `gpu` (expected cpu, wall or snapshot, combined with `+`, or none)"
        );
        assert_eq!(
            err("mode=none+cpu"),
            "unknown mode `none` (expected cpu, wall or snapshot, combined with `+`, or none)"
        );
        assert!(err("depth=0").contains("bad number `0` for `depth`"));
        assert!(err("depth=99999").contains("depth"));
        assert_eq!(err("file"), "option `file` needs a value (`file=...`)");
        assert_eq!(err("quiet=yes"), "option `quiet` takes no value");
        assert!(err("interval=fast").starts_with("bad duration `fast`"));
    }

    #[test]
    fn cstack_and_events_parse() {
        use crate::native::{perf::PerfKind, CStack};
        let o = Options::parse("").unwrap();
        assert_eq!((o.cstack, o.event), (CStack::Vm, None));
        assert_eq!(Options::parse("cstack=vmx").unwrap().cstack, CStack::Vmx);
        assert_eq!(
            Options::parse("cstack=asgct").unwrap().cstack,
            CStack::Asgct
        );
        assert_eq!(Options::parse("cstack=no").unwrap().cstack, CStack::No);
        assert_eq!(Options::parse("cstack=fp").unwrap().cstack, CStack::Fp);
        assert_eq!(
            Options::parse("cstack=dwarf").unwrap().cstack,
            CStack::Dwarf
        );
        let o = Options::parse("event=page-faults,interval=50").unwrap();
        assert_eq!(o.event, Some((PerfKind::PageFaults, 50)));
        assert_eq!(o.cpu_weight(), 50);
        assert_eq!(o.interval, DEFAULT_INTERVAL, "a count is not a duration");
        let o = Options::parse("interval=5ms,event=cpu-clock").unwrap();
        assert_eq!(o.event, Some((PerfKind::CpuClock, 5_000_000)));
        let o = Options::parse("event=context-switches").unwrap();
        assert_eq!(o.event, Some((PerfKind::ContextSwitches, 1)));
        assert!(o.modes.cpu);
        let err = |s| Options::parse(s).unwrap_err().to_string();
        assert!(err("event=gpu").starts_with("unknown event `gpu`"));
        assert!(err("cstack=lbr").starts_with("bad cstack `lbr` (expected vm, vmx"));
        assert!(err("event=page-faults,interval=10ms").starts_with("bad event count"));
        assert_eq!(
            err("event=page-faults,mode=wall"),
            "option `event` samples in cpu mode, which `mode=wall` leaves out (e.g. mode=cpu+wall)"
        );
        assert!(err("mode=snapshot,event=context-switches").contains("`mode=snapshot`"));
        assert!(err("mode=none,event=page-faults").contains("`mode=none`"));
        let o = Options::parse("event=page-faults,mode=wall+cpu").unwrap();
        assert!(o.modes.cpu && o.modes.wall);
    }

    #[test]
    fn file_pattern_expands_pid_and_time() {
        let f = expand_file_pattern("rec-%p-%t.jsc", 42, "20240102-030405");
        assert_eq!(f, "rec-42-20240102-030405.jsc");
        assert_eq!(expand_file_pattern("a%%b%q%", 1, "t"), "a%b%q%");
    }
}
