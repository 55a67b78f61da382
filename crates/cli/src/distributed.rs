//! `jscope merge` and `jscope tree --distributed`: recordings of several JVMs that
//! call each other, merged into one execution tree (docs/DISTRIBUTED.md).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use jscope_analysis::distributed::{
    DistributedTree, DistributedView, FlatTree, Match, Member, MemberSource, Session,
};
use jscope_analysis::trace::TraceOptions;
use jscope_store::jvms::listing;
use jscope_store::{FileStore, JvmSelection, JvmSource, RemoteCollector, SelectError};

use crate::output::Format;

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

/// Reads the recordings, as many at a time as there are cores, each into its call
/// tree; a damaged recording is read up to the damage, with a warning.
fn load_sources(sources: &[MemberSource], options: &TraceOptions) -> Result<Vec<Member>> {
    for source in sources {
        if let MemberSource::File(path) = source {
            if crate::source::is_jfr_file(path).unwrap_or(false) {
                bail!(
                    "{} is a JFR file: merge reads jscope recordings; convert it first (jscope convert {} -o {})",
                    path.display(),
                    path.display(),
                    path.with_extension("jsc").display()
                );
            }
        }
    }
    let warn = |w: String| eprintln!("jscope: warning: {w}");
    Ok(jscope_store::distributed::load_sources(
        sources, options, &warn,
    )?)
}

/// The JVMs of a collector (its data directory or its API) named by `want` (ids
/// or pids), or all of them.
fn chosen_ids(source: &dyn JvmSource, want: &[String]) -> Result<Vec<String>> {
    let rows = source.jvm_list()?;
    let selection = JvmSelection {
        jvms: want.to_vec(),
        ..JvmSelection::default()
    };
    let ids = selection.pick_ids(&rows).map_err(|e| match e {
        SelectError::NoSuchJvm(_) => anyhow::anyhow!("{e}; known: {}", listing(&rows)),
        e => e.into(),
    })?;
    Ok(ids)
}

/// The JVMs of a data directory named by `want` (ids or pids), or all of them.
fn data_sources(dir: &Path, want: &[String]) -> Result<Vec<MemberSource>> {
    // Read-only: a collector may be writing to the directory right now.
    let store = FileStore::open_read_only(dir)
        .with_context(|| format!("cannot open collector data {}", dir.display()))?;
    Ok(chosen_ids(&store, want)?
        .into_iter()
        .map(|jvm| MemberSource::Data {
            dir: dir.to_path_buf(),
            jvm,
        })
        .collect())
}

pub fn merge(args: &MergeArgs) -> Result<()> {
    if !args.jvms.is_empty() && args.data.is_none() && args.collector.is_none() {
        bail!("--jvm chooses JVMs of --data or --collector");
    }
    let mut sources: Vec<MemberSource> =
        args.files.iter().cloned().map(MemberSource::File).collect();
    if let Some(dir) = &args.data {
        sources.extend(data_sources(dir, &args.jvms)?);
    }
    if let Some(url) = &args.collector {
        let c = RemoteCollector::new(url, args.token.clone())?;
        let fetched = fetch_recordings(&c, &args.jvms)?;
        sources.extend(save_fetched(&args.output, fetched)?);
    }
    let members = load_sources(&sources, &TraceOptions::hiding(&args.hide))?;
    let tree = DistributedTree::build(members);
    let dir = args.output.parent().unwrap_or(Path::new(""));
    Session::of(&tree, &sources, dir).write(&args.output)?;
    let mut out = BufWriter::new(io::stdout().lock());
    tree.write_summary(&mut out)?;
    writeln!(out, "session written to {}", args.output.display())?;
    out.flush()?;
    Ok(())
}

/// The recordings of a running collector's JVMs named by `want` (ids or pids), or
/// of all of them, fetched through its API (`/api/jvms/{id}/recording`): the same
/// bytes `--data` reads from its directory.
fn fetch_recordings(c: &RemoteCollector, want: &[String]) -> Result<Vec<(String, Vec<u8>)>> {
    let ids = chosen_ids(c, want)?;
    if ids.is_empty() {
        bail!("{} holds no JVM", c.base());
    }
    ids.into_iter()
        .map(|id| {
            let bytes = c.recording_bytes(&id, None, None)?;
            Ok((id, bytes))
        })
        .collect()
}

/// Writes fetched recordings next to the session (`SESSION-STEM.ID.jsc`), so the
/// session reads again after the collector is gone.
fn save_fetched(session: &Path, fetched: Vec<(String, Vec<u8>)>) -> Result<Vec<MemberSource>> {
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
            Ok(MemberSource::File(path))
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

/// Every JVM a running collector stored, read into members.
fn collector_members(
    url: &str,
    token: Option<String>,
    options: &TraceOptions,
) -> Result<Vec<Member>> {
    let c = RemoteCollector::new(url, token)?;
    fetch_recordings(&c, &[])?
        .into_iter()
        .map(|(id, bytes)| {
            Member::from_bytes(&id, &bytes, options)
                .with_context(|| format!("{} sent an unreadable recording of {id}", c.base()))
        })
        .collect()
}

/// The members and matches of a session file.
fn read_session(path: &Path, options: &TraceOptions) -> Result<(Vec<Member>, Vec<Match>)> {
    Session::open(path, |sources| load_sources(sources, options))
}

pub fn tree(args: &TreeCommand) -> Result<()> {
    if args.tree.thread.is_some() {
        bail!("--thread is not supported with --distributed (use --jvm N)");
    }
    let options = TraceOptions::hiding(&args.tree.hide.hide);
    let files: Vec<PathBuf> = std::iter::once(args.tree.file.clone())
        .filter(|f| args.collector.is_none() || f.as_os_str() != NO_FILE)
        .chain(args.more.iter().cloned())
        .collect();
    let tree = if let Some(url) = &args.collector {
        if !files.is_empty() {
            bail!("give recordings or --collector, not both");
        }
        DistributedTree::build(collector_members(url, args.token.clone(), &options)?)
    } else if files.len() == 1 && crate::source::is_session(&files[0])? {
        let (members, matches) = read_session(&files[0], &options)?;
        DistributedTree::with_matches(members, &matches)
    } else {
        let sources: Vec<MemberSource> = files.into_iter().map(MemberSource::File).collect();
        DistributedTree::build(load_sources(&sources, &options)?)
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
        write_chrome(&tree.flatten(&view), path)
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

/// The merged timeline as Chrome/Perfetto trace-event JSON.
fn write_chrome(flat: &FlatTree, path: &Path) -> io::Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    flat.write_chrome(&mut out)?;
    out.flush()
}
