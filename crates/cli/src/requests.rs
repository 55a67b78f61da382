//! `jscope requests`: the requests a recording's threads served (HTTP and RMI
//! calls, spans), slowest first, with the trace id `--request` takes.

use std::fmt;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use jscope_analysis::{request_rows, RequestRow};
use jscope_store::RemoteCollector;
use serde::{Deserialize, Serialize};

use crate::output::Format;
use crate::source::{self, SourceArgs, Window};

#[derive(Debug, Args)]
pub struct RequestsArgs {
    /// The recording (or a session of `jscope merge`); or use --data / --collector.
    #[arg(required_unless_present_any = ["data", "collector"])]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Only requests at least this long (50ms, 1s).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse_duration)]
    pub latency: Option<std::time::Duration>,
    /// At most this many rows.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(Serialize, Deserialize)]
struct Requests {
    requests: Vec<RequestRow>,
    /// Rows there were before --limit.
    total: usize,
}

pub fn run(args: &RequestsArgs) -> Result<()> {
    // A collector lists its JVMs' requests itself (`/api/requests`).
    if let (None, Some(url)) = (&args.file, &args.source.collector) {
        let remote = RemoteCollector::new(url, args.source.token.clone())?;
        let src = &args.source;
        let mut query: Vec<(&str, String)> = src.jvm.iter().map(|j| ("jvm", j.clone())).collect();
        query.extend(src.service.iter().map(|s| ("service", s.clone())));
        query.extend(src.label.iter().map(|l| ("label", l.clone())));
        if let Some(d) = args.latency {
            query.push(("latency_ns", d.as_nanos().to_string()));
        }
        query.push(("limit", args.limit.to_string()));
        let listed: Requests = remote.requests(&query)?;
        return args.format.print(&listed);
    }
    // A session's JVMs are read apart: a request lists every JVM it touched.
    let members = match args.file.as_deref() {
        Some(path) if source::is_session(path)? => source::session_members(path)?,
        _ => vec![source::load(args.file.as_deref(), &args.source, Window::default())?.rec],
    };
    let jvms: Vec<(u32, &jscope_format::Recording)> =
        members.iter().map(|r| (r.header.pid, r)).collect();
    let min = args.latency.map_or(0, |d| d.as_nanos() as u64);
    let mut rows: Vec<RequestRow> = request_rows(&jvms)
        .into_iter()
        .filter(|r| r.duration_ns >= min)
        .collect();
    let total = rows.len();
    rows.truncate(args.limit);
    args.format.print(&Requests {
        requests: rows,
        total,
    })
}

impl fmt::Display for Requests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.requests.is_empty() {
            return writeln!(
                f,
                "no requests (record with remote=http or remote=rmi, or open jscope.Span spans)"
            );
        }
        writeln!(
            f,
            "{:>10} {:>10} {:>7} {:<32} {:<6} {:<10} entry",
            "duration", "cpu", "samples", "id", "kind", "jvms"
        )?;
        for r in &self.requests {
            let jvms: Vec<String> = r.jvms.iter().map(u32::to_string).collect();
            writeln!(
                f,
                "{:>10} {:>10} {:>7} {:<32} {:<6} {:<10} {}{}",
                ms(r.duration_ns),
                ms(r.cpu_ns),
                r.samples,
                r.id,
                r.kind,
                jvms.join(","),
                r.entry,
                if r.failed { " (failed)" } else { "" }
            )?;
        }
        if self.total > self.requests.len() {
            writeln!(f, "({} of {} requests)", self.requests.len(), self.total)?;
        }
        Ok(())
    }
}

fn ms(ns: u64) -> String {
    format!("{:.1}ms", ns as f64 / 1e6)
}
