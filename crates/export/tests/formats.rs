//! Each export format over one small recording whose every value is known: two
//! threads of cpu samples, allocations, monitor waits and exact traces.

use std::io::Read;

use jscope_analysis::trace::TraceOptions;
use jscope_analysis::{collapse, CollapseOptions, Selection, ThreadMatcher};
use jscope_export::{export, pprof, Export, ExportError, Format, Kind, Profile, Request};
use jscope_format::thread_state::{ALIVE, BLOCKED_ON_MONITOR_ENTER, RUNNABLE};
use jscope_format::*;
use jscope_testkit::RecordingBuilder;
use prost::Message;
use serde_json::Value;

const MS: u64 = 1_000_000;

/// Methods: 1 demo.App.main, 2 demo.App.work, 3 demo.App.idle, 4 demo.Worker.run.
/// Stacks (top first): 1 work<main, 2 idle<main, 3 run, 4 work (inlined) <main.
/// Thread 1 `main`: cpu samples at 0, 10, 20 ms in work (lines 12, 12, 13), at 30 ms
/// in idle, and at 60 ms in work again (a gap). Thread 2 `worker`: two samples in
/// run, the second blocked. Allocations: 100 and 300 bytes of demo.Item in work.
/// A monitor wait of 5 ms in idle. Traces on main: main [0, 10 ms] calls work
/// [1, 4 ms] and work [5, 9 ms].
fn recording() -> Recording {
    let header = Header {
        pid: 77,
        command_line: "demo.App --fast".into(),
        start_wall_ns: 1_700_000_000_000_000_000,
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: 10 * MS,
        vm_name: "Test VM".into(),
        java_version: "21".into(),
        ..Header::default()
    };
    let mut b = RecordingBuilder::with_header(header);
    let [main, work, idle, run] = [
        "demo.App.main",
        "demo.App.work",
        "demo.App.idle",
        "demo.Worker.run",
    ]
    .map(|m| b.method(m));
    let (app, item) = (b.class("demo.App"), b.class("demo.Item"));
    for (id, name) in [(1, "main"), (2, "worker")] {
        b.thread_def(ThreadDef {
            id: ThreadId(id),
            name: name.into(),
            ..ThreadDef::default()
        });
    }
    let frame = |method, line| Frame {
        method,
        bci: 1,
        line,
        kind: FrameKind::Compiled,
    };
    let inlined = |m, line| Frame {
        kind: FrameKind::Inlined,
        ..frame(m, line)
    };
    let stacks = [
        b.stack_of(&[frame(work, 12), frame(main, 3)]),
        b.stack_of(&[frame(idle, 20), frame(main, 4)]),
        b.stack_of(&[frame(run, 7)]),
        // work inlined into main (the JIT's view of the same call as stack 1).
        b.stack_of(&[inlined(work, 13), frame(main, 3)]),
    ];
    let stack = |n: usize| stacks[n - 1];
    let runnable = ALIVE | RUNNABLE;
    for (thread, ms, stack_no, state) in [
        (1, 0, 1, runnable),
        (1, 10, 1, runnable),
        (1, 20, 4, runnable),
        (1, 30, 2, runnable),
        (1, 60, 1, runnable),
        (2, 5, 3, runnable),
        (2, 15, 3, ALIVE | BLOCKED_ON_MONITOR_ENTER),
    ] {
        b.raw_sample(&Sample {
            request: 0,
            thread: ThreadId(thread),
            carrier: Default::default(),
            ticks: ms * MS,
            stack: stack(stack_no),
            mode: SampleMode::Cpu,
            weight_ns: 10 * MS,
            state,
        });
    }
    for (ms, size) in [(2, 100), (12, 300)] {
        b.event(&JvmEvent::on(
            ThreadId(1),
            ms * MS,
            EventKind::Alloc {
                class: item,
                size,
                weight: size * 10,
                stack: stack(1),
                object: 0,
                allocated_total: 0,
                request: Default::default(),
            },
        ));
    }
    b.event(&JvmEvent::on(
        ThreadId(1),
        31 * MS,
        EventKind::MonitorBlocked {
            duration_ns: 5 * MS,
            class: app,
            object: 1,
            owner: ThreadId(2),
            stack: stack(2),
            request: Default::default(),
        },
    ));
    let ev = |kind, method, ms| TraceEvent {
        kind,
        method,
        ticks: ms * MS,
        untraced: 0,
        cpu_ns: 0,
    };
    b.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events: vec![
            ev(TraceKind::Enter, main, 0),
            ev(TraceKind::Enter, work, 1),
            ev(TraceKind::Exit, work, 4),
            ev(TraceKind::Enter, work, 5),
            ev(TraceKind::Exit, work, 9),
            ev(TraceKind::Exit, main, 10),
        ],
    });
    b.end_at(70 * MS);
    b.build(None)
}

fn request(kind: Kind) -> Request {
    Request {
        kind: Some(kind),
        name: "demo.jsc".into(),
        ..Request::default()
    }
}

fn exported(rec: &Recording, req: &Request, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    export(rec, req, format, &mut out).unwrap();
    out
}

fn json(rec: &Recording, req: &Request, format: Format) -> Value {
    serde_json::from_slice(&exported(rec, req, format)).unwrap()
}

fn pprof_of(bytes: &[u8]) -> pprof::Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .expect("gzip");
    pprof::Profile::decode(&*raw).expect("a profile.proto Profile")
}

#[test]
fn pprof_has_functions_lines_sample_types_and_thread_labels() {
    let rec = recording();
    let p = pprof_of(&exported(&rec, &request(Kind::Cpu), Format::Pprof));
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(s(0), "");
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    assert_eq!(p.period, 10 * MS as i64);
    assert_eq!(p.duration_nanos, 70 * MS as i64);
    let total: Vec<i64> = (0..2)
        .map(|i| p.sample.iter().map(|x| x.value[i]).sum())
        .collect();
    assert_eq!(total, [7, 70 * MS as i64]);
    // work has a location per line (12 and 13), each one line of one function.
    let work = p
        .function
        .iter()
        .find(|f| s(f.name) == "demo.App.work")
        .unwrap();
    assert_eq!(
        (s(work.system_name), s(work.filename)),
        ("demo.App.work()V", "App.java")
    );
    let mut lines: Vec<i64> = p
        .location
        .iter()
        .filter(|l| l.line[0].function_id == work.id)
        .map(|l| l.line[0].line)
        .collect();
    lines.sort();
    assert_eq!(lines, [12, 13]);
    // Inlined work:13 and main:3 it was inlined into are one location, innermost
    // line first, as pprof's inline frames are.
    let inlined = p.location.iter().find(|l| l.line.len() == 2).unwrap();
    let names: Vec<(&str, i64)> = inlined
        .line
        .iter()
        .map(|l| (s(p.function[l.function_id as usize - 1].name), l.line))
        .collect();
    assert_eq!(names, [("demo.App.work", 13), ("demo.App.main", 3)]);
    assert!(p.mapping[0].has_inline_frames);
    // The blocked worker sample carries its thread and state.
    let labels = |x: &pprof::Sample| -> Vec<(String, String)> {
        x.label
            .iter()
            .map(|l| (s(l.key).to_string(), s(l.str).to_string()))
            .collect()
    };
    let blocked: Vec<_> = p
        .sample
        .iter()
        .filter(|x| labels(x).contains(&("thread state".into(), "blocked".into())))
        .collect();
    assert_eq!(blocked.len(), 1);
    assert!(labels(blocked[0]).contains(&("thread".into(), "worker".into())));
    assert_eq!(blocked[0].value, [1, 10 * MS as i64]);
}

#[test]
fn pprof_of_allocations_and_lock_waits() {
    let rec = recording();
    let p = pprof_of(&exported(&rec, &request(Kind::Alloc), Format::Pprof));
    let s = |i: i64| p.string_table[i as usize].clone();
    assert_eq!(s(p.sample_type[1].r#type), "alloc_space");
    assert_eq!(p.sample.len(), 1, "both allocations share stack and class");
    assert_eq!(
        p.sample[0].value,
        [2, 4000],
        "the bytes the samples stand for"
    );
    let class = p.sample[0]
        .label
        .iter()
        .find(|l| s(l.key) == "allocated class");
    assert_eq!(class.map(|l| s(l.str)).as_deref(), Some("demo.Item"));
    // The allocated class is the stack's leaf frame, above the allocating method.
    let leaf = |x: &pprof::Sample| {
        let location = &p.location[x.location_id[0] as usize - 1];
        s(p.function[location.line[0].function_id as usize - 1].name)
    };
    assert_eq!(leaf(&p.sample[0]), "demo.Item");
    assert_eq!(p.sample[0].location_id.len(), 3);

    let p = pprof_of(&exported(&rec, &request(Kind::Lock), Format::Pprof));
    let s = |i: i64| p.string_table[i as usize].clone();
    assert_eq!(
        (s(p.sample_type[1].r#type), s(p.sample_type[1].unit)),
        ("delay".into(), "nanoseconds".into())
    );
    assert_eq!(p.sample[0].value, [1, 5 * MS as i64]);
}

#[test]
fn collapsed_samples_are_what_jscope_collapsed_prints() {
    let rec = recording();
    let text = String::from_utf8(exported(&rec, &request(Kind::Cpu), Format::Collapsed)).unwrap();
    let sel = Selection::default();
    let mut expected = Vec::new();
    collapse(&rec, &sel.stack_counts(&rec), CollapseOptions::default())
        .write_to(&mut expected)
        .unwrap();
    assert_eq!(text, String::from_utf8(expected).unwrap());
    assert!(text.contains("demo.App.main;demo.App.work 4\n"), "{text}");
}

#[test]
fn allocation_stacks_end_in_the_allocated_class_in_every_format() {
    let rec = recording();
    let text = String::from_utf8(exported(&rec, &request(Kind::Alloc), Format::Collapsed)).unwrap();
    assert_eq!(text, "demo.App.main;demo.App.work;demo.Item 4000\n");
    let doc = json(&rec, &request(Kind::Alloc), Format::Speedscope);
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(frames.contains(&"demo.Item"), "{frames:?}");
    // With async-profiler's annotation the class frame reads `_[i]`.
    let annotated = Request {
        annotate: true,
        ..request(Kind::Alloc)
    };
    let text = String::from_utf8(exported(&rec, &annotated, Format::Collapsed)).unwrap();
    assert_eq!(
        text,
        "demo.App.main_[j];demo.App.work_[j];demo.Item_[i] 4000\n"
    );
}

/// `recording()` with one more cpu sample on main at 40 ms whose walk found no
/// frame at all.
fn with_an_empty_stack() -> Recording {
    let mut rec = recording();
    let mut empty = rec.samples[0];
    empty.ticks = 40 * MS;
    empty.stack = StackId(0);
    rec.samples.push(empty);
    rec
}

#[test]
fn a_sample_without_frames_exports_as_no_stack() {
    let rec = with_an_empty_stack();
    let text = String::from_utf8(exported(&rec, &request(Kind::Cpu), Format::Collapsed)).unwrap();
    assert!(text.contains("[no_stack] 1\n"), "{text}");
    let p = pprof_of(&exported(&rec, &request(Kind::Cpu), Format::Pprof));
    let total: i64 = p.sample.iter().map(|x| x.value[0]).sum();
    assert_eq!(total, 8, "no sample left out");
    assert!(p
        .function
        .iter()
        .any(|f| p.string_table[f.name as usize] == "[no_stack]"));
    let doc = json(&rec, &request(Kind::Cpu), Format::Speedscope);
    assert!(doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "[no_stack]"));
    // A JFR file holds the recording itself: the sample gets the frame too.
    let back = jfr_of(&rec, &request(Kind::Cpu));
    let shown: Vec<String> = back
        .samples
        .iter()
        .filter(|s| back.stack(s.stack).len() == 1)
        .map(|s| back.method_label(back.stack(s.stack)[0].method))
        .collect();
    assert!(shown.contains(&"[no_stack]".to_string()), "{shown:?}");
    assert_eq!(back.samples.len(), 8);
}

#[test]
fn selection_filters_apply_to_every_kind() {
    let rec = recording();
    let req = Request {
        selection: Selection {
            thread: Some(ThreadMatcher::new("worker")),
            ..Selection::default()
        },
        ..request(Kind::Cpu)
    };
    let p = Profile::of(&rec, Kind::Cpu, &req.selection, false);
    assert_eq!(p.samples.len(), 2);
    assert!(p.samples.iter().all(|s| s.thread == 2));
    let window = Selection {
        from_s: Some(0.011),
        to_s: Some(0.05),
        ..Selection::default()
    };
    assert_eq!(
        Profile::of(&rec, Kind::Alloc, &window, false).samples.len(),
        1
    );
    assert_eq!(
        Profile::of(&rec, Kind::Cpu, &window, false).samples.len(),
        3
    );
}

#[test]
fn chrome_slices_merge_a_frame_over_consecutive_samples() {
    let rec = recording();
    let json = json(&rec, &request(Kind::Cpu), Format::Chrome);
    let slices: Vec<(String, u64, f64, f64)> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    let on_main = |name: &str| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = slices
            .iter()
            .filter(|s| s.0 == name && s.1 == 1)
            .map(|s| (s.2, s.3))
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    // main runs 0-40 ms (at two lines), then again after the 20 ms gap; work is
    // one slice over its three samples (at two lines), then idle, then work again.
    assert_eq!(
        on_main("demo.App.main"),
        [(0.0, 40_000.0), (60_000.0, 10_000.0)]
    );
    assert_eq!(
        on_main("demo.App.work"),
        [(0.0, 30_000.0), (60_000.0, 10_000.0)]
    );
    assert_eq!(on_main("demo.App.idle"), [(30_000.0, 10_000.0)]);
    let names: Vec<&Value> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| &e["args"]["name"])
        .collect();
    assert_eq!(names, ["main", "worker"]);
}

#[test]
fn speedscope_sampled_profiles_per_thread() {
    let rec = recording();
    let json = json(&rec, &request(Kind::Cpu), Format::Speedscope);
    assert_eq!(
        json["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames = json["shared"]["frames"].as_array().unwrap();
    let profiles = json["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2);
    let main = &profiles[0];
    assert_eq!(
        (&main["type"], &main["name"], &main["unit"]),
        (
            &"sampled".into(),
            &"main (cpu)".into(),
            &"nanoseconds".into()
        )
    );
    let samples = main["samples"].as_array().unwrap();
    let weights = main["weights"].as_array().unwrap();
    assert_eq!((samples.len(), weights.len()), (5, 5));
    assert_eq!(main["endValue"], 50 * MS);
    let name = |i: &Value| {
        frames[i.as_u64().unwrap() as usize]["name"]
            .as_str()
            .unwrap()
    };
    let first: Vec<&str> = samples[0].as_array().unwrap().iter().map(name).collect();
    assert_eq!(first, ["demo.App.main", "demo.App.work"], "root first");
    assert_eq!(
        frames[samples[0][0].as_u64().unwrap() as usize]["file"],
        "App.java"
    );
}

#[test]
fn speedscope_evented_profile_of_traces_nests_opens_and_closes() {
    let rec = recording();
    let json = json(&rec, &request(Kind::Trace), Format::Speedscope);
    let frames = json["shared"]["frames"].as_array().unwrap();
    let p = &json["profiles"][0];
    assert_eq!(p["type"], "evented");
    assert_eq!(p["name"], "main (trace)");
    let events: Vec<(String, String, u64)> = p["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let f = frames[e["frame"].as_u64().unwrap() as usize]["name"].as_str();
            (
                e["type"].as_str().unwrap().to_string(),
                f.unwrap().to_string(),
                e["at"].as_u64().unwrap(),
            )
        })
        .collect();
    let expect = [
        ("O", "demo.App.main", 0),
        ("O", "demo.App.work", MS),
        ("C", "demo.App.work", 4 * MS),
        ("O", "demo.App.work", 5 * MS),
        ("C", "demo.App.work", 9 * MS),
        ("C", "demo.App.main", 10 * MS),
    ];
    let expect: Vec<(String, String, u64)> = expect
        .iter()
        .map(|(t, f, at)| (t.to_string(), f.to_string(), *at))
        .collect();
    assert_eq!(events, expect);
    assert_eq!(
        (&p["startValue"], &p["endValue"]),
        (&0.into(), &(10 * MS).into())
    );
}

#[test]
fn traces_export_their_self_time_to_pprof() {
    let rec = recording();
    let req = Request {
        trace: TraceOptions::default(),
        ..request(Kind::Trace)
    };
    let p = pprof_of(&exported(&rec, &req, Format::Pprof));
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(s(p.sample_type[1].r#type), "self");
    let total: i64 = p.sample.iter().map(|x| x.value[1]).sum();
    assert_eq!(
        total,
        10 * MS as i64,
        "self times add up to main's duration"
    );
}

#[test]
fn otlp_holds_one_profile_per_kind_the_recording_has() {
    use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
    let rec = recording();
    let req = Request {
        kind: None,
        name: "demo.jsc".into(),
        ..Request::default()
    };
    let bytes = exported(&rec, &req, Format::Otlp);
    let r = ExportProfilesServiceRequest::decode(&*bytes).unwrap();
    let d = r.dictionary.unwrap();
    let profiles = &r.resource_profiles[0].scope_profiles[0].profiles;
    let kinds: Vec<(&str, usize)> = profiles
        .iter()
        .map(|p| {
            let t = p.sample_type.unwrap().type_strindex as usize;
            let n = p.samples.iter().map(|s| s.timestamps_unix_nano.len()).sum();
            (d.string_table[t].as_str(), n)
        })
        .collect();
    assert_eq!(kinds, [("cpu", 7), ("alloc_space", 2), ("delay", 1)]);
    // Every dictionary table starts with its zero value.
    assert_eq!(d.string_table[0], "");
    assert_eq!(d.stack_table[0].location_indices.len(), 0);
    assert_eq!(d.function_table[0].name_strindex, 0);
    let first_ts = profiles[0].samples[0].timestamps_unix_nano[0];
    assert!(first_ts >= 1_700_000_000_000_000_000);
}

#[test]
fn unknown_kinds_and_empty_kinds_are_errors() {
    assert!("heap"
        .parse::<Kind>()
        .unwrap_err()
        .to_string()
        .contains("unknown export mode"));
    assert_eq!("ALLOC".parse::<Kind>().unwrap(), Kind::Alloc);
    let empty = Recording::default();
    let mut out = Vec::new();
    let e = export(&empty, &request(Kind::Trace), Format::Chrome, &mut out).unwrap_err();
    assert!(e.to_string().contains("no trace events"), "{e}");
}

/// A mixed stack, top first: `do_syscall_64` in the kernel, `write` in libc.so.6,
/// then Java's `demo.App.main`; 3 cpu samples of it on thread `main`.
fn mixed_recording() -> Recording {
    let header = Header {
        pid: 78,
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: 10 * MS,
        ..Header::default()
    };
    let mut b = RecordingBuilder::with_header(header);
    let main = b.method_with("demo.App.main", "([Ljava/lang/String;)V", 9);
    let write = b.native("libc.so.6", "write");
    let syscall = b.native("[kernel]", "do_syscall_64");
    b.thread_def(ThreadDef {
        id: ThreadId(1),
        name: "main".into(),
        ..ThreadDef::default()
    });
    let frame = |method, kind| Frame {
        method,
        bci: -1,
        line: 0,
        kind,
    };
    let stack = b.stack_of(&[
        frame(syscall, FrameKind::Kernel),
        frame(write, FrameKind::Native),
        frame(main, FrameKind::Compiled),
    ]);
    for ms in [0, 10, 20] {
        b.raw_sample(&Sample {
            request: 0,
            thread: ThreadId(1),
            carrier: ThreadId(0),
            ticks: ms * MS,
            stack,
            mode: SampleMode::Cpu,
            weight_ns: 10 * MS,
            state: 0,
        });
    }
    b.build(None)
}

#[test]
fn native_and_kernel_frames_export_in_their_librarys_mapping() {
    let rec = mixed_recording();
    let p = pprof_of(&exported(&rec, &request(Kind::Cpu), Format::Pprof));
    let s = |i: i64| p.string_table[i as usize].as_str();
    let mappings: Vec<&str> = p.mapping.iter().map(|m| s(m.filename)).collect();
    assert_eq!(mappings.len(), 3, "{mappings:?}");
    assert_eq!(mappings[0], "jvm");
    // Each frame's location lies in the mapping of its code; the function's file is
    // the library.
    for (function, lib) in [
        ("write [libc.so.6]", "libc.so.6"),
        ("do_syscall_64_[k]", "[kernel]"),
        ("demo.App.main", "jvm"),
    ] {
        let f = p.function.iter().find(|f| s(f.name) == function).unwrap();
        let l = p
            .location
            .iter()
            .find(|l| l.line[0].function_id == f.id)
            .unwrap();
        assert_eq!(s(p.mapping[l.mapping_id as usize - 1].filename), lib);
        if lib != "jvm" {
            assert_eq!(s(f.filename), lib);
        }
    }

    use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
    let bytes = exported(&rec, &request(Kind::Cpu), Format::Otlp);
    let d = ExportProfilesServiceRequest::decode(&*bytes)
        .unwrap()
        .dictionary
        .unwrap();
    let name_of_location = |l: &opentelemetry_proto::tonic::profiles::v1development::Location| {
        let f = &d.function_table[l.lines[0].function_index as usize];
        d.string_table[f.name_strindex as usize].as_str()
    };
    let lib_of = |function: &str| {
        let l = d.location_table[1..]
            .iter()
            .find(|l| name_of_location(l) == function)
            .unwrap();
        let m = &d.mapping_table[l.mapping_index as usize];
        d.string_table[m.filename_strindex as usize].as_str()
    };
    assert_eq!(lib_of("write [libc.so.6]"), "libc.so.6");
    assert_eq!(lib_of("do_syscall_64_[k]"), "[kernel]");
    assert_eq!(lib_of("demo.App.main"), "");

    let speedscope = json(&rec, &request(Kind::Cpu), Format::Speedscope);
    let frames = speedscope["shared"]["frames"].as_array().unwrap();
    let write = frames
        .iter()
        .find(|f| f["name"] == "write [libc.so.6]")
        .unwrap();
    assert_eq!(write["file"], "libc.so.6");
    let collapsed =
        String::from_utf8(exported(&rec, &request(Kind::Cpu), Format::Collapsed)).unwrap();
    assert_eq!(
        collapsed,
        "demo.App.main;write [libc.so.6];do_syscall_64_[k] 3\n"
    );
}

/// A snapshot profile's samples are a snapshot interval (100 ms) each: its period
/// said the cpu interval (10 ms), so pprof and OTLP readers that scale by the
/// period were ten times off.
#[test]
fn snapshot_profiles_have_the_snapshot_interval_as_their_period() {
    let mut rec = recording();
    rec.header.modes = "cpu+snapshot".into();
    rec.header
        .extra
        .push(("snapshot_interval_ns".into(), (100 * MS).to_string()));
    for (i, ms) in [(0, 5), (100, 105), (100, 205)] {
        rec.snapshots.push(Snapshot {
            ticks: ms * MS,
            interval_ns: i * MS,
            threads: vec![SnapshotThread {
                thread: ThreadId(1),
                carrier: ThreadId(0),
                state: RUNNABLE,
                stack: StackId(1),
            }],
        });
    }
    let p = pprof_of(&exported(&rec, &request(Kind::Snapshot), Format::Pprof));
    assert_eq!(p.period, 100 * MS as i64);
    let wall: i64 = p.sample.iter().map(|x| x.value[1]).sum();
    assert_eq!(wall, 300 * MS as i64);
    let o = json(&rec, &request(Kind::Snapshot), Format::OtlpJson);
    let period = &o["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]["period"];
    assert_eq!(
        period.as_str().map(str::to_string),
        Some((100 * MS).to_string()),
        "{period}"
    );
    // The cpu profile keeps the sampling interval.
    let p = pprof_of(&exported(&rec, &request(Kind::Cpu), Format::Pprof));
    assert_eq!(p.period, 10 * MS as i64);
    // Snapshots are their own sample type, so a consumer that merges a recording's
    // profiles by type (a collector taking the OTLP push) does not add them to wall.
    let p = pprof_of(&exported(&rec, &request(Kind::Snapshot), Format::Pprof));
    let s = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("snapshot", "nanoseconds")]);
}

fn jfr_of(rec: &Recording, req: &Request) -> Recording {
    let back = jscope_jfr::read_bytes(&exported(rec, req, Format::Jfr)).expect("JFR");
    assert_eq!(back.damage, None);
    back
}

fn trace_events(rec: &Recording) -> usize {
    rec.traces.iter().map(|b| b.events.len()).sum()
}

#[test]
fn jfr_holds_the_whole_recording_or_the_kind_asked() {
    let rec = recording();
    let all = jfr_of(
        &rec,
        &Request {
            name: "demo.jsc".into(),
            ..Request::default()
        },
    );
    assert_eq!(
        (all.samples.len(), all.events.len(), trace_events(&all)),
        (7, 3, 6)
    );
    let cpu = jfr_of(&rec, &request(Kind::Cpu));
    assert_eq!(
        (cpu.samples.len(), cpu.events.len(), trace_events(&cpu)),
        (7, 0, 0)
    );
    let alloc = jfr_of(&rec, &request(Kind::Alloc));
    assert_eq!((alloc.samples.len(), alloc.events.len()), (0, 2));
    assert!(alloc.events.iter().all(|e| e.kind.name() == "alloc"));
    let lock = jfr_of(&rec, &request(Kind::Lock));
    assert_eq!(lock.events.len(), 1);
    let trace = jfr_of(&rec, &request(Kind::Trace));
    assert_eq!((trace.samples.len(), trace_events(&trace)), (0, 6));
    // A kind the recording does not have is nothing to export.
    let err = Export::new(&rec, &request(Kind::Wall), Format::Jfr).err();
    assert!(matches!(err, Some(ExportError::NoData(_))), "{err:?}");
}

#[test]
fn jfr_is_narrowed_by_thread_state_and_time() {
    let rec = recording();
    let narrowed = |selection: Selection| {
        jfr_of(
            &rec,
            &Request {
                selection,
                name: "demo.jsc".into(),
                ..Request::default()
            },
        )
    };
    let worker = narrowed(Selection {
        thread: Some(ThreadMatcher::new("worker")),
        ..Selection::default()
    });
    // The worker's two samples; the allocations, the monitor wait and the traces
    // are main's.
    assert_eq!(
        (
            worker.samples.len(),
            worker.events.len(),
            trace_events(&worker)
        ),
        (2, 0, 0)
    );
    let window = narrowed(Selection {
        from_s: Some(0.011),
        to_s: Some(0.05),
        ..Selection::default()
    });
    assert_eq!((window.samples.len(), window.events.len()), (3, 2));
    let blocked = narrowed(Selection {
        states: vec![StateClass::Blocked],
        ..Selection::default()
    });
    // The state filter is the samples'; events and traces have no state.
    assert_eq!((blocked.samples.len(), blocked.events.len()), (1, 3));
    // A selection that keeps nothing is nothing to export, not an empty file.
    let nobody = Request {
        selection: Selection {
            thread: Some(ThreadMatcher::new("nobody")),
            ..Selection::default()
        },
        name: "demo.jsc".into(),
        ..Request::default()
    };
    let err = Export::new(&rec, &nobody, Format::Jfr).err();
    assert!(
        matches!(&err, Some(ExportError::NoData(m)) if m.contains("no selected")),
        "{err:?}"
    );
}

/// `recording()` plus native allocations: a leaked block of 4 KiB (estimated
/// 64 KiB) and a freed one of 1 KiB (estimated 32 KiB) by malloc in `work`, and a
/// native lock wait of 2 ms in `run`.
fn native_recording() -> Recording {
    let mut rec = recording();
    let (work, run) = (StackId(1), StackId(3));
    let alloc = |ticks, size, weight, id, stack| JvmEvent {
        thread: ThreadId(1),
        ticks,
        kind: EventKind::NativeAlloc {
            size,
            weight,
            address: 0x1000 * id,
            call: NATIVE_MALLOC,
            id,
            stack,
            request: jscope_format::RequestId::NONE,
        },
    };
    rec.events.push(alloc(2 * MS, 4096, 65_536, 1, work));
    rec.events.push(alloc(3 * MS, 1024, 32_768, 2, work));
    rec.events.push(JvmEvent::global(
        4 * MS,
        EventKind::NativeFree {
            id: 2,
            address: 0x2000,
        },
    ));
    rec.events.push(JvmEvent {
        thread: ThreadId(2),
        ticks: 5 * MS,
        kind: EventKind::NativeLock {
            duration_ns: 2 * MS,
            weight: 2 * MS,
            address: 0x7000,
            lock: NATIVE_MUTEX,
            stack: run,
            request: jscope_format::RequestId::NONE,
        },
    });
    rec
}

#[test]
fn native_allocations_export_as_allocated_and_in_use_memory() {
    let rec = native_recording();
    let alloc = pprof_of(&exported(&rec, &request(Kind::NativeMem), Format::Pprof));
    let types: Vec<&str> = alloc
        .sample_type
        .iter()
        .map(|t| alloc.string_table[t.r#type as usize].as_str())
        .collect();
    assert_eq!(types, ["native_alloc_objects", "native_alloc_space"]);
    let total: i64 = alloc.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(total, 65_536 + 32_768);
    let inuse = pprof_of(&exported(&rec, &request(Kind::Leak), Format::Pprof));
    let types: Vec<&str> = inuse
        .sample_type
        .iter()
        .map(|t| inuse.string_table[t.r#type as usize].as_str())
        .collect();
    assert_eq!(types, ["native_inuse_objects", "native_inuse_space"]);
    assert_eq!(inuse.sample.len(), 1);
    assert_eq!(inuse.sample[0].value, [1, 65_536]);
    let label = |p: &pprof::Profile, key: &str| -> Vec<String> {
        p.sample
            .iter()
            .flat_map(|s| &s.label)
            .filter(|l| p.string_table[l.key as usize] == key)
            .map(|l| p.string_table[l.str as usize].clone())
            .collect()
    };
    assert_eq!(label(&inuse, "allocating function"), ["malloc"]);
    let lock = Profile::of(&rec, Kind::NativeLock, &Selection::default(), false);
    assert_eq!(lock.collapsed(), [("demo.Worker.run".to_string(), 2 * MS)]);
    // A window ending before the free: both blocks were still held then.
    let early = Selection {
        to_s: Some(0.0035),
        ..Selection::default()
    };
    let held = Profile::of(&rec, Kind::Leak, &early, false);
    assert_eq!(held.total_weight(), 65_536 + 32_768);
}

#[test]
fn otlp_holds_the_native_profiles_too() {
    use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
    let rec = native_recording();
    let req = Request {
        kind: None,
        name: "demo.jsc".into(),
        ..Request::default()
    };
    let bytes = exported(&rec, &req, Format::Otlp);
    let r = ExportProfilesServiceRequest::decode(&*bytes).unwrap();
    let d = r.dictionary.unwrap();
    let profiles = &r.resource_profiles[0].scope_profiles[0].profiles;
    let kinds: Vec<&str> = profiles
        .iter()
        .map(|p| d.string_table[p.sample_type.unwrap().type_strindex as usize].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "cpu",
            "alloc_space",
            "delay",
            "native_alloc_space",
            "native_inuse_space",
            "native_delay"
        ]
    );
    assert_eq!("nativemem".parse::<Kind>().unwrap(), Kind::NativeMem);
    assert_eq!("leak".parse::<Kind>().unwrap(), Kind::Leak);
}
