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
    fn seconds_are_non_negative_numbers() {
        assert_eq!(parse_seconds("12.5"), Ok(12.5));
        assert_eq!(parse_seconds("3s"), Ok(3.0));
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
    }
}
