//! perf_events as sampling sources: one counter per thread (`perf_event_open`
//! with pid = the thread's id), whose overflow every `period` events sends the
//! cpu signal to that very thread (O_ASYNC, F_SETSIG, F_SETOWN_EX with
//! F_OWNER_TID). The counter disables itself at each overflow (an event limit of
//! one, PERF_EVENT_IOC_REFRESH) and the signal handler re-enables it, so a slow
//! handler is never signalled again before it returned.
//!
//! With kernel frames on, each counter also records PERF_SAMPLE_CALLCHAIN
//! (kernel part only) into a small ring mapped here; the handler copies the
//! newest callchain out of it ([`PerfEvents::kernel_frames`]).

use std::ffi::{c_int, c_long};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A perf event jscope can sample on (`event=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfKind {
    /// The thread's own CPU time (the cpu mode's default source).
    TaskClock,
    CpuClock,
    PageFaults,
    ContextSwitches,
    CpuMigrations,
    Cycles,
    Instructions,
    CacheMisses,
}

impl PerfKind {
    /// The `event=` spelling (as perf names them).
    pub fn parse(name: &str) -> Option<PerfKind> {
        Some(match name {
            "cpu-clock" => PerfKind::CpuClock,
            "task-clock" => PerfKind::TaskClock,
            "page-faults" | "faults" => PerfKind::PageFaults,
            "context-switches" | "cs" => PerfKind::ContextSwitches,
            "cpu-migrations" | "migrations" => PerfKind::CpuMigrations,
            "cycles" => PerfKind::Cycles,
            "instructions" => PerfKind::Instructions,
            "cache-misses" => PerfKind::CacheMisses,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            PerfKind::TaskClock => "task-clock",
            PerfKind::CpuClock => "cpu-clock",
            PerfKind::PageFaults => "page-faults",
            PerfKind::ContextSwitches => "context-switches",
            PerfKind::CpuMigrations => "cpu-migrations",
            PerfKind::Cycles => "cycles",
            PerfKind::Instructions => "instructions",
            PerfKind::CacheMisses => "cache-misses",
        }
    }

    /// True for clocks, whose period is nanoseconds; the others count events.
    pub fn is_clock(self) -> bool {
        matches!(self, PerfKind::TaskClock | PerfKind::CpuClock)
    }

    /// True for the events a PMU counts (absent in most virtual machines).
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            PerfKind::Cycles | PerfKind::Instructions | PerfKind::CacheMisses
        )
    }

    /// Events per sample when `interval=` does not say (a clock's are
    /// nanoseconds: the sampling interval's default).
    pub fn default_period(self) -> u64 {
        match self {
            PerfKind::TaskClock | PerfKind::CpuClock => {
                crate::clock::DEFAULT_INTERVAL.as_nanos() as u64
            }
            PerfKind::PageFaults => 1000,
            PerfKind::ContextSwitches | PerfKind::CpuMigrations => 1,
            PerfKind::Cycles | PerfKind::Instructions => 10_000_000,
            PerfKind::CacheMisses => 10_000,
        }
    }

    fn type_and_config(self) -> (u32, u64) {
        const HARDWARE: u32 = 0;
        const SOFTWARE: u32 = 1;
        match self {
            PerfKind::CpuClock => (SOFTWARE, 0),
            PerfKind::TaskClock => (SOFTWARE, 1),
            PerfKind::PageFaults => (SOFTWARE, 2),
            PerfKind::ContextSwitches => (SOFTWARE, 3),
            PerfKind::CpuMigrations => (SOFTWARE, 4),
            PerfKind::Cycles => (HARDWARE, 0),
            PerfKind::Instructions => (HARDWARE, 1),
            PerfKind::CacheMisses => (HARDWARE, 3),
        }
    }
}

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER5 (112 bytes).
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_IDLE: u64 = 1 << 7;
const FLAG_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const PERF_FLAG_FD_CLOEXEC: c_long = 8;

#[cfg(test)]
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_REFRESH: libc::c_ulong = 0x2402;
const IOC_RESET: libc::c_ulong = 0x2403;

const F_SETSIG: c_int = 10;
const F_SETOWN_EX: c_int = 15;
const F_OWNER_TID: c_int = 0;

#[repr(C)]
struct OwnerEx {
    kind: c_int,
    pid: c_int,
}

/// Pages of callchain data per thread (plus the control page).
const DATA_PAGES: usize = 1;
/// Direct-mapped table of callchain rings by file descriptor.
const MAX_FD: usize = 16384;
/// PERF_RECORD_SAMPLE.
const RECORD_SAMPLE: u32 = 9;
/// Callchain entries at or above this are context markers (PERF_CONTEXT_*).
const CONTEXT_MARK: u64 = (-4095i64) as u64;

/// One thread's counter.
pub struct PerfFd {
    pub fd: c_int,
    ring: usize,
}

/// How the counters are made, and the callchain rings the handler reads.
pub struct PerfEvents {
    kind: PerfKind,
    period: u64,
    signo: c_int,
    kernel: bool,
    /// Callchain ring address by fd; 0 when none.
    rings: Box<[AtomicUsize]>,
    page: usize,
    /// Handlers inside [`PerfEvents::kernel_frames`]; rings are unmapped only at 0.
    readers: AtomicU64,
}

impl PerfEvents {
    /// Counters of `kind` overflowing every `period` events (nanoseconds for
    /// clocks); `kernel` also records kernel callchains.
    pub fn new(kind: PerfKind, period: u64, signo: c_int, kernel: bool) -> PerfEvents {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        // The overflow signal wakes a sleeping thread, which switches out once
        // more when the handler returns: that switch is the sample's own, so a
        // context-switch counter counts one more than the period asked for
        // (with a period of 1 each sample would otherwise cause the next).
        let period = match kind {
            PerfKind::ContextSwitches => period.max(1) + 1,
            _ => period.max(1),
        };
        PerfEvents {
            kind,
            period,
            signo,
            kernel,
            rings: (0..if kernel { MAX_FD } else { 0 })
                .map(|_| AtomicUsize::new(0))
                .collect(),
            page,
            readers: AtomicU64::new(0),
        }
    }

    pub fn kernel(&self) -> bool {
        self.kernel
    }

    /// Opens, wires and enables the counter of thread `tid`.
    pub fn open(&self, tid: u32) -> std::io::Result<PerfFd> {
        let fd = self.open_fd(tid as c_int)?;
        let ring = if self.kernel && (fd as usize) < MAX_FD {
            self.map_ring(fd)
        } else {
            0
        };
        let perf = PerfFd { fd, ring };
        if let Err(e) = self.wire(fd, tid) {
            self.close(perf);
            return Err(e);
        }
        Ok(perf)
    }

    fn open_fd(&self, tid: c_int) -> std::io::Result<c_int> {
        let (kind, config) = self.kind.type_and_config();
        let mut attr = Attr {
            kind,
            size: std::mem::size_of::<Attr>() as u32,
            config,
            sample_period: self.period,
            flags: FLAG_DISABLED | FLAG_EXCLUDE_IDLE,
            wakeup_events: 1,
            ..Attr::default()
        };
        if self.kernel {
            attr.sample_type = SAMPLE_CALLCHAIN;
            attr.flags |= FLAG_EXCLUDE_CALLCHAIN_USER;
        }
        perf_event_open(&attr, tid)
    }

    fn map_ring(&self, fd: c_int) -> usize {
        let len = (1 + DATA_PAGES) * self.page;
        // SAFETY: mapping a perf fd's ring: a fresh shared mapping.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return 0;
        }
        self.rings[fd as usize].store(addr as usize, Ordering::Release);
        addr as usize
    }

    fn wire(&self, fd: c_int, tid: u32) -> std::io::Result<()> {
        let owner = OwnerEx {
            kind: F_OWNER_TID,
            pid: tid as c_int,
        };
        // SAFETY: fcntl and ioctl on our own fd with valid arguments.
        let ok = unsafe {
            libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
                && libc::fcntl(fd, F_SETSIG, self.signo) == 0
                && libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) == 0
                && libc::ioctl(fd, IOC_RESET, 0) == 0
                && libc::ioctl(fd, IOC_REFRESH, 1) == 0
        };
        if ok {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Stops and closes a counter. Its ring is unmapped once no handler reads
    /// any ring.
    pub fn close(&self, perf: PerfFd) {
        // SAFETY: our own fd.
        unsafe { libc::ioctl(perf.fd, IOC_DISABLE, 0) };
        if perf.ring != 0 {
            // SeqCst here and in kernel_frames: a handler either counts itself
            // in before this store (and is waited for) or reads 0 after it.
            self.rings[perf.fd as usize].store(0, Ordering::SeqCst);
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
            while self.readers.load(Ordering::SeqCst) != 0 && std::time::Instant::now() < deadline {
                std::thread::yield_now();
            }
            if self.readers.load(Ordering::SeqCst) == 0 {
                // SAFETY: the mapping made in map_ring, no longer published.
                unsafe {
                    libc::munmap(perf.ring as *mut _, (1 + DATA_PAGES) * self.page);
                }
            }
        }
        // SAFETY: our own fd, closed once.
        unsafe { libc::close(perf.fd) };
    }
}

/// Handler side: re-enables the counter that signalled (its overflow disabled
/// it). Async-signal-safe: one ioctl.
pub fn rearm(fd: c_int) {
    // SAFETY: ioctl on a descriptor; a stale one fails harmlessly.
    unsafe {
        libc::ioctl(fd, IOC_RESET, 0);
        libc::ioctl(fd, IOC_REFRESH, 1);
    }
}

/// Handler side: enables a counter (used by tests).
#[cfg(test)]
fn enable(fd: c_int) {
    // SAFETY: ioctl on our own fd.
    unsafe { libc::ioctl(fd, IOC_ENABLE, 0) };
}

impl PerfEvents {
    /// Handler side: copies the newest kernel callchain of counter `fd` into
    /// `out` (top first) and empties its ring; the number of frames.
    /// Async-signal-safe: reads shared memory only.
    pub fn kernel_frames(&self, fd: c_int, out: &mut [u64]) -> usize {
        if !self.kernel || fd < 0 || fd as usize >= self.rings.len() {
            return 0;
        }
        self.readers.fetch_add(1, Ordering::SeqCst);
        let base = self.rings[fd as usize].load(Ordering::SeqCst);
        let n = if base == 0 {
            0
        } else {
            // SAFETY: a published ring stays mapped while `readers` is non-zero.
            unsafe { read_ring(base, self.page, out) }
        };
        self.readers.fetch_sub(1, Ordering::AcqRel);
        n
    }
}

/// Reads the newest sample record of the ring at `base` into `out`.
///
/// # Safety
/// `base` is a live perf ring of one control page and DATA_PAGES data pages.
unsafe fn read_ring(base: usize, page: usize, out: &mut [u64]) -> usize {
    // perf_event_mmap_page: data_head at 1024, data_tail at 1032.
    let head_ptr = (base + 1024) as *const AtomicU64;
    let tail_ptr = (base + 1032) as *const AtomicU64;
    let head = (*head_ptr).load(Ordering::Acquire);
    let mut pos = (*tail_ptr).load(Ordering::Relaxed);
    let data = base + page;
    let size = (DATA_PAGES * page) as u64;
    let word = |at: u64| -> u64 {
        let off = (at % size) as usize;
        // Records are 8-byte aligned, so a word never straddles the ring's end.
        std::ptr::read_volatile((data + off) as *const u64)
    };
    let mut n = 0;
    if head.wrapping_sub(pos) > size {
        pos = head; // overrun: nothing trustworthy
    }
    while pos < head {
        let hdr = word(pos);
        let (kind, rec_size) = (hdr as u32, hdr >> 48);
        if rec_size < 8 || pos + rec_size > head {
            break;
        }
        if kind == RECORD_SAMPLE && rec_size >= 16 {
            let nr = word(pos + 8).min((rec_size - 16) / 8);
            n = 0;
            for i in 0..nr {
                let ip = word(pos + 16 + i * 8);
                if ip >= CONTEXT_MARK {
                    continue;
                }
                if n < out.len() {
                    out[n] = ip;
                    n += 1;
                }
            }
        }
        pos += rec_size;
    }
    (*tail_ptr).store(head, Ordering::Release);
    n
}

/// Whether this kernel lets the process open `kind` for its own threads; the
/// error otherwise.
pub fn probe(kind: PerfKind) -> std::io::Result<()> {
    let events = PerfEvents::new(kind, kind.default_period(), 0, false);
    let fd = events.open_fd(0)?;
    // SAFETY: our own fd, closed once.
    unsafe { libc::close(fd) };
    Ok(())
}

/// Opens a counting-only counter of `kind` for the calling thread, already
/// enabled (no sampling, no signal): exact tracing's per-call counter
/// (`tracecounter=`). The caller closes the fd.
pub fn open_counter(kind: PerfKind) -> std::io::Result<c_int> {
    let (kind, config) = kind.type_and_config();
    let attr = Attr {
        kind,
        size: std::mem::size_of::<Attr>() as u32,
        config,
        ..Attr::default()
    };
    perf_event_open(&attr, 0)
}

/// Opens a counter described by `attr` for thread `tid` (0: the calling
/// thread), on any cpu, in no group, closed on exec.
fn perf_event_open(attr: &Attr, tid: c_int) -> std::io::Result<c_int> {
    // SAFETY: a valid attr of the size it states; the other arguments are plain.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            tid as c_long,
            -1 as c_long,
            -1 as c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd as c_int)
}

/// A counter's current value; 0 when the read fails (a bad or closed fd).
#[inline]
pub fn read_count(fd: c_int) -> u64 {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into a u64.
    unsafe { libc::read(fd, &mut v as *mut u64 as *mut _, 8) };
    v
}

/// Why perf_event_open refused an event of `kind`, in words (callers add what
/// happens next).
pub fn refusal(kind: PerfKind, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) if kind.is_hardware() => {
            format!("this machine has no hardware performance counters ({e})")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open is not allowed here ({e}; see /proc/sys/kernel/perf_event_paranoid)"
        ),
        _ => format!("perf_event_open failed ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_perf_names() {
        assert_eq!(PerfKind::parse("page-faults"), Some(PerfKind::PageFaults));
        assert_eq!(PerfKind::parse("cs"), Some(PerfKind::ContextSwitches));
        assert_eq!(PerfKind::parse("bogus"), None);
        for k in ["cpu-clock", "cycles", "instructions", "cache-misses"] {
            assert_eq!(PerfKind::parse(k).unwrap().name(), k);
        }
        assert!(PerfKind::Cycles.is_hardware() && !PerfKind::PageFaults.is_hardware());
    }

    #[test]
    fn a_software_counter_counts_this_threads_page_faults() {
        if probe(PerfKind::PageFaults).is_err() {
            eprintln!("perf_event_open refused here; nothing to check");
            return;
        }
        let events = PerfEvents::new(PerfKind::PageFaults, u64::MAX >> 1, 0, false);
        let fd = events.open_fd(0).unwrap();
        enable(fd);
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        assert!(read_count(fd) >= 10_000, "{}", read_count(fd));
        // SAFETY: our own fd.
        unsafe { libc::close(fd) };
    }
}
