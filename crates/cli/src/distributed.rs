//! `jscope merge` and `jscope tree --distributed`: recordings of several JVMs that
//! call each other, merged into one execution tree (docs/DISTRIBUTED.md).

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use jscope_analysis::distributed::{
    CallRef, DistributedTree, DistributedView, FlatTree, Match, Member,
};
use jscope_analysis::trace::TraceOptions;
use jscope_analysis::ThreadMatcher;
use jscope_collector::{FileStore, Store};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::args::Format;
use crate::remote::Collector;
use crate::source::{choose, JvmRow};

/// FILE's value when only --collector is given (clap needs one for the field).
const NO_FILE: &str = "-";

/// `jscope tree`, with the distributed form's extra arguments.
#[derive(Debug, Args)]
// FILE is not needed when the JVMs come from a running collector. (Changing an
// argument moves it last among the arguments: the positions are set again.)
#[command(mut_arg("file", |a| {
    a.required(false)
        .required_unless_present("collector")
        .default_value(NO_FILE)
        .hide_default_value(true)
        .index(1)
}))]
#[command(mut_arg("more", |a| a.index(2)))]
pub struct TreeCommand {
    #[command(flatten)]
    pub tree: crate::trace::TreeArgs,
    /// Merge several JVMs' recordings (or read a session written by `jscope merge`)
    /// and print one tree: server calls under the client calls that caused them.
    #[arg(long)]
    pub distributed: bool,
    /// More recordings to merge (with --distributed).
    #[arg(value_name = "MORE", requires = "distributed")]
    pub more: Vec<PathBuf>,
    /// Only this JVM's tree (its index in the session), with --distributed.
    #[arg(long, value_name = "N", requires = "distributed")]
    pub jvm: Option<usize>,
    /// With --distributed: text, or JSON rows (each node's JVM, times on the
    /// reference timeline with their uncertainty, network time of remote calls).
    #[arg(long, value_enum, requires = "distributed")]
    pub format: Option<Format>,
    /// With --distributed: also write the merged timeline as Chrome/Perfetto trace
    /// JSON (one process per JVM, remote calls as flow arrows to the server's calls).
    #[arg(long, value_name = "FILE", requires = "distributed")]
    pub chrome: Option<PathBuf>,
    /// With --distributed: merge every JVM a running collector stored (e.g.
    /// http://127.0.0.1:7080), fetched through its API, instead of files.
    #[arg(long, value_name = "URL", requires = "distributed")]
    pub collector: Option<String>,
    /// The collector's token (`jscope serve --token`).
    #[arg(long, value_name = "TOKEN", requires = "collector")]
    pub token: Option<String>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  jscope merge client.jsc s1.jsc s2.jsc s3.jsc -o beacon.jss\n  jscope merge --data /var/lib/jscope -o beacon.jss\n  jscope merge --collector http://127.0.0.1:7080 --jvm 4711 --jvm 4712 -o two.jss\n  jscope tree --distributed beacon.jss"
)]
pub struct MergeArgs {
    /// The recordings (.jsc) of the JVMs, one per JVM.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub files: Vec<PathBuf>,
    /// Also merge JVMs from a collector's data directory (`jscope serve --data DIR`):
    /// those named by --jvm, or every JVM it holds.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Also merge JVMs of a running collector (e.g. http://127.0.0.1:7080): those
    /// named by --jvm, or every JVM it stored. Their recordings are fetched through
    /// its API and written next to the session file (SESSION-STEM.ID.jsc).
    #[arg(long, value_name = "URL", conflicts_with = "data")]
    pub collector: Option<String>,
    /// The collector's token (`jscope serve --token`).
    #[arg(long, value_name = "TOKEN", requires = "collector")]
    pub token: Option<String>,
    /// A JVM of --data or --collector: its id, or a pid (the newest JVM with it).
    /// Repeatable.
    #[arg(long = "jvm", value_name = "ID|PID")]
    pub jvms: Vec<String>,
    /// The session file to write (JSON: the member recordings and the match table).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Leave out methods whose `pkg.Class.method` contains this (or matches it as a
    /// glob). Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub hide: Vec<String>,
}

/// The session file: which recordings, how their calls were matched, and the
/// clock offsets found. Member paths are relative to the session file's
/// directory when the recordings lie below it.
#[derive(Debug, Serialize, Deserialize)]
struct Session {
    jscope_session: u32,
    reference: usize,
    members: Vec<SessionMember>,
    matches: Vec<SessionMatch>,
    unmatched_clients: Vec<[usize; 2]>,
    unmatched_servers: Vec<[usize; 2]>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SessionMember {
    /// A recording file, or
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    /// a collector's data directory and the JVM's stream id in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jvm: Option<String>,
    host: String,
    pid: u32,
    command_line: String,
    remote_calls: usize,
    /// Add to this JVM's clock to get the reference's; absent when not linked.
    offset_ns: Option<i64>,
    uncertainty_ns: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SessionMatch {
    /// [JVM index, index among that JVM's remote-call records].
    client: [usize; 2],
    server: [usize; 2],
    network_ns: u64,
}

const SESSION_VERSION: u32 = 1;

/// Where a member's recording comes from.
#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    /// A collector's data directory and a stream id in it.
    Data(PathBuf, String),
}

impl Source {
    fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Data(dir, id) => format!("{}#{id}", dir.display()),
        }
    }
}

fn options(hide: &[String]) -> TraceOptions {
    TraceOptions {
        hide: hide.iter().map(|p| ThreadMatcher::new(p)).collect(),
        probe_cost_ns: None,
    }
}

/// Reads the recordings, two at a time (one per core), each into its call tree.
fn load_members(sources: &[Source], options: &TraceOptions) -> Result<Vec<Member>> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut out: Vec<Option<Result<Member>>> = (0..sources.len()).map(|_| None).collect();
    for (batch, slots) in sources.chunks(workers).zip(out.chunks_mut(workers)) {
        std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|p| s.spawn(move || load_member(p, options)))
                .collect();
            for (h, slot) in handles.into_iter().zip(slots) {
                *slot = Some(h.join().expect("loading a recording does not panic"));
            }
        });
    }
    out.into_iter()
        .map(|m| m.expect("every slot filled"))
        .collect()
}

fn load_member(source: &Source, options: &TraceOptions) -> Result<Member> {
    let member = match source {
        Source::File(path) => Member::read_file(path, options)
            .with_context(|| format!("cannot read {}", path.display()))?,
        Source::Data(dir, id) => {
            let bytes = open_data(dir)?
                .raw(id, None, None)
                .with_context(|| format!("cannot read JVM {id} from {}", dir.display()))?;
            Member::from_bytes(&source.name(), &bytes, options)
                .with_context(|| format!("cannot read JVM {id} from {}", dir.display()))?
        }
    };
    if let Some(d) = &member.tree.damage {
        eprintln!(
            "jscope: warning: {} is {d}; read up to there",
            source.name()
        );
    }
    Ok(member)
}

/// Read-only: a collector may be writing to the directory right now.
fn open_data(dir: &Path) -> Result<FileStore> {
    FileStore::open_read_only(dir)
        .with_context(|| format!("cannot open collector data {}", dir.display()))
}

/// The JVMs of a data directory named by `want` (ids or pids), or all of them.
fn data_sources(dir: &Path, want: &[String]) -> Result<Vec<Source>> {
    let rows: Vec<JvmRow> = open_data(dir)?
        .jvms()
        .into_iter()
        .map(|j| JvmRow {
            id: j.identity.id,
            pid: j.identity.pid,
            command_line: j.identity.command_line,
            status: String::new(),
            started_ms: j.identity.start_wall_ns / 1_000_000,
        })
        .collect();
    let ids: Vec<String> = if want.is_empty() {
        rows.iter().map(|r| r.id.clone()).collect()
    } else {
        want.iter()
            .map(|w| choose(&rows, Some(w)).map(|r| r.id.clone()))
            .collect::<Result<_>>()?
    };
    Ok(ids
        .into_iter()
        .map(|id| Source::Data(dir.to_path_buf(), id))
        .collect())
}

pub fn merge(args: &MergeArgs) -> Result<()> {
    if !args.jvms.is_empty() && args.data.is_none() && args.collector.is_none() {
        bail!("--jvm chooses JVMs of --data or --collector");
    }
    let mut sources: Vec<Source> = args.files.iter().cloned().map(Source::File).collect();
    if let Some(dir) = &args.data {
        sources.extend(data_sources(dir, &args.jvms)?);
    }
    if let Some(url) = &args.collector {
        let c = Collector::new(url, args.token.clone())?;
        let fetched = fetch_recordings(&c, &args.jvms)?;
        sources.extend(save_fetched(&args.output, fetched)?);
    }
    let members = load_members(&sources, &options(&args.hide))?;
    let tree = DistributedTree::build(members);
    let dir = args.output.parent().unwrap_or(Path::new(""));
    let session = session_of(&tree, &sources, dir);
    let text = serde_json::to_string_pretty(&session)?;
    std::fs::write(&args.output, text + "\n")
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    let mut out = BufWriter::new(io::stdout().lock());
    tree.write_summary(&mut out)?;
    writeln!(out, "session written to {}", args.output.display())?;
    out.flush()?;
    Ok(())
}

/// The recordings of a running collector's JVMs named by `want` (ids or pids), or
/// of all of them, fetched through its API (`/api/jvms/{id}/recording`): the same
/// bytes `--data` reads from its directory.
fn fetch_recordings(c: &Collector, want: &[String]) -> Result<Vec<(String, Vec<u8>)>> {
    let rows: Vec<JvmRow> = serde_json::from_slice(&c.get("/api/jvms")?)
        .with_context(|| format!("{} did not answer a JVM list", c.base()))?;
    let ids: Vec<String> = if want.is_empty() {
        rows.iter().map(|r| r.id.clone()).collect()
    } else {
        want.iter()
            .map(|w| choose(&rows, Some(w)).map(|r| r.id.clone()))
            .collect::<Result<_>>()?
    };
    if ids.is_empty() {
        bail!("{} holds no JVM", c.base());
    }
    ids.into_iter()
        .map(|id| {
            let bytes = c.get(&format!("/api/jvms/{}/recording", path_segment(&id)))?;
            Ok((id, bytes))
        })
        .collect()
}

/// Writes fetched recordings next to the session (`SESSION-STEM.ID.jsc`), so the
/// session reads again after the collector is gone.
fn save_fetched(session: &Path, fetched: Vec<(String, Vec<u8>)>) -> Result<Vec<Source>> {
    let stem = session
        .file_stem()
        .map_or("session".into(), |s| s.to_string_lossy().into_owned());
    let dir = session.parent().unwrap_or(Path::new(""));
    fetched
        .into_iter()
        .map(|(id, bytes)| {
            let path = dir.join(format!("{stem}.{}.jsc", file_safe(&id)));
            std::fs::write(&path, bytes)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(Source::File(path))
        })
        .collect()
}

/// A stream id as part of a file name.
fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect()
}

/// Percent-encodes a URL path segment.
fn path_segment(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every JVM a running collector stored, read into members.
fn collector_members(
    url: &str,
    token: Option<String>,
    options: &TraceOptions,
) -> Result<Vec<Member>> {
    let c = Collector::new(url, token)?;
    fetch_recordings(&c, &[])?
        .into_iter()
        .map(|(id, bytes)| {
            Member::from_bytes(&id, &bytes, options)
                .with_context(|| format!("{} sent an unreadable recording of {id}", c.base()))
        })
        .collect()
}

fn session_of(tree: &DistributedTree, sources: &[Source], dir: &Path) -> Session {
    let pair = |c: CallRef| [c.jvm, c.call];
    Session {
        jscope_session: SESSION_VERSION,
        reference: tree.reference,
        members: tree
            .members
            .iter()
            .zip(sources)
            .enumerate()
            .map(|(j, (m, source))| SessionMember {
                path: match source {
                    Source::File(p) => Some(relative_to(p, dir)),
                    Source::Data(..) => None,
                },
                data: match source {
                    Source::Data(d, _) => Some(relative_to(d, dir)),
                    Source::File(_) => None,
                },
                jvm: match source {
                    Source::Data(_, id) => Some(id.clone()),
                    Source::File(_) => None,
                },
                host: m.host.clone(),
                pid: m.pid,
                command_line: m.command_line.clone(),
                remote_calls: m.remotes.len(),
                offset_ns: tree.offsets[j].map(|o| o.offset_ns),
                uncertainty_ns: tree.offsets[j].map(|o| o.uncertainty_ns),
            })
            .collect(),
        matches: tree
            .links
            .iter()
            .map(|l| SessionMatch {
                client: pair(l.client),
                server: pair(l.server),
                network_ns: l.network_ns,
            })
            .collect(),
        unmatched_clients: tree.unmatched_clients.iter().map(|&c| pair(c)).collect(),
        unmatched_servers: tree.unmatched_servers.iter().map(|&c| pair(c)).collect(),
    }
}

/// A recording's path as the session stores it: relative to the session's
/// directory when below it, so a session and its recordings can move together.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    let (Ok(p), Ok(d)) = (path.canonicalize(), dir_or_cwd(dir).canonicalize()) else {
        return path.to_path_buf();
    };
    p.strip_prefix(&d).map(Path::to_path_buf).unwrap_or(p)
}

fn dir_or_cwd(dir: &Path) -> &Path {
    if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }
}

/// A session file starts with `{`; a recording with the format's magic.
pub(crate) fn is_session(path: &Path) -> Result<bool> {
    let mut head = [0u8; 1];
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let n = io::Read::read(&mut f, &mut head)?;
    Ok(n == 1 && head[0] == b'{')
}

/// The members and matches of a session file.
fn read_session(path: &Path, options: &TraceOptions) -> Result<(Vec<Member>, Vec<Match>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let session: Session = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a jscope session file", path.display()))?;
    if session.jscope_session != SESSION_VERSION {
        bail!(
            "{}: session version {} (this jscope reads {SESSION_VERSION})",
            path.display(),
            session.jscope_session
        );
    }
    let dir = dir_or_cwd(path.parent().unwrap_or(Path::new("")));
    let sources = session
        .members
        .iter()
        .map(|m| match (&m.path, &m.data, &m.jvm) {
            (Some(p), None, None) => Ok(Source::File(dir.join(p))),
            (None, Some(d), Some(id)) => Ok(Source::Data(dir.join(d), id.clone())),
            _ => bail!(
                "{}: a member needs either \"path\" or \"data\" and \"jvm\"",
                path.display()
            ),
        })
        .collect::<Result<Vec<_>>>()?;
    let members = load_members(&sources, options)?;
    let matches = session
        .matches
        .iter()
        .map(|m| checked_match(&members, m))
        .collect::<Result<Vec<_>>>()
        .with_context(|| {
            format!(
                "{}: the match table does not fit its recordings",
                path.display()
            )
        })?;
    Ok((members, matches))
}

fn checked_match(members: &[Member], m: &SessionMatch) -> Result<Match> {
    let call = |[jvm, call]: [usize; 2]| -> Result<CallRef> {
        match members.get(jvm) {
            Some(member) if call < member.remotes.len() => Ok(CallRef { jvm, call }),
            _ => bail!("no remote call {call} in JVM {jvm}"),
        }
    };
    Ok(Match {
        client: call(m.client)?,
        server: call(m.server)?,
    })
}

/// The whole merged tree of a session file as rows (for `jscope view SESSION`).
pub(crate) fn session_rows(path: &Path) -> Result<FlatTree> {
    let (members, matches) = read_session(path, &options(&[]))?;
    let tree = DistributedTree::with_matches(members, &matches);
    Ok(tree.flatten(&DistributedView::default()))
}

pub fn tree(args: &TreeCommand) -> Result<()> {
    if args.tree.thread.is_some() {
        bail!("--thread is not supported with --distributed (use --jvm N)");
    }
    let options = options(&args.tree.hide.hide);
    let files: Vec<PathBuf> = std::iter::once(args.tree.file.clone())
        .filter(|f| args.collector.is_none() || f.as_os_str() != NO_FILE)
        .chain(args.more.iter().cloned())
        .collect();
    let tree = if let Some(url) = &args.collector {
        if !files.is_empty() {
            bail!("give recordings or --collector, not both");
        }
        DistributedTree::build(collector_members(url, args.token.clone(), &options)?)
    } else if files.len() == 1 && is_session(&files[0])? {
        let (members, matches) = read_session(&files[0], &options)?;
        DistributedTree::with_matches(members, &matches)
    } else {
        let sources: Vec<Source> = files.into_iter().map(Source::File).collect();
        DistributedTree::build(load_members(&sources, &options)?)
    };
    if let Some(j) = args.jvm.filter(|&j| j >= tree.members.len()) {
        bail!("--jvm {j}: the session has {} JVMs", tree.members.len());
    }
    let view = DistributedView {
        jvm: args.jvm,
        max_depth: args.tree.depth,
        min_duration_ns: args.tree.min_duration.map_or(0, |d| d.as_nanos() as u64),
    };
    if let Some(path) = &args.chrome {
        let text = serde_json::to_string(&chrome(&tree.flatten(&view)))?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format.unwrap_or_default() {
        Format::Text => tree.write_text(&view, &mut out)?,
        Format::Json => {
            serde_json::to_writer(&mut out, &tree.flatten(&view))?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Chrome trace-event JSON of the merged tree: a process per JVM, a complete event
/// per call on the reference timeline (µs from the earliest call), remote calls as
/// events on the client's thread with a flow arrow to the server's first call.
/// Placements of other JVMs carry their uncertainty in `args`.
fn chrome(flat: &FlatTree) -> serde_json::Value {
    let origin = flat.nodes.iter().map(|n| n.start_ns).min().unwrap_or(0);
    let us = |ns: i64| (ns - origin) as f64 / 1e3;
    let mut tids: HashMap<(usize, &str), usize> = HashMap::new();
    let mut events: Vec<serde_json::Value> = flat
        .jvms
        .iter()
        .enumerate()
        .map(|(j, m)| {
            let name = format!("jvm {j} {} pid {}: {}", m.host, m.pid, m.command_line);
            json!({"ph": "M", "name": "process_name", "pid": j + 1, "tid": 0, "args": {"name": name}})
        })
        .collect();
    for (i, n) in flat.nodes.iter().enumerate() {
        let next = tids.len() + 1;
        let tid = *tids.entry((n.jvm, n.thread.as_str())).or_insert(next);
        if tid == next {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": n.jvm + 1, "tid": tid, "args": {"name": n.thread}}));
        }
        let mut args = json!({"self_us": n.self_ns as f64 / 1e3, "uncertainty_us": n.uncertainty_ns as f64 / 1e3});
        if n.own_clock {
            args["own_clock"] = json!(true);
        }
        if let Some(r) = &n.remote {
            args["network_us"] = json!(r.network_ns as f64 / 1e3);
            args["server_us"] = json!(r.server_ns as f64 / 1e3);
            args["server_jvm"] = json!(r.server_jvm);
            args["conn"] = json!(format!("{}#{}", r.client, r.conn_seq));
        }
        let ts = us(n.start_ns);
        events.push(
            json!({"ph": "X", "cat": if n.remote.is_some() { "remote" } else { "java" },
            "name": n.label, "pid": n.jvm + 1, "tid": tid, "ts": ts,
            "dur": n.duration_ns as f64 / 1e3, "args": args}),
        );
        if n.remote.is_some() {
            events.push(json!({"ph": "s", "cat": "remote", "name": "remote call", "id": i, "pid": n.jvm + 1, "tid": tid, "ts": ts}));
        }
        if let Some(p) = n.parent.filter(|&p| flat.nodes[p].remote.is_some()) {
            events.push(json!({"ph": "f", "bp": "e", "cat": "remote", "name": "remote call", "id": p, "pid": n.jvm + 1, "tid": tid, "ts": ts}));
        }
    }
    json!({"displayTimeUnit": "ns", "traceEvents": events})
}
