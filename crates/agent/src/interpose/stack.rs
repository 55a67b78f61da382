//! The mixed stack of a sampled call, walked from inside the hook: native
//! frames by the loaded objects' unwind rows up to the Java frames, then the
//! Java frames by the VM structure walker (`crate::hotspot`) from the
//! thread's JavaThread, as the cpu engine's signal handler walks them. The
//! registers are the hook's own, read where the walk starts; the agent's own
//! frames on top (the hook, this walk) are left out. A thread the JVM does
//! not know (a native thread, a GC worker) gets its native frames alone.
//! Without the VM structure walker (a JVM whose structures it cannot read)
//! the Java frames come from AsyncGetCallTrace, given a context read with
//! `getcontext`.
//!
//! Everything here is async-signal-safe: fault-free reads, no allocation, no
//! lock.

use crate::frames::{CallFrame, NATIVE_PC};
use crate::hotspot::walk::{self as vm_walk, Context};
use crate::hotspot::HotSpot;
use crate::jvm::asgct::Asgct;
use crate::native::walk::{self as native_walk, Regs};
use crate::sys;

/// Native frames kept at most when there is no VM structure walk.
const MAX_NATIVE: usize = 128;

/// What walks a hooked call's stack.
pub(crate) struct StackWalker {
    /// The hooked thread's JNIEnv, found without GetEnv where it can be
    /// (see `jvm::current`).
    pub env: crate::jvm::current::EnvOf,
    pub hotspot: Option<std::sync::Arc<HotSpot>>,
    pub asgct: Option<Asgct>,
    /// Native frames between Java frames too (`cstack=vmx`).
    pub interleave: bool,
    /// The agent's own code, `[lo, hi)`.
    pub own: (usize, usize),
}

/// Who was walked and how.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Walked {
    pub frames: usize,
    /// The frames are the VM structure walker's (typed, in stack order).
    pub vm_walk: bool,
    pub tid: u32,
    /// The thread's JNIEnv; 0 for a thread the JVM does not know.
    pub env: usize,
    /// The virtual thread mounted on it (JDK 21+), 0 for none.
    pub vthread: i64,
}

/// The calling code's registers at this point.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn here() -> Regs {
    let (pc, sp, fp): (usize, usize, usize);
    // SAFETY: reads three registers; touches no memory.
    unsafe {
        std::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {fp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            fp = out(reg) fp,
            options(nomem, nostack, preserves_flags),
        );
    }
    Regs { pc, sp, fp }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn here() -> Regs {
    Regs {
        pc: 0,
        sp: 0,
        fp: 0,
    }
}

impl StackWalker {
    /// Walks the calling thread's stack into `frames`, top first.
    #[inline(never)]
    pub fn walk(&self, frames: &mut [CallFrame]) -> Walked {
        let tid = super::per_thread::tid();
        let env = self.env.get();
        let vthread = crate::trace::vthreads::mounted_on(tid);
        let mut walked = Walked {
            tid,
            env,
            vthread,
            ..Walked::default()
        };
        let regs = here();
        match (&self.hotspot, env) {
            (Some(hs), env) if env != 0 => {
                let ctx = Context {
                    pc: regs.pc,
                    sp: regs.sp,
                    fp: regs.fp,
                    ..Context::default()
                };
                let options = vm_walk::Options {
                    native: native_walk::code_ranges(),
                    native_frames: true,
                    interleave: self.interleave,
                    virtual_thread: vthread != 0,
                    // The hook runs on the thread it walks.
                    own_thread: true,
                };
                let thread = env.wrapping_sub(hs.env_offset);
                let out = vm_walk::walk(hs, thread, &ctx, options, frames);
                walked.frames = self.drop_own(frames, out.frames);
                walked.vm_walk = true;
            }
            _ => walked.frames = self.native_then_asgct(regs, env, frames),
        }
        walked
    }

    /// Native frames from `regs`, then (for a Java thread) AsyncGetCallTrace's
    /// Java frames.
    fn native_then_asgct(&self, regs: Regs, env: usize, frames: &mut [CallFrame]) -> usize {
        let mut pcs = [0usize; MAX_NATIVE];
        let room = frames.len().min(MAX_NATIVE);
        let k = native_walk::walk_regs(regs, &mut pcs[..room]);
        let own = pcs[..k].iter().take_while(|&&pc| self.is_own(pc)).count();
        let mut n = 0;
        for &pc in &pcs[own..k] {
            frames[n] = CallFrame {
                lineno: NATIVE_PC,
                method: pc as *mut std::ffi::c_void,
            };
            n += 1;
        }
        if let (Some(asgct), true) = (&self.asgct, env != 0 && n < frames.len()) {
            n += asgct_frames(asgct, env, &mut frames[n..]);
        }
        n
    }

    fn is_own(&self, pc: usize) -> bool {
        self.own.0 <= pc && pc < self.own.1
    }

    /// Leaves out the agent's frames on top of the `n` walked; how many remain.
    fn drop_own(&self, frames: &mut [CallFrame], n: usize) -> usize {
        let own = frames[..n]
            .iter()
            .take_while(|f| f.lineno == NATIVE_PC && self.is_own(f.method as usize))
            .count();
        frames.copy_within(own..n, 0);
        n - own
    }
}

/// AsyncGetCallTrace's Java frames of the calling thread, from a context of
/// its own: the walk starts at the thread's last Java frame, as the thread
/// is in native or VM code.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn asgct_frames(asgct: &Asgct, env: usize, frames: &mut [CallFrame]) -> usize {
    // SAFETY: a zeroed ucontext_t is a valid buffer for getcontext.
    let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
    // SAFETY: getcontext fills the buffer passed.
    if unsafe { libc::getcontext(&mut uc) } != 0 {
        return 0;
    }
    let depth = frames.len().min(i32::MAX as usize) as i32;
    // SAFETY: env is this thread's, frames has room for depth, uc is this
    // thread's context.
    let n = unsafe {
        asgct.walk(
            env as *mut sys::JNIEnv,
            frames.as_mut_ptr(),
            depth,
            (&mut uc as *mut libc::ucontext_t).cast(),
        )
    };
    n.max(0) as usize
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn asgct_frames(_asgct: &Asgct, _env: usize, _frames: &mut [CallFrame]) -> usize {
    0
}
