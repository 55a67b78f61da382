//! All of the process in cpu mode (issue 11): every thread sampled, native frames
//! under Java frames, perf events as sampling sources. The fixtures (Java classes
//! and a JNI library, tests/native_fixtures) are built during the run with javac
//! and gcc, and run under -Xcheck:jni on every JDK jscope_testkit::javas() finds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use jscope_agent::native::perf::{self, PerfKind};
use jscope_format::{FrameKind, Recording, SampleMode, StackId};
use jscope_testkit::{compile_fixtures, java_with_agent, javas, temp_dir, Child, Java};

const JVM_LIMIT: Duration = Duration::from_secs(120);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_fixtures")
}

fn classes() -> PathBuf {
    compile_fixtures(&fixtures())
}

/// libspin.so, built once per test process with frame pointers.
fn libspin() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = temp_dir("libspin").join("libspin.so");
        let include = jscope_testkit::jni_include();
        let status = Command::new("cc")
            .args(["-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg("-o")
            .arg(&out)
            .arg(fixtures().join("spin.c"))
            .status()
            .expect("a C compiler (cc) must be installed to build the JNI fixture");
        assert!(status.success(), "cc failed on spin.c");
        out
    })
    .clone()
}

/// libdeep.so, built once per test process as distribution libraries are:
/// optimised, without frame pointers.
fn libdeep() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = temp_dir("libdeep").join("libdeep.so");
        let include = jscope_testkit::jni_include();
        let status = Command::new("cc")
            .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg("-o")
            .arg(&out)
            .arg(fixtures().join("deep.c"))
            .status()
            .expect("a C compiler (cc) must be installed to build the JNI fixture");
        assert!(status.success(), "cc failed on deep.c");
        out
    })
    .clone()
}

/// Runs `main` with the agent writing to a fresh file; returns the recording,
/// stdout and stderr.
fn record(java: &Java, options: &str, main: &str, args: &[&str]) -> (Recording, String, String) {
    let file = temp_dir(&format!("native-{}-{main}", java.major)).join("out.jsc");
    let options = format!("{options},file={}", file.display());
    let mut cmd = java_with_agent(java, &options, &classes(), main, args);
    if java.major >= 22 {
        // System.load is a restricted method there; allowed without a warning.
        cmd.env("JDK_JAVA_OPTIONS", "--enable-native-access=ALL-UNNAMED");
    }
    let out: Output = Child::spawn(&mut cmd).finish(JVM_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "JDK {}: {main} failed: {stderr}",
        java.major
    );
    assert!(
        !stderr.contains("WARNING") && !stderr.contains("FATAL") && !stdout.contains("WARNING"),
        "JDK {}: -Xcheck:jni complained: {stdout}{stderr}",
        java.major
    );
    let rec = Recording::read_file(&file).expect("readable recording");
    assert!(rec.damage.is_none() && rec.end_ticks.is_some());
    (rec, stdout, stderr)
}

fn header<'a>(rec: &'a Recording, key: &str) -> &'a str {
    rec.header
        .extra
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

fn labels(rec: &Recording, stack: StackId) -> Vec<String> {
    rec.stack(stack)
        .iter()
        .map(|f| rec.method_label(f.method))
        .collect()
}

/// Whether `stack` holds a frame labelled `label`.
fn has_frame(rec: &Recording, stack: StackId, label: &str) -> bool {
    labels(rec, stack).iter().any(|l| l == label)
}

/// Thread name -> cpu samples.
fn samples_by_thread(rec: &Recording) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
        let name = rec
            .thread(s.thread)
            .map_or("?".to_string(), |t| t.name.clone());
        *by.entry(name).or_default() += 1;
    }
    by
}

/// "window START END CPU_NS AGENT_CPU_NS" from the Mixed fixture.
fn window(stdout: &str) -> (u64, u64, u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("window "))
        .unwrap_or_else(|| panic!("no window line in {stdout}"));
    let v: Vec<u64> = line[7..].split(' ').map(|n| n.parse().unwrap()).collect();
    (v[0], v[1], v[2], v[3])
}

#[test]
fn cpu_mode_accounts_for_the_process_with_native_frames_and_vm_threads() {
    let lib = libspin();
    for java in javas() {
        let (rec, stdout, _) = record(
            &java,
            "mode=cpu,interval=5ms",
            "Mixed",
            &[lib.to_str().unwrap(), "1000"],
        );
        assert_eq!(header(&rec, "cstack"), "vm");
        assert_eq!(header(&rec, "stack_walker"), "vm");
        // perf_events where the kernel lets the JVM open them (root, or
        // perf_event_paranoid <= 2 for its own threads), else timers.
        let engine = header(&rec, "cpu_engine");
        assert!(engine == "perf_events" || engine == "timers", "{engine}");
        let kernel = if engine == "perf_events" { "yes" } else { "no" };
        assert_eq!(header(&rec, "kernel_frames"), kernel);
        // The profiler's own threads are sampled too (the writer's symbol
        // tables, compression; more in a debug build): the samples add up to
        // the process's CPU time, theirs included.
        let (start, end, cpu_ns, agent_ns) = window(&stdout);
        let in_window: Vec<_> = rec
            .samples
            .iter()
            .filter(|s| s.mode == SampleMode::Cpu && s.ticks >= start && s.ticks <= end)
            .collect();
        let sampled_ns: u64 = in_window.iter().map(|s| s.weight_ns).sum();
        let ratio = sampled_ns as f64 / cpu_ns as f64;
        let by_thread = samples_by_thread(&rec);
        eprintln!(
            "JDK {}: sampled/CPU {ratio:.3}, agent {:.1}% of the process",
            java.major,
            agent_ns as f64 * 100.0 / cpu_ns as f64
        );
        assert!(
            (0.9..=1.1).contains(&ratio),
            "JDK {}: {} samples x 5 ms = {sampled_ns} ns against {cpu_ns} ns of process CPU ({ratio:.3}; the agent's {agent_ns} ns); by thread {by_thread:?}",
            java.major,
            in_window.len()
        );
        // The symbol reader works tens of milliseconds of CPU as sampling starts.
        assert!(
            by_thread.get("jscope-symbols").copied().unwrap_or(0) > 0,
            "JDK {}: the agent's own symbol reader is sampled: {by_thread:?}",
            java.major
        );

        // The C function, named, right under... above its Java caller.
        let native_stacks: BTreeSet<StackId> = rec
            .samples
            .iter()
            .map(|s| s.stack)
            .filter(|&st| has_frame(&rec, st, "jscope_spin_burn [libspin.so]"))
            .collect();
        assert!(
            !native_stacks.is_empty(),
            "JDK {}: no sample in jscope_spin_burn",
            java.major
        );
        let st = *native_stacks.iter().next().unwrap();
        let l = labels(&rec, st);
        let burn = l
            .iter()
            .position(|l| l == "jscope_spin_burn [libspin.so]")
            .unwrap();
        let jni = l.iter().position(|l| l == "Mixed.spinNative");
        let caller = l.iter().position(|l| l == "Mixed.nativeCaller");
        assert!(
            matches!((jni, caller), (Some(j), Some(c)) if burn < j && j < c),
            "JDK {}: the C function sits above its Java callers: {l:?}",
            java.major
        );
        let frames = rec.stack(st);
        assert_eq!(frames[burn].kind, FrameKind::Native);
        let native_caller = rec
            .samples
            .iter()
            .filter(|s| native_stacks.contains(&s.stack))
            .map(|s| rec.thread(s.thread).unwrap().name.clone())
            .collect::<BTreeSet<_>>();
        assert_eq!(native_caller, BTreeSet::from(["native-caller".to_string()]));

        // VM threads by the names the JVM gives them.
        let names: Vec<&String> = by_thread.keys().collect();
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("C2 CompilerThre") || n.starts_with("C1 CompilerThre")),
            "JDK {}: no compiler thread among {by_thread:?}",
            java.major
        );
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("GC Thread") || n.starts_with("G1 ")),
            "JDK {}: no GC thread among {by_thread:?}",
            java.major
        );
        let vm_thread = rec
            .threads
            .values()
            .find(|t| {
                t.name.starts_with("C2 CompilerThre") || t.name.starts_with("C1 CompilerThre")
            })
            .unwrap();
        assert_eq!(
            (vm_thread.java_id, vm_thread.group.as_str()),
            (0, "[native]")
        );
        // Frames inside libjvm are VM frames.
        let vm_frames = rec
            .samples
            .iter()
            .flat_map(|s| rec.stack(s.stack))
            .filter(|f| f.kind == FrameKind::Vm)
            .count();
        assert!(vm_frames > 0, "JDK {}: no libjvm frame", java.major);
    }
}

/// Native threads that never touched libjvm, sampled inside malloc: the
/// handler finds a thread's JNIEnv without JNI GetEnv, whose first read of
/// libjvm's thread-local storage on such a thread allocates (with malloc's
/// lock held by the interrupted code, that thread hung for good, and with it
/// every thread of its malloc arena).
#[test]
fn native_threads_sampled_inside_malloc_do_not_hang_the_jvm() {
    let lib = libspin();
    for java in javas() {
        let (rec, stdout, _) = record(
            &java,
            "mode=cpu,interval=1ms",
            "MallocThreads",
            &[lib.to_str().unwrap(), "6", "400"],
        );
        assert!(stdout.contains("threads 6"), "JDK {}: {stdout}", java.major);
        let in_loop = rec
            .samples
            .iter()
            .filter(|s| s.mode == SampleMode::Cpu)
            .filter(|s| has_frame(&rec, s.stack, "jscope_malloc_loop [libspin.so]"))
            .count();
        // Each thread is armed when the scanner sees it (a few times a
        // second): well over a hundred of their 2,400 ms are sampled.
        assert!(
            in_loop >= 100,
            "JDK {}: {in_loop} samples in the malloc threads; by thread {:?}",
            java.major,
            samples_by_thread(&rec)
        );
    }
}

#[test]
fn cstack_no_keeps_java_only_stacks_of_java_threads() {
    let lib = libspin();
    for java in javas() {
        let (rec, _, _) = record(
            &java,
            "mode=cpu,interval=5ms,cstack=no",
            "Mixed",
            &[lib.to_str().unwrap(), "500"],
        );
        assert_eq!(header(&rec, "cstack"), "no");
        assert_eq!(header(&rec, "cpu_engine"), "timers");
        let cpu: Vec<_> = rec
            .samples
            .iter()
            .filter(|s| s.mode == SampleMode::Cpu)
            .collect();
        assert!(cpu.len() >= 50, "JDK {}: {} samples", java.major, cpu.len());
        for s in &cpu {
            let t = rec.thread(s.thread).unwrap();
            assert_ne!(
                t.java_id, 0,
                "JDK {}: {} is not a Java thread",
                java.major, t.name
            );
            // Marker frames of walks that stopped early name no code; every
            // other frame is Java code.
            for f in rec
                .stack(s.stack)
                .iter()
                .filter(|f| f.kind != FrameKind::Unknown)
            {
                assert!(
                    !matches!(f.kind, FrameKind::Kernel | FrameKind::Vm),
                    "JDK {}: {:?}",
                    java.major,
                    labels(&rec, s.stack)
                );
                assert!(
                    rec.native_library(f.method).is_none(),
                    "JDK {}: {:?}",
                    java.major,
                    labels(&rec, s.stack)
                );
            }
        }
        // The JNI call is there, as the native Java method it is.
        assert!(cpu.iter().any(|s| labels(&rec, s.stack)
            .first()
            .is_some_and(|l| l == "Mixed.spinNative")));
    }
}

#[test]
fn a_missing_hardware_counter_fails_in_one_line_and_the_jvm_runs_on() {
    let java = &javas()[0];
    let file = temp_dir("native-cycles").join("out.jsc");
    let mut cmd = java_with_agent(
        java,
        &format!("event=cycles,file={}", file.display()),
        &classes(),
        "Faults",
        &["16"],
    );
    let out = Child::spawn(&mut cmd).finish(JVM_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("jscope: "))
        .collect();
    if std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.contains(" arch_perfmon"))
        && lines.is_empty()
    {
        return; // this machine has a PMU
    }
    assert!(out.status.success(), "{stderr}");
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("jscope: cannot sample on event `cycles`: "),
        "{}",
        lines[0]
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("touched"));
}

/// Whether this kernel lets a process open software perf events on its own
/// threads (a container's seccomp filter may refuse perf_event_open).
fn perf_events_allowed() -> bool {
    let ok = perf::probe(PerfKind::PageFaults).is_ok();
    if !ok {
        eprintln!("perf_event_open is refused here: perf event sampling is not tested");
    }
    ok
}

#[test]
fn page_fault_sampling_points_at_the_allocation() {
    if !perf_events_allowed() {
        return;
    }
    for java in javas() {
        let (rec, _, _) = record(
            &java,
            "event=page-faults,interval=100,cstack=no",
            "Faults",
            &["512"],
        );
        assert_eq!(header(&rec, "event"), "page-faults");
        let mut tops: BTreeMap<String, u64> = BTreeMap::new();
        for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
            let top = labels(&rec, s.stack).first().cloned().unwrap_or_default();
            *tops.entry(top).or_default() += s.weight_ns;
        }
        let total: u64 = tops.values().sum();
        let at_site = tops.get("Faults.allocate").copied().unwrap_or(0);
        // 512 MiB of 4 KiB pages is 131072 faults; at least half of them there.
        assert!(
            at_site >= 65_536 && at_site * 2 >= total,
            "JDK {}: {at_site} of {total} faults at the allocation: {tops:?}",
            java.major
        );
    }
}

#[test]
fn context_switch_sampling_shows_the_thread_blocking_on_io() {
    if !perf_events_allowed() {
        return;
    }
    for java in javas() {
        let (rec, _, _) = record(
            &java,
            "event=context-switches,interval=1",
            "BlockingIo",
            &["60"],
        );
        // A sample must not cause the next: the signal wakes a sleeping thread,
        // and that wake-up is not counted as the application's switch.
        assert_eq!(rec.counters["samples.dropped"], 0, "JDK {}", java.major);
        assert!(
            rec.counters["signals.received"] < 5000,
            "JDK {}: {} signals for 60 reads",
            java.major,
            rec.counters["signals.received"]
        );
        let reader: Vec<_> = rec
            .samples
            .iter()
            .filter(|s| {
                rec.thread(s.thread)
                    .is_some_and(|t| t.name == "pipe-reader")
            })
            .collect();
        assert!(
            reader.len() >= 30,
            "JDK {}: {} switches of the reader; by thread {:?}",
            java.major,
            reader.len(),
            samples_by_thread(&rec)
        );
        let in_read = reader
            .iter()
            .filter(|s| has_frame(&rec, s.stack, "BlockingIo.readAll"))
            .count();
        assert!(
            in_read * 10 >= reader.len() * 8,
            "JDK {}: {in_read} of {} in BlockingIo.readAll",
            java.major,
            reader.len()
        );
        // Blocked in the kernel: kernel frames on top when perf allows them.
        let kernel_top = reader
            .iter()
            .filter(|s| {
                rec.stack(s.stack)
                    .first()
                    .is_some_and(|f| f.kind == FrameKind::Kernel)
            })
            .count();
        assert!(
            kernel_top * 2 >= reader.len(),
            "JDK {}: {kernel_top} of {}",
            java.major,
            reader.len()
        );
    }
}

/// The frames of Deep's C chain, top first, as the recording labels them.
const DEEP_CHAIN: [&str; 6] = [
    "inner_spin [libdeep.so]",
    "middle_c [libdeep.so]",
    "outer_c [libdeep.so]",
    "Java_Deep_deep [libdeep.so]",
    "Deep.deep",
    "Deep.caller",
];

/// Of the samples in inner_spin: how many, how many have the C chain under
/// it in order, and how many have its Java callers under that (a Java walk
/// fails while the GC has the Java threads stopped: the C code runs on).
fn deep_chains(rec: &Recording) -> (usize, usize, usize) {
    let (mut total, mut c_chain, mut java) = (0, 0, 0);
    for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
        let l = labels(rec, s.stack);
        let Some(top) = l.iter().position(|f| f == DEEP_CHAIN[0]) else {
            continue;
        };
        total += 1;
        let rest = &l[top..];
        if rest.iter().take(4).eq(DEEP_CHAIN[..4].iter()) {
            c_chain += 1;
            if rest.iter().take(DEEP_CHAIN.len()).eq(DEEP_CHAIN.iter()) {
                java += 1;
            } else {
                // Whatever follows the C chain is Java's, or nothing.
                assert!(
                    rest.len() == 4,
                    "{}: {rest:?}",
                    "the C chain is followed by its Java callers or nothing"
                );
            }
        }
    }
    (total, c_chain, java)
}

/// Threads the JVM runs for itself (GC and compiler threads): of their
/// samples, how many and how many reach the thread's entry.
fn vm_thread_entries(rec: &Recording) -> (usize, usize) {
    let vm = |name: &str| {
        ["GC Thread", "G1 ", "C1 CompilerThre", "C2 CompilerThre"]
            .iter()
            .any(|p| name.starts_with(p))
    };
    let entry = |l: &String| {
        l.starts_with("thread_native_entry")
            || l.starts_with("start_thread ")
            || l.starts_with("clone")
    };
    let mut total = 0;
    let mut reached = 0;
    for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
        if !rec.thread(s.thread).is_some_and(|t| vm(&t.name)) {
            continue;
        }
        total += 1;
        if labels(rec, s.stack).iter().any(entry) {
            reached += 1;
        }
    }
    (total, reached)
}

#[test]
fn dwarf_unwinding_walks_c_code_built_without_frame_pointers() {
    let lib = libdeep();
    for java in javas() {
        let run = |cstack: &str| {
            let (rec, _, _) = record(
                &java,
                &format!("mode=cpu,interval=5ms,cstack={cstack}"),
                "Deep",
                &[lib.to_str().unwrap(), "600"],
            );
            assert_eq!(header(&rec, "cstack"), cstack);
            rec
        };
        let dwarf = run("dwarf");
        let fp = run("fp");
        // What the unwind tables cost, said in the header.
        let tables = header(&dwarf, "unwind_tables");
        eprintln!("JDK {}: unwind tables: {tables}", java.major);
        assert!(tables.contains(" KiB (libjvm.so "), "{tables}");
        assert_eq!(header(&fp, "unwind_tables"), "");
        let (d_total, d_chain, d_java) = deep_chains(&dwarf);
        let (f_total, f_chain, _) = deep_chains(&fp);
        let (d_vm, d_entry) = vm_thread_entries(&dwarf);
        let (f_vm, f_entry) = vm_thread_entries(&fp);
        eprintln!(
            "JDK {}: inner_spin with its C callers: dwarf {d_chain}/{d_total} ({d_java} with the Java callers too), \
             fp {f_chain}/{f_total}; GC/compiler samples reaching the thread entry: dwarf {d_entry}/{d_vm}, fp {f_entry}/{f_vm}",
            java.major
        );
        // 600 ms of CPU at 5 ms: about 120 samples, nearly all in inner_spin.
        assert!(
            d_total >= 40 && f_total >= 40,
            "JDK {}: {d_total}, {f_total}",
            java.major
        );
        // With the unwind tables every sample has the chain; frame pointers
        // lose the callers that keep none.
        let example = dwarf
            .samples
            .iter()
            .map(|s| labels(&dwarf, s.stack))
            .find(|l| {
                l.iter().any(|f| f == DEEP_CHAIN[0]) && !l.iter().take(4).eq(DEEP_CHAIN[..4].iter())
            });
        assert_eq!(d_chain, d_total, "JDK {}: e.g. {example:?}", java.major);
        assert!(
            d_java * 3 >= d_total,
            "JDK {}: {d_java} of {d_total} with Java callers",
            java.major
        );
        assert!(
            f_chain * 2 < f_total,
            "JDK {}: {f_chain} of {f_total}",
            java.major
        );
        // The JVM's own threads: their stacks reach the thread's entry.
        assert!(d_vm >= 20, "JDK {}: {d_vm} GC/compiler samples", java.major);
        assert!(
            d_entry * 10 >= d_vm * 8,
            "JDK {}: {d_entry} of {d_vm} reach the thread entry",
            java.major
        );
    }
}

/// libbetween.so, built once per test process with gcc -O2 (and frame
/// pointers, so the fp walk follows it too).
fn libbetween() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = temp_dir("libbetween").join("libbetween.so");
        let include = jscope_testkit::jni_include();
        let status = Command::new("cc")
            .args(["-O2", "-fno-omit-frame-pointer", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg("-o")
            .arg(&out)
            .arg(fixtures().join("between.c"))
            .status()
            .expect("a C compiler (cc) must be installed to build the JNI fixture");
        assert!(status.success(), "cc failed on between.c");
        out
    })
    .clone()
}

/// Of the cpu samples in spin_loop: how many, and how many have the whole
/// chain in order, top to bottom: spin_loop, Between.spin, Between.callback
/// right above libjvm frames down to and including JavaCalls::call_helper,
/// then (libjvm's JNI frames) Java_Between_outer right above Between.outer,
/// then Between.caller.
fn between_chains(rec: &Recording) -> (usize, usize, Option<Vec<String>>) {
    let (mut total, mut whole, mut example) = (0, 0, None);
    for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
        if rec
            .thread(s.thread)
            .is_none_or(|t| t.name != "between-caller")
        {
            continue;
        }
        let l = labels(rec, s.stack);
        if l.first().map(String::as_str) != Some("spin_loop [libbetween.so]") {
            continue;
        }
        total += 1;
        let at = |f: &str| l.iter().position(|x| x == f);
        let ok = (|| {
            let spin = at("Between.spin")?;
            let callback = at("Between.callback")?;
            let helper = l
                .iter()
                .position(|x| x.starts_with("JavaCalls::call_helper "))?;
            let jni = at("Java_Between_outer [libbetween.so]")?;
            let outer = at("Between.outer")?;
            let caller = at("Between.caller")?;
            let vm_between = l[callback + 1..=helper]
                .iter()
                .all(|x| x.ends_with(" [libjvm.so]"));
            (spin < callback
                && callback < helper
                && vm_between
                && helper < jni
                && jni + 1 == outer
                && outer + 1 == caller)
                .then_some(())
        })()
        .is_some();
        if ok {
            whole += 1;
        } else if example.is_none() {
            example = Some(l);
        }
    }
    (total, whole, example)
}

#[test]
fn native_frames_between_java_frames_sit_above_their_native_method() {
    let lib = libbetween();
    for java in javas() {
        // Both ways of placing them: in their true place (the VM structure
        // walker's vmx), and above the native method by a search of the stack
        // (AsyncGetCallTrace's).
        for cstack in ["vmx", "asgct"] {
            let interleaved = cstack == "vmx";
            let (rec, _, _) = record(
                &java,
                &format!("mode=cpu,interval=5ms,cstack={cstack}"),
                "Between",
                &[lib.to_str().unwrap(), "500"],
            );
            let (total, whole, example) = between_chains(&rec);
            eprintln!(
                "JDK {} cstack={cstack}: {whole} of {total} spin_loop samples with the frames between; \
                 e.g. a sample without: {example:?}",
                java.major
            );
            // 500 ms of CPU at 5 ms: about 100 samples, nearly all in spin_loop.
            assert!(total >= 40, "JDK {} {cstack}: {total}", java.major);
            assert!(
                whole * 10 >= total * 9,
                "JDK {} {cstack}: {whole} of {total}; e.g. {example:?}",
                java.major
            );
            // The static initialiser the VM calls: in their true place the
            // VM's frames sit between it and its Java caller; placed by the
            // search, they have no JNI function to belong to, so they are
            // dropped and the Java frames follow each other.
            let (init, init_whole, init_example) = init_chains(&rec, interleaved);
            eprintln!(
                "JDK {} cstack={cstack}: {init_whole} of {init} samples in the initialiser's spin_loop \
                 with its Java callers right under it; e.g. one without: {init_example:?}",
                java.major
            );
            assert!(init >= 10, "JDK {} {cstack}: {init}", java.major);
            assert!(
                init_whole * 10 >= init * 9,
                "JDK {} {cstack}: {init_whole} of {init}; e.g. {init_example:?}",
                java.major
            );
        }
    }
}

/// Of the cpu samples of "between-init" in spin_loop: how many, and how many
/// read spin_loop, Java_Between_spin, Between.spin, Between$Init.<clinit>,
/// then Between.initCaller: at once (nothing of the VM's call into the
/// initialiser is kept), or `interleaved` with the VM's frames between.
fn init_chains(rec: &Recording, interleaved: bool) -> (usize, usize, Option<Vec<String>>) {
    const CHAIN: [&str; 5] = [
        "spin_loop [libbetween.so]",
        "Java_Between_spin [libbetween.so]",
        "Between.spin",
        "Between$Init.<clinit>",
        "Between.initCaller",
    ];
    let (mut total, mut whole, mut example) = (0, 0, None);
    for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
        if rec
            .thread(s.thread)
            .is_none_or(|t| t.name != "between-init")
        {
            continue;
        }
        let l = labels(rec, s.stack);
        if l.first().map(String::as_str) != Some(CHAIN[0]) {
            continue;
        }
        total += 1;
        let chained = match interleaved {
            false => l.iter().take(CHAIN.len()).eq(CHAIN.iter()),
            true => {
                let caller = l.iter().position(|x| x == CHAIN[4]);
                l.iter().take(4).eq(CHAIN[..4].iter())
                    && caller.is_some_and(|c| {
                        c > 5 && l[4..c].iter().all(|x| x.ends_with(" [libjvm.so]"))
                    })
            }
        };
        if chained {
            whole += 1;
        } else if example.is_none() {
            example = Some(l);
        }
    }
    (total, whole, example)
}
