//! The agent inside real JVMs: every test starts JVMs (each JDK that
//! jscope_testkit::javas() finds, under -Xcheck:jni) on fixtures compiled during
//! the run, and reads what the agent wrote with jscope_format::Recording.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use jscope_format::thread_state::{classify, StateClass};
use jscope_format::{Recording, SampleMode};
use jscope_format::{StackId, ThreadId};
use jscope_testkit::{
    agent_path, compile_fixtures, java_with_agent, javas, jcmd, jcmd_agent_load, temp_dir,
    wait_until, Child, Java,
};

const JVM_LIMIT: Duration = Duration::from_secs(60);

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// `java -Xcheck:jni -agentpath:AGENT=OPTIONS -cp CLASSES MAIN ARGS...`, run to the end.
fn run_with_agent(java: &Java, options: &str, main: &str, args: &[&str]) -> Output {
    let mut cmd = java_with_agent(java, options, &classes(), main, args);
    Child::spawn(&mut cmd).finish(JVM_LIMIT)
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn agent_lines(out: &Output) -> Vec<String> {
    stderr_of(out)
        .lines()
        .filter(|l| l.starts_with("jscope: "))
        .map(str::to_string)
        .collect()
}

/// Records `main` with `options` (plus a file in a fresh directory) and reads the
/// recording back, checking what every run must satisfy.
fn record(java: &Java, options: &str, main: &str, args: &[&str]) -> Recording {
    let file = temp_dir(&format!("rec-{}-{main}", java.major)).join("out.jsc");
    let out = run_with_agent(
        java,
        &format!("{options},file={}", file.display()),
        main,
        args,
    );
    let stderr = stderr_of(&out);
    assert!(
        out.status.success(),
        "JDK {}: {main} failed: {stderr}",
        java.major
    );
    // -Xcheck:jni prints its warnings on stdout, the JVM's own on stderr.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stderr.contains("WARNING") && !stdout.contains("WARNING"),
        "JDK {}: -Xcheck:jni complained: {stdout}{stderr}",
        java.major
    );
    let rec = Recording::read_file(&file)
        .unwrap_or_else(|e| panic!("JDK {}: unreadable recording: {e}", java.major));
    assert!(
        rec.damage.is_none(),
        "JDK {}: damaged recording: {:?}",
        java.major,
        rec.damage.map(|d| d.to_string())
    );
    assert!(
        rec.end_ticks.is_some(),
        "JDK {}: the recording has no end record",
        java.major
    );
    assert!(
        rec.header.java_version.starts_with(&java.major.to_string()),
        "{:?}",
        rec.header
    );
    rec
}

fn thread_name(rec: &Recording, id: u32) -> &str {
    rec.thread(ThreadId(id)).map_or("", |t| t.name.as_str())
}

fn top_label(rec: &Recording, stack: u32) -> String {
    rec.stack(StackId(stack))
        .first()
        .map(|f| rec.method_label(f.method))
        .unwrap_or_default()
}

fn stack_has(rec: &Recording, stack: u32, method: &str) -> bool {
    rec.stack(StackId(stack))
        .iter()
        .any(|f| rec.method_label(f.method) == method)
}

/// The 1-based line of the fixture source that carries `marker`.
fn fixture_line(file: &str, marker: &str) -> u32 {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(file),
    )
    .unwrap();
    source
        .lines()
        .position(|l| l.contains(marker))
        .expect("marker in fixture") as u32
        + 1
}

/// `jscope record --mode none` passes `mode=none`: the agent records without
/// sampling instead of refusing the mode and leaving the JVM unprofiled.
#[test]
fn mode_none_records_without_sampling() {
    for java in javas() {
        let rec = record(&java, "mode=none,events=gc", "Spin", &["300"]);
        assert_eq!(rec.header.modes, "", "JDK {}", java.major);
        assert!(rec.samples.is_empty() && rec.end_ticks.is_some());
    }
}

#[test]
fn bad_options_print_one_line_and_leave_the_exit_code_alone() {
    for java in javas() {
        for options in [
            "bogus=1",
            "mode=cpu+gpu",
            "interval=fast",
            "file=/nonexistent-dir/x/y.jsc",
            "stop",
            // Was taken silently at JVM start, which recorded cpu instead.
            "tracestop",
        ] {
            let out = run_with_agent(&java, options, "ExitCode", &[]);
            assert_eq!(
                out.status.code(),
                Some(3),
                "JDK {} with {options}: {}",
                java.major,
                stderr_of(&out)
            );
            assert_eq!(String::from_utf8_lossy(&out.stdout), "fixture ran\n");
            let lines = agent_lines(&out);
            assert_eq!(
                lines.len(),
                1,
                "JDK {} with {options}: {lines:?}",
                java.major
            );
            assert!(lines[0].contains("profiling is disabled"), "{}", lines[0]);
        }
    }
}

#[test]
fn quiet_good_options_print_nothing_and_keep_the_exit_code() {
    for java in javas() {
        let file = temp_dir("quiet").join("q.jsc");
        let out = run_with_agent(
            &java,
            &format!("quiet,file={}", file.display()),
            "ExitCode",
            &[],
        );
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(agent_lines(&out), Vec::<String>::new());
        let rec = Recording::read_file(&file).unwrap();
        assert!(
            rec.end_ticks.is_some(),
            "System.exit still completes the recording"
        );
    }
}

#[test]
fn mode_none_alone_says_it_records_nothing() {
    let java = &javas()[0];
    let file = temp_dir("mode-none").join("n.jsc");
    let out = run_with_agent(
        java,
        &format!("mode=none,file={}", file.display()),
        "ExitCode",
        &[],
    );
    assert_eq!(out.status.code(), Some(3));
    // Was `jscope: recording  to FILE`, naming nothing.
    assert_eq!(
        agent_lines(&out),
        [format!(
            "jscope: recording nothing (mode=none without trace=, events=, nativemem or nativelock) to {}",
            file.display()
        )]
    );
    let rec = Recording::read_file(&file).unwrap();
    assert!(rec.end_ticks.is_some() && rec.samples.is_empty());
}

#[test]
fn cpu_mode_finds_the_hot_method() {
    for java in javas() {
        let rec = record(&java, "mode=cpu,interval=5ms", "Spin", &["1500"]);
        assert_eq!(rec.header.modes, "cpu");
        assert_eq!(rec.header.interval_ns, 5_000_000);
        let all_cpu = rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu);
        // Compiler and GC threads are sampled too (mixed stacks, the default) and
        // take a share that varies with the machine's load: the Java profile is
        // held to the Java threads' samples.
        let cpu: Vec<_> = all_cpu
            .clone()
            .filter(|s| rec.thread(s.thread).is_some_and(|t| t.java_id != 0))
            .collect();
        assert!(
            cpu.len() >= 40,
            "JDK {}: only {} cpu samples",
            java.major,
            cpu.len()
        );
        let in_hot = cpu
            .iter()
            .filter(|s| stack_has(&rec, s.stack.0, "Spin.hotLoop"))
            .count();
        let hot_on_top = cpu
            .iter()
            .filter(|s| top_label(&rec, s.stack.0) == "Spin.hotLoop")
            .count();
        assert!(
            in_hot * 10 >= cpu.len() * 8,
            "JDK {}: {in_hot} of {} samples in hotLoop",
            java.major,
            cpu.len()
        );
        assert!(
            hot_on_top * 2 >= cpu.len(),
            "JDK {}: hotLoop on top in {hot_on_top} of {}",
            java.major,
            cpu.len()
        );
        let main_samples = cpu
            .iter()
            .filter(|s| thread_name(&rec, s.thread.0) == "main")
            .count();
        assert!(
            main_samples * 10 >= cpu.len() * 8,
            "the spinning thread is main"
        );
        assert!(all_cpu.clone().all(|s| s.weight_ns == 5_000_000));
        assert_eq!(rec.counters["samples.written"], rec.samples.len() as u64);
        // Every sample has a walked stack: Java frames, or with mixed stacks (the
        // default) native frames alone (compiler and GC threads), or it is CPU
        // time whose walk failed, kept with a `[<reason>]` marker frame: on top,
        // or below the native frames found above the break (a thread in
        // `JavaCalls::call_helper` about to enter Java).
        let native_only = rec.counters.get("walk.native_only").copied().unwrap_or(0);
        let marker = |label: String| {
            let reason = label.strip_prefix('[').and_then(|l| l.strip_suffix(']'));
            reason.is_some_and(|r| rec.counters.contains_key(&format!("walk.failed.{r}")))
        };
        let unknown = rec
            .samples
            .iter()
            .filter(|s| {
                rec.stack(s.stack)
                    .iter()
                    .any(|f| marker(rec.method_label(f.method)))
            })
            .count() as u64;
        let failed: u64 = rec
            .counters
            .iter()
            .filter(|(k, _)| k.starts_with("walk.failed."))
            .map(|(_, v)| *v)
            .sum();
        assert!(rec.counters["walk.ok"] + native_only >= rec.samples.len() as u64 - unknown);
        assert!(failed >= unknown);
        assert_eq!(rec.counters["samples.dropped"], 0);
    }
}

#[test]
fn snapshot_mode_names_threads_and_sees_the_blocked_one() {
    let blocked_line = fixture_line("Blocked.java", "BLOCKED-HERE");
    for java in javas() {
        let rec = record(&java, "mode=snapshot,interval=50ms", "Blocked", &["1500"]);
        assert_eq!(rec.header.modes, "snapshot");
        assert!(
            rec.snapshots.len() >= 10,
            "JDK {}: {} snapshots",
            java.major,
            rec.snapshots.len()
        );
        assert_eq!(rec.snapshots[0].interval_ns, 0);
        let intervals: Vec<u64> = rec.snapshots[1..].iter().map(|s| s.interval_ns).collect();
        let mean = intervals.iter().sum::<u64>() / intervals.len() as u64;
        assert!(intervals.iter().all(|i| *i > 0), "{intervals:?}");
        assert!(
            (40_000_000..150_000_000).contains(&mean),
            "achieved intervals {intervals:?}"
        );
        let by_name = |name: &str| {
            rec.threads
                .values()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let (main, holder, waiter) = (by_name("main"), by_name("holder"), by_name("waiter"));
        assert_eq!(main.start_order, 1, "main is first in GetAllThreads order");
        assert!(holder.start_order < waiter.start_order);
        assert_eq!(
            (waiter.group.as_str(), waiter.parent.as_str(), waiter.daemon),
            ("main", "system", false)
        );
        assert!(waiter.java_id > 0 && waiter.java_id != holder.java_id);

        let blocked: Vec<_> = rec
            .snapshots
            .iter()
            .flat_map(|s| &s.threads)
            .filter(|t| t.thread == waiter.id && classify(t.state) == StateClass::Blocked)
            .collect();
        assert!(
            blocked.len() >= 5,
            "JDK {}: waiter blocked in {} snapshots",
            java.major,
            blocked.len()
        );
        let top = rec.stack(blocked[0].stack)[0];
        assert_eq!(rec.method_label(top.method), "Blocked.waitForLock");
        assert_eq!(
            top.line, blocked_line,
            "JDK {}: blocked at the synchronized line",
            java.major
        );
        let holder_sleeping = rec
            .snapshots
            .iter()
            .flat_map(|s| &s.threads)
            .any(|t| t.thread == holder.id && classify(t.state) == StateClass::Sleeping);
        assert!(holder_sleeping, "the lock holder sleeps");
    }
}

#[test]
fn wall_mode_sees_the_sleeper_that_cpu_mode_does_not() {
    for java in javas() {
        let rec = record(&java, "mode=cpu+wall", "SleepAndSpin", &["1500"]);
        let count = |mode: SampleMode, thread: &str| {
            rec.samples
                .iter()
                .filter(|s| s.mode == mode && thread_name(&rec, s.thread.0) == thread)
                .count()
        };
        let (wall_sleeper, wall_spinner) = (
            count(SampleMode::Wall, "sleeper"),
            count(SampleMode::Wall, "spinner"),
        );
        let (cpu_sleeper, cpu_spinner) = (
            count(SampleMode::Cpu, "sleeper"),
            count(SampleMode::Cpu, "spinner"),
        );
        assert!(
            wall_sleeper >= 30,
            "JDK {}: {wall_sleeper} wall samples of the sleeper",
            java.major
        );
        assert!(
            wall_spinner >= 30,
            "JDK {}: {wall_spinner} wall samples of the spinner",
            java.major
        );
        assert!(
            cpu_spinner >= 30,
            "JDK {}: {cpu_spinner} cpu samples of the spinner",
            java.major
        );
        assert!(
            cpu_sleeper <= 1,
            "JDK {}: a sleeping thread burns no CPU, got {cpu_sleeper}",
            java.major
        );
        let sleeping_in_method = rec
            .samples
            .iter()
            .filter(|s| s.mode == SampleMode::Wall && thread_name(&rec, s.thread.0) == "sleeper")
            .all(|s| stack_has(&rec, s.stack.0, "SleepAndSpin.sleepForever"));
        assert!(
            sleeping_in_method,
            "every wall sample of the sleeper is inside sleepForever"
        );
        let classes = |mode: SampleMode, thread: &str| -> Vec<StateClass> {
            rec.samples
                .iter()
                .filter(|s| s.mode == mode && thread_name(&rec, s.thread.0) == thread)
                .map(|s| classify(s.state))
                .collect()
        };
        let share = |states: &[StateClass], class: StateClass| {
            states.iter().filter(|c| **c == class).count() as f64 / states.len().max(1) as f64
        };
        let sleeper = classes(SampleMode::Wall, "sleeper");
        let spinner = classes(SampleMode::Wall, "spinner");
        assert!(
            share(&sleeper, StateClass::Sleeping) >= 0.8,
            "JDK {}: wall samples of the sleeper should be sleeping: {sleeper:?}",
            java.major
        );
        // On a CPU: running Java, or inside a native the JVM calls for it (a clock
        // read, while the loop is still interpreted on a loaded machine).
        let on_cpu = share(&spinner, StateClass::Runnable) + share(&spinner, StateClass::Native);
        assert!(
            on_cpu >= 0.8,
            "JDK {}: wall samples of the spinner should be runnable: {spinner:?}",
            java.major
        );
        let cpu = classes(SampleMode::Cpu, "spinner");
        assert!(
            cpu.iter()
                .all(|c| *c == StateClass::Runnable || *c == StateClass::Native),
            "JDK {}: cpu samples run on a CPU: {cpu:?}",
            java.major
        );
        let (runnable, native) = (
            share(&cpu, StateClass::Runnable),
            share(&cpu, StateClass::Native),
        );
        // The spinner calls System.identityHashCode, a native method, in its loop.
        assert!(
            runnable >= 0.3 && runnable + native == 1.0,
            "JDK {}: cpu samples {runnable} runnable, {native} native",
            java.major
        );
    }
}

#[test]
fn attach_records_a_running_jvm_until_stop() {
    let javas: Vec<Java> = javas().into_iter().filter(|j| jcmd(j).is_some()).collect();
    assert!(!javas.is_empty(), "no JDK with jcmd found");
    for java in javas {
        let file = temp_dir("attach").join("attached.jsc");
        let mut cmd = Command::new(&java.bin);
        cmd.args(["-Xcheck:jni", "-XX:+EnableDynamicAgentLoading", "-cp"])
            .arg(classes())
            .args(["SleepAndSpin", "30000"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut jvm = Child::spawn(&mut cmd);
        std::thread::sleep(Duration::from_millis(700));
        let started = jcmd_agent_load(
            &jcmd(&java).unwrap(),
            jvm.id(),
            &format!("mode=cpu+wall+snapshot,file={}", file.display()),
        );
        assert!(
            started.contains("return code: 0"),
            "JDK {}: {started}",
            java.major
        );
        let again = jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "mode=cpu");
        assert!(
            !again.contains("return code: 0"),
            "a second recording is refused: {again}"
        );
        std::thread::sleep(Duration::from_millis(1500));
        let stopped = jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "stop");
        assert!(
            stopped.contains("return code: 0"),
            "JDK {}: {stopped}",
            java.major
        );
        assert!(
            jvm.wait_timeout(Duration::from_millis(100)).is_none(),
            "the JVM keeps running after stop"
        );
        let _ = jvm.0.kill();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut jvm.0.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(
            !stderr.contains("WARNING"),
            "JDK {}: -Xcheck:jni complained: {stderr}",
            java.major
        );

        let rec = Recording::read_file(&file).unwrap();
        assert!(
            rec.end_ticks.is_some() && rec.damage.is_none(),
            "stop completes the file"
        );
        assert_eq!(rec.header.pid, jvm.id());
        assert_eq!(rec.header.extra("started_by"), Some("attach"));
        let spinner_cpu = rec
            .samples
            .iter()
            .filter(|s| s.mode == SampleMode::Cpu && thread_name(&rec, s.thread.0) == "spinner")
            .count();
        assert!(
            spinner_cpu >= 20,
            "JDK {}: {spinner_cpu} cpu samples of a thread that predates the attach",
            java.major
        );
        let sleeper = rec
            .threads
            .values()
            .find(|t| t.name == "sleeper")
            .expect("sleeper known");
        assert!(
            sleeper.os_tid != 0,
            "wall samples tie the pre-existing thread to its Linux id"
        );
        assert!(rec.snapshots.len() >= 5);
    }
}

#[test]
fn attach_stop_completes_a_command_line_recording_and_a_new_attach_records_again() {
    let javas: Vec<Java> = javas().into_iter().filter(|j| jcmd(j).is_some()).collect();
    assert!(!javas.is_empty(), "no JDK with jcmd found");
    for java in javas {
        let dir = temp_dir("restart");
        let mut cmd = Command::new(&java.bin);
        cmd.arg("-XX:+EnableDynamicAgentLoading")
            .arg(format!(
                "-agentpath:{}=quiet,mode=cpu,file={}/first-%p.jsc",
                agent_path().display(),
                dir.display()
            ))
            .arg("-cp")
            .arg(classes())
            .args(["SleepAndSpin", "30000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut jvm = Child::spawn(&mut cmd);
        // A second of recording once the agent has begun its file: a fixed sleep
        // from spawn alone left a loaded machine's JVM still starting when jcmd
        // came to stop it.
        let first_path = dir.join(format!("first-{}.jsc", jvm.id()));
        assert!(
            wait_until(Duration::from_secs(60), || std::fs::metadata(&first_path)
                .is_ok_and(|m| m.len() > 0)),
            "JDK {}: the -agentpath recording never began",
            java.major
        );
        std::thread::sleep(Duration::from_millis(1000));
        let stopped = jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "stop");
        assert!(
            stopped.contains("return code: 0"),
            "JDK {}: {stopped}",
            java.major
        );
        let first = Recording::read_file(&first_path).unwrap();
        assert!(
            first.end_ticks.is_some(),
            "JDK {}: stop completes a -agentpath recording",
            java.major
        );
        assert!(!first.samples.is_empty());

        let second = dir.join("second.jsc");
        let started = jcmd_agent_load(
            &jcmd(&java).unwrap(),
            jvm.id(),
            &format!("quiet,mode=wall,file={}", second.display()),
        );
        assert!(
            started.contains("return code: 0"),
            "JDK {}: {started}",
            java.major
        );
        std::thread::sleep(Duration::from_millis(800));
        assert!(jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "stop").contains("return code: 0"));
        assert!(
            !jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "stop").contains("return code: 0"),
            "nothing left to stop"
        );
        let second = Recording::read_file(&second).unwrap();
        assert!(second.end_ticks.is_some());
        assert_eq!(second.header.modes, "wall");
        assert!(second
            .samples
            .iter()
            .any(|s| thread_name(&second, s.thread.0) == "sleeper"));
        assert!(
            jvm.wait_timeout(Duration::from_millis(50)).is_none(),
            "the JVM runs on"
        );
    }
}

#[test]
fn samples_in_classes_that_get_unloaded_leave_a_complete_recording() {
    for java in javas() {
        let rec = record(
            &java,
            "mode=cpu+wall+snapshot,interval=1ms,snapinterval=20ms",
            "Unload",
            &["1500"],
        );
        // A sample in Payload is named when the writer resolved it before the class
        // went away, and kept as an unknown frame when it did not (seen on JDK 25).
        let in_payload = |stack: u32| {
            stack_has(&rec, stack, "Payload.burn")
                || rec
                    .stack(StackId(stack))
                    .iter()
                    .any(|f| f.kind == jscope_format::FrameKind::Unknown)
        };
        let payload = rec.samples.iter().filter(|s| in_payload(s.stack.0)).count();
        assert!(
            payload >= 20,
            "JDK {}: {payload} samples in the unloadable class, of {} (counters {:?}, top frames {:?})",
            java.major,
            rec.samples.len(),
            rec.counters,
            rec.samples
                .iter()
                .take(20)
                .map(|s| rec.stack(s.stack).first().map(|f| rec.frame_label(f)))
                .collect::<Vec<_>>()
        );
        let unresolved = rec.counters["methods.unresolved"];
        let sampled = rec.samples.iter().map(|s| s.stack);
        let snapped = rec
            .snapshots
            .iter()
            .flat_map(|s| &s.threads)
            .map(|t| t.stack);
        let unknown_frames = sampled
            .chain(snapped)
            .flat_map(|id| rec.stack(id))
            // Failed walks' one-frame `[reason]` stacks are no library's code, not
            // unresolved Java methods.
            .filter(|f| {
                f.kind == jscope_format::FrameKind::Unknown
                    && rec.native_library(f.method).is_none()
            })
            .count();
        assert_eq!(
            unknown_frames > 0,
            unresolved > 0,
            "unresolved methods show as unknown frames"
        );
    }
}
