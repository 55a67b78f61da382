//! Trace-event throughput of the writer's path: `ChunkWriter::trace` batches of
//! 8192 events (the agent drain's batch size), chunks cut at 1 MiB raw (the agent
//! writer's) and framed with zstd with their summary chunks, as the agent's writer
//! does for its file, on one core.
//! Run: `cargo bench -p jscope-format --bench trace_codec` (`-- 200` for 200 M
//! events; the default is 50 M).

use std::time::Instant;

use jscope_format::*;

/// The agent drain's events per TraceBatch record and the writer's chunk size.
const BATCH_EVENTS: usize = 8192;
const CHUNK_BYTES: usize = 1 << 20;

#[path = "support/synth.rs"]
mod synth;

use synth::Synth;

/// This thread's CPU time (user + system), from /proc; None elsewhere. The rate per
/// CPU second is the figure that holds on a machine shared with other work.
fn thread_cpu() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Linux reports these in USER_HZ, 100 on every architecture it runs on.
    Some(std::time::Duration::from_millis(ticks * 10))
}

fn main() {
    let millions: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50);
    let total = millions * 1_000_000;
    let threads = 4;
    let mut synth: Vec<Synth> = (0..threads)
        .map(|i| Synth::new(i as u64, 1_000_000))
        .collect();
    // Events are generated ahead (as the rings hold them) so only the writer's
    // work is timed.
    let mut pregen: Vec<Vec<TraceEvent>> = Vec::new();
    for s in synth.iter_mut() {
        for _ in 0..16 {
            let mut v = Vec::with_capacity(BATCH_EVENTS);
            s.fill(&mut v, BATCH_EVENTS);
            pregen.push(v);
        }
    }
    let header = Header {
        ticks_per_second: 1_000_000_000,
        modes: "trace".into(),
        ..Default::default()
    };
    let mut file_bytes = encode_file_start(&header).len() as u64;
    let mut raw_bytes = 0u64;
    let mut w = ChunkWriter::new();
    let mut batch = TraceBatch::default();
    let mut written = 0u64;
    let mut i = 0usize;
    let mut framing = std::time::Duration::ZERO;
    let t = Instant::now();
    let cpu0 = thread_cpu();
    while written < total {
        let src = &pregen[i % pregen.len()];
        // Shift the pregenerated batch in time so every batch moves forward.
        let shift = (i / pregen.len()) as u64 * 40_000_000;
        batch.thread = ThreadId(1 + (i % threads) as u32);
        batch.events.clear();
        batch.events.extend(src.iter().map(|e| TraceEvent {
            ticks: e.ticks + shift,
            ..*e
        }));
        w.trace(&batch);
        written += batch.events.len() as u64;
        i += 1;
        if w.raw_len() >= CHUNK_BYTES {
            raw_bytes += w.raw_len() as u64;
            let f = Instant::now();
            file_bytes += w.finish_indexed().len() as u64;
            framing += f.elapsed();
        }
    }
    raw_bytes += w.raw_len() as u64;
    file_bytes += w.finish_indexed().len() as u64;
    let d = t.elapsed();
    let cpu = thread_cpu().zip(cpu0).map(|(b, a)| b - a);
    println!("trace events:       {written}");
    println!(
        "encode+compress:    {:.1} M events/s on one core ({:?})",
        written as f64 / d.as_secs_f64() / 1e6,
        d
    );
    if let Some(cpu) = cpu {
        println!(
            "per CPU second:     {:.1} M events/s ({:?} CPU)",
            written as f64 / cpu.as_secs_f64() / 1e6,
            cpu
        );
    }
    println!(
        "  of which zstd:    {:.0}% ({:?})",
        framing.as_secs_f64() / d.as_secs_f64() * 100.0,
        framing
    );
    println!(
        "size:               {:.2} raw bytes/event, {:.3} stored bytes/event",
        raw_bytes as f64 / written as f64,
        file_bytes as f64 / written as f64
    );
}
