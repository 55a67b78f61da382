//! Exact trees and numbers on recordings written with `ChunkWriter` and read back.

use std::collections::HashMap;

use jscope_format::*;

use super::*;

/// 1 tick = 1 µs, so the tick conversion is exercised too.
const TPS: u64 = 1_000_000;
const START: u64 = 7_000_000;

/// Writes trace recordings: methods by label, events per thread in µs since start.
struct TraceRec {
    w: ChunkWriter,
    strings: u32,
    methods: HashMap<String, u32>,
    pending: Vec<TraceBatch>,
    chunks: Vec<Vec<u8>>,
    extra: Vec<(String, String)>,
}

impl TraceRec {
    fn new() -> Self {
        TraceRec {
            w: ChunkWriter::new(),
            strings: 0,
            methods: HashMap::new(),
            pending: vec![],
            chunks: vec![],
            extra: vec![],
        }
    }

    fn probe_cost(mut self, ns: &str) -> Self {
        self.extra.push(("trace.probe_cost_ns".into(), ns.into()));
        self
    }

    fn string(&mut self, s: &str) -> u32 {
        self.strings += 1;
        self.w.string(self.strings, s);
        self.strings
    }

    fn method(&mut self, label: &str) -> u32 {
        if let Some(&id) = self.methods.get(label) {
            return id;
        }
        let (class, name) = label.rsplit_once('.').unwrap();
        let id = self.methods.len() as u32 + 1;
        let (c, n, sig) = (self.string(class), self.string(name), self.string("()V"));
        self.w.class(&ClassDef {
            id,
            name: c,
            source_file: 0,
        });
        self.w.method(&MethodDef {
            id,
            class: id,
            name: n,
            signature: sig,
            modifiers: 1,
        });
        self.methods.insert(label.to_string(), id);
        id
    }

    fn thread(&mut self, id: u32, name: &str, start_order: u32) {
        self.w.thread(&ThreadDef {
            id,
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
            method,
            ticks: START + at_us,
            untraced,
            cpu_ns: 0,
        };
        match self.pending.iter_mut().find(|b| b.thread == thread) {
            Some(b) => b.events.push(e),
            None => self.pending.push(TraceBatch {
                thread,
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
