//! A client for the HotSpot dynamic attach protocol on Linux.
//!
//! It starts the target JVM's attach listener when needed (trigger file plus
//! SIGQUIT), then sends version-1 requests over the listener's Unix socket: `jcmd`
//! diagnostic commands, `properties`, agent loading. No JDK tool is needed at run
//! time, and targets in other pid and mount namespaces (containers) are reached
//! through `/proc/PID/root`.
//!
//! ```no_run
//! use std::time::Duration;
//! let vm = jscope_attach::attach(1234, Duration::from_secs(10))?;
//! println!("{}", vm.jcmd("VM.version")?.into_result()?);
//! # Ok::<(), jscope_attach::AttachError>(())
//! ```

mod error;
mod listener;
mod perfdata;
mod process;
mod protocol;

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::AttachError;
pub use protocol::Reply;

use process::TargetProcess;

/// A JVM whose attach listener is up; each request opens a fresh connection, as the
/// listener answers one request per connection.
#[derive(Debug, Clone)]
pub struct VirtualMachine {
    pid: u32,
    socket: PathBuf,
    read_timeout: Option<Duration>,
}

/// Attaches to the JVM with host pid `pid`, waiting at most `timeout` for its
/// attach listener to start.
pub fn attach(pid: u32, timeout: Duration) -> Result<VirtualMachine, AttachError> {
    let target = TargetProcess::inspect(pid)?;
    let socket = listener::ensure_listener(&target, timeout)?;
    Ok(VirtualMachine {
        pid,
        socket,
        read_timeout: None,
    })
}

impl VirtualMachine {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The listener's socket, as reached from this process (through `/proc/PID/root`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Bounds how long a request waits for the VM's answer. None (the default) waits
    /// as long as the command runs, which a heap dump needs.
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Sends `cmd` with up to three arguments and returns the VM's reply, whatever
    /// its result code.
    pub fn execute(&self, cmd: &str, args: &[&str]) -> Result<Reply, AttachError> {
        let request = protocol::encode_request(cmd, args)?;
        let mut stream = self.connect()?;
        stream
            .write_all(&request)
            .map_err(|e| self.io_error("sending the request", e))?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .map_err(|e| self.read_error(e))?;
        Reply::parse(&answer)
    }

    /// Runs one diagnostic command line, as `jcmd PID <line>` would.
    pub fn jcmd(&self, line: &str) -> Result<Reply, AttachError> {
        self.execute("jcmd", &[line])
    }

    /// Loads a native JVMTI agent and returns its `Agent_OnAttach` return code.
    ///
    /// `path` is made absolute against this process's working directory and must
    /// name the library as seen from inside the target's mount namespace. Err when
    /// the VM could not load the library, with the VM's message.
    pub fn load_agent(&self, path: &Path, options: &str) -> Result<i32, AttachError> {
        let absolute = std::path::absolute(path)
            .map_err(|e| self.io_error(&format!("resolving {}", path.display()), e))?;
        let library = absolute.to_str().ok_or_else(|| {
            AttachError::InvalidRequest(format!("agent path {} is not UTF-8", path.display()))
        })?;
        // The second argument tells HotSpot the path is a file, not a library name
        // to look up on its library path.
        self.execute("load", &[library, "true", options])?
            .agent_return_code()
    }

    fn connect(&self) -> Result<UnixStream, AttachError> {
        let stream = UnixStream::connect(&self.socket).map_err(|e| {
            let doing = format!("connecting to {}", self.socket.display());
            self.io_error(&doing, e)
        })?;
        stream
            .set_read_timeout(self.read_timeout)
            .map_err(|e| self.io_error("setting the read timeout", e))?;
        Ok(stream)
    }

    fn read_error(&self, e: std::io::Error) -> AttachError {
        match (e.kind(), self.read_timeout) {
            (ErrorKind::WouldBlock | ErrorKind::TimedOut, Some(waited)) => {
                AttachError::ReplyTimeout {
                    pid: self.pid,
                    waited,
                }
            }
            _ => self.io_error("reading the reply", e),
        }
    }

    /// Names the likely cause when the socket vanished: the JVM exited.
    fn io_error(&self, doing: &str, e: std::io::Error) -> AttachError {
        if TargetProcess::inspect(self.pid).is_err() {
            return AttachError::NoSuchProcess { pid: self.pid };
        }
        AttachError::io(self.pid, doing, e)
    }
}
