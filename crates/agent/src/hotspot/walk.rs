//! The walk, in the signal handler: from the interrupted registers down the
//! thread's stack, one frame at a time, writing frames top first.
//!
//! - Native code (outside the code cache): unwound with the native walker's
//!   unwind rows ([`CodeRanges::step`]) down to Java code, its frames written
//!   when native frames are asked for; where that is not possible, the
//!   thread's last Java frame (its JavaFrameAnchor) goes on from there.
//! - Compiled methods: their inlined methods from the debug information at
//!   the program counter, then the caller by the frame size; the top frame's
//!   prologue and epilogue are recognised by their instructions.
//! - Interpreted frames: Method* and bytecode pointer in the frame's slots.
//! - Stubs (arraycopy, CRC32, math intrinsics), vtable and itable stubs
//!   (with the receiver's class above them), adapters and runtime stubs:
//!   named frames, stepped over to their Java caller.
//! - Entry frames (Java called from native code): on through the
//!   JavaCallWrapper's saved last Java frame, or, interleaving native
//!   frames, down the native code between.
//!
//! Everything is bounded and every read fault-free: garbage registers give a
//! short walk that ends with a [`Break`] marker, never a fault.

use super::cache::{CompiledFrames, CACHED_FRAMES};
use super::code::{self, Blob, BlobKind};
use super::layout::{INTERP_BCP, INTERP_METHOD, INTERP_SENDER_SP};
use super::mem::Mem;
use super::scopes::Nmethod;
use super::HotSpot;
use crate::frames::{self, Break, CallFrame, JavaType};
use crate::native::walk::{CodeRanges, Regs};
use crate::safe::{load, load_u8};

/// Steps a walk takes at most beyond the frames it writes.
const EXTRA_STEPS: usize = 256;
/// Largest frame the walk believes (bytes between two stack pointers).
const MAX_FRAME: usize = 1 << 20;
/// Inlined scopes kept per compiled frame.
const MAX_INLINED: usize = 64;
/// JavaThreadState `_thread_in_Java`.
const THREAD_IN_JAVA: u32 = 8;

/// The interrupted context: the registers the walk starts from, and those a
/// frame not yet built leaves its Method* (rbx), sender sp (r13) or receiver
/// (rsi) in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    pub rbx: usize,
    pub r13: usize,
    pub rsi: usize,
}

impl Context {
    /// The registers of a signal handler's context.
    ///
    /// # Safety
    /// `ucontext` is a signal handler's context argument (or null).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    pub unsafe fn from_ucontext(ucontext: *mut std::ffi::c_void) -> Option<Context> {
        // SAFETY: the caller's promise.
        let uc = unsafe { ucontext.cast::<libc::ucontext_t>().as_ref()? };
        let g = &uc.uc_mcontext.gregs;
        let r = |i: libc::c_int| g[i as usize] as usize;
        Some(Context {
            pc: r(libc::REG_RIP),
            sp: r(libc::REG_RSP),
            fp: r(libc::REG_RBP),
            rbx: r(libc::REG_RBX),
            r13: r(libc::REG_R13),
            rsi: r(libc::REG_RSI),
        })
    }

    /// # Safety
    /// As on x86_64; no context is read elsewhere.
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    pub unsafe fn from_ucontext(_ucontext: *mut std::ffi::c_void) -> Option<Context> {
        None
    }

    fn regs(&self) -> Regs {
        Regs {
            pc: self.pc,
            sp: self.sp,
            fp: self.fp,
        }
    }
}

/// What the walk writes besides Java frames.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Native code's unwind table; None: native code is not unwound (only
    /// the thread's last Java frame leads through it).
    pub native: Option<&'a CodeRanges>,
    /// Write the frames of native code above the Java frames, and the frames
    /// of generated code (stubs, receiver classes) among them.
    pub native_frames: bool,
    /// Write native frames between Java frames too, in their place
    /// (`cstack=vmx`); else entry frames skip to the Java frames below.
    pub interleave: bool,
    /// A virtual thread is mounted: its frames end at its continuation entry.
    pub virtual_thread: bool,
    /// The thread walked is the calling thread (a signal handler's own): its
    /// stack bounds are real, and its live frames are read directly.
    pub own_thread: bool,
}

/// How a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// At the bottom of the stack (or of a mounted virtual thread's frames).
    Bottom,
    /// Out of room for frames.
    Full,
    /// Stopped early; a marker frame says why.
    Broke(Break),
}

/// The frames written and how the walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub frames: usize,
    pub java_frames: usize,
    pub end: End,
}

/// One step's result.
enum Step {
    Next(Regs),
    Bottom,
    Full,
    Stop(Break),
}

/// Frames written so far into a sample's slot.
struct Out<'a> {
    frames: &'a mut [CallFrame],
    n: usize,
}

impl Out<'_> {
    #[must_use]
    fn push(&mut self, lineno: i32, value: usize) -> bool {
        let Some(slot) = self.frames.get_mut(self.n) else {
            return false;
        };
        *slot = CallFrame {
            lineno,
            method: value as *mut std::ffi::c_void,
        };
        self.n += 1;
        true
    }
}

/// Walks the stack of JavaThread `thread` (the current thread) from `ctx`
/// into `frames`, top first. Async-signal-safe.
pub fn walk(
    hs: &HotSpot,
    thread: usize,
    ctx: &Context,
    options: Options<'_>,
    frames: &mut [CallFrame],
) -> Outcome {
    let l = &hs.layout;
    let base = load(thread.wrapping_add(l.thread_stack_base)).unwrap_or(0);
    let size = load(thread.wrapping_add(l.thread_stack_size)).unwrap_or(0);
    let mut w = Walker {
        hs,
        thread,
        ctx: *ctx,
        options,
        stack: (base.saturating_sub(size), base),
        out: Out { frames, n: 0 },
        java_frames: 0,
        fallback: Fallback::ThreadAnchor,
        top: true,
        blame: None,
        mem: match options.own_thread {
            true => Mem::on_own_stack(ctx.sp, base.saturating_sub(size), base),
            false => Mem::SAFE,
        },
    };
    let end = w.run();
    Outcome {
        frames: w.out.n,
        java_frames: w.java_frames,
        end,
    }
}

/// Where the walk goes on when native code cannot be unwound.
#[derive(Debug, Clone, Copy)]
enum Fallback {
    /// The thread's JavaFrameAnchor, not yet used.
    ThreadAnchor,
    /// An entry frame's saved last Java frame (interleaving).
    Saved(Regs),
    None,
}

struct Walker<'a> {
    hs: &'a HotSpot,
    thread: usize,
    ctx: Context,
    options: Options<'a>,
    /// The thread's stack, [low, high).
    stack: (usize, usize),
    out: Out<'a>,
    java_frames: usize,
    fallback: Fallback,
    /// The registers are the interrupted ones: the pc is any instruction,
    /// not a return address.
    top: bool,
    /// What to blame when the frame just stepped over led nowhere: native
    /// code below Java frames is reached only through an entry frame.
    blame: Option<Break>,
    /// Reads of the walked stack (direct when it is the current thread's).
    mem: Mem,
}

impl Walker<'_> {
    fn run(&mut self) -> End {
        let mut r = self.ctx.regs();
        if !self.on_stack(r.sp) {
            return self.stop(Break::StackRange);
        }
        let steps = self.out.frames.len() + EXTRA_STEPS;
        for _ in 0..steps {
            let step = if self.hs.code.contains(r.pc) {
                self.java_code(r)
            } else {
                self.native_code(r)
            };
            match step {
                Step::Next(next) => {
                    if !self.on_stack(next.sp) || next.sp < r.sp {
                        return self.stop(Break::StackRange);
                    }
                    r = next;
                }
                Step::Bottom => return self.bottom(),
                Step::Full => return End::Full,
                Step::Stop(why) => return self.stop(why),
            }
        }
        End::Full
    }

    fn on_stack(&self, sp: usize) -> bool {
        sp.is_multiple_of(8) && self.stack.0 <= sp && sp < self.stack.1
    }

    /// The walk reached the bottom; a Java thread running Java code that left
    /// no Java frame is a failed walk all the same.
    fn bottom(&mut self) -> End {
        if self.java_frames == 0 && self.thread_state() == Some(THREAD_IN_JAVA) {
            return self.stop(Break::NoJavaFrame);
        }
        End::Bottom
    }

    /// Ends the walk with a marker frame (in place of the last frame when
    /// there is no room left).
    fn stop(&mut self, why: Break) -> End {
        if self.out.n == self.out.frames.len() && self.out.n > 0 {
            self.out.n -= 1;
        }
        let _ = self.out.push(frames::BREAK, why as usize);
        End::Broke(why)
    }

    fn thread_state(&self) -> Option<u32> {
        self.mem
            .u32(self.thread.wrapping_add(self.hs.layout.thread_state))
    }

    /// Writes a frame of generated code (a stub, a receiver class) when such
    /// frames are asked for; false when there is no room.
    #[must_use]
    fn push_generated(&mut self, lineno: i32, value: usize) -> bool {
        !self.options.native_frames || self.out.push(lineno, value)
    }

    fn push_java(&mut self, kind: JavaType, method_id: usize, bci: i32) -> bool {
        self.java_frames += 1;
        self.out.push(frames::typed(kind, bci), method_id)
    }

    /// Native code: its frames down to Java code, or the fallback.
    fn native_code(&mut self, r: Regs) -> Step {
        if let Some(why) = self.blame.take().filter(|_| self.java_frames > 0) {
            // Below Java frames, native code is reached only through an entry frame.
            return Step::Stop(why);
        }
        if let Some(ranges) = self.options.native.filter(|n| n.contains(r.pc)) {
            let emit =
                self.options.native_frames && (self.java_frames == 0 || self.options.interleave);
            let mut cur = r;
            loop {
                if emit {
                    self.compile_task(cur.pc);
                    if !self.out.push(frames::NATIVE_PC, cur.pc) {
                        return Step::Full;
                    }
                }
                let Some(next) = ranges.step(cur) else { break };
                if next.sp <= cur.sp || !self.on_stack(next.sp) {
                    break;
                }
                self.top = false;
                // The step names the caller by its call instruction (pc - 1);
                // Java code wants the return address itself.
                if self.hs.code.contains(next.pc.wrapping_add(1)) {
                    return Step::Next(Regs {
                        pc: next.pc.wrapping_add(1),
                        ..next
                    });
                }
                if !ranges.contains(next.pc) {
                    break;
                }
                cur = next;
            }
        }
        self.use_fallback()
    }

    /// Goes on from the last Java frame recorded before native code, if any.
    fn use_fallback(&mut self) -> Step {
        match std::mem::replace(&mut self.fallback, Fallback::None) {
            Fallback::Saved(r) => {
                self.top = false;
                Step::Next(r)
            }
            Fallback::ThreadAnchor => match self
                .anchor(self.thread.wrapping_add(self.hs.layout.thread_anchor))
            {
                Some(r) => {
                    self.top = false;
                    Step::Next(r)
                }
                None if self.java_frames == 0 && self.thread_state() == Some(THREAD_IN_JAVA) => {
                    Step::Stop(Break::Native)
                }
                None => Step::Bottom,
            },
            Fallback::None => Step::Bottom,
        }
    }

    /// The last Java frame a JavaFrameAnchor at `anchor` holds.
    fn anchor(&self, anchor: usize) -> Option<Regs> {
        let l = &self.hs.layout;
        let sp = self.mem.word(anchor.wrapping_add(l.anchor_sp))?;
        if sp == 0 {
            return None;
        }
        let pc = match self.mem.word(anchor.wrapping_add(l.anchor_pc))? {
            0 => self.mem.word(sp.wrapping_sub(8))?,
            pc => pc,
        };
        let fp = match self.mem.word(anchor.wrapping_add(l.anchor_fp))? {
            0 => self.ctx.fp,
            fp => fp,
        };
        Some(Regs { pc, sp, fp })
    }

    /// In a compiler's `compile_method`: the method its task compiles, as a
    /// frame right above it.
    fn compile_task(&mut self, pc: usize) {
        let hs = self.hs;
        if !hs
            .compile_method
            .iter()
            .any(|&(lo, hi)| lo <= pc && pc < hi)
        {
            return;
        }
        let l = &hs.layout;
        let id = self
            .mem
            .word(self.thread.wrapping_add(l.compiler_env))
            .filter(|&env| env != 0)
            .and_then(|env| self.mem.word(env.wrapping_add(l.env_task)))
            .filter(|&task| task != 0)
            .and_then(|task| self.mem.word(task.wrapping_add(l.task_method)))
            .and_then(|method| hs.jmethod_id(method));
        if let Some(id) = id {
            let _ = self.out.push(frames::typed(JavaType::CompileTask, -1), id);
        }
    }

    /// Code in the code cache.
    fn java_code(&mut self, r: Regs) -> Step {
        // A caller's frame at a return address walked before: its frames come
        // from the cache without looking the blob up.
        if !self.top {
            if let Some(step) = self.remembered(r) {
                self.blame = Some(Break::Compiled);
                return step;
            }
        }
        let Some(blob) = self.hs.code.find(&self.hs.layout, r.pc) else {
            return match self.use_fallback() {
                Step::Bottom => Step::Stop(Break::UnknownNmethod),
                step => step,
            };
        };
        self.blame = Some(match blob.kind {
            BlobKind::Nmethod | BlobKind::NativeNmethod => Break::Compiled,
            BlobKind::Interpreter => Break::Interpreted,
            _ => Break::UnknownStub,
        });
        let step = match blob.kind {
            BlobKind::Nmethod | BlobKind::NativeNmethod => self.compiled(blob, r),
            BlobKind::Interpreter => self.interpreted(r),
            BlobKind::StubRoutines if r.pc == self.hs.call_stub_return => self.entry_frame(r),
            BlobKind::StubRoutines => self.stub_routine(r),
            // Below here a virtual thread's frames are still in the heap.
            BlobKind::ContinuationStubs => Step::Bottom,
            BlobKind::VtableChunks => self.jump_stub(r, true),
            BlobKind::Adapter => self.jump_stub(r, false),
            BlobKind::RuntimeStub => self.runtime_stub(blob, r),
        };
        self.top = false;
        step
    }

    /// A compiled Java method, or the compiled wrapper of a native one.
    fn compiled(&mut self, blob: Blob, r: Regs) -> Step {
        let hs = self.hs;
        let Some(nm) = Nmethod::read(&hs.layout, &blob) else {
            return Step::Stop(Break::Compiled);
        };
        let native = blob.kind == BlobKind::NativeNmethod;
        let own = hs.jmethod_id(nm.method).unwrap_or(0);
        if native && own != 0 && own == hs.enter_special && self.options.virtual_thread {
            return Step::Bottom;
        }
        let unwound = match self.top {
            true => self.unwind_top_compiled(blob, r),
            false => self.unwind_by_frame_size(blob, r),
        };
        let mut seen = CompiledFrames::default();
        let written = if native {
            self.push_java(JavaType::Native, own, -1)
        } else {
            self.push_scopes(&nm, own, r.pc, &mut seen)
        };
        if !written {
            return Step::Full;
        }
        if !self.top && !native && seen.count > 0 {
            self.remember(&blob, &nm, r.pc, seen);
        }
        match unwound {
            Some(next) => Step::Next(next),
            None => Step::Stop(Break::Compiled),
        }
    }

    /// A compiled frame whose return address a walk met before: its frames
    /// and caller from the cache, when the compiled method remembered there
    /// is still there (its blob holds the same Method* and compilation id:
    /// a blob freed and its space reused holds another id, or other bytes).
    fn remembered(&mut self, r: Regs) -> Option<Step> {
        let l = &self.hs.layout;
        let hit = self.hs.frames.get(r.pc)?;
        let mem = Mem::SAFE;
        let same = mem.word(hit.blob.wrapping_add(l.nm_method)) == Some(hit.method)
            && mem.u32(hit.blob.wrapping_add(l.nm_compile_id)) == Some(hit.compile_id);
        if !same {
            return None;
        }
        for &(id, lineno) in &hit.frames[..hit.count] {
            self.java_frames += 1;
            if !self.out.push(lineno, id) {
                return Some(Step::Full);
            }
        }
        let sender_sp = r.sp.wrapping_add(hit.frame_words as usize * 8);
        let mem = self.mem;
        let next = (|| {
            Some(Regs {
                pc: mem.word(sender_sp.wrapping_sub(8))?,
                sp: sender_sp,
                fp: mem.word(sender_sp.wrapping_sub(16))?,
            })
        })();
        Some(match next {
            Some(next) => Step::Next(next),
            None => Step::Stop(Break::Compiled),
        })
    }

    /// Remembers the frames of a compiled frame at return address `pc`.
    fn remember(&self, blob: &Blob, nm: &Nmethod, pc: usize, mut seen: CompiledFrames) {
        let l = &self.hs.layout;
        let (Some(words), Some(id)) = (
            code::frame_size(l, blob),
            blob.mem.u32(blob.addr.wrapping_add(l.nm_compile_id)),
        ) else {
            return;
        };
        if words == 0 || words * 8 > MAX_FRAME {
            return;
        }
        seen.blob = blob.addr;
        seen.method = nm.method;
        seen.compile_id = id;
        seen.frame_words = words as u32;
        self.hs.frames.put(pc, &seen);
    }

    /// The inlined methods at `pc` of compiled method `nm`, innermost first,
    /// then `nm`'s own (jmethodID `own`).
    /// `seen` gets the frames written, when they all fit in it and all
    /// methods were named (count 0 otherwise).
    fn push_scopes(
        &mut self,
        nm: &Nmethod,
        own: usize,
        pc: usize,
        seen: &mut CompiledFrames,
    ) -> bool {
        let hs = self.hs;
        let tier = match nm.comp_level {
            1..=3 => JavaType::C1,
            _ => JavaType::C2,
        };
        let mut scopes = [(0usize, 0i32); MAX_INLINED];
        let mut n = 0;
        if let Some(offset) = nm.decode_offset(pc, !self.top).filter(|&o| o != 0) {
            nm.scopes(offset, hs.excluded_byte, |method, bci| {
                scopes[n] = (method, bci);
                n += 1;
                n < MAX_INLINED
            });
        }
        if n == 0 {
            return self.push_java(tier, own, 0);
        }
        let mut complete = n <= CACHED_FRAMES;
        for (i, &(method, bci)) in scopes[..n].iter().enumerate() {
            let outermost = i == n - 1;
            let kind = if outermost { tier } else { JavaType::Inlined };
            let id = match (outermost, hs.jmethod_id(method)) {
                (_, Some(id)) => id,
                (true, None) => own,
                (false, None) => 0,
            };
            complete &= id != 0;
            if complete {
                seen.frames[i] = (id, frames::typed(kind, bci.max(-1)));
            }
            if !self.push_java(kind, id, bci.max(-1)) {
                return false;
            }
        }
        seen.count = if complete { n } else { 0 };
        true
    }

    /// The caller of a frame of `blob` at `r`, by its frame size.
    fn unwind_by_frame_size(&self, blob: Blob, r: Regs) -> Option<Regs> {
        let words = code::frame_size(&self.hs.layout, &blob)?;
        if words == 0 {
            // No frame of its own (a method handle linker): a jump.
            return self.top.then(|| self.return_at(r.sp, r.fp)).flatten();
        }
        let sender_sp = r.sp.checked_add(words * 8)?;
        if sender_sp - r.sp > MAX_FRAME {
            return None;
        }
        Some(Regs {
            pc: self.mem.word(sender_sp.wrapping_sub(8))?,
            sp: sender_sp,
            fp: self.mem.word(sender_sp.wrapping_sub(16))?,
        })
    }

    /// The caller whose return address is at `at`, with the caller's sp right
    /// above it and `fp` as its frame pointer.
    fn return_at(&self, at: usize, fp: usize) -> Option<Regs> {
        Some(Regs {
            pc: self.mem.word(at)?,
            sp: at.wrapping_add(8),
            fp,
        })
    }

    /// The caller of an interrupted compiled frame, which may be in its
    /// prologue (frame not built) or its epilogue (frame already popped).
    fn unwind_top_compiled(&self, blob: Blob, r: Regs) -> Option<Regs> {
        let l = &self.hs.layout;
        match code::frame_complete(l, &blob) {
            Some(complete) if r.pc < complete => self.prologue(blob, r),
            _ => self.epilogue(r).or_else(|| self.pushed_words_over(blob, r)),
        }
    }

    /// The caller of a complete compiled frame interrupted where its code
    /// had pushed a word or a few on top (the slow subtype check saves rax
    /// around `repne scasq`; string intrinsics copy a short string below the
    /// frame): the frame size from sp, then from up to MAX_PUSHED_WORDS words
    /// above, whichever returns to a call site or a stub.
    fn pushed_words_over(&self, blob: Blob, r: Regs) -> Option<Regs> {
        const MAX_PUSHED_WORDS: usize = 8;
        let first = self.unwind_by_frame_size(blob, r)?;
        if self.is_return_address(first.pc) {
            return Some(first);
        }
        (1..=MAX_PUSHED_WORDS)
            .filter_map(|words| {
                let sp = r.sp.wrapping_add(8 * words);
                self.unwind_by_frame_size(blob, Regs { sp, ..r })
            })
            .find(|next| self.is_return_address(next.pc))
            .or(Some(first))
    }

    /// Whether `pc` is where a call from compiled Java code returns to: a
    /// call site of a compiled method (its own PcDesc), the interpreter, the
    /// call stub or another stub (never native code: compiled code is called
    /// from there only through the call stub).
    fn is_return_address(&self, pc: usize) -> bool {
        if !self.hs.code.contains(pc) {
            return false;
        }
        match self.hs.code.find(&self.hs.layout, pc) {
            Some(b) if b.kind == BlobKind::Nmethod => {
                Nmethod::read(&self.hs.layout, &b).is_some_and(|nm| nm.is_call_site(pc))
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Before the frame is complete, by the instructions HotSpot builds
    /// frames with, from the verified entry: an optional stack bang
    /// (`mov [rsp-N], eax`), then either `push rbp` (optionally `mov rbp,
    /// rsp`) and `sub rsp, N`, or `sub rsp, N` and rbp saved into the frame.
    /// Until the first of them ran the return address is on top; between
    /// `push rbp` and `sub rsp` it is right above the saved rbp; after `sub
    /// rsp` the frame has its full size.
    fn prologue(&self, blob: Blob, r: Regs) -> Option<Regs> {
        let entry = code::verified_entry(&self.hs.layout, &blob)?;
        if r.pc <= entry {
            return self.return_at(r.sp, r.fp);
        }
        let b = |a: usize| self.mem.u8(a);
        let is_sub_rsp = |a: usize| {
            b(a) == Some(0x48)
                && matches!(b(a.wrapping_add(1)), Some(0x83 | 0x81))
                && b(a.wrapping_add(2)) == Some(0xEC)
        };
        let mut at = entry;
        if (b(at)?, b(at.wrapping_add(1))?, b(at.wrapping_add(2))?) == (0x89, 0x84, 0x24) {
            at = at.wrapping_add(7);
        }
        if r.pc <= at {
            return self.return_at(r.sp, r.fp);
        }
        if b(at)? == 0x55 {
            at = at.wrapping_add(1);
            if is_mov_rbp_rsp(at) {
                at = at.wrapping_add(3);
            }
            if r.pc <= at {
                return self.above_saved_fp(r);
            }
            return self.unwind_by_frame_size(blob, r);
        }
        if is_sub_rsp(at) {
            return self.unwind_by_frame_size(blob, r);
        }
        None
    }

    /// The caller when the saved rbp is on top and the return address above it.
    fn above_saved_fp(&self, r: Regs) -> Option<Regs> {
        self.return_at(r.sp.wrapping_add(8), self.mem.word(r.sp)?)
    }

    /// After the frame was popped (`pop rbp`, the return poll, `ret`): the
    /// caller's registers; None when pc is not in an epilogue.
    fn epilogue(&self, r: Regs) -> Option<Regs> {
        let pc = r.pc;
        let byte = |a: usize| self.mem.u8(a);
        // pop rbp, then ret or the return poll: rbp is still on top.
        if byte(pc)? == 0x5D
            && (byte(pc.wrapping_add(1)) == Some(0xC3)
                || poll_then_ret(pc.wrapping_add(1)).is_some())
        {
            return self.above_saved_fp(r);
        }
        let popped = byte(pc) == Some(0xC3)
            || (poll_then_ret(pc).is_some() && byte(pc.wrapping_sub(1)) == Some(0x5D))
            || inside_poll_after_pop(pc);
        if popped {
            return self.return_at(r.sp, r.fp);
        }
        None
    }

    /// An interpreted frame; at the top, one whose frame is not built yet.
    fn interpreted(&mut self, r: Regs) -> Step {
        let hs = self.hs;
        let l = &hs.layout;
        let mem = self.mem;
        let slot = move |words: isize| mem.word(r.fp.wrapping_add_signed(words * 8));
        let built =
            r.fp.is_multiple_of(8) && r.fp > r.sp && r.fp - r.sp < MAX_FRAME && self.on_stack(r.fp);
        let method = if built { slot(INTERP_METHOD) } else { None };
        if let Some((method, id)) = method.and_then(|m| Some((m, hs.jmethod_id(m)?))) {
            if self
                .mem
                .word(self.thread.wrapping_add(l.thread_vframe_array_head))
                .is_some_and(|v| v != 0)
            {
                return Step::Stop(Break::Deopt);
            }
            let (kind, bci) = match hs.is_native(method) {
                true => (JavaType::Native, -1),
                false => match slot(INTERP_BCP).and_then(|bcp| hs.bci(method, bcp)) {
                    Some(bci) => (JavaType::Interpreted, bci),
                    None if self.top => (JavaType::Interpreted, 0),
                    None => return Step::Stop(Break::Interpreted),
                },
            };
            if !self.push_java(kind, id, bci) {
                return Step::Full;
            }
            let (Some(sp), Some(pc), Some(fp)) = (slot(INTERP_SENDER_SP), slot(1), slot(0)) else {
                return Step::Stop(Break::Interpreted);
            };
            return Step::Next(Regs { pc, sp, fp });
        }
        if self.top {
            // Method entry: rbx holds the Method*, r13 the sender's sp, and
            // the return address is still on top.
            if let Some(id) = hs.jmethod_id(self.ctx.rbx) {
                if !self.push_java(JavaType::Interpreted, id, 0) {
                    return Step::Full;
                }
                let pc = self.mem.word(r.sp).unwrap_or(0);
                if self.returns_to_java(pc) && self.ctx.r13 > r.sp {
                    return Step::Next(Regs {
                        pc,
                        sp: self.ctx.r13,
                        fp: r.fp,
                    });
                }
            }
        }
        match self.use_fallback() {
            Step::Bottom => Step::Stop(Break::Interpreted),
            step => step,
        }
    }

    /// Whether `pc` is a return address into Java code (or the call stub).
    fn returns_to_java(&self, pc: usize) -> bool {
        if pc == self.hs.call_stub_return {
            return true;
        }
        if !self.hs.code.contains(pc) {
            return false;
        }
        matches!(
            self.hs.code.find(&self.hs.layout, pc).map(|b| b.kind),
            Some(
                BlobKind::Nmethod
                    | BlobKind::NativeNmethod
                    | BlobKind::Interpreter
                    | BlobKind::RuntimeStub
            )
        )
    }

    /// The entry frame: Java called from native code through the call stub.
    fn entry_frame(&mut self, r: Regs) -> Step {
        let l = &self.hs.layout;
        let wrapper = self
            .mem
            .word(r.fp.wrapping_add_signed(l.entry_wrapper_words * 8));
        let saved = match wrapper {
            Some(w) if w > r.fp && w - r.fp <= 4096 && self.on_stack(w) => {
                self.anchor(w.wrapping_add(l.wrapper_anchor))
            }
            _ => return Step::Stop(Break::EntryFrame),
        };
        if self.options.interleave {
            if let (Some(native), Some(pc), Some(fp)) = (
                self.options.native,
                self.mem.word(r.fp.wrapping_add(8)),
                self.mem.word(r.fp),
            ) {
                if native.contains(pc) {
                    self.fallback = saved.map_or(Fallback::None, Fallback::Saved);
                    self.blame = None;
                    // The call stub's caller, named by its call instruction.
                    return Step::Next(Regs {
                        pc: pc.wrapping_sub(1),
                        sp: r.fp.wrapping_add(16),
                        fp,
                    });
                }
            }
        }
        match saved {
            Some(next) => Step::Next(next),
            // The thread's first call into Java.
            None => Step::Bottom,
        }
    }

    /// Code of StubRoutines: a named frame, then its caller.
    fn stub_routine(&mut self, r: Regs) -> Step {
        if !self.push_generated(frames::STUB_PC, r.pc) {
            return Step::Full;
        }
        let found = self.generated_caller(r);
        match found {
            Some(next) => Step::Next(next),
            None => match self.use_fallback() {
                Step::Bottom => Step::Stop(Break::UnknownStub),
                step => step,
            },
        }
    }

    /// The caller of generated code whose frame size is not known (a stub,
    /// or a runtime stub interrupted before its frame is complete): the
    /// return address on top before `push rbp` or at `ret`, right above the
    /// saved rbp before `mov rbp, rsp`, through the frame `enter()` built,
    /// and at the top of the stack a return address to a Java call site a
    /// few words up. Each candidate must return to Java or library code.
    fn generated_caller(&self, r: Regs) -> Option<Regs> {
        let mut candidates: [Option<Regs>; 4] = [None; 4];
        if self.top {
            if matches!(self.mem.u8(r.pc), Some(0x55 | 0xC3)) {
                candidates[0] = self.return_at(r.sp, r.fp);
            }
            let after_push =
                self.mem.u8(r.pc.wrapping_sub(1)) == Some(0x55) && is_mov_rbp_rsp(r.pc);
            if after_push {
                candidates[1] = self.above_saved_fp(r);
            }
        }
        if r.fp >= r.sp && r.fp - r.sp < MAX_FRAME && self.on_stack(r.fp) {
            candidates[2] = (|| self.return_at(r.fp.wrapping_add(8), self.mem.word(r.fp)?))();
        }
        if self.top {
            candidates[3] = self.return_at(r.sp, r.fp);
        }
        // In the order the stub's own instructions say: the first that returns
        // to Java code or to a library (a stub the VM calls, flush_icache_stub).
        candidates
            .iter()
            .flatten()
            .copied()
            .find(|n| self.returns_to_code(n.pc))
            .or_else(|| self.top.then(|| self.call_site_above(r)).flatten())
    }

    /// A return address to a compiled Java call site (one with its own
    /// PcDesc) among the few words at the top of the stack: the caller of a
    /// leaf stub that saved registers without a frame pointer.
    fn call_site_above(&self, r: Regs) -> Option<Regs> {
        (1..32).find_map(|i| {
            let at = r.sp.wrapping_add(8 * i);
            let pc = self.mem.word(at)?;
            if !self.hs.code.contains(pc) {
                return None;
            }
            let blob = self.hs.code.find(&self.hs.layout, pc)?;
            if blob.kind != BlobKind::Nmethod {
                return None;
            }
            let nm = Nmethod::read(&self.hs.layout, &blob)?;
            nm.is_call_site(pc).then_some(Regs {
                pc,
                sp: at.wrapping_add(8),
                fp: r.fp,
            })
        })
    }

    /// The caller whose return address is at `at`, when it is Java or
    /// library code.
    fn checked_return(&self, at: usize, fp: usize) -> Step {
        match self.return_at(at, fp) {
            Some(next) if self.returns_to_code(next.pc) => Step::Next(next),
            _ => Step::Stop(Break::UnknownStub),
        }
    }

    /// Whether `pc` is a return address into Java code or, when native code
    /// is unwound, a library.
    fn returns_to_code(&self, pc: usize) -> bool {
        self.returns_to_java(pc) || self.options.native.is_some_and(|n| n.contains(pc))
    }

    /// A stub that jumps on without a frame of its own: vtable and itable
    /// stubs (with the receiver's class above them), adapters.
    fn jump_stub(&mut self, r: Regs, receiver: bool) -> Step {
        if receiver && self.top {
            let klass = self.hs.klass_of(self.ctx.rsi);
            if let Some(k) = klass.filter(|&k| {
                self.mem
                    .word(k.wrapping_add(self.hs.layout.klass_name))
                    .is_some()
            }) {
                if !self.push_generated(frames::RECEIVER, k) {
                    return Step::Full;
                }
            }
        }
        if !self.push_generated(frames::STUB_PC, r.pc) {
            return Step::Full;
        }
        if self.top {
            if let step @ Step::Next(_) = self.checked_return(r.sp, r.fp) {
                return step;
            }
        } else if let Some(next) = self.generated_caller(r) {
            // An adapter that called into the VM built a frame for it.
            return Step::Next(next);
        }
        match self.use_fallback() {
            Step::Bottom => Step::Stop(Break::UnknownStub),
            step => step,
        }
    }

    /// A runtime stub (or safepoint, deoptimization, exception blob): a fixed
    /// frame, trusted once it is complete.
    fn runtime_stub(&mut self, blob: Blob, r: Regs) -> Step {
        if !self.push_generated(frames::STUB_PC, r.pc) {
            return Step::Full;
        }
        let complete = code::frame_complete(&self.hs.layout, &blob).is_some_and(|c| r.pc >= c);
        let next = match !self.top || complete {
            true => self.unwind_by_frame_size(blob, r),
            false => self.generated_caller(r),
        };
        if let Some(next) = next {
            return Step::Next(next);
        }
        match self.use_fallback() {
            Step::Bottom => Step::Stop(Break::UnknownStub),
            step => step,
        }
    }
}

/// A return poll at `at` followed by `ret`: the poll's (first instruction,
/// whole) lengths. JDK 17+: `cmp rsp, [r15 + disp]` then `ja`; JDK 11:
/// `mov r10, [r15 + disp32]` then `test [r10], eax`.
fn poll_then_ret(at: usize) -> Option<(usize, usize)> {
    let b = |i: usize| load_u8(at.wrapping_add(i));
    let (first, whole) = match (b(0)?, b(1)?, b(2)?) {
        (0x49, 0x3B, 0xA7) if (b(7)?, b(8)?) == (0x0F, 0x87) => (7, 13),
        (0x49, 0x3B, 0x67) if (b(4)?, b(5)?) == (0x0F, 0x87) => (4, 10),
        (0x4D, 0x8B, 0x97) if (b(7)?, b(8)?, b(9)?) == (0x41, 0x85, 0x02) => (7, 10),
        _ => return None,
    };
    (b(whole)? == 0xC3).then_some((first, whole))
}

/// Whether `pc` is the second instruction of a return poll that a `pop rbp`
/// precedes (the frame is gone, the return address on top).
fn inside_poll_after_pop(pc: usize) -> bool {
    [7usize, 4].iter().any(|&first| {
        let Some(start) = pc.checked_sub(first) else {
            return false;
        };
        poll_then_ret(start).is_some_and(|(f, _)| f == first)
            && load_u8(start.wrapping_sub(1)) == Some(0x5D)
    })
}

/// Whether `mov rbp, rsp` starts at `at`, in either encoding (HotSpot's
/// assembler emits 48 8B EC, compilers 48 89 E5).
fn is_mov_rbp_rsp(at: usize) -> bool {
    let b = |i: usize| load_u8(at.wrapping_add(i));
    b(0) == Some(0x48)
        && matches!(
            (b(1), b(2)),
            (Some(0x89), Some(0xE5)) | (Some(0x8B), Some(0xEC))
        )
}
