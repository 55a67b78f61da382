//! One recording from start to stop: opens the file, starts the engines the
//! options ask for (each behind [`Engine`]), the writer that drains them and the
//! collector's sender, and tears everything down within bounded waits.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cpu_timers::{CpuEngine, CpuTimers};
pub use crate::engine::StartError;
use crate::engine::{Engine, StartContext, StopContext};
use crate::events::{EventEngine, ParkEngine};
use crate::header::{self, StartTime};
use crate::hotspot::HotSpot;
use crate::interpose::InterposeEngine;
use crate::java_threads::{describe, ThreadFields};
use crate::jvm::{Jni, Jvmti, Vm};
use crate::native::perf::{self, PerfEvents, PerfKind};
use crate::options::{expand_file_pattern, Options};
use crate::remote::RemoteEngine;
use crate::sender::{self, CollectorLink, SenderStats};
use crate::signals::{SignalEngine, CPU_SIGNAL};
use crate::snapshot::SnapshotEngine;
use crate::stopper::Stopper;
use crate::threads::{gettid, ThreadTable};
use crate::trace::TraceEngine;
use crate::wall::WallEngine;
use crate::writer::WriterConfig;
use crate::{clock, sys};

/// How long stopping waits for the engines' threads and the writer (the
/// sender's wait is sender::wait_for_sender's).
const ENGINE_STOP_WAIT: Duration = Duration::from_secs(2);
const WRITER_STOP_WAIT: Duration = Duration::from_secs(5);
/// How long start waits for the writer and the sender to be known as the agent's
/// threads (so the cpu engine, started after them, leaves them unarmed).
const MARK_WAIT: Duration = Duration::from_secs(2);

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
        let collector = self.options.collector.as_ref().map(|c| c.addr());
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
        extra: Vec<(String, String)>,
    ) -> Result<(jscope_format::Header, Vec<u8>), StartError> {
        let path = self.path.as_deref().unwrap_or("");
        let mut header = header::build(jvmti, jni, &self.options, self.start, path, attached);
        header.extra.extend(extra);
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
    /// Every thread is sampled (mixed stacks), the agent's own too; with Java
    /// stacks only (`cstack=no`) they are not, having no Java frame.
    all_threads: bool,
}

impl Hooks {
    /// ThreadStart: runs on the new thread, so its Linux id is ours to read.
    pub fn thread_started(&self, jni: Jni, thread: sys::jthread) {
        let tid = gettid();
        // The agent's own threads are not described (they are named by their
        // Linux name), but with mixed stacks their CPU time is sampled.
        if self.table.is_agent(tid) {
            if !self.all_threads {
                return;
            }
        } else if let Some((java_id, info)) = describe(self.jvmti, jni, self.fields, thread) {
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

/// The JVMTI thread and class events every recording listens to, with the
/// callbacks' state ([`Hooks`]) published while they are on. Started after the
/// signal engine (a thread starting may get a cpu timer at once) and before the
/// others.
struct ThreadEvents {
    jvmti: Jvmti,
    hooks: Arc<Hooks>,
    install: fn(Option<Arc<Hooks>>),
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

impl Engine for ThreadEvents {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        (self.install)(Some(self.hooks.clone()));
        let enabled = RECORDING_EVENTS
            .iter()
            .try_for_each(|e| self.jvmti.set_event(true, *e));
        // On failure the recorder stops this engine, which withdraws the hooks.
        enabled.map_err(StartError::Events)?;
        create_all_method_ids(self.jvmti, ctx.jni);
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        for event in RECORDING_EVENTS {
            let _ = self.jvmti.set_event(false, event);
        }
        (self.install)(None);
    }
}

/// A running recording: its engines, in start order, and the writer and sender
/// threads that take what they produce.
pub struct Recorder {
    jvmti: Jvmti,
    /// The file and/or collector the chunks go to, for messages.
    pub destination: String,
    engines: Vec<Arc<dyn Engine>>,
    /// How many of `engines` (a prefix) have started and are not stopped yet.
    started: usize,
    /// How many of `engines` have started in this recording, for the writer.
    drainable: Arc<AtomicUsize>,
    writer_stop: Arc<Stopper>,
    writer_done: Option<Arc<Stopper>>,
    /// The sender's finish flag and counters, when streaming to a collector.
    sender: Option<(Arc<Stopper>, Arc<SenderStats>)>,
}

impl Recorder {
    /// Starts recording: the sender and the writer, then every engine in turn.
    /// Runs on a Java thread (VMInit's or the attach listener); `install_hooks`
    /// publishes the callbacks' state (None withdraws it). On failure whatever
    /// started is stopped again, in reverse order.
    pub fn start(
        vm: Vm,
        jvmti: Jvmti,
        jni: Jni,
        mut prepared: Prepared,
        attached: bool,
        install_hooks: fn(Option<Arc<Hooks>>),
    ) -> Result<Recorder, StartError> {
        let fields = crate::jvm::thread::init(jvmti, jni).ok_or(StartError::NoThreadFields)?;
        // Before the header, which says which engine samples.
        let sources = match prepared.options.modes.cpu {
            true => Some(Arc::new(cpu_sources(&prepared.options)?)),
            false => None,
        };
        let mut native = native_header(&prepared.options, sources.as_deref());
        let hotspot = stack_walker(&prepared.options, jvmti, jni, &mut native);
        let (header, header_bytes) = prepared.write_header(jvmti, jni, attached, native)?;
        let table = Arc::new(ThreadTable::default());
        let (link, sender) = prepared.collector(&header, header_bytes, &table).unzip();
        let stats = link.as_ref().map(|l| l.stats.clone());
        let destination = prepared.destination();
        let Prepared { options, file, .. } = prepared;

        register_live_threads(jvmti, jni, fields, &table);
        // Samples, snapshots and parks of virtual threads (JDK 21+) are theirs,
        // not their carriers': follow the mounts.
        let modes = &options.modes;
        if modes.cpu || modes.wall || modes.snapshot || !options.events.kinds.is_empty() {
            crate::trace::vthreads::follow(true);
        }
        let timers = sources;
        let hooks = Hooks {
            jvmti,
            fields,
            table: table.clone(),
            timers: timers.clone(),
            all_threads: options.cstack.mixed(),
        };
        let engines = engines(&options, hooks, install_hooks, timers, hotspot);
        let mut recorder = Recorder {
            jvmti,
            destination,
            engines: engines.clone(),
            started: 0,
            drainable: Arc::new(AtomicUsize::new(0)),
            writer_stop: Arc::new(Stopper::default()),
            writer_done: None,
            sender: None,
        };
        let ctx = StartContext {
            vm,
            jvmti,
            jni,
            fields,
            table: &table,
            env: crate::jvm::current::EnvOf::find(vm, jvmti, jni),
        };
        let writer = WriterConfig {
            vm,
            jvmti,
            fields,
            table: table.clone(),
            engines: engines.into(),
            started: recorder.drainable.clone(),
            file,
            collector: link,
            stopper: recorder.writer_stop.clone(),
            done: Arc::new(Stopper::default()),
        };
        if let Err(e) = recorder.launch(sender, stats, writer, &ctx) {
            recorder.stop(None);
            return Err(e);
        }
        Ok(recorder)
    }

    /// The sender before the writer, so the writer's first chunk finds it
    /// running; both before the engines, so a recording whose engine fails to
    /// start still ends complete (counters, end record) and reaches its collector.
    fn launch(
        &mut self,
        sender: Option<sender::Sender>,
        stats: Option<Arc<SenderStats>>,
        writer: WriterConfig,
        ctx: &StartContext<'_>,
    ) -> Result<(), StartError> {
        self.spawn_sender(sender, stats)?;
        self.spawn_writer(writer)?;
        // A panic in an engine's start (caught by the entry point's guard) must
        // not leave the writer and sender running without an owner.
        let engines =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.start_engines(ctx)));
        engines.unwrap_or_else(|panic| {
            self.stop(None);
            std::panic::resume_unwind(panic)
        })
    }

    fn start_engines(&mut self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        for engine in &self.engines {
            if let Err(e) = engine.start(ctx) {
                // Whatever part of it did start (stop is harmless otherwise).
                engine.stop(&StopContext {
                    jvmti: self.jvmti,
                    restore_with: None,
                });
                return Err(e);
            }
            self.started += 1;
            self.drainable.store(self.started, Ordering::Release);
        }
        Ok(())
    }

    fn spawn_sender(
        &mut self,
        sender: Option<sender::Sender>,
        stats: Option<Arc<SenderStats>>,
    ) -> Result<(), StartError> {
        let (Some(sender), Some(stats)) = (sender, stats) else {
            return Ok(());
        };
        let (done, marked) = (Arc::new(Stopper::default()), Arc::new(Stopper::default()));
        sender
            .spawn(done.clone(), marked.clone())
            .map_err(StartError::Thread)?;
        self.sender = Some((done, stats));
        marked.wait_until(Instant::now() + MARK_WAIT);
        Ok(())
    }

    fn spawn_writer(&mut self, writer: WriterConfig) -> Result<(), StartError> {
        let (done, marked) = (writer.done.clone(), Arc::new(Stopper::default()));
        writer.spawn(marked.clone()).map_err(StartError::Thread)?;
        self.writer_done = Some(done);
        marked.wait_until(Instant::now() + MARK_WAIT);
        Ok(())
    }

    /// Stops the signal engines at once, without waiting for anything (the VM
    /// is unloading the agent).
    pub fn silence(&self) {
        for engine in &self.engines[..self.started] {
            engine.silence();
        }
    }

    /// Stops every started engine in reverse order, waits for their threads,
    /// lets the writer drain and finish the file, lets the sender deliver the
    /// last chunks, and waits for each at most a few seconds. `restore_with` is
    /// the stopping thread's JNI environment when the application runs on (stop
    /// by attach). Returns false if the writer did not finish in time (the file
    /// then lacks its end record). The engines' threads are attached to the VM,
    /// so they are waited for with a deadline rather than joined.
    pub fn stop(&mut self, restore_with: Option<Jni>) -> bool {
        let ctx = StopContext {
            jvmti: self.jvmti,
            restore_with,
        };
        let started = &self.engines[..self.started];
        for engine in started.iter().rev() {
            engine.stop(&ctx);
        }
        let deadline = std::time::Instant::now() + ENGINE_STOP_WAIT;
        for engine in started {
            engine.wait(deadline);
        }
        self.started = 0;
        crate::trace::vthreads::follow(false);
        self.writer_stop.stop();
        let complete = match &self.writer_done {
            Some(done) => done.wait(WRITER_STOP_WAIT),
            None => false,
        };
        if let Some((done, stats)) = &self.sender {
            sender::wait_for_sender(done, stats);
        }
        complete
    }
}

/// The recording's engines in start order: the signal handler before anything
/// that makes signals, the thread events (whose ThreadStart arms cpu timers)
/// before the timers of the threads already running, then the rest.
fn engines(
    options: &Options,
    hooks: Hooks,
    install_hooks: fn(Option<Arc<Hooks>>),
    timers: Option<Arc<CpuTimers>>,
    hotspot: Option<Arc<HotSpot>>,
) -> Vec<Arc<dyn Engine>> {
    let thread_events = ThreadEvents {
        jvmti: hooks.jvmti,
        hooks: Arc::new(hooks),
        install: install_hooks,
    };
    // The recording's Java stack walker: the signal handler's and the native
    // hooks' (each walks from its own registers).
    let interpose = Arc::new(InterposeEngine::new(
        options.native,
        options.depth,
        options.cstack,
        options.modes.cpu,
        hotspot.clone(),
    ));
    let signals = Arc::new(SignalEngine::new(options, timers.clone(), hotspot));
    let all_threads = options.cstack.mixed();
    vec![
        signals.clone(),
        Arc::new(thread_events),
        Arc::new(CpuEngine::new(timers, all_threads)),
        Arc::new(SnapshotEngine::new(options)),
        Arc::new(WallEngine::new(options, signals)),
        Arc::new(TraceEngine::new(options.trace.clone())),
        Arc::new(EventEngine::new(options.events.clone(), options.depth)),
        Arc::new(ParkEngine::new(&options.events)),
        Arc::new(RemoteEngine),
        interpose,
    ]
}

/// The VM structure walker for the cpu and wall engines and the native hooks,
/// when `cstack` asks for it and this JVM's structures allow it; the header
/// says which walker
/// Java frames get (`stack_walker`) and, when the walker could not be used,
/// why (`stack_walker_fallback`, also said in one line unless quiet).
fn stack_walker(
    options: &Options,
    jvmti: Jvmti,
    jni: Jni,
    extra: &mut Vec<(String, String)>,
) -> Option<Arc<HotSpot>> {
    if !options.modes.signals() && !options.native.any() {
        return None;
    }
    let resolved = match options.cstack.vm_walker() {
        true => Some(HotSpot::resolve(jvmti, jni, jni.0 as usize)),
        false => None,
    };
    let walker = match &resolved {
        Some(Ok(_)) => "vm",
        _ => "asgct",
    };
    extra.push(("stack_walker".into(), walker.into()));
    match resolved? {
        Ok(hotspot) => Some(Arc::new(hotspot)),
        Err(why) => {
            if !options.quiet {
                eprintln!("jscope: Java stacks are walked with AsyncGetCallTrace: {why}");
            }
            extra.push(("stack_walker_fallback".into(), why.to_string()));
            None
        }
    }
}

/// The cpu engine's per-thread sources: perf_event counters of the event asked
/// for (an error when this machine lacks it), else task-clock counters when
/// native stacks are on and the kernel allows them, else CPU-time timers.
fn cpu_sources(options: &Options) -> Result<CpuTimers, StartError> {
    let kernel = options.cstack.mixed();
    if let Some((kind, period)) = options.event {
        perf::probe(kind).map_err(|e| StartError::Event {
            event: kind.name(),
            reason: format!(
                "{}; the JVM runs on without jscope",
                perf::refusal(kind, &e)
            ),
        })?;
        let events = PerfEvents::new(kind, period, CPU_SIGNAL, kernel);
        return Ok(CpuTimers::with_perf(events, CPU_SIGNAL));
    }
    if kernel && perf::probe(PerfKind::TaskClock).is_ok() {
        let period = options.interval.as_nanos() as u64;
        let events = PerfEvents::new(PerfKind::TaskClock, period, CPU_SIGNAL, kernel);
        return Ok(CpuTimers::with_perf(events, CPU_SIGNAL));
    }
    Ok(CpuTimers::new(options.interval, CPU_SIGNAL))
}

/// The header's keys for the cpu engine: which source samples
/// (`cpu_engine`), whether native frames are walked (`cstack`), whether kernel
/// frames are recorded (`kernel_frames`), the event sampled on, and with
/// `cstack=dwarf` what the unwind tables cost (`unwind_tables`): they are
/// built here, before sampling starts.
fn native_header(options: &Options, sources: Option<&CpuTimers>) -> Vec<(String, String)> {
    let dwarf = sources.is_some() && options.cstack.dwarf();
    crate::native::walk::use_dwarf(dwarf);
    let Some(sources) = sources else {
        return Vec::new();
    };
    let perf = sources.perf();
    let mut extra = vec![
        (
            "cpu_engine",
            if perf.is_some() {
                "perf_events"
            } else {
                "timers"
            }
            .to_string(),
        ),
        ("cstack", options.cstack.label().to_string()),
        (
            "kernel_frames",
            if perf.is_some_and(|p| p.kernel()) {
                "yes"
            } else {
                "no"
            }
            .to_string(),
        ),
    ];
    if let Some((kind, period)) = options.event {
        extra.push(("event", kind.name().to_string()));
        extra.push(("event_period", period.to_string()));
    }
    if dwarf {
        crate::native::walk::refresh_code_ranges();
        extra.push((
            "unwind_tables",
            crate::native::walk::dwarf_stats().summary(),
        ));
    }
    extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Numbers the threads alive now in GetAllThreads order; the calling thread's
/// Linux id is known, so it is recorded too.
fn register_live_threads(jvmti: Jvmti, jni: Jni, fields: ThreadFields, table: &ThreadTable) {
    let my_id = Some(crate::jvm::thread::current_java_id(jni)).filter(|id| *id != 0);
    crate::java_threads::see_live_threads(jvmti, jni, fields, table, |java_id| {
        (Some(java_id) == my_id).then(gettid)
    });
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
