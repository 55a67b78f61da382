//! The options of the native hooks: `nativemem[=BYTES]` and
//! `nativelock[=NS]`. Pure code, unit-tested.

/// Default mean bytes between native allocation samples.
pub const DEFAULT_NATIVEMEM: u64 = 512 << 10;
/// Default mean nanoseconds of lock waiting between native lock samples.
pub const DEFAULT_NATIVELOCK_NS: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NativeOptions {
    /// Mean bytes allocated between two native allocation samples; None: off,
    /// 0: every call.
    pub mem: Option<u64>,
    /// Mean nanoseconds waited between two native lock samples; None: off,
    /// 0: every wait.
    pub lock: Option<u64>,
}

impl NativeOptions {
    /// True for the option keys this module owns.
    pub fn owns(key: &str) -> bool {
        matches!(key, "nativemem" | "nativelock")
    }

    /// Whether any native hook is asked for.
    pub fn any(&self) -> bool {
        self.mem.is_some() || self.lock.is_some()
    }

    /// Sets `key` (one this module owns) from its value, if any.
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        match key {
            "nativemem" => {
                self.mem = Some(match value {
                    None => DEFAULT_NATIVEMEM,
                    Some(v) => parse_bytes(v).ok_or_else(|| {
                        format!("bad size `{v}` for `nativemem` (expected bytes, e.g. 512k, 1m, or 0 for every call)")
                    })?,
                })
            }
            _ => {
                self.lock = Some(match value {
                    None => DEFAULT_NATIVELOCK_NS,
                    Some(v) => parse_ns(v).ok_or_else(|| {
                        format!("bad duration `{v}` for `nativelock` (expected nanoseconds, e.g. 10000, 10us, 1ms, or 0 for every wait)")
                    })?,
                })
            }
        }
        Ok(())
    }

    /// The header's keys: `nativemem.interval` (bytes), `nativelock.interval` (ns).
    pub fn header_extra(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(bytes) = self.mem {
            out.push(("nativemem.interval".to_string(), bytes.to_string()));
        }
        if let Some(ns) = self.lock {
            out.push(("nativelock.interval".to_string(), ns.to_string()));
        }
        out
    }
}

/// `512k`, `1m`, `2g` (powers of 1024), `4096`.
fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let (digits, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v.as_str(), ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match unit.trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// `10000` (ns), `10us`, `1ms`, `1s`.
fn parse_ns(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let (digits, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v.as_str(), "ns"),
    };
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_keys_take_the_defaults_and_values_their_units() {
        let mut o = NativeOptions::default();
        assert!(!o.any());
        o.set("nativemem", None).unwrap();
        o.set("nativelock", None).unwrap();
        assert_eq!(o.mem, Some(512 * 1024));
        assert_eq!(o.lock, Some(10_000));
        o.set("nativemem", Some("0")).unwrap();
        o.set("nativelock", Some("2ms")).unwrap();
        assert_eq!((o.mem, o.lock), (Some(0), Some(2_000_000)));
        o.set("nativemem", Some("1m")).unwrap();
        o.set("nativelock", Some("500")).unwrap();
        assert_eq!((o.mem, o.lock), (Some(1 << 20), Some(500)));
        assert_eq!(
            o.header_extra(),
            vec![
                ("nativemem.interval".to_string(), "1048576".to_string()),
                ("nativelock.interval".to_string(), "500".to_string())
            ]
        );
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        let mut o = NativeOptions::default();
        let e = o.set("nativemem", Some("lots")).unwrap_err();
        assert!(e.contains("nativemem") && !e.contains('\n'), "{e}");
        assert!(o.set("nativelock", Some("5 minutes")).is_err());
        assert!(o.set("nativemem", Some("99999999999999g")).is_err());
        assert_eq!(o, NativeOptions::default());
    }
}
