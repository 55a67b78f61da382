//! The functions the loaded objects' import slots lead to while a recording
//! hooks them: the allocator's (`malloc`, `calloc`, `realloc`, `free`,
//! `posix_memalign`, `aligned_alloc`), the pthread locks' (`pthread_mutex_lock`,
//! `pthread_rwlock_rdlock`, `pthread_rwlock_wrlock`) and `dlopen` (to hook
//! the objects loaded later).
//!
//! Each hook calls the real function through the agent's own import of it,
//! which the patcher never diverts, so it reaches what every other object's
//! slot led to (glibc's, or a preloaded allocator's). Each runs its whole body
//! under `catch_unwind` and calls the real function exactly once whatever
//! happens; a caught panic is counted and stops the recording's hooks
//! ([`super::hook_panicked`]), the writer reports it.
//!
//! The fast path (a call that is not sampled) reads one published pointer and
//! the thread's countdown, or for `free` one cache line of the block table:
//! no allocation, no lock, no system call. The sampled path is built as a
//! signal handler is (atomics, the pre-allocated rings, fault-free reads), as
//! a lock hook may be reached from inside an allocator (jemalloc takes
//! pthread mutexes).

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use jscope_format::{
    NATIVE_ALIGNED_ALLOC, NATIVE_CALLOC, NATIVE_MALLOC, NATIVE_MUTEX, NATIVE_POSIX_MEMALIGN,
    NATIVE_REALLOC, NATIVE_RWLOCK_READ, NATIVE_RWLOCK_WRITE,
};

use super::got::Import;
use super::per_thread::{Busy, Countdown};
use super::{locks, memory};

/// Runs `body`, which calls the real function once and puts its result in
/// its argument; if it panics before that, the real function runs here.
#[inline(always)]
fn guarded<R: Copy>(
    name: &'static str,
    real: impl Fn() -> R,
    body: impl FnOnce(&mut Option<R>),
) -> R {
    let mut out = None;
    if catch_unwind(AssertUnwindSafe(|| body(&mut out))).is_err() {
        super::hook_panicked(name);
    }
    match out {
        Some(r) => r,
        None => real(),
    }
}

/// Calls a real function with the thread busy, so that hooked calls it makes
/// pass straight through: an allocator whose calloc calls malloc through a
/// slot counts the bytes once, for the outer call.
#[inline(always)]
fn nested<R>(real: impl Fn() -> R) -> R {
    let _busy = Busy::enter();
    real()
}

/// After an allocation of `size` bytes returned `p`.
#[inline(always)]
fn allocated(p: *mut c_void, size: usize, call: u64) {
    if p.is_null() {
        return;
    }
    let Some(s) = memory() else {
        return;
    };
    if let Some(weight) = Countdown::Bytes.take(size as u64, s.mem_interval, s.recording) {
        s.sample_alloc(p as usize, size as u64, weight, call);
    }
}

/// Before block `p` is freed.
#[inline(always)]
fn freeing(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    if let Some(s) = memory() {
        if s.table.may_hold(p as usize) {
            s.note_free(p as usize);
        }
    }
}

pub unsafe extern "C" fn malloc_hook(size: usize) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::malloc(size) };
    guarded("malloc", real, |out| {
        let p = *out.insert(real());
        allocated(p, size, NATIVE_MALLOC);
    })
}

pub unsafe extern "C" fn calloc_hook(n: usize, size: usize) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::calloc(n, size) };
    guarded("calloc", real, |out| {
        // An allocator whose calloc calls malloc through a slot counts once.
        let p = *out.insert(nested(real));
        allocated(p, n.saturating_mul(size), NATIVE_CALLOC);
    })
}

pub unsafe extern "C" fn realloc_hook(old: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::realloc(old, size) };
    guarded("realloc", real, |out| {
        // The old block leaves the table before the allocator may hand its
        // address to another thread; a failed realloc gives it back.
        let held = match (old.is_null(), memory()) {
            (false, Some(s)) if s.table.may_hold(old as usize) => s.take_block(old as usize),
            _ => None,
        };
        let p = *out.insert(nested(real));
        if let Some(held) = held {
            match p.is_null() && size != 0 {
                true => held.keep(),
                false => held.freed(),
            }
        }
        allocated(p, size, NATIVE_REALLOC);
    })
}

pub unsafe extern "C" fn free_hook(p: *mut c_void) {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::free(p) };
    guarded("free", real, |out| {
        freeing(p);
        real();
        *out = Some(());
    })
}

pub unsafe extern "C" fn posix_memalign_hook(
    memptr: *mut *mut c_void,
    align: usize,
    size: usize,
) -> c_int {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::posix_memalign(memptr, align, size) };
    guarded("posix_memalign", real, |out| {
        if *out.insert(nested(real)) == 0 {
            // SAFETY: set by the successful call.
            allocated(unsafe { *memptr }, size, NATIVE_POSIX_MEMALIGN);
        }
    })
}

pub unsafe extern "C" fn aligned_alloc_hook(align: usize, size: usize) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::aligned_alloc(align, size) };
    guarded("aligned_alloc", real, |out| {
        let p = *out.insert(nested(real));
        allocated(p, size, NATIVE_ALIGNED_ALLOC);
    })
}

/// A lock taken at once returns at once; one that was taken by another
/// thread is waited for, timed, and sampled by the time waited.
#[inline(always)]
fn timed_lock(
    addr: usize,
    kind: u64,
    try_lock: impl Fn() -> c_int,
    lock: impl Fn() -> c_int,
    out: &mut Option<c_int>,
) {
    let Some(s) = locks() else {
        *out = Some(lock());
        return;
    };
    let first = try_lock();
    if first != libc::EBUSY {
        // Taken, or an error the blocking call would give as well (a robust
        // mutex's EOWNERDEAD is taken: calling again would be wrong).
        *out = Some(first);
        return;
    }
    let start = crate::clock::monotonic_ns();
    let r = *out.insert(lock());
    if r == 0 {
        let waited = crate::clock::monotonic_ns().saturating_sub(start);
        if let Some(weight) = Countdown::Wait.take(waited, s.lock_interval, s.recording) {
            s.sample_lock(addr, start, waited, weight, kind);
        }
    }
}

pub unsafe extern "C" fn mutex_lock_hook(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::pthread_mutex_lock(m) };
    guarded("pthread_mutex_lock", real, |out| {
        // SAFETY: the caller's arguments, passed on as given.
        let try_lock = || unsafe { libc::pthread_mutex_trylock(m) };
        timed_lock(m as usize, NATIVE_MUTEX, try_lock, real, out)
    })
}

pub unsafe extern "C" fn rwlock_rdlock_hook(l: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::pthread_rwlock_rdlock(l) };
    guarded("pthread_rwlock_rdlock", real, |out| {
        // SAFETY: the caller's arguments, passed on as given.
        let try_lock = || unsafe { libc::pthread_rwlock_tryrdlock(l) };
        timed_lock(l as usize, NATIVE_RWLOCK_READ, try_lock, real, out)
    })
}

pub unsafe extern "C" fn rwlock_wrlock_hook(l: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::pthread_rwlock_wrlock(l) };
    guarded("pthread_rwlock_wrlock", real, |out| {
        // SAFETY: the caller's arguments, passed on as given.
        let try_lock = || unsafe { libc::pthread_rwlock_trywrlock(l) };
        timed_lock(l as usize, NATIVE_RWLOCK_WRITE, try_lock, real, out)
    })
}

/// An object loaded now gets its slots diverted before the caller uses it
/// (`System.loadLibrary` runs `JNI_OnLoad` and the library's natives after).
/// The thread is busy during the real call: a `dlopen` from a constructor of
/// the object being loaded (whose relocations the loader has not finished, and
/// whose RELRO pages it has yet to write) patches nothing, the outer one does.
pub unsafe extern "C" fn dlopen_hook(name: *const c_char, flags: c_int) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as given.
    let real = || unsafe { libc::dlopen(name, flags) };
    guarded("dlopen", real, |out| {
        if !out.insert(nested(real)).is_null() {
            super::loaded_more();
        }
    })
}

/// The allocator's functions and their hooks.
pub fn memory_imports() -> [Import; 6] {
    [
        import(c"malloc", malloc_hook as *const () as usize),
        import(c"calloc", calloc_hook as *const () as usize),
        import(c"realloc", realloc_hook as *const () as usize),
        import(c"free", free_hook as *const () as usize),
        import(c"posix_memalign", posix_memalign_hook as *const () as usize),
        import(c"aligned_alloc", aligned_alloc_hook as *const () as usize),
    ]
}

/// The lock functions and their hooks.
pub fn lock_imports() -> [Import; 3] {
    [
        import(c"pthread_mutex_lock", mutex_lock_hook as *const () as usize),
        import(
            c"pthread_rwlock_rdlock",
            rwlock_rdlock_hook as *const () as usize,
        ),
        import(
            c"pthread_rwlock_wrlock",
            rwlock_wrlock_hook as *const () as usize,
        ),
    ]
}

pub fn dlopen_import() -> Import {
    import(c"dlopen", dlopen_hook as *const () as usize)
}

fn import(name: &'static std::ffi::CStr, hook: usize) -> Import {
    Import { name, hook }
}
