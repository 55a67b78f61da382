//! Native memory and native locks (`nativemem`, `nativelock`): real JVMs run
//! tests/nativemem_fixtures (Java compiled by javac, and a JNI library built
//! by cc, optimised and without frame pointers) under -Xcheck:jni, on every
//! JDK jscope_testkit::javas() finds. The fixture's paths have known totals:
//! a leak of 64 MiB in 256-byte blocks, 256 MiB allocated and freed, buffers
//! grown by realloc and freed, two threads contending on one pthread mutex.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use jscope_analysis::events::{
    lock_report, native_allocations, native_mem_report, EventFilter, NativeBy, NativeMemReport,
};
use jscope_format::{EventKind, Recording};
use jscope_testkit::{
    agent_path, compile_fixtures, javas, jcmd, jcmd_agent_load, temp_dir, tools, wait_until, Child,
    Java,
};

const JVM_LIMIT: Duration = Duration::from_secs(180);
const LEAK_BYTES: f64 = (64 << 20) as f64;
const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
/// Where a JDK with `jcmd` comes from.
const JCMD: &str = "a full JDK, which has jcmd: apt-get install openjdk-17-jdk-headless";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nativemem_fixtures")
}

/// The directory of libnativemem.so, built once per test process.
fn library_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = temp_dir("libnativemem");
        let include = jscope_testkit::jni_include();
        let status = Command::new("cc")
            .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg("-o")
            .arg(dir.join("libnativemem.so"))
            .arg(fixtures().join("nativemem.c"))
            .arg("-lpthread")
            .status()
            .expect("a C compiler (cc) must be installed to build the JNI fixture");
        assert!(status.success(), "cc failed on nativemem.c");
        dir
    })
    .clone()
}

/// `java -Xcheck:jni` on the fixture, with `agent` options when given.
fn command(java: &Java, agent: Option<&str>, actions: &[&str]) -> Command {
    let mut cmd = Command::new(&java.bin);
    cmd.arg("-Xcheck:jni");
    if java.major >= 21 {
        cmd.arg("-XX:+EnableDynamicAgentLoading");
    }
    if java.major >= 22 {
        cmd.arg("--enable-native-access=ALL-UNNAMED");
    }
    if let Some(options) = agent {
        cmd.arg(format!("-agentpath:{}={options}", agent_path().display()));
    }
    cmd.arg(format!("-Djava.library.path={}", library_dir().display()))
        .arg("-cp")
        .arg(compile_fixtures(&fixtures()))
        .arg("NativeMem")
        .args(actions)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Checks a JVM's exit and output; returns its stdout.
fn checked(java: &Java, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "JDK {}: the fixture failed: {stdout}{stderr}",
        java.major
    );
    for bad in ["WARNING", "FATAL", "internal error", "SIGSEGV"] {
        assert!(
            !stderr.contains(bad) && !stdout.contains(bad),
            "JDK {}: {bad}: {stdout}{stderr}",
            java.major
        );
    }
    stdout
}

/// Runs the fixture with the agent writing `options` to a fresh file.
fn record(
    java: &Java,
    name: &str,
    options: &str,
    env: &[(&str, &str)],
    actions: &[&str],
) -> (Recording, String) {
    let file = temp_dir(&format!("nativemem-{}-{name}", java.major)).join("out.jsc");
    let options = format!("{options},file={}", file.display());
    let mut cmd = command(java, Some(&options), actions);
    cmd.envs(env.iter().copied());
    let out = Child::spawn(&mut cmd).finish(JVM_LIMIT);
    let stdout = checked(java, &out);
    (read(&file), stdout)
}

fn read(file: &Path) -> Recording {
    let rec = Recording::read_file(file).expect("readable recording");
    assert!(
        rec.damage.is_none() && rec.end_ticks.is_some(),
        "a complete recording"
    );
    rec
}

/// The number the fixture printed after `what`.
fn printed(stdout: &str, what: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(what)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{what}` in {stdout}"))
}

fn within(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= want * tolerance
}

/// Estimated bytes of the rows whose C function starts with `function`.
fn bytes_of(report: &NativeMemReport, function: &str) -> f64 {
    report
        .rows
        .iter()
        .filter(|r| r.site.function.starts_with(function))
        .map(|r| r.bytes as f64)
        .sum()
}

/// What every recording of the fixture's leak, churn and grow paths shows:
/// the leak named by its Java caller and C function with its bytes, the
/// freeing path and the realloc chains absent from the leaks, and each
/// path's total allocated bytes within 15% of the truth.
fn check_paths(rec: &Recording, stdout: &str, what: &str) {
    let all = EventFilter::default();
    let leaks = native_mem_report(rec, &all, NativeBy::Caller, true);
    let top = &leaks.rows[0];
    assert_eq!(top.key, "NativeMem.leak", "{what}: {leaks}");
    assert!(
        top.site
            .function
            .starts_with("leak_block [libnativemem.so]"),
        "{what}: {leaks}"
    );
    assert!(
        top.stack
            .iter()
            .any(|f| f.starts_with("NativeMem.leakPath")),
        "{what}: {top:?}"
    );
    assert!(
        within(top.bytes as f64, LEAK_BYTES, 0.15),
        "{what}: leaked {} of {LEAK_BYTES}",
        top.bytes
    );
    let by_function = native_mem_report(rec, &all, NativeBy::Function, true);
    for freed in ["churn_block", "grow_buffer"] {
        assert_eq!(
            bytes_of(&by_function, freed),
            0.0,
            "{what}: {freed} leaked: {by_function}"
        );
    }
    let allocated = native_mem_report(rec, &all, NativeBy::Function, false);
    for (function, total) in [
        ("leak_block", printed(stdout, "leaked")),
        ("churn_block", printed(stdout, "churned")),
        ("grow_buffer", printed(stdout, "grew")),
    ] {
        let got = bytes_of(&allocated, function);
        assert!(
            within(got, total, 0.15),
            "{what}: {function} allocated {got} of {total} (counters {:?}): {allocated}",
            rec.counters
        );
    }
}

#[test]
fn nativemem_names_the_leak_and_its_bytes_with_the_library_loaded_after_the_start() {
    for java in javas() {
        // The agent starts with the JVM; System.loadLibrary comes later.
        let (rec, stdout) = record(
            &java,
            "start",
            "nativemem=128k",
            &[],
            &["load", "leak", "churn", "grow"],
        );
        check_paths(&rec, &stdout, &format!("JDK {}", java.major));
        let header = |k: &str| rec.header.extra(k).map(str::to_string);
        assert_eq!(header("nativemem.interval").as_deref(), Some("131072"));
        let counter = |name: &str| rec.counters.get(name).copied().unwrap_or(0);
        assert!(counter("interpose.slots") > 0 && counter("nativemem.samples") > 500);
        assert_eq!(
            counter("nativemem.dropped") + counter("nativemem.frees_dropped"),
            0
        );
        // realloc chains: every block but the last is freed by the next realloc.
        let grown: Vec<_> = native_allocations(&rec, &EventFilter::default())
            .into_iter()
            .filter(|a| {
                rec.stack(a.stack)
                    .first()
                    .is_some_and(|f| rec.method_label(f.method).starts_with("grow_buffer"))
            })
            .collect();
        assert!(
            grown.len() > 64,
            "JDK {}: {} realloc samples",
            java.major,
            grown.len()
        );
        assert!(grown.iter().all(|a| a.freed_ticks.is_some()));
    }
}

#[test]
fn nativemem_attached_mid_run_sees_the_loaded_library() {
    for java in javas() {
        let Some(jcmd) = jcmd(&java) else {
            tools::missing(&format!("jcmd of JDK {}", java.major), JCMD);
            continue;
        };
        let dir = temp_dir(&format!("nativemem-attach-{}", java.major));
        let (go, file) = (dir.join("go"), dir.join("out.jsc"));
        let go_action = format!("await:{}", go.display());
        let actions = ["load", "ready", go_action.as_str(), "leak", "churn", "grow"];
        let mut child = Child::spawn(&mut command(&java, None, &actions));
        let stdout = child.0.stdout.take().unwrap();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
        let said = jcmd_agent_load(
            &jcmd,
            child.id(),
            &format!("nativemem=128k,file={}", file.display()),
        );
        assert!(
            said.contains("return code: 0"),
            "JDK {}: {said}",
            java.major
        );
        std::fs::write(&go, b"").unwrap();
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let mut out = child.finish(JVM_LIMIT);
        out.stdout = rest.join("\n").into_bytes();
        let stdout = checked(&java, &out);
        let rec = read(&file);
        assert_eq!(rec.header.extra("started_by"), Some("attach"));
        check_paths(&rec, &stdout, &format!("JDK {} attached", java.major));
    }
}

#[test]
fn nativemem_with_jemalloc_preloaded() {
    if !Path::new(JEMALLOC).exists() {
        tools::missing("Debian's libjemalloc2", "apt-get install libjemalloc2");
        return;
    }
    for java in javas() {
        // jemalloc's own mutexes go through the lock hooks, from inside malloc.
        let (rec, stdout) = record(
            &java,
            "jemalloc",
            "nativemem=128k,nativelock",
            &[("LD_PRELOAD", JEMALLOC)],
            &["load", "allocator", "leak", "churn", "grow"],
        );
        assert!(
            stdout.contains("allocator libjemalloc.so.2"),
            "JDK {}: {stdout}",
            java.major
        );
        check_paths(&rec, &stdout, &format!("JDK {} with jemalloc", java.major));
    }
}

#[test]
fn nativelock_measures_the_time_two_threads_wait_for_one_mutex() {
    for java in javas() {
        let (rec, stdout) = record(&java, "lock", "nativelock", &[], &["load", "contend"]);
        let truth = printed(&stdout, "blocked");
        let report = lock_report(&rec, &EventFilter::default());
        let mutex = report
            .native
            .iter()
            .find(|n| n.sites.iter().any(|s| s.site.starts_with("contend_once")))
            .unwrap_or_else(|| panic!("JDK {}: no contend_once lock: {report}", java.major));
        assert_eq!(mutex.function, "pthread_mutex_lock");
        assert!(
            within(mutex.total_ns as f64, truth, 0.15),
            "JDK {}: {} ns blocked, the fixture measured {truth} (counters {:?}, {} waits)",
            java.major,
            mutex.total_ns,
            rec.counters,
            mutex.sites.iter().map(|s| s.count).sum::<u64>()
        );
        assert!(mutex.sites[0]
            .stack
            .iter()
            .any(|f| f.starts_with("contender")));
        assert_eq!(rec.header.extra("nativelock.interval"), Some("10000"));
    }
}

#[test]
fn threads_the_jvm_does_not_know_and_a_forked_child_are_handled() {
    for java in javas() {
        let (rec, stdout) = record(
            &java,
            "threads",
            "nativemem=16k,nativelock,mode=cpu",
            &[],
            &["load", "thread", "fork"],
        );
        assert_eq!(
            printed(&stdout, "child exited"),
            7.0,
            "the child ran its hooks through"
        );
        let leaks = native_mem_report(&rec, &EventFilter::default(), NativeBy::Function, true);
        let row = leaks
            .rows
            .iter()
            .find(|r| r.site.function.starts_with("thread_leak_block"))
            .unwrap_or_else(|| panic!("JDK {}: {leaks}", java.major));
        assert_eq!(row.site.caller, "[no Java frame]");
        assert!(
            row.stack.iter().any(|f| f.starts_with("native_leaker")),
            "{row:?}"
        );
        assert!(
            within(row.bytes as f64, 8.0 * 1024.0 * 1024.0, 0.15),
            "{}",
            row.bytes
        );
        let leaker = native_allocations(&rec, &EventFilter::default())
            .into_iter()
            .find(|a| {
                rec.stack(a.stack)
                    .first()
                    .is_some_and(|f| rec.method_label(f.method).starts_with("thread_leak_block"))
            })
            .expect("the native thread's samples");
        let thread = rec
            .thread(leaker.event.thread)
            .expect("the native thread is named");
        assert_eq!(thread.java_id, 0, "a thread the JVM does not know");
    }
}

#[test]
fn stopping_while_threads_are_inside_the_hooks_loses_no_free() {
    for java in javas() {
        let Some(jcmd) = jcmd(&java) else {
            tools::missing(&format!("jcmd of JDK {}", java.major), JCMD);
            continue;
        };
        let dir = temp_dir(&format!("nativemem-stop-{}", java.major));
        let (go, file) = (dir.join("go"), dir.join("out.jsc"));
        let go_action = format!("await:{}", go.display());
        // The hammer starts once the agent is in (an attach listener starting
        // on two busy cores can take longer than jcmd waits).
        let actions = ["load", "ready", go_action.as_str(), "hammer:5000", "join"];
        let mut child = Child::spawn(&mut command(&java, None, &actions));
        let stdout = child.0.stdout.take().unwrap();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("ready"));
        // Every call sampled: the hooks' slow paths run all the time.
        let options = format!("nativemem=0,nativelock=0,file={}", file.display());
        let said = jcmd_agent_load(&jcmd, child.id(), &options);
        assert!(
            said.contains("return code: 0"),
            "JDK {}: {said}",
            java.major
        );
        std::fs::write(&go, b"").unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        // (Under load JDK 25's jcmd may say only "Command executed
        // successfully"; the recording's own end says whether it stopped.)
        jcmd_agent_load(&jcmd, child.id(), "stop");
        assert!(wait_until(Duration::from_secs(10), || file
            .metadata()
            .is_ok_and(|m| m.len() > 0)));
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let mut out = child.finish(JVM_LIMIT);
        out.stdout = rest.join("\n").into_bytes();
        let stdout = checked(&java, &out);
        assert!(
            printed(&stdout, "hammered") > 0.0,
            "the hooks went on after the stop"
        );
        let rec = read(&file);
        // The stop (a second attach, slow on two busy cores) came while the
        // hammer still ran: the recording ended before the hammer did.
        let end_ms = (rec.header.start_wall_ns + rec.duration_ns()) / 1_000_000;
        let hammer_end_ms = printed(&stdout, "hammer_end_ms") as u64;
        assert!(
            end_ms < hammer_end_ms,
            "JDK {}: the recording ended {} ms after the hammer, not while it ran",
            java.major,
            end_ms - hammer_end_ms
        );
        let hammered: Vec<_> = native_allocations(&rec, &EventFilter::default())
            .into_iter()
            .filter(|a| {
                rec.stack(a.stack)
                    .iter()
                    .any(|f| rec.method_label(f.method).starts_with("hammer_thread"))
            })
            .collect();
        assert!(
            hammered.len() > 1000,
            "JDK {}: {} samples",
            java.major,
            hammered.len()
        );
        // Every free a hook handed to the writer is in the file, the last
        // ones before the stop included.
        let counter = |name: &str| rec.counters.get(name).copied().unwrap_or(0);
        let frees = rec
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::NativeFree { .. }))
            .count() as u64;
        assert_eq!(frees, counter("nativemem.frees"), "JDK {}", java.major);
        // Each hammer thread holds four blocks at most at any moment: only
        // those can have been freed after the stop, besides the frees a full
        // ring could not take (on a loaded machine, every call sampled).
        let held = hammered.iter().filter(|a| a.leaked()).count() as u64;
        let dropped = counter("nativemem.frees_dropped");
        assert!(
            held <= 4 * 4 + dropped,
            "JDK {}: {held} blocks never freed of {} ({dropped} frees dropped)",
            java.major,
            hammered.len()
        );
        let untracked = hammered.iter().filter(|a| a.id == 0).count() as u64;
        assert!(untracked <= counter("nativemem.untracked"));
    }
}

#[test]
fn a_panic_in_the_hooks_stops_them_and_the_jvm_runs_on() {
    let java = &javas()[0];
    let file = temp_dir("nativemem-panic").join("out.jsc");
    let options = format!("nativemem=64k,panictest=nativemem,file={}", file.display());
    let out = Child::spawn(&mut command(
        java,
        Some(&options),
        &["load", "leak", "churn"],
    ))
    .finish(JVM_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("internal error"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("hook; native memory and locks are no longer recorded"),
        "{stderr}"
    );
    let rec = read(&file);
    assert_eq!(
        rec.counters.get("agent.panics"),
        Some(&1),
        "one panic, then the hooks passed through"
    );
}

#[test]
fn a_soak_of_jdk_work_with_nativemem_and_nativelock_does_not_crash() {
    for java in javas() {
        let (rec, _) = record(
            &java,
            "soak",
            "nativemem,nativelock,mode=cpu",
            &[],
            &["load", "soak:4000", "hammer:2000", "join"],
        );
        let report = native_mem_report(&rec, &EventFilter::default(), NativeBy::Library, false);
        let libs: Vec<&str> = report.rows.iter().map(|r| r.key.as_str()).collect();
        assert!(
            libs.iter()
                .any(|l| l.starts_with("libzip.so") || l.starts_with("libz.so")),
            "JDK {}: {libs:?}",
            java.major
        );
        assert!(!rec.samples.is_empty(), "cpu sampling ran beside the hooks");
    }
    // A real program: the JDK's own compiler, compiling the fixtures.
    let javac = Path::new("/usr/bin/javac");
    if !javac.exists() {
        tools::missing("javac", "apt-get install openjdk-17-jdk-headless");
        return;
    }
    let out_dir = temp_dir("nativemem-javac");
    let file = out_dir.join("javac.jsc");
    let status = Command::new(javac)
        .arg(format!(
            "-J-agentpath:{}=nativemem=32k,nativelock,mode=cpu,quiet,file={}",
            agent_path().display(),
            file.display()
        ))
        .arg("-J-Xcheck:jni")
        .arg("-d")
        .arg(&out_dir)
        .arg(fixtures().join("NativeMem.java"))
        .arg(fixtures().join("Soak.java"))
        .status()
        .expect("javac runs");
    assert!(status.success());
    let rec = read(&file);
    assert!(rec
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::NativeAlloc { .. })));
}
