//! Durations and moments as users type them.

use std::time::Duration;

/// `10ms`, `500us`, `2s`, `1m`, `100000ns`, or fractional `1.5s`; a bare number
/// is milliseconds, as the agent reads it.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad_duration(text))?;
    let seconds_per_unit = match unit {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" | "" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        _ => return Err(bad_duration(text)),
    };
    Duration::try_from_secs_f64(value * seconds_per_unit).map_err(|_| bad_duration(text))
}

fn bad_duration(text: &str) -> String {
    format!("bad duration `{text}` (expected e.g. 10ms, 500us, 2s, 1m)")
}

/// Seconds from the start of a recording, e.g. `12.5`.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().trim_end_matches('s').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "bad time `{text}` (expected seconds from the start, e.g. 12.5)"
        )),
    }
}

/// A window bound as `--from`/`--to` take it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeArg {
    /// A bare number: seconds from the (earliest selected) JVM's start.
    FromStart(f64),
    /// A wall-clock time (RFC 3339, or `-10m`: ten minutes ago), epoch ns.
    Epoch(u64),
}

/// `12.5` (seconds from the start), `2026-11-24T03:00:00Z` (RFC 3339) or `-10m`
/// (that long before now; units s, m, h, d, ms).
pub fn parse_time(text: &str) -> Result<TimeArg, String> {
    let text = text.trim();
    if let Some(span) = text.strip_prefix('-') {
        return ago(span)
            .map(TimeArg::Epoch)
            .map_err(|_| format!("bad time `{text}` (expected e.g. -10m, -1h30m: that long ago)"));
    }
    if text.contains(['T', 't', ' ']) || text.matches('-').count() >= 2 {
        return parse_rfc3339(text).map(TimeArg::Epoch);
    }
    parse_seconds(text)
        .map(TimeArg::FromStart)
        .map_err(|_| format!("bad time `{text}` (expected seconds from the start like 12.5, an RFC 3339 time like 2026-11-24T03:00:00Z, or -10m for ten minutes ago)"))
}

/// `--since 1h`: epoch ns that long before now.
pub fn parse_since(text: &str) -> Result<u64, String> {
    ago(text.trim())
        .map_err(|_| format!("bad duration `{text}` (expected e.g. 10m, 1h, 1h30m, 2d)"))
}

fn ago(span: &str) -> Result<u64, ()> {
    let ns = parse_span(span)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| ())?
        .as_nanos() as u64;
    Ok(now.saturating_sub(ns))
}

/// `1h30m`, `10m`, `90s`, `2d`, `500ms`: a sum of numbers with units, in ns.
fn parse_span(text: &str) -> Result<u64, ()> {
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return Err(());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or(())?;
        let value: f64 = rest[..digits].parse().map_err(|_| ())?;
        let after = &rest[digits..];
        let unit_len = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let seconds = match &after[..unit_len] {
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(()),
        };
        total += value * seconds;
        rest = &after[unit_len..];
    }
    if !total.is_finite() || total < 0.0 {
        return Err(());
    }
    Ok((total * 1e9) as u64)
}

/// An RFC 3339 time, `2026-11-24T03:00:00Z`, with optional fraction and a `Z` or
/// `+HH:MM`/`-HH:MM` offset, as epoch ns.
pub fn parse_rfc3339(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("bad time `{text}` (expected RFC 3339, e.g. 2026-11-24T03:00:00Z or 2026-11-24T04:00:00.5+01:00)")
    };
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Result<i64, String> {
        let part = text.get(from..from + len).ok_or_else(bad)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse().map_err(|_| bad())
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return Err(bad()),
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return Err(bad());
    }
    let mut i = 19;
    let mut frac_ns = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = &text[start..i];
        if digits.is_empty() {
            return Err(bad());
        }
        let mut padded: String = digits.chars().take(9).collect();
        while padded.len() < 9 {
            padded.push('0');
        }
        frac_ns = padded.parse().map_err(|_| bad())?;
    }
    let offset_s = match &text[i..] {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && zone.as_bytes()[3] == b':' => {
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return Err(bad()),
            };
            let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if h > 23 || m > 59 {
                return Err(bad());
            }
            sign * (h * 3600 + m * 60)
        }
        _ => return Err(bad()),
    };
    let days = days_since_epoch(year, month, day);
    let secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
    if secs < 0 {
        return Err(bad());
    }
    Ok(secs as u64 * 1_000_000_000 + frac_ns as u64)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (years counted from March,
/// so the leap day ends a year).
fn days_since_epoch(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let shifted_month = (month + 9) % 12; // March is 0
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The agent's spelling of a duration: whole nanoseconds.
pub fn agent_duration(d: Duration) -> String {
    format!("{}ns", d.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_default_to_milliseconds() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn the_agent_gets_nanoseconds() {
        assert_eq!(agent_duration(Duration::from_micros(250)), "250000ns");
    }

    #[test]
    fn rfc3339_times_are_epoch_nanoseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        // date -u -d 2026-11-24T03:00:00Z +%s
        assert_eq!(
            parse_rfc3339("2026-11-24T03:00:00Z"),
            Ok(1_795_489_200 * 1_000_000_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-24T04:00:00.25+01:00"),
            Ok(1_795_489_200 * 1_000_000_000 + 250_000_000)
        );
        assert_eq!(
            parse_rfc3339("2000-02-29T12:00:00-00:30"),
            Ok(951_827_400 * 1_000_000_000)
        );
        for bad in [
            "2026-11-24",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-24T03:00:00",
            "2026-11-24T03:00:00+1",
            "2026-11-24T03:00:00.Z",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn window_bounds_are_seconds_times_or_spans_ago() {
        assert_eq!(parse_time("12.5"), Ok(TimeArg::FromStart(12.5)));
        assert_eq!(
            parse_time("2026-11-24T03:00:00Z"),
            Ok(TimeArg::Epoch(1_795_489_200 * 1_000_000_000))
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let Ok(TimeArg::Epoch(t)) = parse_time("-1h30m") else {
            panic!("an Epoch");
        };
        // `now` was read before the parse: the span is at most a minute off it.
        let ago = now.abs_diff(t);
        assert!(ago > 5_340_000_000_000 && ago < 5_460_000_000_000, "{ago}");
        let since = parse_since("10m").unwrap();
        assert!(now.abs_diff(since) > 590_000_000_000);
        for bad in ["-10x", "-", "soon", "-1h-2m"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert!(parse_since("10").is_err(), "a unit is needed");
    }

    #[test]
    fn seconds_are_non_negative_numbers() {
        assert_eq!(parse_seconds("12.5"), Ok(12.5));
        assert_eq!(parse_seconds("3s"), Ok(3.0));
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
    }
}
