//! Every export format over a generated recording of 200,000 cpu samples.
//! Run: `cargo bench -p jscope-export --bench export` (JSCOPE_BENCH_SAMPLES=N to
//! change the size). The recording is built in memory with `ChunkWriter`: 16
//! threads, 2,000 methods, 20,000 distinct stacks 8 to 40 frames deep, samples
//! 10 ms apart per thread, each thread's stack changing at 30% of its samples (so
//! Chrome slices merge as in real recordings).

use std::time::Instant;

use jscope_analysis::Selection;
use jscope_export::{Export, Format, Kind, Profile, Request};
use jscope_format::thread_state::{ALIVE, RUNNABLE};
use jscope_format::*;

const THREADS: u32 = 16;
const METHODS: u32 = 2_000;
const STACKS: u32 = 20_000;

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

fn recording(samples: u64) -> Recording {
    let header = Header {
        pid: 1,
        command_line: "bench.Main".into(),
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: 10_000_000,
        ..Header::default()
    };
    let mut bytes = encode_file_start(&header);
    let mut w = ChunkWriter::new();
    w.string(StringId(1), "bench.Service");
    w.string(StringId(2), "Service.java");
    w.string(StringId(3), "()V");
    w.class(&ClassDef {
        id: ClassId(1),
        name: StringId(1),
        source_file: StringId(2),
    });
    for m in 1..=METHODS {
        w.string(StringId(100 + m), &format!("method{m}"));
        w.method(&MethodDef {
            id: MethodId(m),
            class: ClassId(1),
            name: StringId(100 + m),
            signature: StringId(3),
            modifiers: 1,
        });
    }
    for t in 1..=THREADS {
        w.thread(&ThreadDef {
            id: ThreadId(t),
            name: format!("worker-{t}"),
            ..ThreadDef::default()
        });
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for s in 1..=STACKS {
        let depth = 8 + rng.next() % 33;
        let frames: Vec<Frame> = (0..depth)
            .map(|d| Frame {
                method: MethodId(1 + ((u64::from(s) * 31 + d * 7) % u64::from(METHODS)) as u32),
                bci: 1,
                line: 10 + (rng.next() % 50) as u32,
                kind: FrameKind::Compiled,
            })
            .collect();
        w.stack(StackId(s), &frames);
    }
    let mut current = vec![1u32; THREADS as usize];
    for i in 0..samples {
        let t = (i % u64::from(THREADS)) as usize;
        if rng.next() % 10 < 3 {
            // Skewed: a few stacks are hot, as in real programs.
            current[t] = 1 + ((rng.next() % u64::from(STACKS)) * (rng.next() % 4) / 3) as u32;
        }
        w.sample(&Sample {
            request: 0,
            thread: ThreadId(t as u32 + 1),
            carrier: Default::default(),
            ticks: (i / u64::from(THREADS)) * 10_000_000,
            stack: StackId(current[t]),
            mode: SampleMode::Cpu,
            weight_ns: 10_000_000,
            state: ALIVE | RUNNABLE,
        });
        if w.raw_len() > 1 << 20 {
            bytes.extend(w.finish());
        }
    }
    bytes.extend(w.finish());
    Recording::from_bytes(&bytes).expect("a readable recording")
}

fn main() {
    let samples: u64 = std::env::var("JSCOPE_BENCH_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let rec = recording(samples);
    let t = Instant::now();
    let profile = Profile::of(&rec, Kind::Cpu, &Selection::default(), false);
    let gather = t.elapsed();
    println!(
        "gather {samples} samples: {:.0} ms ({:.1} M samples/s), {} stacks, {} functions",
        gather.as_secs_f64() * 1e3,
        samples as f64 / gather.as_secs_f64() / 1e6,
        profile.stacks.len(),
        profile.functions.len()
    );
    let req = Request {
        kind: Some(Kind::Cpu),
        name: "bench".into(),
        ..Request::default()
    };
    for (name, format) in [
        ("pprof", Format::Pprof),
        ("otlp", Format::Otlp),
        ("otlp-json", Format::OtlpJson),
        ("speedscope", Format::Speedscope),
        ("chrome", Format::Chrome),
        ("collapsed", Format::Collapsed),
        ("jfr", Format::Jfr),
    ] {
        let t = Instant::now();
        let export = Export::new(&rec, &req, format).expect("samples to export");
        let mut out = Vec::new();
        export.write(&mut out).expect("written to memory");
        let took = t.elapsed();
        println!(
            "{name:>10}: {:>6.0} ms ({:.2} M samples/s), {:.1} MB",
            took.as_secs_f64() * 1e3,
            samples as f64 / took.as_secs_f64() / 1e6,
            out.len() as f64 / 1e6
        );
    }
}
