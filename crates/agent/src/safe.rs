//! Fault-free memory reads for the signal handler's walkers.
//!
//! A stack walk reads memory it cannot trust: words of a stack that may be
//! half-built, pointers into the JVM's metadata that a garbage register can
//! make up. Each such read goes through [`load`], one machine load at a known
//! address whose fault is turned into a failure value. Three ways, best first:
//!
//! - the JVM's own SafeFetch ([`use_jvm_safefetch`]): HotSpot's signal handler
//!   already resumes a fault in it, on every thread, so nothing of the JVM's
//!   signal handling changes;
//! - this module's load instruction ([`install`]), whose faults a SIGSEGV and
//!   SIGBUS handler put in front of the JVM's catches, passing every other
//!   fault on unchanged (the JVM needs its faults: implicit null checks,
//!   safepoint polls, stack banging); for a JVM whose SafeFetch cannot be
//!   found. `-Xcheck:jni` reports the changed handler once;
//! - until either is in place, `process_vm_readv`, fault-free too but a
//!   system call per read.
//!
//! Either fast way is proven by a read of an unmapped page before it is used.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::OnceLock;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl jscope_safe_load",
    ".hidden jscope_safe_load",
    ".type jscope_safe_load,@function",
    "jscope_safe_load:",
    // The failure value first: a faulting load leaves it in rax.
    "    mov rax, rsi",
    ".globl jscope_safe_load_insn",
    ".hidden jscope_safe_load_insn",
    "jscope_safe_load_insn:",
    "    mov rax, qword ptr [rdi]",
    ".globl jscope_safe_load_resume",
    ".hidden jscope_safe_load_resume",
    "jscope_safe_load_resume:",
    "    ret",
    ".size jscope_safe_load, . - jscope_safe_load",
);

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" {
    /// Returns the word at `addr`, or `fail` when reading it faults.
    fn jscope_safe_load(addr: usize, fail: usize) -> usize;
    static jscope_safe_load_insn: u8;
    static jscope_safe_load_resume: u8;
}

/// The fault-free read's process-wide state.
struct SafeState {
    /// The fault-free load in use: a function `(addr, fail) -> word`, or 0
    /// before one is proven (the system-call fallback).
    loader: AtomicUsize,
    /// Set once this module's fault handler is installed.
    handler: AtomicBool,
    /// How installing the handler went (tried once).
    installed: OnceLock<Result<(), InstallError>>,
    /// The handler that was installed before ours, for every other fault.
    previous: OnceLock<[libc::sigaction; 2]>,
    /// This process's id, for the system-call fallback (getpid is a system
    /// call).
    pid: AtomicI32,
}

static SAFE: SafeState = SafeState {
    loader: AtomicUsize::new(0),
    handler: AtomicBool::new(false),
    installed: OnceLock::new(),
    previous: OnceLock::new(),
    pid: AtomicI32::new(0),
};

/// The failure value [`load`] is given: the words walkers test for are never it.
const FAIL: usize = 0x_dead_f417_dead_f417;

/// A fault-free load: the word at `addr`, or `fail` when reading it faults.
type Loader = unsafe extern "C" fn(usize, usize) -> usize;

/// True when [`load`] reads without a system call.
pub fn fast() -> bool {
    SAFE.loader.load(Ordering::Acquire) != 0
}

/// The word at `addr`, or None when it cannot be read. Async-signal-safe.
#[inline]
pub fn load(addr: usize) -> Option<usize> {
    if !(4096..=usize::MAX - 8).contains(&addr) {
        return None;
    }
    let loader = SAFE.loader.load(Ordering::Acquire);
    if loader == 0 {
        return slow_load(addr);
    }
    // SAFETY: only proven loaders are published.
    let load: Loader = unsafe { std::mem::transmute::<usize, Loader>(loader) };
    // SAFETY: a fault in the load comes back as the failure value given.
    let v = unsafe { load(addr, FAIL) };
    if v != FAIL {
        return Some(v);
    }
    // The failure value may be the word itself: ask again with another.
    // SAFETY: as above.
    let again = unsafe { load(addr, !FAIL) };
    (again != !FAIL).then_some(again)
}

/// Proves `loader` (reads a word it can and refuses one it cannot) and makes
/// [`load`] use it.
fn prove_and_use(loader: Loader) -> Result<(), InstallError> {
    let word = 0x1234_5678_9abc_def0usize;
    // SAFETY: the loader turns faults into the failure value; page 0 and the
    // local are the two cases.
    let (mapped, unmapped) = unsafe {
        (
            loader(&word as *const usize as usize, FAIL),
            loader(8, FAIL),
        )
    };
    if mapped != word || unmapped != FAIL {
        return Err(InstallError::Unproven);
    }
    SAFE.loader.store(loader as usize, Ordering::Release);
    Ok(())
}

/// Reads through the JVM's SafeFetchN at `entry` (`intptr_t SafeFetchN(intptr_t*
/// addr, intptr_t fail)`), whose faults the JVM's own signal handler resumes.
/// Off the handler, once the JVM is initialised.
pub fn use_jvm_safefetch(entry: usize) -> Result<(), InstallError> {
    note_pid();
    if entry == 0 {
        return Err(InstallError::Unproven);
    }
    // SAFETY: the caller found SafeFetchN's entry in libjvm; it is proven
    // before use.
    prove_and_use(unsafe { std::mem::transmute::<usize, Loader>(entry) })
}

/// The `bytes` (1..=8) little-endian bytes at `addr`, any alignment, read
/// through the aligned words holding them, so a read never crosses into a
/// page the value does not touch.
#[inline]
fn load_bytes(addr: usize, bytes: usize) -> Option<u64> {
    let base = addr & !7;
    let shift = (addr - base) * 8;
    let low = load(base)? as u64 >> shift;
    let value = if shift + bytes * 8 <= 64 {
        low
    } else {
        low | (load(base.wrapping_add(8))? as u64) << (64 - shift)
    };
    Some(match bytes {
        8 => value,
        n => value & ((1u64 << (8 * n)) - 1),
    })
}

/// The 32-bit value at `addr`, or None.
#[inline]
pub fn load_u32(addr: usize) -> Option<u32> {
    load_bytes(addr, 4).map(|v| v as u32)
}

/// The 16-bit value at `addr`, or None.
#[inline]
pub fn load_u16(addr: usize) -> Option<u16> {
    load_bytes(addr, 2).map(|v| v as u16)
}

/// The byte at `addr`, or None.
#[inline]
pub fn load_u8(addr: usize) -> Option<u8> {
    load_bytes(addr, 1).map(|v| v as u8)
}

/// Fills `out` with the words at `addr`; false when any cannot be read.
pub fn load_words(addr: usize, out: &mut [usize]) -> bool {
    if fast() {
        for (i, w) in out.iter_mut().enumerate() {
            match load(addr + 8 * i) {
                Some(v) => *w = v,
                None => return false,
            }
        }
        return true;
    }
    slow_words(addr, out)
}

fn slow_load(addr: usize) -> Option<usize> {
    let mut out = [0usize; 1];
    slow_words(addr, &mut out).then_some(out[0])
}

/// `process_vm_readv` on this process: the kernel checks the address.
fn slow_words(addr: usize, out: &mut [usize]) -> bool {
    let bytes = std::mem::size_of_val(out);
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: bytes,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut c_void,
        iov_len: bytes,
    };
    let mut pid = SAFE.pid.load(Ordering::Relaxed);
    if pid == 0 {
        // SAFETY: getpid has no preconditions.
        pid = unsafe { libc::getpid() };
        SAFE.pid.store(pid, Ordering::Relaxed);
    }
    // SAFETY: a plain system call on this process; the kernel checks `addr`.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    n == bytes as isize
}

/// Notes this process's id for the fallback; off the handler.
pub fn note_pid() {
    // SAFETY: getpid has no preconditions.
    SAFE.pid.store(unsafe { libc::getpid() }, Ordering::Relaxed);
}

/// Why the fault handler could not be put in place.
#[derive(Debug, Clone, thiserror::Error)]
pub enum InstallError {
    #[error("cannot install a SIGSEGV/SIGBUS handler: {0}")]
    Sigaction(String),
    #[error("a read of an unmapped page was not caught")]
    Unproven,
    #[error("fault-free reads are not supported on this platform")]
    Unsupported,
}

/// Installs the fault handler in front of the current SIGSEGV and SIGBUS
/// handlers, once per process, and reads through this module's load from
/// then on; off the handler, after the JVM installed its own.
pub fn install() -> Result<(), InstallError> {
    note_pid();
    if !SAFE.handler.load(Ordering::Acquire) {
        SAFE.installed.get_or_init(install_once).clone()?;
    }
    own_loader()
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn own_loader() -> Result<(), InstallError> {
    prove_and_use(jscope_safe_load)
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn own_loader() -> Result<(), InstallError> {
    Err(InstallError::Unsupported)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn install_once() -> Result<(), InstallError> {
    let mut previous = [zeroed_action(), zeroed_action()];
    for (i, signo) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
        // SAFETY: reading the current action into a valid struct.
        if unsafe { libc::sigaction(signo, std::ptr::null(), &mut previous[i]) } != 0 {
            return Err(InstallError::Sigaction(
                std::io::Error::last_os_error().to_string(),
            ));
        }
    }
    // Published before the handler can run.
    let _ = SAFE.previous.set(previous);
    for (i, signo) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
        let mut action = previous[i];
        action.sa_sigaction = on_fault as *const () as usize;
        // The JVM's flags and mask are kept, so the faults it handles are
        // delivered as it asked; ours needs the siginfo and context.
        action.sa_flags |= libc::SA_SIGINFO;
        action.sa_flags &= !libc::SA_RESETHAND;
        // SAFETY: a valid action for a signal this process may handle.
        if unsafe { libc::sigaction(signo, &action, std::ptr::null_mut()) } != 0 {
            return Err(InstallError::Sigaction(
                std::io::Error::last_os_error().to_string(),
            ));
        }
    }
    SAFE.handler.store(true, Ordering::Release);
    Ok(())
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn install_once() -> Result<(), InstallError> {
    Err(InstallError::Unsupported)
}

fn zeroed_action() -> libc::sigaction {
    // SAFETY: a zeroed sigaction is a valid value (SIG_DFL, empty mask).
    unsafe { std::mem::zeroed() }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" fn on_fault(signo: c_int, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: the kernel's context for this signal, on this thread.
    if let Some(uc) = unsafe { ucontext.cast::<libc::ucontext_t>().as_mut() } {
        let rip = &mut uc.uc_mcontext.gregs[libc::REG_RIP as usize];
        // SAFETY: addresses of this module's own labels.
        let (insn, resume) = unsafe {
            (
                &jscope_safe_load_insn as *const u8 as i64,
                &jscope_safe_load_resume as *const u8 as i64,
            )
        };
        if *rip == insn {
            // rax still holds the failure value.
            *rip = resume;
            return;
        }
    }
    chain(signo, info, ucontext);
}

/// Hands a fault that is not ours to the handler installed before.
fn chain(signo: c_int, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    let Some(previous) = SAFE.previous.get() else {
        return;
    };
    let action = &previous[usize::from(signo == libc::SIGBUS)];
    match action.sa_sigaction {
        libc::SIG_IGN => {}
        libc::SIG_DFL => {
            // The default action: restore it, and the faulting instruction
            // runs again and takes it (a core dump, as without us).
            // SAFETY: resetting to the default action is always valid.
            unsafe { libc::signal(signo, libc::SIG_DFL) };
        }
        handler if action.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous handler asked for the three-argument form.
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(handler) };
            f(signo, info, ucontext);
        }
        handler => {
            // SAFETY: a one-argument handler, as installed.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
            f(signo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_memory_is_refused_not_faulted() {
        install().expect("the fault handler installs");
        assert!(fast());
        assert_eq!(load(0), None);
        assert_eq!(load(8), None);
        assert_eq!(load(usize::MAX - 7), None);
        let words = [7usize, FAIL, 9];
        let at = words.as_ptr() as usize;
        assert_eq!(load(at), Some(7));
        assert_eq!(load(at + 8), Some(FAIL), "the failure value, read for real");
        let mut out = [0usize; 3];
        assert!(load_words(at, &mut out));
        assert_eq!(out, words);
        let small: [u32; 2] = [0x1234_5678, 0x9abc_def0];
        let at = small.as_ptr() as usize;
        assert_eq!(load_u32(at + 4), Some(0x9abc_def0));
        assert_eq!(load_u16(at + 2), Some(0x1234));
        assert_eq!(load_u8(at + 1), Some(0x56));
        assert_eq!(load_u32(at + 2), Some(0xdef0_1234), "across two words");
        assert_eq!(load_u16(at + 3), Some(0xf012));
    }

    #[test]
    fn a_guard_page_is_refused() {
        install().expect("the fault handler installs");
        // SAFETY: a fresh anonymous mapping, made inaccessible, then unmapped.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let base = p as usize;
            *(base as *mut usize) = 42;
            libc::mprotect((base + 4096) as *mut c_void, 4096, libc::PROT_NONE);
            assert_eq!(load(base), Some(42));
            assert_eq!(load(base + 4096), None);
            assert_eq!(load(base + 4092), None, "a word across into the guard");
            libc::munmap(p, 8192);
            assert_eq!(load(base), None);
        }
    }
}
