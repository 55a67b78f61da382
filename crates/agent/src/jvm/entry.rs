//! The guard every `extern "C"` entry point (Agent_OnLoad/OnAttach/OnUnload, the
//! JVMTI callbacks, the JNI natives, the breakpoint callbacks) runs its whole
//! body in: nothing ever unwinds into the JVM.
//!
//! A caught panic is counted (`agent.panics` in the recording), reported once
//! per entry point (one `jscope:` line) and stops the engine the entry point
//! belongs to: its entry points return their default from then on, since its
//! state may be half updated. The JVM runs on.
//!
//! The path without a panic reads one atomic and allocates nothing, so the
//! guard may wrap the callbacks that run inside the garbage collector, where
//! JNI and allocation are not allowed. It touches no thread-local either.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, Once};

/// A part of the agent whose entry points stop together after a panic. A
/// constant: whether it stopped is kept in [`GUARD`], at its slot.
pub struct Engine {
    /// What the report says happens next.
    consequence: &'static str,
    /// Whether a panic stops it (the agent's lifecycle never stops: VMDeath
    /// must still end the recording).
    stoppable: bool,
    /// Its flag in `GUARD.stopped`.
    slot: usize,
}

impl Engine {
    const fn new(consequence: &'static str, stoppable: bool, slot: usize) -> Engine {
        Engine {
            consequence,
            stoppable,
            slot,
        }
    }

    /// Whether a panic stopped this engine.
    pub fn stopped(&self) -> bool {
        GUARD.stopped[self.slot].load(Ordering::Relaxed)
    }
}

/// Loading, attaching, VM start and death, and the callbacks every recording
/// uses (threads, classes).
pub const AGENT: Engine = Engine::new("the agent goes on without it", false, 0);
/// The event callbacks (monitors, GC, allocations, JIT, class unloads).
pub const EVENTS: Engine = Engine::new("events are no longer recorded", true, 1);
/// The user-event natives of `jscope.Events`.
pub const USER_EVENTS: Engine = Engine::new("user events are no longer recorded", true, 2);
/// Tracing: the class-file hook and the `jscope/Trace` probes.
pub const TRACE: Engine = Engine::new("calls are no longer traced", true, 3);
/// The breakpoint environment: remote calls (RMI, HTTP) and parks.
pub const BREAKPOINTS: Engine =
    Engine::new("remote calls and parks are no longer recorded", true, 4);
/// Engines there are slots for (the last one is the unit tests').
const ENGINES: usize = 6;

/// The guard's process-wide state.
struct Guard {
    /// Whether each engine was stopped by a panic, by slot.
    stopped: [AtomicBool; ENGINES],
    /// Panics caught at entry points since the agent loaded.
    panics: AtomicU64,
    /// Entry points already reported, so each is reported once.
    reported: Mutex<Vec<&'static str>>,
    /// Where the last panic on a JVM thread happened, from the panic hook.
    last_panic: Mutex<Option<String>>,
    /// The panic hook is installed once.
    hook: Once,
}

static GUARD: Guard = Guard {
    stopped: [const { AtomicBool::new(false) }; ENGINES],
    panics: AtomicU64::new(0),
    reported: Mutex::new(Vec::new()),
    last_panic: Mutex::new(None),
    hook: Once::new(),
};

/// Panics caught at entry points since the agent loaded (`agent.panics`).
pub fn panics() -> u64 {
    GUARD.panics.load(Ordering::Relaxed)
}

/// Counts a panic caught where nothing may be printed or locked (the native
/// hooks, which may run inside an allocator); the caller reports it later.
pub fn count_panic() {
    GUARD.panics.fetch_add(1, Ordering::Relaxed);
}

/// Runs an entry point of the agent's lifecycle (see [`AGENT`]).
#[inline]
pub fn guarded<R>(name: &'static str, default: R, f: impl FnOnce() -> R) -> R {
    guarded_in(&AGENT, name, default, f)
}

/// Runs `f`, the whole body of entry point `name` of `engine`; `default` when the
/// engine was stopped or `f` panicked.
#[inline]
pub fn guarded_in<R>(
    engine: &'static Engine,
    name: &'static str,
    default: R,
    f: impl FnOnce() -> R,
) -> R {
    if engine.stopped() {
        return default;
    }
    match catch_unwind(AssertUnwindSafe(|| {
        panic_test::maybe_panic(name);
        f()
    })) {
        Ok(r) => r,
        Err(payload) => {
            // Dropping the payload runs foreign code (its Drop), which could panic
            // again outside any guard; a small leak per panic is the safer choice.
            std::mem::forget(payload);
            let _ = catch_unwind(|| caught(engine, name));
            default
        }
    }
}

#[cold]
fn caught(engine: &'static Engine, name: &'static str) {
    GUARD.panics.fetch_add(1, Ordering::Relaxed);
    if engine.stoppable {
        GUARD.stopped[engine.slot].store(true, Ordering::Relaxed);
    }
    let at = GUARD
        .last_panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .map(|p| format!(" ({p})"))
        .unwrap_or_default();
    let mut reported = GUARD.reported.lock().unwrap_or_else(|e| e.into_inner());
    if !reported.contains(&name) {
        reported.push(name);
        // A failed load or attach leaves nothing running.
        let consequence = match name.starts_with("Agent_On") {
            true => "profiling is disabled",
            false => engine.consequence,
        };
        eprintln!("jscope: internal error in {name}{at}; {consequence}");
    }
}

/// Installs, once, a panic hook that keeps the message and place of a panic on
/// a JVM thread for the guard's one report instead of printing it. The agent's
/// own threads (`jscope-*`) keep the default output, which their runners rely
/// on; so a panic in a callback that runs on one of them (ThreadStart of the
/// agent's own threads) shows that output besides the one report. (Telling the
/// two apart would take a thread-local, which the GC-time callbacks must not
/// touch.)
pub fn install_panic_hook() {
    GUARD.hook.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let current = std::thread::current();
            if current.name().is_some_and(|n| n.starts_with("jscope")) {
                return default(info);
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            *GUARD.last_panic.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(format!("{message} at {place}"));
        }));
    });
}

/// Counters for the recording.
pub fn counter_values() -> [(&'static str, u64); 1] {
    [("agent.panics", panics())]
}

/// Test builds only (cargo feature `panic-test`): the agent option
/// `panictest=NAME` makes entry point NAME panic each time it runs, to show that
/// the JVM runs on.
#[cfg(feature = "panic-test")]
pub mod panic_test {
    use std::sync::OnceLock;

    static CHOSEN: OnceLock<String> = OnceLock::new();

    /// Takes `panictest=NAME` out of the option text (the options parser does not
    /// know it) and arms it.
    pub fn take_option(text: &str) -> String {
        let mut rest = Vec::new();
        for part in text.split(',') {
            match part.strip_prefix("panictest=") {
                Some(name) => {
                    let _ = CHOSEN.set(name.to_string());
                }
                None => rest.push(part),
            }
        }
        rest.join(",")
    }

    #[inline]
    pub fn maybe_panic(name: &str) {
        if CHOSEN.get().is_some_and(|c| c == name) {
            panic!("panictest={name}");
        }
    }
}

/// Without the `panic-test` feature the option is unknown and nothing panics.
#[cfg(not(feature = "panic-test"))]
pub mod panic_test {
    pub fn take_option(text: &str) -> String {
        text.to_string()
    }

    #[inline(always)]
    pub fn maybe_panic(_name: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_ENGINE: Engine = Engine::new("tests stop", true, ENGINES - 1);

    #[test]
    fn a_panic_returns_the_default_and_stops_the_engine() {
        assert_eq!(guarded_in(&TEST_ENGINE, "ok", 1, || 2), 2);
        let before = panics();
        assert_eq!(guarded_in(&TEST_ENGINE, "boom", 1, || panic!("boom")), 1);
        assert!(panics() > before);
        assert!(TEST_ENGINE.stopped());
        assert_eq!(guarded_in(&TEST_ENGINE, "ok", 1, || 2), 1);
    }
}
