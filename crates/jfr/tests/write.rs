//! Writing JFR: a recording written by `jscope_jfr::encode_jfr` reads back with
//! jscope's own JFR reader as the same recording, as far as JFR can hold it
//! (samples, snapshots, JVM events, traced calls, user events, the header), and
//! several recordings written as the chunks of one file keep apart. The JDK's
//! and async-profiler's readers are run on written files in
//! crates/cli/tests/jfr_export_jvm.rs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use jscope_format::thread_state::{self as ts, classify};
use jscope_format::{
    ClassDef, ClassId, EventKind, Frame, FrameKind, Header, JvmEvent, MethodDef, MethodId,
    Recording, Sample, SampleMode, Snapshot, SnapshotThread, StackId, StringId, ThreadDef,
    ThreadId, TraceBatch, TraceEvent, TraceKind, UserEventDef, UserEventKind, EVENT_KINDS,
};
use jscope_testkit::{javas, jfr_tool, temp_dir};

/// A recording put together by hand, its dictionaries interned as the agent does.
struct Made {
    rec: Recording,
}

const START_TICKS: u64 = 5_000_000;
const START_WALL: u64 = 1_764_000_000_000_000_000;

impl Made {
    fn new() -> Made {
        let mut rec = Recording {
            strings: vec![String::new()],
            ..Recording::default()
        };
        rec.header = Header {
            agent_version: "jscope 0.1.0".into(),
            pid: 4242,
            host: "build-7".into(),
            command_line: "demo.App --fast".into(),
            vm_name: "OpenJDK 64-Bit Server VM".into(),
            vm_vendor: "Eclipse Adoptium".into(),
            vm_version: "25.0.2+10-LTS".into(),
            java_version: "25.0.2".into(),
            os: "Linux".into(),
            arch: "amd64".into(),
            start_wall_ns: START_WALL,
            start_ticks: START_TICKS,
            ticks_per_second: 1_000_000_000,
            modes: "cpu+wall+snapshot".into(),
            interval_ns: 10_000_000,
            max_depth: 2048,
            extra: vec![
                ("service.name".into(), "checkout".into()),
                ("cstack".into(), "dwarf".into()),
                ("jvm_arguments".into(), "-Xmx1g".into()),
            ],
        };
        Made { rec }
    }

    fn string(&mut self, s: &str) -> StringId {
        if let Some(i) = self.rec.strings.iter().position(|x| x == s) {
            return StringId(i as u32);
        }
        self.rec.strings.push(s.to_string());
        StringId(self.rec.strings.len() as u32 - 1)
    }

    fn class(&mut self, name: &str) -> ClassId {
        let name = self.string(name);
        if let Some(c) = self.rec.classes.iter().flatten().find(|c| c.name == name) {
            return c.id;
        }
        let id = ClassId(self.rec.classes.len().max(1) as u32);
        put(
            &mut self.rec.classes,
            id.index(),
            ClassDef {
                id,
                name,
                source_file: StringId::NONE,
            },
        );
        id
    }

    fn method(&mut self, class: &str, name: &str, sig: &str, modifiers: u32) -> MethodId {
        let class = self.class(class);
        let (name, signature) = (self.string(name), self.string(sig));
        let id = MethodId(self.rec.methods.len().max(1) as u32);
        put(
            &mut self.rec.methods,
            id.index(),
            MethodDef {
                id,
                class,
                name,
                signature,
                modifiers,
            },
        );
        id
    }

    fn java(&mut self, class: &str, name: &str) -> MethodId {
        self.method(class, name, "()V", 1)
    }

    fn stack(&mut self, frames: &[(MethodId, FrameKind)]) -> StackId {
        let frames = frames
            .iter()
            .enumerate()
            .map(|(i, &(method, kind))| Frame {
                method,
                bci: if kind.is_java() { i as i32 * 3 } else { -1 },
                line: if kind.is_java() { 10 + i as u32 } else { 0 },
                kind,
            })
            .collect();
        let id = StackId(self.rec.stacks.len().max(1) as u32);
        put(&mut self.rec.stacks, id.index(), frames);
        id
    }

    fn thread(&mut self, name: &str, java_id: i64, os_tid: u32, group: &str) -> ThreadId {
        let id = ThreadId(self.rec.threads.len() as u32 + 1);
        self.rec.threads.insert(
            id,
            ThreadDef {
                id,
                java_id,
                os_tid,
                name: name.into(),
                group: group.into(),
                parent: String::new(),
                start_order: id.0,
                daemon: false,
            },
        );
        id
    }

    fn at(ms: u64) -> u64 {
        START_TICKS + ms * 1_000_000
    }
}

fn put<T>(v: &mut Vec<Option<T>>, i: usize, value: T) {
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(value);
}

/// A recording holding every kind of thing the writer maps.
fn everything() -> Recording {
    let mut m = Made::new();
    let main = m.thread("main", 1, 100, "main");
    let worker = m.thread("worker-1", 22, 101, "main");
    let gc = m.thread("G1 Conc#0", 0, 102, "[native]");
    let run = m.java("demo.App", "run");
    let work = m.java("demo.App", "work");
    let inline = m.java("demo.util.Hash", "mix");
    let sleep = m.method("java.lang.Thread", "sleep0", "(J)V", 0x109);
    let write = m.method("libc.so.6", "__write", "", 0x100);
    let kernel = m.method("[kernel]", "do_syscall_64", "", 0x100);
    let vm = m.method("libjvm.so", "G1ConcurrentMark::mark", "", 0x100);
    let hot = m.stack(&[
        (inline, FrameKind::Inlined),
        (work, FrameKind::Compiled),
        (run, FrameKind::Interpreted),
    ]);
    let native = m.stack(&[
        (kernel, FrameKind::Kernel),
        (write, FrameKind::Native),
        (work, FrameKind::Java),
        (run, FrameKind::Java),
    ]);
    let sleeping = m.stack(&[(sleep, FrameKind::Native), (run, FrameKind::Java)]);
    let marking = m.stack(&[(vm, FrameKind::Vm)]);
    let unknown = m.stack(&[(MethodId::NONE, FrameKind::Unknown), (run, FrameKind::Java)]);
    let runnable = ts::ALIVE | ts::RUNNABLE;
    let sample = |thread, ms, stack, mode, state| Sample {
        request: 0,
        thread,
        carrier: ThreadId::NONE,
        ticks: Made::at(ms),
        stack,
        mode,
        weight_ns: if mode == SampleMode::Cpu {
            10_000_000
        } else {
            20_000_000
        },
        state,
    };
    let parked = ts::ALIVE | ts::WAITING | ts::WAITING_INDEFINITELY | ts::PARKED;
    let sleeping_state = ts::ALIVE | ts::WAITING | ts::WAITING_WITH_TIMEOUT | ts::SLEEPING;
    m.rec.samples = vec![
        sample(main, 1, hot, SampleMode::Cpu, runnable),
        sample(main, 11, native, SampleMode::Cpu, runnable | ts::IN_NATIVE),
        sample(worker, 12, hot, SampleMode::Cpu, 0),
        sample(gc, 13, marking, SampleMode::Cpu, runnable),
        sample(main, 14, unknown, SampleMode::Cpu, runnable),
        sample(worker, 20, sleeping, SampleMode::Wall, sleeping_state),
        sample(main, 21, StackId::NONE, SampleMode::Wall, parked),
    ];
    m.rec.snapshots = vec![
        Snapshot {
            ticks: Made::at(30),
            interval_ns: 0,
            threads: vec![
                SnapshotThread {
                    thread: main,
                    carrier: ThreadId::NONE,
                    state: runnable,
                    stack: hot,
                },
                SnapshotThread {
                    thread: worker,
                    carrier: ThreadId::NONE,
                    state: ts::ALIVE | ts::BLOCKED_ON_MONITOR_ENTER,
                    stack: sleeping,
                },
            ],
        },
        Snapshot {
            ticks: Made::at(40),
            interval_ns: 10_000_000,
            threads: vec![SnapshotThread {
                thread: main,
                carrier: ThreadId::NONE,
                state: ts::ALIVE | ts::WAITING | ts::WAITING_INDEFINITELY | ts::IN_OBJECT_WAIT,
                stack: hot,
            }],
        },
    ];
    let lock = m.class("demo.Lock");
    let bytes = m.class("byte[]");
    let cond = m.class("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject");
    let (collector, cause) = (
        m.string("G1 Young Generation"),
        m.string("G1 Evacuation Pause"),
    );
    let checkout = m.string("checkout");
    m.rec.user_events = vec![
        None,
        Some(UserEventDef {
            id: 1,
            name: checkout,
        }),
    ];
    m.rec.events = vec![
        JvmEvent::on(worker, Made::at(2), EventKind::ThreadStart { parent: main }),
        JvmEvent::on(
            worker,
            Made::at(3),
            EventKind::MonitorBlocked {
                duration_ns: 2_500_000,
                class: lock,
                object: 77,
                owner: main,
                stack: hot,
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            main,
            Made::at(4),
            EventKind::MonitorWait {
                duration_ns: 5_000_000,
                class: lock,
                object: 77,
                timeout_ms: 100,
                timed_out: false,
                stack: hot,
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            worker,
            Made::at(5),
            EventKind::Park {
                duration_ns: 1_000_000,
                blocker_class: cond,
                timeout_ns: 0,
                stack: sleeping,
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            worker,
            Made::at(6),
            EventKind::Park {
                duration_ns: 3_000_000,
                blocker_class: ClassId::NONE,
                timeout_ns: 3_000_000,
                stack: sleeping,
                request: Default::default(),
            },
        ),
        JvmEvent::global(
            Made::at(7),
            EventKind::Gc {
                duration_ns: 1_200_000,
                collector,
                cause,
                generation: 0,
                heap_before: 0,
                heap_after: 0,
                gc_id: 3,
                concurrent: false,
            },
        ),
        JvmEvent::global(
            Made::at(8),
            EventKind::Gc {
                duration_ns: 40_000_000,
                collector,
                cause: StringId::NONE,
                generation: 0,
                heap_before: 0,
                heap_after: 0,
                gc_id: 4,
                concurrent: true,
            },
        ),
        JvmEvent::on(
            main,
            Made::at(9),
            EventKind::Alloc {
                class: bytes,
                size: 100_016,
                stack: hot,
                object: 0,
                allocated_total: 524_288,
                weight: 524_288,
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            main,
            Made::at(10),
            EventKind::User {
                event: 1,
                kind: UserEventKind::Begin,
                value: 12,
            },
        ),
        JvmEvent::on(
            main,
            Made::at(15),
            EventKind::User {
                event: 1,
                kind: UserEventKind::End,
                value: -3,
            },
        ),
        JvmEvent::on(main, Made::at(16), EventKind::ClassLoad { class: lock }),
        JvmEvent::global(Made::at(17), EventKind::ClassUnload { class: cond }),
        JvmEvent::global(
            Made::at(18),
            EventKind::Compiled {
                method: work,
                code_size: 912,
            },
        ),
        JvmEvent::global(Made::at(19), EventKind::CompiledUnload { method: work }),
        JvmEvent::global(
            Made::at(20),
            EventKind::ObjectFree {
                object: 9,
                allocated_total: 1 << 20,
            },
        ),
        JvmEvent::on(
            main,
            Made::at(22),
            EventKind::ThreadStartCall {
                started: 22,
                trace_events: 2,
            },
        ),
        JvmEvent::on(worker, Made::at(50), EventKind::ThreadEnd {}),
    ];
    m.rec.counters = [("samples.cpu", 5), ("walk.failed.gc_active", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let ev = |kind, method, us: u64| TraceEvent {
        kind,
        method,
        ticks: START_TICKS + us * 1_000,
        untraced: 0,
        cpu_ns: 0,
    };
    use TraceKind::*;
    m.rec.traces = vec![
        TraceBatch {
            thread: main,
            has_cpu: false,
            events: vec![
                ev(Enter, run, 100),
                ev(Enter, work, 110),
                ev(Exit, work, 150),
                ev(Enter, work, 160),
            ],
        },
        TraceBatch {
            thread: main,
            has_cpu: false,
            events: vec![ev(Throw, work, 170), ev(Exit, run, 200)],
        },
        TraceBatch {
            thread: worker,
            has_cpu: false,
            // Still in `run` when the recording ends: closed at its last event.
            events: vec![
                ev(Enter, run, 300),
                ev(Enter, work, 310),
                ev(Exit, work, 390),
            ],
        },
    ];
    m.rec.end_ticks = Some(Made::at(60));
    m.rec
}

fn labels(rec: &Recording, stack: StackId) -> String {
    rec.stack(stack)
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{:?}",
                rec.method_label(f.method),
                f.line,
                kind_in_jfr(f.kind)
            )
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// A frame's kind as a JFR file can say it: JFR has no word for a Java frame of
/// unknown tier (a snapshot's, or one whose method was not resolved), which is
/// written and read back as JIT compiled.
fn kind_in_jfr(kind: FrameKind) -> FrameKind {
    match kind {
        FrameKind::Java | FrameKind::Unknown => FrameKind::Compiled,
        k => k,
    }
}

fn thread_name(rec: &Recording, t: ThreadId) -> String {
    rec.thread(t).map_or("-".into(), |t| t.name.clone())
}

/// Samples as a reader sees them: time from the start, thread, stack, state
/// class, mode and weight.
fn sample_rows(rec: &Recording) -> Vec<String> {
    rec.samples
        .iter()
        .map(|s| {
            format!(
                "{} {} {:?} {:?} {} [{}]",
                rec.ticks_to_ns(s.ticks),
                thread_name(rec, s.thread),
                s.mode,
                classify(s.state),
                s.weight_ns,
                labels(rec, s.stack)
            )
        })
        .collect()
}

fn snapshot_rows(rec: &Recording) -> Vec<String> {
    rec.snapshots
        .iter()
        .flat_map(|s| {
            s.threads.iter().map(move |t| {
                format!(
                    "{} +{} {} {:?} [{}]",
                    rec.ticks_to_ns(s.ticks),
                    s.interval_ns,
                    thread_name(rec, t.thread),
                    classify(t.state),
                    labels(rec, t.stack)
                )
            })
        })
        .collect()
}

/// Fields JFR has no place for: the agent's object ids of allocations, and a
/// collection's generation and heap sizes.
const NOT_IN_JFR: [&str; 4] = ["generation", "heap_before", "heap_after", "object"];

fn event_rows(rec: &Recording) -> Vec<String> {
    rec.events
        .iter()
        .map(|e| {
            let info = EVENT_KINDS
                .iter()
                .find(|k| k.name == e.kind.name())
                .unwrap();
            let fields: Vec<String> = info
                .fields
                .iter()
                .filter(|f| !(NOT_IN_JFR.contains(&f.name) && e.kind.name() != "monitor"))
                .map(|f| {
                    use jscope_format::FieldValue::*;
                    let v = match e.field(f.name).unwrap() {
                        Class(c) => rec
                            .class(c)
                            .map_or("-".into(), |c| rec.string(c.name).into()),
                        Thread(t) => thread_name(rec, t),
                        Stack(s) => labels(rec, s),
                        String(s) => rec.string(s).to_string(),
                        UserEvent(id) => rec
                            .user_events
                            .iter()
                            .flatten()
                            .find(|d| d.id == id)
                            .map_or("-".into(), |d| rec.string(d.name).into()),
                        other => format!("{other:?}"),
                    };
                    format!("{}={v}", f.name)
                })
                .collect();
            format!(
                "{} {} {} {}",
                rec.ticks_to_ns(e.ticks),
                thread_name(rec, e.thread),
                e.kind.name(),
                fields.join(" ")
            )
        })
        .collect()
}

/// Each thread's calls as (method, enter ns, exit ns), in enter order.
fn calls(rec: &Recording) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: std::collections::HashMap<ThreadId, Vec<(MethodId, u64)>> = Default::default();
    for b in &rec.traces {
        let stack = open.entry(b.thread).or_default();
        for e in &b.events {
            match e.kind {
                TraceKind::Enter => stack.push((e.method, e.ticks)),
                _ => {
                    let (m, start) = stack.pop().unwrap();
                    out.push((b.thread, start, m, e.ticks));
                }
            }
        }
    }
    let last: std::collections::HashMap<ThreadId, u64> = rec
        .traces
        .iter()
        .filter_map(|b| Some((b.thread, b.events.last()?.ticks)))
        .collect();
    for (t, stack) in open {
        for (m, start) in stack {
            out.push((t, start, m, last[&t]));
        }
    }
    out.sort_by_key(|&(t, start, _, end)| (thread_name(rec, t), start, std::cmp::Reverse(end)));
    out.into_iter()
        .map(|(t, start, m, end)| {
            format!(
                "{} {} {}..{}",
                thread_name(rec, t),
                rec.method_label(m),
                rec.ticks_to_ns(start),
                rec.ticks_to_ns(end)
            )
        })
        .collect()
}

fn round_trip(rec: &Recording) -> Recording {
    let bytes = jscope_jfr::encode_jfr(rec);
    let back = jscope_jfr::read_bytes(&bytes).expect("reads back");
    assert_eq!(back.damage, None);
    back
}

#[test]
fn samples_and_snapshots_read_back_with_their_stacks_states_and_weights() {
    let rec = everything();
    let back = round_trip(&rec);
    assert_eq!(sample_rows(&back), sample_rows(&rec));
    assert_eq!(snapshot_rows(&back), snapshot_rows(&rec));
    // Native code keeps its library, kernel code its `_[k]`.
    let all = sample_rows(&back).join("\n");
    assert!(all.contains("__write [libc.so.6]:0:Native"), "{all}");
    assert!(all.contains("do_syscall_64_[k]:0:Kernel"), "{all}");
    assert!(
        all.contains("G1ConcurrentMark::mark [libjvm.so]:0:Vm"),
        "{all}"
    );
    assert!(all.contains("java.lang.Thread.sleep0:0:Native"), "{all}");
}

#[test]
fn jvm_and_user_events_read_back_with_their_fields() {
    let rec = everything();
    let back = round_trip(&rec);
    let (want, got) = (event_rows(&rec), event_rows(&back));
    // The reader puts events in time order, with GCs among them.
    let mut want_sorted = want.clone();
    want_sorted.sort_by_key(|r| r.split(' ').next().unwrap().parse::<u64>().unwrap());
    assert_eq!(got, want_sorted, "{got:#?}");
    assert!(got
        .iter()
        .any(|r| r.contains("user event=checkout kind=UserKind(Begin) value=I64(12)")));
}

#[test]
fn traced_calls_read_back_with_their_times_and_nesting() {
    let rec = everything();
    let back = round_trip(&rec);
    assert_eq!(calls(&back), calls(&rec));
    let text = calls(&back).join("\n");
    assert!(
        text.contains("worker-1 demo.App.run 300000..390000"),
        "{text}"
    );
}

#[test]
fn the_header_reads_back_with_the_jvm_and_the_recording_settings() {
    let rec = everything();
    let back = round_trip(&rec);
    let (h, b) = (&rec.header, &back.header);
    assert_eq!(
        (
            &b.agent_version,
            b.pid,
            &b.host,
            &b.command_line,
            &b.vm_name
        ),
        (
            &h.agent_version,
            h.pid,
            &h.host,
            &h.command_line,
            &h.vm_name
        )
    );
    assert_eq!(
        (&b.vm_vendor, &b.vm_version, &b.java_version, &b.os, &b.arch),
        (&h.vm_vendor, &h.vm_version, &h.java_version, &h.os, &h.arch)
    );
    assert_eq!(
        (b.start_wall_ns, &b.modes, b.interval_ns, b.max_depth),
        (h.start_wall_ns, &h.modes, h.interval_ns, h.max_depth)
    );
    for (k, v) in &h.extra {
        assert_eq!(b.extra(k), Some(v.as_str()), "{k}");
    }
    assert_eq!(back.duration_ns(), rec.duration_ns());
    assert_eq!(back.counters, rec.counters);
    assert!(back.end_ticks.is_some());
}

#[test]
fn the_threads_keep_their_names_ids_and_groups() {
    let rec = everything();
    let back = round_trip(&rec);
    let rows = |r: &Recording| {
        let mut v: Vec<_> = r
            .threads
            .values()
            .map(|t| (t.name.clone(), t.java_id, t.os_tid, t.group.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(rows(&back), rows(&rec));
}

#[test]
fn chunks_of_several_recordings_keep_their_own_names() {
    let a = everything();
    let mut b = everything();
    // The second JVM's methods are named otherwise under the same ids.
    let renamed = b.strings.iter().position(|s| s == "work").unwrap();
    b.strings[renamed] = "other".into();
    b.header.pid = 7;
    let mut w = jscope_jfr::JfrWriter::new();
    let mut bytes = w.chunk(&a, false).bytes;
    bytes.extend(w.chunk(&b, true).bytes);
    let back = jscope_jfr::read_bytes(&bytes).unwrap();
    assert_eq!(back.chunks, 2);
    assert_eq!(back.samples.len(), a.samples.len() + b.samples.len());
    let all = sample_rows(&back).join("\n");
    assert!(all.contains("demo.App.work") && all.contains("demo.App.other"));
    // The JDK's parser takes a pool key it resolved in the previous chunk as that
    // chunk's value: keys must not repeat, or the second JVM shows the first's names.
    let file = temp_dir("jfr-write-chunks").join("two.jfr");
    std::fs::write(&file, &bytes).unwrap();
    for java in javas() {
        let what = format!("jdk {} reading two chunks", java.major);
        let Some(tool) = jfr_tool(&java) else {
            continue;
        };
        let text = String::from_utf8_lossy(&jfr(&tool, &["print"], &file).stdout).into_owned();
        let count = |s: &str| text.matches(s).count();
        assert_eq!(count("\njdk.ExecutionSample {"), 10, "{what}");
        assert_eq!(
            count("demo.App.other()"),
            count("demo.App.work()"),
            "{what}"
        );
    }
}

#[test]
fn async_profiler_recording_reads_back_the_same_after_a_round_trip() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/async-profiler.jfr");
    let rec = jscope_jfr::read_bytes(&std::fs::read(p).unwrap()).unwrap();
    let back = round_trip(&rec);
    assert_eq!(sample_rows(&back), sample_rows(&rec));
    assert_eq!(event_rows(&back), event_rows(&rec));
    assert_eq!(back.header.agent_version, "async-profiler (JFR)");
}

#[test]
fn an_empty_recording_is_a_valid_file() {
    let rec = Made::new().rec;
    let back = round_trip(&rec);
    assert!(back.samples.is_empty() && back.events.is_empty());
    assert_eq!(back.header.pid, 4242);
}

/// `jfr summary`'s count of each event type in `file`, by the JDK's own tool.
fn jfr_summary(tool: &[OsString], file: &Path) -> BTreeMap<String, u64> {
    let out = jfr(tool, &["summary"], file);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, count) = (w.next()?, w.next()?.parse().ok()?);
            (name.contains('.') && count > 0).then(|| (name.to_string(), count))
        })
        // The metadata and checkpoint events (`jdk.CheckPoint`, JDK 25 `jdk.Checkpoint`).
        .filter(|(name, _)| {
            !matches!(
                name.to_lowercase().as_str(),
                "jdk.metadata" | "jdk.checkpoint"
            )
        })
        .collect()
}

/// Runs the JDK's `jfr` with `args` then `file`; it must succeed without a word
/// on stderr.
fn jfr(tool: &[OsString], args: &[&str], file: &Path) -> std::process::Output {
    let out = Command::new(&tool[0])
        .args(&tool[1..])
        .args(args)
        .arg(file)
        .output()
        .expect("run the jfr tool");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "jfr {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn the_jdks_jfr_tool_reads_a_written_file_and_counts_what_was_written() {
    let rec = everything();
    let mut w = jscope_jfr::JfrWriter::new();
    let chunk = w.chunk(&rec, true);
    let file = temp_dir("jfr-write-jdk").join("everything.jfr");
    std::fs::write(&file, &chunk.bytes).unwrap();
    let written = &chunk.counts.by_type;
    assert_eq!(written["jdk.ExecutionSample"], 5);
    // Wall samples, and one per thread of each snapshot.
    assert_eq!(written["profiler.WallClockSample"], 2 + 3);
    assert_eq!(written["jdk.MethodTrace"], 5);
    assert_eq!(written["jscope.user.checkout"], 2);
    for java in javas() {
        let what = format!("jdk {} reading a written JFR file", java.major);
        let Some(tool) = jfr_tool(&java) else {
            continue;
        };
        assert_eq!(&jfr_summary(&tool, &file), written, "{what}: jfr summary");
        let printed = jfr(&tool, &["print"], &file);
        let text = String::from_utf8_lossy(&printed.stdout);
        for (name, &n) in written {
            let shown = text.lines().filter(|l| *l == format!("{name} {{")).count();
            assert_eq!(shown as u64, n, "{what}: jfr print's {name} events");
        }
        for frame in [
            "demo.App.work()",
            "do_syscall_64",
            "__write",
            "Thread.sleep0(long)",
        ] {
            assert!(text.contains(frame), "{what}: {frame} not printed");
        }
    }
}
