//! The recording header: who recorded (pid, host, command line, VM identity),
//! the clock calibration and how sampling was configured.

use jscope_format::Header;

use crate::jvm::{Jni, Jvmti};
use crate::options::Options;
use crate::signals::{CPU_SIGNAL, WALL_SIGNAL};

/// When the recording started, on both clocks.
#[derive(Debug, Clone, Copy)]
pub struct StartTime {
    pub wall_ns: u64,
    pub ticks: u64,
}

impl StartTime {
    pub fn now() -> StartTime {
        StartTime {
            ticks: crate::clock::monotonic_ns(),
            wall_ns: crate::clock::wall_ns(),
        }
    }
}

/// Builds the header from the VM's system properties and the options.
pub fn build(
    jvmti: Jvmti,
    jni: Jni,
    options: &Options,
    start: StartTime,
    file: &str,
    attached: bool,
) -> Header {
    // JVMTI knows the VM's own properties; the Java library sets the rest.
    let prop = |name: &str| {
        jvmti
            .system_property(name)
            .filter(|v| !v.is_empty())
            .or_else(|| jni.java_system_property(name))
            .unwrap_or_default()
    };
    let interval = if options.modes.signals() {
        options.interval
    } else {
        options.snap_interval
    };
    let command_line = command_line().unwrap_or_else(|| prop("sun.java.command"));
    Header {
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        host: host_name(),
        command_line,
        vm_name: prop("java.vm.name"),
        vm_vendor: prop("java.vm.vendor"),
        vm_version: prop("java.vm.version"),
        java_version: prop("java.version"),
        os: format!("{} {}", prop("os.name"), prop("os.version")),
        arch: prop("os.arch"),
        start_wall_ns: start.wall_ns,
        start_ticks: start.ticks,
        ticks_per_second: 1_000_000_000,
        modes: options.modes.label(),
        interval_ns: interval.as_nanos() as u64,
        max_depth: options.depth,
        extra: extra(options, file, attached),
    }
}

fn extra(options: &Options, file: &str, attached: bool) -> Vec<(String, String)> {
    let pairs = [
        (
            "snapshot_interval_ns",
            options.snap_interval.as_nanos().to_string(),
        ),
        ("wall_threads", options.wall_threads.to_string()),
        ("file", file.to_string()),
        (
            "started_by",
            if attached { "attach" } else { "command line" }.to_string(),
        ),
        ("cpu_signal", signal_name(CPU_SIGNAL).to_string()),
        ("wall_signal", signal_name(WALL_SIGNAL).to_string()),
        ("clock", "CLOCK_MONOTONIC".to_string()),
    ];
    let mut extra: Vec<(String, String)> =
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if let Some(c) = &options.collector {
        extra.push(("collector".to_string(), c.addr.clone()));
    }
    extra.extend(crate::trace::header_extra(&options.trace));
    extra
}

fn signal_name(signo: libc::c_int) -> &'static str {
    match signo {
        libc::SIGPROF => "SIGPROF",
        libc::SIGVTALRM => "SIGVTALRM",
        _ => "other",
    }
}

/// The process's argv joined with spaces, from /proc/self/cmdline.
pub fn command_line() -> Option<String> {
    let raw = std::fs::read("/proc/self/cmdline").ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_is_this_test_binary() {
        let cmd = command_line().unwrap();
        let exe = std::env::args().next().unwrap();
        assert!(cmd.starts_with(&exe), "{cmd}");
    }

    #[test]
    fn host_name_is_the_kernels() {
        let expected = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(host_name(), expected.trim());
    }
}
