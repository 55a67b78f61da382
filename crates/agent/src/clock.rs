//! Time sources: CLOCK_MONOTONIC nanoseconds as the recording's ticks, plus the
//! wall-clock anchor and the `%t` stamp for file names.

/// CLOCK_MONOTONIC in nanoseconds. Async-signal-safe (clock_gettime is on the
/// POSIX list), so the signal handler stamps samples with it.
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
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
    fn monotonic_clock_advances() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(monotonic_ns() >= a + 2_000_000);
    }

    #[test]
    fn stamp_has_date_and_time_fields() {
        let s = file_stamp(wall_ns());
        assert_eq!(s.len(), 15, "{s}");
        assert_eq!(&s[8..9], "-");
        assert!(s.starts_with("20"), "{s}");
    }
}
