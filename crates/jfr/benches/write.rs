//! JFR write throughput: a generated recording of 2,000,000 samples (cpu and wall,
//! 16 threads, 2,000 methods, 20,000 distinct stacks 8 to 40 frames deep) written
//! as one JFR chunk, then read back by jscope's reader to check it holds them all.
//! Run: `cargo bench -p jscope-jfr --bench write` (JSCOPE_BENCH_SAMPLES=N to change
//! the size).

use std::time::Instant;

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
    let mut rec = Recording {
        strings: vec![String::new(), "bench.Service".into(), "()V".into()],
        ..Recording::default()
    };
    rec.header = Header {
        pid: 1,
        command_line: "bench.Main".into(),
        vm_name: "OpenJDK 64-Bit Server VM".into(),
        vm_version: "17.0.15".into(),
        start_wall_ns: 1_764_000_000_000_000_000,
        ticks_per_second: 1_000_000_000,
        modes: "cpu+wall".into(),
        interval_ns: 10_000_000,
        ..Header::default()
    };
    rec.classes = vec![
        None,
        Some(ClassDef {
            id: ClassId(1),
            name: StringId(1),
            source_file: StringId::NONE,
        }),
    ];
    rec.methods.push(None);
    for m in 1..=METHODS {
        rec.strings.push(format!("method{m}"));
        rec.methods.push(Some(MethodDef {
            id: MethodId(m),
            class: ClassId(1),
            name: StringId(rec.strings.len() as u32 - 1),
            signature: StringId(2),
            modifiers: 1,
        }));
    }
    for t in 1..=THREADS {
        let id = ThreadId(t);
        let def = ThreadDef {
            id,
            java_id: i64::from(t),
            os_tid: 1000 + t,
            name: format!("worker-{t}"),
            group: "main".into(),
            ..ThreadDef::default()
        };
        rec.threads.insert(id, def);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    rec.stacks.push(None);
    for _ in 0..STACKS {
        let depth = 8 + rng.next() % 33;
        let frames = (0..depth)
            .map(|_| Frame {
                method: MethodId(1 + (rng.next() % u64::from(METHODS)) as u32),
                bci: (rng.next() % 200) as i32,
                line: (rng.next() % 500) as u32,
                kind: FrameKind::Compiled,
            })
            .collect();
        rec.stacks.push(Some(frames));
    }
    rec.samples = (0..samples)
        .map(|i| {
            let wall = i % 4 == 3;
            Sample {
                request: 0,
                thread: ThreadId(1 + (i % u64::from(THREADS)) as u32),
                carrier: ThreadId::NONE,
                ticks: i * 10_000_000 / u64::from(THREADS),
                stack: StackId(1 + (rng.next() % u64::from(STACKS)) as u32),
                mode: if wall {
                    SampleMode::Wall
                } else {
                    SampleMode::Cpu
                },
                weight_ns: 10_000_000,
                state: ALIVE | RUNNABLE,
            }
        })
        .collect();
    rec.end_ticks = Some(samples * 10_000_000 / u64::from(THREADS));
    rec
}

fn main() {
    let samples = std::env::var("JSCOPE_BENCH_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let rec = recording(samples);
    let t = Instant::now();
    let jfr = jscope_jfr::encode_jfr(&rec);
    let write = t.elapsed();
    let t = Instant::now();
    let back = jscope_jfr::read_bytes(&jfr).expect("reads back");
    let read = t.elapsed();
    assert_eq!(back.samples.len() as u64, samples);
    let mb = jfr.len() as f64 / 1e6;
    println!("samples:     {samples} (cpu and wall, {STACKS} stacks, {THREADS} threads)");
    println!(
        "write JFR:   {:.2} M samples/s ({write:?}), {mb:.1} MB",
        samples as f64 / write.as_secs_f64() / 1e6
    );
    println!(
        "read back:   {:.2} M samples/s ({read:?})",
        samples as f64 / read.as_secs_f64() / 1e6
    );
}
