//! Finding the target's attach socket, and starting its attach listener when absent.
//!
//! HotSpot starts the listener lazily: on SIGQUIT it looks for a trigger file
//! `.attach_pid<nspid>` in its working directory or in /tmp, and if that file is owned
//! by its own user (or root) it creates the socket `/tmp/.java_pid<nspid>` instead of
//! printing a thread dump.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::AttachError;
use crate::process::TargetProcess;

const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// Returns the path of a socket the target's attach listener is accepting on,
/// starting the listener first if needed.
pub(crate) fn ensure_listener(
    target: &TargetProcess,
    timeout: Duration,
) -> Result<PathBuf, AttachError> {
    let socket = target.in_root(&format!("tmp/.java_pid{}", target.nspid));
    match probe(target, &socket)? {
        SocketState::Listening => {}
        SocketState::Absent => start_listener(target, &socket, timeout)?,
        SocketState::Stale => {
            // Left by an earlier process with the same pid (a restarted container's
            // pid 1, say); nobody listens on it, and it would fool the wait below.
            remove_if_present(&socket).map_err(|e| io_error(target, "removing", &socket, e))?;
            start_listener(target, &socket, timeout)?;
        }
    }
    check_owner(target, &socket)?;
    Ok(socket)
}

enum SocketState {
    Listening,
    Absent,
    Stale,
}

/// Looks at the socket file and, when there is one, connects once to see whether
/// anything listens; HotSpot drops a connection that closes without a request.
fn probe(target: &TargetProcess, socket: &Path) -> Result<SocketState, AttachError> {
    if !is_socket(target, socket)? {
        return Ok(SocketState::Absent);
    }
    match UnixStream::connect(socket) {
        Ok(_) => Ok(SocketState::Listening),
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Ok(SocketState::Stale),
        Err(e) => Err(io_error(target, "connecting to", socket, e)),
    }
}

fn is_socket(target: &TargetProcess, path: &Path) -> Result<bool, AttachError> {
    match fs::metadata(path) {
        Ok(meta) => Ok(meta.file_type().is_socket()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error(target, "looking for", path, e)),
    }
}

fn start_listener(
    target: &TargetProcess,
    socket: &Path,
    timeout: Duration,
) -> Result<(), AttachError> {
    if !target.catches_sigquit {
        return Err(AttachError::NoSigquitHandler { pid: target.pid });
    }
    if !crate::perfdata::may_attach(target) {
        return Err(AttachError::AttachDisabled { pid: target.pid });
    }
    let _trigger = TriggerFile::create(target)?;
    send_sigquit(target)?;
    wait_for_socket(target, socket, timeout)
}

fn send_sigquit(target: &TargetProcess) -> Result<(), AttachError> {
    // The pid was range-checked by TargetProcess::inspect, so the cast is lossless
    // and positive: kill() cannot be aimed at a process group.
    let rc = unsafe { libc::kill(target.pid as libc::pid_t, libc::SIGQUIT) };
    if rc == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(AttachError::io(target.pid, "sending SIGQUIT", e))
    }
}

/// Polls with growing pauses: the listener usually appears within milliseconds,
/// but a busy VM (say, in a long GC) may take seconds to reach its signal handler.
fn wait_for_socket(
    target: &TargetProcess,
    socket: &Path,
    timeout: Duration,
) -> Result<(), AttachError> {
    let start = Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        if is_socket(target, socket)? {
            return Ok(());
        }
        if !target.is_alive() {
            return Err(AttachError::ProcessExited { pid: target.pid });
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(AttachError::Timeout {
                pid: target.pid,
                waited: timeout,
            });
        }
        thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// Refuses a socket that does not belong to the target's user: anyone who can write
/// the target's /tmp could otherwise stand in for the JVM.
fn check_owner(target: &TargetProcess, socket: &Path) -> Result<(), AttachError> {
    let owner = fs::metadata(socket)
        .map_err(|e| io_error(target, "inspecting", socket, e))?
        .uid();
    if owner == target.euid {
        return Ok(());
    }
    Err(AttachError::SocketOwnerMismatch {
        pid: target.pid,
        socket: socket.to_path_buf(),
        owner,
        expected: target.euid,
    })
}

/// The `.attach_pid<nspid>` file, removed again when dropped whatever the outcome.
struct TriggerFile(PathBuf);

impl TriggerFile {
    /// Tries the target's working directory first, as HotSpot does, then its /tmp.
    fn create(target: &TargetProcess) -> Result<Self, AttachError> {
        let name = format!(".attach_pid{}", target.nspid);
        let in_cwd = target.in_cwd(&name);
        if create_file(&in_cwd).is_ok() {
            return Ok(TriggerFile(in_cwd));
        }
        let in_tmp = target.in_root(&format!("tmp/{name}"));
        match create_file(&in_tmp) {
            Ok(()) => Ok(TriggerFile(in_tmp)),
            Err(e) => Err(io_error(target, "creating trigger file", &in_tmp, e)),
        }
    }
}

impl Drop for TriggerFile {
    fn drop(&mut self) {
        // Nothing useful to do if it is already gone.
        let _ = remove_if_present(&self.0);
    }
}

fn create_file(path: &Path) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map(drop)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn io_error(target: &TargetProcess, doing: &str, path: &Path, e: io::Error) -> AttachError {
    AttachError::io(target.pid, format!("{doing} {}", path.display()), e)
}
