//! Exact method tracing (issue 4): bytecode probes in the methods the filters
//! select, inserted by a ClassFileLoadHook at load time and by
//! RetransformClasses for classes already loaded; tracing starts, stops or changes
//! its filters on a running JVM the same way.
//!
//! - [`filter`]: include/exclude rules, `exclude-library`, `subclasses-of`.
//! - [`probe_class`]: the synthesised `jscope/Trace` class bound to Rust natives.
//! - [`probe`]: the natives' hot path and the per-thread rings.
//! - [`hook`]: the ClassFileLoadHook; [`registry`]: probe ids and their names.
//! - [`drain`]: the writer's side, rings to TraceBatch records.
//! - [`vthreads`]: one ring and shadow stack per virtual thread (JDK 21+).

pub mod aggregate;
pub mod drain;
pub mod filter;
pub mod hook;
pub mod probe;
pub mod probe_class;
pub mod registry;
pub mod vthreads;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard};

use jscope_bytecode::{ClassFile, Probes};

use crate::engine::{Drained, Engine, StartContext, StartError, StopContext};
use crate::jvm::{Jni, Jvmti};
use crate::native::perf::{self, PerfKind};
use crate::sink::Sink;
use crate::sys;
use filter::{FilterError, Filters};

/// The tracing part of the agent options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceOptions {
    /// `trace=PATTERN[;PATTERN...]`.
    pub patterns: Option<String>,
    /// `traceconfig=FILE`.
    pub config: Option<String>,
    /// `tracecpu`: every event also carries the thread's CPU time.
    pub cpu: bool,
    /// `traceagg`: per-thread caller→callee totals instead of events (JX).
    pub aggregate: bool,
    /// `tracestop` (attach): stop tracing, keep the recording running.
    pub stop: bool,
    /// `tracebuffer=N`: events a thread may have waiting for the writer.
    pub buffer: Option<usize>,
    /// `traceoverflow=wait|drop`: what a probe does when its thread's buffer is full.
    pub overflow: Overflow,
    /// `tracecounter=EVENT`: every event carries the thread's count of this perf
    /// event instead of its CPU time (it wins over `tracecpu`; `traceagg`
    /// ignores it).
    pub counter: Option<PerfKind>,
}

/// What a probe does when its thread's trace buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// Wait for the writer (bounded): no event is lost. The default.
    #[default]
    Wait,
    /// Drop the event and count it: the application never waits (always-on use).
    Drop,
}

impl TraceOptions {
    /// True for the option keys this module owns.
    pub fn owns(key: &str) -> bool {
        matches!(
            key,
            "trace"
                | "traceconfig"
                | "tracecpu"
                | "traceagg"
                | "tracestop"
                | "tracebuffer"
                | "traceoverflow"
                | "tracecounter"
        )
    }

    /// Applies one `key[=value]`; the error is the message of the agent's line.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        let need = || value.ok_or_else(|| format!("option `{key}` needs a value (`{key}=...`)"));
        let flag = || match value {
            None | Some("true") | Some("1") => Ok(true),
            Some("false") | Some("0") => Ok(false),
            Some(_) => Err(format!("option `{key}` takes no value")),
        };
        match key {
            "trace" => {
                let v = need()?;
                Filters::parse_option(v).map_err(|e| e.to_string())?;
                self.patterns = Some(v.to_string());
            }
            "traceconfig" => {
                // Read now so that a missing or bad file is reported with the
                // other option errors, before any recording starts.
                let path = need()?;
                Filters::read_config(path).map_err(|e| e.to_string())?;
                self.config = Some(path.to_string());
            }
            "tracecpu" => self.cpu = flag()?,
            "traceagg" => self.aggregate = flag()?,
            "tracestop" => self.stop = flag()?,
            "tracebuffer" => {
                let v = need()?;
                let n = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (64..=1 << 24).contains(n));
                self.buffer = Some(n.ok_or_else(|| {
                    format!("bad number `{v}` for `tracebuffer` (64 to 16777216 events)")
                })?);
            }
            "traceoverflow" => {
                self.overflow = match need()? {
                    "wait" => Overflow::Wait,
                    "drop" => Overflow::Drop,
                    v => {
                        return Err(format!(
                            "bad value `{v}` for `traceoverflow` (wait or drop)"
                        ))
                    }
                }
            }
            "tracecounter" => {
                let v = need()?;
                self.counter = Some(PerfKind::parse(v).filter(|k| !k.is_clock()).ok_or_else(|| {
                    format!("bad value `{v}` for `tracecounter` (page-faults, context-switches, cpu-migrations, instructions, cycles or cache-misses)")
                })?);
            }
            _ => return Err(format!("unknown option `{key}`")),
        }
        Ok(())
    }

    /// True when tracing was asked for.
    pub fn enabled(&self) -> bool {
        self.patterns.is_some() || self.config.is_some()
    }

    /// The filters: the config file's rules, then the option's patterns.
    pub fn filters(&self) -> Result<Filters, FilterError> {
        let mut filters = match &self.config {
            Some(path) => Filters::read_config(path)?,
            None => Filters::default(),
        };
        if let Some(p) = &self.patterns {
            filters.extend(Filters::parse_option(p)?);
        }
        Ok(filters)
    }

    /// The `tracecounter=` event and whether this thread could open it (one
    /// fd, closed again); None without one, and in aggregate mode, which keeps
    /// no events to carry it.
    fn counter_check(&self) -> Option<(PerfKind, std::io::Result<()>)> {
        let kind = self.counter.filter(|_| !self.aggregate)?;
        let opened = perf::open_counter(kind).map(|fd| {
            // SAFETY: our own fd, closed once.
            unsafe { libc::close(fd) };
        });
        Some((kind, opened))
    }

    /// The `tracecounter=` event when this thread can open it, else None.
    pub fn usable_counter(&self) -> Option<PerfKind> {
        let (kind, opened) = self.counter_check()?;
        opened.ok().map(|()| kind)
    }

    /// The `tracecounter=` event when it can be opened; otherwise says why in
    /// one line (tracing runs on without it).
    fn counter_or_say(&self) -> Option<PerfKind> {
        let (kind, opened) = self.counter_check()?;
        if let Err(e) = opened {
            let why = perf::refusal(kind, &e);
            eprintln!(
                "jscope: tracecounter={}: {why}; tracing runs on without the counter",
                kind.name()
            );
            return None;
        }
        if self.cpu {
            eprintln!(
                "jscope: tracecounter={} replaces tracecpu: trace events carry {} counts, not CPU time",
                kind.name(),
                kind.name()
            );
        }
        Some(kind)
    }
}

/// Header keys describing tracing, with the measured probe cost (JX).
pub fn header_extra(options: &TraceOptions) -> Vec<(String, String)> {
    if !options.enabled() {
        return Vec::new();
    }
    let counter = options.usable_counter();
    let mut pairs = vec![
        (
            "trace.probe_cost_ns".to_string(),
            probe::measure_probe_cost(options.cpu, counter).to_string(),
        ),
        (
            "trace.cpu".to_string(),
            (options.cpu && counter.is_none()).to_string(),
        ),
        (
            "trace.overflow".to_string(),
            match options.overflow {
                Overflow::Wait => "wait",
                Overflow::Drop => "drop",
            }
            .to_string(),
        ),
        (
            "trace.mode".to_string(),
            if options.aggregate {
                "aggregate"
            } else {
                "events"
            }
            .to_string(),
        ),
        (
            "trace.clock".to_string(),
            if probe::uses_tsc() {
                "TSC mapped to CLOCK_MONOTONIC"
            } else {
                "CLOCK_MONOTONIC"
            }
            .to_string(),
        ),
        (
            "trace.untraced".to_string(),
            "calls of methods with count-only probes (count-untraced) and library calls \
             not made directly by application code (exclude-library)"
                .to_string(),
        ),
    ];
    if let Some(kind) = counter {
        pairs.push(("trace.counter".to_string(), kind.name().to_string()));
    }
    if let Some(p) = &options.patterns {
        pairs.push(("trace.patterns".to_string(), p.clone()));
    }
    if let Some(c) = &options.config {
        pairs.push(("trace.config".to_string(), c.clone()));
    }
    pairs
}

/// Why tracing could not start or change.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(transparent)]
    Filters(#[from] FilterError),
    #[error(transparent)]
    ProbeClass(#[from] crate::jvm::native_class::NativeClassError),
    #[error("JVMTI refused tracing: {0}")]
    Jvmti(#[from] crate::jvm::JvmtiError),
    #[error("tracing is not running")]
    NotRunning,
}

#[derive(Default)]
pub struct Counters {
    pub classes_instrumented: AtomicU64,
    pub methods_instrumented: AtomicU64,
    pub methods_skipped: AtomicU64,
    /// Methods given count-only probes (`count-untraced`).
    pub methods_counting: AtomicU64,
    pub class_errors: AtomicU64,
    pub retransform_errors: AtomicU64,
}

/// One tracing session: what the hook and the callbacks consult.
pub struct Session {
    pub probes: Probes,
    filters: RwLock<Filters>,
    /// Dotted class -> its direct superclass and interfaces, learnt when
    /// `subclasses-of` rules need them.
    ancestry: Mutex<HashMap<String, Vec<String>>>,
    /// Dotted names of the classes given probes, to undo them on stop.
    instrumented: Mutex<HashSet<String>>,
    pub counters: Counters,
}

impl Session {
    fn new(filters: Filters) -> Session {
        Session {
            probes: Probes::default(),
            filters: RwLock::new(filters),
            ancestry: Mutex::default(),
            instrumented: Mutex::default(),
            counters: Counters::default(),
        }
    }

    pub fn filters(&self) -> RwLockReadGuard<'_, Filters> {
        self.filters.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn has_subclass_rules(&self) -> bool {
        self.filters().subclass_roots().next().is_some()
    }

    /// Whether `class` may get probes of either kind (trace or count).
    pub fn wants_class(&self, dotted: &str) -> bool {
        self.filters().counts_class(dotted) || self.may_trace_class(dotted)
    }

    pub fn may_trace_class(&self, dotted: &str) -> bool {
        self.filters()
            .may_trace_class(dotted, &|base| self.extends(dotted, base))
    }

    /// Whether `class` descends from `base` as far as the ancestry learnt so far shows.
    pub fn extends(&self, class: &str, base: &str) -> bool {
        let ancestry = self.ancestry.lock().unwrap_or_else(|e| e.into_inner());
        let mut todo = vec![class.to_string()];
        let mut seen = HashSet::new();
        while let Some(c) = todo.pop() {
            for s in ancestry.get(&c).into_iter().flatten() {
                if s == base {
                    return true;
                }
                if seen.insert(s.clone()) {
                    todo.push(s.clone());
                }
            }
        }
        false
    }

    pub fn learn_ancestry(&self, dotted: &str, class: &ClassFile) {
        self.learn(dotted, hook::direct_supers(class));
    }

    fn learn(&self, dotted: &str, supers: Vec<String>) {
        self.ancestry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dotted.to_string(), supers);
    }

    pub fn instrumented(&self, dotted: &str) {
        self.lock_instrumented().insert(dotted.to_string());
    }

    fn lock_instrumented(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.instrumented.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn counter_values(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            (
                "trace.classes_instrumented",
                c.classes_instrumented.load(Ordering::Relaxed),
            ),
            (
                "trace.methods_instrumented",
                c.methods_instrumented.load(Ordering::Relaxed),
            ),
            (
                "trace.methods_counting",
                c.methods_counting.load(Ordering::Relaxed),
            ),
            (
                "trace.methods_skipped",
                c.methods_skipped.load(Ordering::Relaxed),
            ),
            ("trace.class_errors", c.class_errors.load(Ordering::Relaxed)),
            (
                "trace.retransform_errors",
                c.retransform_errors.load(Ordering::Relaxed),
            ),
        ]
    }
}

/// The trace engine's state that the ClassFileLoadHook, ClassPrepare and attach
/// find through this one static: the running session, the last one (whose
/// counters are still reported after it stopped), the probe class, defined
/// once per process (a second definition would fail), and the probe indexes.
struct Tracing {
    running: RwLock<Option<Arc<Session>>>,
    last: Mutex<Option<Arc<Session>>>,
    probe_class: OnceLock<usize>,
    registry: Mutex<Option<registry::Registry>>,
}

static TRACING: Tracing = Tracing {
    running: RwLock::new(None),
    last: Mutex::new(None),
    probe_class: OnceLock::new(),
    registry: Mutex::new(None),
};

pub fn session() -> Option<Arc<Session>> {
    TRACING
        .running
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

fn set_session(s: Option<Arc<Session>>) {
    *TRACING.running.write().unwrap_or_else(|e| e.into_inner()) = s;
}

/// The trace session as an engine. Tracing may also start, change its filters
/// or stop by attach while the recording runs ([`start`], [`stop`]), so the
/// engine always drains the probes' rings.
pub(crate) struct TraceEngine {
    options: TraceOptions,
    drain: Mutex<EngineDrain>,
}

impl TraceEngine {
    pub fn new(options: TraceOptions) -> TraceEngine {
        TraceEngine {
            options,
            drain: Mutex::default(),
        }
    }
}

#[derive(Default)]
struct EngineDrain {
    drain: drain::TraceDrain,
    /// A take is in progress (the last drain stopped on a full chunk).
    taking: bool,
}

impl Engine for TraceEngine {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        begin_recording();
        if !self.options.enabled() {
            return Ok(());
        }
        start(ctx.jvmti, ctx.jni, &self.options).map_err(|e| StartError::Trace(e.into()))
    }

    /// Silences the probes before the writer's last drain. At VM death the
    /// classes keep their probes (restoring them would only slow the exit).
    fn stop(&self, ctx: &StopContext) {
        // Not running is fine here: there is nothing to silence.
        let _ = stop(ctx.jvmti, ctx.restore_with);
    }

    /// Trace events of every thread, each batch under its recording thread.
    fn drain(&self, sink: &mut Sink) -> Drained {
        let mut d = self.drain.lock().unwrap_or_else(|e| e.into_inner());
        if !d.taking {
            d.drain.begin_take();
            d.taking = true;
        }
        while let Some(raw) = d.drain.next_batch() {
            let thread = match raw.thread {
                Some(t) => {
                    sink.emit_thread(t);
                    t
                }
                // A virtual thread's ring: a thread of its own.
                None if raw.key.tid == 0 && raw.key.env == 0 && raw.key.java_id != 0 => {
                    sink.virtual_thread(raw.key.java_id)
                }
                // The agent's own threads run no traced code.
                None => match sink.event_thread(raw.key) {
                    Some(t) => t,
                    None => {
                        d.drain.skip(raw);
                        continue;
                    }
                },
            };
            d.drain
                .write(raw, thread, &mut sink.chunk, &mut sink.symbols);
            // A thread far behind must not make one huge chunk.
            if sink.chunk_full() {
                return Drained::More;
            }
        }
        d.taking = false;
        Drained::All
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        let d = self.drain.lock().unwrap_or_else(|e| e.into_inner());
        out.extend(d.drain.counter_values());
    }
}

/// A new recording counts only its own tracing: the sessions of an earlier
/// recording in this process (attach) leave their counters to that one.
fn begin_recording() {
    *TRACING.last.lock().unwrap_or_else(|e| e.into_inner()) = None;
    probe::reset_recording_counters();
}

/// Starts tracing: probe class, hook, then probes into the loaded classes the
/// filters select. Runs on a Java thread (VMInit's or the attach listener).
pub fn start(jvmti: Jvmti, jni: Jni, options: &TraceOptions) -> Result<(), TraceError> {
    let filters = options.filters()?;
    if session().is_some() {
        return retarget(jvmti, jni, filters);
    }
    // Retransformation and class-file hooks for every class (always available
    // in HotSpot, in the live phase too).
    let mut caps = crate::jvm::no_capabilities();
    caps.set_can_retransform_classes(1);
    caps.set_can_generate_all_class_hook_events(1);
    jvmti.add_capabilities(&caps)?;
    install_probe_class(jvmti, jni)?;
    probe::begin_session(probe::SessionSettings {
        with_cpu: options.cpu,
        exclude_library: filters.exclude_library,
        aggregate: options.aggregate,
        ring_capacity: options.buffer.unwrap_or(probe::RING_EVENTS),
        wait_on_full: options.overflow == Overflow::Wait,
        counter: options.counter_or_say(),
    });
    // Virtual threads (JDK 21+) keep their own rings and stacks.
    vthreads::enable();
    let session = Arc::new(Session::new(filters));
    *TRACING.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.clone());
    set_session(Some(session.clone()));
    jvmti.set_event(true, crate::sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)?;
    retransform_matching(jvmti, jni, &session, &HashSet::new());
    Ok(())
}

fn install_probe_class(jvmti: Jvmti, jni: Jni) -> Result<(), TraceError> {
    if TRACING.probe_class.get().is_none() {
        let class = probe_class::install(jvmti, jni, &Probes::default())?;
        let _ = TRACING.probe_class.set(class as usize);
    }
    Ok(())
}

/// New filters on a running session: classes that gain or lose probes are
/// retransformed (their running frames keep the code they started with).
fn retarget(jvmti: Jvmti, jni: Jni, filters: Filters) -> Result<(), TraceError> {
    let session = session().ok_or(TraceError::NotRunning)?;
    probe::set_exclude_library(filters.exclude_library);
    *session.filters.write().unwrap_or_else(|e| e.into_inner()) = filters;
    let before = std::mem::take(&mut *session.lock_instrumented());
    retransform_matching(jvmti, jni, &session, &before);
    Ok(())
}

/// Stops tracing: probes go silent at once (what they recorded stays for the
/// writer); given the stopping thread's `restore_with`, instrumented classes get
/// their original code back.
pub fn stop(jvmti: Jvmti, restore_with: Option<Jni>) -> Result<(), TraceError> {
    let session = session().ok_or(TraceError::NotRunning)?;
    probe::end_session();
    let _ = jvmti.set_event(false, crate::sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
    set_session(None);
    if let Some(jni) = restore_with {
        let before = std::mem::take(&mut *session.lock_instrumented());
        retransform_loaded(jvmti, jni, &session, |dotted| before.contains(dotted));
    }
    Ok(())
}

/// Retransforms the loaded classes the filters may select, plus those in `also`.
fn retransform_matching(jvmti: Jvmti, jni: Jni, session: &Session, also: &HashSet<String>) {
    if session.has_subclass_rules() {
        learn_loaded_ancestry(jvmti, jni, session);
    }
    let thread = hook::THREAD_CLASS.replace('/', ".");
    retransform_loaded(jvmti, jni, session, |dotted| {
        dotted == thread || also.contains(dotted) || session.wants_class(dotted)
    });
}

/// Loaded classes retransformed at once per batch; a failing batch is retried
/// class by class so one bad class does not keep the others uninstrumented.
const RETRANSFORM_BATCH: usize = 256;

fn retransform_loaded(jvmti: Jvmti, jni: Jni, session: &Session, wanted: impl Fn(&str) -> bool) {
    jni.with_local_frame(64, || {
        let Ok(classes) = jvmti.loaded_classes() else {
            return;
        };
        jni.ensure_local_capacity(classes.len() + 64);
        let chosen: Vec<sys::jclass> = classes
            .iter()
            .copied()
            .filter(|&c| {
                dotted_name(jvmti, c).is_some_and(|n| !n.starts_with("jscope.") && wanted(&n))
                    && jvmti.is_modifiable(c)
            })
            .collect();
        for batch in chosen.chunks(RETRANSFORM_BATCH) {
            if jvmti.retransform(batch).is_err() {
                for c in batch {
                    if jvmti.retransform(&[*c]).is_err() {
                        session
                            .counters
                            .retransform_errors
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        for c in classes {
            jni.delete_local(c);
        }
    });
}

/// `java.util.Map$Entry` for an object class; None for arrays and primitives.
fn dotted_name(jvmti: Jvmti, class: sys::jclass) -> Option<String> {
    let sig = jvmti.class_signature(class).ok()?;
    let inner = sig.strip_prefix('L')?.strip_suffix(';')?;
    Some(inner.replace('/', "."))
}

/// Superclasses and interfaces of every loaded class, so `subclasses-of` can
/// select classes loaded before tracing started.
fn learn_loaded_ancestry(jvmti: Jvmti, jni: Jni, session: &Session) {
    jni.with_local_frame(64, || {
        let Ok(classes) = jvmti.loaded_classes() else {
            return;
        };
        jni.ensure_local_capacity(classes.len() + 64);
        for c in classes {
            learn_class_ancestry(jvmti, jni, session, c);
            jni.delete_local(c);
        }
    });
}

fn learn_class_ancestry(jvmti: Jvmti, jni: Jni, session: &Session, class: sys::jclass) {
    let Some(name) = dotted_name(jvmti, class) else {
        return;
    };
    let mut supers = Vec::new();
    let sup = jni.superclass(class);
    if !sup.is_null() {
        supers.extend(dotted_name(jvmti, sup));
        jni.delete_local(sup);
    }
    for i in jvmti.interfaces(class) {
        supers.extend(dotted_name(jvmti, i));
        jni.delete_local(i);
    }
    session.learn(&name, supers);
}

/// ClassPrepare: a class whose ancestry was unknown when its bytes were hooked
/// (a superclass loaded after it) and that `subclasses-of` selects is
/// retransformed now that its whole hierarchy is loaded.
pub fn class_prepared(jvmti: Jvmti, jni: Jni, class: sys::jclass) {
    let Some(session) = session() else {
        return;
    };
    if !session.has_subclass_rules() {
        return;
    }
    let Some(name) = dotted_name(jvmti, class) else {
        return;
    };
    if session.lock_instrumented().contains(&name) {
        return;
    }
    learn_class_ancestry(jvmti, jni, &session, class);
    let selected = session
        .filters()
        .subclass_roots()
        .any(|root| session.extends(&name, root));
    if selected && jvmti.is_modifiable(class) && jvmti.retransform(&[class]).is_err() {
        session
            .counters
            .retransform_errors
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// Counters for the recording (the current or last session's, and the probes').
pub fn counter_values() -> Vec<(&'static str, u64)> {
    let Some(session) = TRACING
        .last
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
    else {
        return Vec::new();
    };
    let mut values = session.counter_values();
    values.extend(probe::counter_values());
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_options_parse_and_validate() {
        let mut o = TraceOptions::default();
        assert!(!o.enabled());
        o.set("trace", Some("demo.*#run;!demo.Secret")).unwrap();
        o.set("tracecpu", None).unwrap();
        o.set("traceagg", None).unwrap();
        assert!(o.aggregate);
        o.set("tracebuffer", Some("4096")).unwrap();
        assert_eq!(o.overflow, Overflow::Wait, "waiting is the default");
        o.set("traceoverflow", Some("drop")).unwrap();
        assert_eq!(o.overflow, Overflow::Drop);
        let err = o.set("traceoverflow", Some("block")).unwrap_err();
        assert_eq!(err, "bad value `block` for `traceoverflow` (wait or drop)");
        assert!(o.enabled() && o.cpu);
        assert_eq!(o.buffer, Some(4096));
        assert_eq!(o.filters().unwrap().rules.len(), 2);
        assert!(o.set("trace", Some(";")).is_err());
        assert!(o.set("tracebuffer", Some("1")).is_err());
        assert!(o.set("tracecpu", Some("yes")).is_err());
        assert!(TraceOptions::owns("traceconfig") && !TraceOptions::owns("tracex"));
        o.set("tracecounter", Some("cpu-migrations")).unwrap();
        assert_eq!(o.counter, Some(PerfKind::CpuMigrations));
        let err = o.set("tracecounter", Some("task-clock")).unwrap_err();
        assert!(err.starts_with("bad value `task-clock` for `tracecounter` (page-faults, "));
        assert!(o.set("tracecounter", None).is_err());
    }

    #[test]
    fn config_file_rules_come_before_option_patterns() {
        let path = std::env::temp_dir().join(format!("jscope-trace-{}.conf", std::process::id()));
        std::fs::write(&path, "exclude demo.Shop close\nexclude-library\n").unwrap();
        let mut o = TraceOptions::default();
        o.set("traceconfig", Some(path.to_str().unwrap())).unwrap();
        o.set("trace", Some("demo.*")).unwrap();
        let f = o.filters().unwrap();
        let none = |_: &str| false;
        assert!(f.exclude_library);
        assert!(!f.traces("demo.Shop", "close", &none));
        assert!(f.traces("demo.Shop", "open", &none));
        std::fs::remove_file(&path).unwrap();
        let err = o
            .set("traceconfig", Some("/nonexistent/trace.conf"))
            .unwrap_err();
        assert!(
            err.contains("cannot read trace config /nonexistent/trace.conf"),
            "{err}"
        );
    }
}
