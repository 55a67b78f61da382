//! What we learn about the target process from /proc before touching it.

use std::fs;
use std::io;
use std::path::PathBuf;

use crate::error::AttachError;

/// The facts about a target process that attaching depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetProcess {
    /// The pid as seen from our namespace; used for /proc and signals.
    pub pid: u32,
    /// The pid in the target's own (innermost) pid namespace; HotSpot names its
    /// socket and trigger file after this one.
    pub nspid: u32,
    /// Effective uid, the owner HotSpot gives its attach socket.
    pub euid: u32,
    /// Whether a SIGQUIT handler is installed; without one SIGQUIT kills the process.
    pub catches_sigquit: bool,
    /// Zombie or dead: /proc still lists it but nothing will answer.
    pub defunct: bool,
}

impl TargetProcess {
    /// Reads /proc/PID/status.
    pub fn inspect(pid: u32) -> Result<Self, AttachError> {
        if pid == 0 || pid > i32::MAX as u32 {
            // kill(2) treats 0 and negative pids as process groups; never pass them on.
            return Err(AttachError::NoSuchProcess { pid });
        }
        let path = format!("/proc/{pid}/status");
        let text = fs::read_to_string(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => AttachError::NoSuchProcess { pid },
            _ => AttachError::io(pid, format!("reading {path}"), e),
        })?;
        let target = Self::parse_status(pid, &text)?;
        if target.defunct {
            return Err(AttachError::NoSuchProcess { pid });
        }
        Ok(target)
    }

    /// Whether the process still exists and is not a zombie.
    pub fn is_alive(&self) -> bool {
        Self::inspect(self.pid).is_ok_and(|now| !now.defunct)
    }

    /// A path inside the target's mount namespace, e.g. `tmp/.java_pid1`.
    pub fn in_root(&self, relative: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root/{relative}", self.pid))
    }

    /// A path inside the target's working directory.
    pub fn in_cwd(&self, relative: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/cwd/{relative}", self.pid))
    }

    fn parse_status(pid: u32, text: &str) -> Result<Self, AttachError> {
        let field = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        let bad =
            |what: &str| AttachError::Protocol(format!("unreadable {what} in /proc/{pid}/status"));
        // Kernels before 4.1 have no NSpid line; then there is only one namespace to see.
        let nspid = match field("NSpid") {
            Some(ids) => last_number(ids).ok_or_else(|| bad("NSpid"))?,
            None => pid,
        };
        let euid = field("Uid")
            .and_then(|ids| ids.split_whitespace().nth(1)?.parse().ok())
            .ok_or_else(|| bad("Uid"))?;
        let caught = field("SigCgt")
            .and_then(|mask| u64::from_str_radix(mask, 16).ok())
            .ok_or_else(|| bad("SigCgt"))?;
        let state = field("State").unwrap_or("");
        Ok(TargetProcess {
            pid,
            nspid,
            euid,
            catches_sigquit: caught & (1 << (libc::SIGQUIT - 1)) != 0,
            defunct: state.starts_with('Z') || state.starts_with('X'),
        })
    }
}

fn last_number(list: &str) -> Option<u32> {
    list.split_whitespace().last()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const JVM_IN_CONTAINER: &str = "Name:\tjava\nState:\tS (sleeping)\nPid:\t4242\n\
        NSpid:\t4242\t7\nUid:\t1000\t1001\t1000\t1000\nSigCgt:\t0000000181005ccf\n";

    #[test]
    fn reads_innermost_pid_effective_uid_and_sigquit_handler() {
        let target = TargetProcess::parse_status(4242, JVM_IN_CONTAINER).unwrap();
        assert_eq!(target.nspid, 7);
        assert_eq!(target.euid, 1001);
        assert!(target.catches_sigquit);
        assert!(!target.defunct);
    }

    #[test]
    fn without_nspid_line_the_host_pid_is_used() {
        let text = "State:\tR (running)\nUid:\t0\t0\t0\t0\nSigCgt:\t0000000000000000\n";
        let target = TargetProcess::parse_status(99, text).unwrap();
        assert_eq!(target.nspid, 99);
        assert!(!target.catches_sigquit);
    }

    #[test]
    fn zombies_are_defunct() {
        let text = "State:\tZ (zombie)\nNSpid:\t5\nUid:\t0\t0\t0\t0\nSigCgt:\t0\n";
        assert!(TargetProcess::parse_status(5, text).unwrap().defunct);
    }

    #[test]
    fn pid_zero_is_never_a_target() {
        assert!(matches!(
            TargetProcess::inspect(0),
            Err(AttachError::NoSuchProcess { pid: 0 })
        ));
    }
}
