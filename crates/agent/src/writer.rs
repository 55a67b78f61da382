//! The writer thread: attached to the VM as a daemon (it calls JVMTI to resolve
//! methods), it drains every engine of the recording through one loop into its
//! [`Sink`] (which names threads, methods and stacks) and writes a chunk at least
//! every second or every MiB, to the file and/or to the collector's sender.
//! Symbol resolution, compression and file I/O all happen here, off the
//! application's threads; network I/O happens on the sender thread, so a slow
//! collector never holds the writer.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock;
use crate::engine::{Drained, Engine};
use crate::java_threads::{self, EnvMapper, ThreadFields};
use crate::jvm::{Jvmti, Vm};
use crate::sender::CollectorLink;
use crate::sink::{thread_def, Sink, FLUSH_BYTES};
use crate::stopper::Stopper;
use crate::symbols::ChunkCutter;
use crate::thread_ring::{self, Wake};
use crate::threads::{gettid, ThreadTable};

/// A chunk is written when it holds FLUSH_BYTES, or when this has passed.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often the writer looks for new samples and events. Each look costs
/// the writer some tens of microseconds even when there is nothing to take
/// (every engine is asked), which at 10 ms was half of its CPU time on a
/// one-thread program at 100 Hz; rings that fill faster wake it early (the
/// sample ring at a quarter full, the threads' rings at half).
const POLL: Duration = Duration::from_millis(50);

/// Everything the writer thread owns or shares.
pub(crate) struct WriterConfig {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub fields: ThreadFields,
    pub table: Arc<ThreadTable>,
    /// The recording's engines, drained in this order.
    pub engines: Arc<[Arc<dyn Engine>]>,
    /// How many of `engines` (a prefix) have started: the writer runs before
    /// them and drains only those.
    pub started: Arc<AtomicUsize>,
    /// None when the chunks go to a collector only.
    pub file: Option<File>,
    pub collector: Option<CollectorLink>,
    /// Set when the sources have stopped: drain what is left and finish.
    pub stopper: Arc<Stopper>,
    /// Set by the writer when the file is complete.
    pub done: Arc<Stopper>,
}

struct Writer {
    cfg: WriterConfig,
    wake: &'static Wake,
    sink: Sink,
    last_flush: Instant,
    /// When live threads were last described again (to follow renames).
    last_names: Instant,
    write_error: Option<std::io::Error>,
}

impl WriterConfig {
    /// Starts the writer thread; `marked` is stopped once the thread is known as
    /// the agent's, so no engine started after it samples it.
    pub fn spawn(self, marked: Arc<Stopper>) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("jscope-writer".into())
            .spawn(move || {
                self.table.mark_agent(gettid());
                marked.stop();
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
    let Some(jni) = cfg.vm.attach_daemon("jscope-writer") else {
        return;
    };
    java_threads::mark_agent_java(&cfg.table, jni);
    let env_mapper = EnvMapper::calibrate(cfg.jvmti, jni, cfg.fields);
    let vm = cfg.vm;
    let sink = Sink::new(
        cfg.jvmti,
        jni,
        cfg.table.clone(),
        env_mapper,
        crate::trace::vthreads::description,
    );
    let mut writer = Writer {
        cfg,
        wake,
        sink,
        last_flush: Instant::now(),
        last_names: Instant::now(),
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
            self.sink.last_drain = stopping;
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
        let started = self.cfg.started.load(Ordering::Acquire);
        let engines = self.cfg.engines.clone();
        jni.with_local_frame(32, || {
            for engine in &engines[..started] {
                while engine.drain(&mut self.sink) == Drained::More {
                    self.flush();
                }
            }
        });
    }

    /// At most once a second: live Java threads described again, and the
    /// threads already in the recording whose name (or group) changed since
    /// written again, so a thread renamed after it started reads by its name.
    fn follow_renames(&mut self) {
        if self.last_names.elapsed() < FLUSH_EVERY {
            return;
        }
        self.last_names = Instant::now();
        let (jvmti, jni, fields) = (self.cfg.jvmti, self.sink.jni, self.cfg.fields);
        java_threads::see_live_threads(jvmti, jni, fields, &self.cfg.table, |_| None);
        let written: Vec<u32> = self.sink.emitted().collect();
        for order in written {
            self.sink.emit_thread(order);
        }
    }

    fn write_counters(&mut self) {
        let mut values = Vec::new();
        for engine in self.cfg.engines.iter() {
            engine.counters(&mut values);
        }
        values.push(("methods.unresolved", self.sink.symbols.unresolved()));
        if let Some(link) = &self.cfg.collector {
            values.extend(link.stats.values());
        }
        // Panics caught at entry points; written only when there were some.
        values.extend(
            crate::jvm::entry::counter_values()
                .into_iter()
                .filter(|(_, n)| *n > 0),
        );
        self.sink.chunk.counters(clock::monotonic_ns(), &values);
    }

    /// Writes the buffered records, with the current counters, as one chunk.
    fn flush(&mut self) {
        self.follow_renames();
        self.write_counters();
        self.write_chunk();
    }

    /// The file gets each data chunk after its summary chunk (so `jscope info`
    /// counts it without decompressing); the collector gets the data chunk alone.
    fn write_chunk(&mut self) {
        let (summary, bytes) = self.sink.chunk.finish_parts();
        self.sink.symbols.chunk_written();
        self.last_flush = Instant::now();
        self.write_file(&summary);
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
        for order in self.sink.emitted() {
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
