//! `jscope tree`, `stats` and `export` on tracing recordings written with the
//! format crate: exact trees, statistics within tolerance, valid Chrome JSON.

mod support;

use std::path::PathBuf;

use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use support::*;

const START: u64 = 1_000_000;

/// Writes a tracing recording: methods by label, events in µs since the start.
struct Traces {
    b: RecordingBuilder,
    batches: Vec<TraceBatch>,
}

impl Traces {
    fn new() -> Self {
        Traces {
            b: RecordingBuilder::with_header(Header {
                pid: 99,
                command_line: "java Traced".into(),
                start_ticks: START,
                ticks_per_second: 1_000_000_000,
                modes: "trace".into(),
                ..Default::default()
            }),
            batches: vec![],
        }
    }

    /// `label` is `pkg.Class.method`.
    fn method(&mut self, label: &str) -> u32 {
        self.b.method(label).0
    }

    fn thread(&mut self, id: u32, name: &str) {
        self.b.thread_def(ThreadDef {
            id: ThreadId(id),
            name: name.into(),
            start_order: id,
            ..Default::default()
        });
    }

    fn event(&mut self, thread: u32, kind: TraceKind, label: &str, at_us: u64) {
        let method = self.method(label);
        let e = TraceEvent {
            kind,
            method: MethodId(method),
            ticks: START + at_us * 1000,
            untraced: 0,
            cpu_ns: 0,
        };
        match self
            .batches
            .iter_mut()
            .find(|b| b.thread == ThreadId(thread))
        {
            Some(b) => b.events.push(e),
            None => self.batches.push(TraceBatch {
                thread: ThreadId(thread),
                has_cpu: false,
                events: vec![e],
            }),
        }
    }

    fn call(&mut self, thread: u32, label: &str, from_us: u64, to_us: u64) {
        self.event(thread, TraceKind::Enter, label, from_us);
        self.event(thread, TraceKind::Exit, label, to_us);
    }

    fn bytes(mut self) -> Vec<u8> {
        for batch in std::mem::take(&mut self.batches) {
            self.b.trace(&batch);
        }
        self.b.bytes(None)
    }
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = temp_dir(name).join("rec.jsc");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// main calls `work` taking 1, 2 and 3 ms, and starts a worker thread.
fn program() -> Traces {
    let mut t = Traces::new();
    t.b.header_mut()
        .extra
        .push(("trace.probe_cost_ns".into(), "10".into()));
    t.thread(1, "main");
    t.thread(2, "worker");
    t.event(1, TraceKind::Enter, "demo.Main.main", 0);
    t.call(1, "demo.Main.work", 100, 1_100);
    t.call(1, "demo.Main.work", 1_200, 3_200);
    t.call(1, "demo.Main.work", 3_300, 6_300);
    t.call(1, "java.lang.Thread.start", 6_400, 6_450);
    t.event(1, TraceKind::Exit, "demo.Main.main", 10_000);
    t.event(2, TraceKind::Enter, "demo.Worker.run", 6_420);
    t.call(2, "demo.Worker.step", 6_500, 6_510);
    t.event(2, TraceKind::Exit, "demo.Worker.run", 9_000);
    t
}

#[test]
fn tree_prints_the_calls_indented_with_their_times() {
    let file = write("trace-tree", &program().bytes());
    let out = jscope(&["tree", file.to_str().unwrap(), "--min-duration", "1ms"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "[virtual root] jvm pid 99 (java Traced): 2 threads, 7 calls, probe cost 10 ns\n\
         \x20 demo.Main.main [main] caller=[virtual root] call=0.000000000s return=0.010000000s duration=10.000ms self=3.950ms corrected=10.000ms/3.950ms\n\
         \x20   demo.Main.work [main] caller=demo.Main.main call=0.000100000s return=0.001100000s duration=1.000ms self=1.000ms corrected=1.000ms/1.000ms\n\
         \x20   demo.Main.work [main] caller=demo.Main.main call=0.001200000s return=0.003200000s duration=2.000ms self=2.000ms corrected=2.000ms/2.000ms\n\
         \x20   demo.Main.work [main] caller=demo.Main.main call=0.003300000s return=0.006300000s duration=3.000ms self=3.000ms corrected=3.000ms/3.000ms\n"
    );
    let out = jscope(&[
        "tree",
        file.to_str().unwrap(),
        "--thread",
        "work*",
        "--depth",
        "1",
    ]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("1 threads, 2 calls"), "{text}");
    assert!(
        lines[1].starts_with("  demo.Worker.run [worker] caller=[virtual root] "),
        "{text}"
    );
}

#[test]
fn the_started_thread_hangs_under_thread_start() {
    let file = write("trace-linked", &program().bytes());
    let text = stdout(&jscope(&["tree", file.to_str().unwrap(), "--depth", "3"]));
    let start = text
        .lines()
        .position(|l| l.starts_with("    java.lang.Thread.start [main]"))
        .expect(&text);
    let next = text.lines().nth(start + 1).unwrap();
    assert!(
        next.starts_with("      demo.Worker.run [worker] caller=java.lang.Thread.start "),
        "{text}"
    );
}

#[test]
fn stats_give_mean_spread_and_percentiles_of_one_two_three_ms() {
    let file = write("trace-stats", &program().bytes());
    let json = jscope_json(&[
        "stats",
        file.to_str().unwrap(),
        "--format",
        "json",
        "--sort",
        "calls",
    ]);
    let methods = json["methods"].as_array().unwrap();
    assert_eq!(methods[0]["method"], "demo.Main.work");
    let work = &methods[0];
    assert_eq!(work["calls"], 3);
    assert_eq!(work["total_ns"], 6_000_000);
    let close =
        |v: &serde_json::Value, want: f64, tol: f64| (v.as_f64().unwrap() - want).abs() <= tol;
    assert!(close(&work["mean_ns"], 2e6, 1.0), "{work}");
    assert!(close(&work["stddev_ns"], 816_496.6, 1.0), "{work}");
    assert_eq!(
        (work["min_ns"].as_u64(), work["max_ns"].as_u64()),
        (Some(1_000_000), Some(3_000_000))
    );
    assert_eq!(work["p50_ns"], 2_000_000);
    assert_eq!(work["p99_ns"], 3_000_000);
    let pair = json["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["caller"] == "demo.Main.main" && p["callee"] == "demo.Main.work")
        .unwrap();
    assert_eq!(pair["calls"], 3);
    assert_eq!(json["probe_cost_ns"], 10.0);

    let text = stdout(&jscope(&[
        "stats",
        file.to_str().unwrap(),
        "--sort",
        "self",
        "-n",
        "2",
    ]));
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with("  demo.Main.work") || l.ends_with("  demo.Main.main"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows[0].ends_with("demo.Main.work"),
        "self 6 ms before main's 3.95 ms: {text}"
    );
}

#[test]
fn stats_of_an_aggregate_recording_say_what_is_missing() {
    let mut t = Traces::new();
    let (main, work) = (t.method("demo.Main.main"), t.method("demo.Main.work"));
    t.b.call_aggregate(&CallAggregate {
        thread: ThreadId(1),
        ticks: START + 5_000,
        pairs: vec![CallPair {
            caller: MethodId(main),
            callee: MethodId(work),
            calls: 4,
            total_ns: 4_000,
            min_ns: 500,
            max_ns: 2_000,
        }],
    });
    let file = write("trace-aggregate", &t.bytes());
    let out = jscope(&["stats", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("aggregate-mode recording: "), "{text}");
    let row = text
        .lines()
        .find(|l| l.ends_with("  demo.Main.work"))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[..4], ["4", "4.000us", "-", "500ns"], "{row}");
    let out = jscope(&["tree", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("aggregate-mode recording"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn chrome_export_is_valid_json_with_a_complete_event_per_call() {
    let file = write("trace-chrome", &program().bytes());
    let json_path = file.with_file_name("out.trace.json");
    let out = jscope(&[
        "export",
        file.to_str().unwrap(),
        "--format",
        "chrome",
        "-o",
        json_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let complete: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len(), 7);
    for e in &complete {
        assert!(
            e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0,
            "{e}"
        );
        assert_eq!(e["pid"], 99);
    }
    let works: Vec<f64> = complete
        .iter()
        .filter(|e| e["name"] == "demo.Main.work")
        .map(|e| e["dur"].as_f64().unwrap())
        .collect();
    assert_eq!(works, [1000.0, 2000.0, 3000.0]);
    assert!(events.iter().any(|e| e["ph"] == "s") && events.iter().any(|e| e["ph"] == "f"));
}

#[test]
fn collapsed_export_goes_to_stdout() {
    let file = write("trace-collapsed", &program().bytes());
    let out = jscope(&["export", file.to_str().unwrap(), "--format", "collapsed"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("demo.Main.main;demo.Main.work 6000000\n"),
        "{text}"
    );
    assert!(
        text.contains("demo.Worker.run;demo.Worker.step 10000\n"),
        "{text}"
    );
}

#[test]
fn a_recording_without_traces_is_a_one_line_error_and_damage_a_warning() {
    let file = write("trace-none", &Traces::new().bytes());
    let out = jscope(&["stats", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("jscope: ") && stderr(&out).contains("no trace events"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1);

    let bytes = program().bytes();
    let torn = write("trace-torn", &bytes[..bytes.len() - 5]);
    let out = jscope(&["stats", torn.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the only data chunk is torn: nothing left"
    );
    assert!(
        stderr(&out).contains("is damaged at byte"),
        "{}",
        stderr(&out)
    );
}
