//! Whether the target JVM accepts attaching at all, read from its performance-data
//! file (`/tmp/hsperfdata_USER/NSPID`) before it is signalled.
//!
//! A JVM run with `-XX:+DisableAttachMechanism` still handles SIGQUIT, by printing a
//! thread dump on its stdout, and never starts a listener: signalling it would only
//! write into the application's output and then time out. HotSpot publishes its
//! capabilities in the string counter `sun.rt.jvmCapabilities`, whose first
//! character is `1` when attaching is supported (jcmd and jps read the same).
//!
//! The file is a prologue (magic `0xcafec0c0`, byte order, version, offsets) and a
//! list of entries, each with its name and data at offsets from the entry's start.

use std::fs;
use std::path::PathBuf;

use crate::process::TargetProcess;

const MAGIC: [u8; 4] = [0xca, 0xfe, 0xc0, 0xc0];
const CAPABILITIES: &[u8] = b"sun.rt.jvmCapabilities";
/// Prologue: magic, byte order, major, minor, accessible, used, overflow,
/// modification time, entry offset, entry count.
const PROLOGUE_LEN: usize = 32;
/// Entry header: length, name offset, vector length, type, flags, units,
/// variability, data offset.
const ENTRY_HEADER_LEN: usize = 20;

/// False when the target's performance data says it refuses attaching; true when it
/// accepts it, or when there is no such file or it cannot be read (`-XX:-UsePerfData`,
/// another layout): then only trying tells.
pub(crate) fn may_attach(target: &TargetProcess) -> bool {
    perf_file(target)
        .and_then(|path| fs::read(path).ok())
        .and_then(|bytes| attach_supported(&bytes))
        .unwrap_or(true)
}

/// `/tmp/hsperfdata_*/NSPID` in the target's mount namespace, owned by its user.
fn perf_file(target: &TargetProcess) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let tmp = target.in_root("tmp");
    let name = target.nspid.to_string();
    fs::read_dir(tmp)
        .ok()?
        .filter_map(Result::ok)
        .filter(|dir| {
            dir.file_name()
                .as_encoded_bytes()
                .starts_with(b"hsperfdata_")
        })
        .map(|dir| dir.path().join(&name))
        .find(|path| fs::metadata(path).is_ok_and(|m| m.is_file() && m.uid() == target.euid))
}

/// The first character of `sun.rt.jvmCapabilities` is `1`; None when the bytes are
/// not a performance-data file or lack the counter.
pub(crate) fn attach_supported(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < PROLOGUE_LEN || bytes[..4] != MAGIC {
        return None;
    }
    let little = bytes[4] == 1;
    let int = |at: usize| -> Option<usize> {
        let raw: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        let value = if little {
            i32::from_le_bytes(raw)
        } else {
            i32::from_be_bytes(raw)
        };
        usize::try_from(value).ok()
    };
    let (mut entry, count) = (int(24)?, int(28)?);
    for _ in 0..count {
        let length = int(entry)?;
        let name_start = entry.checked_add(int(entry + 4)?)?;
        let name = bytes.get(name_start..)?;
        let name = &name[..name.iter().position(|&b| b == 0)?];
        if name == CAPABILITIES {
            let data = entry.checked_add(int(entry + 16)?)?;
            return bytes.get(data).map(|&first| first == b'1');
        }
        if length < ENTRY_HEADER_LEN {
            return None; // a malformed entry would loop for ever
        }
        entry = entry.checked_add(length)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with one padding entry and the capabilities string, in either order.
    fn perf_data(little: bool, capabilities: &str) -> Vec<u8> {
        let int = |v: i32| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let entry = |name: &str, data: &[u8]| {
            let name_offset = ENTRY_HEADER_LEN;
            let data_offset = (name_offset + name.len() + 1).next_multiple_of(8);
            let length = data_offset + data.len().next_multiple_of(8);
            let mut e = Vec::new();
            e.extend(int(length as i32));
            e.extend(int(name_offset as i32));
            e.extend(int(data.len() as i32));
            e.extend([b'B', 0, 5, 1]);
            e.extend(int(data_offset as i32));
            e.extend(name.as_bytes());
            e.resize(data_offset, 0);
            e.extend(data);
            e.resize(length, 0);
            e
        };
        let mut out = MAGIC.to_vec();
        out.extend([u8::from(little), 2, 0, 1]);
        out.extend(int(0)); // used
        out.extend(int(0)); // overflow
        out.extend([0; 8]); // modification time
        out.extend(int(PROLOGUE_LEN as i32));
        out.extend(int(2));
        out.extend(entry("java.property.java.vm.name", b"OpenJDK\0"));
        let mut caps = capabilities.as_bytes().to_vec();
        caps.push(0);
        out.extend(entry("sun.rt.jvmCapabilities", &caps));
        out
    }

    #[test]
    fn the_first_capability_says_whether_attaching_is_supported() {
        for little in [true, false] {
            assert_eq!(
                attach_supported(&perf_data(little, "1100")),
                Some(true),
                "little endian: {little}"
            );
            assert_eq!(attach_supported(&perf_data(little, "0100")), Some(false));
        }
    }

    #[test]
    fn other_bytes_say_nothing() {
        assert_eq!(attach_supported(b""), None);
        assert_eq!(attach_supported(&[0u8; 64]), None);
        let mut truncated = perf_data(true, "1");
        truncated.truncate(60);
        assert_eq!(attach_supported(&truncated), None);
        let mut looping = perf_data(true, "1");
        looping[PROLOGUE_LEN..PROLOGUE_LEN + 4].copy_from_slice(&0i32.to_le_bytes());
        assert_eq!(attach_supported(&looping), None);
    }
}
