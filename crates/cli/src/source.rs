//! Where an analysis command reads its recording: a file, a collector's data
//! directory (`--data DIR`) or a running collector (`--collector URL`). Collector
//! data is turned into one `Recording` of the chosen JVM, so every command runs the
//! same analysis code on it as on a file.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use jscope_collector::{FileStore, Store};
use jscope_format::{ChunkStream, Recording};
use serde::Deserialize;

use crate::args::{Command, SelectArgs, SourceArgs};
use crate::remote::Collector;

/// A recording ready for analysis, and what to call it in titles.
pub struct Loaded {
    pub rec: Recording,
    pub title: String,
}

/// Seconds from the JVM's start, as `--from`/`--to` give them; collector data
/// outside this window is not fetched (the selection then cuts exactly).
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub from_s: Option<f64>,
    pub to_s: Option<f64>,
}

/// One JVM a collector knows, as far as choosing one needs.
#[derive(Debug, Clone, Deserialize)]
pub struct JvmRow {
    pub id: String,
    pub pid: u32,
    pub command_line: String,
    #[serde(default)]
    pub status: String,
    pub started_ms: u64,
    /// The exact start, when known (a data directory); else `started_ms` counts.
    #[serde(default)]
    pub started_ns: u64,
    /// The agent's `service=` (or a push's); for others, the main class.
    #[serde(default)]
    pub service: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

pub fn load(file: Option<&Path>, src: &SourceArgs, window: Window) -> Result<Loaded> {
    let filter = Filter::of(src)?;
    if file.is_some() && (filter.service.is_some() || !filter.labels.is_empty()) {
        bail!("--service and --label select JVMs of --data DIR or --collector URL, not of a file");
    }
    if let (Some(_), Some(jvm)) = (file, &filter.jvm) {
        bail!("--jvm {jvm} selects a JVM of --data DIR or --collector URL, not of a file (a file holds one JVM)");
    }
    match (file, &src.data, &src.collector) {
        (Some(path), None, None) => load_file(path),
        (None, Some(dir), None) => load_data_dir(dir, &filter, window),
        (None, None, Some(url)) => {
            let c = Collector::new(url, src.token.clone())?;
            load_remote(&c, collector_rows(&c, src)?, &filter, window)
        }
        (None, None, None) => bail!("give a recording FILE, --data DIR or --collector URL"),
        _ => bail!("give only one of a recording FILE, --data DIR and --collector URL"),
    }
}

/// Reads a recording, `.jsc` or JFR (by its magic); damage is a warning, since
/// everything before it is usable.
fn load_file(path: &Path) -> Result<Loaded> {
    let rec = read_recording(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(damage) = &rec.damage {
        eprintln!(
            "jscope: warning: {} is {damage}; read up to there",
            path.display()
        );
    }
    Ok(Loaded {
        rec,
        title: crate::analyze::title_of(path),
    })
}

/// Whether the file starts with JFR's magic (read from its first bytes only).
pub(crate) fn is_jfr_file(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let n = f.read(&mut magic)?;
    Ok(jscope_jfr::is_jfr(&magic[..n]))
}

/// A `.jsc` recording, or a JFR file read into the same model.
pub(crate) fn read_recording(path: &Path) -> Result<Recording> {
    let bytes = std::fs::read(path)?;
    if jscope_jfr::is_jfr(&bytes) {
        return Ok(jscope_jfr::read_bytes(&bytes)?);
    }
    if bytes.starts_with(b"{") {
        refuse_session(path)?;
    }
    if !bytes.starts_with(&jscope_format::MAGIC[..6]) {
        bail!("not a jscope recording or a JFR file: it starts with neither JSCOPE nor FLR\\0");
    }
    Ok(Recording::from_bytes(&bytes)?)
}

/// A session (`jscope merge`'s several JVMs) given where one recording is read: an
/// error that says what the file is and which command reads it.
pub(crate) fn refuse_session(path: &Path) -> Result<()> {
    if crate::distributed::is_session(path).unwrap_or(false) {
        bail!(
            "{} is a session of several JVMs (made by jscope merge), not one recording: read it with `jscope tree --distributed {0}` or `jscope view {0}`, or name one of its recordings",
            path.display()
        );
    }
    Ok(())
}

/// The epoch ns a recording file starts at: for a `.jsc` file from its header
/// chunk alone; a JFR file is converted (only that gives its start).
fn start_wall_ns(path: &Path) -> Result<u64> {
    use std::io::{BufReader, Read};
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(jscope_format::MAGIC.len() as u64)
        .read_to_end(&mut head)?;
    if jscope_jfr::is_jfr(&head) || !head.starts_with(&jscope_format::MAGIC[..6]) {
        // JFR, or no recording: failing as reading it does.
        return Ok(read_recording(path)?.header.start_wall_ns);
    }
    let mut stream = ChunkStream::new(BufReader::new(std::fs::File::open(path)?))?;
    let first = stream.next();
    let rec = Recording::from_header_chunk(stream.version(), first.as_ref(), stream.damage())?;
    Ok(rec.header.start_wall_ns)
}

/// The collector's JVM list, fetched once per command: resolving a wall-clock
/// window and reading the JVMs share it.
pub(crate) fn collector_rows<'a>(c: &Collector, src: &'a SourceArgs) -> Result<&'a [JvmRow]> {
    if let Some(rows) = src.fetched_rows.get() {
        return Ok(rows);
    }
    let rows = c.jvms()?;
    Ok(src.fetched_rows.get_or_init(|| rows))
}

/// Epoch ns of a window bound, for a JVM whose recording started at `started_ns`.
pub(crate) fn epoch_ns(started_ns: u64, seconds: Option<f64>) -> Option<u64> {
    seconds.map(|s| started_ns.saturating_add((s * 1e9) as u64))
}

fn load_data_dir(dir: &Path, filter: &Filter, window: Window) -> Result<Loaded> {
    // Read-only: a collector may be writing to the directory right now.
    let store = FileStore::open_read_only(dir)
        .with_context(|| format!("cannot open collector data {}", dir.display()))?;
    let rows = data_rows(&store);
    let chosen = filter.select(&rows)?;
    let origin = origin_ns(&chosen);
    let read = |jvm: &JvmRow| {
        store
            .read(
                &jvm.id,
                epoch_ns(origin, window.from_s),
                epoch_ns(origin, window.to_s),
            )
            .with_context(|| format!("cannot read JVM {} from {}", jvm.id, dir.display()))
    };
    let recs = chosen.iter().map(|j| read(j)).collect::<Result<Vec<_>>>()?;
    Ok(merged(recs, &chosen, filter))
}

fn load_remote(c: &Collector, rows: &[JvmRow], filter: &Filter, window: Window) -> Result<Loaded> {
    let chosen = filter.select(rows)?;
    let origin = origin_ns(&chosen);
    let mut recs = Vec::new();
    for jvm in &chosen {
        let mut path = format!("/api/jvms/{}/recording?", encode(&jvm.id));
        if let Some(ns) = epoch_ns(origin, window.from_s) {
            path += &format!("from={}&", ns / 1_000_000);
        }
        if let Some(ns) = epoch_ns(origin, window.to_s) {
            // `to` is exclusive in ms; round up so the last partial ms is kept.
            path += &format!("to={}&", ns.div_ceil(1_000_000));
        }
        let bytes = c.get(path.trim_end_matches(['?', '&']))?;
        let mut rec = Recording::from_bytes(&bytes)
            .with_context(|| format!("{} sent an unreadable recording", c.base()))?;
        if let Some(damage) = rec.damage.take() {
            eprintln!("jscope: warning: the collector's data is {damage}; read up to there");
        }
        recs.push(rec);
    }
    Ok(merged(recs, &chosen, filter))
}

/// Epoch ns the window's seconds count from: the (earliest) selected JVM's start,
/// which is where the merged recording starts too.
pub(crate) fn origin_ns(chosen: &[&JvmRow]) -> u64 {
    let start = |j: &&JvmRow| match j.started_ns {
        0 => j.started_ms * 1_000_000,
        ns => ns,
    };
    chosen.iter().map(start).min().unwrap_or(0)
}

/// Turns wall-clock `--from`/`--to`/`--since` into seconds from the start of what
/// the command reads: a file's recording, or the (earliest) selected JVM.
pub fn resolve_window(file: Option<&Path>, src: &SourceArgs, sel: &mut SelectArgs) -> Result<()> {
    sel.resolve(|| {
        if let Some(path) = file {
            return start_wall_ns(path).with_context(|| format!("cannot read {}", path.display()));
        }
        let filter = Filter::of(src)?;
        let origin = match (&src.data, &src.collector) {
            (Some(dir), _) => {
                let store = FileStore::open_read_only(dir)
                    .with_context(|| format!("cannot open collector data {}", dir.display()))?;
                origin_ns(&filter.select(&data_rows(&store))?)
            }
            (None, Some(url)) => {
                let c = Collector::new(url, src.token.clone())?;
                origin_ns(&filter.select(collector_rows(&c, src)?)?)
            }
            (None, None) => bail!("give a recording FILE, --data DIR or --collector URL"),
        };
        Ok(origin)
    })
}

/// Resolves the time window of every command that has one, before it runs.
pub fn resolve_times(command: &mut Command) -> Result<()> {
    match command {
        Command::Report(a) => resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Flame(a) => resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Collapsed(a) => resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Callgraph(a) => resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Export(a) => resolve_window(a.file.as_deref(), &a.source, &mut a.select),
        Command::Diff(a) => {
            if a.select.has_wall_time() {
                bail!("jscope diff takes --from/--to as seconds from each side's start (or SIDE@FROM..TO), not wall-clock times");
            }
            a.select.resolve(|| Ok(0))
        }
        _ => Ok(()),
    }
}

/// One JVM's recording as it is, several merged into one, titled by the selection.
fn merged(recs: Vec<Recording>, chosen: &[&JvmRow], filter: &Filter) -> Loaded {
    let title = title_of_selection(chosen, filter);
    let rec = crate::merge_rec::merge(recs).unwrap_or_default();
    Loaded { rec, title }
}

/// Which JVMs of a collector a command reads: `--jvm ID|PID|all`, `--service NAME`,
/// `--label K=V` (all must match).
#[derive(Debug, Default)]
pub struct Filter {
    pub jvm: Option<String>,
    pub service: Option<String>,
    pub labels: Vec<(String, String)>,
}

impl Filter {
    pub fn of(src: &SourceArgs) -> Result<Filter> {
        let labels = src
            .label
            .iter()
            .map(|l| {
                parse_label(l)
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .with_context(|| format!("--label wants KEY=VALUE, not `{l}`"))
            })
            .collect::<Result<_>>()?;
        Ok(Filter {
            jvm: src.jvm.clone(),
            service: src.service.clone(),
            labels,
        })
    }

    fn matches(&self, row: &JvmRow) -> bool {
        self.service.as_ref().is_none_or(|s| *s == row.service)
            && self
                .labels
                .iter()
                .all(|(k, v)| row.labels.get(k).is_some_and(|have| have == v))
    }

    fn narrowed(&self) -> bool {
        self.service.is_some() || !self.labels.is_empty()
    }

    /// The selected rows: `--jvm ID|PID` one of those matching the filters,
    /// `--jvm all` or filters alone every match, nothing the only JVM there is.
    pub fn select<'a>(&self, rows: &'a [JvmRow]) -> Result<Vec<&'a JvmRow>> {
        let matching: Vec<&JvmRow> = rows.iter().filter(|r| self.matches(r)).collect();
        if self.narrowed() && matching.is_empty() {
            bail!("no JVM matches {}; known: {}", self.title(), listing(rows));
        }
        match self.jvm.as_deref() {
            Some("all") => {
                if rows.is_empty() {
                    bail!("the collector holds no JVM");
                }
                Ok(matching)
            }
            Some(want) => Ok(vec![*choose(&matching, Some(want))?]),
            None if self.narrowed() => Ok(matching),
            None => Ok(vec![choose(rows, None)?]),
        }
    }

    /// Names the selection in titles and errors, e.g. `service shop, env=prod`.
    pub fn title(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.service {
            parts.push(format!("service {s}"));
        }
        parts.extend(self.labels.iter().map(|(k, v)| format!("{k}={v}")));
        if parts.is_empty() {
            "all JVMs".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A `--label KEY=VALUE`'s key and value, trimmed; `None` without `=` or a key.
pub(crate) fn parse_label(label: &str) -> Option<(&str, &str)> {
    let (k, v) = label.split_once('=')?;
    let k = k.trim();
    (!k.is_empty()).then(|| (k, v.trim()))
}

/// The JVMs a collector's store holds, as rows to choose from.
pub(crate) fn data_rows(store: &dyn Store) -> Vec<JvmRow> {
    store
        .jvms()
        .into_iter()
        .map(|j| JvmRow {
            service: if j.identity.service.is_empty() {
                jscope_collector::jvm::main_class_of(&j.identity.command_line)
            } else {
                j.identity.service
            },
            id: j.identity.id,
            pid: j.identity.pid,
            command_line: j.identity.command_line,
            status: String::new(),
            started_ms: j.identity.start_wall_ns / 1_000_000,
            started_ns: j.identity.start_wall_ns,
            labels: j.identity.labels.into_iter().collect(),
        })
        .collect()
}

/// One JVM's title, or the selection's with how many JVMs it merges.
pub(crate) fn title_of_selection(chosen: &[&JvmRow], filter: &Filter) -> String {
    match chosen {
        [one] => title_of_jvm(one),
        _ => format!("{} ({} JVMs)", filter.title(), chosen.len()),
    }
}

fn title_of_jvm(jvm: &JvmRow) -> String {
    let main = jvm.command_line.split_whitespace().next().unwrap_or("");
    format!("{main} (pid {})", jvm.pid).trim_start().to_string()
}

/// The JVM named by `want` (a stream id, or a pid: the newest JVM with it), or the
/// only one there is.
/// `rows` are rows or references to them (a filter's matches); the chosen one is
/// returned as it is held.
pub fn choose<'a, R: Borrow<JvmRow>>(rows: &'a [R], want: Option<&str>) -> Result<&'a R> {
    let Some(want) = want else {
        return match rows {
            [only] => Ok(only),
            [] => bail!("the collector holds no JVM"),
            _ => bail!(
                "the collector holds {} JVMs; choose one with --jvm ID|PID, all with --jvm all, or some with --service/--label: {}",
                rows.len(),
                listing(rows)
            ),
        };
    };
    let row = |r: &'a R| -> &'a JvmRow { r.borrow() };
    if let Some(found) = rows.iter().find(|r| row(r).id == want) {
        return Ok(found);
    }
    let by_pid = want.parse::<u32>().ok().and_then(|pid| {
        rows.iter()
            .filter(|r| row(r).pid == pid)
            .max_by_key(|r| (row(r).status == "connected", row(r).started_ms))
    });
    by_pid.with_context(|| format!("no JVM with id or pid {want}; known: {}", listing(rows)))
}

/// The ids of the JVMs named by `want` (ids or pids, as for [`choose`]), or of all.
pub(crate) fn choose_all(rows: &[JvmRow], want: &[String]) -> Result<Vec<String>> {
    if want.is_empty() {
        return Ok(rows.iter().map(|r| r.id.clone()).collect());
    }
    want.iter()
        .map(|w| choose(rows, Some(w)).map(|r| r.id.clone()))
        .collect()
}

fn listing<R: Borrow<JvmRow>>(rows: &[R]) -> String {
    let all: Vec<String> = rows
        .iter()
        .map(Borrow::borrow)
        .map(|r: &JvmRow| format!("{} (pid {})", r.id, r.pid))
        .collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// Percent-encodes a path segment (stream ids are host-pid-start, but hosts vary).
pub(crate) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, pid: u32, status: &str, started_ms: u64) -> JvmRow {
        JvmRow {
            id: id.into(),
            pid,
            command_line: "com.acme.Main arg".into(),
            status: status.into(),
            started_ms,
            started_ns: 0,
            service: String::new(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn a_jvm_is_chosen_by_id_or_by_pid_newest_first() {
        let rows = [
            row("h-10-1", 10, "gone", 1),
            row("h-10-2", 10, "gone", 2),
            row("h-11-1", 11, "connected", 1),
        ];
        assert_eq!(choose(&rows, Some("h-10-1")).unwrap().id, "h-10-1");
        assert_eq!(choose(&rows, Some("10")).unwrap().id, "h-10-2");
        assert_eq!(choose(&rows, Some("11")).unwrap().id, "h-11-1");
        let e = choose(&rows, Some("12")).unwrap_err().to_string();
        assert!(e.contains("h-11-1 (pid 11)"), "{e}");
        let e = choose(&rows, None).unwrap_err().to_string();
        assert!(e.contains("3 JVMs") && e.contains("--jvm"), "{e}");
        assert_eq!(choose(&rows[2..], None).unwrap().id, "h-11-1");
        assert!(choose::<JvmRow>(&[], None).is_err());
    }

    #[test]
    fn titles_and_ids_in_urls() {
        assert_eq!(title_of_jvm(&row("x", 5, "", 0)), "com.acme.Main (pid 5)");
        assert_eq!(encode("my host-1"), "my%20host-1");
        assert_eq!(epoch_ns(1_000, Some(1.5)), Some(1_500_001_000));
    }
}
