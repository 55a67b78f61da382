//! Event analysis over recordings written with `ChunkWriter`, as the agent writes them.

use jscope_format::*;

use super::*;
use crate::{Annotation, CollapseOptions, RequestFilter, ThreadMatcher};

/// 1 tick = 1 µs, so the tick conversion is exercised.
const TPS: u64 = 1_000_000;
const START: u64 = 7_000_000;

fn at_ms(ms: u64) -> u64 {
    START + ms * TPS / 1000
}

/// Dictionaries for a small program: classes, methods, stacks, two workers.
struct Builder {
    w: ChunkWriter,
    dict: Dictionary,
    stacks: u32,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder {
            w: ChunkWriter::new(),
            dict: Dictionary::new(),
            stacks: 0,
        };
        for (id, name) in [(1, "main"), (2, "worker-1"), (3, "worker-2")] {
            b.w.thread(&ThreadDef {
                id: ThreadId(id),
                name: name.into(),
                start_order: id,
                ..Default::default()
            });
        }
        b
    }

    fn string(&mut self, s: &str) -> u32 {
        (self.dict.string(&mut self.w, s)).0
    }

    fn class(&mut self, name: &str) -> u32 {
        (self.dict.class(&mut self.w, name, None)).0
    }

    /// `label` is `pkg.Class.method`.
    fn method(&mut self, label: &str) -> u32 {
        (self.dict.method_label(&mut self.w, label)).0
    }

    /// Frames top first as (label, line).
    fn stack(&mut self, frames: &[(&str, u32)]) -> u32 {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|&(l, line)| Frame {
                method: MethodId(self.method(l)),
                bci: 1,
                line,
                kind: FrameKind::Java,
            })
            .collect();
        self.stacks += 1;
        self.w.stack(StackId(self.stacks), &frames);
        self.stacks
    }

    fn user_def(&mut self, id: u32, name: &str) {
        let name = self.string(name);
        self.w.user_event_def(&UserEventDef {
            id,
            name: StringId(name),
        });
    }

    fn build(self, end_ms: u64) -> Recording {
        self.build_with(end_ms, &[])
    }

    /// With header keys (`events.allocrate`, ...).
    fn build_with(mut self, end_ms: u64, extra: &[(&str, &str)]) -> Recording {
        self.w.end(at_ms(end_ms));
        let header = Header {
            start_ticks: START,
            ticks_per_second: TPS,
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let mut bytes = encode_file_start(&header);
        bytes.extend(self.w.finish());
        Recording::from_bytes(&bytes).unwrap()
    }
}

const MS: u64 = 1_000_000;

/// JPMT's shared counter: two workers block on one `demo.Counter` at `increment`;
/// main waits on a lock object with and without a timeout; a worker parks.
fn contention() -> Recording {
    let mut b = Builder::new();
    let counter = b.class("demo.Counter");
    let lock = b.class("java.lang.Object");
    let sync = b.class("java.util.concurrent.locks.ReentrantLock$NonfairSync");
    let inc = b.stack(&[("demo.Counter.increment", 12), ("demo.Worker.run", 30)]);
    let other = b.stack(&[("demo.Counter.get", 20), ("demo.Main.main", 8)]);
    let wait = b.stack(&[("java.lang.Object.wait", 0), ("demo.Main.awaitDone", 44)]);
    let park = b.stack(&[
        ("jdk.internal.misc.Unsafe.park", 0),
        ("demo.Worker.run", 33),
    ]);
    for (i, (thread, d)) in [(2, 3), (3, 5), (2, 7), (3, 1)].into_iter().enumerate() {
        b.w.event(&JvmEvent::on(
            ThreadId(thread),
            at_ms(10 * i as u64),
            EventKind::MonitorBlocked {
                duration_ns: d * MS,
                class: ClassId(counter),
                object: 77,
                owner: ThreadId(5 - thread),
                stack: StackId(inc),
                request: Default::default(),
            },
        ));
    }
    b.w.event(&JvmEvent::on(
        ThreadId(1),
        at_ms(50),
        EventKind::MonitorBlocked {
            duration_ns: 2 * MS,
            class: ClassId(counter),
            object: 77,
            owner: ThreadId(2),
            stack: StackId(other),
            request: Default::default(),
        },
    ));
    for (ms, timeout_ms, timed_out) in [(60, 100, true), (70, 0, false), (80, 50, false)] {
        b.w.event(&JvmEvent::on(
            ThreadId(1),
            at_ms(ms),
            EventKind::MonitorWait {
                duration_ns: 4 * MS,
                class: ClassId(lock),
                object: 9,
                timeout_ms,
                timed_out,
                stack: StackId(wait),
                request: Default::default(),
            },
        ));
    }
    b.w.event(&JvmEvent::on(
        ThreadId(3),
        at_ms(90),
        EventKind::Park {
            duration_ns: 6 * MS,
            blocker_class: ClassId(sync),
            timeout_ns: 0,
            stack: StackId(park),
            request: Default::default(),
        },
    ));
    b.build(1000)
}

#[test]
fn most_contended_monitor_names_its_class_sites_and_times() {
    let r = lock_report(&contention(), &EventFilter::default());
    assert_eq!(r.monitors.len(), 1);
    let m = &r.monitors[0];
    assert_eq!(m.class, "demo.Counter");
    assert_eq!(
        (m.count, m.total_ns, m.max_ns, m.objects),
        (5, 18 * MS, 7 * MS, 1)
    );
    assert_eq!(m.sites[0].site, "demo.Counter.increment:12");
    assert_eq!((m.sites[0].count, m.sites[0].total_ns), (4, 16 * MS));
    assert_eq!(
        m.sites[0].stack,
        ["demo.Counter.increment:12", "demo.Worker.run:30"]
    );
    assert_eq!(m.sites[1].site, "demo.Counter.get:20");
}

#[test]
fn waits_count_timeouts_and_parks_name_the_blocker() {
    let r = lock_report(&contention(), &EventFilter::default());
    let w = &r.waits[0];
    assert_eq!(w.class, "java.lang.Object");
    assert_eq!(
        (w.count, w.total_ns, w.with_timeout, w.timed_out),
        (3, 12 * MS, 2, 1)
    );
    assert_eq!(w.sites[0].site, "java.lang.Object.wait");
    let p = &r.parks[0];
    assert_eq!(
        p.blocker,
        "java.util.concurrent.locks.ReentrantLock$NonfairSync"
    );
    assert_eq!((p.count, p.total_ns), (1, 6 * MS));
}

#[test]
fn filters_select_by_type_thread_method_and_window() {
    let rec = contention();
    let by = |f: EventFilter| f.rows(&rec).len();
    assert_eq!(by(EventFilter::default()), 9);
    let types = EventType::parse_list("locks").unwrap();
    assert_eq!(
        by(EventFilter {
            types,
            ..Default::default()
        }),
        9
    );
    let wait = vec![EventType::Wait];
    assert_eq!(
        by(EventFilter {
            types: wait,
            ..Default::default()
        }),
        3
    );
    let thread = Some(ThreadMatcher::new("worker-2"));
    assert_eq!(
        by(EventFilter {
            thread,
            ..Default::default()
        }),
        3
    );
    let method = Some(ThreadMatcher::new("demo.Worker.run"));
    assert_eq!(
        by(EventFilter {
            method,
            ..Default::default()
        }),
        5
    );
    let window = EventFilter {
        from_s: Some(0.010),
        to_s: Some(0.060),
        ..Default::default()
    };
    assert_eq!(by(window), 4);
    assert!(EventType::parse_list("nonsense").is_err());
    assert_eq!("blocked".parse::<EventType>().unwrap(), EventType::Monitor);
}

#[test]
fn rows_carry_type_dependent_values_and_write_as_columns() {
    let rec = contention();
    let rows = EventFilter::default().rows(&rec);
    let first = &rows[0];
    assert_eq!(
        (first.kind, first.thread, first.duration_ns, first.value),
        (EventType::Monitor, 2, 3 * MS, 3)
    );
    assert_eq!(
        (first.subject.as_str(), first.site.as_str()),
        ("demo.Counter", "demo.Counter.increment:12")
    );
    let timed_out = rows.iter().find(|r| r.timed_out == Some(true)).unwrap();
    assert_eq!((timed_out.value, timed_out.time_s), (100, 0.060));
    let mut text = Vec::new();
    write_rows(&rows[..1], RowFormat::Text, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert_eq!(
        text,
        "# time_s thread duration_ns value type thread_name subject site\n\
         0.000000000 2 3000000 3 monitor worker-1 demo.Counter demo.Counter.increment:12\n"
    );
    let mut csv = Vec::new();
    write_rows(&rows[5..6], RowFormat::Csv, &mut csv).unwrap();
    assert_eq!(
        String::from_utf8(csv).unwrap().lines().nth(1).unwrap(),
        "0.060000000,1,4000000,100,wait,main,java.lang.Object,java.lang.Object.wait"
    );
}

#[test]
fn gc_pauses_and_their_share_of_wall_time() {
    let mut b = Builder::new();
    for (ms, d) in [(100, 10), (400, 30), (700, 20)] {
        b.w.event(&JvmEvent::global(at_ms(ms), EventKind::gc_pause(d * MS)));
    }
    let rec = b.build(2000);
    let r = gc_report(&rec, &EventFilter::default());
    assert_eq!(
        (r.count, r.total_ns, r.max_ns, r.mean_ns, r.wall_ns),
        (3, 60 * MS, 30 * MS, 20 * MS, 2000 * MS)
    );
    assert!((r.wall_percent - 3.0).abs() < 1e-9, "{}", r.wall_percent);
    assert_eq!(r.pauses[1].time_s, 0.4);
    // Thread filters do not hide GC; the window cuts both the pauses and the wall time.
    let f = EventFilter {
        thread: Some(ThreadMatcher::new("main")),
        from_s: Some(0.3),
        to_s: Some(0.8),
        ..Default::default()
    };
    let r = gc_report(&rec, &f);
    assert_eq!((r.count, r.total_ns, r.wall_ns), (2, 50 * MS, 500 * MS));
    assert!((r.wall_percent - 10.0).abs() < 1e-9);
}

/// `demo.Gen.fill` allocates byte[] (big) and `demo.Gen.name` allocates Strings;
/// objects 1..=4 are tracked and 1..=3 freed.
fn allocations() -> Recording {
    let mut b = Builder::new();
    let bytes = b.class("byte[]");
    let string = b.class("java.lang.String");
    let fill = b.stack(&[("demo.Gen.fill", 21), ("demo.Gen.run", 10)]);
    let fill2 = b.stack(&[("demo.Gen.fill", 21), ("demo.Main.main", 5)]);
    let name = b.stack(&[("demo.Gen.name", 30), ("demo.Gen.run", 11)]);
    let mut total = 0;
    let allocs = [
        (1, bytes, 4096, fill, 1),
        (2, bytes, 8192, fill2, 2),
        (3, string, 24, name, 3),
        (2, string, 24, name, 4),
        (3, string, 24, name, 0),
    ];
    for (i, (thread, class, size, stack, object)) in allocs.into_iter().enumerate() {
        total += size;
        b.w.event(&JvmEvent::on(
            ThreadId(thread),
            at_ms(i as u64),
            EventKind::Alloc {
                class: ClassId(class),
                size,
                stack: StackId(stack),
                object,
                allocated_total: total,
                weight: 0,
                request: Default::default(),
            },
        ));
    }
    // Frees: object 1 after 2 ms and 100 KB, 2 after 500 us and 0 bytes, 3 after 3 s.
    for (object, us, since) in [
        (1, 2_000, 100 * 1024),
        (2, 1_500, 0),
        (3, 3_002_000, 5 << 20),
    ] {
        let born_total: u64 = allocs[..object as usize].iter().map(|a| a.2).sum();
        b.w.event(&JvmEvent::global(
            START + us,
            EventKind::ObjectFree {
                object,
                allocated_total: born_total + since,
            },
        ));
    }
    b.build(4000)
}

#[test]
fn allocation_by_site_class_and_stack() {
    let rec = allocations();
    let site = alloc_report(&rec, &EventFilter::default(), AllocBy::Site);
    assert_eq!((site.bytes, site.count), (12_360, 5));
    assert_eq!(site.rows[0].key, "demo.Gen.fill:21");
    assert_eq!(
        (
            site.rows[0].bytes,
            site.rows[0].count,
            site.rows[0].top_class.as_str()
        ),
        (12_288, 2, "byte[]")
    );
    assert!((site.rows[0].percent - 12_288.0 * 100.0 / 12_360.0).abs() < 1e-9);
    let class = alloc_report(&rec, &EventFilter::default(), AllocBy::Class);
    assert_eq!(
        class
            .rows
            .iter()
            .map(|r| (r.key.as_str(), r.bytes, r.count))
            .collect::<Vec<_>>(),
        [("byte[]", 12_288, 2), ("java.lang.String", 72, 3)]
    );
    let stack = alloc_report(&rec, &EventFilter::default(), AllocBy::Stack);
    assert_eq!(stack.rows.len(), 3);
    assert_eq!(
        stack.rows[0].stack,
        ["demo.Gen.fill:21", "demo.Main.main:5"]
    );
    let workers = EventFilter {
        thread: Some(ThreadMatcher::new("worker-*")),
        ..Default::default()
    };
    assert_eq!(
        alloc_report(&rec, &workers, AllocBy::Class).bytes,
        8192 + 24 + 24 + 24
    );
}

#[test]
fn object_ages_in_time_and_bytes_by_class() {
    let rec = allocations();
    let r = age_report(&rec, &EventFilter::default());
    assert_eq!((r.freed, r.live), (3, 1));
    let bytes = r.rows.iter().find(|x| x.class == "byte[]").unwrap();
    assert_eq!((bytes.freed, bytes.live), (2, 0));
    // Object 1 lived 2 ms (allocated at 0 ms), object 2 lived 0.5 ms (allocated at 1 ms).
    assert_eq!(bytes.by_ns, [0, 0, 0, 1, 1, 0, 0, 0, 0]);
    assert_eq!((bytes.p50_ns, bytes.max_ns), (Some(500_000), Some(2 * MS)));
    assert_eq!(bytes.by_bytes, [1, 0, 0, 1, 0, 0, 0, 0]);
    assert_eq!(bytes.max_bytes, Some(100 * 1024));
    let strings = r
        .rows
        .iter()
        .find(|x| x.class == "java.lang.String")
        .unwrap();
    assert_eq!((strings.freed, strings.live), (1, 1));
    assert_eq!(strings.by_ns[7], 1, "3 s is in <10s");
    assert_eq!(strings.by_bytes[4], 1, "5 MB is in <10MB");
    // The free rows carry the age too.
    let frees = EventFilter {
        types: vec![EventType::Free],
        ..Default::default()
    }
    .rows(&rec);
    assert_eq!(
        frees
            .iter()
            .map(|r| (r.duration_ns, r.value))
            .collect::<Vec<_>>(),
        [(500_000, 0), (2 * MS, 100 * 1024), (3_000 * MS, 5 << 20)]
    );
    assert_eq!(frees[1].subject, "byte[]");
}

#[test]
fn user_events_count_and_intervals() {
    let mut b = Builder::new();
    b.user_def(1, "request");
    b.user_def(2, "phase");
    // Instants 10, 20, 40, 80 and 160 ms apart (times 0, 10, 30, 70, 150, 310).
    for ms in [0, 10, 30, 70, 150, 310] {
        b.w.event(&JvmEvent::on(
            ThreadId(2),
            at_ms(ms),
            EventKind::User {
                event: 1,
                kind: UserEventKind::Instant,
                value: ms as i64,
            },
        ));
    }
    for (ms, kind) in [
        (5, UserEventKind::Begin),
        (9, UserEventKind::End),
        (50, UserEventKind::Begin),
        (56, UserEventKind::End),
    ] {
        b.w.event(&JvmEvent::on(
            ThreadId(1),
            at_ms(ms),
            EventKind::User {
                event: 2,
                kind,
                value: 0,
            },
        ));
    }
    let rec = b.build(1000);
    let r = user_report(&rec, &EventFilter::default());
    let req = &r.rows[1];
    assert_eq!(req.name, "request");
    assert_eq!((req.count, req.instants, req.value_sum), (6, 6, 570));
    assert_eq!(
        (req.interval_min_ns, req.interval_max_ns),
        (Some(10 * MS), Some(160 * MS))
    );
    assert_eq!(req.interval_mean_ns, Some(62.0 * MS as f64));
    assert_eq!(
        (req.interval_p50_ns, req.interval_p99_ns),
        (Some(40 * MS), Some(160 * MS))
    );
    let phase = &r.rows[0];
    assert_eq!(
        (phase.name.as_str(), phase.count, phase.begins, phase.ends),
        ("phase", 2, 2, 2)
    );
    assert_eq!(
        (
            phase.interval_min_ns,
            phase.scoped_max_ns,
            phase.scoped_mean_ns
        ),
        (Some(45 * MS), Some(6 * MS), Some(5.0 * MS as f64))
    );
    let user = EventFilter {
        types: vec![EventType::User],
        ..Default::default()
    }
    .rows(&rec);
    assert_eq!(user.len(), 10);
    let end = user.iter().find(|r| r.user_kind == Some("end")).unwrap();
    assert_eq!((end.subject.as_str(), end.duration_ns), ("phase", 4 * MS));
}

#[test]
fn events_nest_into_traced_invocations() {
    let mut b = Builder::new();
    let main = b.method("demo.Main.main");
    let work = b.method("demo.Main.work");
    let counter = b.class("demo.Counter");
    let stack = b.stack(&[("demo.Main.work", 7)]);
    let ev = |kind, method, ms: u64| TraceEvent {
        kind,
        method,
        ticks: at_ms(ms),
        untraced: 0,
        cpu_ns: 0,
    };
    let events = vec![
        ev(TraceKind::Enter, MethodId(main), 0),
        ev(TraceKind::Enter, MethodId(work), 10),
        ev(TraceKind::Exit, MethodId(work), 20),
        ev(TraceKind::Enter, MethodId(work), 30),
        ev(TraceKind::Exit, MethodId(work), 40),
        ev(TraceKind::Exit, MethodId(main), 50),
    ];
    b.w.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events,
    });
    let blocked = |ms| {
        JvmEvent::on(
            ThreadId(1),
            at_ms(ms),
            EventKind::MonitorBlocked {
                duration_ns: MS,
                class: ClassId(counter),
                object: 1,
                owner: ThreadId(2),
                stack: StackId(stack),
                request: Default::default(),
            },
        )
    };
    b.w.event(&blocked(12));
    b.w.event(&blocked(25));
    b.w.event(&blocked(60));
    b.w.event(&JvmEvent::global(at_ms(15), EventKind::gc_pause(MS)));
    let rec = b.build(100);
    let tree = event_tree(&rec, &EventFilter::default());
    assert_eq!(tree.basis, TreeBasis::Traced);
    let gc = &tree.threads[0];
    assert_eq!((gc.thread, gc.loose.len()), (0, 1));
    let main_thread = &tree.threads[1];
    assert_eq!(main_thread.name, "main");
    let root = &main_thread.roots[0];
    assert_eq!(root.label, "demo.Main.main");
    assert_eq!(
        root.events.iter().map(|e| e.ns).collect::<Vec<_>>(),
        [25 * MS],
        "between the two calls of work"
    );
    assert_eq!(
        root.children.len(),
        1,
        "the second work call holds no event"
    );
    assert_eq!(
        (root.children[0].label.as_str(), root.children[0].start_ns),
        ("demo.Main.work", 10 * MS)
    );
    assert_eq!(root.children[0].events[0].ns, 12 * MS);
    assert_eq!(main_thread.loose.len(), 1, "after main returned");
    let text = tree.to_string();
    assert!(
        text.contains("thread main (#1)\n  demo.Main.main [0.000000s +50.0"),
        "{text}"
    );
    assert!(text.contains("    demo.Main.work [0.010000s"), "{text}");
    assert!(
        text.contains("      * 0.012000s monitor demo.Counter"),
        "{text}"
    );
}

#[test]
fn without_traces_events_nest_into_sample_intervals() {
    let mut b = Builder::new();
    let s1 = b.stack(&[("demo.Worker.step", 3), ("demo.Worker.run", 9)]);
    let s2 = b.stack(&[("demo.Worker.idle", 4), ("demo.Worker.run", 10)]);
    for (ms, stack) in [(0, s1), (10, s2), (20, s1)] {
        b.w.sample(&Sample {
            request: 0,
            thread: ThreadId(2),
            carrier: Default::default(),
            ticks: at_ms(ms),
            stack: StackId(stack),
            mode: SampleMode::Cpu,
            weight_ns: 10 * MS,
            state: 0,
        });
    }
    b.user_def(1, "tick");
    for ms in [3, 5, 14, 25] {
        b.w.event(&JvmEvent::on(
            ThreadId(2),
            at_ms(ms),
            EventKind::User {
                event: 1,
                kind: UserEventKind::Instant,
                value: 0,
            },
        ));
    }
    let rec = b.build(30);
    let tree = event_tree(&rec, &EventFilter::default());
    assert_eq!(tree.basis, TreeBasis::Sampled);
    let t = &tree.threads[0];
    let spans: Vec<(&str, usize)> = t
        .roots
        .iter()
        .map(|n| (n.label.as_str(), n.events.len()))
        .collect();
    assert_eq!(
        spans,
        [
            ("demo.Worker.step:3", 2),
            ("demo.Worker.idle:4", 1),
            ("demo.Worker.step:3", 1)
        ]
    );
    assert_eq!(
        t.roots[1].stack,
        ["demo.Worker.run:10", "demo.Worker.idle:4"]
    );
}

#[test]
fn timeline_lanes_have_sampled_states_event_intervals_and_gc_bars() {
    use jscope_format::thread_state::{ALIVE, BLOCKED_ON_MONITOR_ENTER, RUNNABLE};
    let mut b = Builder::new();
    let counter = b.class("demo.Counter");
    let s = b.stack(&[("demo.Worker.run", 9)]);
    // worker-1 runs for 30 ms, is blocked for 20, runs again; samples every 10 ms.
    for ms in (0..100).step_by(10) {
        let state = if (30..50).contains(&ms) {
            ALIVE | BLOCKED_ON_MONITOR_ENTER
        } else {
            ALIVE | RUNNABLE
        };
        b.w.sample(&Sample {
            request: 0,
            thread: ThreadId(2),
            carrier: Default::default(),
            ticks: at_ms(ms),
            stack: StackId(s),
            mode: SampleMode::Wall,
            weight_ns: 10 * MS,
            state,
        });
    }
    b.w.event(&JvmEvent::on(
        ThreadId(2),
        at_ms(31),
        EventKind::MonitorBlocked {
            duration_ns: 17 * MS,
            class: ClassId(counter),
            object: 1,
            owner: ThreadId(3),
            stack: StackId(s),
            request: Default::default(),
        },
    ));
    b.w.event(&JvmEvent::global(at_ms(60), EventKind::gc_pause(2 * MS)));
    b.w.event(&JvmEvent::global(at_ms(500), EventKind::gc_pause(2 * MS)));
    let mut rec = b.build(1000);
    rec.header.interval_ns = 10 * MS;
    let t = timeline(&rec, None, Some(0.2), 100);
    assert_eq!((t.from_ns, t.to_ns), (0, 200 * MS));
    assert_eq!(t.lanes.len(), 1);
    let lane = &t.lanes[0];
    assert_eq!(lane.name, "worker-1");
    let spans: Vec<(u64, u64, &str)> = lane
        .spans
        .iter()
        .map(|s| (s.start_ns / MS, s.end_ns / MS, s.state))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 30, "running"),
            (30, 50, "blocked"),
            (50, 110, "running")
        ],
        "the last sample holds two intervals"
    );
    assert_eq!(
        lane.intervals,
        [Span {
            start_ns: 31 * MS,
            end_ns: 48 * MS,
            state: "blocked"
        }]
    );
    assert_eq!(
        t.gc,
        [GcBar {
            start_ns: 60 * MS,
            duration_ns: 2 * MS,
            detail: Default::default(),
        }],
        "the second GC is outside the window"
    );
    assert_eq!(t.events.len(), 1);
    let capped = timeline(&rec, None, None, 0);
    assert_eq!(
        (capped.events.len(), capped.events_left_out, capped.gc.len()),
        (0, 1, 2)
    );
}

#[test]
fn snapshot_states_hold_for_the_snapshot_interval_not_the_sampling_one() {
    use jscope_format::thread_state::{ALIVE, SLEEPING, WAITING, WAITING_WITH_TIMEOUT};
    let mut b = Builder::new();
    let s = b.stack(&[("java.lang.Thread.sleep", 0)]);
    let asleep = ALIVE | WAITING | WAITING_WITH_TIMEOUT | SLEEPING;
    for (k, ms) in [0u64, 100, 200].into_iter().enumerate() {
        let interval_ns = if k == 0 { 0 } else { 100 * MS };
        let threads = vec![SnapshotThread {
            thread: ThreadId(3),
            carrier: Default::default(),
            state: asleep,
            stack: StackId(s),
        }];
        b.w.snapshot(&Snapshot {
            ticks: at_ms(ms),
            interval_ns,
            threads,
        });
    }
    let mut rec = b.build(1000);
    rec.header.interval_ns = 10 * MS;
    let t = timeline(&rec, None, None, 10);
    assert_eq!(t.lanes[0].name, "worker-2");
    assert_eq!(
        t.lanes[0].spans,
        [Span {
            start_ns: 0,
            end_ns: 400 * MS,
            state: "sleeping"
        }]
    );
}

#[test]
fn method_selects_stackless_events_by_their_invocation_or_sampled_stack() {
    let mut b = Builder::new();
    let main = b.method("demo.Main.main");
    let work = b.method("demo.Main.work");
    let ev = |kind, method, ms: u64| TraceEvent {
        kind,
        method,
        ticks: at_ms(ms),
        untraced: 0,
        cpu_ns: 0,
    };
    let events = vec![
        ev(TraceKind::Enter, MethodId(main), 0),
        ev(TraceKind::Enter, MethodId(work), 10),
        ev(TraceKind::Exit, MethodId(work), 20),
        ev(TraceKind::Exit, MethodId(main), 50),
    ];
    b.w.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events,
    });
    b.user_def(1, "step");
    for ms in [12, 25, 60] {
        b.w.event(&JvmEvent::on(
            ThreadId(1),
            at_ms(ms),
            EventKind::User {
                event: 1,
                kind: UserEventKind::Instant,
                value: ms as i64,
            },
        ));
    }
    let rec = b.build(100);
    let values = |m: &str| {
        let f = EventFilter {
            method: Some(ThreadMatcher::new(m)),
            ..Default::default()
        };
        f.rows(&rec).iter().map(|r| r.value).collect::<Vec<_>>()
    };
    assert_eq!(values("demo.Main.work"), [12]);
    assert_eq!(values("demo.Main.main"), [12, 25]);
    assert_eq!(values("*.Main.*"), [12, 25]);

    // Without traces, the stack sampled at or before the event; a free, its allocation's.
    let mut b = Builder::new();
    let s1 = b.stack(&[("demo.Worker.step", 3), ("demo.Worker.run", 9)]);
    let s2 = b.stack(&[("demo.Worker.idle", 4), ("demo.Worker.run", 10)]);
    for (ms, stack) in [(0, s1), (10, s2)] {
        b.w.sample(&Sample {
            request: 0,
            thread: ThreadId(2),
            carrier: Default::default(),
            ticks: at_ms(ms),
            stack: StackId(stack),
            mode: SampleMode::Cpu,
            weight_ns: 10 * MS,
            state: 0,
        });
    }
    b.user_def(1, "tick");
    let string = b.class("java.lang.String");
    for ms in [3, 14] {
        b.w.event(&JvmEvent::on(
            ThreadId(2),
            at_ms(ms),
            EventKind::User {
                event: 1,
                kind: UserEventKind::Instant,
                value: ms as i64,
            },
        ));
    }
    b.w.event(&JvmEvent::on(
        ThreadId(2),
        at_ms(15),
        EventKind::Alloc {
            class: ClassId(string),
            size: 24,
            stack: StackId(s2),
            object: 9,
            allocated_total: 24,
            weight: 0,
            request: Default::default(),
        },
    ));
    b.w.event(&JvmEvent::global(
        at_ms(40),
        EventKind::ObjectFree {
            object: 9,
            allocated_total: 48,
        },
    ));
    let rec = b.build(50);
    let kinds = |m: &str| {
        let f = EventFilter {
            method: Some(ThreadMatcher::new(m)),
            ..Default::default()
        };
        f.rows(&rec)
            .iter()
            .map(|r| (r.kind, r.value))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds("demo.Worker.step"), [(EventType::User, 3)]);
    assert_eq!(
        kinds("demo.Worker.idle"),
        [
            (EventType::User, 14),
            (EventType::Alloc, 24),
            (EventType::Free, 24)
        ]
    );
}

#[test]
fn estimated_totals_use_the_weights_or_the_sampling_interval() {
    // No weights and no interval: the sizes themselves.
    let rec = allocations();
    let site = alloc_report(&rec, &EventFilter::default(), AllocBy::Site);
    assert_eq!((site.est_bytes, site.est_objects), (12_360, 5));
    assert!(!site.weights_recorded);
    // Recorded weights.
    let mut b = Builder::new();
    let bytes = b.class("byte[]");
    let fill = b.stack(&[("demo.Gen.fill", 21)]);
    for (i, (size, weight)) in [(1000, 64_000), (1000, 66_000), (200_000, 200_500)]
        .into_iter()
        .enumerate()
    {
        b.w.event(&JvmEvent::on(
            ThreadId(2),
            at_ms(i as u64),
            EventKind::Alloc {
                class: ClassId(bytes),
                size,
                stack: StackId(fill),
                object: 0,
                allocated_total: 0,
                weight,
                request: Default::default(),
            },
        ));
    }
    let rec = b.build(10);
    let r = alloc_report(&rec, &EventFilter::default(), AllocBy::Class);
    assert!(r.weights_recorded);
    assert_eq!((r.bytes, r.est_bytes), (202_000, 330_500));
    // 64 + 66 objects of 1000 bytes and one of 200 000.
    assert_eq!(r.est_objects, 131);
    assert_eq!(r.rows[0].est_objects, 131);
    // Without weights, from the header's interval.
    let mut b = Builder::new();
    let bytes = b.class("byte[]");
    b.w.event(&JvmEvent::on(
        ThreadId(2),
        at_ms(1),
        EventKind::Alloc {
            class: ClassId(bytes),
            size: 24,
            stack: StackId::NONE,
            object: 0,
            allocated_total: 24,
            weight: 0,
            request: Default::default(),
        },
    ));
    let rec = b.build_with(10, &[("events.allocrate", "524288")]);
    let r = alloc_report(&rec, &EventFilter::default(), AllocBy::Class);
    assert_eq!(r.est_bytes, alloc_sample_weight(24, 524_288));
    assert_eq!(r.est_bytes, 524_288 + 12);
}

#[test]
fn live_objects_are_the_tracked_ones_never_freed() {
    let rec = allocations();
    let live = live_report(&rec, &EventFilter::default(), AllocBy::Site);
    // Object 4 (a String at demo.Gen.name) was never freed; object 0 is untracked.
    assert_eq!(live.count, 1);
    assert_eq!(live.rows.len(), 1);
    assert_eq!(
        (live.rows[0].key.as_str(), live.rows[0].top_class.as_str()),
        ("demo.Gen.name:30", "java.lang.String")
    );
}

#[test]
fn alloc_and_lock_weights_for_flame_graphs() {
    let mut b = Builder::new();
    let counter = b.class("demo.Counter");
    let sync = b.class("java.util.concurrent.locks.ReentrantLock$NonfairSync");
    let cond = b.class("java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject");
    let inc = b.stack(&[("demo.Counter.increment", 12)]);
    let lock = b.stack(&[("jdk.internal.misc.Unsafe.park", 0), ("demo.Q.put", 5)]);
    let wait = b.stack(&[("jdk.internal.misc.Unsafe.park", 0), ("demo.Q.take", 9)]);
    let fill = b.stack(&[("demo.Gen.fill", 21)]);
    let events = [
        (
            2,
            EventKind::MonitorBlocked {
                duration_ns: 5 * MS,
                class: ClassId(counter),
                object: 1,
                owner: ThreadId(3),
                stack: StackId(inc),
                request: Default::default(),
            },
        ),
        (
            3,
            EventKind::Park {
                duration_ns: 3 * MS,
                blocker_class: ClassId(sync),
                timeout_ns: 0,
                stack: StackId(lock),
                request: Default::default(),
            },
        ),
        (
            3,
            EventKind::Park {
                duration_ns: 10 * MS,
                blocker_class: ClassId(cond),
                timeout_ns: 0,
                stack: StackId(wait),
                request: Default::default(),
            },
        ),
        (
            2,
            EventKind::Alloc {
                class: ClassId(counter),
                size: 16,
                stack: StackId(fill),
                object: 0,
                allocated_total: 0,
                weight: 4096,
                request: Default::default(),
            },
        ),
    ];
    for (i, (thread, kind)) in events.into_iter().enumerate() {
        b.w.event(&JvmEvent::on(ThreadId(thread), at_ms(i as u64), kind));
    }
    let mut rec = b.build(10);
    let locks = weighted_stacks(&mut rec, &EventFilter::default(), EventWeight::Lock);
    assert_eq!(locks.total, 8 * MS, "the condition wait is no contention");
    assert_eq!(locks.counts[&(inc, 2)], 5 * MS);
    assert_eq!(locks.counts[&(lock, 3)], 3 * MS);
    let alloc = weighted_stacks(&mut rec, &EventFilter::default(), EventWeight::Alloc);
    assert_eq!(alloc.total, 4096);
    // The allocated class is the leaf frame, above the allocating method.
    let collapsed = crate::collapse(&rec, &alloc, Default::default());
    assert_eq!(
        collapsed.stacks,
        vec![(
            vec!["demo.Gen.fill".to_string(), "demo.Counter".to_string()],
            4096
        )]
    );
    let (&(leaf, thread), _) = alloc.counts.iter().next().unwrap();
    assert_ne!(leaf, fill);
    assert_eq!(thread, 2);
    assert_eq!(rec.stack(StackId(leaf))[0].kind, FrameKind::Class);
    let annotated = CollapseOptions {
        annotate: Annotation::Tiers,
        ..Default::default()
    };
    let collapsed = crate::collapse(&rec, &alloc, annotated);
    assert_eq!(collapsed.stacks[0].0[1], "demo.Counter_[i]");
    assert_eq!(EventWeight::parse("locks"), Some(EventWeight::Lock));
    assert_eq!(EventWeight::parse("cpu"), None);
}

#[test]
fn gc_details_and_concurrent_cycles() {
    let mut b = Builder::new();
    let g1 = b.string("G1 Young Generation");
    let cause = b.string("G1 Evacuation Pause");
    let conc = b.string("G1 Concurrent GC");
    let mark = b.string("No GC");
    let detailed = |collector, cause, duration_ns, concurrent| EventKind::Gc {
        duration_ns,
        collector: StringId(collector),
        cause: StringId(cause),
        generation: if concurrent { GC_OLD } else { GC_YOUNG },
        heap_before: 30 << 20,
        heap_after: 2 << 20,
        gc_id: 4,
        concurrent,
    };
    b.w.event(&JvmEvent::global(at_ms(1), EventKind::gc_pause(MS)));
    b.w.event(&JvmEvent::global(
        at_ms(2),
        detailed(g1, cause, 2 * MS, false),
    ));
    b.w.event(&JvmEvent::global(
        at_ms(3),
        detailed(conc, mark, 50 * MS, true),
    ));
    let rec = b.build(100);
    let r = gc_report(&rec, &EventFilter::default());
    assert_eq!((r.count, r.total_ns, r.max_ns), (2, 3 * MS, 2 * MS));
    assert_eq!(r.pauses.len(), 3);
    let d = &r.pauses[1].detail;
    assert_eq!(
        (
            d.collector.as_str(),
            d.cause.as_str(),
            d.generation.as_str()
        ),
        ("G1 Young Generation", "G1 Evacuation Pause", "young")
    );
    assert_eq!(
        (d.heap_before, d.heap_after, d.gc_id),
        (30 << 20, 2 << 20, 4)
    );
    assert!(r.pauses[2].detail.concurrent && r.pauses[0].detail == GcDetail::default());
    assert!(r.to_string().contains("concurrent cycles: 1"));
    // A pause without details serialises as before.
    let j = serde_json::to_value(&r.pauses[0]).unwrap();
    assert_eq!(j.as_object().unwrap().len(), 2, "{j}");
}

/// JFR's `jdk.ObjectAllocationSample` records the bytes a sample stands for but no
/// object size: `alloc` counted each as one object (94 objects for 34 MB) and its
/// weight as the sampled bytes.
#[test]
fn samples_without_an_object_size_are_not_counted_as_objects() {
    let mut b = Builder::new();
    let bytes = b.class("byte[]");
    let fill = b.stack(&[("demo.Gen.fill", 21)]);
    for (i, weight) in [500_000u64, 700_000].into_iter().enumerate() {
        b.w.event(&JvmEvent::on(
            ThreadId(2),
            at_ms(i as u64),
            EventKind::Alloc {
                class: ClassId(bytes),
                size: 0,
                stack: StackId(fill),
                object: 0,
                allocated_total: 0,
                weight,
                request: Default::default(),
            },
        ));
    }
    let rec = b.build(10);
    let r = alloc_report(&rec, &EventFilter::default(), AllocBy::Class);
    assert_eq!((r.count, r.est_bytes, r.est_objects), (2, 1_200_000, 0));
    assert_eq!((r.sizeless, r.rows[0].sizeless), (2, 2));
    let text = r.to_string();
    assert!(text.contains("objects unknown"), "{text}");
    assert!(text.contains("object sizes not recorded"), "{text}");
    let row = text.lines().find(|l| l.ends_with("byte[]")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["1200000", "-", "100.00", "2", "-", "byte[]"],
        "{text}"
    );
}

/// A native frame (a C function in `lib`), declared as the agent declares them.
fn native_frame(b: &mut Builder, id: u32, lib: &str, name: &str) -> Frame {
    let class = b.class(lib);
    let name = b.string(name);
    let empty = b.string("");
    b.w.method(&MethodDef {
        id: MethodId(id),
        class: ClassId(class),
        name: StringId(name),
        signature: StringId(empty),
        modifiers: 0x100,
    });
    Frame {
        method: MethodId(id),
        bci: -1,
        line: 0,
        kind: FrameKind::Native,
    }
}

/// A JNI leak (64 KiB in 64 blocks), a freed block, a realloc chain whose last
/// block is freed, and a native thread's leak.
fn native_memory() -> Recording {
    let mut b = Builder::new();
    let leak_c = native_frame(&mut b, 1001, "libapp.so", "leak_block");
    let free_c = native_frame(&mut b, 1002, "libapp.so", "churn_block");
    let grow_c = native_frame(&mut b, 1003, "libz.so", "grow_buffer");
    let thread_c = native_frame(&mut b, 1004, "libapp.so", "native_leaker");
    let java = |b: &mut Builder, label: &str| Frame {
        method: MethodId(b.method(label)),
        bci: 3,
        line: 12,
        kind: FrameKind::Interpreted,
    };
    let leak_java = java(&mut b, "demo.Native.leakPath");
    let churn_java = java(&mut b, "demo.Native.churnPath");
    let stacks = [
        vec![leak_c, leak_java],
        vec![free_c, churn_java],
        vec![grow_c, churn_java],
        vec![thread_c],
    ];
    for (i, s) in stacks.iter().enumerate() {
        b.w.stack(StackId(100 + i as u32), s);
    }
    let mut id = 0;
    let mut alloc = |b: &mut Builder, ms: u64, thread: u32, stack: u32, address: u64, call: u64| {
        id += 1;
        b.w.event(&JvmEvent::on(
            ThreadId(thread),
            at_ms(ms),
            EventKind::NativeAlloc {
                size: 1024,
                weight: 1024,
                address,
                call,
                id,
                stack: StackId(stack),
                request: jscope_format::RequestId::NONE,
            },
        ));
        id
    };
    let free = |b: &mut Builder, ms: u64, id: u64, address: u64| {
        b.w.event(&JvmEvent::global(
            at_ms(ms),
            EventKind::NativeFree { id, address },
        ));
    };
    for i in 0..64 {
        alloc(&mut b, 10 + i, 1, 100, 0x10_000 + i * 0x1000, NATIVE_MALLOC);
    }
    let churned = alloc(&mut b, 20, 2, 101, 0x90_000, NATIVE_CALLOC);
    free(&mut b, 21, churned, 0x90_000);
    // The chain: each realloc frees the block before it.
    let mut last = alloc(&mut b, 30, 2, 102, 0xa0_000, NATIVE_REALLOC);
    for step in 1..4 {
        free(&mut b, 30 + step, last, 0xa0_000 + (step - 1) * 0x100);
        last = alloc(
            &mut b,
            30 + step,
            2,
            102,
            0xa0_000 + step * 0x100,
            NATIVE_REALLOC,
        );
    }
    free(&mut b, 40, last, 0xa0_300);
    alloc(&mut b, 50, 3, 103, 0xb0_000, NATIVE_MALLOC);
    // A sample whose free the agent did not follow.
    b.w.event(&JvmEvent::on(
        ThreadId(3),
        at_ms(60),
        EventKind::NativeAlloc {
            size: 1024,
            weight: 1024,
            address: 0xc0_000,
            call: NATIVE_MALLOC,
            id: 0,
            stack: StackId(103),
            request: jscope_format::RequestId::NONE,
        },
    ));
    b.build_with(100, &[("nativemem.interval", "0")])
}

#[test]
fn native_leaks_are_the_blocks_never_freed_realloc_chains_included() {
    let rec = native_memory();
    let all = native_mem_report(&rec, &EventFilter::default(), NativeBy::Function, false);
    assert_eq!(all.bytes, (64 + 1 + 4 + 2) * 1024);
    assert_eq!(all.calls, 71);
    assert_eq!(
        all.freed_bytes,
        5 * 1024,
        "the churned block and the whole chain"
    );
    assert_eq!(all.by_call[0], ("malloc".to_string(), 66 * 1024));
    let leaks = native_mem_report(&rec, &EventFilter::default(), NativeBy::Caller, true);
    assert_eq!(
        leaks.bytes,
        65 * 1024,
        "the JNI leak and the native thread's"
    );
    assert_eq!(leaks.untracked, 1);
    let keys: Vec<(&str, u64)> = leaks
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.bytes))
        .collect();
    assert_eq!(
        keys,
        [
            ("demo.Native.leakPath", 64 * 1024),
            ("[no Java frame]", 1024)
        ]
    );
    assert_eq!(leaks.rows[0].site.function, "leak_block [libapp.so]");
    assert_eq!(leaks.rows[0].site.library, "libapp.so");
    assert_eq!(leaks.rows[0].calls, 64);
    let by_lib = native_mem_report(&rec, &EventFilter::default(), NativeBy::Library, false);
    let libs: Vec<&str> = by_lib.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(libs, ["libapp.so", "libz.so"]);
    let stacks = native_mem_report(&rec, &EventFilter::default(), NativeBy::Stack, true);
    assert_eq!(
        stacks.rows[0].stack,
        ["leak_block [libapp.so]", "demo.Native.leakPath:12"]
    );
    let text = leaks.to_string();
    assert!(
        text.starts_with("Native memory not freed: 65.0 KB in 65 blocks"),
        "{text}"
    );
    assert!(
        text.contains("1 samples whose frees were not followed"),
        "{text}"
    );
}

#[test]
fn a_window_leaks_what_it_allocated_and_did_not_free_before_its_end() {
    let mut rec = native_memory();
    // The chain's blocks of 31 and 32 ms (freed at 32 and 33) and the JNI
    // leak's blocks of those milliseconds.
    let window = EventFilter {
        from_s: Some(0.0305),
        to_s: Some(0.0325),
        ..Default::default()
    };
    let leaks = native_mem_report(&rec, &window, NativeBy::Function, true);
    let rows: Vec<(&str, u64)> = leaks
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.bytes))
        .collect();
    assert_eq!(
        rows,
        [
            ("leak_block [libapp.so]", 2048),
            ("grow_buffer [libz.so]", 1024)
        ],
        "the block realloc'ed at 32 ms was freed after the window"
    );
    let early = EventFilter {
        to_s: Some(0.015),
        ..Default::default()
    };
    assert_eq!(
        native_mem_report(&rec, &early, NativeBy::Function, true).bytes,
        5 * 1024
    );
    let flame = weighted_stacks(&mut rec, &EventFilter::default(), EventWeight::Leak);
    assert_eq!(flame.total, 65 * 1024);
    let all = weighted_stacks(&mut rec, &EventFilter::default(), EventWeight::NativeMem);
    assert_eq!(all.total, 71 * 1024);
    assert_eq!(EventWeight::parse("leak"), Some(EventWeight::Leak));
    assert_eq!(
        EventWeight::parse("nativelock"),
        Some(EventWeight::NativeLock)
    );
}

#[test]
fn native_lock_waits_are_listed_by_lock_beside_monitors() {
    let mut b = Builder::new();
    let site = native_frame(&mut b, 1001, "libapp.so", "contend_once");
    b.w.stack(StackId(100), &[site]);
    for (thread, ms, d) in [(2, 10, 3), (3, 20, 5), (2, 30, 1)] {
        b.w.event(&JvmEvent::on(
            ThreadId(thread),
            at_ms(ms),
            EventKind::NativeLock {
                duration_ns: d * MS,
                weight: d * MS,
                address: 0x7f00_0040,
                lock: NATIVE_MUTEX,
                stack: StackId(100),
                request: jscope_format::RequestId::NONE,
            },
        ));
    }
    let mut rec = b.build(100);
    let report = lock_report(&rec, &EventFilter::default());
    assert_eq!(report.native.len(), 1);
    let n = &report.native[0];
    assert_eq!(
        (
            n.function.as_str(),
            n.lock.as_str(),
            n.samples,
            n.total_ns,
            n.max_ns
        ),
        ("pthread_mutex_lock", "0x7f000040", 3, 9 * MS, 5 * MS)
    );
    assert_eq!(n.sites[0].site, "contend_once [libapp.so]");
    assert!(report.to_string().contains("Native locks (1, sampled):"));
    let flame = weighted_stacks(&mut rec, &EventFilter::default(), EventWeight::NativeLock);
    assert_eq!(flame.total, 9 * MS);
    let rows = EventFilter {
        types: EventType::parse_list("locks").unwrap(),
        ..Default::default()
    }
    .rows(&rec);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].subject, "pthread_mutex_lock 0x7f000040");
}

/// JVMs merged into one recording (`jscope merge`, `--jvm all`) number their
/// native samples alike: a free is its own JVM's, matched by id and address.
#[test]
fn merged_jvms_repeat_native_sample_ids_and_each_free_stays_its_own_jvms() {
    let first = native_memory();
    // The second JVM's sample 1, at an address of its own, freed before the end.
    let mut b = Builder::new();
    let other = native_frame(&mut b, 1001, "libother.so", "other_block");
    b.w.stack(StackId(100), &[other]);
    b.w.event(&JvmEvent::on(
        ThreadId(1),
        at_ms(5),
        EventKind::NativeAlloc {
            size: 1024,
            weight: 1024,
            address: 0xf0_000,
            call: NATIVE_MALLOC,
            id: 1,
            stack: StackId(100),
            request: jscope_format::RequestId::NONE,
        },
    ));
    b.w.event(&JvmEvent::global(
        at_ms(90),
        EventKind::NativeFree {
            id: 1,
            address: 0xf0_000,
        },
    ));
    let second = b.build_with(100, &[("nativemem.interval", "0")]);
    let mut merged = Interner::new(first);
    Remapper::new(&second, &mut merged, Threads::Apart).remap_into(&|t| t);
    let merged = merged.into_recording();
    let leaks = native_mem_report(&merged, &EventFilter::default(), NativeBy::Caller, true);
    assert_eq!(
        leaks.bytes,
        65 * 1024,
        "the first JVM's leaks, its sample 1 among them, and none of the second's"
    );
    let all = native_mem_report(&merged, &EventFilter::default(), NativeBy::Caller, false);
    assert_eq!((all.calls, all.freed_bytes), (72, 6 * 1024));
}

/// Two requests on two workers, one nested span inside the slow one; each
/// allocates and blocks on a monitor, and a third allocation serves none.
#[test]
fn request_filters_narrow_events_as_they_narrow_samples() {
    let mut b = Builder::new();
    let counter = b.class("demo.Counter");
    let fill = b.stack(&[("demo.Gen.fill", 3)]);
    let inc = b.stack(&[("demo.Counter.increment", 12)]);
    let alloc = |request: u64, weight| EventKind::Alloc {
        class: ClassId(counter),
        size: 16,
        stack: StackId(fill),
        object: 0,
        allocated_total: 0,
        weight,
        request: RequestId(request),
    };
    let blocked = |request: u64, duration_ns| EventKind::MonitorBlocked {
        duration_ns,
        class: ClassId(counter),
        object: 1,
        owner: ThreadId(1),
        stack: StackId(inc),
        request: RequestId(request),
    };
    let events = [
        (2, alloc(1, 100)),
        (2, blocked(1, 3 * MS)),
        (3, alloc(2, 1000)),
        (3, alloc(3, 10_000)),
        (3, blocked(3, 5 * MS)),
        (2, alloc(0, 100_000)),
    ];
    for (i, (thread, kind)) in events.into_iter().enumerate() {
        b.w.event(&JvmEvent::on(ThreadId(thread), at_ms(i as u64), kind));
    }
    let request = |id, duration_ns, parent| Request {
        id,
        thread: ThreadId(if id == 1 { 2 } else { 3 }),
        ticks: at_ms(0),
        duration_ns,
        parent,
        ..Request::default()
    };
    b.w.request(&request(1, 5 * MS, 0));
    b.w.request(&request(3, 50 * MS, 2));
    b.w.request(&request(2, 200 * MS, 0));
    let mut rec = b.build(10);
    let by = |requests: RequestFilter| EventFilter {
        requests,
        ..EventFilter::default()
    };
    let one = |id: &str| {
        by(RequestFilter {
            request: Some(id.into()),
            ..RequestFilter::default()
        })
    };
    let slow = by(RequestFilter {
        min_latency_ns: Some(100 * MS),
        ..RequestFilter::default()
    });
    let weight = |rec: &mut Recording, f: &EventFilter, what| weighted_stacks(rec, f, what).total;
    let everything = weight(&mut rec, &EventFilter::default(), EventWeight::Alloc);
    assert_eq!(everything, 111_100);
    assert_eq!(weight(&mut rec, &one("1"), EventWeight::Alloc), 100);
    assert_eq!(weight(&mut rec, &one("1"), EventWeight::Lock), 3 * MS);
    // Request 2 holds 3 nested in it: its allocations and lock waits count.
    assert_eq!(weight(&mut rec, &slow, EventWeight::Alloc), 11_000);
    assert_eq!(weight(&mut rec, &slow, EventWeight::Lock), 5 * MS);
    assert_eq!(weight(&mut rec, &one("1,3"), EventWeight::Alloc), 10_100);
    let rows = one("2").rows(&rec);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(one("9").select(&rec).is_empty());
}
