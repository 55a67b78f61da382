//! JVMTI thread state bits, as stored in samples and snapshots, and their classes.

use std::fmt;
use std::str::FromStr;

pub const ALIVE: u32 = 0x0001;
pub const TERMINATED: u32 = 0x0002;
pub const RUNNABLE: u32 = 0x0004;
pub const WAITING_INDEFINITELY: u32 = 0x0010;
pub const WAITING_WITH_TIMEOUT: u32 = 0x0020;
pub const SLEEPING: u32 = 0x0040;
pub const WAITING: u32 = 0x0080;
pub const IN_OBJECT_WAIT: u32 = 0x0100;
pub const PARKED: u32 = 0x0200;
pub const BLOCKED_ON_MONITOR_ENTER: u32 = 0x0400;
pub const SUSPENDED: u32 = 0x10_0000;
pub const INTERRUPTED: u32 = 0x20_0000;
pub const IN_NATIVE: u32 = 0x40_0000;

/// The one word a user sees for a thread's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateClass {
    Runnable,
    Blocked,
    Waiting,
    TimedWaiting,
    Sleeping,
    Parked,
    Native,
    Terminated,
    New,
    Unknown,
}

const NAMES: [(StateClass, &str); 10] = [
    (StateClass::Runnable, "runnable"),
    (StateClass::Blocked, "blocked"),
    (StateClass::Waiting, "waiting"),
    (StateClass::TimedWaiting, "timed_waiting"),
    (StateClass::Sleeping, "sleeping"),
    (StateClass::Parked, "parked"),
    (StateClass::Native, "native"),
    (StateClass::Terminated, "terminated"),
    (StateClass::New, "new"),
    (StateClass::Unknown, "unknown"),
];

/// Classifies JVMTI state bits; 0 means the sampler did not know the state.
pub fn classify(state: u32) -> StateClass {
    if state == 0 {
        StateClass::Unknown
    } else if state & TERMINATED != 0 {
        StateClass::Terminated
    } else if state & ALIVE == 0 {
        StateClass::New
    } else if state & BLOCKED_ON_MONITOR_ENTER != 0 {
        StateClass::Blocked
    } else if state & SLEEPING != 0 {
        StateClass::Sleeping
    } else if state & PARKED != 0 {
        StateClass::Parked
    } else if state & WAITING_WITH_TIMEOUT != 0 {
        StateClass::TimedWaiting
    } else if state & WAITING != 0 {
        StateClass::Waiting
    } else if state & IN_NATIVE != 0 {
        StateClass::Native
    } else {
        StateClass::Runnable
    }
}

/// `suspended` / `interrupted` flags of a state, for display.
pub fn flags(state: u32) -> Vec<&'static str> {
    let mut v = Vec::new();
    if state & SUSPENDED != 0 {
        v.push("suspended");
    }
    if state & INTERRUPTED != 0 {
        v.push("interrupted");
    }
    v
}

impl StateClass {
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, n)| *n)
            .unwrap_or("unknown")
    }
}

impl fmt::Display for StateClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StateClass {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_ascii_lowercase().replace('-', "_");
        NAMES
            .iter()
            .find(|(_, n)| *n == lower)
            .map(|(c, _)| *c)
            .ok_or_else(|| {
                let all: Vec<&str> = NAMES.iter().map(|(_, n)| *n).collect();
                format!("unknown thread state {s:?} (one of: {})", all.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_states_jvmti_reports() {
        assert_eq!(classify(ALIVE | RUNNABLE), StateClass::Runnable);
        assert_eq!(
            classify(ALIVE | BLOCKED_ON_MONITOR_ENTER),
            StateClass::Blocked
        );
        assert_eq!(
            classify(ALIVE | WAITING | WAITING_INDEFINITELY | IN_OBJECT_WAIT),
            StateClass::Waiting
        );
        assert_eq!(
            classify(ALIVE | WAITING | WAITING_WITH_TIMEOUT | SLEEPING),
            StateClass::Sleeping
        );
        assert_eq!(
            classify(ALIVE | WAITING | WAITING_INDEFINITELY | PARKED),
            StateClass::Parked
        );
        assert_eq!(
            classify(ALIVE | WAITING | WAITING_WITH_TIMEOUT | IN_OBJECT_WAIT),
            StateClass::TimedWaiting
        );
        assert_eq!(classify(ALIVE | RUNNABLE | IN_NATIVE), StateClass::Native);
        assert_eq!(classify(TERMINATED), StateClass::Terminated);
        assert_eq!(classify(0), StateClass::Unknown);
    }

    #[test]
    fn names_parse_back() {
        for (c, n) in NAMES {
            assert_eq!(n.parse::<StateClass>().unwrap(), c);
        }
        assert!("bogus"
            .parse::<StateClass>()
            .unwrap_err()
            .contains("one of"));
    }
}
