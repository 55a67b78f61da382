//! The writer thread: attached to the VM as a daemon (it calls JVMTI to resolve
//! methods), it drains every engine of the recording through one loop into its
//! [`Sink`] (which names threads, methods and stacks) and writes a chunk at least
//! every second or every MiB, to the file and/or to the collector's sender.
//! Symbol resolution, compression and file I/O all happen here, off the
//! application's threads; network I/O happens on the sender thread, so a slow
//! collector never holds the writer.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jscope_format::{ChunkWriter, ThreadDef};

use crate::clock;
use crate::engine::{Drained, Engine};
use crate::java_threads::{EnvMapper, ThreadFields, ThreadKey};
use crate::jvm::{Jni, Jvmti, Vm};
use crate::sender::CollectorLink;
use crate::stopper::Stopper;
use crate::symbols::{ChunkCutter, Symbols};
use crate::thread_ring::{self, Wake};
use crate::threads::{gettid, kernel_thread_name, ThreadEntry, ThreadTable};

/// A chunk is written when it holds this much, or when FLUSH_EVERY has passed.
const FLUSH_BYTES: usize = 1 << 20;
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often the writer looks for new samples.
const POLL: Duration = Duration::from_millis(10);

/// Everything the writer thread owns or shares.
pub(crate) struct WriterConfig {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub fields: ThreadFields,
    pub table: Arc<ThreadTable>,
    /// The recording's engines, drained in this order.
    pub engines: Vec<Arc<dyn Engine>>,
    /// None when the chunks go to a collector only.
    pub file: Option<File>,
    pub collector: Option<CollectorLink>,
    /// Set when the sources have stopped: drain what is left and finish.
    pub stopper: Arc<Stopper>,
    /// Set by the writer when the file is complete.
    pub done: Arc<Stopper>,
}

/// Where engines drain to, on the writer thread: the chunk being built, the
/// dictionaries, and the mapping from producers' threads to recording threads
/// (whose definitions it writes as they are first used or change).
pub(crate) struct Sink {
    pub jvmti: Jvmti,
    pub jni: Jni,
    pub chunk: ChunkWriter,
    pub symbols: Symbols,
    pub table: Arc<ThreadTable>,
    env_mapper: Option<EnvMapper>,
    /// JNIEnvs that matched no live thread (it ended before the writer looked).
    unmatched_envs: HashMap<usize, u32>,
    /// Revision of each thread definition already written.
    emitted: HashMap<u32, u32>,
}

impl Sink {
    /// True when the chunk should be written before more is added: an engine
    /// far behind returns [`Drained::More`] then rather than make one huge chunk.
    pub fn chunk_full(&self) -> bool {
        self.chunk.raw_len() >= FLUSH_BYTES
    }

    /// The stack id of `frames` (jmethodID, bci or line), top first; methods are
    /// named through JVMTI.
    pub fn stack(&mut self, frames: impl Iterator<Item = (usize, i32)>) -> u32 {
        let (jvmti, jni) = (self.jvmti, self.jni);
        let mut resolve =
            move |key: usize| jvmti.method_names(jni, key as crate::sys::jmethodID).ok();
        self.symbols.stack(&mut self.chunk, frames, &mut resolve)
    }

    /// The string id of `text`.
    pub fn string(&mut self, text: &str) -> u32 {
        self.symbols.string(&mut self.chunk, text)
    }

    /// The recording thread of an event's thread, named by its Java id when
    /// known and its definition written; None for the agent's own threads.
    pub fn event_thread(&mut self, key: ThreadKey) -> Option<u32> {
        let ThreadKey { tid, env, java_id } = key;
        if self.table.is_agent(tid) {
            return None;
        }
        let t = match self.table.order_of_java_id(java_id) {
            Some(t) if java_id != 0 => t,
            _ => self.thread_of(tid, env),
        };
        self.emit_thread(t);
        Some(t)
    }

    /// True for a thread JVMTI shows as a java.lang.Thread. Such a thread is never
    /// struck out, whatever its failed walks say: an application thread can give
    /// "unknown, not Java" several times in a row (in the VM while classes load and
    /// GCs run, on a loaded machine), and striking it out lost all its samples.
    pub fn is_java_thread(&mut self, tid: u32, env: usize) -> bool {
        if self.table.java_id_of_tid(tid).is_some_and(|id| id != 0) {
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
            .and_then(|m| m.find(self.jvmti, self.jni, env))?;
        Some(self.table.see(java_id, info, Some(tid)))
    }

    /// The recording's thread id for Linux thread `tid`: known from ThreadStart or
    /// a snapshot, else found through its JNIEnv, else named from /proc.
    pub fn thread_of(&mut self, tid: u32, env: usize) -> u32 {
        if let Some(order) = self.table.order_of_tid(tid) {
            return order;
        }
        if let Some(&order) = self.unmatched_envs.get(&env) {
            return order;
        }
        if let Some(order) = self.java_thread_by_env(tid, env) {
            return order;
        }
        let order = self.table.see_anonymous(tid, kernel_thread_name(tid));
        self.unmatched_envs.insert(env, order);
        order
    }

    /// Writes the thread's definition if it is new or changed since last written.
    pub fn emit_thread(&mut self, order: u32) {
        let known = self.emitted.get(&order).copied().unwrap_or(0);
        let Some(entry) = self.table.changed_since(order, known) else {
            return;
        };
        self.emitted.insert(order, entry.revision);
        self.chunk.thread(&thread_def(entry));
    }
}

struct Writer {
    cfg: WriterConfig,
    wake: &'static Wake,
    sink: Sink,
    last_flush: Instant,
    write_error: Option<std::io::Error>,
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
    // Producers whose rings fill wake the writer before its next poll.
    let wake: &'static Wake = Box::leak(Box::new(Wake::for_current_thread()));
    thread_ring::set_wake_hook(wake);
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
    let sink = Sink {
        jvmti: cfg.jvmti,
        jni,
        chunk: ChunkWriter::new(),
        symbols: Symbols::default(),
        table: cfg.table.clone(),
        env_mapper,
        unmatched_envs: HashMap::new(),
        emitted: HashMap::new(),
    };
    let mut writer = Writer {
        cfg,
        wake,
        sink,
        last_flush: Instant::now(),
        write_error: None,
    };
    writer.run();
    vm.detach();
}

impl Writer {
    fn run(&mut self) {
        loop {
            let stopping = self.cfg.stopper.park(POLL);
            self.wake.rearm();
            self.drain();
            if stopping {
                break;
            }
            if self.sink.chunk_full() || self.last_flush.elapsed() >= FLUSH_EVERY {
                self.flush();
            }
        }
        self.finish();
    }

    /// Every engine in turn, each until it has nothing left (writing the chunk
    /// whenever one fills it).
    fn drain(&mut self) {
        let jni = self.sink.jni;
        let engines = self.cfg.engines.clone();
        for engine in &engines {
            jni.with_local_frame(32, || {
                while engine.drain(&mut self.sink) == Drained::More {
                    self.flush();
                }
            });
        }
    }

    fn write_counters(&mut self) {
        let mut values = Vec::new();
        for engine in &self.cfg.engines {
            engine.counters(&mut values);
        }
        values.push(("methods.unresolved", self.sink.symbols.unresolved()));
        if let Some(link) = &self.cfg.collector {
            values.extend(link.stats.values());
        }
        self.sink.chunk.counters(clock::monotonic_ns(), &values);
    }

    /// Writes the buffered records, with the current counters, as one chunk.
    fn flush(&mut self) {
        self.write_counters();
        self.write_chunk();
    }

    fn write_chunk(&mut self) {
        let bytes = self.sink.chunk.finish();
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
        self.sink.symbols.declare_all(&mut cut);
        for &order in self.sink.emitted.keys() {
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
        self.sink.chunk.end(clock::monotonic_ns());
        self.write_chunk();
        if let Some(file) = &self.cfg.file {
            let _ = file.sync_all();
        }
        self.cfg.collector = None;
    }
}

fn thread_def(entry: ThreadEntry) -> ThreadDef {
    ThreadDef {
        id: entry.order,
        java_id: entry.java_id,
        os_tid: entry.os_tid,
        name: entry.info.name,
        group: entry.info.group,
        parent: entry.info.parent,
        start_order: entry.order,
        daemon: entry.info.daemon,
    }
}
