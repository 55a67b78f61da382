//! Prints a summary of a recording: header, threads, counters, top frames.
//! Usage: cargo run -p jscope-agent --example dump -- FILE
use std::collections::BTreeMap;

use jscope_format::Recording;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: dump FILE")?;
    let rec = Recording::read_file(path.as_ref())?;
    println!("header: {:?}", rec.header);
    println!(
        "chunks {} end {:?} damage {:?}",
        rec.chunks,
        rec.end_ticks,
        rec.damage.as_ref().map(|d| d.to_string())
    );
    for t in rec.threads.values() {
        println!("thread {t:?}");
    }
    println!("counters {:?}", rec.counters);
    let mut tops: BTreeMap<String, u64> = BTreeMap::new();
    for s in &rec.samples {
        let name = rec
            .thread(s.thread)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        let top = rec
            .stack(s.stack)
            .first()
            .map(|f| rec.frame_label(f))
            .unwrap_or_default();
        *tops
            .entry(format!("{:?} {name} {top}", s.mode))
            .or_default() += 1;
    }
    let mut tops: Vec<_> = tops.into_iter().collect();
    tops.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (k, n) in tops.iter().take(25) {
        println!("{n:6} {k}");
    }
    println!(
        "samples {} snapshots {}",
        rec.samples.len(),
        rec.snapshots.len()
    );
    if let Some(snap) = rec.snapshots.last() {
        println!("last snapshot interval {} ns", snap.interval_ns);
        for t in &snap.threads {
            let name = rec
                .thread(t.thread)
                .map(|t| t.name.clone())
                .unwrap_or_default();
            let state = jscope_format::thread_state::classify(t.state);
            let frames: Vec<String> = rec
                .stack(t.stack)
                .iter()
                .take(3)
                .map(|f| rec.frame_label(f))
                .collect();
            println!("  {name} {state} {frames:?}");
        }
    }
    Ok(())
}
