//! What the native walk costs (issue 11): the time to build the DWARF unwind
//! tables of this process's objects, and the handler's walk per sample and per
//! frame with DWARF rows (`cstack=dwarf`) and with frame pointers only
//! (`cstack=fp`), from a context taken 24 calls deep in this benchmark's own
//! code (built without frame pointers, as glibc is: the frame-pointer walk
//! gets only part of the stack, so compare the cost per frame).
//!   cargo bench -p jscope-agent --bench unwind
use std::time::Instant;

use jscope_agent::native::walk;

const WALKS: usize = 20_000;

/// Takes a context `depth` calls deeper and walks from it `WALKS` times:
/// (frames per walk, ns per walk).
#[inline(never)]
fn deep(depth: usize) -> (usize, f64) {
    if depth > 0 {
        let r = deep(std::hint::black_box(depth - 1));
        return std::hint::black_box(r);
    }
    // SAFETY: a zeroed ucontext_t is a valid buffer for getcontext.
    let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
    // SAFETY: getcontext fills the buffer passed.
    unsafe { libc::getcontext(&mut uc) };
    let mut pcs = [0usize; 256];
    let start = Instant::now();
    let mut frames = 0;
    for _ in 0..WALKS {
        // SAFETY: a context of this thread, as a handler's would be.
        frames = unsafe { walk::walk((&mut uc as *mut libc::ucontext_t).cast(), &mut pcs) };
    }
    (frames, start.elapsed().as_nanos() as f64 / WALKS as f64)
}

fn main() {
    walk::use_dwarf(true);
    let start = Instant::now();
    walk::refresh_code_ranges();
    let built = start.elapsed();
    let stats = walk::dwarf_stats();
    println!(
        "unwind tables: {} (refresh with them {:.1} ms)",
        stats.summary(),
        built.as_secs_f64() * 1e3
    );
    for (name, rows, bytes) in &stats.objects {
        println!("  {name:60} {rows:>8} rows {:>6} KiB", bytes / 1024);
    }
    // Run on a thread of its own: a stack as deep as the test harness's is not.
    let run = |dwarf: bool| {
        std::thread::spawn(move || {
            walk::use_dwarf(dwarf);
            walk::refresh_code_ranges();
            deep(24)
        })
        .join()
        .unwrap()
    };
    // The search for the next segment between Java frames: what a sample
    // pays per KiB of Java stack between two segments (or up to the thread's
    // entry into Java, where the search ends).
    let stack = vec![0usize; (256 << 10) / 8];
    for kib in [4usize, 16, 64, 256] {
        let from = stack.as_ptr() as usize;
        let start = Instant::now();
        let scans = 2_000;
        for _ in 0..scans {
            let found = walk::scan_for_bench(from, kib << 10, (1, 2));
            std::hint::black_box(found);
        }
        let ns = start.elapsed().as_nanos() as f64 / scans as f64;
        println!(
            "between search over {kib:3} KiB: {:8.1} us per sample, {:6.0} ns per KiB",
            ns / 1e3,
            ns / kib as f64
        );
    }
    for (label, dwarf) in [
        ("dwarf", true),
        ("fp", false),
        ("dwarf", true),
        ("fp", false),
    ] {
        let (frames, ns) = run(dwarf);
        println!(
            "cstack={label:5}: {frames:3} frames per walk, {ns:8.0} ns per walk, {:6.0} ns per frame",
            ns / frames.max(1) as f64
        );
    }
}
