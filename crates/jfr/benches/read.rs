//! JFR read throughput: async-profiler's test recording (cpu, wall, alloc and lock
//! events) as 100 chunks of one file, read into a Recording, and that written as
//! `.jsc`. Run: `cargo bench -p jscope-jfr --bench read`.

use std::time::Instant;

const COPIES: usize = 100;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/async-profiler.jfr");
    let one = std::fs::read(path).expect("test data");
    let file: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * COPIES)
        .collect();
    let t = Instant::now();
    let rec = jscope_jfr::read_bytes(&file).expect("reads");
    let read = t.elapsed();
    assert_eq!(rec.chunks, COPIES as u64);
    let events = rec.samples.len() + rec.events.len();
    let t = Instant::now();
    let jsc = jscope_jfr::encode_jsc(&rec);
    let write = t.elapsed();
    let mb = file.len() as f64 / 1e6;
    println!("jfr bytes:     {:.1} MB in {COPIES} chunks", mb);
    println!("events:        {events} (samples and JVM events)");
    println!(
        "read:          {:.1} MB/s, {:.2} M events/s ({read:?})",
        mb / read.as_secs_f64(),
        events as f64 / read.as_secs_f64() / 1e6
    );
    println!(
        "write .jsc:    {:.2} M events/s ({write:?}), {:.1} MB -> {:.2} MB",
        events as f64 / write.as_secs_f64() / 1e6,
        mb,
        jsc.len() as f64 / 1e6
    );
}
