//! Call trees and call statistics over a generated 100 M-event trace recording.
//! Run: `cargo bench -p jscope-analysis --bench trace` (JSCOPE_BENCH_EVENTS=N to
//! change the size). The recording is built in memory with `ChunkWriter`: 8
//! threads, 2,000 methods each calling one of 8 others, random nesting up to 24 deep, batches of 1,024
//! events, chunks of about 1 MiB before compression, as the agent writes them.

use std::time::Instant;

use jscope_analysis::trace::{analyse_bytes, scan_bytes, CallTree, TraceOptions, TraceStats};
use jscope_format::*;

const THREADS: u32 = 8;
const METHODS: u32 = 2_000;
const MAX_DEPTH: usize = 24;
const BATCH: usize = 1024;
const CHUNK_BYTES: usize = 1 << 20;

/// xorshift64: fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One thread's random walk through calls.
struct Walker {
    thread: u32,
    stack: Vec<u32>,
    ticks: u64,
    rng: Rng,
}

impl Walker {
    fn event(&mut self) -> TraceEvent {
        let r = self.rng.next();
        self.ticks += 20 + r % 200;
        let enter = self.stack.is_empty() || (self.stack.len() < MAX_DEPTH && r & (1 << 40) != 0);
        if enter {
            // Each method calls one of 8 callees, as code has a fixed call graph.
            let caller = u64::from(self.stack.last().copied().unwrap_or(0));
            let method = 1 + ((caller * 7919 + (r >> 8) % 8) % u64::from(METHODS)) as u32;
            self.stack.push(method);
            TraceEvent {
                kind: TraceKind::Enter,
                method: MethodId(method),
                ticks: self.ticks,
                untraced: ((r >> 50) % 3) as u32,
                cpu_ns: 0,
            }
        } else {
            let method = self.stack.pop().expect("not empty");
            TraceEvent {
                kind: TraceKind::Exit,
                method: MethodId(method),
                ticks: self.ticks,
                untraced: 0,
                cpu_ns: 0,
            }
        }
    }
}

fn dictionaries(w: &mut ChunkWriter) {
    w.string(StringId(1), "bench.Code");
    w.class(&ClassDef {
        id: ClassId(1),
        name: StringId(1),
        source_file: StringId::NONE,
    });
    for id in 1..=METHODS {
        w.string(StringId(1 + id), &format!("m{id}"));
        w.method(&MethodDef {
            id: MethodId(id),
            class: ClassId(1),
            name: StringId(1 + id),
            signature: StringId::NONE,
            modifiers: 1,
        });
    }
    for id in 1..=THREADS {
        w.thread(&ThreadDef {
            id: ThreadId(id),
            name: format!("worker-{id}"),
            start_order: id,
            ..Default::default()
        });
    }
}

fn generate(events: u64) -> Vec<u8> {
    let header = Header {
        ticks_per_second: 1_000_000_000,
        modes: "trace".into(),
        extra: vec![("trace.probe_cost_ns".into(), "9".into())],
        ..Default::default()
    };
    let mut out = encode_file_start(&header);
    let mut w = ChunkWriter::new();
    dictionaries(&mut w);
    let mut walkers: Vec<Walker> = (1..=THREADS)
        .map(|t| Walker {
            thread: t,
            stack: vec![],
            ticks: 1_000,
            rng: Rng(0x9e37_79b9 * u64::from(t)),
        })
        .collect();
    let mut written = 0;
    while written < events {
        for walker in &mut walkers {
            let n = BATCH.min((events - written) as usize);
            let batch = TraceBatch {
                thread: ThreadId(walker.thread),
                has_cpu: false,
                events: (0..n).map(|_| walker.event()).collect(),
            };
            written += n as u64;
            w.trace(&batch);
            if w.raw_len() >= CHUNK_BYTES {
                out.extend(w.finish());
            }
        }
    }
    out.extend(w.finish());
    out
}

/// CPU seconds this process has used (user + system), from /proc/self/stat, so the
/// figures can be read apart from the load other processes put on the machine.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat; 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs `f` and prints its wall time, rate and CPU time.
fn timed<T>(name: &str, events: u64, f: impl FnOnce() -> T) -> T {
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let out = f();
    let (wall, cpu) = (t.elapsed(), cpu_seconds() - cpu);
    println!(
        "{name:<22} {:>6.2} s wall, {:>6.2} s cpu, {:>6.1} M events/s",
        wall.as_secs_f64(),
        cpu,
        events as f64 / wall.as_secs_f64() / 1e6
    );
    out
}

fn main() {
    let events: u64 = std::env::var("JSCOPE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    // e.g. JSCOPE_BENCH_ONLY=onepass to time one phase.
    let only = std::env::var("JSCOPE_BENCH_ONLY").unwrap_or_default();
    let run = |phase: &str| only.is_empty() || only == phase;
    let t = Instant::now();
    let bytes = generate(events);
    println!(
        "generated {events} events in {:.1} s: {} MiB, {:.2} bytes/event",
        t.elapsed().as_secs_f64(),
        bytes.len() >> 20,
        bytes.len() as f64 / events as f64
    );
    let options = TraceOptions::default();
    if run("decode") {
        let mut seen = 0u64;
        timed("decode only", events, || {
            scan_bytes(&bytes, |_, b| seen += b.events.len() as u64).expect("readable")
        });
        assert_eq!(seen, events);
    }
    if run("stats") {
        let (stats, _) = timed("stats", events, || {
            TraceStats::from_bytes(&bytes, &options).expect("readable")
        });
        assert_eq!(stats.events, events);
        println!(
            "  {} calls, {} methods, {} pairs",
            stats.calls,
            stats.methods.len(),
            stats.pairs.len()
        );
    }
    if run("tree") {
        let (tree, _) = timed("tree", events, || {
            CallTree::from_bytes(&bytes, &options).expect("readable")
        });
        assert_eq!(tree.events, events);
        println!("  {} nodes in {} threads", tree.calls(), tree.threads.len());
    }
    if run("onepass") {
        let (tree, stats, _) = timed("tree + stats, one pass", events, || {
            analyse_bytes(&bytes, &options).expect("readable")
        });
        assert_eq!((tree.events, stats.events), (events, events));
        println!("  target: 15 s for 100 M events");
    }
}
