//! Helpers shared by the bytecode integration tests: walk class trees, instrument
//! them with sequential method ids, and run a JVM on the result.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use jscope_bytecode::{instrument, Outcome, Probes, Reason};
use jscope_testkit::{Child, Java};

/// Every `.class` file under `dir`, sorted.
pub fn class_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "class") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// What instrumenting a tree did: method ids (index = id) and skip reasons.
#[derive(Default, Debug)]
pub struct TreeReport {
    /// `class.method descriptor` for every id handed out, instrumented or not.
    pub ids: Vec<String>,
    pub instrumented: usize,
    pub skipped: BTreeMap<String, Vec<String>>,
    pub classes_changed: usize,
}

impl TreeReport {
    pub fn id_of(&self, method: &str) -> u32 {
        let found = self.ids.iter().position(|m| m == method);
        found.unwrap_or_else(|| panic!("no id for {method}")) as u32
    }

    pub fn skipped_count(&self) -> usize {
        self.skipped.values().map(Vec::len).sum()
    }
}

/// Instruments every method of every class under `src` (except those `keep`
/// rejects, which are copied as they are) into the same layout under `dst`.
pub fn instrument_tree(
    src: &Path,
    dst: &Path,
    keep: impl Fn(&Path) -> bool,
    probes: &Probes,
) -> TreeReport {
    let mut report = TreeReport::default();
    for file in class_files(src) {
        let bytes = std::fs::read(&file).unwrap();
        let target = dst.join(file.strip_prefix(src).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        if !keep(&file) {
            std::fs::write(&target, &bytes).unwrap();
            continue;
        }
        let out = instrument_class(&bytes, &mut report, &file, probes);
        std::fs::write(&target, out.as_deref().unwrap_or(&bytes)).unwrap();
    }
    report
}

/// Instruments all methods of one class, recording ids and reasons in `report`.
pub fn instrument_class(
    bytes: &[u8],
    report: &mut TreeReport,
    file: &Path,
    probes: &Probes,
) -> Option<Vec<u8>> {
    let next = std::cell::RefCell::new(Vec::new());
    let result = instrument(
        bytes,
        |class, method, desc| {
            let mut ids = next.borrow_mut();
            ids.push(format!("{class}.{method}{desc}"));
            Some((report.ids.len() + ids.len() - 1) as u32)
        },
        probes,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    report.ids.extend(next.into_inner());
    for m in &result.methods {
        match &m.outcome {
            Outcome::Instrumented(_) => report.instrumented += 1,
            Outcome::Skipped(reason) => report
                .skipped
                .entry(reason_key(reason))
                .or_default()
                .push(format!("{}:{}{}", file.display(), m.name, m.descriptor)),
        }
    }
    report.classes_changed += usize::from(result.bytes.is_some());
    result.bytes
}

fn reason_key(reason: &Reason) -> String {
    match reason {
        Reason::Untypable { .. } => "Untypable".into(),
        other => format!("{other:?}"),
    }
}

/// Runs `java` with `args`, failing the test if it does not end within two minutes.
pub fn run_java(java: &Java, args: &[&str]) -> Output {
    let mut cmd = Command::new(&java.bin);
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    Child::spawn(&mut cmd).finish(Duration::from_secs(120))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
