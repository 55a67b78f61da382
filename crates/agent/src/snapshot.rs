//! The snapshot engine (xdProf's view): a sampler thread, attached to the VM as a
//! daemon, takes every Java thread's stack and state each interval and hands the
//! raw snapshot to the writer, which resolves and writes it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jscope_format::{Snapshot, SnapshotThread, StackId, ThreadId};

use crate::clock;
use crate::engine::{Drained, Engine, StartContext, StartError, StopContext};
use crate::java_threads::{self, describe, ThreadFields};
use crate::jvm::{Jni, Jvmti, Vm};
use crate::options::Options;
use crate::sink::Sink;
use crate::stopper::{SamplerThread, Stopper};
use crate::threads::{gettid, ThreadTable};

/// One thread in a raw snapshot.
struct RawSnapshotThread {
    /// Start order (the recording's thread id).
    order: u32,
    state: u32,
    /// (jmethodID, bci) top first; bci is -1 for native frames.
    frames: Vec<(usize, i32)>,
    /// Java id of the virtual thread mounted on this carrier (0: none): the
    /// state and frames are then the virtual thread's.
    vthread: i64,
}

/// A snapshot before symbol resolution.
struct RawSnapshot {
    ticks: u64,
    interval_ns: u64,
    threads: Vec<RawSnapshotThread>,
}

struct SnapshotSampler {
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
        java_threads::mark_agent_java(&self.table, jni);
        crate::trace::vthreads::keep_mounted_refs(true, jni);
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
        crate::trace::vthreads::keep_mounted_refs(false, jni);
        self.vm.detach();
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
                        threads.push(self.mounted_or(jni, order, state, frames));
                    }
                }
                jni.delete_local(thread);
            }
            threads
        })
    }
}

impl SnapshotSampler {
    /// A carrier running a virtual thread stands for the virtual thread (its
    /// own stack shows only `Continuation.run`); any other thread for itself.
    fn mounted_or(
        &self,
        jni: Jni,
        order: u32,
        state: u32,
        frames: Vec<(usize, i32)>,
    ) -> RawSnapshotThread {
        let tid = self.table.tid_of(order);
        let mounted = (tid != 0)
            .then(|| crate::trace::vthreads::mounted_ref(tid, jni))
            .flatten();
        let Some((vthread, local)) = mounted else {
            return RawSnapshotThread {
                order,
                state,
                frames,
                vthread: 0,
            };
        };
        let frames = self.jvmti.stack_of(local, self.depth);
        let state = self.jvmti.thread_state(local);
        jni.delete_local(local);
        RawSnapshotThread {
            order,
            state,
            frames,
            vthread,
        }
    }
}

/// Raw snapshots waiting for the writer before the sampler drops new ones.
const SNAPSHOT_QUEUE: usize = 64;

/// The snapshot engine: runs the sampler thread when `snapshot` mode is asked
/// for; the writer resolves and writes what it queued.
pub(crate) struct SnapshotEngine {
    /// `snapshot` mode asked for.
    wanted: bool,
    interval: Duration,
    depth: u32,
    queue: Mutex<Option<Receiver<RawSnapshot>>>,
    /// Snapshots the writer could not take in time.
    dropped: Arc<AtomicU64>,
    written: AtomicU64,
    sampler: SamplerThread,
}

impl SnapshotEngine {
    pub fn new(options: &Options) -> SnapshotEngine {
        SnapshotEngine {
            wanted: options.modes.snapshot,
            interval: options.snap_interval,
            depth: options.depth,
            queue: Mutex::new(None),
            dropped: Arc::default(),
            written: AtomicU64::new(0),
            sampler: SamplerThread::default(),
        }
    }

    fn write(&self, sink: &mut Sink, raw: RawSnapshot) {
        let mut threads = Vec::with_capacity(raw.threads.len());
        for t in raw.threads {
            sink.emit_thread(t.order);
            let (thread, carrier) = match t.vthread {
                0 => (t.order, 0),
                id => (sink.virtual_thread(id), t.order),
            };
            let stack = sink.stack(t.frames.into_iter());
            threads.push(SnapshotThread {
                thread: ThreadId(thread),
                carrier: ThreadId(carrier),
                state: t.state,
                stack: StackId(stack),
            });
        }
        sink.chunk.snapshot(&Snapshot {
            ticks: raw.ticks,
            interval_ns: raw.interval_ns,
            threads,
        });
        self.written.fetch_add(1, Ordering::Relaxed);
    }
}

impl Engine for SnapshotEngine {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        if !self.wanted {
            return Ok(());
        }
        let (tx, rx) = sync_channel(SNAPSHOT_QUEUE);
        *self.queue.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
        let started = self.sampler.start(|stopper, done| {
            let sampler = SnapshotSampler {
                vm: ctx.vm,
                jvmti: ctx.jvmti,
                fields: ctx.fields,
                table: ctx.table.clone(),
                stopper,
                done,
                interval: self.interval,
                depth: self.depth,
                out: tx,
                dropped: self.dropped.clone(),
            };
            sampler.spawn()
        });
        started.map_err(StartError::Thread)
    }

    fn stop(&self, _ctx: &StopContext) {
        self.sampler.stop();
    }

    fn wait(&self, deadline: Instant) {
        self.sampler.wait(deadline);
    }

    fn drain(&self, sink: &mut Sink) -> Drained {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = queue.as_ref() {
            while let Ok(snapshot) = queue.try_recv() {
                self.write(sink, snapshot);
            }
        }
        Drained::All
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        out.push(("snapshots.written", self.written.load(Ordering::Relaxed)));
        out.push(("snapshots.dropped", self.dropped.load(Ordering::Relaxed)));
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
