//! The jscope JVMTI agent: loaded into a JVM with `-agentpath:libjscope_agent.so=OPTIONS`
//! or attached to a running one, it samples Java stacks (cpu, wall and snapshot
//! engines) and writes a jscope recording. docs/AGENT.md describes the options.
//!
//! This module owns the entry points and the JVMTI callbacks. Every `extern "C"`
//! function runs its whole body in `jvm::entry`'s guard, so nothing ever unwinds
//! into the JVM, and every failure to start becomes one `jscope: ` line on
//! stderr while the JVM runs on. All JNI and JVMTI access goes through `jvm`.
#![deny(clippy::undocumented_unsafe_blocks)]

pub(crate) mod clock;
pub(crate) mod cpu_timers;
pub(crate) mod engine;
pub(crate) mod events;
pub(crate) mod frames;
pub mod header;
pub mod hotspot;
pub mod interpose;
pub(crate) mod java_threads;
pub(crate) mod jvm;
pub mod native;
pub(crate) mod options;
pub(crate) mod recorder;
pub(crate) mod remote;
pub(crate) mod ring;
pub mod safe;
pub(crate) mod sender;
pub(crate) mod signals;
pub(crate) mod sink;
pub(crate) mod snapshot;
pub(crate) mod stopper;
pub(crate) mod symbols;
pub(crate) mod sys;
pub(crate) mod thread_ring;
pub(crate) mod threads;
pub(crate) mod tid_slots;
pub(crate) mod trace;
pub(crate) mod wall;
pub(crate) mod writer;

#[doc(hidden)]
pub use trace::probe::bench_native_calls;

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use jvm::entry::guarded as guard;
use jvm::{Jni, Jvmti, Vm};
use options::Options;
use recorder::{Hooks, Prepared, Recorder};

const JNI_OK: sys::jint = 0;
const JNI_ERR: sys::jint = -1;

/// The agent's process-wide state.
struct Agent {
    jvmti: Option<Jvmti>,
    callbacks_installed: bool,
    /// Set by Agent_OnLoad, consumed by VMInit.
    pending: Option<Prepared>,
    recorder: Option<Recorder>,
}

/// The agent, and what its JVMTI callbacks use.
struct Process {
    agent: Mutex<Agent>,
    /// What the JVMTI callbacks use; apart from `agent` so that callbacks fired
    /// while a recording starts (the agent's own threads attaching) never wait
    /// for it.
    hooks: Mutex<Option<Arc<Hooks>>>,
}

static PROCESS: Process = Process {
    agent: Mutex::new(Agent {
        jvmti: None,
        callbacks_installed: false,
        pending: None,
        recorder: None,
    }),
    hooks: Mutex::new(None),
};

fn agent() -> MutexGuard<'static, Agent> {
    PROCESS.agent.lock().unwrap_or_else(|e| e.into_inner())
}

fn hooks() -> Option<Arc<Hooks>> {
    PROCESS
        .hooks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

fn set_hooks(hooks: Option<Arc<Hooks>>) {
    *PROCESS.hooks.lock().unwrap_or_else(|e| e.into_inner()) = hooks;
}

/// Prints the agent's one line on stderr.
fn report(message: impl std::fmt::Display) {
    eprintln!("jscope: {message}");
}

/// The option text the JVM passed; a test build takes `panictest=` out of it.
fn option_text(options: *const c_char) -> String {
    let text = jvm::c_str(options).unwrap_or_default();
    jvm::entry::panic_test::take_option(&text)
}

/// What every way in does first: the JavaVM is kept for code handed none, and
/// panics on JVM threads are reported by the entry guard alone.
fn loaded(vm: Vm) {
    vm.remember();
    jvm::entry::install_panic_hook();
}

/// Loaded at JVM start. Always returns 0: a non-zero value would abort the JVM,
/// and a profiler must never stop the application from running.
#[no_mangle]
pub extern "C" fn Agent_OnLoad(
    vm: *mut sys::JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> sys::jint {
    guard("Agent_OnLoad", JNI_OK, || {
        loaded(Vm(vm));
        if let Err(message) = on_load(Vm(vm), &option_text(options)) {
            report(message);
        }
        JNI_OK
    })
}

fn on_load(vm: Vm, text: &str) -> Result<(), String> {
    let options = Options::parse(text).map_err(|e| format!("{e}; profiling is disabled"))?;
    for (given, name) in [(options.stop, "stop"), (options.trace.stop, "tracestop")] {
        if given {
            return Err(format!(
                "`{name}` only applies to an agent attached to a running JVM; profiling is disabled"
            ));
        }
    }
    let jvmti = init_jvmti(vm)?;
    if options.remote.enabled {
        remote::install(vm, &options.remote).map_err(|e| format!("{e}; profiling is disabled"))?;
    }
    // Park events' breakpoints are granted only now, while the agent loads.
    if let Err(e) = events::park::install(vm, &options.events) {
        report(format!("{e}; parks are not recorded"));
    }
    let prepared = Prepared::new(options).map_err(|e| format!("{e}; profiling is disabled"))?;
    let mut agent = agent();
    for event in [sys::JVMTI_EVENT_VM_INIT, sys::JVMTI_EVENT_VM_DEATH] {
        jvmti
            .set_event(true, event)
            .map_err(|e| format!("cannot enable VM events: {e}"))?;
    }
    agent.pending = Some(prepared);
    Ok(())
}

/// The agent's JVMTI environment, created and given its capabilities and
/// callbacks on first use.
fn init_jvmti(vm: Vm) -> Result<Jvmti, String> {
    let mut agent = agent();
    let jvmti = match agent.jvmti {
        Some(j) => j,
        None => vm
            .jvmti()
            .ok_or("this JVM offers no JVMTI 1.2 environment")?,
    };
    agent.jvmti = Some(jvmti);
    if !agent.callbacks_installed {
        // Line numbers are optional: without them frames just lack lines.
        let _ = jvmti.add_line_capabilities();
        jvmti
            .set_callbacks(&callbacks())
            .map_err(|e| format!("cannot set JVMTI callbacks: {e}"))?;
        agent.callbacks_installed = true;
    }
    Ok(jvmti)
}

fn callbacks() -> sys::jvmtiEventCallbacks {
    let mut cb = jvm::no_callbacks();
    cb.VMInit = Some(on_vm_init);
    cb.VMDeath = Some(on_vm_death);
    cb.ThreadStart = Some(on_thread_start);
    cb.ThreadEnd = Some(on_thread_end);
    cb.ClassPrepare = Some(on_class_prepare);
    cb.ClassLoad = Some(on_class_load);
    cb.ClassFileLoadHook = Some(trace::hook::on_class_file_load);
    cb.DynamicCodeGenerated = Some(on_dynamic_code_generated);
    events::callbacks::install(&mut cb);
    cb
}

/// The JVM generated code (a stub): its name names the stack walker's stub frames.
unsafe extern "C" fn on_dynamic_code_generated(
    _jvmti: *mut sys::jvmtiEnv,
    name: *const c_char,
    address: *const c_void,
    length: sys::jint,
) {
    guard("dynamic_code_generated", (), || {
        if let Some(name) = jvm::c_str(name) {
            signals::code_generated(&name, address as usize, length.max(0) as usize);
        }
    })
}

/// Starts a prepared recording; prints the outcome.
fn start(vm: Vm, jvmti: Jvmti, jni: Jni, prepared: Prepared, attached: bool) -> Result<(), String> {
    let options = &prepared.options;
    let mut modes = options.modes.label();
    let extra = [
        (options.trace.enabled(), "trace"),
        (!options.events.kinds.is_empty(), "events"),
        (options.native.mem.is_some(), "nativemem"),
        (options.native.lock.is_some(), "nativelock"),
    ];
    for (_, name) in extra.into_iter().filter(|(on, _)| *on) {
        modes = if modes.is_empty() {
            name.into()
        } else {
            format!("{modes}+{name}")
        };
    }
    if modes.is_empty() {
        // mode=none alone: a later attach with trace= may still start tracing.
        modes = "nothing (mode=none without trace=, events=, nativemem or nativelock)".into();
    }
    let quiet = options.quiet;
    let recorder = Recorder::start(vm, jvmti, jni, prepared, attached, set_hooks)
        .map_err(|e| format!("{e}; profiling is disabled"))?;
    if !quiet {
        report(format!("recording {modes} to {}", recorder.destination));
    }
    agent().recorder = Some(recorder);
    Ok(())
}

/// Stops the running recording, if any; returns where it went and whether the
/// writer finished in time. `restore_with` (stop by attach, the application
/// runs on) gives traced classes their own code back.
fn stop_recording(restore_with: Option<Jni>) -> Option<(String, bool)> {
    let mut recorder = agent().recorder.take()?;
    set_hooks(None);
    let complete = recorder.stop(restore_with);
    Some((recorder.destination.clone(), complete))
}

unsafe extern "C" fn on_vm_init(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
) {
    guard("vm_init", (), || {
        let Some(prepared) = agent().pending.take() else {
            return;
        };
        let Some(vm) = Jni(jni).java_vm() else {
            return report("cannot find the JavaVM; profiling is disabled");
        };
        if let Err(message) = start(vm, Jvmti(jvmti), Jni(jni), prepared, false) {
            report(message);
        }
    })
}

unsafe extern "C" fn on_vm_death(_jvmti: *mut sys::jvmtiEnv, _jni: *mut sys::JNIEnv) {
    guard("vm_death", (), || {
        if let Some((path, false)) = stop_recording(None) {
            report(format!(
                "the writer did not finish in time; {path} may lack its end"
            ));
        }
    })
}

unsafe extern "C" fn on_thread_start(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    guard("thread_start", (), || {
        if let Some(hooks) = hooks() {
            hooks.thread_started(Jni(jni), thread);
            events::callbacks::thread_started(jni, thread);
        }
    })
}

unsafe extern "C" fn on_thread_end(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    guard("thread_end", (), || {
        if let Some(hooks) = hooks() {
            hooks.thread_ended();
            events::callbacks::thread_ended(jni, thread);
        }
    })
}

unsafe extern "C" fn on_class_prepare(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
    class: sys::jclass,
) {
    guard("class_prepare", (), || {
        if let Some(hooks) = hooks() {
            hooks.class_prepared(class);
            trace::class_prepared(Jvmti(jvmti), Jni(jni), class);
        }
    })
}

/// Listened to because AsyncGetCallTrace requires it; recorded when class
/// events are asked for.
unsafe extern "C" fn on_class_load(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    class: sys::jclass,
) {
    guard("class_load", (), || {
        events::callbacks::class_loaded(jvmti, jni, thread, class);
    })
}

/// Dynamic attach: starts a recording in a running JVM, or with `stop` stops the
/// running one and completes its file. Returns 0 on success.
#[no_mangle]
pub extern "C" fn Agent_OnAttach(
    vm: *mut sys::JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> sys::jint {
    guard("Agent_OnAttach", JNI_ERR, || {
        loaded(Vm(vm));
        match on_attach(Vm(vm), &option_text(options)) {
            Ok(()) => JNI_OK,
            Err(message) => {
                report(message);
                JNI_ERR
            }
        }
    })
}

fn on_attach(vm: Vm, text: &str) -> Result<(), String> {
    let options = Options::parse(text).map_err(|e| e.to_string())?;
    if options.remote.enabled {
        // Breakpoint and local-variable capabilities are only granted at start.
        return Err("`remote` needs the agent loaded at JVM start (-agentpath)".into());
    }
    if options.stop {
        // The application runs on: give the traced classes their own code back.
        return stop_from_attach(vm.jni(), options.quiet);
    }
    if options.trace.stop || (options.trace.enabled() && agent().recorder.is_some()) {
        return trace_from_attach(vm, &options);
    }
    if let Some(recorder) = &agent().recorder {
        return Err(format!(
            "already recording to {}; attach with `stop` first",
            recorder.destination
        ));
    }
    let jvmti = init_jvmti(vm)?;
    let jni = vm
        .jni()
        .ok_or("the attaching thread has no JNI environment")?;
    let prepared = Prepared::new(options).map_err(|e| e.to_string())?;
    jvmti
        .set_event(true, sys::JVMTI_EVENT_VM_DEATH)
        .map_err(|e| format!("cannot enable VM events: {e}"))?;
    start(vm, jvmti, jni, prepared, true)
}

/// `trace=...` on a running recording starts tracing or changes its filters;
/// `tracestop` stops tracing and removes the probes, the recording runs on.
fn trace_from_attach(vm: Vm, options: &Options) -> Result<(), String> {
    if agent().recorder.is_none() {
        return Err("no recording is running; attach with `trace=...` alone to start one".into());
    }
    let jvmti = init_jvmti(vm)?;
    let jni = vm
        .jni()
        .ok_or("the attaching thread has no JNI environment")?;
    let result = if options.trace.stop {
        trace::stop(jvmti, Some(jni))
    } else {
        trace::start(jvmti, jni, &options.trace)
    };
    result.map_err(|e| match e {
        trace::TraceError::NotRunning => e.to_string(),
        e => format!("tracing: {e}"),
    })?;
    if !options.quiet {
        let what = if options.trace.stop {
            "stopped"
        } else {
            "now follows the new filters"
        };
        report(format!("tracing {what}"));
    }
    Ok(())
}

/// `stop` through dynamic attach: stops the running recording and completes its file.
fn stop_from_attach(restore_with: Option<Jni>, quiet: bool) -> Result<(), String> {
    match stop_recording(restore_with) {
        Some((path, true)) => {
            if !quiet {
                report(format!("stopped; recording written to {path}"));
            }
            Ok(())
        }
        Some((path, false)) => Err(format!(
            "stopped, but the writer did not finish in time; {path} may lack its end"
        )),
        None => Err("no recording is running".into()),
    }
}

/// Called as the VM shuts down. VMDeath normally stopped the recording already;
/// if not, the signal engines are silenced so nothing samples a dying VM.
#[no_mangle]
pub extern "C" fn Agent_OnUnload(_vm: *mut sys::JavaVM) {
    guard("Agent_OnUnload", (), || {
        set_hooks(None);
        if let Some(recorder) = agent().recorder.as_mut() {
            recorder.silence();
        }
    })
}

/// Test-only: `n` stack walks from garbage registers on the calling thread
/// (the native `WalkFuzz.garbageWalks(long n, long seed)` of a test's class,
/// bound by loading this library again with System.load); the walks done,
/// or -1 when no recording walks with the VM structure walker.
#[cfg(feature = "fault-injection")]
#[no_mangle]
pub extern "C" fn Java_WalkFuzz_garbageWalks(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    n: sys::jlong,
    seed: sys::jlong,
) -> sys::jlong {
    guard("garbage_walks", -1, || {
        let Some(hs) = signals::current_walker() else {
            return -1;
        };
        let thread = (env as usize).wrapping_sub(hs.env_offset);
        let t = hotspot::fuzz::garbage_walks(hs, thread, n.max(0) as u64, seed as u64);
        eprintln!(
            "walkfuzz: {} walks, {} frames, {} Java frames, {} stopped early",
            t.walks, t.frames, t.java_frames, t.broken
        );
        t.walks as sys::jlong
    })
}

/// Test-only: nanoseconds per walk of the calling thread's own stack over
/// `n` walks (`WalkFuzz.timeOwnWalk(long n)`); -1 without a VM structure
/// walker. Prints the frames one walk found.
#[cfg(feature = "fault-injection")]
#[no_mangle]
pub extern "C" fn Java_WalkFuzz_timeOwnWalk(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    n: sys::jlong,
) -> sys::jlong {
    guard("time_own_walk", -1, || {
        let Some(hs) = signals::current_walker() else {
            return -1;
        };
        let thread = (env as usize).wrapping_sub(hs.env_offset);
        let (ns, frames, java) = hotspot::fuzz::time_own_walk(hs, thread, n.max(1) as u64);
        if n > 1 {
            eprintln!("walkbench: {ns} ns per walk of {frames} frames ({java} Java)");
        }
        ns as sys::jlong
    })
}
