//! Where the collector says what happened: one line per event (a refused client, a
//! dropped connection, a store failure), to stderr by default.

use std::sync::Mutex;

/// Receives the collector's log lines.
pub trait LogSink: Send + Sync {
    fn line(&self, line: &str);
}

/// Writes each line to stderr, prefixed with `jscope-collector:`.
pub struct StderrLog;

impl LogSink for StderrLog {
    fn line(&self, line: &str) {
        eprintln!("jscope-collector: {line}");
    }
}

/// Keeps lines in memory (tests, and an embedding program that shows them itself).
#[derive(Default)]
pub struct MemoryLog {
    lines: Mutex<Vec<String>>,
}

impl MemoryLog {
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("log lock").clone()
    }
}

impl LogSink for MemoryLog {
    fn line(&self, line: &str) {
        self.lines.lock().expect("log lock").push(line.to_string());
    }
}
