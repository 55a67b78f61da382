//! Whether a recording's trace holds every event: one line for the commands that
//! read traces to print when it does not.

use jscope_format::Recording;

/// A plain line saying the trace is incomplete (`trace.events_dropped` > 0):
/// how many events were lost and how to avoid it; None for complete traces and
/// recordings without tracing.
pub fn incomplete_note(rec: &Recording) -> Option<String> {
    let dropped = *rec.counters.get("trace.events_dropped")?;
    if dropped == 0 {
        return None;
    }
    let how = match rec.header.extra("trace.overflow") {
        // Waiting is given up only when tracing stops or the writer stalls.
        Some("wait") => {
            "the writer stalled, or tracing stopped while threads still had events waiting"
        }
        // `drop`, or an agent from before waiting, which always dropped.
        _ => {
            "record with the agent option traceoverflow=wait (the default) to make a thread wait for the writer instead"
        }
    };
    Some(format!(
        "trace incomplete: {dropped} events dropped because a thread's trace buffer was full ({how})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trace_with_drops_gets_a_line_naming_the_option() {
        let mut rec = Recording::default();
        assert_eq!(incomplete_note(&rec), None, "no tracing");
        rec.counters.insert("trace.events_dropped".into(), 0);
        assert_eq!(incomplete_note(&rec), None, "complete");
        rec.counters.insert("trace.events_dropped".into(), 1234);
        rec.header
            .extra
            .push(("trace.overflow".into(), "drop".into()));
        let line = incomplete_note(&rec).unwrap();
        assert!(
            line.starts_with("trace incomplete: 1234 events dropped")
                && line.contains("traceoverflow=wait")
                && !line.contains('\n'),
            "{line}"
        );
    }
}
