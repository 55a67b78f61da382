//! Which samples an analysis looks at: `--mode`, `--thread`, `--state`, the time
//! window and virtual threads' grouping, as arguments and as the analysis
//! library's `Selection`.

use anyhow::Result;
use clap::Args;
use jscope_analysis::{parse_state, Mode, RequestFilter, Selection, ThreadMatcher};

use crate::duration::{parse_duration, parse_since, parse_time, TimeArg};

/// Which samples an analysis looks at.
#[derive(Debug, Args, Clone, Default)]
pub struct SelectArgs {
    /// Sample source: cpu, wall or snapshot (default: the first the recording has);
    /// `jscope flame` also takes alloc (allocation samples weighted by estimated
    /// bytes) and lock (stacks weighted by lock contention time).
    #[arg(short, long)]
    pub mode: Option<String>,
    /// Threads whose name contains this, or matches it as a glob when it has * or ?.
    #[arg(short, long, value_name = "NAME")]
    pub thread: Option<String>,
    /// Thread states to keep, comma-separated: runnable, blocked, waiting,
    /// timed_waiting, sleeping, parked, native, terminated, new, unknown.
    #[arg(short, long, value_name = "STATES", value_delimiter = ',')]
    pub state: Vec<String>,
    /// Only samples at or after this time: seconds from the start (12.5; of the
    /// earliest JVM when several are merged), an RFC 3339 time
    /// (2026-11-24T03:00:00Z) or that long ago (-10m).
    #[arg(long = "from", value_name = "TIME", value_parser = parse_time, allow_hyphen_values = true)]
    pub from_at: Option<TimeArg>,
    /// Only samples before this time, given as for --from.
    #[arg(long = "to", value_name = "TIME", value_parser = parse_time, allow_hyphen_values = true)]
    pub to_at: Option<TimeArg>,
    /// Only samples of the last DURATION (10m, 1h, 1h30m, 2d): --from -DURATION.
    #[arg(long, value_name = "DURATION", value_parser = parse_since, conflicts_with = "from_at")]
    pub since: Option<u64>,
    /// A virtual thread's samples (JDK 21+) count for the virtual thread
    /// (`virtual`, the default) or for the carrier thread it ran on (`carrier`).
    #[arg(long = "group-by", value_name = "THREADS", value_parser = ["virtual", "carrier"])]
    pub group_by: Option<String>,
    /// Only samples taken while requests (served HTTP or RMI calls, spans) at
    /// least this long were served: 50ms, 1s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub latency: Option<std::time::Duration>,
    /// Only samples of one request, in every JVM it touched: its trace id (as
    /// `jscope requests` lists it) or its id in the recording.
    #[arg(long, value_name = "ID")]
    pub request: Option<String>,
    /// --from as seconds from the start, once resolved (`source::resolve_window`).
    #[arg(skip)]
    pub from: Option<f64>,
    /// --to as seconds from the start, once resolved.
    #[arg(skip)]
    pub to: Option<f64>,
}

impl SelectArgs {
    /// Turns the bounds into seconds from the start; `origin_ns` (the start's
    /// epoch ns) is asked only when a bound is a wall-clock time.
    pub fn resolve(
        &mut self,
        origin_ns: impl FnOnce() -> anyhow::Result<u64>,
    ) -> anyhow::Result<()> {
        let origin = if self.has_wall_time() {
            origin_ns()?
        } else {
            0
        };
        let seconds = |bound: Option<TimeArg>| {
            bound.map(|b| match b {
                TimeArg::FromStart(s) => s,
                TimeArg::Epoch(ns) => ns.saturating_sub(origin) as f64 / 1e9,
            })
        };
        self.from = seconds(self.since.map(TimeArg::Epoch).or(self.from_at));
        self.to = seconds(self.to_at);
        Ok(())
    }

    /// Whether a bound is a wall-clock time (which needs the source's start).
    pub fn has_wall_time(&self) -> bool {
        self.since.is_some()
            || matches!(self.from_at, Some(TimeArg::Epoch(_)))
            || matches!(self.to_at, Some(TimeArg::Epoch(_)))
    }
}

pub fn selection(args: &SelectArgs) -> Result<Selection> {
    let selection = Selection {
        mode: args.mode.as_deref().map(str::parse::<Mode>).transpose()?,
        thread: args.thread.as_deref().map(ThreadMatcher::new),
        states: args
            .state
            .iter()
            .map(|s| parse_state(s))
            .collect::<Result<_, _>>()?,
        from_s: args.from,
        to_s: args.to,
        group: args
            .group_by
            .as_deref()
            .map(str::parse)
            .transpose()?
            .unwrap_or_default(),
        requests: requests(args),
    };
    selection.validate()?;
    Ok(selection)
}

/// `--latency` and `--request`: which requests' samples (or events) to keep.
pub fn requests(args: &SelectArgs) -> RequestFilter {
    RequestFilter {
        min_latency_ns: args.latency.map(|d| d.as_nanos() as u64),
        request: args.request.clone(),
    }
}
