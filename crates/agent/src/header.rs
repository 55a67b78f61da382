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
        // `clockoffset=` simulates a machine whose clock is off (crate::remote).
        start_wall_ns: start
            .wall_ns
            .saturating_add_signed(options.remote.clock_offset_ns),
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
        ("addresses", host_addresses().join(" ")),
    ];
    let mut extra: Vec<(String, String)> =
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if !options.service.is_empty() {
        extra.push(("service".to_string(), options.service.clone()));
    }
    if !options.labels.is_empty() {
        let text = crate::options::labels_text(&options.labels);
        extra.push(("labels".to_string(), text));
    }
    if let Some(c) = &options.collector {
        extra.push(("collector".to_string(), c.addr()));
    }
    extra.extend(crate::trace::header_extra(&options.trace));
    extra.extend(crate::events::header_extra(&options.events));
    extra.extend(crate::interpose::header_extra(&options.native));
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

/// The machine's non-loopback IP addresses, from the interfaces (no name lookup,
/// which could block): with the host name, they say where the JVM runs.
pub fn host_addresses() -> Vec<String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the list is freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cursor = list;
    // SAFETY: getifaddrs returned a valid linked list, alive until freeifaddrs.
    while let Some(entry) = unsafe { cursor.as_ref() } {
        // SAFETY: an entry's address is null or as large as its family says.
        if let Some(ip) = unsafe { ip_of(entry.ifa_addr) } {
            if !ip.is_loopback() && !out.contains(&ip.to_string()) {
                out.push(ip.to_string());
            }
        }
        cursor = entry.ifa_next;
    }
    // SAFETY: the list came from getifaddrs and is not used after this.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The IP address in a socket address, for the IPv4 and IPv6 families.
///
/// # Safety
/// `addr` is null or points at a socket address as large as its family says.
unsafe fn ip_of(addr: *const libc::sockaddr) -> Option<std::net::IpAddr> {
    let family = i32::from(addr.as_ref()?.sa_family);
    match family {
        libc::AF_INET => {
            let v4 = &*(addr as *const libc::sockaddr_in);
            Some(std::net::Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)).into())
        }
        libc::AF_INET6 => {
            let v6 = &*(addr as *const libc::sockaddr_in6);
            Some(std::net::Ipv6Addr::from(v6.sin6_addr.s6_addr).into())
        }
        _ => None,
    }
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
    fn addresses_include_the_one_used_to_reach_other_machines() {
        let addresses = host_addresses();
        for a in &addresses {
            let ip: std::net::IpAddr = a.parse().unwrap();
            assert!(!ip.is_loopback(), "{a}");
        }
        // Connecting a UDP socket sends nothing; it only picks the route's source.
        let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        if socket.connect("198.51.100.1:9").is_ok() {
            let local = socket.local_addr().unwrap().ip().to_string();
            assert!(addresses.contains(&local), "{local} in {addresses:?}");
        }
    }

    #[test]
    fn host_name_is_the_kernels() {
        let expected = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(host_name(), expected.trim());
    }
}
