//! `jscope info` and `jscope stats` on a trace that lost events say so in one
//! line naming the option that avoids it; a complete trace gets no such line.

mod support;

use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use support::*;

/// A one-call trace whose counters say `dropped` events were lost, recorded
/// with `traceoverflow=drop`.
fn recording(dropped: u64) -> std::path::PathBuf {
    let mut b = RecordingBuilder::with_header(Header {
        ticks_per_second: 1_000_000_000,
        extra: vec![("trace.overflow".into(), "drop".into())],
        ..Default::default()
    });
    let main = b.method("demo.App.main");
    let ev = |kind, ticks| TraceEvent {
        kind,
        method: main,
        ticks,
        untraced: 0,
        cpu_ns: 0,
    };
    b.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events: vec![ev(TraceKind::Enter, 10), ev(TraceKind::Exit, 20)],
    });
    b.counters_at(
        30,
        &[
            ("trace.events_written", 2),
            ("trace.events_dropped", dropped),
        ],
    );
    b.end_at(40);
    let bytes = b.bytes(None);
    let file = temp_dir(&format!("incomplete-{dropped}")).join("t.jsc");
    std::fs::write(&file, bytes).unwrap();
    file
}

#[test]
fn a_trace_that_dropped_events_says_so_in_info_and_stats() {
    let file = recording(1234);
    for command in ["info", "stats"] {
        let out = jscope(&[command, file.to_str().unwrap()]);
        assert!(out.status.success(), "{command}: {}", stderr(&out));
        let lines: Vec<String> = stderr(&out)
            .lines()
            .filter(|l| l.contains("trace incomplete"))
            .map(String::from)
            .collect();
        assert_eq!(lines.len(), 1, "{command}: {}", stderr(&out));
        assert!(
            lines[0].starts_with("jscope: warning: trace incomplete: 1234 events dropped")
                && lines[0].contains("traceoverflow=wait"),
            "{command}: {}",
            lines[0]
        );
    }
    let complete = recording(0);
    for command in ["info", "stats"] {
        let out = jscope(&[command, complete.to_str().unwrap()]);
        assert!(out.status.success(), "{command}: {}", stderr(&out));
        assert!(!stderr(&out).contains("incomplete"), "{}", stderr(&out));
    }
}
