//! Big-trace handling on recordings the agent wrote while tracing a real JVM (each
//! JDK testkit finds): `jscope info` counts from the chunk summaries exactly what a
//! full decode counts, `stats` and `tree` read the file chunk by chunk with the
//! results of a whole decode, and progress goes to stderr only when asked (or on
//! long reads).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use jscope_analysis::trace::{CallTree, TraceOptions, TraceStats};
use jscope_analysis::Info;
use jscope_format::{Overview, Recording};
use jscope_testkit::{compile_fixtures, javas, Java};
use support::*;

/// Runs BusyApp traced (2 M events over several chunks, thread events among
/// them).
fn trace_run(java: &Java) -> PathBuf {
    let classes =
        compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_index_fixtures"));
    agent_run(
        java,
        &format!("trace-index-{}", java.major),
        &[],
        "trace=BusyApp;java.lang.Thread#start,events=threads",
        &classes,
        &["BusyApp"],
        120,
    )
    .0
}

#[test]
fn info_from_chunk_summaries_equals_a_full_decode_and_stats_stream_unchanged() {
    for java in javas() {
        let file = trace_run(&java);
        let full = Recording::read_file(&file).unwrap();
        assert!(full.damage.is_none(), "{:?}", full.damage);
        let o = Overview::read_file(&file).unwrap();
        // Every data chunk has a summary; only chunks with samples or stacks
        // (none here: tracing alone) need decoding.
        assert_eq!(o.summarized_chunks + o.decoded_chunks + 1, full.chunks);
        assert_eq!(o.decoded_chunks, 0, "JDK {}", java.major);
        let want = Info::of(&full);
        assert_eq!(Info::of_overview(&o), want, "JDK {}", java.major);
        assert!(
            want.trace.events + want.trace.dropped >= 1_980_000,
            "JDK {}: {:?}",
            java.major,
            want.trace
        );
        assert!(o.summarized_chunks > 3, "JDK {}: {o:?}", java.major);
        let json = jscope_json(&["info", file.to_str().unwrap(), "--format", "json"]);
        assert_eq!(json["trace"]["events"].as_u64(), Some(want.trace.events));
        let text = stdout(&jscope(&["info", file.to_str().unwrap()]));
        assert!(
            text.contains(&format!("trace:      {} events", want.trace.events)),
            "{text}"
        );

        let options = TraceOptions::default();
        let (streamed, _) = TraceStats::from_file(&file, &options, &mut |_| {}).unwrap();
        assert_eq!(streamed, TraceStats::of(&full, &options));
        assert_eq!(streamed.events, want.trace.events);
        let (tree, _) = CallTree::from_file(&file, &options, &mut |_| {}).unwrap();
        assert_eq!(tree, CallTree::of(&full, &options));

        // Quick reads print no progress unless asked.
        let out = jscope(&["stats", file.to_str().unwrap(), "-n", "3"]);
        assert!(
            out.status.success() && stderr(&out).is_empty(),
            "{}",
            stderr(&out)
        );
        let out = Command::new(jscope_bin())
            .args(["stats", file.to_str().unwrap(), "-n", "3"])
            .env("JSCOPE_PROGRESS", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.lines()
                .any(|l| l.starts_with("jscope: reading ") && l.contains("100% (")),
            "{err}"
        );
    }
}

#[test]
fn a_cut_traced_recording_reads_up_to_the_cut_with_a_warning() {
    let Some(java) = javas().into_iter().next() else {
        return;
    };
    let file = trace_run(&java);
    let bytes = std::fs::read(&file).unwrap();
    let cut = file.with_file_name("cut.jsc");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let full = Recording::read_file(&cut).unwrap();
    let damage = full.damage.as_ref().expect("cut").to_string();
    for cmd in ["info", "stats", "tree"] {
        let out = jscope(&[cmd, cut.to_str().unwrap()]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("is {damage}; read up to there")),
            "{cmd}: {}",
            stderr(&out)
        );
    }
    let info = jscope_json(&["info", cut.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        info["trace"]["events"].as_u64(),
        Some(Info::of(&full).trace.events)
    );
}
