//! The writer thread: attached to the VM as a daemon (it calls JVMTI to resolve
//! methods), it drains the sample ring and the snapshot queue, turns raw samples
//! into recording records and writes a chunk at least every second or every MiB,
//! to the file and/or to the collector's sender. Symbol resolution, compression and
//! file I/O all happen here, off the application's threads; network I/O happens on
//! the sender thread, so a slow collector never holds the writer.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jscope_format::thread_state::IN_NATIVE;
use jscope_format::{ChunkWriter, Sample, SampleMode, Snapshot, SnapshotThread, ThreadDef};
use jscope_format::{StackId, StringId, ThreadId};

use crate::clock;
use crate::cpu_timers::CpuTimers;
use crate::java_threads::{EnvMapper, ThreadFields};
use crate::jvm::{Jni, Jvmti, MethodNames, Vm};
use crate::ring::{CallFrame, SampleHeader};
use crate::sender::CollectorLink;
use crate::signals::{SignalShared, NOT_ATTACHED};
use crate::snapshot::RawSnapshot;
use crate::stopper::Stopper;
use crate::symbols::{ChunkCutter, Symbols};
use crate::threads::{gettid, kernel_thread_name, ThreadEntry, ThreadTable};

/// A chunk is written when it holds this much, or when FLUSH_EVERY has passed.
const FLUSH_BYTES: usize = 1 << 20;
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often the writer looks for new samples.
const POLL: Duration = Duration::from_millis(10);

/// The running writer's thread, for [`nudge`]; each writer start leaks one
/// handle (a few bytes per recording) so a nudging thread never reads a freed one.
static WRITER_THREAD: AtomicPtr<std::thread::Thread> = AtomicPtr::new(std::ptr::null_mut());
static WRITER_NUDGED: AtomicBool = AtomicBool::new(false);

/// Wakes the writer before its next poll: a producer whose buffer is filling
/// fast calls this (lock-free; at most one wake-up per poll).
pub fn nudge() {
    // A plain load first: producers with full rings call this on every event, and
    // a locked swap each time would cost them more than the event itself.
    if WRITER_NUDGED.load(Ordering::Relaxed) || WRITER_NUDGED.swap(true, Ordering::Relaxed) {
        return;
    }
    let t = WRITER_THREAD.load(Ordering::Acquire);
    if !t.is_null() {
        // SAFETY: handles stored in WRITER_THREAD are leaked, never freed.
        unsafe { (*t).unpark() };
    }
}

/// Everything the writer thread owns or shares.
pub struct WriterConfig {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub fields: ThreadFields,
    pub table: Arc<ThreadTable>,
    pub signals: Option<&'static SignalShared>,
    pub timers: Option<Arc<CpuTimers>>,
    pub snapshots: Receiver<RawSnapshot>,
    pub snapshots_dropped: Arc<AtomicU64>,
    /// None when the chunks go to a collector only.
    pub file: Option<File>,
    pub collector: Option<CollectorLink>,
    /// Set when the sources have stopped: drain what is left and finish.
    pub stopper: Arc<Stopper>,
    /// Set by the writer when the file is complete.
    pub done: Arc<Stopper>,
}

/// Resolves a jmethodID with JVMTI; None when its class is gone.
fn resolve_method(jvmti: Jvmti, jni: Jni) -> impl FnMut(usize) -> Option<MethodNames> {
    move |key| jvmti.method_names(jni, key as crate::sys::jmethodID).ok()
}

/// Consecutive "not a Java thread" walk results per Linux thread. A thread not
/// attached to the VM is struck out at once; one the walker calls "unknown, not
/// Java" (-3: compiler and other hidden VM threads, or a native thread without a
/// walkable Java frame) after STRIKE_OUT results in a row, since a Java thread in
/// transition can give that code once.
#[derive(Default)]
struct Strikes {
    by_tid: HashMap<u32, u32>,
}

const STRIKE_OUT: u32 = 3;
const UNKNOWN_NOT_JAVA: i32 = -3;

impl Strikes {
    /// Counts a failed walk; true when the thread should no longer be sampled.
    fn strike(&mut self, tid: u32, code: i32) -> bool {
        match code {
            NOT_ATTACHED => true,
            UNKNOWN_NOT_JAVA => {
                let n = self.by_tid.entry(tid).or_default();
                *n += 1;
                *n >= STRIKE_OUT
            }
            _ => false,
        }
    }

    fn clear(&mut self, tid: u32) {
        self.by_tid.remove(&tid);
    }
}

struct Writer {
    cfg: WriterConfig,
    jni: Jni,
    env_mapper: Option<EnvMapper>,
    /// JNIEnvs that matched no live thread (it ended before the writer looked).
    unmatched_envs: HashMap<usize, u32>,
    chunk: ChunkWriter,
    symbols: Symbols,
    /// Revision of each thread definition already written.
    emitted: HashMap<u32, u32>,
    strikes: Strikes,
    last_flush: Instant,
    samples: u64,
    snapshots: u64,
    write_error: Option<std::io::Error>,
    /// Exact tracing's events waiting in the threads' rings (crate::trace).
    trace: crate::trace::drain::TraceDrain,
    /// JVM and user events waiting in their queues (crate::events).
    events: crate::events::drain::EventDrain,
}

impl WriterConfig {
    pub fn spawn(self) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("jscope-writer".into())
            .spawn(move || {
                let done = self.done.clone();
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(self)));
                done.stop();
            })
    }
}

fn run(cfg: WriterConfig) {
    let me = Box::into_raw(Box::new(std::thread::current()));
    WRITER_THREAD.store(me, Ordering::Release);
    cfg.table.mark_agent(gettid());
    let Some(jni) = cfg.vm.attach_daemon("jscope-writer") else {
        return;
    };
    if let Some(me) = cfg.jvmti.current_thread() {
        cfg.table.mark_agent_java(cfg.fields.java_id(jni, me));
        jni.delete_local(me);
    }
    let env_mapper = EnvMapper::calibrate(cfg.jvmti, jni, cfg.fields);
    let vm = cfg.vm;
    let mut writer = Writer {
        cfg,
        jni,
        env_mapper,
        unmatched_envs: HashMap::new(),
        chunk: ChunkWriter::new(),
        symbols: Symbols::default(),
        emitted: HashMap::new(),
        strikes: Strikes::default(),
        last_flush: Instant::now(),
        samples: 0,
        snapshots: 0,
        write_error: None,
        trace: Default::default(),
        events: Default::default(),
    };
    writer.run();
    vm.detach();
}

impl Writer {
    fn run(&mut self) {
        loop {
            let stopping = self.cfg.stopper.park(POLL);
            WRITER_NUDGED.store(false, Ordering::Relaxed);
            self.drain();
            if stopping {
                break;
            }
            if self.chunk.raw_len() >= FLUSH_BYTES || self.last_flush.elapsed() >= FLUSH_EVERY {
                self.flush();
            }
        }
        self.finish();
    }

    fn drain(&mut self) {
        let jni = self.jni;
        jni.with_local_frame(32, || {
            while let Ok(snapshot) = self.cfg.snapshots.try_recv() {
                self.on_snapshot(snapshot);
            }
            if let Some(signals) = self.cfg.signals {
                while signals
                    .ring
                    .pop(|h, frames| self.on_sample(h, frames))
                    .is_some()
                {}
            }
            self.drain_traces();
            self.drain_events();
            self.drain_remote();
        });
    }

    /// Trace events of every thread, each batch under its recording thread.
    fn drain_traces(&mut self) {
        self.trace.begin_take();
        while let Some(raw) = self.trace.next_batch() {
            let known = raw.thread.or_else(|| match raw.java_id {
                0 => None,
                id => self.cfg.table.order_of_java_id(id),
            });
            let thread = match known {
                Some(t) => t,
                None => self.thread_of(raw.tid, raw.env),
            };
            self.emit_thread(thread);
            self.trace
                .write(raw, thread, &mut self.chunk, &mut self.symbols);
            // A thread far behind must not make one huge chunk.
            if self.chunk.raw_len() >= FLUSH_BYTES {
                self.flush();
            }
        }
    }

    /// JVM and user events, each on its thread's timeline (agent threads' own
    /// are left out, as their samples are).
    fn drain_events(&mut self) {
        let taken = self.events.take();
        self.events.write_defs(&mut self.chunk, &mut self.symbols);
        // Per drain, each thread is looked up once (user events come in runs).
        let mut known: HashMap<(u32, usize, i64), Option<u32>> = HashMap::new();
        for e in taken {
            let thread = match e.thread() {
                None => 0,
                Some(key) => match known.get(&key) {
                    Some(Some(t)) => *t,
                    Some(None) => continue,
                    None => {
                        let t = self.event_thread(key);
                        known.insert(key, t);
                        match t {
                            Some(t) => t,
                            None => continue,
                        }
                    }
                },
            };
            let owner = e
                .owner_java_id()
                .and_then(|id| self.cfg.table.order_of_java_id(id))
                .inspect(|&o| self.emit_thread(o))
                .unwrap_or(0);
            let vm = (self.cfg.jvmti, self.jni);
            self.events
                .write(e, (thread, owner), vm, &mut self.chunk, &mut self.symbols);
        }
    }

    /// RMI and HTTP calls made and served (crate::remote), under their threads.
    fn drain_remote(&mut self) {
        for r in crate::remote::take() {
            let Some(thread) = self.event_thread((r.tid, r.env, r.java_id)) else {
                continue;
            };
            let mut s = |text: &str| self.symbols.string(&mut self.chunk, text);
            let call = jscope_format::RemoteCall {
                side: if r.server {
                    jscope_format::RemoteSide::Server
                } else {
                    jscope_format::RemoteSide::Client
                },
                protocol: if r.http {
                    jscope_format::RemoteProtocol::Http
                } else {
                    jscope_format::RemoteProtocol::Rmi
                },
                thread: ThreadId(thread),
                ticks: r.start_ns,
                duration_ns: r.duration_ns,
                local_host: StringId(s(&r.local.0)),
                local_port: r.local.1,
                remote_host: StringId(s(&r.remote.0)),
                remote_port: r.remote.1,
                conn_seq: r.conn_seq,
                object: StringId(s(&r.object)),
                method_hash: r.method_hash,
                method: StringId(s(&r.method)),
                request_id: if r.request_id.is_empty() {
                    StringId::NONE
                } else {
                    StringId(s(&r.request_id))
                },
                stack: StackId::NONE,
                failed: r.failed,
            };
            self.chunk.remote(&call);
        }
    }

    /// The recording thread of an event from (Linux id, JNIEnv, Java id), named
    /// by its Java id when known; None for the agent's own threads.
    fn event_thread(&mut self, (tid, env, java_id): (u32, usize, i64)) -> Option<u32> {
        if self.cfg.table.is_agent(tid) {
            return None;
        }
        let t = match self.cfg.table.order_of_java_id(java_id) {
            Some(t) if java_id != 0 => t,
            _ => self.thread_of(tid, env),
        };
        self.emit_thread(t);
        Some(t)
    }

    fn on_sample(&mut self, h: &SampleHeader, frames: &[CallFrame]) {
        if h.num_frames <= 0 {
            // Failed walks are counted by the handler; here only threads that
            // can never give a Java stack are dropped from sampling.
            if self.strikes.strike(h.tid, h.num_frames) && !self.is_java_thread(h.tid, h.env) {
                self.exclude(h.tid);
            }
            return;
        }
        self.strikes.clear(h.tid);
        if self.cfg.table.is_agent(h.tid) {
            return;
        }
        let thread = self.thread_of(h.tid, h.env);
        self.emit_thread(thread);
        let mut resolve = resolve_method(self.cfg.jvmti, self.jni);
        let raw = frames.iter().map(|f| (f.method as usize, f.lineno));
        let stack = self.symbols.stack(&mut self.chunk, raw, &mut resolve);
        let mode = if h.mode == 1 {
            SampleMode::Cpu
        } else {
            SampleMode::Wall
        };
        let top_native = frames
            .first()
            .is_some_and(|f| self.symbols.is_native(f.method as usize));
        let sample = Sample {
            thread: ThreadId(thread),
            ticks: h.ticks,
            stack: StackId(stack),
            mode,
            weight_ns: h.weight_ns,
            state: sample_state(mode, h.state, top_native),
        };
        self.chunk.sample(&sample);
        self.samples += 1;
    }

    /// True for a thread JVMTI shows as a java.lang.Thread. Such a thread is never
    /// struck out, whatever its failed walks say: an application thread can give
    /// "unknown, not Java" several times in a row (in the VM while classes load and
    /// GCs run, on a loaded machine), and striking it out lost all its samples.
    fn is_java_thread(&mut self, tid: u32, env: usize) -> bool {
        if self.cfg.table.java_id_of_tid(tid).is_some_and(|id| id != 0) {
            return true;
        }
        env != 0 && self.java_thread_by_env(tid, env).is_some()
    }

    /// The recording thread of the Java thread whose JNIEnv is `env`, found
    /// through JVMTI and learnt for Linux thread `tid`; None when JVMTI shows no
    /// java.lang.Thread for it.
    fn java_thread_by_env(&mut self, tid: u32, env: usize) -> Option<u32> {
        let (java_id, info) = self
            .env_mapper
            .and_then(|m| m.find(self.cfg.jvmti, self.jni, env))?;
        Some(self.cfg.table.see(java_id, info, Some(tid)))
    }

    /// Stops sampling a thread that is not a Java thread (GC, compiler, VM-internal
    /// or plain native threads).
    fn exclude(&mut self, tid: u32) {
        self.cfg.table.mark_not_java(tid);
        if let Some(timers) = &self.cfg.timers {
            timers.disarm(tid);
        }
    }

    /// The recording's thread id for Linux thread `tid`: known from ThreadStart or
    /// a snapshot, else found through its JNIEnv, else named from /proc.
    fn thread_of(&mut self, tid: u32, env: usize) -> u32 {
        if let Some(order) = self.cfg.table.order_of_tid(tid) {
            return order;
        }
        if let Some(&order) = self.unmatched_envs.get(&env) {
            return order;
        }
        if let Some(order) = self.java_thread_by_env(tid, env) {
            return order;
        }
        let order = self.cfg.table.see_anonymous(tid, kernel_thread_name(tid));
        self.unmatched_envs.insert(env, order);
        order
    }

    /// Writes the thread's definition if it is new or changed since last written.
    fn emit_thread(&mut self, order: u32) {
        let known = self.emitted.get(&order).copied().unwrap_or(0);
        let Some(entry) = self.cfg.table.changed_since(order, known) else {
            return;
        };
        self.emitted.insert(order, entry.revision);
        self.chunk.thread(&thread_def(entry));
    }

    fn on_snapshot(&mut self, raw: RawSnapshot) {
        let mut threads = Vec::with_capacity(raw.threads.len());
        for t in raw.threads {
            self.emit_thread(t.order);
            let mut resolve = resolve_method(self.cfg.jvmti, self.jni);
            let stack = self
                .symbols
                .stack(&mut self.chunk, t.frames.into_iter(), &mut resolve);
            threads.push(SnapshotThread {
                thread: ThreadId(t.order),
                state: t.state,
                stack: StackId(stack),
            });
        }
        self.chunk.snapshot(&Snapshot {
            ticks: raw.ticks,
            interval_ns: raw.interval_ns,
            threads,
        });
        self.snapshots += 1;
    }

    fn write_counters(&mut self) {
        let mut values = self
            .cfg
            .signals
            .map(|s| s.counter_values())
            .unwrap_or_default();
        values.push(("samples.written", self.samples));
        values.push(("snapshots.written", self.snapshots));
        values.push((
            "snapshots.dropped",
            self.cfg.snapshots_dropped.load(Ordering::Relaxed),
        ));
        values.push(("methods.unresolved", self.symbols.unresolved()));
        values.extend(self.trace.counter_values());
        values.extend(self.events.counter_values());
        let (evicted, unreadable) = crate::remote::http_client_lost();
        if evicted + unreadable > 0 {
            values.push(("remote.http_client_evicted", evicted));
            values.push(("remote.http_client_unreadable", unreadable));
        }
        if let Some(link) = &self.cfg.collector {
            values.extend(link.stats.values());
        }
        self.chunk.counters(clock::monotonic_ns(), &values);
    }

    /// Writes the buffered records, with the current counters, as one chunk.
    fn flush(&mut self) {
        self.write_counters();
        self.write_chunk();
    }

    fn write_chunk(&mut self) {
        let bytes = self.chunk.finish();
        self.last_flush = Instant::now();
        self.write_file(&bytes);
        if let Some(mut link) = self.cfg.collector.take() {
            link.offer(bytes, || self.dictionary_chunks());
            self.cfg.collector = Some(link);
        }
    }

    fn write_file(&mut self, bytes: &[u8]) {
        let Some(file) = &mut self.cfg.file else {
            return;
        };
        if self.write_error.is_some() {
            return; // the file is broken; keep draining so producers never block
        }
        if let Err(e) = file.write_all(bytes) {
            eprintln!(
                "jscope: cannot write the recording: {e}; profiling data is lost from here on"
            );
            self.write_error = Some(e);
        }
    }

    /// The whole dictionary as chunks, for a collector that lost one: strings,
    /// classes, methods and stacks, then the threads written so far.
    fn dictionary_chunks(&self) -> Vec<Vec<u8>> {
        let mut cut = ChunkCutter::new(FLUSH_BYTES);
        self.symbols.declare_all(&mut cut);
        for &order in self.emitted.keys() {
            if let Some(entry) = self.cfg.table.changed_since(order, 0) {
                cut.record(|w| w.thread(&thread_def(entry)));
            }
        }
        cut.finish()
    }

    /// Final counters, the end record and the last chunk; dropping the collector
    /// link afterwards tells the sender that nothing more comes.
    fn finish(&mut self) {
        self.write_counters();
        self.chunk.end(clock::monotonic_ns());
        self.write_chunk();
        if let Some(file) = &self.cfg.file {
            let _ = file.sync_all();
        }
        self.cfg.collector = None;
    }
}

fn thread_def(entry: ThreadEntry) -> ThreadDef {
    ThreadDef {
        id: ThreadId(entry.order),
        java_id: entry.java_id,
        os_tid: entry.os_tid,
        name: entry.info.name,
        group: entry.info.group,
        parent: entry.info.parent,
        start_order: entry.order,
        daemon: entry.info.daemon,
    }
}

/// A sample's JVMTI state bits. The handler knows a cpu sample's thread was on a
/// CPU (alive and runnable) and a wall sample's state as the wall sampler read it
/// just before signalling; a cpu sample whose top frame is a native method is
/// running native code.
fn sample_state(mode: SampleMode, handler_state: u32, top_native: bool) -> u32 {
    match mode {
        SampleMode::Cpu if top_native => handler_state | IN_NATIVE,
        _ => handler_state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unattached_threads_strike_out_at_once() {
        let mut s = Strikes::default();
        assert!(s.strike(1, NOT_ATTACHED));
    }

    #[test]
    fn unknown_not_java_strikes_out_after_three_in_a_row() {
        let mut s = Strikes::default();
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        s.clear(2);
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(
            !s.strike(3, -2),
            "a GC in progress says nothing about the thread"
        );
    }

    #[test]
    fn cpu_samples_in_native_methods_are_native() {
        use jscope_format::thread_state::{classify, ALIVE, RUNNABLE, SLEEPING, WAITING};
        use jscope_format::StateClass;
        let on_cpu = ALIVE | RUNNABLE;
        let cpu = |native| classify(sample_state(SampleMode::Cpu, on_cpu, native));
        assert_eq!(cpu(false), StateClass::Runnable);
        assert_eq!(cpu(true), StateClass::Native);
        let sleeping = ALIVE | WAITING | SLEEPING;
        assert_eq!(
            sample_state(SampleMode::Wall, sleeping, true),
            sleeping,
            "a wall sample keeps what JVMTI said"
        );
    }
}
