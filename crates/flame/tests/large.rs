//! Large inputs: 100k distinct stacks must build and render quickly, and the
//! outputs must stay bounded by what can be seen rather than by the input.

use jscope_flame::{render_html, render_svg, FlameGraph, Options};
use std::time::Duration;

/// 100k distinct stacks shaped to be hard: shared entry points, then random
/// frames from 4,800 methods at depths of 10 to 60 and a unique leaf, so almost
/// every frame is a new node (about 3.5 million). Real profiles share far more.
fn collapsed_text(stacks: usize) -> String {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut text = String::new();
    for i in 0..stacks {
        text.push_str("java.lang.Thread.run;com.app.Main.main");
        for _ in 0..10 + next(50) {
            let (pkg, class, method) = (next(20), next(30), next(8));
            text.push_str(&format!(";com.app.p{pkg}.C{class}.m{method}_[j]"));
        }
        text.push_str(&format!(";leaf{i} {}\n", 1 + next(100)));
    }
    text
}

/// Debug builds are many times slower; the budget that matters is the release one.
fn budget() -> Duration {
    if cfg!(debug_assertions) {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(1)
    }
}

/// CPU time of this thread: the machine is shared, and time spent waiting for
/// a core says nothing about this crate.
fn cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "thread CPU clock unavailable");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

#[test]
fn hundred_thousand_distinct_stacks_render_quickly() {
    let text = collapsed_text(100_000);
    let options = Options::default();
    let start = cpu_time();
    let graph = FlameGraph::from_collapsed(&text).unwrap();
    let built = cpu_time() - start;
    let svg = render_svg(&graph, &options);
    let svg_done = cpu_time() - start;
    let html = render_html(&graph, &options);
    let elapsed = cpu_time() - start;
    eprintln!(
        "{} frames: build {built:?}, svg {:?} ({} KiB), html {:?} ({} KiB)",
        graph.frame_count(),
        svg_done - built,
        svg.len() / 1024,
        elapsed - svg_done,
        html.len() / 1024
    );
    assert!(
        graph.frame_count() > 1_000_000,
        "input is large: {}",
        graph.frame_count()
    );
    assert!(elapsed < budget(), "took {elapsed:?}");
    // Merging keeps the outputs proportional to what can be drawn.
    assert!(svg.len() < 8 << 20, "SVG is {} bytes", svg.len());
    assert!(html.len() < 8 << 20, "HTML is {} bytes", html.len());
}
