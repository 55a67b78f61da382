//! Encode and decode throughput of the recording format, and bytes per sample after
//! compression. Run: `cargo bench -p jscope-format --bench codec`.

use std::time::Instant;

use jscope_format::*;

const SAMPLES: u64 = 2_000_000;
const CHUNK_BYTES: usize = 1 << 20;

fn header() -> Header {
    Header {
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        ..Default::default()
    }
}

/// A realistic mix: 16 threads, 500 distinct stacks, 10 ms interval with jitter.
fn encode() -> Vec<u8> {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    let mut x = 88172645463325252u64;
    for i in 0..SAMPLES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let thread = 1 + (i % 16) as u32;
        let s = Sample {
            request: 0,
            thread: ThreadId(thread),
            carrier: Default::default(),
            ticks: i / 16 * 10_000_000 + x % 50_000,
            stack: StackId(1 + (x % 500) as u32),
            mode: SampleMode::Cpu,
            weight_ns: 10_000_000,
            state: 5,
        };
        w.sample(&s);
        if w.raw_len() >= CHUNK_BYTES {
            out.extend(w.finish());
        }
    }
    out.extend(w.finish());
    out
}

fn main() {
    let t = Instant::now();
    let bytes = encode();
    let enc = t.elapsed();
    let t = Instant::now();
    let rec = Recording::from_bytes(&bytes).expect("decodes");
    let dec = t.elapsed();
    assert_eq!(rec.samples.len() as u64, SAMPLES);
    let per_s = |d: std::time::Duration| SAMPLES as f64 / d.as_secs_f64() / 1e6;
    println!("samples:            {SAMPLES}");
    println!(
        "encode:             {:.1} M samples/s ({:?})",
        per_s(enc),
        enc
    );
    println!(
        "decode:             {:.1} M samples/s ({:?})",
        per_s(dec),
        dec
    );
    println!(
        "size:               {} bytes, {:.2} bytes/sample",
        bytes.len(),
        bytes.len() as f64 / SAMPLES as f64
    );
}
