//! One recording from start to stop: opens the file, wires the engines chosen by
//! the options to the writer (and the writer to the collector's sender), and tears
//! everything down within bounded waits.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::Duration;

use crate::cpu_timers::CpuTimers;
use crate::header::{self, StartTime};
use crate::java_threads::{self, describe, ThreadFields};
use crate::jvm::{Jni, Jvmti, JvmtiError, Vm};
use crate::options::{expand_file_pattern, Options};
use crate::ring::SampleRing;
use crate::sender::{self, CollectorLink, SenderStats};
use crate::signals::{self, SignalShared};
use crate::snapshot::SnapshotSampler;
use crate::stopper::Stopper;
use crate::threads::{gettid, process_tids, ThreadTable};
use crate::wall::WallSampler;
use crate::writer::WriterConfig;
use crate::{clock, sys};

/// How long stopping waits for the samplers and the writer (the sender's wait is
/// sender::wait_for_sender's).
const SAMPLER_STOP_WAIT: Duration = Duration::from_secs(2);
const WRITER_STOP_WAIT: Duration = Duration::from_secs(5);
/// Bytes of frame storage the sample ring may take.
const RING_FRAME_BYTES: usize = 8 << 20;
/// Raw snapshots waiting for the writer before the sampler drops new ones.
const SNAPSHOT_QUEUE: usize = 64;

/// Why a recording could not start; Display is the one line printed on stderr.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create recording file {path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write recording file {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("this JVM has no AsyncGetCallTrace, which the cpu and wall modes need")]
    NoAsyncGetCallTrace,
    #[error("java.lang.Thread has no `tid` field; this JVM is not supported")]
    NoThreadFields,
    #[error("cannot install the sampling signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    #[error("JVMTI refused to enable events: {0}")]
    Events(JvmtiError),
}

/// A recording whose file is open but whose engines wait for the VM to be ready
/// (between Agent_OnLoad and VMInit).
pub struct Prepared {
    pub options: Options,
    /// The expanded file name; None when the chunks go to a collector only.
    pub path: Option<String>,
    file: Option<File>,
    start: StartTime,
}

impl Prepared {
    /// Expands the file name and creates the file, so a bad path is reported
    /// before the application starts.
    pub fn new(options: Options) -> Result<Prepared, StartError> {
        let start = StartTime::now();
        let path = options.file_pattern().map(|pattern| {
            expand_file_pattern(
                pattern,
                std::process::id(),
                &clock::file_stamp(start.wall_ns),
            )
        });
        let file = match &path {
            Some(path) => Some(File::create(path).map_err(|source| StartError::File {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        Ok(Prepared {
            options,
            path,
            file,
            start,
        })
    }

    /// Where the chunks go, for the agent's messages: the file, the collector or both.
    pub fn destination(&self) -> String {
        let collector = self.options.collector.as_ref().map(|c| c.addr.as_str());
        match (&self.path, collector) {
            (Some(path), None) => path.clone(),
            (None, Some(addr)) => format!("collector {addr}"),
            (Some(path), Some(addr)) => format!("{path} and collector {addr}"),
            (None, None) => "nowhere".to_string(),
        }
    }

    /// Builds the header (needs the live VM for its properties) and writes the
    /// magic and header chunk to the file; returns them for the collector's hello.
    fn write_header(
        &mut self,
        jvmti: Jvmti,
        jni: Jni,
        attached: bool,
    ) -> Result<(jscope_format::Header, Vec<u8>), StartError> {
        let path = self.path.as_deref().unwrap_or("");
        let header = header::build(jvmti, jni, &self.options, self.start, path, attached);
        let bytes = jscope_format::encode_file_start(&header);
        if let Some(file) = &mut self.file {
            file.write_all(&bytes).map_err(|source| StartError::Write {
                path: path.to_string(),
                source,
            })?;
        }
        Ok((header, bytes))
    }

    /// The collector link and its sender thread's state, when a collector is asked for.
    fn collector(
        &self,
        header: &jscope_format::Header,
        bytes: Vec<u8>,
        table: &Arc<ThreadTable>,
    ) -> Option<(CollectorLink, sender::Sender)> {
        let options = self.options.collector.as_ref()?;
        let stream = jscope_wire::stream_id_for(header);
        Some(sender::link(
            options,
            bytes,
            stream,
            self.options.quiet,
            table.clone(),
        ))
    }
}

/// What the JVMTI callbacks need while a recording runs.
pub struct Hooks {
    jvmti: Jvmti,
    fields: ThreadFields,
    table: Arc<ThreadTable>,
    timers: Option<Arc<CpuTimers>>,
}

impl Hooks {
    /// ThreadStart: runs on the new thread, so its Linux id is ours to read.
    pub fn thread_started(&self, jni: Jni, thread: sys::jthread) {
        let tid = gettid();
        if self.table.is_agent(tid) {
            return;
        }
        if let Some((java_id, info)) = describe(self.jvmti, jni, self.fields, thread) {
            self.table.see(java_id, info, Some(tid));
        }
        if let Some(timers) = &self.timers {
            let _ = timers.arm(tid);
        }
    }

    /// ThreadEnd: runs on the ending thread.
    pub fn thread_ended(&self) {
        if let Some(timers) = &self.timers {
            timers.disarm(gettid());
        }
    }

    /// ClassPrepare: creating the jmethodIDs lets the async walker name methods.
    pub fn class_prepared(&self, class: sys::jclass) {
        self.jvmti.create_method_ids(class);
    }
}

/// A running recording.
pub struct Recorder {
    jvmti: Jvmti,
    /// The file and/or collector the chunks go to, for messages.
    pub destination: String,
    pub hooks: Arc<Hooks>,
    signals: Option<&'static SignalShared>,
    samplers_stop: Arc<Stopper>,
    /// Set by each sampler thread (snapshot, wall) when it has left the VM.
    samplers_done: Vec<Arc<Stopper>>,
    writer_stop: Arc<Stopper>,
    writer_done: Arc<Stopper>,
    /// The sender's finish flag and counters, when streaming to a collector.
    sender: Option<(Arc<Stopper>, Arc<SenderStats>)>,
}

/// JVMTI events a running recording listens to (VMInit/VMDeath are managed by
/// the entry points).
/// ClassLoad has no work to do, but AsyncGetCallTrace refuses to walk (code -1)
/// unless someone listens to it.
const RECORDING_EVENTS: [sys::jvmtiEvent; 4] = [
    sys::JVMTI_EVENT_CLASS_LOAD,
    sys::JVMTI_EVENT_CLASS_PREPARE,
    sys::JVMTI_EVENT_THREAD_START,
    sys::JVMTI_EVENT_THREAD_END,
];

impl Recorder {
    /// Starts recording. Runs on a Java thread (VMInit's or the attach listener);
    /// `install_hooks` publishes the callbacks' state before events are enabled.
    pub fn start(
        vm: Vm,
        jvmti: Jvmti,
        jni: Jni,
        mut prepared: Prepared,
        attached: bool,
        install_hooks: impl Fn(Option<Arc<Hooks>>),
    ) -> Result<Recorder, StartError> {
        let fields = ThreadFields::lookup(jni).ok_or(StartError::NoThreadFields)?;
        java_threads::publish_identity(jvmti, fields);
        let (header, header_bytes) = prepared.write_header(jvmti, jni, attached)?;
        let table = Arc::new(ThreadTable::default());
        let (link, sender) = prepared.collector(&header, header_bytes, &table).unzip();
        let stats = link.as_ref().map(|l| l.stats.clone());
        let destination = prepared.destination();
        let Prepared { options, file, .. } = prepared;

        register_live_threads(jvmti, jni, fields, &table);
        let signals = if options.modes.signals() {
            Some(start_signals(vm, &options)?)
        } else {
            None
        };
        let timers = options
            .modes
            .cpu
            .then(|| Arc::new(CpuTimers::new(options.interval)));
        let hooks = Arc::new(Hooks {
            jvmti,
            fields,
            table: table.clone(),
            timers: timers.clone(),
        });
        install_hooks(Some(hooks.clone()));
        let enabled = RECORDING_EVENTS
            .iter()
            .try_for_each(|e| jvmti.set_event(true, *e));
        if let Err(e) = enabled {
            install_hooks(None);
            return Err(StartError::Events(e));
        }
        create_all_method_ids(jvmti, jni);
        if let Some(timers) = &timers {
            arm_existing_threads(timers, &table);
        }

        let samplers_stop = Arc::new(Stopper::default());
        let (tx, rx) = sync_channel(SNAPSHOT_QUEUE);
        let snapshots_dropped = Arc::new(AtomicU64::new(0));
        let (writer_stop, writer_done) =
            (Arc::new(Stopper::default()), Arc::new(Stopper::default()));
        let writer = WriterConfig {
            vm,
            jvmti,
            fields,
            table: table.clone(),
            signals,
            timers,
            snapshots: rx,
            snapshots_dropped: snapshots_dropped.clone(),
            file,
            collector: link,
            stopper: writer_stop.clone(),
            done: writer_done.clone(),
        };
        let mut recorder = Recorder {
            jvmti,
            destination,
            hooks,
            signals,
            samplers_stop: samplers_stop.clone(),
            samplers_done: Vec::new(),
            writer_stop,
            writer_done,
            sender: None,
        };
        // From here on a failure must stop what already runs, which stop() does.
        let spawned = recorder
            .spawn_sender(sender, stats)
            .and_then(|()| recorder.spawn_threads(vm, &options, writer, tx, snapshots_dropped));
        if let Err(e) = spawned {
            recorder.stop();
            install_hooks(None);
            return Err(e);
        }
        Ok(recorder)
    }

    /// Starts the sender first, so the writer's first chunk finds it running.
    fn spawn_sender(
        &mut self,
        sender: Option<sender::Sender>,
        stats: Option<Arc<SenderStats>>,
    ) -> Result<(), StartError> {
        let (Some(sender), Some(stats)) = (sender, stats) else {
            return Ok(());
        };
        let done = Arc::new(Stopper::default());
        sender.spawn(done.clone()).map_err(StartError::Thread)?;
        self.sender = Some((done, stats));
        Ok(())
    }

    fn spawn_threads(
        &mut self,
        vm: Vm,
        options: &Options,
        writer: WriterConfig,
        tx: std::sync::mpsc::SyncSender<crate::snapshot::RawSnapshot>,
        snapshots_dropped: Arc<AtomicU64>,
    ) -> Result<(), StartError> {
        let table = writer.table.clone();
        let fields = writer.fields;
        writer.spawn().map_err(StartError::Thread)?;
        if options.modes.snapshot {
            let done = Arc::new(Stopper::default());
            let sampler = SnapshotSampler {
                vm,
                jvmti: self.jvmti,
                fields,
                table: table.clone(),
                stopper: self.samplers_stop.clone(),
                done: done.clone(),
                interval: options.snap_interval,
                depth: options.depth,
                out: tx,
                dropped: snapshots_dropped,
            };
            sampler.spawn().map_err(StartError::Thread)?;
            self.samplers_done.push(done);
        }
        if let (true, Some(shared)) = (options.modes.wall, self.signals) {
            let done = Arc::new(Stopper::default());
            let wall = WallSampler {
                vm,
                jvmti: self.jvmti,
                fields,
                shared,
                table,
                stopper: self.samplers_stop.clone(),
                done: done.clone(),
                interval: options.interval,
                budget: options.wall_threads as usize,
            };
            wall.spawn().map_err(StartError::Thread)?;
            self.samplers_done.push(done);
        }
        Ok(())
    }

    /// Stops the signal engines at once, without waiting for anything.
    pub fn silence(&self) {
        if let Some(signals) = self.signals {
            signals.deactivate();
        }
        if let Some(timers) = &self.hooks.timers {
            timers.disarm_all();
        }
    }

    /// Stops every engine, lets the writer drain and finish the file, lets the
    /// sender deliver the last chunks, and waits for each at most a few seconds.
    /// Returns false if the writer did not finish in time (the file then lacks its
    /// end record). The sampler threads are attached to the VM, so they are waited
    /// for with a deadline rather than joined.
    pub fn stop(&mut self) -> bool {
        for event in RECORDING_EVENTS {
            let _ = self.jvmti.set_event(false, event);
        }
        self.silence();
        self.samplers_stop.stop();
        let deadline = std::time::Instant::now() + SAMPLER_STOP_WAIT;
        for done in &self.samplers_done {
            done.wait_until(deadline);
        }
        self.writer_stop.stop();
        let complete = self.writer_done.wait(WRITER_STOP_WAIT);
        if let Some((done, stats)) = &self.sender {
            sender::wait_for_sender(done, stats);
        }
        complete
    }
}

/// Numbers the threads alive now in GetAllThreads order; the calling thread's
/// Linux id is known, so it is recorded too.
fn register_live_threads(jvmti: Jvmti, jni: Jni, fields: ThreadFields, table: &ThreadTable) {
    jni.with_local_frame(64, || {
        let me = jvmti.current_thread();
        let my_id = me.map(|t| fields.java_id(jni, t));
        let Ok(threads) = jvmti.all_threads() else {
            return;
        };
        jni.ensure_local_capacity(threads.len() + 64);
        for t in threads {
            if let Some((java_id, info)) = describe(jvmti, jni, fields, t) {
                let tid = (Some(java_id) == my_id).then(gettid);
                table.see(java_id, info, tid);
            }
            jni.delete_local(t);
        }
    });
}

/// The handler's shared state: a ring sized so its frames take RING_FRAME_BYTES.
fn start_signals(vm: Vm, options: &Options) -> Result<&'static SignalShared, StartError> {
    let asgct = signals::find_asgct().ok_or(StartError::NoAsyncGetCallTrace)?;
    signals::install_handlers().map_err(StartError::Signals)?;
    let depth = options.depth as usize;
    let slot_bytes = depth * std::mem::size_of::<crate::ring::CallFrame>();
    let capacity = (RING_FRAME_BYTES / slot_bytes).clamp(256, 8192);
    let ring = SampleRing::new(capacity, depth);
    let shared = SignalShared::new(vm, asgct, ring, options.interval.as_nanos() as u64);
    Ok(signals::publish(Box::new(shared)))
}

/// jmethodIDs for every class loaded so far (ClassPrepare covers later ones).
fn create_all_method_ids(jvmti: Jvmti, jni: Jni) {
    jni.with_local_frame(64, || {
        let Ok(classes) = jvmti.loaded_classes() else {
            return;
        };
        jni.ensure_local_capacity(classes.len() + 64);
        for class in classes {
            jvmti.create_method_ids(class);
            jni.delete_local(class);
        }
    });
}

/// CPU timers for every thread of the process except the agent's own; threads
/// that turn out not to be Java threads are disarmed by the writer.
fn arm_existing_threads(timers: &CpuTimers, table: &ThreadTable) {
    let mut tids = process_tids();
    table.retain_sampleable(&mut tids);
    for tid in tids {
        let _ = timers.arm(tid);
    }
}
