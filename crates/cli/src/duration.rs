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
    jscope_store::when::span_ns(text).ok_or(())
}

pub use jscope_store::when::parse_rfc3339;

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
