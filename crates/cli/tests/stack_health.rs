//! Samples whose stack does not name the code that ran, on recordings built
//! here: each reading command warns in one line when they pass 1% of what it
//! shows, from a file and from a collector alike, and shows every sample.

mod serving;
mod support;

use std::path::{Path, PathBuf};

use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use support::{jscope, jscope_bin, stderr, stdout};

const MS: u64 = 1_000_000;

/// 200 cpu samples on main: `hot` in demo.Shop.work under demo.Shop.main,
/// `unknown` `[unknown_java]`, `broken` demo.Shop.work over
/// `[break_compiled]`, `empty` without frames; one allocation of `byte[]`.
fn recording(name: &str, (hot, unknown, broken, empty): (u64, u64, u64, u64)) -> PathBuf {
    let mut b = RecordingBuilder::with_header(Header {
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: MS,
        extra: vec![("stack_walker".into(), "vm".into())],
        ..Header::default()
    });
    let java = FrameKind::Compiled;
    let hot_stack = b.stack_with_kinds(&[("demo.Shop.work", 3, java), ("demo.Shop.main", 3, java)]);
    let unknown_stack = b.stack_with_kinds(&[("[unknown_java]", 0, FrameKind::Unknown)]);
    let broken_stack = b.stack_with_kinds(&[
        ("demo.Shop.work", 3, java),
        ("[break_compiled]", 0, FrameKind::Unknown),
    ]);
    b.thread_def(ThreadDef {
        id: ThreadId(1),
        name: "main".into(),
        ..ThreadDef::default()
    });
    let stacks = [
        (hot_stack, hot),
        (unknown_stack, unknown),
        (broken_stack, broken),
        (StackId(0), empty),
    ];
    let mut ticks = 0;
    for (stack, n) in stacks {
        for _ in 0..n {
            ticks += MS;
            b.raw_sample(&Sample {
                request: 0,
                thread: ThreadId(1),
                carrier: Default::default(),
                ticks,
                stack,
                mode: SampleMode::Cpu,
                weight_ns: MS,
                state: 0,
            });
        }
    }
    let bytes = b.class_in_file("byte[]", "");
    b.event(&JvmEvent::on(
        ThreadId(1),
        MS,
        EventKind::Alloc {
            class: bytes,
            size: 64,
            weight: 640,
            stack: hot_stack,
            object: 0,
            allocated_total: 0,
            request: Default::default(),
        },
    ));
    b.counters_at(
        ticks,
        &[
            ("walk.failed.unknown_java", unknown),
            ("walk.failed.break_compiled", broken),
        ],
    );
    b.end_at(ticks);
    let file = temp_dir("stack-health").join(name);
    std::fs::write(&file, b.bytes(None)).unwrap();
    file
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The `jscope: warning:` lines of a command's stderr.
fn warnings(args: &[&str]) -> Vec<String> {
    let out = jscope(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stderr(&out)
        .lines()
        .filter(|l| l.starts_with("jscope: warning:"))
        .map(str::to_string)
        .collect()
}

const WARNING: &str = "jscope: warning: app.jsc: 5.0% of 200 cpu samples have no complete \
                       Java stack (unknown_java 6, break_compiled 3, no_stack 1); see jscope info";

#[test]
fn every_reading_command_warns_once_and_shows_every_sample() {
    let f = recording("app.jsc", (190, 6, 3, 1));
    for args in [
        vec!["report", s(&f)],
        vec!["collapsed", s(&f)],
        vec!["callgraph", s(&f)],
        vec!["flame", s(&f), "-o", "/dev/null"],
        vec!["export", s(&f), "--format", "speedscope"],
    ] {
        assert_eq!(warnings(&args), [WARNING], "{args:?}");
    }
    let collapsed = stdout(&jscope(&["collapsed", s(&f)]));
    assert_eq!(
        collapsed,
        "[break_compiled];demo.Shop.work 3\n\
         [no_stack] 1\n\
         [unknown_java] 6\n\
         demo.Shop.main;demo.Shop.work 190\n"
    );
    // What a selection shows is what is counted: main's first 190 ms are whole.
    assert_eq!(
        warnings(&["report", s(&f), "--to", "0.19"]),
        Vec::<String>::new()
    );
    // Event profiles are not samples: no warning, and the class is the leaf.
    let out = jscope(&["collapsed", s(&f), "--mode", "alloc"]);
    assert_eq!(stdout(&out), "demo.Shop.main;demo.Shop.work;byte[] 640\n");
    assert_eq!(stderr(&out), "");

    let info = stdout(&jscope(&["info", s(&f)]));
    assert!(
        info.contains("  unknown_java                             6 (3.00%)\n"),
        "{info}"
    );
    assert!(
        info.contains("  break_compiled                           3 (1.50%)\n"),
        "{info}"
    );
    assert!(
        info.contains("empty stacks: 1 (0.50%; shown as [no_stack])"),
        "{info}"
    );
}

#[test]
fn at_one_percent_or_less_nothing_is_said() {
    let f = recording("fine.jsc", (198, 1, 0, 1));
    assert_eq!(warnings(&["report", s(&f)]), Vec::<String>::new());
}

#[test]
fn a_collectors_answer_carries_the_warning_and_diff_warns_per_side() {
    let f = recording("app.jsc", (190, 6, 3, 1));
    let served = serving::start(&jscope_bin(), &["view", s(&f), "--http", "127.0.0.1:0"]);
    let url = format!("http://{}", served.http);
    for cmd in ["report", "collapsed", "flame"] {
        let mut args = vec![cmd, "--collector", &url, "--jvm", "app"];
        if cmd == "flame" {
            args.extend(["-o", "/dev/null"]);
        }
        let got = warnings(&args);
        assert_eq!(got.len(), 1, "{cmd}: {got:?}");
        assert!(
            got[0].ends_with(": 5.0% of 200 cpu samples have no complete Java stack (unknown_java 6, break_compiled 3, no_stack 1); see jscope info"),
            "{cmd}: {got:?}"
        );
    }
    let fine = recording("fine.jsc", (198, 1, 0, 1));
    let got = warnings(&["diff", s(&f), s(&fine)]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("jscope: warning: the base side app.jsc: 5.0% of 200"),
        "{got:?}"
    );
}
