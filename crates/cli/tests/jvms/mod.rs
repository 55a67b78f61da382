//! Real JVMs streaming to a `jscope serve` child: the Hot fixture, the collector's
//! JVM list, and `jscope info` read back, for the end-to-end and failover tests.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, Child, Java};
use serde_json::Value;

use crate::serving::Served;

/// The JVMs of these tests spin; one test at a time keeps them from starving.
static ONE_TEST_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_TEST_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn classes() -> PathBuf {
    agent_path();
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// `java -agentpath:AGENT=OPTIONS -cp CLASSES Hot WHICH MILLIS`, running.
pub fn hot_jvm(java: &Java, options: &str, which: &str, millis: u64) -> Child {
    Child::spawn(
        Command::new(&java.bin)
            .arg(format!("-agentpath:{}={options}", agent_path().display()))
            .arg("-cp")
            .arg(classes())
            .args(["Hot", which, &millis.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    )
}

/// The collector's JVM list.
pub fn rows(served: &Served) -> Vec<Value> {
    served.json("/api/jvms").as_array().unwrap().clone()
}

pub fn row_of(served: &Served, pid: u32) -> Option<Value> {
    rows(served).into_iter().find(|r| r["pid"] == pid)
}

/// A loopback address nobody listens on yet (free when this returns; good
/// enough for a test).
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `jscope info SOURCE... --format json`.
pub fn info(args: &[&str]) -> Value {
    crate::support::jscope_json(&[&["info"], args, &["--format", "json"]].concat())
}

/// A counter of `info`'s JSON, when recorded.
pub fn counter(info: &Value, name: &str) -> Option<u64> {
    info["other_counters"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)?["value"]
        .as_u64()
}

/// Cpu samples and snapshots: what a recording holds, to compare copies.
pub fn holdings(info: &Value) -> (u64, u64) {
    (
        info["samples"]["cpu"].as_u64().unwrap(),
        info["snapshots"].as_u64().unwrap(),
    )
}

/// Waits for the JVM to exit, asserting it succeeded.
pub fn wait_exit(jvm: &mut Child, java: &Java) {
    let status = jvm
        .wait_timeout(Duration::from_secs(120))
        .unwrap_or_else(|| panic!("jdk {}: the JVM did not exit", java.major));
    assert!(status.success(), "jdk {}: {status}", java.major);
}
