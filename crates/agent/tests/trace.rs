//! Exact method tracing inside real JVMs (JDK 17, and 25 when testkit finds it),
//! all under -Xverify:all: exact events of a known call structure, durations of
//! sleeping methods, thread CPU time, `exclude-library`, `subclasses-of`, tracing
//! every class of a real program (javac included) without changing its output,
//! and tracing started, changed and stopped through dynamic attach; all under
//! -Xcheck:jni too, whose warnings (on stdout) fail the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use jscope_format::{MethodId, Recording, TraceEvent, TraceKind};
use jscope_testkit::{
    agent_path, compile_fixtures, javas, jcmd, jcmd_agent_load, temp_dir, Child, Java,
};

const JVM_LIMIT: Duration = Duration::from_secs(240);

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_fixtures"))
}

fn java_command(java: &Java, options: Option<&str>, main: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(&java.bin);
    cmd.args(["-Xverify:all", "-Xcheck:jni"]);
    if let Some(options) = options {
        cmd.arg(format!("-agentpath:{}={options}", agent_path().display()));
    }
    cmd.arg("-cp")
        .arg(classes())
        .arg(main)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn run(java: &Java, options: Option<&str>, main: &str, args: &[&str]) -> Output {
    let out = Child::spawn(&mut java_command(java, options, main, args)).finish(JVM_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("VerifyError") && !stderr.contains("Exception"),
        "JDK {}: {main} with {options:?} failed: {stderr}",
        java.major
    );
    // -Xcheck:jni prints its warnings on stdout.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("WARNING"),
        "JDK {}: -Xcheck:jni complained: {stdout}",
        java.major
    );
    out
}

/// Runs `main` traced with `options` (plus a fresh file) and reads the recording.
fn record(
    java: &Java,
    name: &str,
    options: &str,
    main: &str,
    args: &[&str],
) -> (Recording, Output) {
    let file = temp_dir(&format!("trace-{name}-{}", java.major)).join("out.jsc");
    let options = format!("{options},file={}", file.display());
    let out = run(java, Some(&options), main, args);
    let rec = Recording::read_file(&file).expect("readable recording");
    assert!(
        rec.damage.is_none() && rec.end_ticks.is_some(),
        "JDK {}: incomplete recording",
        java.major
    );
    (rec, out)
}

/// Each thread's events (by thread name), in recording order.
fn events_by_thread(rec: &Recording) -> BTreeMap<String, Vec<TraceEvent>> {
    let mut out: BTreeMap<String, Vec<TraceEvent>> = BTreeMap::new();
    for batch in &rec.traces {
        let name = rec.thread(batch.thread).map_or("?", |t| t.name.as_str());
        out.entry(name.to_string())
            .or_default()
            .extend(&batch.events);
    }
    out
}

/// One completed call: (method label, enter event, exit event).
type Call = (String, TraceEvent, TraceEvent);

/// Pairs enters with exits, asserting that every exit closes the innermost open call.
fn calls(rec: &Recording, events: &[TraceEvent]) -> Vec<Call> {
    let mut open: Vec<TraceEvent> = Vec::new();
    let mut done = Vec::new();
    for e in events {
        if e.kind == TraceKind::Enter {
            open.push(*e);
            continue;
        }
        let enter = open
            .pop()
            .unwrap_or_else(|| panic!("exit without enter: {e:?}"));
        assert_eq!(
            enter.method,
            e.method,
            "exit of {} closes {}",
            rec.method_label(e.method),
            rec.method_label(enter.method)
        );
        assert!(
            e.ticks >= enter.ticks,
            "exit {e:?} before its enter {enter:?}"
        );
        done.push((rec.method_label(e.method), enter, *e));
    }
    assert!(open.is_empty(), "calls never closed: {open:?}");
    done
}

/// (enters, normal exits, exits by exception) per method label.
fn counts(calls: &[Call]) -> BTreeMap<String, (u32, u32, u32)> {
    let mut out: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    for (label, _, exit) in calls {
        let c = out.entry(label.clone()).or_default();
        c.0 += 1;
        match exit.kind {
            TraceKind::Throw => c.2 += 1,
            _ => c.1 += 1,
        }
    }
    out
}

fn counter(rec: &Recording, name: &str) -> u64 {
    *rec.counters
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name}: {:?}", rec.counters))
}

#[test]
fn a_known_call_structure_gives_exactly_its_events() {
    for java in javas() {
        let (rec, out) = record(&java, "calls", "trace=TraceCalls", "TraceCalls", &[]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "fib 55 caught 1\n");
        let threads = events_by_thread(&rec);
        assert_eq!(threads.len(), 2, "JDK {}: {:?}", java.major, threads.keys());
        let main = counts(&calls(&rec, &threads["main"]));
        let expected: BTreeMap<String, (u32, u32, u32)> = [
            ("TraceCalls.main", (1, 1, 0)),
            ("TraceCalls.fib", (177, 177, 0)),
            ("TraceCalls.catcher", (1, 1, 0)),
            ("TraceCalls.thrower", (4, 0, 4)),
            ("TraceCalls.spawn", (1, 1, 0)),
            ("TraceCalls.sleepMs", (3, 3, 0)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(main, expected, "JDK {}", java.major);
        let worker = counts(&calls(&rec, &threads["traced-worker"]));
        assert_eq!(worker["TraceCalls.worker"], (1, 1, 0));
        assert_eq!(worker["TraceCalls.leaf"], (2, 2, 0));
        assert!(rec
            .traces
            .iter()
            .flat_map(|b| &b.events)
            .all(|e| e.untraced == 0));
        for name in [
            "trace.events_dropped",
            "trace.unmatched_exits",
            "trace.repaired_enters",
        ] {
            assert_eq!(counter(&rec, name), 0, "{name}");
        }
        assert_eq!(counter(&rec, "trace.events_written"), 2 * (187 + 3));
        let cost: u64 = rec
            .header
            .extra("trace.probe_cost_ns")
            .unwrap()
            .parse()
            .unwrap();
        assert!(cost > 0 && cost < 5_000, "probe cost {cost} ns");
    }
}

#[test]
fn count_untraced_gives_each_entry_the_calls_since_the_previous_event() {
    for java in javas() {
        let config = temp_dir(&format!("trace-count-{}", java.major)).join("trace.conf");
        let rules =
            "count-untraced TraceCalls\ninclude TraceCalls catcher\ninclude TraceCalls sleepMs\n";
        std::fs::write(&config, rules).unwrap();
        let options = format!("traceconfig={}", config.display());
        let (rec, _) = record(&java, "count", &options, "TraceCalls", &[]);
        let threads = events_by_thread(&rec);
        assert_eq!(
            threads.keys().collect::<Vec<_>>(),
            ["main"],
            "JDK {}",
            java.major
        );
        let enters: Vec<(String, u32)> = threads["main"]
            .iter()
            .filter(|e| e.kind == TraceKind::Enter)
            .map(|e| (rec.method_label(e.method), e.untraced))
            .collect();
        let expected = [
            ("TraceCalls.catcher", 1 + 177), // main, then fib(10)'s calls
            ("TraceCalls.sleepMs", 4 + 1),   // thrower 4 times, spawn
            ("TraceCalls.sleepMs", 0),
            ("TraceCalls.sleepMs", 0),
        ]
        .map(|(m, n)| (m.to_string(), n));
        assert_eq!(enters, expected, "JDK {}", java.major);
        assert_eq!(counter(&rec, "trace.methods_instrumented"), 2);
        assert_eq!(counter(&rec, "trace.methods_counting"), 7);
    }
}

#[test]
fn bad_trace_options_print_one_line_and_the_program_runs_untraced() {
    let java = &javas()[0];
    let config = temp_dir("trace-bad").join("trace.conf");
    std::fs::write(&config, "include TraceCalls\n").unwrap();
    let cases = [
        (
            format!("traceconfig={}", config.display()),
            "trace config line 1: cannot read `include TraceCalls`",
        ),
        (
            "traceconfig=/nonexistent/t.conf".to_string(),
            "cannot read trace config /nonexistent/t.conf",
        ),
        ("trace=;".to_string(), "empty trace pattern"),
        (
            "trace=X,tracebuffer=1".to_string(),
            "bad number `1` for `tracebuffer`",
        ),
    ];
    for (options, message) in cases {
        let out = Child::spawn(&mut java_command(java, Some(&options), "TraceCalls", &[]))
            .finish(JVM_LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("jscope: "))
            .collect();
        assert_eq!(lines.len(), 1, "{options}: {stderr}");
        assert!(
            lines[0].contains(message) && lines[0].ends_with("profiling is disabled"),
            "{}",
            lines[0]
        );
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "fib 55 caught 1\n");
    }
}

/// The caller's own measurement of each sleepMs call (System.nanoTime around it,
/// printed on stderr as `slept MS NS`).
fn measured_sleeps(out: &Output) -> Vec<u64> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("slept "))
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn sleeping_methods_get_their_durations() {
    for java in javas() {
        let options = "trace=TraceCalls#sleepMs,tracecpu";
        let (rec, out) = record(&java, "sleep", options, "TraceCalls", &[]);
        let threads = events_by_thread(&rec);
        let sleeps = calls(&rec, &threads["main"]);
        let measured = measured_sleeps(&out);
        assert_eq!((sleeps.len(), measured.len()), (3, 3));
        assert!(rec.traces.iter().all(|b| b.has_cpu));
        for (i, (_, enter, exit)) in sleeps.iter().enumerate() {
            // Thread.sleep never returns early, and the traced call lies inside
            // the caller's measurement of it (same clock, to within the TSC
            // mapping's few microseconds), however loaded the machine is.
            let ms = (i + 1) as u64 * 1_000_000;
            let wall = rec.ticks_to_ns(exit.ticks) - rec.ticks_to_ns(enter.ticks);
            let (low, high) = (ms, measured[i] + 50_000);
            assert!(
                (low..high).contains(&wall),
                "JDK {}: sleepMs({}) took {wall} ns, the caller measured {}",
                java.major,
                i + 1,
                measured[i]
            );
            let cpu = exit.cpu_ns - enter.cpu_ns;
            assert!(
                cpu > 0 && cpu < wall / 2,
                "a sleeping thread uses little CPU: {cpu} of {wall} ns"
            );
        }
    }
}

/// Per call of `label` on `thread`: the event column's difference between exit
/// and enter (a counter's events under `tracecounter=`).
fn counted_per_call(rec: &Recording, thread: &[TraceEvent], label: &str) -> Vec<u64> {
    calls(rec, thread)
        .iter()
        .filter(|(l, _, _)| l == label)
        .map(|(_, enter, exit)| exit.cpu_ns - enter.cpu_ns)
        .collect()
}

#[test]
fn tracecounter_counts_each_calls_page_faults() {
    const ROUNDS: usize = 100;
    const PAGES: f64 = 64.0;
    let java = &javas()[0];
    let options = "trace=PageTouch#touch;PageTouch#spin,tracecounter=page-faults";
    let (rec, out) = record(java, "counter", options, "PageTouch", &["100"]);
    assert_eq!(rec.header.extra("trace.counter"), Some("page-faults"));
    assert_eq!(rec.header.extra("trace.cpu"), Some("false"));
    let threads = events_by_thread(&rec);
    let touch = counted_per_call(&rec, &threads["main"], "PageTouch.touch");
    let spin = counted_per_call(&rec, &threads["main"], "PageTouch.spin");
    assert_eq!((touch.len(), spin.len()), (ROUNDS, ROUNDS));
    assert!(rec.traces.iter().all(|b| b.has_cpu));
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    // Every page of a fresh buffer faults once on its first write.
    assert!(
        mean(&touch) >= 0.8 * PAGES,
        "touch: {} page faults per call, {touch:?}",
        mean(&touch)
    );
    assert!(
        mean(&spin) < 1.0,
        "spin: {} per call, {spin:?}",
        mean(&spin)
    );
    eprintln!(
        "page faults per call: touch {}, spin {}",
        mean(&touch),
        mean(&spin)
    );
    assert!(jscope_lines(&out).is_empty(), "{:?}", jscope_lines(&out));
}

/// The agent's `jscope: ` lines on stderr but the one naming the recording.
fn jscope_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("jscope: ") && !l.starts_with("jscope: recording "))
        .map(String::from)
        .collect()
}

#[test]
fn a_missing_hardware_counter_is_one_line_and_tracing_goes_on() {
    let java = &javas()[0];
    let available = jscope_agent::native::perf::open_counter(
        jscope_agent::native::perf::PerfKind::Instructions,
    )
    .map(|fd| {
        // SAFETY: our own fd.
        unsafe { libc::close(fd) };
    })
    .is_ok();
    let options = "trace=PageTouch#touch;PageTouch#spin,tracecounter=instructions";
    let (rec, out) = record(java, "no-pmu", options, "PageTouch", &["20"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = jscope_lines(&out);
    let threads = events_by_thread(&rec);
    let main = &threads["main"];
    assert_eq!(counted_per_call(&rec, main, "PageTouch.touch").len(), 20);
    assert_eq!(counted_per_call(&rec, main, "PageTouch.spin").len(), 20);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rounds 20 true\n");
    if available {
        // A PMU: the counter is recorded and instructions are counted.
        assert!(lines.is_empty(), "{stderr}");
        assert_eq!(rec.header.extra("trace.counter"), Some("instructions"));
        let spin = counted_per_call(&rec, main, "PageTouch.spin");
        assert!(spin.iter().all(|&n| n > 1000), "{spin:?}");
        return;
    }
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("jscope: tracecounter=instructions: ")
            && lines[0].ends_with("tracing runs on without the counter"),
        "{}",
        lines[0]
    );
    assert_eq!(rec.header.extra("trace.counter"), None);
    assert!(rec.traces.iter().all(|b| !b.has_cpu));
}

/// (thread name, caller label or "-", callee label).
type PairLabel = (String, String, String);

/// Calls, total, min and max ns of a pair over all CallAggregate records.
#[derive(Debug, Clone, Copy)]
struct Totals {
    calls: u64,
    total: u64,
    min: u64,
    max: u64,
}

fn aggregate_totals(rec: &Recording) -> BTreeMap<PairLabel, Totals> {
    let mut totals: BTreeMap<PairLabel, Totals> = BTreeMap::new();
    for agg in &rec.call_aggregates {
        let thread = rec.thread(agg.thread).map_or("?", |t| t.name.as_str());
        for p in &agg.pairs {
            let caller = match p.caller {
                MethodId::NONE => "-".to_string(),
                id => rec.method_label(id),
            };
            let key = (thread.to_string(), caller, rec.method_label(p.callee));
            let t = totals.entry(key).or_insert(Totals {
                calls: 0,
                total: 0,
                min: u64::MAX,
                max: 0,
            });
            t.calls += p.calls;
            t.total += p.total_ns;
            t.min = t.min.min(p.min_ns);
            t.max = t.max.max(p.max_ns);
        }
    }
    totals
}

#[test]
fn aggregate_mode_keeps_caller_callee_totals_per_thread() {
    for java in javas() {
        let (rec, out) = record(&java, "agg", "trace=TraceCalls,traceagg", "TraceCalls", &[]);
        assert!(rec.traces.is_empty(), "no events in aggregate mode");
        let totals = aggregate_totals(&rec);
        let calls: BTreeMap<(&str, &str, &str), u64> = totals
            .iter()
            .map(|((t, a, b), v)| ((t.as_str(), a.as_str(), b.as_str()), v.calls))
            .collect();
        let expected: BTreeMap<(&str, &str, &str), u64> = [
            (("main", "-", "TraceCalls.main"), 1),
            (("main", "TraceCalls.main", "TraceCalls.fib"), 1),
            (("main", "TraceCalls.fib", "TraceCalls.fib"), 176),
            (("main", "TraceCalls.main", "TraceCalls.catcher"), 1),
            (("main", "TraceCalls.catcher", "TraceCalls.thrower"), 1),
            (("main", "TraceCalls.thrower", "TraceCalls.thrower"), 3),
            (("main", "TraceCalls.main", "TraceCalls.spawn"), 1),
            (("main", "TraceCalls.main", "TraceCalls.sleepMs"), 3),
            (("traced-worker", "-", "TraceCalls.worker"), 1),
            (("traced-worker", "TraceCalls.worker", "TraceCalls.leaf"), 2),
        ]
        .into_iter()
        .collect();
        assert_eq!(calls, expected, "JDK {}", java.major);
        let sleeps = totals[&(
            "main".into(),
            "TraceCalls.main".into(),
            "TraceCalls.sleepMs".into(),
        )];
        // Within what the caller measured around each call (see the events test).
        let (ms, slack, m) = (1_000_000, 50_000, measured_sleeps(&out));
        let sum: u64 = m.iter().sum();
        let (shortest, longest) = (*m.iter().min().unwrap(), *m.iter().max().unwrap());
        assert!(
            (6 * ms..sum + slack).contains(&sleeps.total),
            "{sleeps:?} {m:?}"
        );
        assert!(
            (ms..shortest + slack).contains(&sleeps.min),
            "{sleeps:?} {m:?}"
        );
        assert!(
            (3 * ms..longest + slack).contains(&sleeps.max),
            "{sleeps:?} {m:?}"
        );
        assert!(counter(&rec, "trace.pairs_written") >= 10);
    }
}

#[test]
fn exclude_library_records_only_library_calls_made_by_the_application() {
    for java in javas() {
        let config = temp_dir(&format!("trace-lib-{}", java.major)).join("trace.conf");
        std::fs::write(
            &config,
            "exclude-library\ninclude LibCalls *\ninclude java.util.* *\n",
        )
        .unwrap();
        let (rec, out) = record(
            &java,
            "lib",
            &format!("traceconfig={}", config.display()),
            "LibCalls",
            &[],
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "first 0 last 19\n");
        let threads = events_by_thread(&rec);
        let main = &threads["main"];
        calls(&rec, main); // still nested
        let mut open: Vec<String> = Vec::new();
        let mut library_calls = 0;
        for e in main {
            let label = rec.method_label(e.method);
            if e.kind != TraceKind::Enter {
                open.pop();
                continue;
            }
            if label.starts_with("java.") {
                let caller = open.last().map(String::as_str).unwrap_or("");
                assert!(
                    caller.starts_with("LibCalls."),
                    "JDK {}: {label} recorded under {caller}",
                    java.major
                );
                library_calls += 1;
            }
            open.push(label);
        }
        assert!(
            library_calls >= 3,
            "ArrayList.<init>, add, Collections.sort, get..."
        );
        let callbacks: Vec<u32> = main
            .iter()
            .filter(|e| {
                e.kind == TraceKind::Enter && rec.method_label(e.method) == "LibCalls.byValue"
            })
            .map(|e| e.untraced)
            .collect();
        assert!(!callbacks.is_empty());
        assert!(
            callbacks[0] > 0,
            "the sort's own calls before the first callback are counted: {callbacks:?}"
        );
        let untraced: u64 = main.iter().map(|e| u64::from(e.untraced)).sum();
        assert!(untraced > callbacks.len() as u64, "{untraced}");
    }
}

#[test]
fn subclasses_of_selects_a_class_and_its_descendants() {
    for java in javas() {
        let config = temp_dir(&format!("trace-sub-{}", java.major)).join("trace.conf");
        std::fs::write(&config, "subclasses-of Shapes$Shape area\n").unwrap();
        let (rec, out) = record(
            &java,
            "sub",
            &format!("traceconfig={}", config.display()),
            "Shapes",
            &[],
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "total 115\n");
        let main = counts(&calls(&rec, &events_by_thread(&rec)["main"]));
        let labels: Vec<&str> = main.keys().map(String::as_str).collect();
        assert_eq!(
            labels,
            [
                "Shapes$BigSquare.area",
                "Shapes$Circle.area",
                "Shapes$Square.area"
            ],
            "JDK {}",
            java.major
        );
        assert_eq!(
            main["Shapes$Square.area"],
            (2, 2, 0),
            "BigSquare's super.area() and Square(2)"
        );
    }
}

#[test]
fn tracing_every_class_keeps_a_real_programs_output() {
    for java in javas() {
        let work = temp_dir(&format!("trace-all-work-{}", java.major));
        let plain = run(
            &java,
            None,
            "Workload",
            &[work.join("plain").to_str().unwrap()],
        );
        let (rec, traced) = record(
            &java,
            "all",
            "trace=*",
            "Workload",
            &[work.join("traced").to_str().unwrap()],
        );
        let expected = String::from_utf8_lossy(&plain.stdout);
        assert_eq!(
            String::from_utf8_lossy(&traced.stdout),
            expected,
            "JDK {}",
            java.major
        );
        if java.major == 17 {
            assert!(expected.contains("javac rc=0 classes=48"), "{expected}");
        }
        assert!(counter(&rec, "trace.classes_instrumented") > 1000);
        assert!(counter(&rec, "trace.methods_instrumented") > 10_000);
        assert_eq!(counter(&rec, "trace.class_errors"), 0);
        assert_eq!(counter(&rec, "trace.retransform_errors"), 0);
        assert!(counter(&rec, "trace.events_written") > 100_000);
        let traced_jdk = rec.traces.iter().flat_map(|b| &b.events).any(|e| {
            rec.method_label(e.method)
                .starts_with("java.util.regex.Pattern.")
        });
        assert!(traced_jdk, "JDK methods are traced too");
    }
}

/// Loads the agent into `pid` with `options` and checks that it started.
fn attach(java: &Java, pid: u32, options: &str) {
    let text = jcmd_agent_load(&jcmd(java).expect("jcmd"), pid, options);
    assert!(
        text.contains("return code: 0"),
        "attach `{options}`: {text}"
    );
}

#[test]
fn attach_starts_changes_and_stops_tracing_in_a_running_jvm() {
    let javas: Vec<Java> = javas().into_iter().filter(|j| jcmd(j).is_some()).collect();
    assert!(!javas.is_empty(), "no JDK with jcmd found");
    for java in javas {
        let file = temp_dir("trace-attach").join("attached.jsc");
        let mut cmd = java_command(&java, None, "Loop", &[]);
        let mut jvm = Child::spawn(&mut cmd);
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(jvm.0.stdout.as_mut().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready, "ready\n");
        attach(
            &java,
            jvm.id(),
            &format!("trace=Loop#a,file={}", file.display()),
        );
        std::thread::sleep(Duration::from_millis(400));
        attach(&java, jvm.id(), "trace=Loop#b");
        std::thread::sleep(Duration::from_millis(400));
        attach(&java, jvm.id(), "tracestop");
        std::thread::sleep(Duration::from_millis(500));
        attach(&java, jvm.id(), "stop");
        drop(jvm);
        let rec = Recording::read_file(&file).unwrap();
        assert!(rec.end_ticks.is_some());
        let events = &events_by_thread(&rec)["main"];
        let calls = calls(&rec, events);
        let ticks_of = |label: &str| -> Vec<u64> {
            calls
                .iter()
                .filter(|c| c.0 == label)
                .map(|c| c.1.ticks)
                .collect()
        };
        let (a, b) = (ticks_of("Loop.a"), ticks_of("Loop.b"));
        assert_eq!(a.len() + b.len(), calls.len(), "only a and b are traced");
        assert!(
            a.len() > 50 && b.len() > 50,
            "JDK {}: a {} b {}",
            java.major,
            a.len(),
            b.len()
        );
        assert!(
            a.iter().max() < b.iter().min(),
            "the new filters replace the old ones"
        );
        let quiet_ns = rec.end_ticks.unwrap() - events.last().unwrap().ticks;
        assert!(
            quiet_ns > 300_000_000,
            "no events after tracestop ({quiet_ns} ns before the end)"
        );
    }
}

#[test]
fn each_attached_recording_counts_only_its_own_tracing() {
    let java = javas()
        .into_iter()
        .find(|j| jcmd(j).is_some())
        .expect("jcmd");
    let dir = temp_dir("trace-counters");
    let mut jvm = Child::spawn(&mut java_command(&java, None, "Loop", &[]));
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(jvm.0.stdout.as_mut().unwrap()),
        &mut ready,
    )
    .unwrap();
    let file = |i: usize| dir.join(format!("r{i}.jsc"));
    for i in 0..3 {
        attach(
            &java,
            jvm.id(),
            &format!("trace=Loop,file={}", file(i).display()),
        );
        std::thread::sleep(Duration::from_millis(300));
        attach(&java, jvm.id(), "stop");
    }
    attach(
        &java,
        jvm.id(),
        &format!("mode=wall,file={}", file(3).display()),
    );
    let refused = jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "tracestop");
    assert!(refused.contains("return code: -1"), "{refused}");
    std::thread::sleep(Duration::from_millis(200));
    attach(&java, jvm.id(), "stop");
    let _ = jvm.0.kill();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut jvm.0.stderr.take().unwrap(), &mut stderr).unwrap();
    // Was `jscope: tracing: tracing is not running`.
    assert!(
        stderr
            .lines()
            .any(|l| l == "jscope: tracing is not running"),
        "{stderr}"
    );
    drop(jvm);
    for i in 0..3 {
        let rec = Recording::read_file(&file(i)).unwrap();
        // Only main runs Loop's code; the counter added up over the
        // recordings (1, 2, 3).
        assert_eq!(events_by_thread(&rec).len(), 1);
        assert_eq!(counter(&rec, "trace.threads"), 1, "recording {i}");
    }
    let untraced = Recording::read_file(&file(3)).unwrap();
    let trace_counters: Vec<_> = untraced
        .counters
        .keys()
        .filter(|k| k.starts_with("trace."))
        .collect();
    assert!(
        trace_counters.is_empty(),
        "a recording without tracing: {trace_counters:?}"
    );
}

/// Enters of `label` over every thread.
fn enters_of(rec: &Recording, label: &str) -> u64 {
    rec.traces
        .iter()
        .flat_map(|b| &b.events)
        .filter(|e| e.kind == TraceKind::Enter && rec.method_label(e.method) == label)
        .count() as u64
}

#[test]
fn threads_outrunning_the_writer_wait_and_lose_no_call() {
    // Four threads in a tight loop over 1024-event buffers: each fills its
    // buffer in microseconds, far faster than the writer is woken.
    let (threads, per_thread) = (4u64, 200_000u64);
    let args = [threads.to_string(), per_thread.to_string()];
    let args = [args[0].as_str(), args[1].as_str()];
    let total = threads * per_thread;
    for java in javas() {
        let options = "trace=HotThreads#empty,tracebuffer=1024";
        let (rec, out) = record(&java, "wait", options, "HotThreads", &args);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("calls {total}\n")
        );
        assert_eq!(rec.header.extra("trace.overflow"), Some("wait"));
        assert_eq!(
            counter(&rec, "trace.events_dropped"),
            0,
            "JDK {}",
            java.major
        );
        assert_eq!(
            enters_of(&rec, "HotThreads.empty"),
            total,
            "JDK {}",
            java.major
        );
        assert_eq!(counter(&rec, "trace.events_written"), 2 * total);
        for (name, events) in events_by_thread(&rec) {
            let n = counts(&calls(&rec, &events));
            assert_eq!(
                n["HotThreads.empty"],
                (per_thread as u32, per_thread as u32, 0),
                "{name}"
            );
        }
        assert!(
            counter(&rec, "trace.waits") > 0 && counter(&rec, "trace.waited_ns") > 0,
            "JDK {}: the loop never outran the writer: {:?}",
            java.major,
            rec.counters
        );

        // Dropping instead: the program runs, and what is missing is counted.
        let options = "trace=HotThreads#empty,tracebuffer=1024,traceoverflow=drop";
        let (rec, out) = record(&java, "drop", options, "HotThreads", &args);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("calls {total}\n")
        );
        assert_eq!(rec.header.extra("trace.overflow"), Some("drop"));
        let written = counter(&rec, "trace.events_written");
        let in_file: u64 = rec.traces.iter().map(|b| b.events.len() as u64).sum();
        assert_eq!(written, in_file);
        assert_eq!(
            written + counter(&rec, "trace.events_dropped"),
            2 * total,
            "JDK {}: {:?}",
            java.major,
            rec.counters
        );
        assert_eq!(counter(&rec, "trace.waits"), 0);
    }
}
