//! Native frames for the signal handler: a walk from the signal context up to
//! the first frame outside the loaded libraries' code (the JIT's code cache,
//! the interpreter, stubs: Java frames, left to AsyncGetCallTrace). Each step
//! follows the object's DWARF call frame information where `cstack=dwarf`
//! built it ([`super::cfi`]), else the frame pointer.
//!
//! The handler knows which addresses are library code from [`CodeRanges`], a
//! sorted table of the executable file mappings built off the handler (from
//! /proc/self/maps, with the unwind tables of the loaded objects) and
//! published through one atomic pointer. Stack memory is
//! read with `process_vm_readv` on the process itself, which fails with EFAULT
//! instead of faulting on a bad frame pointer (glibc is built without frame
//! pointers, so chains through it can hold anything).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::cfi::{self, ObjectCfi};
use super::elf::parse_maps_line;

/// Executable file-backed mappings, sorted by start, and the unwind tables of
/// the loaded objects (empty unless `cstack=dwarf`), sorted by start.
#[derive(Debug, Default)]
pub struct CodeRanges {
    ranges: Vec<(usize, usize)>,
    objects: Vec<&'static ObjectCfi>,
}

impl CodeRanges {
    /// The executable mappings of a file (or the vDSO) listed in `maps`.
    pub fn parse(maps: &str) -> CodeRanges {
        let mut ranges: Vec<(usize, usize)> = maps
            .lines()
            .filter_map(parse_maps_line)
            .filter(|m| m.perms.contains('x'))
            .map(|m| (m.start as usize, m.end as usize))
            .collect();
        ranges.sort_unstable();
        CodeRanges {
            ranges,
            objects: Vec::new(),
        }
    }

    /// The unwind table of the object holding `pc`. Async-signal-safe.
    fn object(&self, pc: usize) -> Option<&'static ObjectCfi> {
        let i = self.objects.partition_point(|o| o.start <= pc);
        let o = *self.objects.get(i.checked_sub(1)?)?;
        (pc < o.end).then_some(o)
    }

    /// True when `pc` lies in library code. Async-signal-safe.
    pub fn contains(&self, pc: usize) -> bool {
        let i = self.ranges.partition_point(|&(start, _)| start <= pc);
        i > 0 && pc < self.ranges[i - 1].1
    }

    /// The caller's registers of the library frame at `r`: by the code's
    /// unwind row where there is one (`cstack=dwarf`), else by the frame
    /// pointer; None at an outermost frame or a broken chain.
    /// Async-signal-safe.
    pub fn step(&self, r: Regs) -> Option<Regs> {
        let row = self.object(r.pc).and_then(|o| o.row(r.pc));
        match row {
            Some(row) if row.kind == cfi::STOP => None,
            Some(row) if row.kind == cfi::CFA_SP || row.kind == cfi::CFA_FP => cfa_step(r, row),
            _ => fp_step(r),
        }
    }
}

/// The process's code: what the handler reads, and what builds it.
struct Code {
    /// The table the handler reads; replaced (never freed) when the mappings
    /// change.
    current: AtomicPtr<CodeRanges>,
    /// The dynamic loader's (loads, unloads) counts when the table was built.
    last: Mutex<Option<(u64, u64)>>,
    /// Whether refreshes build DWARF unwind tables (`cstack=dwarf`).
    dwarf: AtomicBool,
    /// The unwind tables built so far, and what they cost.
    cfi: Mutex<Option<(cfi::Cache, cfi::BuildStats)>>,
    /// The address range of HotSpot's `JavaCalls::call_helper` in this process,
    /// (start, end); (0, 0) until found. Every entry from the VM into Java goes
    /// through it and the call stub it calls, which saves call_helper's frame
    /// pointer right below the return address.
    call_helper: [AtomicUsize; 2],
    /// Set once libjvm's symbols were read for `call_helper`, found or not.
    call_helper_read: AtomicBool,
}

static CODE: Code = Code {
    current: AtomicPtr::new(std::ptr::null_mut()),
    last: Mutex::new(None),
    dwarf: AtomicBool::new(false),
    cfi: Mutex::new(None),
    call_helper: [AtomicUsize::new(0), AtomicUsize::new(0)],
    call_helper_read: AtomicBool::new(false),
};

/// Makes later refreshes build (or stop building) DWARF unwind tables; the
/// walk follows them wherever they cover the code. Set before the cpu engine
/// starts.
pub fn use_dwarf(on: bool) {
    CODE.dwarf.store(on, Ordering::Relaxed);
    // The next refresh rebuilds the table with (or without) unwind rows.
    *CODE.last.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// What the unwind tables built so far cost: objects (name, rows, bytes) and
/// build time.
pub fn dwarf_stats() -> cfi::BuildStats {
    CODE.cfi
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|(_, s)| s.clone())
        .unwrap_or_default()
}

/// Publishes a new table when the dynamic loader loaded or unloaded a library
/// since the last call (checked cheaply through dl_iterate_phdr's counters).
/// Off the handler (the cpu engine's start and its thread scanner call it).
pub fn refresh_code_ranges() {
    crate::safe::note_pid();
    let counts = super::elf::loader_counts();
    let mut last = CODE.last.lock().unwrap_or_else(|e| e.into_inner());
    if *last == Some(counts) {
        return;
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    let mut table = CodeRanges::parse(&maps);
    if CODE.dwarf.load(Ordering::Relaxed) {
        let mut cfi = CODE.cfi.lock().unwrap_or_else(|e| e.into_inner());
        let (cache, stats) = cfi.get_or_insert_with(Default::default);
        table.objects = cache.refresh(stats);
    }
    // Leaked: a handler may be reading the previous table (a few KB per change;
    // the unwind rows themselves are built once per object and shared).
    let table: &'static CodeRanges = Box::leak(Box::new(table));
    CODE.current
        .store(table as *const _ as *mut _, Ordering::Release);
    *last = Some(counts);
}

/// The table of library code, once [`refresh_code_ranges`] has run.
pub fn code_ranges() -> Option<&'static CodeRanges> {
    // SAFETY: only leaked tables are published.
    unsafe { CODE.current.load(Ordering::Acquire).as_ref() }
}

/// Reads two words at `addr` without faulting; None when not readable.
fn read_pair(addr: usize) -> Option<[usize; 2]> {
    Some([
        crate::safe::load(addr)?,
        crate::safe::load(addr.wrapping_add(8))?,
    ])
}

/// Reads one word at `addr` without faulting.
fn read_word(addr: usize) -> Option<usize> {
    crate::safe::load(addr)
}

/// Largest step between two frames a walk believes.
const MAX_FRAME: usize = 1 << 20;

/// The registers a walk carries from frame to frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
}

/// Walks native frames from the interrupted context into `out` (program
/// counters, top first): stops at the first address outside library code, at
/// an outermost frame, at a broken chain or when `out` is full. Each step
/// follows the code's unwind row when there is one (`cstack=dwarf`), else the
/// frame pointer. Async-signal-safe.
///
/// # Safety
/// `ucontext` is the signal handler's context argument (or null).
pub unsafe fn walk(ucontext: *mut std::ffi::c_void, out: &mut [usize]) -> usize {
    let Some(ranges) = code_ranges() else {
        return 0;
    };
    let Some((pc, fp, sp)) = registers(ucontext) else {
        return 0;
    };
    walk_from(ranges, Regs { pc, sp, fp }, out).0
}

/// Walks native frames from `r`, registers of the calling thread's own (a
/// hook's, not a signal's), as [`walk`] does. Async-signal-safe.
pub fn walk_regs(r: Regs, out: &mut [usize]) -> usize {
    match code_ranges() {
        Some(ranges) => walk_from(ranges, r, out).0,
        None => 0,
    }
}

/// The walk from `r` into `out`: how many frames, and the registers of the
/// frame it stopped at when that frame is outside library code (the JIT's
/// code cache: Java frames); None when it stopped otherwise (an outermost
/// frame, a broken chain, `out` full).
fn walk_from(ranges: &CodeRanges, mut r: Regs, out: &mut [usize]) -> (usize, Option<Regs>) {
    let mut n = 0;
    loop {
        if !ranges.contains(r.pc) {
            return (n, (r.pc != 0).then_some(r));
        }
        if n == out.len() {
            return (n, None);
        }
        out[n] = r.pc;
        n += 1;
        match ranges.step(r) {
            Some(next) => r = next,
            None => return (n, None),
        }
    }
}

/// Native segments walked between Java frames at most per sample.
pub const MAX_SEGMENTS: usize = 8;
/// How far above a Java frame the stack is searched for the next segment.
const SCAN_BYTES: usize = 256 << 10;
/// Words read per system call while searching.
const SCAN_WORDS: usize = 256;

/// A mixed walk: the native frames on top (`out[..top]`), then segments of
/// native frames found between Java frames, segment `i` ending (exclusive) at
/// `ends[i]` in `out` and starting where the previous one ended (or at `top`).
#[derive(Debug, Clone, Copy)]
pub struct MixedWalk {
    pub top: usize,
    pub segments: usize,
    pub ends: [usize; MAX_SEGMENTS],
}

impl MixedWalk {
    /// Frames written to `out` in all.
    pub fn len(&self) -> usize {
        match self.segments {
            0 => self.top,
            n => self.ends[n - 1],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Looks up `JavaCalls::call_helper` in libjvm's symbol table once libjvm is
/// loaded (off the handler, before sampling starts, as the unwind tables are
/// built: every sample can have its segments). A libjvm without `.symtab`
/// leaves it unknown: no segments between Java frames.
pub(crate) fn find_call_helper() {
    if CODE.call_helper_read.load(Ordering::Relaxed) {
        return;
    }
    let Some((path, bias)) = loaded_object("libjvm.so") else {
        return;
    };
    CODE.call_helper_read.store(true, Ordering::Relaxed);
    let Some(symbols) = super::elf::ElfSymbols::load(std::path::Path::new(&path)) else {
        return;
    };
    if let Some((addr, size)) = symbols.find_prefix("_ZN9JavaCalls11call_helperE") {
        let start = bias + addr as usize;
        CODE.call_helper[0].store(start, Ordering::Relaxed);
        CODE.call_helper[1].store(start + size as usize, Ordering::Release);
    }
}

/// The path and load bias of the loaded object whose file name is `name`.
pub(crate) fn loaded_object(name: &str) -> Option<(String, usize)> {
    struct Want<'a> {
        name: &'a str,
        found: Option<(String, usize)>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut std::ffi::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; data is the caller's Want.
        unsafe {
            let info = &*info;
            let want = &mut *data.cast::<Want<'_>>();
            if info.dlpi_name.is_null() {
                return 0;
            }
            let path = std::ffi::CStr::from_ptr(info.dlpi_name).to_string_lossy();
            if path.rsplit('/').next() == Some(want.name) {
                want.found = Some((path.into_owned(), info.dlpi_addr as usize));
                return 1;
            }
        }
        0
    }
    let mut want = Want { name, found: None };
    // SAFETY: the callback only reads the entries and writes `want`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut want as *mut Want<'_>).cast()) };
    want.found
}

/// Walks native frames from the interrupted context as [`walk`] does, then,
/// where that walk stops at Java frames, the native frames between Java
/// frames: the stack above is searched (at most `SCAN_BYTES`) for a return
/// address into `JavaCalls::call_helper` pushed by its call into the call
/// stub (whose first instructions save call_helper's frame pointer below
/// it); from there the walk goes on down to the next Java frames, one
/// segment, and the search starts again above them. A candidate whose walk
/// does not end at Java frames ends the search (the thread's entry into Java
/// or a stale word): nothing of it is kept. Async-signal-safe; bounded.
///
/// # Safety
/// `ucontext` is the signal handler's context argument (or null).
pub unsafe fn walk_mixed(ucontext: *mut std::ffi::c_void, out: &mut [usize]) -> MixedWalk {
    let mut w = MixedWalk {
        top: 0,
        segments: 0,
        ends: [0; MAX_SEGMENTS],
    };
    let Some(ranges) = code_ranges() else {
        return w;
    };
    let Some((pc, fp, sp)) = registers(ucontext) else {
        return w;
    };
    let (top, mut stop) = walk_from(ranges, Regs { pc, sp, fp }, out);
    w.top = top;
    // The end is published last: once it is set, so is the start.
    let end = CODE.call_helper[1].load(Ordering::Acquire);
    if end == 0 {
        return w;
    }
    let helper = (CODE.call_helper[0].load(Ordering::Relaxed), end);
    let mut n = top;
    while let Some(java) = stop {
        if w.segments == MAX_SEGMENTS || n == out.len() {
            break;
        }
        stop = None;
        let mut from = java.sp;
        let limit = java.sp.saturating_add(SCAN_BYTES);
        while let Some(a) = scan_for(from, limit, helper) {
            let Some(fp) = read_word(a - 8) else { break };
            if fp <= a || fp - a > MAX_FRAME || fp % 8 != 0 {
                from = a + 8;
                continue;
            }
            let Some(ret) = read_word(a) else { break };
            let r = Regs {
                pc: ret - 1,
                sp: a + 8,
                fp,
            };
            let (k, end) = walk_from(ranges, r, &mut out[n..]);
            if let Some(end) = end {
                n += k;
                w.ends[w.segments] = n;
                w.segments += 1;
                stop = Some(end);
            }
            break;
        }
    }
    w
}

/// The address of the first word at or above `from` (below `limit`) whose
/// value lies in `range`; None when there is none or the stack ends.
fn scan_for(from: usize, limit: usize, range: (usize, usize)) -> Option<usize> {
    let mut at = from & !7;
    let mut buf = [0usize; SCAN_WORDS];
    while at < limit {
        let len = ((limit - at) / 8).min(SCAN_WORDS);
        // Not past the end of the page: the stack's last page may be followed
        // by unreadable memory, and a read across it fails whole.
        let page_left = (4096 - (at & 4095)) / 8;
        let len = len.min(page_left);
        if len == 0 || !read_words(at, &mut buf[..len]) {
            return None;
        }
        if let Some(i) = buf[..len].iter().position(|&v| v >= range.0 && v < range.1) {
            return Some(at + 8 * i);
        }
        at += 8 * len;
    }
    None
}

/// Searches `bytes` of memory from `from` for a value in `range`, as the
/// handler searches the stack for the next segment (the benchmark's measure
/// of the search; `refresh_code_ranges` must have run).
#[doc(hidden)]
pub fn scan_for_bench(from: usize, bytes: usize, range: (usize, usize)) -> Option<usize> {
    scan_for(from, from + bytes, range)
}

/// Reads `out.len()` words at `addr` without faulting; false when not readable.
fn read_words(addr: usize, out: &mut [usize]) -> bool {
    crate::safe::load_words(addr, out)
}

/// One step by an unwind row: the CFA from SP or FP, the return address below
/// it, the caller's FP where the row says it was saved.
fn cfa_step(r: Regs, row: cfi::Row) -> Option<Regs> {
    let base = if row.kind == cfi::CFA_SP { r.sp } else { r.fp };
    let cfa = base.checked_add(row.cfa as usize)?;
    if cfa <= r.sp || cfa - r.sp > MAX_FRAME || cfa % 8 != 0 {
        return None;
    }
    let (fp, ret) = match row.fp {
        0 => (r.fp, read_word(cfa.wrapping_sub(8))?),
        2 => {
            let [fp, ret] = read_pair(cfa.wrapping_sub(16))?;
            (fp, ret)
        }
        k => (
            read_word(cfa.checked_sub(8 * k as usize)?)?,
            read_word(cfa.wrapping_sub(8))?,
        ),
    };
    if ret == 0 {
        return None;
    }
    Some(Regs {
        pc: ret - 1, // inside the call instruction, so it names the caller's line
        sp: cfa,
        fp,
    })
}

/// One step by the frame pointer: the saved FP and return address it points at.
fn fp_step(r: Regs) -> Option<Regs> {
    let fp = r.fp;
    if fp < r.sp || fp - r.sp > MAX_FRAME || !fp.is_multiple_of(8) {
        return None;
    }
    let [next_fp, ret] = read_pair(fp)?;
    if ret == 0 {
        return None;
    }
    Some(Regs {
        pc: ret - 1,
        sp: fp.wrapping_add(16),
        fp: next_fp,
    })
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe fn registers(ucontext: *mut std::ffi::c_void) -> Option<(usize, usize, usize)> {
    let uc = ucontext.cast::<libc::ucontext_t>().as_ref()?;
    let g = &uc.uc_mcontext.gregs;
    Some((
        g[libc::REG_RIP as usize] as usize,
        g[libc::REG_RBP as usize] as usize,
        g[libc::REG_RSP as usize] as usize,
    ))
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
unsafe fn registers(_ucontext: *mut std::ffi::c_void) -> Option<(usize, usize, usize)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_keep_executable_file_mappings_only() {
        let maps = "\
7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /usr/lib/libc.so.6
7f0000001000-7f0000002000 rw-p 00000000 08:01 1 /usr/lib/libc.so.6
7f0000003000-7f0000004000 rwxp 00000000 00:00 0
7fff00000000-7fff00001000 r-xp 00000000 00:00 0 [vdso]
";
        let r = CodeRanges::parse(maps);
        assert!(r.contains(0x7f0000000000) && r.contains(0x7f0000000fff));
        assert!(!r.contains(0x7f0000001000), "data");
        assert!(!r.contains(0x7f0000003500), "anonymous code is the JIT's");
        assert!(r.contains(0x7fff00000010));
        assert!(!r.contains(0x10));
    }

    #[test]
    fn this_processs_code_is_in_the_table() {
        refresh_code_ranges();
        let here = this_processs_code_is_in_the_table as *const () as usize;
        assert!(code_ranges().unwrap().contains(here));
        let heap = Box::new(1u64);
        assert!(!code_ranges()
            .unwrap()
            .contains(&*heap as *const u64 as usize));
        assert_eq!(
            read_pair(0),
            None,
            "unreadable memory is refused, not faulted"
        );
        let words = [7usize, 9];
        assert_eq!(read_pair(words.as_ptr() as usize), Some([7, 9]));
    }

    #[test]
    fn the_search_finds_the_first_word_in_range_and_stops_at_unreadable_memory() {
        refresh_code_ranges();
        let mut words = vec![0usize; 2048];
        words[1000] = 0x5008;
        words[1500] = 0x5000;
        let from = words.as_ptr() as usize;
        let range = (0x5000, 0x5010);
        assert_eq!(scan_for(from, from + 2048 * 8, range), Some(from + 8000));
        assert_eq!(
            scan_for(from + 8008, from + 2048 * 8, range),
            Some(from + 12000)
        );
        assert_eq!(scan_for(from, from + 1000 * 8, range), None, "the bound");
        assert_eq!(scan_for(4096, 1 << 20, range), None, "unreadable");
    }

    /// The walk from a context taken three calls deep, with DWARF rows, down
    /// through std's thread start and glibc's (built without frame pointers).
    #[inline(never)]
    fn level3(out: &mut [usize]) -> usize {
        // SAFETY: a zeroed ucontext_t is a valid buffer for getcontext.
        let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
        // SAFETY: getcontext fills the buffer passed.
        assert_eq!(unsafe { libc::getcontext(&mut uc) }, 0);
        // SAFETY: a context of this thread, as a handler's would be.
        let n = unsafe { walk((&mut uc as *mut libc::ucontext_t).cast(), out) };
        std::hint::black_box(n)
    }

    #[inline(never)]
    fn level2(out: &mut [usize]) -> usize {
        std::hint::black_box(level3(out)) + std::hint::black_box(0)
    }

    #[inline(never)]
    fn level1(out: &mut [usize]) -> usize {
        std::hint::black_box(level2(out)) + std::hint::black_box(0)
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn dwarf_rows_walk_this_threads_frames_to_the_thread_entry() {
        use_dwarf(true);
        refresh_code_ranges();
        let mut pcs = [0usize; 128];
        let n = level1(&mut pcs);
        let mut symbols = crate::native::elf::Symbolizer::new();
        let names: Vec<String> = pcs[..n]
            .iter()
            .map(|&pc| {
                symbols
                    .lookup(pc as u64)
                    .and_then(|s| s.name)
                    .unwrap_or_else(|| format!("{pc:#x}"))
            })
            .collect();
        let at = |f: &str| names.iter().position(|n| n.ends_with(f));
        let (l3, l2, l1) = (at("::level3"), at("::level2"), at("::level1"));
        assert!(
            matches!((l3, l2, l1), (Some(a), Some(b), Some(c)) if a < b && b < c),
            "{names:?}"
        );
        // Through std's thread start and glibc to the outermost frame.
        assert!(names.iter().any(|n| n == "start_thread"), "{names:?}");
        assert!(
            names.last().is_some_and(|n| n.starts_with("clone")),
            "{names:?}"
        );
    }
}
