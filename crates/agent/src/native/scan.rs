//! The cpu engine's thread scanner: every RESCAN it lists /proc/self/task, arms
//! the threads that have no signal source yet (the JVM starts GC workers and
//! compiler threads without a JVMTI ThreadStart, and native code starts its own),
//! releases the sources of threads that ended, and refreshes the handler's table
//! of library code (libraries loaded since, e.g. by System.load). It never
//! attaches to the VM.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stopper::Stopper;
use crate::threads::{gettid, process_tids, ThreadTable};

/// How often the threads and mappings are re-read.
const RESCAN: Duration = Duration::from_millis(150);

/// Given the process's threads (the agent's left out) at each rescan: arms the
/// new ones and releases those that ended.
pub type SyncThreads = Box<dyn Fn(&[u32]) + Send>;

pub struct Scanner {
    stopper: Arc<Stopper>,
    done: Arc<Stopper>,
}

impl Scanner {
    pub fn spawn(sync: SyncThreads, table: Arc<ThreadTable>) -> std::io::Result<Scanner> {
        let stopper = Arc::new(Stopper::default());
        let done = Arc::new(Stopper::default());
        let (s, d) = (stopper.clone(), done.clone());
        std::thread::Builder::new()
            .name("jscope-threads".into())
            .spawn(move || {
                table.mark_agent(gettid());
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&*sync, &s)));
                d.stop();
            })?;
        Ok(Scanner { stopper, done })
    }

    pub fn stop(&self) {
        self.stopper.stop();
    }

    pub fn wait(&self, deadline: Instant) {
        self.done.wait_until(deadline);
    }
}

fn run(sync: &dyn Fn(&[u32]), stopper: &Stopper) {
    while !stopper.wait_until(Instant::now() + RESCAN) {
        super::walk::refresh_code_ranges();
        // The agent's own threads included: their CPU time is the process's.
        sync(&process_tids());
    }
}
