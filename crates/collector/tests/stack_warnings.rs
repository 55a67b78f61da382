//! The API's profiles say when unknown, broken or empty stacks weigh on them
//! (`warnings`), show samples without frames as `[no_stack]`, end allocation
//! stacks in the allocated class, and name frame kinds when asked.

mod common;

use common::*;
use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};

const MS: u64 = 1_000_000;

/// 100 cpu samples on main: 96 in demo.Shop.work (C1) under demo.Shop.main
/// (C2), 3 `[unknown_java]`, 1 without frames; two allocations of 1,000
/// bytes of `byte[]` in demo.Shop.work.
fn recording() -> Vec<u8> {
    let header = Header {
        pid: 4400,
        command_line: "demo.Shop".into(),
        start_wall_ns: now_ns(),
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: MS,
        ..Header::default()
    };
    let mut b = RecordingBuilder::with_header(header);
    let hot = b.stack_with_kinds(&[
        ("demo.Shop.work", 3, FrameKind::C1),
        ("demo.Shop.main", 3, FrameKind::Compiled),
    ]);
    let unknown = b.stack_with_kinds(&[("[unknown_java]", 3, FrameKind::Unknown)]);
    let bytes = b.class_in_file("byte[]", "");
    b.thread_def(ThreadDef {
        id: ThreadId(1),
        name: "main".into(),
        ..ThreadDef::default()
    });
    for i in 0..100 {
        let stack = match i {
            0..=95 => hot,
            96..=98 => unknown,
            _ => StackId::NONE,
        };
        b.raw_sample(&Sample {
            request: 0,
            thread: ThreadId(1),
            carrier: Default::default(),
            ticks: i * MS,
            stack,
            mode: SampleMode::Cpu,
            weight_ns: MS,
            state: 0,
        });
    }
    for i in 0..2 {
        b.event(&JvmEvent::on(
            ThreadId(1),
            (10 + i) * MS,
            EventKind::Alloc {
                class: bytes,
                size: 100,
                weight: 1000,
                stack: hot,
                object: 0,
                allocated_total: 0,
                request: Default::default(),
            },
        ));
    }
    b.end_at(100 * MS);
    b.bytes(None)
}

const WARNING: &str = "4.0% of 100 cpu samples have no complete Java stack \
                       (unknown_java 3, no_stack 1); see jscope info";

#[test]
fn profiles_carry_the_warning_and_show_every_sample() {
    let file = temp_dir("stack-warnings").join("shop.jsc");
    std::fs::write(&file, recording()).unwrap();
    let server = jscope_collector::view(&file, "127.0.0.1:0").unwrap();
    let http = server.http_addr().unwrap();

    let hot = get_json(http, "/api/hot?jvm=shop");
    assert_eq!(hot["samples"], 100);
    assert_eq!(hot["warnings"], serde_json::json!([WARNING]));
    assert!(hot["methods"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["method"] == "[no_stack]"));
    let flame = get_json(http, "/api/flame?jvm=shop");
    assert_eq!(flame["warnings"], serde_json::json!([WARNING]));
    let collapsed = flame["collapsed"].as_str().unwrap();
    assert!(collapsed.contains("[no_stack] 1\n"), "{collapsed}");
    assert!(
        collapsed.contains("demo.Shop.main;demo.Shop.work 96\n"),
        "{collapsed}"
    );
    let graph = get_json(http, "/api/callgraph?jvm=shop");
    assert_eq!(graph["warnings"], serde_json::json!([WARNING]));
    // The page says it under its title.
    let (status, page) = http_get(http, "/api/flame?jvm=shop&format=html");
    assert_eq!(status, 200);
    assert!(page.contains(WARNING), "the page's subtitle");

    // Frame kinds when asked: async-profiler's tiers, C1 as _[1].
    let tiers = get_json(http, "/api/flame?jvm=shop&annotate=tiers");
    let collapsed = tiers["collapsed"].as_str().unwrap();
    assert!(
        collapsed.contains("demo.Shop.main_[j];demo.Shop.work_[1] 96\n"),
        "{collapsed}"
    );
    assert_eq!(http_get(http, "/api/flame?jvm=shop&annotate=bogus").0, 400);

    // An allocation profile ends in the class allocated.
    let (status, alloc) = http_get(http, "/api/flame?jvm=shop&mode=alloc&format=collapsed");
    assert_eq!(status, 200, "{alloc}");
    assert_eq!(alloc, "demo.Shop.main;demo.Shop.work;byte[] 2000\n");
    server.shutdown();
}
