//! `jscope events`, `locks`, `gc` and `alloc` on a synthetic recording written the
//! way the agent writes events (jscope_testkit's RecordingBuilder), and the timeline page
//! of `jscope view` over it in headless Chromium.

mod events_ui;
mod serving;
mod support;

use std::path::{Path, PathBuf};

use jscope_format::thread_state::{
    ALIVE, BLOCKED_ON_MONITOR_ENTER, RUNNABLE, SLEEPING, WAITING, WAITING_WITH_TIMEOUT,
};
use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use serving::cdp::Browser;
use support::{jscope, jscope_bin, jscope_json, stderr, stdout};

const MS: u64 = 1_000_000;
const START: u64 = 1_000_000;

/// A stack of Java frames, top first, as (label, line).
fn stack(b: &mut RecordingBuilder, frames: &[(&str, u32)]) -> StackId {
    let frames: Vec<Frame> = frames
        .iter()
        .map(|&(label, line)| Frame {
            method: b.method(label),
            bci: 2,
            line,
            kind: FrameKind::Java,
        })
        .collect();
    b.stack_of(&frames)
}

fn t(ms: u64) -> u64 {
    START + ms * MS
}

/// One second of a shop: workers 2 and 3 contend on `demo.Counter` in
/// `demo.Counter.add:14` (20 times, 1..=20 ms), main waits on a `demo.Queue` (3
/// waits of 50 ms, one timed out), 4 GCs of 5 ms, 30 allocations (byte[] of 1 MB
/// in `demo.Shop.buffer:40`, Strings in `demo.Shop.name:50`), 7 `order` user events,
/// wall samples every 10 ms with states.
fn shop_recording() -> Vec<u8> {
    let header = Header {
        vm_name: "Synthetic VM".into(),
        start_ticks: START,
        start_wall_ns: 1_700_000_000_000_000_000,
        ticks_per_second: 1_000_000_000,
        modes: "wall".into(),
        interval_ns: 10 * MS,
        pid: 777,
        command_line: "demo.Shop".into(),
        ..Header::default()
    };
    let mut d = RecordingBuilder::with_header(header);
    for (id, name) in [(1, "main"), (2, "worker-1"), (3, "worker-2")] {
        d.thread_def(ThreadDef {
            id: ThreadId(id),
            name: name.into(),
            group: "main".into(),
            start_order: id,
            ..Default::default()
        });
    }
    let counter = d.class("demo.Counter");
    let queue = d.class("demo.Queue");
    let bytes = d.class("byte[]");
    let string = d.class("java.lang.String");
    let add = stack(&mut d, &[("demo.Counter.add", 14), ("demo.Worker.run", 22)]);
    let wait = stack(
        &mut d,
        &[
            ("java.lang.Object.wait", 0),
            ("demo.Queue.take", 31),
            ("demo.Shop.main", 9),
        ],
    );
    let buffer = stack(
        &mut d,
        &[("demo.Shop.buffer", 40), ("demo.Shop.handle", 60)],
    );
    let name = stack(&mut d, &[("demo.Shop.name", 50), ("demo.Shop.handle", 61)]);
    let work = stack(&mut d, &[("demo.Worker.run", 20)]);
    let sleep = stack(
        &mut d,
        &[("java.lang.Thread.sleep", 0), ("demo.Shop.main", 12)],
    );
    d.user_event(1, "order");
    for thread in 1..=3 {
        d.event(&JvmEvent::on(
            ThreadId(thread),
            t(0),
            EventKind::ThreadStart {
                parent: ThreadId::NONE,
            },
        ));
    }
    for ms in (0..1000).step_by(10) {
        for thread in 1..=3u32 {
            let (stack, state) = match (thread, ms) {
                (1, 0..=499) => (sleep, ALIVE | WAITING | WAITING_WITH_TIMEOUT | SLEEPING),
                (1, _) => (wait, ALIVE | WAITING | 0x100 | 0x10),
                (_, 200..=399) => (add, ALIVE | BLOCKED_ON_MONITOR_ENTER),
                _ => (work, ALIVE | RUNNABLE),
            };
            d.raw_sample(&Sample {
                request: 0,
                thread: ThreadId(thread),
                carrier: Default::default(),
                ticks: t(ms),
                stack,
                mode: SampleMode::Wall,
                weight_ns: 10 * MS,
                state,
            });
        }
    }
    for i in 0..20u64 {
        let thread = 2 + (i % 2) as u32;
        d.event(&JvmEvent::on(
            ThreadId(thread),
            t(200 + i * 10),
            EventKind::MonitorBlocked {
                duration_ns: (i + 1) * MS,
                class: counter,
                object: 5,
                owner: ThreadId(5 - thread),
                stack: add,
                request: Default::default(),
            },
        ));
    }
    for (i, timed_out) in [false, true, false].into_iter().enumerate() {
        d.event(&JvmEvent::on(
            ThreadId(1),
            t(500 + i as u64 * 100),
            EventKind::MonitorWait {
                duration_ns: 50 * MS,
                class: queue,
                object: 6,
                timeout_ms: if timed_out { 50 } else { 0 },
                timed_out,
                stack: wait,
                request: Default::default(),
            },
        ));
    }
    for i in 0..4 {
        d.event(&JvmEvent::global(
            t(100 + i * 250),
            EventKind::gc_pause(5 * MS),
        ));
    }
    let mut total = 0;
    for i in 0..30u64 {
        let (class, size, stack) = if i % 3 == 0 {
            (bytes, 1 << 20, buffer)
        } else {
            (string, 32, name)
        };
        total += size;
        d.event(&JvmEvent::on(
            ThreadId(2 + (i % 2) as u32),
            t(i * 30),
            EventKind::Alloc {
                class,
                size,
                stack,
                object: i + 1,
                allocated_total: total,
                weight: 0,
                request: Default::default(),
            },
        ));
        if i % 2 == 0 {
            d.event(&JvmEvent::global(
                t(i * 30 + 3),
                EventKind::ObjectFree {
                    object: i + 1,
                    allocated_total: total + 4096,
                },
            ));
        }
    }
    for i in 0..7 {
        d.event(&JvmEvent::on(
            ThreadId(2),
            t(i * 100 + 50),
            EventKind::User {
                event: 1,
                kind: UserEventKind::Instant,
                value: i as i64,
            },
        ));
    }
    for thread in 1..=3 {
        d.event(&JvmEvent::on(
            ThreadId(thread),
            t(1000),
            EventKind::ThreadEnd {},
        ));
    }
    d.end_at(t(1000));
    d.bytes(None)
}

fn shop_file(name: &str) -> PathBuf {
    let path = temp_dir(name).join("shop.jsc");
    std::fs::write(&path, shop_recording()).unwrap();
    path
}

fn run_ok(args: &[&str]) -> String {
    let out = jscope(args);
    assert!(out.status.success(), "jscope {args:?}: {}", stderr(&out));
    stdout(&out)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn events_prints_one_line_per_event_in_columns() {
    let f = shop_file("events-lines");
    let text = run_ok(&["events", s(&f), "--type", "user"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "# time_s thread duration_ns value type thread_name subject site"
    );
    assert_eq!(lines.len(), 1 + 7, "{text}");
    assert_eq!(lines[1], "0.050000000 2 0 0 user worker-1 order -");
    assert_eq!(lines[7], "0.650000000 2 0 6 user worker-1 order -");
    // Every line has the same number of columns, so gnuplot and awk can read it.
    let all = run_ok(&["events", s(&f)]);
    assert!(
        all.lines().skip(1).all(|l| l.split(' ').count() == 8),
        "{all}"
    );
    assert_eq!(all.lines().count(), 1 + 6 + 20 + 3 + 4 + 30 + 15 + 7);
    let csv = run_ok(&["events", s(&f), "--type", "wait", "--format", "csv"]);
    assert_eq!(
        csv.lines().nth(2).unwrap(),
        "0.600000000,1,50000000,50,wait,main,demo.Queue,java.lang.Object.wait"
    );
    let json = jscope_json(&[
        "events",
        s(&f),
        "--type",
        "monitor",
        "--thread",
        "worker-2",
        "--from",
        "0.3",
        "--format",
        "json",
    ]);
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 5, "worker-2 blocks at 310, 330, ... 390 ms");
    assert_eq!(rows[0]["stack"][1], "demo.Worker.run:22");
    assert_eq!(rows[0]["duration_ns"], 12 * MS);
    let method = run_ok(&[
        "events",
        s(&f),
        "--method",
        "demo.Shop.handle",
        "--type",
        "objects",
    ]);
    assert_eq!(
        method.lines().count(),
        1 + 30 + 15,
        "allocations in handle, and frees of objects allocated there"
    );
}

#[test]
fn locks_names_the_contended_class_and_site() {
    let f = shop_file("events-locks");
    let j = jscope_json(&["locks", s(&f), "--format", "json"]);
    let m = &j["monitors"][0];
    assert_eq!(m["class"], "demo.Counter");
    assert_eq!(m["count"], 20);
    assert_eq!(m["total_ns"], 210 * MS);
    assert_eq!(m["max_ns"], 20 * MS);
    assert_eq!(m["sites"][0]["site"], "demo.Counter.add:14");
    let w = &j["waits"][0];
    assert_eq!(
        (
            w["class"].as_str(),
            w["count"].as_u64(),
            w["timed_out"].as_u64()
        ),
        (Some("demo.Queue"), Some(3), Some(1))
    );
    let text = run_ok(&["locks", s(&f)]);
    assert!(text.contains("demo.Counter\n"), "{text}");
    assert!(
        text.contains("at demo.Counter.add:14 <- demo.Worker.run:22"),
        "{text}"
    );
    let only_1 = jscope_json(&["locks", s(&f), "--thread", "worker-1", "--format", "json"]);
    assert_eq!(only_1["monitors"][0]["count"], 10);
}

#[test]
fn gc_counts_pauses_and_their_share() {
    let f = shop_file("events-gc");
    let j = jscope_json(&["gc", s(&f), "--format", "json"]);
    assert_eq!(
        (j["count"].as_u64(), j["total_ns"].as_u64()),
        (Some(4), Some(20 * MS))
    );
    assert!((j["wall_percent"].as_f64().unwrap() - 2.0).abs() < 1e-9);
    let text = run_ok(&["gc", s(&f), "--pauses", "--from", "0.2"]);
    assert!(text.starts_with("GC pauses: 3\n"), "{text}");
    assert!(text.contains("      0.850000          5.000"), "{text}");
}

#[test]
fn alloc_by_site_and_class_with_ages() {
    let f = shop_file("events-alloc");
    let site = jscope_json(&["alloc", s(&f), "--format", "json"]);
    assert_eq!(site["rows"][0]["key"], "demo.Shop.buffer:40");
    assert_eq!(site["rows"][0]["top_class"], "byte[]");
    assert_eq!(site["rows"][0]["bytes"], 10u64 << 20);
    let class = jscope_json(&["alloc", s(&f), "--by", "class", "--format", "json"]);
    assert_eq!(class["rows"][1]["key"], "java.lang.String");
    assert_eq!(class["rows"][1]["count"], 20);
    let ages = jscope_json(&["alloc", s(&f), "--ages", "--format", "json"]);
    assert_eq!(
        (
            ages["ages"]["freed"].as_u64(),
            ages["ages"]["live"].as_u64()
        ),
        (Some(15), Some(15))
    );
    let byte_row = ages["ages"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["class"] == "byte[]")
        .unwrap();
    assert_eq!(byte_row["max_ns"], 3 * MS);
    assert_eq!(byte_row["max_bytes"], 4096);
    let text = run_ok(&["alloc", s(&f), "--ages", "--by", "stack"]);
    assert!(text.contains("demo.Shop.buffer:40  (byte[])"), "{text}");
    assert!(text.contains("<- demo.Shop.handle:60"), "{text}");
    assert!(
        text.contains("Object ages: 15 tracked objects freed, 15 not freed"),
        "{text}"
    );
}

#[test]
fn user_event_intervals_and_event_trees() {
    let f = shop_file("events-tree");
    let j = jscope_json(&["events", s(&f), "--intervals", "--format", "json"]);
    let order = &j["rows"][0];
    assert_eq!(
        (order["name"].as_str(), order["count"].as_u64()),
        (Some("order"), Some(7))
    );
    assert_eq!(
        (
            order["interval_min_ns"].as_u64(),
            order["interval_p99_ns"].as_u64()
        ),
        (Some(100 * MS), Some(100 * MS))
    );
    let tree = run_ok(&[
        "events",
        s(&f),
        "--tree",
        "--type",
        "monitor",
        "--thread",
        "worker-1",
    ]);
    assert!(
        tree.starts_with("thread worker-1 (#2)\n  demo.Counter.add:14 [0.200000s +10.0"),
        "{tree}"
    );
    assert!(
        tree.contains("    * 0.200000s monitor demo.Counter 1.0"),
        "{tree}"
    );
}

#[test]
fn help_and_bad_types() {
    for cmd in ["events", "locks", "gc", "alloc"] {
        let help = run_ok(&[cmd, "--help"]);
        assert!(help.contains("Example"), "{cmd}: {help}");
    }
    let f = shop_file("events-bad");
    let out = jscope(&["events", s(&f), "--type", "lunch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("jscope: unknown event type `lunch`"),
        "{}",
        stderr(&out)
    );
}

/// `jscope view` over the synthetic recording: the API's timeline data, then the
/// timeline, lock and allocation views in Chromium (a synthetic recording, not a
/// real JVM's: see events_jvm.rs for that).
#[test]
fn view_shows_timeline_locks_and_allocations() {
    let f = shop_file("events-view");
    let served = serving::start(&jscope_bin(), &["view", s(&f), "--http", "127.0.0.1:0"]);
    let jvms = served.json("/api/jvms");
    let id = jvms[0]["id"].as_str().unwrap().to_string();
    let t = served.json(&format!("/api/jvms/{id}/timeline"));
    let lanes = t["lanes"].as_array().unwrap();
    let names: Vec<&str> = lanes.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["main", "worker-1", "worker-2"]);
    assert_eq!(t["gc"].as_array().unwrap().len(), 4);
    assert_eq!(
        t["gc"][1],
        serde_json::json!({"start_ns": 350 * MS, "duration_ns": 5 * MS})
    );
    let w1 = &lanes[1];
    assert_eq!(
        w1["spans"][1],
        serde_json::json!({"start_ns": 200 * MS, "end_ns": 400 * MS, "state": "blocked"})
    );
    assert_eq!(w1["intervals"].as_array().unwrap().len(), 10);
    // A window in epoch ms cuts the data.
    let start_ms = 1_700_000_000_000u64;
    let cut = served.json(&format!(
        "/api/jvms/{id}/timeline?from={}&to={}",
        start_ms + 300,
        start_ms + 400
    ));
    assert_eq!(cut["gc"].as_array().unwrap().len(), 1);
    // `last` ends where the recording ends (1 s), not now.
    let last = served.json(&format!("/api/jvms/{id}/timeline?last=1s"));
    assert_eq!(
        (
            last["from_ns"].as_u64(),
            last["gc"].as_array().unwrap().len()
        ),
        (Some(0), 4)
    );
    let last = served.json(&format!("/api/jvms/{id}/timeline?last=0s"));
    let from = last["from_ns"].as_u64().unwrap();
    assert!(
        (900 * MS..=1000 * MS).contains(&from),
        "{from}: the end of the data"
    );
    assert_eq!(last["gc"].as_array().unwrap().len(), 0, "{}", last["gc"]);
    assert_eq!(
        served.get(&format!("/api/jvms/{id}/locks?last=soon")).0,
        400
    );
    let locks = served.json(&format!("/api/jvms/{id}/locks"));
    assert_eq!(locks["monitors"][0]["class"], "demo.Counter");
    let alloc = served.json(&format!("/api/jvms/{id}/alloc?by=class"));
    assert_eq!(alloc["alloc"]["rows"][0]["key"], "byte[]");
    assert_eq!(
        served.get(&format!("/api/jvms/{id}/alloc?by=colour")).0,
        400
    );

    let Some(mut b) = Browser::launch("events-view") else {
        return;
    };
    let want = events_ui::Expect {
        lanes: &["main", "worker-1", "worker-2"],
        min_gc: 4,
        state: "tl-blocked",
    };
    events_ui::check_timeline(&mut b, &served, &id, &want, "events-synthetic-timeline.png");
    events_ui::check_locks_and_alloc(
        &mut b,
        &served,
        &id,
        "demo.Counter",
        "demo.Shop.buffer:40",
        "events-synthetic.png",
    );
}
