//! Moments as users type them, shared by the collector's API (`since=`, `from=`,
//! `to=`) and the CLI (`--since`, `--from`, `--to`): RFC 3339 times and spans ago.

/// `1h30m`, `10m`, `90s`, `2d`, `500ms`: a sum of numbers with units, in ns.
pub fn span_ns(text: &str) -> Option<u64> {
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let value: f64 = rest[..digits].parse().ok()?;
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
            _ => return None,
        };
        total += value * seconds;
        rest = &after[unit_len..];
    }
    if !total.is_finite() || total < 0.0 {
        return None;
    }
    Some((total * 1e9) as u64)
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

/// An epoch-ns window bound in seconds since a recording's start (`start_ns`).
pub fn seconds_since(start_ns: u64, ns: Option<u64>) -> Option<f64> {
    // Integers first: epoch ns as f64 lose a few hundred ns.
    ns.map(|n| n.saturating_sub(start_ns) as f64 / 1e9)
}

/// Now, as epoch ns.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A window bound of the API as epoch ns: epoch milliseconds (digits only, as the
/// UI has always sent them), an RFC 3339 time, or a span ago (`10m`, `-1h30m`).
pub fn moment_ns(text: &str, now_ns: u64) -> Result<u64, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<u64>()
            .map(|ms| ms.saturating_mul(1_000_000))
            .map_err(|_| format!("bad time `{text}`"));
    }
    let span = text.strip_prefix('-').unwrap_or(text);
    if let Some(ns) = span_ns(span) {
        return Ok(now_ns.saturating_sub(ns));
    }
    parse_rfc3339(text).map_err(|_| {
        format!("bad time `{text}` (expected epoch milliseconds, an RFC 3339 time like 2026-11-24T03:00:00Z, or a span ago like 10m or -1h30m)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn api_moments_are_epoch_ms_times_or_spans_ago() {
        let now = 10_000 * 1_000_000_000;
        assert_eq!(moment_ns("1500", now), Ok(1_500_000_000));
        assert_eq!(moment_ns("10m", now), Ok(now - 600_000_000_000));
        assert_eq!(moment_ns("-1h30m", now), Ok(now - 5_400_000_000_000));
        assert_eq!(
            moment_ns("2026-11-24T03:00:00Z", now),
            Ok(1_795_489_200 * 1_000_000_000)
        );
        for bad in ["soon", "-", "10x", ""] {
            assert!(moment_ns(bad, now).is_err(), "{bad}");
        }
        assert_eq!(span_ns("1h30m"), Some(5_400_000_000_000));
        assert_eq!(span_ns("500ms"), Some(500_000_000));
        assert_eq!(span_ns("10"), None, "a unit is needed");
    }
}
