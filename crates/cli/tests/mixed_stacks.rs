//! Mixed stacks (Java, native, JVM and kernel frames; a native thread) as the
//! commands show them, on a recording written with the format crate.

mod support;

use std::path::PathBuf;

use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use support::*;

const MS: u64 = 1_000_000;

/// Thread `main` (Java): 6 cpu samples of, top first, `do_syscall_64` (kernel),
/// `write` in libc.so.6, `Java_demo_Spin_spin` in libspin.so, the Java native
/// method `demo.Spin.spin`, then `demo.Main.main` compiled; and 2 of `main`
/// interpreted alone. Thread `C2 CompilerThread0` (native): 4 samples of
/// `Compile::Optimize` < `JavaThread::run` in libjvm.so < `start_thread` in libc.
fn mixed_recording() -> PathBuf {
    let header = Header {
        pid: 99,
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: 10 * MS,
        extra: vec![
            ("cpu_engine".into(), "perf".into()),
            ("cstack".into(), "fp".into()),
            ("kernel_frames".into(), "yes".into()),
        ],
        ..Header::default()
    };
    let mut b = RecordingBuilder::with_header(header);
    let main = b.method_with("demo.Main.main", "([Ljava/lang/String;)V", 9);
    let spin = b.method_with("demo.Spin.spin", "()V", 0x109);
    let jni = b.native("libspin.so", "Java_demo_Spin_spin");
    let write = b.native("libc.so.6", "write");
    let syscall = b.native("[kernel]", "do_syscall_64");
    let optimize = b.native("libjvm.so", "Compile::Optimize");
    let run = b.native("libjvm.so", "JavaThread::run");
    let start = b.native("libc.so.6", "start_thread");
    b.thread_def(ThreadDef {
        id: ThreadId(1),
        java_id: 1,
        name: "main".into(),
        group: "main".into(),
        ..ThreadDef::default()
    });
    b.thread_def(ThreadDef {
        id: ThreadId(2),
        java_id: 0,
        name: "C2 CompilerThread0".into(),
        group: "[native]".into(),
        ..ThreadDef::default()
    });
    let f = |method, kind| Frame {
        method,
        bci: -1,
        line: 0,
        kind,
    };
    let java_into_kernel = b.stack_of(&[
        f(syscall, FrameKind::Kernel),
        f(write, FrameKind::Native),
        f(jni, FrameKind::Native),
        f(spin, FrameKind::Native),
        f(main, FrameKind::Compiled),
    ]);
    let java = b.stack_of(&[f(main, FrameKind::Interpreted)]);
    let compiler = b.stack_of(&[
        f(optimize, FrameKind::Vm),
        f(run, FrameKind::Vm),
        f(start, FrameKind::Native),
    ]);
    let mut ms = 0;
    for (thread, stack, n) in [(1, java_into_kernel, 6), (1, java, 2), (2, compiler, 4)] {
        for _ in 0..n {
            ms += 10;
            b.raw_sample(&Sample {
                request: 0,
                thread: ThreadId(thread),
                carrier: ThreadId(0),
                ticks: ms * MS,
                stack,
                mode: SampleMode::Cpu,
                weight_ns: 10 * MS,
                state: 0,
            });
        }
    }
    b.end_at(200 * MS);
    let bytes = b.bytes(None);
    let path = temp_dir("mixed").join("mixed.jsc");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn ok(args: &[&str]) -> String {
    let out = jscope(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn info_says_which_engine_and_which_frame_kinds() {
    let file = mixed_recording();
    let text = ok(&["info", file.to_str().unwrap()]);
    assert!(
        text.contains("cpu engine: perf (cstack fp, kernel frames yes)\n"),
        "{text}"
    );
    assert!(!text.contains("  cpu_engine: perf"), "{text}");
    assert!(
        text.contains("threads:    2 (1 Java, 1 native)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "frame kinds: interpreted 2, compiled 6, native 10, kernel 6, vm 4 (samples with such a frame)\n"
        ),
        "{text}"
    );
    let json = jscope_json(&["info", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(json["cpu_engine"], "perf (cstack fp, kernel frames yes)");
    assert_eq!(json["native_threads"], 1);
    assert_eq!(json["frame_kinds"][4]["kind"], "vm");
    assert_eq!(json["frame_kinds"][4]["samples"], 4);
}

#[test]
fn reports_name_native_frames_by_library_and_kernel_frames_as_async_profiler() {
    let file = mixed_recording();
    let report = Report::of(&file, &[]);
    assert_eq!(report.samples, 12);
    assert_eq!(report.percent("do_syscall_64_[k]"), Some((50.0, 50.0)));
    let (own, total) = report.percent("Compile::Optimize [libjvm.so]").unwrap();
    assert!((own - 100.0 / 3.0).abs() < 0.01 && (total - own).abs() < 1e-9);
    assert_eq!(report.percent("write [libc.so.6]"), Some((0.0, 50.0)));
    assert_eq!(report.percent("demo.Spin.spin"), Some((0.0, 50.0)));
}

#[test]
fn collapsed_annotates_tiers_only_when_asked() {
    let file = mixed_recording();
    let plain = ok(&["collapsed", file.to_str().unwrap()]);
    assert_eq!(
        plain,
        "demo.Main.main 2\n\
         demo.Main.main;demo.Spin.spin;Java_demo_Spin_spin [libspin.so];write [libc.so.6];do_syscall_64_[k] 6\n\
         start_thread [libc.so.6];JavaThread::run [libjvm.so];Compile::Optimize [libjvm.so] 4\n"
    );
    let annotated = ok(&[
        "collapsed",
        file.to_str().unwrap(),
        "--annotate",
        "--threads",
    ]);
    assert_eq!(
        annotated,
        "[C2 CompilerThread0];start_thread [libc.so.6];JavaThread::run [libjvm.so];Compile::Optimize [libjvm.so] 4\n\
         [main];demo.Main.main_[0] 2\n\
         [main];demo.Main.main_[j];demo.Spin.spin;Java_demo_Spin_spin [libspin.so];write [libc.so.6];do_syscall_64_[k] 6\n"
    );
}

#[test]
fn the_flame_graph_splits_tiers_and_colours_each_kind() {
    let file = mixed_recording();
    let page = temp_dir("mixed-flame").join("flame.html");
    ok(&[
        "flame",
        file.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html.find(r#"id="flame-data">"#).unwrap() + r#"id="flame-data">"#.len();
    let data: serde_json::Value =
        serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()])
            .unwrap();
    let names: Vec<&str> = data["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let colour_of = |name: &str| -> Vec<String> {
        names
            .iter()
            .enumerate()
            .filter(|(_, n)| **n == name)
            .map(|(i, _)| {
                let c = data["nameColor"][i].as_u64().unwrap() as usize;
                data["colors"][c].as_str().unwrap().to_string()
            })
            .collect()
    };
    // main ran interpreted and compiled: two boxes, two shades, no suffix shown.
    let main = colour_of("demo.Main.main");
    assert_eq!(main.len(), 2, "{names:?}");
    assert_ne!(main[0], main[1]);
    use jscope_flame::{classify, colour};
    for name in [
        "do_syscall_64_[k]",
        "write [libc.so.6]",
        "Compile::Optimize [libjvm.so]",
    ] {
        assert_eq!(colour_of(name), [colour(name, classify(name))], "{name}");
    }
    assert_eq!(
        classify("Compile::Optimize [libjvm.so]"),
        jscope_flame::FrameKind::Vm
    );
}

#[test]
fn export_annotates_speedscope_and_collapsed_when_asked() {
    let file = mixed_recording();
    let f = file.to_str().unwrap();
    let collapsed = ok(&["export", f, "--format", "collapsed", "--annotate"]);
    assert!(
        collapsed.contains("demo.Main.main_[j];demo.Spin.spin;Java_demo_Spin_spin [libspin.so];write [libc.so.6];do_syscall_64_[k] 6\n"),
        "{collapsed}"
    );
    assert!(collapsed.contains("demo.Main.main_[0] 2\n"), "{collapsed}");
    let plain = ok(&["export", f, "--format", "collapsed"]);
    assert!(
        !plain.contains("_[j]") && plain.contains("do_syscall_64_[k]"),
        "{plain}"
    );
    let speedscope: serde_json::Value =
        serde_json::from_str(&ok(&["export", f, "--format", "speedscope", "--annotate"])).unwrap();
    let names: Vec<&str> = speedscope["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"demo.Main.main_[j]"), "{names:?}");
    assert!(names.contains(&"demo.Main.main_[0]"), "{names:?}");
    assert!(
        names.contains(&"Compile::Optimize [libjvm.so]"),
        "{names:?}"
    );
}
