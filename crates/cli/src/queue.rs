//! `jscope queue FILE`: a queue replayed from an exact trace (JPMT section 5):
//! each request's time in the queue and service time, the queue's length over
//! time, arrival rate, utilisation and Little's law. See docs/QUEUE.md.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use jscope_analysis::{replay_queue_bytes, QueueError, QueueReport, QueueSpec};
use jscope_format::Recording;

use crate::output::Format;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  jscope record --mode none --trace 'java.util.concurrent.ThreadPoolExecutor#execute;java.util.concurrent.ThreadPoolExecutor#getTask;java.util.concurrent.*BlockingQueue#offer;java.util.concurrent.*BlockingQueue#take;java.util.concurrent.*BlockingQueue#poll' -o pool.jsc -- java -jar app.jar\n  jscope queue pool.jsc --csv requests.csv --length-csv length.csv\n  jscope queue orb.jsc --queue 'com.ooc.OB.ThreadPool#add/com.ooc.OB.ThreadPool#get'"
)]
pub struct QueueArgs {
    /// The exact-tracing recording (.jsc, or a JFR file with jdk.MethodTrace events) to read.
    pub file: PathBuf,
    /// The queue: `threadpool` (a ThreadPoolExecutor's work queue: offer from
    /// execute, take/poll from getTask), `blockingqueue` (every
    /// java.util.concurrent blocking queue's put/offer/add and take/poll), or
    /// `CLASS#ENQUEUE/CLASS#DEQUEUE` (globs with * and ?). Default: threadpool when
    /// the recording has its methods, else blockingqueue.
    #[arg(long, value_name = "SPEC", value_parser = QueueSpec::parse)]
    pub queue: Option<QueueSpec>,
    /// The task's own method, `CLASS#METHOD` (globs; traced too): a service
    /// ends at the exit of the worker's first call of it after the dequeue
    /// (default: at the worker's next dequeue call).
    #[arg(long, value_name = "CLASS#METHOD")]
    pub task: Option<String>,
    /// Number of workers (c) for utilisation and the M/M/c comparison (default: the
    /// threads that made dequeue calls).
    #[arg(long, value_name = "N")]
    pub workers: Option<u64>,
    /// Write one CSV row per request (times in ns since the recording's start).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the queue length series as CSV (`t_ns,length` at every change).
    #[arg(long, value_name = "FILE")]
    pub length_csv: Option<PathBuf>,
    /// Text summary, or JSON with every request and the length series.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::new(file);
    write(&mut out)
        .and_then(|_| out.flush())
        .with_context(|| format!("cannot write {}", path.display()))
}

pub fn run(args: &QueueArgs) -> Result<()> {
    let path = &args.file;
    let mut bytes =
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    // A JFR file (JDK 25's jdk.MethodTrace) is replayed as the .jsc it converts to,
    // as `jscope stats` and `tree` read it; its damage is warned of here, since the
    // converted bytes are whole.
    if jscope_jfr::is_jfr(&bytes) {
        let rec = jscope_jfr::read_bytes(&bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if let Some(damage) = &rec.damage {
            eprintln!(
                "jscope: warning: {} is {damage}; read up to there",
                path.display()
            );
        }
        bytes = jscope_jfr::encode_jsc(&rec);
    }
    let with_task = |spec: QueueSpec| match &args.task {
        Some(t) => spec.with_task(t).map_err(anyhow::Error::msg),
        None => Ok(spec),
    };
    let replay = |spec: &QueueSpec| replay_queue_bytes(&bytes, spec, args.workers);
    let (report, rec): (QueueReport, Recording) = match &args.queue {
        Some(spec) => replay(&with_task(spec.clone())?),
        None => {
            let pool = with_task(QueueSpec::thread_pool())?;
            let queue = with_task(QueueSpec::blocking_queue())?;
            replay(&pool).or_else(|e| match e {
                QueueError::Missing { .. } => replay(&queue).map_err(|_| e),
                e => Err(e),
            })
        }
    }
    .with_context(|| format!("{}", path.display()))?;
    if let Some(damage) = &rec.damage {
        eprintln!(
            "jscope: warning: {} is {damage}; read up to there",
            path.display()
        );
    }
    if let Some(csv) = &args.csv {
        write_file(csv, |w| report.write_requests_csv(w))?;
    }
    if let Some(csv) = &args.length_csv {
        write_file(csv, |w| report.write_length_csv(w))?;
    }
    let mut out = BufWriter::new(io::stdout().lock());
    match args.format {
        Format::Text => write!(out, "{}", report.summary)?,
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
    }
    out.flush()?;
    Ok(())
}
