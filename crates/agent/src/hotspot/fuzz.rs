//! Test-only (feature `fault-injection`): the walker driven from garbage, and
//! timed on a real stack. Reached through two JNI functions of the agent
//! library (`lib.rs`), which a test's Java class binds by loading the agent
//! library again with `System.load`.
//!
//! Garbage walks start from registers made up of random words, words near
//! the stack, and addresses in the code cache and in libraries, with the
//! real thread or a made-up one, and with every walker option: none may
//! fault, hang or panic, whatever they read.

use super::walk::{walk, Context, End, Options};
use super::HotSpot;
use crate::frames::CallFrame;

/// A small, fast generator (xorshift64*): the walks need variety, not quality.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What a run of garbage walks did.
#[derive(Debug, Default, Clone, Copy)]
pub struct FuzzTally {
    pub walks: u64,
    pub frames: u64,
    pub java_frames: u64,
    pub broken: u64,
}

/// `n` walks from garbage registers; `thread` is the calling JavaThread.
pub fn garbage_walks(hs: &HotSpot, thread: usize, n: u64, seed: u64) -> FuzzTally {
    let mut rng = Rng(seed | 1);
    let here = {
        let local = 0u64;
        &local as *const u64 as usize
    };
    let ranges = crate::native::walk::code_ranges();
    let code = hs.code.bounds();
    let mut frames = [CallFrame {
        lineno: 0,
        method: std::ptr::null_mut(),
    }; 128];
    let mut tally = FuzzTally::default();
    for _ in 0..n {
        let word = |rng: &mut Rng| -> usize {
            match rng.below(6) {
                0 => rng.next() as usize,
                1 => here.wrapping_add((rng.below(1 << 17) as usize).wrapping_sub(1 << 16)) & !7,
                2 => code.0 + rng.below((code.1 - code.0) as u64) as usize,
                3 => here.wrapping_add(rng.below(1 << 12) as usize * 8),
                4 => (rng.below(1 << 16) as usize) << 3,
                _ => code.0 + (rng.below(1 << 12) as usize),
            }
        };
        let ctx = Context {
            pc: word(&mut rng),
            sp: word(&mut rng),
            fp: word(&mut rng),
            rbx: word(&mut rng),
            r13: word(&mut rng),
            rsi: word(&mut rng),
        };
        let target = match rng.below(4) {
            0 => word(&mut rng),
            _ => thread,
        };
        let options = Options {
            native: ranges.filter(|_| rng.below(2) == 0),
            native_frames: rng.below(2) == 0,
            interleave: rng.below(2) == 0,
            virtual_thread: rng.below(4) == 0,
            own_thread: target == thread,
        };
        let depth = 1 + rng.below(frames.len() as u64) as usize;
        let out = walk(hs, target, &ctx, options, &mut frames[..depth]);
        tally.walks += 1;
        tally.frames += out.frames as u64;
        tally.java_frames += out.java_frames as u64;
        tally.broken += u64::from(matches!(out.end, End::Broke(_)));
    }
    tally
}

/// Nanoseconds per walk of the calling thread's own stack, from this
/// function's context, over `n` walks; and the frames of one walk.
pub fn time_own_walk(hs: &HotSpot, thread: usize, n: u64) -> (u64, usize, usize) {
    // SAFETY: a zeroed ucontext_t is a valid buffer for getcontext.
    let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
    // SAFETY: getcontext fills the buffer passed.
    if unsafe { libc::getcontext(&mut uc) } != 0 {
        return (0, 0, 0);
    }
    // SAFETY: a context of this very thread, whose frames stay live below.
    let Some(ctx) = (unsafe { Context::from_ucontext((&mut uc as *mut libc::ucontext_t).cast()) })
    else {
        return (0, 0, 0);
    };
    let options = Options {
        native: crate::native::walk::code_ranges(),
        native_frames: true,
        interleave: false,
        virtual_thread: false,
        own_thread: true,
    };
    let mut frames = [CallFrame {
        lineno: 0,
        method: std::ptr::null_mut(),
    }; 256];
    let start = std::time::Instant::now();
    let mut last = None;
    for _ in 0..n.max(1) {
        last = Some(walk(hs, thread, &ctx, options, &mut frames));
    }
    let ns = start.elapsed().as_nanos() as u64 / n.max(1);
    let out = last.expect("at least one walk");
    std::hint::black_box(&frames);
    (ns, out.frames, out.java_frames)
}
