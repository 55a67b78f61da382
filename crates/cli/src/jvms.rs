//! `jscope jvms`: the JVMs of this machine (as `jcmd` and `asprof` list them), with
//! whether jscope's agent is loaded in each; with `--collector URL`, a collector's.

use std::collections::BTreeSet;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;
use jscope_store::identity::main_class;
use jscope_store::{JvmSummary, RemoteCollector};
use serde::Serialize;

use crate::output::Format;
use clap::Args;

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

/// One local JVM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalJvm {
    pub pid: u32,
    /// Main class, `-jar`'s jar or `-m`'s module; empty when unknown.
    pub main_class: String,
    /// Whether libjscope_agent.so is mapped; `None` when the process's maps are
    /// not readable (another user's JVM).
    pub jscope_loaded: Option<bool>,
    pub command_line: String,
}

pub fn jvms(args: &JvmsArgs) -> Result<()> {
    if let Some(url) = &args.collector {
        return collector_jvms(&RemoteCollector::new(url, args.token.clone())?, args.format);
    }
    let jvms = local_jvms();
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&jvms)?)?,
        Format::Text => {
            writeln!(out, "{:>8}  {:<7}  MAIN", "PID", "JSCOPE")?;
            for j in &jvms {
                let loaded = match j.jscope_loaded {
                    Some(true) => "loaded",
                    Some(false) => "-",
                    None => "?",
                };
                let main = if j.main_class.is_empty() {
                    &j.command_line
                } else {
                    &j.main_class
                };
                writeln!(out, "{:>8}  {loaded:<7}  {main}", j.pid)?;
            }
            if jvms.is_empty() {
                writeln!(out, "(no JVM of this user is running)")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The JVMs whose /proc entries this process can read, by pid: processes whose
/// executable or launcher is `java`, and those with an hsperfdata file.
pub fn local_jvms() -> Vec<LocalJvm> {
    let perf = hsperfdata_pids();
    let me = std::process::id();
    let mut jvms = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return jvms;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc_dir = entry.path();
        let words = cmdline(&proc_dir);
        let exe_is_java = std::fs::read_link(proc_dir.join("exe"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .is_some_and(|n| n == "java" || n == "javaw");
        let argv0_is_java = words
            .first()
            .and_then(|w| Path::new(w).file_name())
            .is_some_and(|n| n == "java" || n == "javaw");
        if !(exe_is_java || argv0_is_java || perf.contains(&pid)) || words.is_empty() {
            continue;
        }
        jvms.push(LocalJvm {
            pid,
            main_class: main_class(&words),
            jscope_loaded: agent_loaded(&proc_dir),
            command_line: words.join(" "),
        });
    }
    jvms.sort_by_key(|j| j.pid);
    jvms
}

fn cmdline(proc_dir: &Path) -> Vec<String> {
    let bytes = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
    bytes
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// Whether jscope's agent library is mapped into the process.
fn agent_loaded(proc_dir: &Path) -> Option<bool> {
    let maps = std::fs::read_to_string(proc_dir.join("maps")).ok()?;
    Some(maps.contains(crate::agent::AGENT_FILE))
}

/// Pids with a HotSpot performance-data file (`/tmp/hsperfdata_USER/PID`).
fn hsperfdata_pids() -> BTreeSet<u32> {
    let tmp = std::env::temp_dir();
    let mut pids = BTreeSet::new();
    let Ok(dirs) = std::fs::read_dir(&tmp) else {
        return pids;
    };
    for dir in dirs.flatten() {
        if !dir.file_name().to_string_lossy().starts_with("hsperfdata_") {
            continue;
        }
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Some(pid) = f.file_name().to_str().and_then(|n| n.parse().ok()) {
                pids.insert(pid);
            }
        }
    }
    pids
}

/// A collector's JVMs: id, pid, status, main class and host.
fn collector_jvms(c: &RemoteCollector, format: Format) -> Result<()> {
    let rows = c.jvm_list()?;
    let mut out = BufWriter::new(io::stdout().lock());
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?,
        Format::Text => {
            writeln!(
                out,
                "{:>8}  {:<9}  {:<32}  {:<20}  {:<16}  {:<24}  MAIN",
                "PID", "STATUS", "ID", "HOST", "SERVICE", "LABELS"
            )?;
            for r in &rows {
                writeln!(out, "{}", collector_row(r))?;
            }
            if rows.is_empty() {
                writeln!(out, "(the collector holds no JVM)")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// One JVM of a collector as a line of the table.
fn collector_row(r: &JvmSummary) -> String {
    // A pushed JVM (Pyroscope, OTLP) has no main class: its service names it.
    let main = match (&r.main_class, &r.service) {
        (m, _) if !m.is_empty() => m.clone(),
        (_, service) => service.clone(),
    };
    // The service (`-` when it is the main class) and labels, before MAIN.
    let service = match &r.service {
        svc if svc.is_empty() || *svc == main => "-".to_string(),
        svc => svc.clone(),
    };
    let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let labels = if labels.is_empty() {
        "-".to_string()
    } else {
        labels.join(",")
    };
    format!(
        "{:>8}  {:<9}  {:<32}  {:<20}  {service:<16}  {labels:<24}  {main}",
        r.pid,
        r.status.name(),
        r.id,
        r.host
    )
}
