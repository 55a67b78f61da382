//! `jscope export --format jfr` of real recordings, opened where Java developers
//! look: the JDK's `jfr summary` and `jfr print` (every JDK the testkit finds)
//! count exactly what `jscope info` counts, the JDK's `RecordingFile` rebuilds the
//! stacks `jscope collapsed` prints, jscope reads the export back to the same
//! reports (hot methods, locks, GC, allocations, trace statistics and tree), and a
//! JDK recording converted to .jsc and exported again keeps what jscope maps.

mod support;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, jfr_tool, temp_dir, Child, Java};
use serde_json::Value;
use support::{jscope, jscope_json, stderr, stdout};

fn fixtures(dir: &str) -> PathBuf {
    compile_fixtures(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(dir),
    )
}

/// EventsApp without its compile-time stub of `jscope.Events` (the agent's must load).
fn events_app() -> PathBuf {
    let dir = fixtures("events_fixtures");
    let _ = std::fs::remove_dir_all(dir.join("jscope"));
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// EventsApp's every part (contended monitors, waits, allocations, user events,
/// GCs, threads) under the agent with cpu, wall and snapshot sampling, every
/// event and exact tracing of the program's own methods.
fn record_everything(java: &Java, options: &str) -> PathBuf {
    let file = temp_dir(&format!("jfr-export-{}", java.major)).join("app.jsc");
    let agent = format!(
        "-agentpath:{}={options},quiet,file={}",
        agent_path().display(),
        file.display()
    );
    let mut cmd = Command::new(&java.bin);
    cmd.args([&agent, "-cp"])
        .arg(events_app())
        .args(["EventsApp", "all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(180));
    assert!(
        out.status.success(),
        "jdk {}: {}",
        java.major,
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

const EVERYTHING: &str = "mode=cpu+wall+snapshot,events=all,trace=EventsApp*";

/// `jscope export FILE --format jfr [EXTRA...] -o NAME` beside FILE.
fn export_jfr(file: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out_file = file.with_file_name(name);
    let mut args = vec!["export", s(file), "--format", "jfr", "-o", s(&out_file)];
    args.extend_from_slice(extra);
    let out = jscope(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out_file
}

/// The JFR event types jscope writes its event kinds as.
const EVENT_TYPES: [(&str, &str); 16] = [
    ("thread_start", "jdk.ThreadStart"),
    ("thread_end", "jdk.ThreadEnd"),
    ("monitor", "jdk.JavaMonitorEnter"),
    ("wait", "jdk.JavaMonitorWait"),
    ("park", "jdk.ThreadPark"),
    ("gc", "jdk.GarbageCollection"),
    ("alloc", "jdk.ObjectAllocationSample"),
    ("free", "jscope.ObjectFree"),
    ("class_load", "jdk.ClassLoad"),
    ("class_unload", "jdk.ClassUnload"),
    ("compiled", "jdk.Compilation"),
    ("compiled_unload", "jscope.CompiledUnload"),
    // Each user event name is a type of its own: counted together here.
    ("user", "jscope.user.*"),
    ("start_call", "jscope.ThreadStartCall"),
    ("cpu samples", "jdk.ExecutionSample"),
    ("snapshots", "jscope.ThreadSnapshot"),
];

/// What `jfr summary` must count of each JFR event type, from `jscope info`'s
/// counts of samples, snapshots, trace calls and events.
fn expected_counts(info: &Value) -> BTreeMap<String, u64> {
    let mut by_kind: BTreeMap<String, u64> = info["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["events"].as_u64().unwrap(),
            )
        })
        .collect();
    let samples = |m: &str| info["samples"][m].as_u64().unwrap_or(0);
    by_kind.insert("cpu samples".into(), samples("cpu"));
    by_kind.insert("snapshots".into(), info["snapshots"].as_u64().unwrap());
    let mut want: BTreeMap<String, u64> = EVENT_TYPES
        .iter()
        .map(|(kind, ty)| (ty.to_string(), by_kind.get(*kind).copied().unwrap_or(0)))
        .collect();
    // Wall samples and each snapshot's threads are async-profiler's wall-clock samples.
    want.insert(
        "profiler.WallClockSample".into(),
        samples("wall") + samples("snapshot"),
    );
    // A traced call is one event when it ends.
    want.insert(
        "jdk.MethodTrace".into(),
        info["trace"]["enters"].as_u64().unwrap(),
    );
    want.retain(|_, n| *n > 0);
    want
}

/// Event types that hold what the recording is, not what happened in it.
const DESCRIPTIVE: [&str; 8] = [
    "jdk.JVMInformation",
    "jdk.OSInformation",
    "jdk.CPUInformation",
    "jdk.ActiveSetting",
    "jscope.Header",
    "jscope.Counter",
    "jdk.Metadata",
    "jdk.CheckPoint",
];

/// Runs the JDK's `jfr` tool; it must succeed without a word on stderr.
fn jfr(tool: &[OsString], args: &[&str], file: &Path) -> String {
    let out = Command::new(&tool[0])
        .args(&tool[1..])
        .args(args)
        .arg(file)
        .output()
        .expect("run the jfr tool");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "jfr {args:?} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `jfr summary`'s counts of the events that happened, user event types together.
fn summary_counts(tool: &[OsString], file: &Path) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in jfr(tool, &["summary"], file).lines() {
        let mut w = line.split_whitespace();
        let (Some(name), Some(count)) = (w.next(), w.next().and_then(|c| c.parse::<u64>().ok()))
        else {
            continue;
        };
        let descriptive = DESCRIPTIVE.iter().any(|d| d.eq_ignore_ascii_case(name));
        if count == 0 || descriptive || !name.contains('.') {
            continue;
        }
        let name = if name.starts_with("jscope.user.") {
            "jscope.user.*"
        } else {
            name
        };
        *counts.entry(name.to_string()).or_default() += count;
    }
    counts
}

/// `jscope collapsed FILE --mode M`, each mode's stacks added together.
fn collapsed(file: &Path, modes: &[&str]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in modes {
        let text = stdout(&jscope(&["collapsed", s(file), "--mode", m]));
        add_collapsed(&mut out, &text);
    }
    out
}

fn add_collapsed(into: &mut BTreeMap<String, u64>, text: &str) {
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (stack, n) = line.rsplit_once(' ').expect("stack count");
        *into.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
}

/// Fails with the stacks whose counts differ between the JDK's reading and jscope's,
/// each as `stack: jdk N, jscope M`, instead of two whole maps.
fn same_stacks(jdk: &BTreeMap<String, u64>, jscope: &BTreeMap<String, u64>, what: &str) {
    let differ: Vec<String> = jdk
        .keys()
        .chain(jscope.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| jdk.get(*k) != jscope.get(*k))
        .map(|k| format!("{k}: jdk {:?}, jscope {:?}", jdk.get(k), jscope.get(k)))
        .collect();
    assert!(
        differ.is_empty(),
        "{what} stacks differ:\n{}",
        differ.join("\n")
    );
}

/// The JDK's `jdk.jfr.consumer.RecordingFile`, run by `java`, reading the events of
/// `event_type`: how many, and their stacks collapsed (JfrStacks.java).
fn recording_file_stacks(
    java: &Java,
    file: &Path,
    event_type: &str,
) -> (u64, BTreeMap<String, u64>) {
    let out = Command::new(&java.bin)
        .arg("-cp")
        .arg(fixtures("jfr_export_fixtures"))
        .args(["JfrStacks", s(file), event_type])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "jdk {} RecordingFile: {}",
        java.major,
        String::from_utf8_lossy(&out.stderr)
    );
    let events = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("# {event_type} ")))
        .and_then(|n| n.parse().ok())
        .expect("an event count");
    let mut stacks = BTreeMap::new();
    add_collapsed(&mut stacks, &text);
    (events, stacks)
}

#[test]
fn the_jdks_tools_read_an_export_and_count_what_info_counts() {
    for java in javas() {
        let jsc = record_everything(&java, EVERYTHING);
        let exported = export_jfr(&jsc, "app.jfr", &[]);
        let info = jscope_json(&["info", s(&jsc), "--format", "json"]);
        let want = expected_counts(&info);
        for kind in [
            "jdk.ExecutionSample",
            "profiler.WallClockSample",
            "jscope.ThreadSnapshot",
            "jdk.JavaMonitorEnter",
            "jdk.JavaMonitorWait",
            "jdk.ObjectAllocationSample",
            "jdk.GarbageCollection",
            "jdk.ThreadStart",
            "jscope.user.*",
            "jdk.MethodTrace",
        ] {
            assert!(
                want.contains_key(kind),
                "jdk {}: no {kind}: {want:?}",
                java.major
            );
        }
        // jscope reads its export back with the same counts.
        let back = jscope_json(&["info", s(&exported), "--format", "json"]);
        for key in ["samples", "snapshots", "events"] {
            assert_eq!(back[key], info[key], "jdk {}: {key}", java.major);
        }
        assert_eq!(back["trace"]["enters"], info["trace"]["enters"]);

        // Every JDK's tools read every JDK's recording.
        for tool_java in javas() {
            let what = format!(
                "jdk {} tools on a jdk {} export",
                tool_java.major, java.major
            );
            let Some(tool) = jfr_tool(&tool_java) else {
                continue;
            };
            assert_eq!(
                summary_counts(&tool, &exported),
                want,
                "{what}: jfr summary"
            );
            let printed = jfr(&tool, &["print"], &exported);
            let shown = printed
                .lines()
                .filter(|l| *l == "jdk.ExecutionSample {")
                .count() as u64;
            assert_eq!(shown, want["jdk.ExecutionSample"], "{what}: jfr print");
            assert!(printed.contains("EventsApp$Tally.increment()"), "{what}");

            let (cpu, cpu_stacks) =
                recording_file_stacks(&tool_java, &exported, "jdk.ExecutionSample");
            assert_eq!(cpu, want["jdk.ExecutionSample"], "{what}: RecordingFile");
            same_stacks(
                &cpu_stacks,
                &collapsed(&jsc, &["cpu"]),
                &format!("{what}: cpu"),
            );
            let (wall, wall_stacks) =
                recording_file_stacks(&tool_java, &exported, "profiler.WallClockSample");
            assert_eq!(
                wall, want["profiler.WallClockSample"],
                "{what}: RecordingFile"
            );
            same_stacks(
                &wall_stacks,
                &collapsed(&jsc, &["wall", "snapshot"]),
                &format!("{what}: wall and snapshot"),
            );
        }
    }
}

/// A view of a recording that must not change through JFR.
fn view(args: &[&str], file: &Path) -> String {
    let mut all = vec![args[0], s(file)];
    all.extend_from_slice(&args[1..]);
    let out = jscope(&all);
    assert!(out.status.success(), "{all:?}: {}", stderr(&out));
    stdout(&out)
}

const VIEWS: [&[&str]; 11] = [
    &["report", "--mode", "cpu"],
    &["report", "--mode", "wall"],
    &["report", "--mode", "snapshot"],
    &["collapsed", "--mode", "cpu"],
    &["locks"],
    &["gc"],
    &["alloc"],
    &["events", "--type", "user", "--format", "csv"],
    &["stats"],
    &["tree"],
    &[
        "queue",
        "--queue",
        "EventsApp$Mailbox#put/EventsApp$Mailbox#take",
    ],
];

#[test]
fn a_recording_round_trips_through_jfr_with_equal_reports() {
    let java = javas().pop().unwrap();
    let jsc = record_everything(&java, EVERYTHING);
    let exported = export_jfr(&jsc, "app.jfr", &[]);
    let converted = exported.with_extension("back.jsc");
    let out = jscope(&["convert", s(&exported), "-o", s(&converted)]);
    assert!(out.status.success(), "{}", stderr(&out));
    for v in VIEWS {
        let want = view(v, &jsc);
        // The event list's second column is the thread's id in the recording, which
        // JFR does not keep (its name, also listed, is kept).
        let comparable = |text: String| -> String {
            if v[0] != "events" {
                return text;
            }
            text.lines()
                .map(|l| {
                    let mut fields: Vec<&str> = l.split(',').collect();
                    fields.remove(1);
                    fields.join(",")
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(want.lines().count() > 1, "{v:?} shows nothing: {want}");
        assert_eq!(
            comparable(view(v, &exported)),
            comparable(want.clone()),
            "{v:?} of the export"
        );
        assert_eq!(
            comparable(view(v, &converted)),
            comparable(want),
            "{v:?} of the export converted"
        );
    }
}

/// `JfrSplit SECONDS` recorded by JDK Flight Recorder (`settings=profile`, and on
/// JDK 25 method tracing of `thirty`).
fn record_with_jfr(java: &Java) -> PathBuf {
    let file = temp_dir(&format!("jfr-reexport-{}", java.major)).join("split.jfr");
    let tracing = if java.major >= 25 {
        ",jdk.MethodTrace#enabled=true,jdk.MethodTrace#filter=JfrSplit::thirty"
    } else {
        ""
    };
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-XX:StartFlightRecording=filename={},settings=profile{tracing}",
        file.display()
    ))
    .arg("-Xlog:jfr=warning")
    .arg("-cp")
    .arg(fixtures("jfr_fixtures"))
    .args(["JfrSplit", "2"])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(120));
    assert!(out.status.success(), "jdk {}", java.major);
    file
}

#[test]
fn a_jdk_recording_converted_and_exported_again_keeps_what_jscope_maps() {
    for java in javas() {
        let jfr_file = record_with_jfr(&java);
        let jsc = jfr_file.with_extension("jsc");
        let out = jscope(&["convert", s(&jfr_file), "-o", s(&jsc)]);
        assert!(out.status.success(), "{}", stderr(&out));
        let again = export_jfr(&jsc, "app.jfr", &[]);
        let mut views: Vec<&[&str]> = vec![
            &["report", "--mode", "cpu"],
            &["gc"],
            &["collapsed", "--mode", "cpu"],
        ];
        if java.major >= 25 {
            views.push(&["stats"]);
        }
        for v in views {
            assert_eq!(
                view(v, &again),
                view(v, &jfr_file),
                "jdk {}: {v:?}",
                java.major
            );
        }
        let counts = |f: &Path| {
            let info = jscope_json(&["info", s(f), "--format", "json"]);
            (
                info["samples"].clone(),
                info["events"].clone(),
                info["trace"]["enters"].clone(),
            )
        };
        assert_eq!(counts(&again), counts(&jfr_file), "jdk {}", java.major);
        // The JDK's tool counts the execution samples the JDK wrote.
        let Some(tool) = jfr_tool(&java) else {
            continue;
        };
        let count = |f: &Path| summary_counts(&tool, f).get("jdk.ExecutionSample").copied();
        assert_eq!(count(&again), count(&jfr_file), "jdk {}", java.major);
    }
}

#[test]
fn exporting_jfr_needs_an_output_file_and_something_to_export() {
    let java = javas().remove(0);
    let jsc = record_everything(&java, "mode=cpu,events=user");
    let out = jscope(&["export", s(&jsc), "--format", "jfr"]);
    assert!(!out.status.success());
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("-o FILE"), "{}", stderr(&out));
    let out = jscope(&[
        "export",
        s(&jsc),
        "--format",
        "jfr",
        "--mode",
        "alloc",
        "-o",
        "/dev/null",
    ]);
    assert!(!out.status.success());
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    // Only the kind asked: the cpu samples, no events.
    let cpu = export_jfr(&jsc, "cpu.jfr", &["--mode", "cpu"]);
    let info = jscope_json(&["info", s(&cpu), "--format", "json"]);
    assert!(info["samples"]["cpu"].as_u64().unwrap() > 0);
    assert_eq!(info["events"], Value::Array(vec![]));
}

/// async-profiler's converter (`jfrconv`, built from async-profiler's source; not
/// installed by CI): `JSCOPE_JFRCONV=/path/to/jfrconv cargo test -p jscope-cli
/// --test jfr_export_jvm -- --ignored`. It collapses an export's cpu and wall
/// samples into the stacks `jscope collapsed` prints, once its tier suffixes
/// (`_[j]`, `_[i]`, `_[0]`, `_[1]`) are taken off: `--dot` names classes as jscope
/// does and `--norm` drops a lambda's address.
#[test]
#[ignore = "needs async-profiler's jfrconv, named by JSCOPE_JFRCONV"]
fn async_profilers_converter_collapses_an_export_as_jscope_does() {
    let jfrconv = std::env::var_os("JSCOPE_JFRCONV").expect("JSCOPE_JFRCONV names jfrconv");
    let java = javas().remove(0);
    // Java frames only: async-profiler names native code by its symbol alone, where
    // jscope adds the library (`write [libc.so.6]`).
    let jsc = record_everything(&java, "mode=cpu+wall,cstack=no,events=all");
    for mode in ["cpu", "wall"] {
        let exported = export_jfr(&jsc, &format!("{mode}.jfr"), &["--mode", mode]);
        let collapsed_file = exported.with_extension("collapsed");
        let out = Command::new(&jfrconv)
            .args(["-o", "collapsed", "--dot", "--norm"])
            .arg(&exported)
            .arg(&collapsed_file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&collapsed_file).unwrap();
        let untiered = ["_[j]", "_[i]", "_[0]", "_[1]"]
            .iter()
            .fold(text, |t, suffix| t.replace(suffix, ""));
        let mut theirs = BTreeMap::new();
        add_collapsed(&mut theirs, &untiered);
        assert_eq!(theirs, collapsed(&jsc, &[mode]), "{mode}");
    }
}
