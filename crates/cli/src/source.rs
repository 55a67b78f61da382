//! Where an analysis command reads its recording: a file, a collector's data
//! directory (`--data DIR`) or a running collector (`--collector URL`). Collector
//! data is read through `jscope_store`'s one read interface ([`JvmSource`]), the
//! JVMs chosen by its one selection, and turned into one `Recording`, so every
//! command runs the same analysis code on it as on a file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use jscope_analysis::distributed::{MemberSource, Session};
use jscope_format::{ChunkStream, Recording};
use jscope_store::jvms::{listing, origin_ns};
use jscope_store::{
    FileStore, JvmSelection, JvmSource, JvmSummary, RemoteCollector, SelectError, Store,
};

use crate::select::SelectArgs;
use clap::Args;

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
    /// With an https:// --collector: the CA (PEM) that signed its certificate;
    /// default: the system's CAs.
    #[arg(long, value_name = "FILE", requires = "collector")]
    pub tls_ca: Option<PathBuf>,
    /// With an https:// --collector that wants one: a client certificate (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["collector", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// With an https:// --collector: do not check its certificate.
    #[arg(long, requires = "collector")]
    pub insecure: bool,
    /// The collector's JVM list once fetched (`source::Collected`): the window's
    /// origin and the command then read the same one.
    #[arg(skip)]
    pub fetched_rows: std::cell::OnceCell<Vec<jscope_store::JvmSummary>>,
}

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

pub fn load(file: Option<&Path>, src: &SourceArgs, window: Window) -> Result<Loaded> {
    let selection = selection_of(src)?;
    if file.is_some() && selection.narrowed() {
        bail!("--service and --label select JVMs of --data DIR or --collector URL, not of a file");
    }
    if let (Some(_), Some(jvm)) = (file, &src.jvm) {
        bail!("--jvm {jvm} selects a JVM of --data DIR or --collector URL, not of a file (a file holds one JVM)");
    }
    if let Some(path) = file {
        if src.data.is_some() || src.collector.is_some() {
            bail!("give only one of a recording FILE, --data DIR and --collector URL");
        }
        return load_file(path);
    }
    let Some(collected) = Collected::open(src)? else {
        bail!("give a recording FILE, --data DIR or --collector URL");
    };
    collected.load(&selection, window)
}

/// The JVMs a command's `--jvm ID|PID|all`, `--service NAME` and `--label K=V`
/// (all must match) select.
pub fn selection_of(src: &SourceArgs) -> Result<JvmSelection> {
    Ok(JvmSelection {
        jvms: src.jvm.iter().cloned().collect(),
        service: src.service.clone(),
        host: None,
        labels: JvmSelection::labels_of(src.label.iter().map(String::as_str), "--label")?,
    })
}

/// A collector's JVMs as a command reads them: `--data DIR` or `--collector URL`,
/// and its JVM list, fetched once per command (resolving a wall-clock window and
/// reading the JVMs share it).
pub struct Collected<'a> {
    pub source: Box<dyn JvmSource>,
    /// The directory or URL, naming the source in messages.
    pub name: String,
    pub rows: &'a [JvmSummary],
}

impl<'a> Collected<'a> {
    /// `None` when `src` names no collector data.
    pub fn open(src: &'a SourceArgs) -> Result<Option<Collected<'a>>> {
        let (source, name): (Box<dyn JvmSource>, String) = match (&src.data, &src.collector) {
            (Some(dir), _) => {
                // Read-only: a collector may be writing to the directory right now.
                let store = FileStore::open_read_only(dir)
                    .with_context(|| format!("cannot open collector data {}", dir.display()))?;
                (Box::new(store), dir.display().to_string())
            }
            (None, Some(url)) => {
                let remote = RemoteCollector::new(url, src.token.clone())?.with_tls(
                    jscope_tls::ClientFiles {
                        ca: src.tls_ca.clone(),
                        cert: src.tls_cert.clone(),
                        key: src.tls_key.clone(),
                        insecure: src.insecure,
                    },
                );
                let base = remote.base();
                (Box::new(remote), base)
            }
            (None, None) => return Ok(None),
        };
        let rows = match src.fetched_rows.get() {
            Some(rows) => rows,
            None => {
                let rows = source.jvm_list()?;
                src.fetched_rows.get_or_init(|| rows)
            }
        };
        Ok(Some(Collected { source, name, rows }))
    }

    /// The rows `selection` picks; an empty selection picks the only JVM there is.
    pub fn pick(&self, selection: &JvmSelection) -> Result<Vec<&'a JvmSummary>> {
        if selection.is_empty() {
            return match self.rows {
                [only] => Ok(vec![only]),
                [] => bail!("the collector holds no JVM"),
                rows => bail!(
                    "the collector holds {} JVMs; choose one with --jvm ID|PID, all with --jvm all, or some with --service/--label: {}",
                    rows.len(),
                    listing(rows)
                ),
            };
        }
        let picked = selection.pick(self.rows).map_err(|e| self.explained(e))?;
        if picked.is_empty() {
            bail!("the collector holds no JVM");
        }
        Ok(picked)
    }

    /// A selection error with what there is to choose from.
    fn explained(&self, e: SelectError) -> anyhow::Error {
        match e {
            SelectError::NoSuchJvm(_) | SelectError::NoMatch(_) => {
                anyhow::anyhow!("{e}; known: {}", listing(self.rows))
            }
            e => e.into(),
        }
    }

    /// The picked JVMs' recordings over the window (seconds from the earliest's
    /// start), merged into one and titled by the selection.
    fn load(&self, selection: &JvmSelection, window: Window) -> Result<Loaded> {
        let picked = self.pick(selection)?;
        let origin = origin_ns(&picked);
        let mut recs = Vec::new();
        for jvm in &picked {
            let (from, to) = (
                epoch_ns(origin, window.from_s),
                epoch_ns(origin, window.to_s),
            );
            let mut rec = self
                .source
                .recording(&jvm.id, from, to)
                .with_context(|| format!("cannot read JVM {} from {}", jvm.id, self.name))?;
            if let Some(damage) = rec.damage.take() {
                eprintln!("jscope: warning: the collector's data is {damage}; read up to there");
            }
            recs.push(rec);
        }
        Ok(Loaded {
            rec: crate::merge_rec::merge(recs).unwrap_or_default(),
            title: selection.title(&picked),
        })
    }
}

/// Reads a recording, `.jsc` or JFR (by its magic), or a session's JVMs merged;
/// damage is a warning, since everything before it is usable.
fn load_file(path: &Path) -> Result<Loaded> {
    if is_session(path)? {
        return load_session(path);
    }
    let rec = read_recording(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(damage) = &rec.damage {
        eprintln!(
            "jscope: warning: {} is {damage}; read up to there",
            path.display()
        );
    }
    Ok(Loaded {
        rec,
        title: title_of(path),
    })
}

/// A session of `jscope merge`: its JVMs' recordings merged into one, as `--jvm
/// all` merges a collector's (every JVM's events, traces and remote calls kept).
fn load_session(path: &Path) -> Result<Loaded> {
    let recs = session_members(path)?;
    let title = format!("{} ({} JVMs)", title_of(path), recs.len());
    Ok(Loaded {
        rec: crate::merge_rec::merge(recs).unwrap_or_default(),
        title,
    })
}

/// A session's JVMs' recordings, each apart (damage is a warning).
pub fn session_members(path: &Path) -> Result<Vec<Recording>> {
    let sources = Session::read(path)
        .and_then(|s| s.sources(path))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut recs = Vec::new();
    for source in &sources {
        let rec = match source {
            MemberSource::File(file) => read_recording(file),
            MemberSource::Data { dir, jvm } => FileStore::open_read_only(dir)
                .and_then(|store| store.read(jvm, None, None))
                .map_err(anyhow::Error::from),
        };
        let rec =
            rec.with_context(|| format!("cannot read {} of {}", source.name(), path.display()))?;
        if let Some(damage) = &rec.damage {
            eprintln!(
                "jscope: warning: {} is {damage}; read up to there",
                source.name()
            );
        }
        recs.push(rec);
    }
    Ok(recs)
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
    if is_session(path).unwrap_or(false) {
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
        // JFR, a session, or no recording: failing as reading it does.
        return Ok(load_file(path)?.rec.header.start_wall_ns);
    }
    let mut stream = ChunkStream::new(BufReader::new(std::fs::File::open(path)?))?;
    let first = stream.next();
    let rec = Recording::from_header_chunk(stream.version(), first.as_ref(), stream.damage())?;
    Ok(rec.header.start_wall_ns)
}

/// Epoch ns of a window bound, for a JVM whose recording started at `started_ns`.
pub(crate) fn epoch_ns(started_ns: u64, seconds: Option<f64>) -> Option<u64> {
    seconds.map(|s| started_ns.saturating_add((s * 1e9) as u64))
}

/// Turns wall-clock `--from`/`--to`/`--since` into seconds from the start of what
/// the command reads: a file's recording, or the (earliest) selected JVM.
pub fn resolve_window(file: Option<&Path>, src: &SourceArgs, sel: &mut SelectArgs) -> Result<()> {
    sel.resolve(|| {
        if let Some(path) = file {
            return start_wall_ns(path).with_context(|| format!("cannot read {}", path.display()));
        }
        let Some(collected) = Collected::open(src)? else {
            bail!("give a recording FILE, --data DIR or --collector URL");
        };
        Ok(origin_ns(&collected.pick(&selection_of(src)?)?))
    })
}

pub fn title_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A session file starts with `{`; a recording with the format's magic.
pub(crate) fn is_session(path: &Path) -> Result<bool> {
    jscope_analysis::distributed::is_session(path)
        .with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds_count_from_the_start() {
        assert_eq!(epoch_ns(1_000, Some(1.5)), Some(1_500_001_000));
        assert_eq!(epoch_ns(1_000, None), None);
    }
}
