//! Writes a synthetic exact-tracing recording of N million events through the
//! agent writer's path (`ChunkWriter::trace` in batches of 8192, chunks of 1 MiB
//! raw with their summaries, counters in each chunk, an end record), for measuring
//! `jscope info`, `stats` and `tree` on big traces (BENCHMARKS.md).
//!
//! `cargo run --release -p jscope-format --example big_trace -- OUT.jsc 500`
//! (`-- OUT.jsc 50 plain` writes no summaries, as writers before them did).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use jscope_format::*;

#[path = "../benches/support/synth.rs"]
mod synth;

use synth::{Synth, METHODS};

const BATCH_EVENTS: usize = 8192;
const CHUNK_BYTES: usize = 1 << 20;
const THREADS: u32 = 8;
const START: u64 = 1_000_000;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(millions)) = (
        args.first(),
        args.get(1).and_then(|a| a.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: big_trace OUT.jsc MILLIONS_OF_EVENTS [plain]");
        std::process::exit(2);
    };
    let total = millions * 1_000_000;
    let finish: fn(&mut ChunkWriter) -> Vec<u8> = if args.get(2).is_some_and(|a| a == "plain") {
        ChunkWriter::finish
    } else {
        ChunkWriter::finish_indexed
    };
    let header = Header {
        agent_version: "synthetic".into(),
        pid: 1,
        host: "bench".into(),
        command_line: format!("big_trace {millions}"),
        start_ticks: START,
        ticks_per_second: 1_000_000_000,
        modes: "none".into(),
        max_depth: 2048,
        extra: vec![("trace.probe_cost_ns".into(), "12".into())],
        ..Default::default()
    };
    let mut out = BufWriter::with_capacity(4 << 20, File::create(path)?);
    out.write_all(&encode_file_start(&header))?;
    let mut w = ChunkWriter::new();
    let mut dict = Dictionary::new();
    for m in 1..=METHODS {
        let id = dict.method_label(&mut w, &format!("bench.Work{}.step{m}", m % 7));
        assert_eq!(id, MethodId(m), "methods are declared in id order");
    }
    for t in 1..=THREADS {
        w.thread(&ThreadDef {
            id: ThreadId(t),
            java_id: t.into(),
            name: format!("worker-{t}"),
            start_order: t,
            ..Default::default()
        });
    }
    let mut threads: Vec<Synth> = (0..THREADS).map(|t| Synth::new(t.into(), START)).collect();
    let mut batch = TraceBatch::default();
    let (mut written, mut i) = (0u64, 0usize);
    let t0 = Instant::now();
    while written < total {
        let t = i % THREADS as usize;
        let n = BATCH_EVENTS.min((total - written) as usize);
        threads[t].fill(&mut batch.events, n);
        batch.thread = ThreadId(t as u32 + 1);
        w.trace(&batch);
        written += n as u64;
        i += 1;
        if w.raw_len() >= CHUNK_BYTES {
            let now = threads.iter().map(|s| s.ticks).max().unwrap_or(START);
            w.counters(
                now,
                &[
                    ("trace.events_written", written),
                    ("trace.events_dropped", 0),
                ],
            );
            out.write_all(&finish(&mut w))?;
        }
    }
    let end = threads.iter().map(|s| s.ticks).max().unwrap_or(START) + 1;
    w.counters(
        end,
        &[
            ("trace.events_written", written),
            ("trace.events_dropped", 0),
        ],
    );
    w.end(end);
    out.write_all(&finish(&mut w))?;
    out.flush()?;
    let d = t0.elapsed();
    eprintln!(
        "big_trace: {written} events to {path} in {:.1}s ({:.1} M events/s)",
        d.as_secs_f64(),
        written as f64 / d.as_secs_f64() / 1e6
    );
    Ok(())
}
