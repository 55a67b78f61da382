//! Expectations about every view, on recordings written with `ChunkWriter`
//! and read back by `Recording::from_bytes`.

use jscope_format::{Recording, SampleMode, StateClass};

use crate::*;
use jscope_testkit::recording::*;

const MAIN: u32 = 1;
const WORKER: u32 = 2;
const SLEEPER: u32 = 3;

/// main: 7 samples in Work.hot (via Main.run), 3 in Work.cold; worker: 2
/// samples in Work.fib recursing 3 deep; sleeper: wall samples in Thread.sleep;
/// two snapshots with a blocked thread.
fn fixture() -> Recording {
    let mut b = RecordingBuilder::new();
    b.thread(MAIN, "main", "main", 1);
    b.thread(WORKER, "pool-1-worker-1", "main", 4);
    b.thread(SLEEPER, "sleeper", "system", 3);
    let hot = b.stack(&[
        ("demo.Work.hot", 12),
        ("demo.Main.run", 30),
        ("demo.Main.main", 5),
    ]);
    let cold = b.stack(&[
        ("demo.Work.cold", 20),
        ("demo.Main.run", 31),
        ("demo.Main.main", 5),
    ]);
    let fib = b.stack(&[
        ("demo.Work.fib", 40),
        ("demo.Work.fib", 41),
        ("demo.Work.fib", 41),
        ("demo.Main.main", 9),
    ]);
    let sleep = b.stack(&[("java.lang.Thread.sleep", 0), ("demo.Sleeper.run", 7)]);
    let blocked = b.stack(&[("demo.Lock.enter", 55), ("demo.Main.main", 9)]);
    for i in 0..10 {
        let stack = if i < 7 { hot } else { cold };
        b.sample(SampleMode::Cpu, MAIN, 10 * i, stack.0, RUNNING);
    }
    b.cut();
    b.sample(SampleMode::Cpu, WORKER, 200, fib.0, RUNNING);
    b.sample(SampleMode::Cpu, WORKER, 210, fib.0, RUNNING);
    for i in 0..4 {
        b.sample(SampleMode::Wall, SLEEPER, 10 * i, sleep.0, ASLEEP);
        b.sample(SampleMode::Wall, MAIN, 10 * i, hot.0, RUNNING);
    }
    b.snapshot(
        100,
        0,
        &[(MAIN, RUNNING, hot.0), (SLEEPER, ASLEEP, sleep.0)],
    );
    b.snapshot(
        300,
        200,
        &[
            (WORKER, BLOCKED, blocked.0),
            (MAIN, RUNNING, cold.0),
            (SLEEPER, ASLEEP, sleep.0),
        ],
    );
    b.counters(&[
        ("samples.dropped", 3),
        ("walk.failed.not_walkable_java", 12),
        ("buffers.flushed", 9),
    ]);
    b.build(Some(400))
}

fn select(mode: Option<Mode>) -> Selection {
    Selection {
        mode,
        ..Selection::default()
    }
}

#[test]
fn default_selection_is_the_first_mode_with_samples() {
    let rec = fixture();
    assert_eq!(Mode::primary(&rec), Some(Mode::Cpu));
    assert_eq!(select(None).samples(&rec).count(), 12);
    assert_eq!(select(Some(Mode::Wall)).samples(&rec).count(), 8);
}

#[test]
fn snapshot_threads_count_as_samples() {
    let rec = fixture();
    let samples: Vec<StackSample> = select(Some(Mode::Snapshot)).samples(&rec).collect();
    assert_eq!(samples.len(), 5);
    assert!(samples.iter().all(|s| s.mode == Mode::Snapshot));
}

#[test]
fn selection_filters_by_thread_state_and_window() {
    let rec = fixture();
    let by_thread = Selection {
        thread: Some(ThreadMatcher::new("worker")),
        ..select(None)
    };
    assert_eq!(by_thread.samples(&rec).count(), 2);
    let glob = Selection {
        thread: Some(ThreadMatcher::new("m*n")),
        ..select(Some(Mode::Wall))
    };
    assert_eq!(glob.samples(&rec).count(), 4);
    let asleep = Selection {
        states: vec![StateClass::Sleeping],
        ..select(Some(Mode::Wall))
    };
    assert!(asleep.samples(&rec).all(|s| s.thread == SLEEPER));
    assert_eq!(asleep.samples(&rec).count(), 4);
    let blocked = Selection {
        states: vec![parse_state("BLOCKED").unwrap()],
        ..select(Some(Mode::Snapshot))
    };
    assert_eq!(
        blocked.samples(&rec).map(|s| s.thread).collect::<Vec<_>>(),
        vec![WORKER]
    );
    // Cpu samples of main are at 0,10,..,90 ms: [0.02s, 0.05s) holds 20, 30, 40.
    let window = Selection {
        from_s: Some(0.02),
        to_s: Some(0.05),
        ..select(None)
    };
    assert_eq!(window.samples(&rec).count(), 3);
}

#[test]
fn bad_selection_inputs_are_errors() {
    assert_eq!(
        "gpu".parse::<Mode>(),
        Err(AnalysisError::UnknownMode("gpu".into()))
    );
    assert!(matches!(
        parse_state("dozing"),
        Err(AnalysisError::UnknownState(_))
    ));
    let inverted = Selection {
        from_s: Some(2.0),
        to_s: Some(1.0),
        ..Selection::default()
    };
    assert!(inverted.validate().is_err());
}

#[test]
fn hot_methods_count_self_and_total_once_per_stack() {
    let rec = fixture();
    let sel = select(None);
    let hot = hot_methods(&rec, sel.mode_in(&rec), &sel.stack_counts(&rec));
    assert_eq!(hot.samples, 12);
    let row = |name: &str| {
        hot.methods
            .iter()
            .find(|m| m.method == name)
            .unwrap()
            .clone()
    };
    assert_eq!(hot.methods[0].method, "demo.Work.hot");
    assert_eq!(
        (
            row("demo.Work.hot").self_samples,
            row("demo.Work.hot").total_samples
        ),
        (7, 7)
    );
    assert_eq!(
        (
            row("demo.Work.cold").self_samples,
            row("demo.Work.cold").total_samples
        ),
        (3, 3)
    );
    assert_eq!(
        (
            row("demo.Main.main").self_samples,
            row("demo.Main.main").total_samples
        ),
        (0, 12)
    );
    // fib recurses three deep in both of its samples: still 2, not 6.
    assert_eq!(
        (
            row("demo.Work.fib").self_samples,
            row("demo.Work.fib").total_samples
        ),
        (2, 2)
    );
    assert!((row("demo.Work.hot").self_percent - 58.333).abs() < 0.01);
    assert!((row("demo.Main.main").total_percent - 100.0).abs() < 1e-9);
}

#[test]
fn hot_methods_sort_by_self_then_total_and_serialise() {
    let rec = fixture();
    let sel = select(None);
    let mut hot = hot_methods(&rec, sel.mode_in(&rec), &sel.stack_counts(&rec));
    let order: Vec<(u64, u64)> = hot
        .methods
        .iter()
        .map(|m| (m.self_samples, m.total_samples))
        .collect();
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(order, sorted);
    hot.truncate(2);
    let json = serde_json::to_value(&hot).unwrap();
    assert_eq!(json["mode"], "cpu");
    assert_eq!(json["methods"].as_array().unwrap().len(), 2);
    assert_eq!(json["methods"][1]["method"], "demo.Work.cold");
    let text = hot.to_string();
    assert!(text.starts_with("12 samples (cpu)"), "{text}");
    assert!(text.contains("58.33%  demo.Work.hot"), "{text}");
}

#[test]
fn merged_hot_tables_sum_rows_by_name_over_all_samples() {
    let rec = fixture();
    let sel = select(None);
    let one = hot_methods(&rec, sel.mode_in(&rec), &sel.stack_counts(&rec));
    let none = HotMethods {
        mode: None,
        samples: 0,
        methods: vec![],
    };
    let merged = HotMethods::merge([none, one.clone(), one.clone()]);
    assert_eq!(merged.mode, one.mode);
    assert_eq!(merged.samples, 24);
    // Twice the same table: the same rows, in the same order, at the same shares.
    assert_eq!(merged.methods.len(), one.methods.len());
    for (m, o) in merged.methods.iter().zip(&one.methods) {
        assert_eq!(m.method, o.method);
        assert_eq!(
            (m.self_samples, m.total_samples),
            (2 * o.self_samples, 2 * o.total_samples)
        );
        assert!((m.self_percent - o.self_percent).abs() < 1e-9);
        assert!((m.total_percent - o.total_percent).abs() < 1e-9);
    }
    assert_eq!(HotMethods::merge([]).samples, 0);
}

#[test]
fn collapsed_stacks_are_root_first_with_counts() {
    let rec = fixture();
    let sel = select(None);
    let collapsed = collapse(&rec, &sel.stack_counts(&rec), CollapseOptions::default());
    let mut out = Vec::new();
    collapsed.write_to(&mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "demo.Main.main;demo.Main.run;demo.Work.cold 3\n\
         demo.Main.main;demo.Main.run;demo.Work.hot 7\n\
         demo.Main.main;demo.Work.fib;demo.Work.fib;demo.Work.fib 2\n"
    );
    assert_eq!(collapsed.total(), 12);
}

#[test]
fn collapsed_stacks_can_carry_lines_and_thread_roots() {
    let rec = fixture();
    let sel = select(Some(Mode::Wall));
    let opts = CollapseOptions {
        lines: true,
        thread_roots: true,
        annotate: Annotation::None,
    };
    let collapsed = collapse(&rec, &sel.stack_counts(&rec), opts);
    let lines: Vec<String> = collapsed
        .stacks
        .iter()
        .map(|(f, n)| format!("{} {n}", f.join(";")))
        .collect();
    assert_eq!(
        lines,
        vec![
            "[main];demo.Main.main:5;demo.Main.run:30;demo.Work.hot:12 4",
            "[sleeper];demo.Sleeper.run:7;java.lang.Thread.sleep 4",
        ]
    );
}

#[test]
fn call_graph_has_nodes_and_deduplicated_edges() {
    let rec = fixture();
    let sel = select(None);
    let g = call_graph(&rec, &sel.stack_counts(&rec));
    assert_eq!(g.total, 12);
    let idx = |label: &str| g.nodes.iter().position(|n| n.label == label).unwrap();
    let edge = |a: &str, b: &str| {
        g.edges
            .iter()
            .find(|e| e.caller == idx(a) && e.callee == idx(b))
            .map(|e| e.samples)
    };
    assert_eq!(g.nodes[0].label, "demo.Main.main");
    assert_eq!(edge("demo.Main.main", "demo.Main.run"), Some(10));
    assert_eq!(edge("demo.Main.run", "demo.Work.hot"), Some(7));
    assert_eq!(edge("demo.Main.run", "demo.Work.cold"), Some(3));
    // The recursive self-call is one edge per stack.
    assert_eq!(edge("demo.Work.fib", "demo.Work.fib"), Some(2));
    assert_eq!(edge("demo.Work.hot", "demo.Main.run"), None);
}

#[test]
fn call_graph_dot_weights_edges_and_drops_cold_nodes() {
    let rec = fixture();
    let sel = select(None);
    let g = call_graph(&rec, &sel.stack_counts(&rec));
    let mut out = Vec::new();
    let opts = DotOptions {
        node_min_percent: 20.0,
        ..DotOptions::default()
    };
    g.write_dot(&opts, &mut out).unwrap();
    let dot = String::from_utf8(out).unwrap();
    assert!(dot.starts_with("digraph jscope {"), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    assert!(
        dot.contains("label=\"demo.Work\\nhot\\nself 7 (58.3%)\\ntotal 7 (58.3%)\""),
        "{dot}"
    );
    // cold (25%) stays, fib (16.7%) goes, and so do its edges.
    assert!(dot.contains("\\ncold\\n"));
    assert!(!dot.contains("fib"));
    let hot_edge = dot
        .lines()
        .find(|l| l.contains("-> ") && l.contains("label=\"7\""))
        .unwrap();
    assert!(
        hot_edge.contains("weight=7") && hot_edge.contains("penwidth=3.92"),
        "{hot_edge}"
    );
}

#[test]
fn threads_view_shows_the_nearest_snapshot_in_start_order() {
    let rec = fixture();
    let view = threads_at(&rec, Some(0.25)).unwrap();
    assert_eq!(view.snapshot_index, 1);
    assert!((view.at_s - 0.3).abs() < 1e-9);
    let names: Vec<&str> = view.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["main", "sleeper", "pool-1-worker-1"]);
    let worker = &view.threads[2];
    assert_eq!(
        (
            worker.start_order,
            worker.group.as_str(),
            worker.parent.as_str()
        ),
        (4, "main", "system")
    );
    assert_eq!(worker.state, "blocked");
    assert_eq!(worker.frames[0].method, "demo.Lock.enter");
    assert_eq!(worker.frames[0].position, "Lock.java:55");
    assert_eq!(worker.frames[0].line, 55);
    let text = view.to_string();
    assert!(
        text.contains("    at demo.Lock.enter(Lock.java:55)"),
        "{text}"
    );
    assert!(text.contains("\"sleeper\" #3 daemon sleeping"), "{text}");
}

#[test]
fn threads_view_defaults_to_the_last_snapshot_and_needs_one() {
    let rec = fixture();
    assert_eq!(threads_at(&rec, None).unwrap().snapshot_index, 1);
    assert_eq!(threads_at(&rec, Some(0.0)).unwrap().snapshot_index, 0);
    let empty = RecordingBuilder::new().build(None);
    assert_eq!(threads_at(&empty, None), Err(AnalysisError::NoSnapshots));
}

#[test]
fn thread_status_carries_flags() {
    let mut b = RecordingBuilder::new();
    b.thread(1, "t", "main", 1);
    let s = b.stack(&[("a.B.c", 1)]);
    let flags = jscope_format::thread_state::SUSPENDED | jscope_format::thread_state::INTERRUPTED;
    b.snapshot(1, 0, &[(1, BLOCKED | flags, s.0)]);
    let view = threads_at(&b.build(None), None).unwrap();
    assert_eq!(view.threads[0].status(), "blocked+suspended+interrupted");
}

#[test]
fn info_summarises_contents_and_sampling_quality() {
    let rec = fixture();
    let info = Info::of(&rec);
    assert_eq!(info.vm_version, "17.0.9+9");
    assert_eq!(info.start_utc, "2023-11-14T22:13:20.000Z");
    assert!((info.duration_s - 0.4).abs() < 1e-9);
    assert!(info.ended_cleanly);
    assert_eq!(info.samples[&Mode::Cpu], 12);
    assert_eq!(info.samples[&Mode::Wall], 8);
    assert_eq!(info.samples[&Mode::Snapshot], 5);
    assert_eq!(
        info.dropped,
        vec![CounterValue {
            name: "samples.dropped".into(),
            value: 3,
            percent: None,
        }]
    );
    assert_eq!(
        info.failed_walks,
        vec![CounterValue {
            name: "not_walkable_java".into(),
            value: 12,
            // Of the 12 cpu and 8 wall samples.
            percent: Some(60.0),
        }]
    );
    let snap = info.snapshot_interval.as_ref().unwrap();
    assert_eq!(snap.count, 1);
    assert!((snap.mean_ms - 200.0).abs() < 1e-9);
    // main's 10 cpu samples are 10ms apart; worker has too few to judge.
    assert_eq!(info.cpu_rates.len(), 1);
    assert!((info.cpu_rates[0].gaps.p50_ms - 10.0).abs() < 1e-9);
    assert!(info.damage.is_none());
    let text = info.to_string();
    assert!(text.contains("samples:    12 cpu"), "{text}");
    assert!(text.contains("not_walkable_java"), "{text}");
}

#[test]
fn damaged_recordings_keep_what_came_before() {
    let mut b = RecordingBuilder::new();
    b.thread(1, "main", "main", 1);
    let s = b.stack(&[("a.B.c", 1)]);
    b.sample(SampleMode::Cpu, 1, 0, s.0, RUNNING);
    b.cut();
    b.sample(SampleMode::Cpu, 1, 10, s.0, RUNNING);
    let mut bytes = b.bytes(Some(20));
    let whole = bytes.len();
    bytes.truncate(whole - 5);
    let rec = Recording::from_bytes(&bytes).unwrap();
    let info = Info::of(&rec);
    assert_eq!(info.samples[&Mode::Cpu], 1);
    assert!(!info.ended_cleanly);
    let damage = info.damage.unwrap();
    assert!(damage.contains("damaged at byte"), "{damage}");
}

#[test]
fn info_of_a_trace_only_recording_said_modes_comma_interval_100ms_and_0_wall() {
    let mut rec = RecordingBuilder::new().build(Some(100));
    rec.header.modes = String::new();
    let text = Info::of(&rec).to_string();
    assert!(
        text.contains("settings:   no sampling (tracing or events only)"),
        "{text}"
    );
    assert!(
        !text.contains("modes ,") && !text.contains(", interval"),
        "{text}"
    );
    assert!(text.contains("samples:    none"), "{text}");
    assert!(
        !text.contains("0 wall") && !text.contains("0 cpu"),
        "{text}"
    );
}

#[test]
fn info_listed_failed_walks_and_a_4ms_median_for_5ms_unexplained() {
    let mut b = RecordingBuilder::new();
    b.thread(1, "main", "main", 1);
    let s = b.stack(&[("a.B.c", 1)]);
    for i in 0..20 {
        b.sample(SampleMode::Cpu, 1, i * 4, s.0, RUNNING);
    }
    b.counters(&[("walk.failed.unknown_not_java", 3)]);
    let mut rec = b.build(Some(100));
    rec.header.modes = "cpu".into();
    rec.header.interval_ns = 5_000_000;
    let text = Info::of(&rec).to_string();
    assert!(text.contains("samples:    20 cpu"), "{text}");
    assert!(!text.contains("samples:    0"), "{text}");
    assert!(text.contains("could not be walked"), "{text}");
    assert!(text.contains("differs from the requested 5ms"), "{text}");
    assert!(text.contains("scheduler tick"), "{text}");
}

/// With native stacks (`cstack` dwarf or fp) the agent keeps a cpu sample whose
/// Java walk failed, under its native frames or as `[unknown_java]`: info said
/// those samples "are not in the recording" while report listed them.
#[test]
fn info_said_failed_walks_were_left_out_when_native_stacks_kept_them() {
    let mut b = RecordingBuilder::new();
    b.thread(1, "main", "main", 1);
    let s = b.stack(&[("[unknown_java]", 0)]);
    b.sample(SampleMode::Cpu, 1, 4, s.0, RUNNING);
    b.counters(&[("walk.failed.unknown_java", 1)]);
    let mut rec = b.build(Some(100));
    rec.header.modes = "cpu".into();
    rec.header
        .extra
        .push(("cpu_engine".into(), "perf_events".into()));
    rec.header.extra.push(("cstack".into(), "dwarf".into()));
    let text = Info::of(&rec).to_string();
    assert!(text.contains("could not be walked"), "{text}");
    assert!(!text.contains("not in the recording"), "{text}");
    assert!(text.contains("kept"), "{text}");
    // Wall samples whose walk failed are still left out.
    rec.header.modes = "cpu+wall".into();
    let text = Info::of(&rec).to_string();
    assert!(
        text.contains("wall samples are not in the recording"),
        "{text}"
    );
    // And without native stacks, all of them.
    rec.header.extra.retain(|(k, _)| k != "cstack");
    rec.header.extra.push(("cstack".into(), "no".into()));
    let text = Info::of(&rec).to_string();
    assert!(
        text.contains("they are not in the recording, so the sample counts above leave them out"),
        "{text}"
    );
}

/// A JFR file has no vendor or host: info printed `(17.0.15), ` and `on  (`.
#[test]
fn info_leaves_out_an_unknown_vendor_and_host_instead_of_empty_separators() {
    let mut rec = RecordingBuilder::new().build(Some(100));
    rec.header.vm_name = "OpenJDK 64-Bit Server VM".into();
    rec.header.vm_version = "17.0.15".into();
    rec.header.vm_vendor = String::new();
    rec.header.host = String::new();
    rec.header.os = "Debian GNU/Linux 12".into();
    rec.header.arch = "amd64".into();
    rec.header.pid = 7157;
    let text = Info::of(&rec).to_string();
    assert!(
        text.contains("jvm:        OpenJDK 64-Bit Server VM (17.0.15)\n"),
        "{text}"
    );
    assert!(
        text.contains("process:    pid 7157 (Debian GNU/Linux 12 amd64)\n"),
        "{text}"
    );
    rec.header.host = "vm".into();
    rec.header.vm_vendor = "Debian".into();
    let text = Info::of(&rec).to_string();
    assert!(text.contains("(17.0.15), Debian\n"), "{text}");
    assert!(text.contains("pid 7157 on vm (Debian"), "{text}");
    // Nor does JFR say its stack depth: no "max depth 0".
    rec.header.max_depth = 0;
    rec.header.modes = "cpu".into();
    let text = Info::of(&rec).to_string();
    assert!(!text.contains("max depth"), "{text}");
    rec.header.max_depth = 256;
    let text = Info::of(&rec).to_string();
    assert!(text.contains(", max depth 256\n"), "{text}");
}

#[test]
fn virtual_threads_samples_group_by_virtual_thread_or_by_carrier() {
    let mut b = RecordingBuilder::new();
    b.thread(1, "ForkJoinPool-1-worker-1", "CarrierThreads", 1);
    b.thread(2, "vt-0", "virtual", 2);
    b.thread(3, "virtual-41", "virtual", 3);
    let spin = b.stack(&[("demo.Task.spin", 3)]);
    let idle = b.stack(&[("java.util.concurrent.ForkJoinPool.awaitWork", 9)]);
    b.sample_on(SampleMode::Cpu, (2, 1), 10, spin.0, RUNNING);
    b.sample_on(SampleMode::Cpu, (3, 1), 20, spin.0, RUNNING);
    b.sample_on(SampleMode::Cpu, (3, 1), 30, spin.0, RUNNING);
    b.sample(SampleMode::Cpu, 1, 40, idle.0, RUNNING);
    let rec = b.build(Some(100));
    let threads_of = |group: ThreadGrouping| {
        let sel = Selection {
            group,
            ..Selection::default()
        };
        let mut t: Vec<u32> = sel.samples(&rec).map(|s| s.thread).collect();
        t.sort();
        t
    };
    assert_eq!(threads_of(ThreadGrouping::Virtual), [1, 2, 3, 3]);
    assert_eq!(threads_of(ThreadGrouping::Carrier), [1, 1, 1, 1]);
    // A thread filter sees the grouped thread's name.
    let by_name = |group, name: &str| Selection {
        group,
        thread: Some(ThreadMatcher::new(name)),
        ..Selection::default()
    };
    assert_eq!(
        by_name(ThreadGrouping::Virtual, "vt-")
            .samples(&rec)
            .count(),
        1
    );
    assert_eq!(
        by_name(ThreadGrouping::Carrier, "ForkJoinPool")
            .samples(&rec)
            .count(),
        4
    );
    assert_eq!("carrier".parse(), Ok(ThreadGrouping::Carrier));
    assert!("platform".parse::<ThreadGrouping>().is_err());
}
