//! Exact trees and numbers on recordings written with `ChunkWriter` and read back.

use jscope_format::*;

use super::*;

/// 1 tick = 1 µs, so the tick conversion is exercised too.
const TPS: u64 = 1_000_000;
const START: u64 = 7_000_000;

/// Writes trace recordings: methods by label, events per thread in µs since start.
struct TraceRec {
    w: ChunkWriter,
    dict: Dictionary,
    pending: Vec<TraceBatch>,
    chunks: Vec<Vec<u8>>,
    extra: Vec<(String, String)>,
}

impl TraceRec {
    fn new() -> Self {
        TraceRec {
            w: ChunkWriter::new(),
            dict: Dictionary::new(),
            pending: vec![],
            chunks: vec![],
            extra: vec![],
        }
    }

    /// `label` is `pkg.Class.method`.
    fn method(&mut self, label: &str) -> u32 {
        (self.dict.method_label(&mut self.w, label)).0
    }

    fn probe_cost(mut self, ns: &str) -> Self {
        self.extra.push(("trace.probe_cost_ns".into(), ns.into()));
        self
    }

    fn thread(&mut self, id: u32, name: &str, start_order: u32) {
        self.w.thread(&ThreadDef {
            id: ThreadId(id),
            java_id: id.into(),
            name: name.into(),
            group: "main".into(),
            start_order,
            ..Default::default()
        });
    }

    fn event(&mut self, thread: u32, kind: TraceKind, label: &str, at_us: u64, untraced: u32) {
        let method = self.method(label);
        let e = TraceEvent {
            kind,
            method: MethodId(method),
            ticks: START + at_us,
            untraced,
            cpu_ns: 0,
        };
        match self
            .pending
            .iter_mut()
            .find(|b| b.thread == ThreadId(thread))
        {
            Some(b) => b.events.push(e),
            None => self.pending.push(TraceBatch {
                thread: ThreadId(thread),
                has_cpu: false,
                events: vec![e],
            }),
        }
    }

    fn enter(&mut self, thread: u32, label: &str, at_us: u64) {
        self.event(thread, TraceKind::Enter, label, at_us, 0);
    }

    fn exit(&mut self, thread: u32, label: &str, at_us: u64) {
        self.event(thread, TraceKind::Exit, label, at_us, 0);
    }

    fn throw(&mut self, thread: u32, label: &str, at_us: u64) {
        self.event(thread, TraceKind::Throw, label, at_us, 0);
    }

    /// Writes the pending batches into the current chunk and closes it.
    fn cut(&mut self) {
        for b in std::mem::take(&mut self.pending) {
            self.w.trace(&b);
        }
        if !self.w.is_empty() {
            self.chunks.push(self.w.finish());
        }
    }

    fn bytes(mut self) -> Vec<u8> {
        self.cut();
        let header = Header {
            pid: 77,
            command_line: "java Demo".into(),
            start_ticks: START,
            ticks_per_second: TPS,
            modes: "trace".into(),
            extra: self.extra.clone(),
            ..Default::default()
        };
        let mut out = encode_file_start(&header);
        for c in &self.chunks {
            out.extend_from_slice(c);
        }
        out
    }

    fn recording(self) -> Recording {
        Recording::from_bytes(&self.bytes()).unwrap()
    }
}

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// `label@depth enter..exit self` for each call of a thread, in pre-order.
fn shape(tree: &CallTree, thread: usize) -> Vec<String> {
    tree.threads[thread]
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{}@{} {}..{} self {}{}",
                tree.label(n.method),
                n.depth,
                n.enter_ns / US,
                n.exit_ns / US,
                n.self_ns / US,
                if n.flags == 0 {
                    String::new()
                } else {
                    format!(" flags {}", n.flags)
                }
            )
        })
        .collect()
}

fn recursion() -> TraceRec {
    let mut r = TraceRec::new();
    r.thread(1, "main", 1);
    r.enter(1, "demo.App.main", 0);
    r.enter(1, "demo.App.fact", 10);
    r.enter(1, "demo.App.fact", 20);
    r.enter(1, "demo.App.fact", 30);
    r.exit(1, "demo.App.fact", 35);
    r.exit(1, "demo.App.fact", 50);
    r.exit(1, "demo.App.fact", 70);
    r.exit(1, "demo.App.main", 100);
    r
}

#[test]
fn recursion_nests_each_call_under_the_previous_one() {
    let tree = CallTree::of(&recursion().recording(), &TraceOptions::default());
    assert_eq!(
        shape(&tree, 0),
        [
            "demo.App.main@0 0..100 self 40",
            "demo.App.fact@1 10..70 self 30",
            "demo.App.fact@2 20..50 self 25",
            "demo.App.fact@3 30..35 self 5",
        ]
    );
    assert_eq!(tree.threads[0].nodes[0].descendants, 3);
    let deepest = NodeRef { thread: 0, node: 3 };
    assert_eq!(tree.parent(deepest), Some(NodeRef { thread: 0, node: 2 }));
    assert_eq!(tree.anomalies, Anomalies::default());
}

#[test]
fn recursion_statistics_count_every_nested_call() {
    let stats = TraceStats::of(&recursion().recording(), &TraceOptions::default());
    assert_eq!((stats.events, stats.calls), (8, 4));
    let fact = stats.method("demo.App.fact").unwrap();
    assert_eq!(fact.calls, 3);
    assert_eq!(fact.total_ns, (60 + 30 + 5) * US);
    assert_eq!(fact.self_ns, Some((30 + 25 + 5) * US));
    assert_eq!((fact.min_ns, fact.max_ns), (5 * US, 60 * US));
    let pair = stats.pair("demo.App.fact", "demo.App.fact").unwrap();
    assert_eq!((pair.calls, pair.total_ns), (2, 35 * US));
    let root = stats.pair("[root]", "demo.App.main").unwrap();
    assert_eq!((root.calls, root.total_ns), (1, 100 * US));
    assert_eq!(
        stats.pair("demo.App.main", "demo.App.fact").unwrap().calls,
        1
    );
}

#[test]
fn an_exception_thrown_through_frames_closes_each_with_a_throw_flag() {
    let mut r = TraceRec::new();
    r.enter(1, "demo.App.main", 0);
    r.enter(1, "demo.App.a", 10);
    r.enter(1, "demo.App.b", 20);
    r.enter(1, "demo.App.c", 30);
    r.throw(1, "demo.App.c", 40);
    r.throw(1, "demo.App.b", 41);
    r.exit(1, "demo.App.a", 60); // a caught it
    r.exit(1, "demo.App.main", 70);
    let rec = r.recording();
    let tree = CallTree::of(&rec, &TraceOptions::default());
    assert_eq!(
        shape(&tree, 0),
        [
            "demo.App.main@0 0..70 self 20",
            "demo.App.a@1 10..60 self 29",
            "demo.App.b@2 20..41 self 11 flags 2",
            "demo.App.c@3 30..40 self 10 flags 2",
        ]
    );
    let stats = TraceStats::of(&rec, &TraceOptions::default());
    assert_eq!(stats.method("demo.App.c").unwrap().threw, 1);
    assert_eq!(stats.method("demo.App.a").unwrap().threw, 0);
}

#[test]
fn lost_exits_close_inner_frames_and_stray_exits_are_counted() {
    let mut r = TraceRec::new();
    r.exit(1, "demo.App.before", 5); // entered before tracing started
    r.enter(1, "demo.App.main", 10);
    r.enter(1, "demo.App.a", 20);
    r.enter(1, "demo.App.b", 30);
    r.exit(1, "demo.App.a", 50); // b's exit was lost
    r.exit(1, "demo.App.nowhere", 55); // not open at all
    r.enter(1, "demo.App.tail", 60);
    r.enter(1, "demo.App.open", 70); // still running at the end
    r.exit(1, "demo.App.tail", 90); // closes open, mismatched
    r.enter(1, "demo.App.last", 95); // main and last are unfinished
    let tree = CallTree::of(&r.recording(), &TraceOptions::default());
    assert_eq!(
        shape(&tree, 0),
        [
            "demo.App.main@0 10..95 self 25 flags 1",
            "demo.App.a@1 20..50 self 10",
            "demo.App.b@2 30..50 self 20 flags 4",
            "demo.App.tail@1 60..90 self 10",
            "demo.App.open@2 70..90 self 20 flags 4",
            "demo.App.last@1 95..95 self 0 flags 1",
        ]
    );
    assert_eq!(
        tree.anomalies,
        Anomalies {
            mismatched_exits: 2,
            closed_by_mismatch: 2,
            unmatched_exits: 2,
            unfinished: 2,
        }
    );
}

/// main starts two workers: one whose first event falls inside `start`, one whose
/// first event comes after `start` returned; a JVM thread precedes both.
fn started_threads() -> TraceRec {
    let mut r = TraceRec::new();
    r.thread(1, "main", 1);
    r.thread(2, "Signal Dispatcher", 2);
    r.thread(3, "worker-1", 3);
    r.thread(4, "worker-2", 4);
    r.enter(2, "jdk.Signals.dispatch", 50);
    r.exit(2, "jdk.Signals.dispatch", 60);
    r.enter(1, "demo.App.main", 0);
    r.enter(1, "java.lang.Thread.start", 100);
    r.exit(1, "java.lang.Thread.start", 150);
    r.enter(1, "java.lang.Thread.start", 300);
    r.exit(1, "java.lang.Thread.start", 310);
    r.exit(1, "demo.App.main", 1000);
    r.enter(3, "demo.Worker.run", 120);
    r.enter(3, "demo.Worker.work", 130);
    r.exit(3, "demo.Worker.work", 500);
    r.exit(3, "demo.Worker.run", 510);
    r.enter(4, "demo.Worker.run", 400);
    r.exit(4, "demo.Worker.run", 800);
    r
}

#[test]
fn started_threads_hang_under_their_start_call_and_the_rest_under_the_virtual_root() {
    let tree = CallTree::of(&started_threads().recording(), &TraceOptions::default());
    let names = |refs: Vec<NodeRef>| -> Vec<String> {
        refs.iter()
            .map(|&r| {
                format!(
                    "{} [{}]",
                    tree.label(tree.node(r).method),
                    tree.threads[r.thread].name
                )
            })
            .collect()
    };
    assert_eq!(
        names(tree.virtual_root_children()),
        [
            "demo.App.main [main]",
            "jdk.Signals.dispatch [Signal Dispatcher]"
        ]
    );
    let first_start = tree.find("java.lang.Thread.start", 0).unwrap();
    let second_start = tree.find("java.lang.Thread.start", 1).unwrap();
    assert_eq!(
        names(tree.children(first_start)),
        ["demo.Worker.run [worker-1]"]
    );
    assert_eq!(
        names(tree.children(second_start)),
        ["demo.Worker.run [worker-2]"]
    );
    let run2 = tree.children(second_start)[0];
    assert_eq!(tree.parent(run2), Some(second_start));
    // A started thread's time stays its own: start's self time is its own 50 µs.
    assert_eq!(tree.node(first_start).self_ns, 50 * US);
}

#[test]
fn a_start_call_whose_thread_never_shows_up_does_not_capture_a_later_thread() {
    let mut r = TraceRec::new();
    r.thread(1, "main", 1);
    r.thread(2, "task", 2);
    // A JDK thread started before main; its code is not traced.
    r.enter(1, "java.lang.Thread.start", 10);
    r.exit(1, "java.lang.Thread.start", 20);
    r.enter(1, "demo.App.main", 100);
    r.enter(1, "java.lang.Thread.start", 200);
    r.exit(1, "java.lang.Thread.start", 220);
    r.exit(1, "demo.App.main", 1000);
    r.enter(2, "demo.App.task", 300); // after start returned
    r.exit(2, "demo.App.task", 310);
    let tree = CallTree::of(&r.recording(), &TraceOptions::default());
    let task = tree.thread_roots(1).next().unwrap();
    assert_eq!(tree.threads[1].name, "task");
    assert_eq!(tree.parent(task), tree.find("java.lang.Thread.start", 1));
    assert_eq!(tree.grafts.len(), 1);
}

#[test]
fn tree_text_shows_each_call_with_caller_thread_times_and_self() {
    let tree = CallTree::of(&started_threads().recording(), &TraceOptions::default());
    let mut out = vec![];
    let view = TreeView {
        thread: None,
        max_depth: Some(3),
        min_duration_ns: 20 * US,
    };
    tree.write_text(&view, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "[virtual root] jvm pid 77 (java Demo): 4 threads, 7 calls",
            "  demo.App.main [main] caller=[virtual root] call=0.000000000s return=0.001000000s duration=1.000ms self=940.000us",
            "    java.lang.Thread.start [main] caller=demo.App.main call=0.000100000s return=0.000150000s duration=50.000us self=50.000us",
            "      demo.Worker.run [worker-1] caller=java.lang.Thread.start call=0.000120000s return=0.000510000s duration=390.000us self=20.000us",
        ],
        "depth 3 hides Worker.work; the 10 µs start and dispatch are under 20 µs"
    );
}

fn one_two_three_ms() -> TraceRec {
    let mut r = TraceRec::new();
    r.enter(1, "demo.App.main", 0);
    let mut at = 100;
    for ms in [1, 2, 3] {
        r.enter(1, "demo.App.sleep", at);
        r.exit(1, "demo.App.sleep", at + ms * 1000);
        at += ms * 1000 + 100;
    }
    r.exit(1, "demo.App.main", at);
    r
}

#[test]
fn a_method_taking_one_two_and_three_ms_has_the_expected_spread() {
    let stats = TraceStats::of(&one_two_three_ms().recording(), &TraceOptions::default());
    let m = stats.method("demo.App.sleep").unwrap();
    assert_eq!(
        (m.calls, m.total_ns, m.min_ns, m.max_ns),
        (3, 6 * MS, MS, 3 * MS)
    );
    assert!((m.mean_ns - 2e6).abs() < 1.0, "{}", m.mean_ns);
    let population_sd = (2.0f64 / 3.0).sqrt() * 1e6; // 0.816 ms
    assert!(
        (m.stddev_ns.unwrap() - population_sd).abs() < 1.0,
        "{:?}",
        m.stddev_ns
    );
    assert_eq!(
        (m.p50_ns, m.p90_ns, m.p99_ns),
        (Some(2 * MS), Some(3 * MS), Some(3 * MS))
    );
    assert!(stats.percentiles_exact);
    let main = stats.method("demo.App.main").unwrap();
    assert_eq!(main.self_ns, Some(400 * US));
}

#[test]
fn sorting_orders_methods_by_the_chosen_column() {
    let mut stats = TraceStats::of(&recursion().recording(), &TraceOptions::default());
    let order = |s: &TraceStats| {
        s.methods
            .iter()
            .map(|m| m.method.clone())
            .collect::<Vec<_>>()
    };
    stats.sort(SortKey::Calls);
    assert_eq!(order(&stats), ["demo.App.fact", "demo.App.main"]);
    stats.sort(SortKey::Total);
    assert_eq!(order(&stats), ["demo.App.main", "demo.App.fact"]);
    stats.sort(SortKey::SelfTime);
    assert_eq!(order(&stats), ["demo.App.fact", "demo.App.main"]);
    assert_eq!("stddev".parse::<SortKey>(), Ok(SortKey::Stddev));
    assert!("speed".parse::<SortKey>().is_err());
}

#[test]
fn hidden_methods_pass_their_callees_to_the_nearest_visible_caller() {
    let mut r = TraceRec::new();
    r.enter(1, "demo.App.main", 0);
    r.enter(1, "java.util.ArrayList.forEach", 10);
    r.enter(1, "demo.App.visit", 20);
    r.exit(1, "demo.App.visit", 30);
    r.enter(1, "demo.App.visit", 40);
    r.exit(1, "demo.App.visit", 60);
    r.exit(1, "java.util.ArrayList.forEach", 70);
    r.exit(1, "demo.App.main", 80);
    let rec = r.recording();
    let options = TraceOptions {
        hide: vec![ThreadMatcher::new("java.util.*")],
        probe_cost_ns: None,
    };
    let tree = CallTree::of(&rec, &options);
    assert_eq!(
        shape(&tree, 0),
        [
            "demo.App.main@0 0..80 self 50",
            "demo.App.visit@1 20..30 self 10",
            "demo.App.visit@1 40..60 self 20",
        ]
    );
    let stats = TraceStats::of(&rec, &options);
    assert_eq!(
        stats.pair("demo.App.main", "demo.App.visit").unwrap().calls,
        2
    );
    assert!(stats.method("java.util.ArrayList.forEach").is_none());
}

#[test]
fn overhead_correction_subtracts_two_probes_per_traced_call_and_one_per_untraced() {
    let mut r = TraceRec::new().probe_cost("100");
    r.enter(1, "demo.App.main", 0);
    r.event(1, TraceKind::Enter, "demo.App.a", 10, 5); // 5 untraced calls in main before a
    r.event(1, TraceKind::Enter, "demo.App.b", 20, 3); // 3 in a before b
    r.exit(1, "demo.App.b", 30);
    r.exit(1, "demo.App.a", 40);
    r.exit(1, "demo.App.main", 50);
    let rec = r.recording();
    let tree = CallTree::of(&rec, &TraceOptions::default());
    assert_eq!(tree.probe_cost_ns, Some(100.0));
    let n = &tree.threads[0].nodes;
    // main: 2 traced calls inside (4 probes) + 8 untraced = 1200 ns.
    assert_eq!(n[0].corrected_ns, 50 * US - 1200);
    // a: b (2 probes) + 3 untraced = 500 ns.
    assert_eq!(n[1].corrected_ns, 30 * US - 500);
    assert_eq!(n[2].corrected_ns, 10 * US);
    // Self times: what remains after the corrected children.
    assert_eq!(n[0].corrected_self_ns, (50 * US - 1200) - (30 * US - 500));
    assert_eq!(n[1].corrected_self_ns, (30 * US - 500) - 10 * US);
    let stats = TraceStats::of(&rec, &TraceOptions::default());
    let main = stats.method("demo.App.main").unwrap();
    assert_eq!(main.corrected_total_ns, Some(50 * US - 1200));
    assert_eq!(main.total_ns, 50 * US);
    assert_eq!(stats.probe_cost_ns, Some(100.0));
}

#[test]
fn streaming_from_bytes_gives_the_same_results_as_a_decoded_recording() {
    let mut r = started_threads();
    r.cut(); // spread over several chunks
    r.enter(1, "demo.App.late", 2000);
    r.exit(1, "demo.App.late", 2500);
    let bytes = r.bytes();
    let rec = Recording::from_bytes(&bytes).unwrap();
    let options = TraceOptions::default();
    let (streamed, rest) = TraceStats::from_bytes(&bytes, &options).unwrap();
    assert!(rest.traces.is_empty(), "batches are not kept");
    assert_eq!(rest.methods.len(), rec.methods.len());
    let mut decoded = TraceStats::of(&rec, &options);
    let mut streamed = streamed;
    for s in [&mut decoded, &mut streamed] {
        s.sort(SortKey::Total);
        s.pairs
            .sort_by(|a, b| (&a.caller, &a.callee).cmp(&(&b.caller, &b.callee)));
    }
    assert_eq!(streamed, decoded);
    let (tree, _) = CallTree::from_bytes(&bytes, &options).unwrap();
    assert_eq!(tree, CallTree::of(&rec, &options));
    let (tree2, mut stats2, _) = analyse_bytes(&bytes, &options).unwrap();
    stats2.sort(SortKey::Total);
    stats2
        .pairs
        .sort_by(|a, b| (&a.caller, &a.callee).cmp(&(&b.caller, &b.callee)));
    assert_eq!((tree2, stats2), (tree, decoded));
}

#[test]
fn a_torn_recording_is_analysed_up_to_the_damage() {
    let mut r = recursion();
    r.cut();
    r.enter(1, "demo.App.later", 200);
    r.exit(1, "demo.App.later", 300);
    let bytes = r.bytes();
    let torn = &bytes[..bytes.len() - 3];
    let (stats, rec) = TraceStats::from_bytes(torn, &TraceOptions::default()).unwrap();
    assert!(rec.damage.is_some());
    assert_eq!(stats.calls, 4);
    assert!(stats.method("demo.App.later").is_none());
    let (tree, _) = CallTree::from_bytes(torn, &TraceOptions::default()).unwrap();
    assert!(tree.damage.unwrap().starts_with("damaged at byte"));
}

#[test]
fn aggregate_recordings_give_per_pair_and_per_method_totals_without_percentiles() {
    let mut r = TraceRec::new();
    let (main, work) = (r.method("demo.App.main"), r.method("demo.App.work"));
    let pair = |caller, callee, calls, total_ns, min_ns, max_ns| CallPair {
        caller,
        callee,
        calls,
        total_ns,
        min_ns,
        max_ns,
    };
    for (thread, ticks, pairs) in [
        (
            1,
            START + 1000,
            vec![
                pair(MethodId::NONE, MethodId(main), 1, 900, 900, 900),
                pair(MethodId(main), MethodId(work), 3, 600, 100, 300),
            ],
        ),
        (
            1,
            START + 2000,
            vec![pair(MethodId(main), MethodId(work), 1, 50, 50, 50)],
        ),
        (
            2,
            START + 2000,
            vec![pair(MethodId::NONE, MethodId(work), 2, 1000, 400, 600)],
        ),
    ] {
        r.w.call_aggregate(&CallAggregate {
            thread: ThreadId(thread),
            ticks,
            pairs,
        });
    }
    let stats = TraceStats::of(&r.recording(), &TraceOptions::default());
    assert!(stats.aggregate_mode);
    let w = stats.method("demo.App.work").unwrap();
    assert_eq!(
        (w.calls, w.total_ns, w.min_ns, w.max_ns),
        (6, 1650, 50, 600)
    );
    assert_eq!((w.self_ns, w.stddev_ns, w.p50_ns), (None, None, None));
    let p = stats.pair("demo.App.main", "demo.App.work").unwrap();
    assert_eq!((p.calls, p.total_ns, p.min_ns, p.max_ns), (4, 650, 50, 300));
    assert!(stats.to_string().starts_with("aggregate-mode recording"));
}

#[test]
fn chrome_export_is_json_with_one_complete_event_per_call_nested_per_thread() {
    let tree = CallTree::of(&started_threads().recording(), &TraceOptions::default());
    let mut out = vec![];
    tree.write_chrome(&mut out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len(), tree.calls());
    let main = complete
        .iter()
        .find(|e| e["name"] == "demo.App.main")
        .unwrap();
    assert_eq!(
        (main["ts"].as_f64(), main["dur"].as_f64()),
        (Some(0.0), Some(1000.0))
    );
    assert_eq!(main["pid"], 77);
    // Per thread, every event lies within the previous events it overlaps.
    for tid in [1, 2, 3, 4] {
        let mut open: Vec<(f64, f64)> = vec![];
        for e in complete.iter().filter(|e| e["tid"] == tid) {
            let (ts, end) = (
                e["ts"].as_f64().unwrap(),
                e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
            );
            open.retain(|&(_, e_end)| e_end > ts);
            if let Some(&(p_ts, p_end)) = open.last() {
                assert!(p_ts <= ts && end <= p_end, "{e}");
            }
            open.push((ts, end));
        }
    }
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["main", "Signal Dispatcher", "worker-1", "worker-2"]);
    let flows = events
        .iter()
        .filter(|e| e["ph"] == "s" || e["ph"] == "f")
        .count();
    assert_eq!(flows, 4, "a start and a finish per started thread");
}

#[test]
fn collapsed_export_weights_paths_by_self_time() {
    let tree = CallTree::of(&recursion().recording(), &TraceOptions::default());
    let mut out = vec![];
    tree.write_collapsed(&mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "demo.App.main 40000\n\
         demo.App.main;demo.App.fact 30000\n\
         demo.App.main;demo.App.fact;demo.App.fact 25000\n\
         demo.App.main;demo.App.fact;demo.App.fact;demo.App.fact 5000\n"
    );
}

#[test]
fn statistics_text_has_a_row_per_method_and_per_pair() {
    let text =
        TraceStats::of(&one_two_three_ms().recording(), &TraceOptions::default()).to_string();
    assert!(text.starts_with("8 events, 4 calls\n"), "{text}");
    let row = text
        .lines()
        .find(|l| l.ends_with("  demo.App.sleep"))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cols[..10],
        [
            "3",
            "6.000ms",
            "6.000ms",
            "1.000ms",
            "3.000ms",
            "2.000ms",
            "816.497us",
            "2.000ms",
            "3.000ms",
            "3.000ms"
        ]
    );
    assert!(text.contains("  demo.App.main -> demo.App.sleep"), "{text}");
}

#[test]
fn thread_cpu_time_is_summed_per_method_when_the_agent_recorded_it() {
    let mut r = TraceRec::new();
    let (main, work) = (r.method("demo.App.main"), r.method("demo.App.work"));
    let ev = |kind, method, at_us: u64, cpu_ns| TraceEvent {
        kind,
        method,
        ticks: START + at_us,
        untraced: 0,
        cpu_ns,
    };
    r.pending.push(TraceBatch {
        thread: ThreadId(1),
        has_cpu: true,
        events: vec![
            ev(TraceKind::Enter, MethodId(main), 0, 1_000),
            ev(TraceKind::Enter, MethodId(work), 10, 6_000),
            ev(TraceKind::Exit, MethodId(work), 30, 21_000),
            ev(TraceKind::Enter, MethodId(work), 31, 21_500),
            ev(TraceKind::Exit, MethodId(work), 35, 23_500),
            ev(TraceKind::Exit, MethodId(main), 40, 27_000),
        ],
    });
    r.enter(2, "demo.App.other", 50); // a batch without CPU time
    r.exit(2, "demo.App.other", 60);
    let stats = TraceStats::of(&r.recording(), &TraceOptions::default());
    assert_eq!(stats.method("demo.App.work").unwrap().cpu_ns, Some(17_000));
    assert_eq!(stats.method("demo.App.main").unwrap().cpu_ns, Some(26_000));
    assert_eq!(stats.method("demo.App.other").unwrap().cpu_ns, None);
    assert_eq!(
        stats.method("demo.App.main").unwrap().self_cpu_ns,
        Some(9_000)
    );
}

#[test]
fn a_per_call_counter_shows_under_its_event_name() {
    let mut r = TraceRec::new();
    r.extra.push(("trace.counter".into(), "page-faults".into()));
    let (main, work) = (r.method("demo.App.main"), r.method("demo.App.work"));
    let ev = |kind, method, at_us: u64, count| TraceEvent {
        kind,
        method,
        ticks: START + at_us,
        untraced: 0,
        cpu_ns: count,
    };
    r.pending.push(TraceBatch {
        thread: ThreadId(1),
        has_cpu: true,
        events: vec![
            ev(TraceKind::Enter, MethodId(main), 0, 100),
            ev(TraceKind::Enter, MethodId(work), 10, 103),
            ev(TraceKind::Exit, MethodId(work), 30, 203),
            ev(TraceKind::Enter, MethodId(work), 31, 204),
            ev(TraceKind::Exit, MethodId(work), 35, 304),
            ev(TraceKind::Exit, MethodId(main), 40, 310),
        ],
    });
    let stats = TraceStats::of(&r.recording(), &TraceOptions::default());
    assert_eq!(stats.counter.as_deref(), Some("page-faults"));
    let work = stats.method("demo.App.work").unwrap();
    assert_eq!(work.cpu_ns, None, "a counter is not CPU time");
    let c = work.counter.as_ref().unwrap();
    assert_eq!(
        (c.event.as_str(), c.total, c.per_call, c.self_count),
        ("page-faults", 200, 100.0, 200)
    );
    let main = stats
        .method("demo.App.main")
        .unwrap()
        .counter
        .clone()
        .unwrap();
    assert_eq!((main.total, main.self_count), (210, 10));
    let text = stats.to_string();
    assert!(text.contains("page-faults/call"), "{text}");
    assert!(!text.contains(" cpu "), "{text}");
    let json = serde_json::to_value(&stats).unwrap();
    assert_eq!(json["counter"], "page-faults");
    let rows = json["methods"].as_array().unwrap();
    let main = rows
        .iter()
        .find(|m| m["method"] == "demo.App.main")
        .unwrap();
    assert_eq!(main["counter"]["self"], 10);
    assert_eq!(main["counter"]["per_call"], 210.0);
}

/// Collects (method label, depth, duration in µs) of every finished call.
struct Collect<'a> {
    rec: &'a Recording,
    calls: Vec<(String, u32, u64)>,
}

impl CallSink for Collect<'_> {
    fn enter(&mut self, _thread: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        0
    }

    fn exit(&mut self, call: &Call) {
        let label = self.rec.method_label(MethodId(call.method));
        self.calls
            .push((label, call.depth, call.duration_ns() / US));
    }
}

#[test]
fn replay_hands_every_finished_call_to_a_custom_sink() {
    let bytes = recursion().bytes();
    let rec = Recording::from_bytes(&bytes).unwrap();
    let sink = Collect {
        rec: &rec,
        calls: vec![],
    };
    let (sink, anomalies) = replay(&rec, &TraceOptions::default(), sink);
    let want: Vec<(String, u32, u64)> = [
        ("demo.App.fact", 3, 5),
        ("demo.App.fact", 2, 30),
        ("demo.App.fact", 1, 60),
        ("demo.App.main", 0, 100),
    ]
    .iter()
    .map(|&(m, d, us)| (m.to_string(), d, us))
    .collect();
    assert_eq!(sink.calls, want);
    assert_eq!(anomalies, Anomalies::default());
    let sink = Collect {
        rec: &rec,
        calls: vec![],
    };
    let (streamed, _, _) = replay_bytes(&bytes, &TraceOptions::default(), sink).unwrap();
    assert_eq!(streamed.calls, want);
}

#[test]
fn a_replayer_fed_one_event_at_a_time_gives_what_replay_gives() {
    let bytes = recursion().bytes();
    let rec = Recording::from_bytes(&bytes).unwrap();
    let collect = || Collect {
        rec: &rec,
        calls: vec![],
    };
    let (whole, _) = replay(&rec, &TraceOptions::default(), collect());
    let mut r = Replayer::new(collect(), &TraceOptions::default());
    let mut seen = 0;
    for b in &rec.traces {
        // Each event in a batch of its own, as if every one came in another chunk.
        for e in &b.events {
            let one = TraceBatch {
                thread: b.thread,
                has_cpu: b.has_cpu,
                events: vec![*e],
            };
            r.batch(&rec, &one);
            seen = seen.max(r.sink_mut().calls.len());
        }
    }
    // Every call reached the sink as its exit arrived, none at the end.
    assert_eq!(seen, whole.calls.len());
    let (streamed, anomalies) = r.finish(&rec);
    assert_eq!(streamed.calls, whole.calls);
    assert_eq!(anomalies, Anomalies::default());
}

#[test]
fn a_replayer_forgets_a_thread_whose_calls_all_returned() {
    let bytes = recursion().bytes();
    let rec = Recording::from_bytes(&bytes).unwrap();
    let collect = || Collect {
        rec: &rec,
        calls: vec![],
    };
    let (whole, _) = replay(&rec, &TraceOptions::default(), collect());
    let mut r = Replayer::new(collect(), &TraceOptions::default());
    let b = &rec.traces[0];
    // The same thread's events under 500 thread ids, one after another: each
    // thread's calls all return within its batch.
    for t in 0..500u32 {
        let one = TraceBatch {
            thread: jscope_format::ThreadId(b.thread.0 + 1000 + t),
            has_cpu: b.has_cpu,
            events: b.events.clone(),
        };
        r.batch(&rec, &one);
    }
    let threads = |r: &Replayer<Collect>| r.feeder.engine.as_ref().map_or(0, |e| e.threads.len());
    assert_eq!(threads(&r), 0);
    // A thread left inside a call stays, and its call closes in a later batch.
    let (enter, rest) = b.events.split_at(1);
    for events in [enter, rest] {
        r.batch(
            &rec,
            &TraceBatch {
                thread: b.thread,
                has_cpu: b.has_cpu,
                events: events.to_vec(),
            },
        );
        assert_eq!(threads(&r), usize::from(events.len() == 1));
    }
    let (streamed, anomalies) = r.finish(&rec);
    // recursion() has one thread: each copy gives the whole replay's calls.
    let per_thread = &whole.calls;
    assert_eq!(streamed.calls.len(), 501 * per_thread.len());
    assert_eq!(streamed.calls[500 * per_thread.len()..], per_thread[..]);
    assert_eq!(anomalies, Anomalies::default());
}
