//! Time sources: CLOCK_MONOTONIC nanoseconds as the recording's ticks, plus the
//! wall-clock anchor, the `%t` stamp for file names, and the probes' TSC clock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Default sampling interval of the cpu and wall engines, and the period of
/// perf's clock events when none is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// CLOCK_MONOTONIC in nanoseconds. Async-signal-safe (clock_gettime is on the
/// POSIX list), so the signal handler stamps samples with it.
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// The calling thread's CPU time in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Unix-epoch nanoseconds.
pub fn wall_ns() -> u64 {
    read_clock(libc::CLOCK_REALTIME)
}

fn read_clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Local time of `wall_ns` as yyyymmdd-hhmmss, for `%t` in file names.
pub fn file_stamp(wall_ns: u64) -> String {
    let secs = (wall_ns / 1_000_000_000) as libc::time_t;
    // SAFETY: zeroed tm is a valid out-buffer for localtime_r.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return secs.to_string();
    }
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_stamps_match_the_float_rate() {
        let rate = 0.3846153846; // a 2.6 GHz TSC
        let m = StampMapper {
            tsc0: 1 << 40,
            ns0: 5_000_000_000,
            rate,
            scaled_rate: (rate * (1u64 << RATE_SHIFT) as f64) as i64,
            tsc: true,
        };
        for d in [0i64, 1, -1000, 2_600_000_000, 2_600_000_000_000, -(1 << 34)] {
            let stamp = (1u64 << 40).wrapping_add(d as u64);
            let float = (5e9 + d as f64 * rate).max(0.0) as u64;
            assert!(
                m.ns(stamp).abs_diff(float) <= 1,
                "{d}: {} vs {float}",
                m.ns(stamp)
            );
        }
        assert_eq!(m.ns(0), 0, "before the clock's zero: clamped");
    }

    #[test]
    fn monotonic_clock_advances() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(monotonic_ns() >= a + 2_000_000);
    }

    #[test]
    fn successive_mappers_join_so_later_stamps_never_map_earlier() {
        let clock = ProbeClock::new();
        clock.start();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut previous = 0;
        for _ in 0..200 {
            let mapper = clock.mapper();
            // Stamped after this mapper was made: mapped by it (as a ring drained
            // now) or by the next one (drained at the next take).
            let (a, b) = (clock.now(), clock.now());
            let next = clock.mapper();
            let (ma, mb) = (mapper.ns(a), next.ns(b));
            assert!(ma <= mb && previous <= ma, "{previous} {ma} {mb}");
            previous = mb;
        }
    }

    #[test]
    fn stamp_has_date_and_time_fields() {
        let s = file_stamp(wall_ns());
        assert_eq!(s.len(), 15, "{s}");
        assert_eq!(&s[8..9], "-");
        assert!(s.starts_with("20"), "{s}");
    }
}

/// The clock of the in-application probes (traced calls, user events): the TSC when
/// the kernel itself trusts it as its clocksource (invariant and synchronised
/// across CPUs), a few ns instead of clock_gettime's ~20; else CLOCK_MONOTONIC ns.
/// `start` anchors it with a (TSC, CLOCK_MONOTONIC) pair so the writer can map
/// stamps back to the recording's nanoseconds with a [`StampMapper`].
pub struct ProbeClock {
    use_tsc: AtomicBool,
    anchor_tsc: AtomicU64,
    anchor_ns: AtomicU64,
    /// (TSC, ns) where the last mapper handed out meets the next one.
    joint: Mutex<Option<(u64, u64)>>,
}

impl ProbeClock {
    pub const fn new() -> ProbeClock {
        ProbeClock {
            use_tsc: AtomicBool::new(false),
            anchor_tsc: AtomicU64::new(0),
            anchor_ns: AtomicU64::new(0),
            joint: Mutex::new(None),
        }
    }

    /// Chooses the source and anchors it; called when a session begins.
    pub fn start(&self) {
        self.use_tsc.store(tsc_is_trusted(), Ordering::Relaxed);
        let (tsc, ns) = clock_pair();
        self.anchor_tsc.store(tsc, Ordering::Relaxed);
        self.anchor_ns.store(ns, Ordering::Relaxed);
        *self.joint.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Chooses the source without moving the anchor.
    pub fn choose_source(&self) {
        self.use_tsc.store(tsc_is_trusted(), Ordering::Relaxed);
    }

    #[inline]
    pub fn now(&self) -> u64 {
        if self.use_tsc.load(Ordering::Relaxed) {
            read_tsc()
        } else {
            monotonic_ns()
        }
    }

    pub fn uses_tsc(&self) -> bool {
        self.use_tsc.load(Ordering::Relaxed)
    }

    /// A mapper from this clock's stamps to CLOCK_MONOTONIC ns. Its rate is that of
    /// the line through the anchor and a pair read now (the TSC rate is constant,
    /// so the longer the session the finer the rate), and it starts where the
    /// previous mapper ended: successive mappers join into one continuous, rising
    /// line, so events of one thread mapped by two of them (drained on both sides
    /// of a take) keep their order. Separate lines would disagree by up to the
    /// rate's error times the session's age, easily more than two events apart.
    pub fn mapper(&self) -> StampMapper {
        let tsc0 = self.anchor_tsc.load(Ordering::Relaxed);
        let ns0 = self.anchor_ns.load(Ordering::Relaxed);
        let (tsc1, ns1) = clock_pair();
        let rate = if tsc1 > tsc0 && ns1 > ns0 {
            (ns1 - ns0) as f64 / (tsc1 - tsc0) as f64
        } else {
            1.0
        };
        let mut joint = self.joint.lock().unwrap_or_else(|e| e.into_inner());
        let (tsc0, ns0) = joint.unwrap_or((tsc0, ns0));
        let mapper = StampMapper {
            tsc0,
            ns0,
            rate,
            scaled_rate: (rate * (1u64 << RATE_SHIFT) as f64) as i64,
            tsc: self.uses_tsc(),
        };
        if tsc1 > tsc0 {
            *joint = Some((tsc1, mapper.ns(tsc1)));
        }
        mapper
    }
}

impl Default for ProbeClock {
    fn default() -> Self {
        Self::new()
    }
}

/// Maps [`ProbeClock`] stamps to CLOCK_MONOTONIC ns (the identity when the clock
/// is not the TSC).
#[derive(Debug, Clone, Copy)]
pub struct StampMapper {
    tsc0: u64,
    ns0: u64,
    /// ns per TSC tick.
    rate: f64,
    /// `rate` in fixed point (RATE_SHIFT fraction bits): the writer maps tens of
    /// millions of stamps a second, and integer multiplies cost it a third of
    /// what a float round trip (with `as u64`'s saturation) did.
    scaled_rate: i64,
    tsc: bool,
}

/// Fraction bits of [`StampMapper`]'s fixed-point rate: a relative error of
/// 1e-12 at most, a microsecond after 10^6 s.
const RATE_SHIFT: u32 = 40;

impl StampMapper {
    pub fn ns(&self, stamp: u64) -> u64 {
        if !self.tsc {
            return stamp;
        }
        let delta = stamp.wrapping_sub(self.tsc0) as i64 as i128 * self.scaled_rate as i128;
        let ns = self.ns0 as i128 + (delta >> RATE_SHIFT);
        ns.clamp(0, u64::MAX as i128) as u64
    }

    /// A duration in stamps as ns.
    pub fn duration_ns(&self, stamps: u64) -> u64 {
        if self.tsc {
            (stamps as f64 * self.rate) as u64
        } else {
            stamps
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn tsc_is_trusted() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_is_trusted() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tsc() -> u64 {
    monotonic_ns()
}

/// A TSC value and the CLOCK_MONOTONIC ns of the same moment (the midpoint of two
/// clock reads around it). Of a few tries, the one with the two reads closest
/// together: a thread preempted between them would otherwise put the anchor
/// (and every stamp mapped from it) off by up to half the time it lost.
fn clock_pair() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..4 {
        let before = monotonic_ns();
        let tsc = read_tsc();
        let after = monotonic_ns();
        let width = after.saturating_sub(before);
        if width < best.2 {
            best = (tsc, before + width / 2, width);
        }
    }
    (best.0, best.1)
}
