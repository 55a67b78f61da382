//! The snapshot engine (xdProf's view): a sampler thread, attached to the VM as a
//! daemon, takes every Java thread's stack and state each interval and hands the
//! raw snapshot to the writer, which resolves and writes it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock;
use crate::java_threads::{describe, ThreadFields};
use crate::jvm::{Jni, Jvmti, Vm};
use crate::stopper::Stopper;
use crate::threads::{gettid, ThreadTable};

/// One thread in a raw snapshot.
pub struct RawSnapshotThread {
    /// Start order (the recording's thread id).
    pub order: u32,
    pub state: u32,
    /// (jmethodID, bci) top first; bci is -1 for native frames.
    pub frames: Vec<(usize, i32)>,
}

/// A snapshot before symbol resolution.
pub struct RawSnapshot {
    pub ticks: u64,
    pub interval_ns: u64,
    pub threads: Vec<RawSnapshotThread>,
}

pub struct SnapshotSampler {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub fields: ThreadFields,
    pub table: Arc<ThreadTable>,
    pub stopper: Arc<Stopper>,
    pub done: Arc<Stopper>,
    pub interval: Duration,
    pub depth: u32,
    pub out: SyncSender<RawSnapshot>,
    /// Snapshots the writer could not take in time.
    pub dropped: Arc<AtomicU64>,
}

impl SnapshotSampler {
    pub fn spawn(self) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("jscope-snapshot".into())
            .spawn(move || {
                let done = self.done.clone();
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run()));
                done.stop();
            })
    }

    fn run(self) {
        // Marked before attaching so the ThreadStart callback skips this thread.
        self.table.mark_agent(gettid());
        let Some(jni) = self.vm.attach_daemon("jscope-snapshot") else {
            return;
        };
        self.mark_agent_java_id(jni);
        let mut previous: Option<u64> = None;
        let mut next = Instant::now();
        while !self.stopper.wait_until(next) {
            next = (next + self.interval).max(Instant::now());
            let ticks = clock::monotonic_ns();
            let interval_ns = previous.map_or(0, |p| ticks - p);
            previous = Some(ticks);
            let threads = self.take(jni);
            if self
                .out
                .try_send(RawSnapshot {
                    ticks,
                    interval_ns,
                    threads,
                })
                .is_err()
            {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.vm.detach();
    }

    fn mark_agent_java_id(&self, jni: Jni) {
        if let Some(me) = self.jvmti.current_thread() {
            self.table.mark_agent_java(self.fields.java_id(jni, me));
            jni.delete_local(me);
        }
    }

    /// All Java threads but the agent's, with states and stacks.
    fn take(&self, jni: Jni) -> Vec<RawSnapshotThread> {
        jni.with_local_frame(64, || {
            let Ok(traces) = self.jvmti.all_stack_traces(self.depth) else {
                return Vec::new();
            };
            let traces: Vec<_> = traces
                .iter()
                .map(|t| (t.thread, t.state, frames_of(t.frames)))
                .collect();
            jni.ensure_local_capacity(traces.len() + 64);
            let mut threads = Vec::with_capacity(traces.len());
            for (thread, state, frames) in traces {
                if let Some((java_id, info)) = describe(self.jvmti, jni, self.fields, thread) {
                    if !self.table.is_agent_java(java_id) {
                        let order = self.table.see(java_id, info, None);
                        threads.push(RawSnapshotThread {
                            order,
                            state,
                            frames,
                        });
                    }
                }
                jni.delete_local(thread);
            }
            threads
        })
    }
}

fn frames_of(frames: &[crate::sys::jvmtiFrameInfo]) -> Vec<(usize, i32)> {
    frames
        .iter()
        .map(|f| {
            (
                f.method as usize,
                f.location.clamp(-1, i32::MAX as i64) as i32,
            )
        })
        .collect()
}
