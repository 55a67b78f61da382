//! The programs tests drive besides JVMs (Chromium, Go, Node.js, npm, ClickHouse)
//! and what happens when one is missing: under `CI=true` the test fails, naming
//! it and how to install it (`scripts/test.sh` installs everything the tests
//! need); elsewhere it prints a note and the caller skips.

use std::path::PathBuf;
use std::process::Command;

/// Whether the tests run where every tool and JDK must be present (`CI=true`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// `what` (a tool or a JDK) is not here: under `CI=true` this fails the test with
/// `what` and `install`; elsewhere it notes the skip and returns, and the caller
/// skips what needs it.
pub fn missing(what: &str, install: &str) {
    if in_ci() {
        panic!(
            "{what} is missing ({install}; scripts/test.sh installs it): CI=true runs every test"
        );
    }
    eprintln!("note: skipped: {what} is missing ({install}; scripts/test.sh installs it)");
}

/// The first of `names` found on PATH.
pub fn find_command(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// The first of `names` on PATH, or [`missing`] with `install`.
pub fn command(names: &[&str], install: &str) -> Option<PathBuf> {
    let found = find_command(names);
    if found.is_none() {
        missing(names[0], install);
    }
    found
}

/// Headless Chromium, for the web UI's and the exports' browser tests.
pub fn chromium() -> Option<PathBuf> {
    command(
        &["chromium", "chromium-browser", "google-chrome"],
        "apt-get install chromium",
    )
}

/// `go`, whose `go tool pprof` reads the pprof export.
pub fn go() -> Option<PathBuf> {
    command(&["go"], "apt-get install golang-go")
}

/// Node.js, which runs the flame graph page's script.
pub fn node() -> Option<PathBuf> {
    command(&["node", "nodejs"], "apt-get install nodejs")
}

/// speedscope's built web app, opened in Chromium by the export tests: from
/// `target/npm` (where `scripts/test.sh` installs it), installed there by npm when
/// it is not yet.
pub fn speedscope(version: &str) -> Option<PathBuf> {
    let prefix = crate::workspace_root().join("target/npm");
    let dist = prefix.join("node_modules/speedscope/dist/release");
    if dist.join("index.html").is_file() {
        return Some(dist);
    }
    let npm = command(&["npm"], "apt-get install npm")?;
    let out = Command::new(npm)
        .args(["install", "-q", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg(format!("speedscope@{version}"))
        .output()
        .expect("run npm");
    assert!(
        out.status.success(),
        "npm install speedscope@{version}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(dist)
}
