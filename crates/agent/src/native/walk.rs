//! Native frames for the signal handler: a frame-pointer walk from the signal
//! context up to the first frame outside the loaded libraries' code (the JIT's
//! code cache, the interpreter, stubs: Java frames, left to AsyncGetCallTrace).
//!
//! The handler knows which addresses are library code from [`CodeRanges`], a
//! sorted table of the executable file mappings built off the handler (from
//! /proc/self/maps) and published through one atomic pointer. Stack memory is
//! read with `process_vm_readv` on the process itself, which fails with EFAULT
//! instead of faulting on a bad frame pointer (glibc is built without frame
//! pointers, so chains through it can hold anything).

use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};
use std::sync::Mutex;

use super::elf::parse_maps_line;

/// Executable file-backed mappings, sorted by start.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CodeRanges {
    ranges: Vec<(usize, usize)>,
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
        CodeRanges { ranges }
    }

    /// True when `pc` lies in library code. Async-signal-safe.
    pub fn contains(&self, pc: usize) -> bool {
        let i = self.ranges.partition_point(|&(start, _)| start <= pc);
        i > 0 && pc < self.ranges[i - 1].1
    }
}

/// The table the handler reads; replaced (never freed) when the mappings change.
static CURRENT: AtomicPtr<CodeRanges> = AtomicPtr::new(std::ptr::null_mut());
/// This process's id for [`read_pair`], set off the handler (getpid is a
/// system call, too dear per native frame).
static PID: AtomicI32 = AtomicI32::new(0);
/// The dynamic loader's (loads, unloads) counts when the table was built.
static LAST: Mutex<Option<(u64, u64)>> = Mutex::new(None);

/// Publishes a new table when the dynamic loader loaded or unloaded a library
/// since the last call (checked cheaply through dl_iterate_phdr's counters).
/// Off the handler (the cpu engine's start and its thread scanner call it).
pub fn refresh_code_ranges() {
    // SAFETY: getpid has no preconditions.
    PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    let counts = loader_counts();
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if *last == Some(counts) {
        return;
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    // Leaked: a handler may be reading the previous table (a few KB per change).
    let table: &'static CodeRanges = Box::leak(Box::new(CodeRanges::parse(&maps)));
    CURRENT.store(table as *const _ as *mut _, Ordering::Release);
    *last = Some(counts);
}

/// How many objects the dynamic loader has loaded and unloaded so far.
fn loader_counts() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut std::ffi::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; data is the caller's pair.
        unsafe {
            let info = &*info;
            *data.cast::<(u64, u64)>() = (info.dlpi_adds, info.dlpi_subs);
        }
        1 // the counters are the same in every entry: stop at the first
    }
    let mut counts = (0u64, 0u64);
    // SAFETY: the callback only writes the pair passed as data.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut counts as *mut (u64, u64)).cast()) };
    counts
}

fn code_ranges() -> Option<&'static CodeRanges> {
    // SAFETY: only leaked tables are published.
    unsafe { CURRENT.load(Ordering::Acquire).as_ref() }
}

/// Reads two words at `addr` without faulting; None when not readable (or
/// before [`refresh_code_ranges`] has run).
fn read_pair(addr: usize) -> Option<[usize; 2]> {
    let mut out = [0usize; 2];
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: 16,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut _,
        iov_len: 16,
    };
    let pid = PID.load(Ordering::Relaxed);
    // SAFETY: a plain system call on this process; the kernel checks `addr`.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    (n == 16).then_some(out)
}

/// Largest step between two frames a walk believes.
const MAX_FRAME: usize = 1 << 20;

/// Walks native frames from the interrupted context into `out` (program
/// counters, top first): stops at the first address outside library code, at a
/// broken chain or when `out` is full. Async-signal-safe.
///
/// # Safety
/// `ucontext` is the signal handler's context argument (or null).
pub unsafe fn walk(ucontext: *mut std::ffi::c_void, out: &mut [usize]) -> usize {
    let Some(ranges) = code_ranges() else {
        return 0;
    };
    let Some((mut pc, mut fp, sp)) = registers(ucontext) else {
        return 0;
    };
    let mut n = 0;
    let mut low = sp;
    while n < out.len() && ranges.contains(pc) {
        out[n] = pc;
        n += 1;
        if fp < low || fp - low > MAX_FRAME || fp % 8 != 0 {
            break;
        }
        let Some([next_fp, ret]) = read_pair(fp) else {
            break;
        };
        if ret == 0 {
            break;
        }
        low = fp + 16;
        pc = ret - 1; // inside the call instruction, so it names the caller's line
        fp = next_fp;
    }
    n
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
}
