//! The event options: `events=LIST`, `allocrate=SIZE`, `objectages`,
//! `parkthreshold=DURATION`, and `eventsconfig=FILE` with JPMT-style
//! `observe_...` lines. Pure code, unit-tested.

/// Default SampledObjectAlloc interval: one sample per this many bytes allocated.
pub const DEFAULT_ALLOC_RATE: u32 = 512 << 10;

/// Parks shorter than this are counted, not recorded: JFR's default.jfc
/// threshold for jdk.ThreadPark.
pub const DEFAULT_PARK_THRESHOLD_NS: u64 = 20_000_000;

/// A set of event kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds(u32);

impl Kinds {
    pub const THREADS: Kinds = Kinds(1);
    pub const MONITORS: Kinds = Kinds(2);
    pub const WAITS: Kinds = Kinds(4);
    pub const GC: Kinds = Kinds(8);
    pub const ALLOC: Kinds = Kinds(16);
    pub const CLASSES: Kinds = Kinds(32);
    pub const JIT: Kinds = Kinds(64);
    pub const USER: Kinds = Kinds(128);
    pub const PARK: Kinds = Kinds(256);
    /// `all`: every kind but park, which is asked for by name (`all+park`): its
    /// breakpoints cost a few hundred ns per park whether recorded or not, and
    /// take the JVM's only breakpoint environment from a debugger loaded later.
    pub const ALL: Kinds = Kinds(255);
    /// Every bit a kind may have.
    const EVERY: Kinds = Kinds(511);

    /// Option names, in label order.
    pub const NAMES: [(&'static str, Kinds); 9] = [
        ("threads", Kinds::THREADS),
        ("monitors", Kinds::MONITORS),
        ("waits", Kinds::WAITS),
        ("gc", Kinds::GC),
        ("alloc", Kinds::ALLOC),
        ("classes", Kinds::CLASSES),
        ("jit", Kinds::JIT),
        ("user", Kinds::USER),
        ("park", Kinds::PARK),
    ];

    pub fn bits(self) -> u32 {
        self.0
    }

    pub fn from_bits_truncate(bits: u32) -> Kinds {
        Kinds(bits & Kinds::EVERY.0)
    }

    pub fn contains(self, other: Kinds) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn insert(&mut self, other: Kinds) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: Kinds) {
        self.0 &= !other.0;
    }

    /// `threads,monitors,...` as the option spells them.
    pub fn label(self) -> String {
        let on: Vec<&str> = Kinds::NAMES
            .iter()
            .filter(|(_, k)| self.contains(*k))
            .map(|(n, _)| *n)
            .collect();
        on.join(",")
    }

    fn named(name: &str) -> Option<Kinds> {
        if name == "all" {
            return Some(Kinds::ALL);
        }
        Kinds::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
    }
}

/// The event part of the agent options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventOptions {
    pub kinds: Kinds,
    /// Mean bytes allocated between two allocation samples.
    pub alloc_rate: u32,
    /// Tag sampled objects and record their frees (JX's object ages).
    pub object_ages: bool,
    /// Ask for each contended monitor's owner (GetObjectMonitorUsage, a VM
    /// operation per contended entry, so off by default).
    pub monitor_owners: bool,
    /// Parks shorter than this are counted, not recorded (0: every park).
    pub park_threshold_ns: u64,
    /// `eventsconfig=FILE`, already applied to the fields above.
    pub config: Option<String>,
}

impl Default for EventOptions {
    fn default() -> Self {
        EventOptions {
            kinds: Kinds::default(),
            alloc_rate: DEFAULT_ALLOC_RATE,
            object_ages: false,
            monitor_owners: false,
            park_threshold_ns: DEFAULT_PARK_THRESHOLD_NS,
            config: None,
        }
    }
}

/// JPMT-style configuration lines and the kinds they switch on.
pub const CONFIG_LINES: [(&str, Kinds); 10] = [
    ("observe_threads", Kinds::THREADS),
    ("observe_monitor_contention", Kinds::MONITORS),
    ("observe_monitor_waits", Kinds::WAITS),
    ("observe_gc", Kinds::GC),
    ("observe_allocations", Kinds::ALLOC),
    ("observe_object_ages", Kinds::ALLOC),
    ("observe_class_loading", Kinds::CLASSES),
    ("observe_jit", Kinds::JIT),
    ("observe_user_events", Kinds::USER),
    ("observe_park", Kinds::PARK),
];

impl EventOptions {
    /// True for the option keys this module owns.
    pub fn owns(key: &str) -> bool {
        matches!(
            key,
            "events"
                | "allocrate"
                | "objectages"
                | "monitorowners"
                | "parkthreshold"
                | "eventsconfig"
        )
    }

    /// Whether a bare item continues an `events=` list (`events=gc,alloc`: the
    /// option string is itself split at commas).
    pub fn continues_list(key: &str) -> bool {
        Kinds::named(key).is_some()
    }

    /// Adds one more kind of a comma-separated `events=` list.
    pub fn add_kind(&mut self, name: &str) -> Result<(), String> {
        self.kinds.insert(parse_kinds(name)?);
        Ok(())
    }

    /// Applies one `key[=value]`; the error is the message of the agent's line.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        let need = || value.ok_or_else(|| format!("option `{key}` needs a value (`{key}=...`)"));
        match key {
            "events" => self.kinds.insert(parse_kinds(need()?)?),
            "allocrate" => self.alloc_rate = parse_rate(need()?)?,
            "objectages" => {
                if value.is_some() {
                    return Err("option `objectages` takes no value".into());
                }
                self.object_ages = true;
                self.kinds.insert(Kinds::ALLOC);
            }
            "monitorowners" => {
                if value.is_some() {
                    return Err("option `monitorowners` takes no value".into());
                }
                self.monitor_owners = true;
                self.kinds.insert(Kinds::MONITORS);
            }
            "parkthreshold" => {
                self.park_threshold_ns = parse_duration(need()?)?;
                self.kinds.insert(Kinds::PARK);
            }
            "eventsconfig" => {
                let path = need()?;
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read events config {path}: {e}"))?;
                self.apply_config(&text)
                    .map_err(|e| format!("events config {path}: {e}"))?;
                self.config = Some(path.to_string());
            }
            _ => return Err(format!("unknown option `{key}`")),
        }
        Ok(())
    }

    /// Applies a config file: one `observe_...` per line (`observe_allocations`
    /// may name a rate, `observe_park` a threshold), `#` comments and blank lines ignored.
    pub fn apply_config(&mut self, text: &str) -> Result<(), String> {
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let word = words.next().unwrap_or("");
            let (_, kind) = CONFIG_LINES
                .iter()
                .find(|(name, _)| *name == word)
                .ok_or_else(|| format!("line {}: unknown `{word}`", n + 1))?;
            self.kinds.insert(*kind);
            match (word, words.next()) {
                ("observe_object_ages", None) => self.object_ages = true,
                ("observe_allocations", Some(rate)) => {
                    self.alloc_rate =
                        parse_rate(rate).map_err(|e| format!("line {}: {e}", n + 1))?
                }
                ("observe_park", Some(threshold)) => {
                    self.park_threshold_ns =
                        parse_duration(threshold).map_err(|e| format!("line {}: {e}", n + 1))?
                }
                (_, None) => {}
                (_, Some(extra)) => {
                    return Err(format!("line {}: unexpected `{extra}`", n + 1));
                }
            }
        }
        Ok(())
    }
}

fn parse_kinds(text: &str) -> Result<Kinds, String> {
    let mut kinds = Kinds::default();
    for name in text.split(['+', ';', ':']).map(str::trim) {
        kinds.insert(Kinds::named(name).ok_or_else(|| {
            format!(
                "unknown event kind `{name}` (expected all or threads, monitors, waits, gc, alloc, classes, jit, user, park joined with +)"
            )
        })?);
    }
    Ok(kinds)
}

/// `512k`, `1m`, `4096`: 1 byte to 1 GiB (0 would sample every allocation, which
/// JVMTI allows but no program survives at speed).
fn parse_rate(text: &str) -> Result<u32, String> {
    let bad = || format!("bad size `{text}` for `allocrate` (expected e.g. 512k, 1m; 1 to 1g)");
    let lower = text.to_ascii_lowercase();
    let (digits, mult) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 1u64 << 10),
        Some(b'm') => (&lower[..lower.len() - 1], 1 << 20),
        Some(b'g') => (&lower[..lower.len() - 1], 1 << 30),
        _ => (lower.as_str(), 1),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(mult) {
        Some(v) if (1..=1 << 30).contains(&v) => Ok(v as u32),
        _ => Err(bad()),
    }
}

/// `20ms`, `1s`, `500us`, `0`: a park threshold (ns, us, ms or s; a bare 0).
fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || format!("bad duration `{text}` for `parkthreshold` (expected e.g. 20ms, 1s, 0)");
    if text == "0" {
        return Ok(0);
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let mult = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(mult).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_from_the_option() {
        let mut o = EventOptions::default();
        o.set("events", Some("monitors+gc")).unwrap();
        assert_eq!(o.kinds.label(), "monitors,gc");
        o.set("events", Some("all")).unwrap();
        assert_eq!(o.kinds, Kinds::ALL);
        assert!(!o.kinds.contains(Kinds::PARK), "park is asked for by name");
        o.set("events", Some("all+park")).unwrap();
        assert!(o.kinds.contains(Kinds::ALL) && o.kinds.contains(Kinds::PARK));
        assert!(o.set("events", Some("locks")).is_err());
        assert!(o.set("events", None).is_err());
        let mut o = EventOptions::default();
        o.set("events", Some("threads")).unwrap();
        assert!(EventOptions::continues_list("waits") && !EventOptions::continues_list("quiet"));
        o.add_kind("waits").unwrap();
        assert_eq!(o.kinds.label(), "threads,waits");
    }

    #[test]
    fn rates_and_object_ages() {
        let mut o = EventOptions::default();
        assert_eq!(o.alloc_rate, 512 * 1024);
        o.set("allocrate", Some("64k")).unwrap();
        assert_eq!(o.alloc_rate, 65536);
        o.set("allocrate", Some("100")).unwrap();
        assert_eq!(o.alloc_rate, 100);
        assert!(o.set("allocrate", Some("0")).is_err());
        assert!(o.set("allocrate", Some("2g")).is_err());
        o.set("objectages", None).unwrap();
        assert!(o.object_ages && o.kinds.contains(Kinds::ALLOC));
        assert!(o.set("objectages", Some("1")).is_err());
        o.set("monitorowners", None).unwrap();
        assert!(o.monitor_owners && o.kinds.contains(Kinds::MONITORS));
    }

    #[test]
    fn jpmt_config_lines() {
        let mut o = EventOptions::default();
        o.apply_config(
            "# JPMT style\nobserve_monitor_contention\nobserve_gc\n\nobserve_allocations 1m\nobserve_object_ages\n",
        )
        .unwrap();
        assert_eq!(o.kinds.label(), "monitors,gc,alloc");
        assert_eq!(o.alloc_rate, 1 << 20);
        assert!(o.object_ages);
        let err = o.apply_config("observe_locks\n").unwrap_err();
        assert!(
            err.contains("line 1") && err.contains("observe_locks"),
            "{err}"
        );
        assert!(o.apply_config("observe_gc now\n").is_err());
        let mut o = EventOptions::default();
        o.apply_config("observe_park\n").unwrap();
        assert_eq!(o.kinds, Kinds::PARK);
        assert_eq!(o.park_threshold_ns, DEFAULT_PARK_THRESHOLD_NS);
        o.apply_config("observe_park 1ms\n").unwrap();
        assert_eq!(o.park_threshold_ns, 1_000_000);
        assert!(o.apply_config("observe_park soon\n").is_err());
    }

    #[test]
    fn park_thresholds() {
        let mut o = EventOptions::default();
        assert_eq!(o.park_threshold_ns, 20_000_000);
        for (text, ns) in [
            ("0", 0),
            ("250us", 250_000),
            ("2s", 2_000_000_000),
            ("7ns", 7),
        ] {
            o.set("parkthreshold", Some(text)).unwrap();
            assert_eq!(o.park_threshold_ns, ns, "{text}");
        }
        assert!(o.kinds.contains(Kinds::PARK));
        for bad in ["", "ms", "20", "20m", "-1ms", "x1s"] {
            assert!(o.set("parkthreshold", Some(bad)).is_err(), "{bad}");
        }
        assert!(o.set("parkthreshold", None).is_err());
    }

    #[test]
    fn the_agent_option_string_takes_comma_separated_kinds() {
        use crate::options::Options;
        let o = Options::parse("events=threads,monitors,waits,quiet,allocrate=1m").unwrap();
        assert_eq!(o.events.kinds.label(), "threads,monitors,waits");
        assert!(o.quiet);
        assert_eq!(o.events.alloc_rate, 1 << 20);
        let o = Options::parse("events=gc,park,parkthreshold=5ms").unwrap();
        assert_eq!(o.events.kinds.label(), "gc,park");
        assert_eq!(o.events.park_threshold_ns, 5_000_000);
        let o = Options::parse("events=all,objectages").unwrap();
        assert_eq!(o.events.kinds, Kinds::ALL);
        assert!(o.events.object_ages);
        // A kind name not after `events=` is still an unknown option.
        assert!(Options::parse("quiet,gc").is_err());
        assert!(Options::parse("events=gc,bogus").is_err());
    }
}
