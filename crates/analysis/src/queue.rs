//! Queueing analysis replayed from an exact trace (JPMT section 5): each request's
//! time in a queue and its service time, the queue's length over time, the arrival
//! rate, the workers' utilisation and Little's law as a check. See docs/QUEUE.md.
//!
//! The probes record calls, not arguments, so requests are matched FIFO: the
//! n-th enqueue is the n-th request a dequeue call takes. An enqueue counts at the
//! entry of its call (the element is in the queue before the call returns), a
//! dequeue at the exit of its call (the element is out before it returns); a
//! dequeue call that finds the replayed queue empty (a `poll` that timed out, a
//! `take` interrupted at shutdown) takes nothing.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use jscope_format::{MethodId, Recording, ThreadId};
use serde::Serialize;

use crate::trace::{
    fmt_ns, replay, replay_bytes, scan_bytes, Call, CallSink, TraceError, TraceOptions, THREW,
};
use crate::ThreadMatcher;

/// `java.util.concurrent` classes whose calls the built-in specs name.
const JUC: &str = "java.util.concurrent.";

/// Which calls put requests into the queue and which take them out, by
/// `pkg.Class.method` label; optionally only calls made from inside given methods
/// (the nearest traced caller), so a thread pool's queue is told from other queues.
#[derive(Debug, Clone)]
pub struct QueueSpec {
    pub name: String,
    pub enqueue: Vec<ThreadMatcher>,
    pub dequeue: Vec<ThreadMatcher>,
    pub enqueue_callers: Vec<ThreadMatcher>,
    pub dequeue_callers: Vec<ThreadMatcher>,
    /// The task's own method (e.g. its `run`): when given, a request's service
    /// ends at the exit of the first such call its worker makes after taking it,
    /// instead of at the worker's next dequeue call.
    pub task: Vec<ThreadMatcher>,
    /// The `--trace` patterns that record what this spec needs.
    pub trace_patterns: String,
}

fn globs(patterns: &[&str]) -> Vec<ThreadMatcher> {
    patterns
        .iter()
        .map(|p| ThreadMatcher::Glob(p.chars().collect()))
        .collect()
}

const QUEUE_PUT: [&str; 3] = [
    "java.util.concurrent.*Queue.offer",
    "java.util.concurrent.*Queue.put",
    "java.util.concurrent.*Queue.add",
];
const QUEUE_TAKE: [&str; 2] = [
    "java.util.concurrent.*Queue.take",
    "java.util.concurrent.*Queue.poll",
];

/// `CLASS#METHOD` (globs) as a `pkg.Class.method` label glob.
fn method_glob(side: &str) -> Option<String> {
    let (class, method) = side.trim().split_once('#')?;
    (!class.is_empty() && !method.is_empty()).then(|| format!("{class}.{method}"))
}

impl QueueSpec {
    /// Ends each service at the exit of the worker's next call of `CLASS#METHOD`
    /// (globs), the task's own method; its pattern joins the trace hint.
    pub fn with_task(mut self, pattern: &str) -> Result<QueueSpec, String> {
        let glob = method_glob(pattern).ok_or_else(|| {
            format!("bad task method `{pattern}` (expected CLASS#METHOD, e.g. com.acme.Job#run)")
        })?;
        self.task = globs(&[&glob]);
        self.trace_patterns = format!("{};{}", self.trace_patterns, pattern.trim());
        Ok(self)
    }

    /// A `ThreadPoolExecutor`'s work queue: `offer` called by `execute`, `take` or
    /// `poll` called by `getTask` (the worker asking for its next task).
    pub fn thread_pool() -> QueueSpec {
        QueueSpec {
            name: "threadpool".into(),
            enqueue: globs(&QUEUE_PUT),
            dequeue: globs(&QUEUE_TAKE),
            enqueue_callers: globs(&["java.util.concurrent.*ThreadPoolExecutor.execute"]),
            dequeue_callers: globs(&["java.util.concurrent.*ThreadPoolExecutor.getTask"]),
            task: vec![],
            trace_patterns: format!(
                "{JUC}ThreadPoolExecutor#execute;{JUC}ThreadPoolExecutor#getTask;{JUC}*BlockingQueue#offer;{JUC}*BlockingQueue#take;{JUC}*BlockingQueue#poll"
            ),
        }
    }

    /// Every `java.util.concurrent` blocking queue's put/offer/add and take/poll,
    /// whoever calls them, replayed as one FIFO.
    pub fn blocking_queue() -> QueueSpec {
        QueueSpec {
            name: "blockingqueue".into(),
            enqueue: globs(&QUEUE_PUT),
            dequeue: globs(&QUEUE_TAKE),
            enqueue_callers: vec![],
            dequeue_callers: vec![],
            task: vec![],
            trace_patterns: format!(
                "{JUC}*BlockingQueue#put;{JUC}*BlockingQueue#offer;{JUC}*BlockingQueue#take;{JUC}*BlockingQueue#poll"
            ),
        }
    }

    /// `threadpool`, `blockingqueue`, or `CLASS#ENQUEUE/CLASS#DEQUEUE` (globs with
    /// `*` and `?`; `#` separates class and method, as in `--trace`).
    pub fn parse(text: &str) -> Result<QueueSpec, String> {
        match text {
            "threadpool" => return Ok(QueueSpec::thread_pool()),
            "blockingqueue" => return Ok(QueueSpec::blocking_queue()),
            _ => {}
        }
        let bad = || {
            format!("bad queue `{text}` (expected threadpool, blockingqueue or CLASS#ENQUEUE/CLASS#DEQUEUE, e.g. com.acme.Pool#add/com.acme.Pool#get)")
        };
        let (enq, deq) = text.split_once('/').ok_or_else(bad)?;
        let label = |side: &str| method_glob(side).ok_or_else(bad);
        let (e, d) = (label(enq)?, label(deq)?);
        Ok(QueueSpec {
            name: text.into(),
            enqueue: globs(&[&e]),
            dequeue: globs(&[&d]),
            enqueue_callers: vec![],
            dequeue_callers: vec![],
            task: vec![],
            trace_patterns: format!("{};{}", enq.trim(), deq.trim()),
        })
    }
}

/// One request: times are ns since the recording's start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    /// 1-based, in order of enqueue.
    pub id: u64,
    pub enqueue_ns: u64,
    /// None when it was still queued at the end of the recording.
    pub dequeue_ns: Option<u64>,
    pub queue_ns: Option<u64>,
    /// From the dequeue to the same worker's next dequeue call (or to the end of
    /// its task call, with a task method); None when there is none.
    pub service_ns: Option<u64>,
    pub producer: String,
    pub worker: Option<String>,
    /// Queue length just after this request was added (JPMT's `#n`).
    pub length_after_enqueue: u64,
}

/// A point of the queue-length series: from `t_ns` on, `length` requests wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LengthPoint {
    pub t_ns: u64,
    pub length: u64,
}

/// The M/M/c (Erlang C) prediction from the measured rates, for comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErlangC {
    pub servers: u64,
    /// Offered load per server, λ / (c μ).
    pub rho: f64,
    /// Probability that an arrival waits.
    pub p_wait: f64,
    pub mean_queue_ns: f64,
}

/// Summary measures of a queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueSummary {
    pub queue: String,
    pub enqueued: u64,
    pub served: u64,
    pub still_queued: u64,
    /// Dequeue calls that found the replayed queue empty.
    pub empty_dequeues: u64,
    /// Threads that made dequeue calls (c), unless given.
    pub workers: u64,
    /// From the first enqueue to the last dequeue (or enqueue).
    pub window_ns: u64,
    /// Requests per second over the window.
    pub arrival_rate: f64,
    pub mean_queue_ns: f64,
    pub p50_queue_ns: Option<u64>,
    pub p90_queue_ns: Option<u64>,
    pub p99_queue_ns: Option<u64>,
    pub max_queue_ns: u64,
    pub mean_service_ns: Option<f64>,
    /// Where a service ends: the worker's next dequeue, or the end of its next
    /// call of the task method.
    pub service_end: String,
    /// Coefficients of variation (1 for exponential times).
    pub interarrival_cv: Option<f64>,
    pub service_cv: Option<f64>,
    /// Sum of service times / (workers × window).
    pub utilisation: Option<f64>,
    /// Time-average queue length over the window (L).
    pub mean_length: f64,
    pub max_length: u64,
    /// λ × W, which Little's law says equals `mean_length`.
    pub little_lambda_w: f64,
    pub erlang_c: Option<ErlangC>,
}

/// The replayed queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueReport {
    pub summary: QueueSummary,
    pub requests: Vec<Request>,
    pub length: Vec<LengthPoint>,
}

/// Why a queue could not be replayed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueueError {
    #[error("{0}")]
    Read(#[from] TraceError),
    #[error("the recording has no trace events (record with --trace '{0}')")]
    NoTrace(String),
    #[error("the recording has no calls of the queue's {side} methods; record them with: jscope record --trace '{patterns}' ...")]
    Missing {
        side: &'static str,
        patterns: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    Enqueue,
    Dequeue,
    EnqueueCaller,
    DequeueCaller,
    Task,
}

/// A matched call as the replay sink keeps it.
#[derive(Debug, Clone, Copy)]
struct QCall {
    thread: u32,
    enter_ns: u64,
    exit_ns: u64,
    role: Role,
}

struct QueueSink {
    roles: Vec<Role>,
    callers_e: bool,
    callers_d: bool,
    calls: Vec<QCall>,
}

impl CallSink for QueueSink {
    fn enter(&mut self, _thread: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        0
    }

    fn exit(&mut self, c: &Call) {
        let role = |m: u32| self.roles.get(m as usize).copied().unwrap_or(Role::Other);
        let (me, caller) = (role(c.method), role(c.caller));
        let keep = match me {
            Role::Enqueue => !self.callers_e || caller == Role::EnqueueCaller,
            Role::Dequeue => !self.callers_d || caller == Role::DequeueCaller,
            Role::Task => true,
            _ => false,
        };
        // A dequeue call that threw (interrupted take) took nothing, but it still
        // marks where the worker asked for more work.
        if keep {
            self.calls.push(QCall {
                thread: c.thread,
                enter_ns: c.enter_ns,
                exit_ns: if me == Role::Dequeue && c.flags & THREW != 0 {
                    u64::MAX
                } else {
                    c.exit_ns
                },
                role: me,
            });
        }
    }
}

fn role_of(spec: &QueueSpec, label: &str) -> Role {
    let any = |ms: &[ThreadMatcher]| ms.iter().any(|m| m.matches(label));
    if any(&spec.enqueue) {
        Role::Enqueue
    } else if any(&spec.dequeue) {
        Role::Dequeue
    } else if any(&spec.enqueue_callers) {
        Role::EnqueueCaller
    } else if any(&spec.dequeue_callers) {
        Role::DequeueCaller
    } else if any(&spec.task) {
        Role::Task
    } else {
        Role::Other
    }
}

/// Replays the queue `spec` names over a decoded recording; `workers` overrides
/// the number of servers (c), which is otherwise the number of dequeuing threads.
pub fn replay_queue(
    rec: &Recording,
    spec: &QueueSpec,
    workers: Option<u64>,
) -> Result<QueueReport, QueueError> {
    let sink = sink_for(rec, spec, !rec.traces.is_empty())?;
    let (sink, _) = replay(rec, &TraceOptions::default(), sink);
    finish(rec, spec, workers, &sink.calls)
}

/// [`replay_queue`] streamed from a recording's bytes: a first pass learns the
/// methods, the second keeps only the queue's calls (the events are never held).
/// Also returns the recording without its traces.
pub fn replay_queue_bytes(
    bytes: &[u8],
    spec: &QueueSpec,
    workers: Option<u64>,
) -> Result<(QueueReport, Recording), QueueError> {
    let mut traced = false;
    let dict = scan_bytes(bytes, |_, b| traced |= !b.events.is_empty())?;
    let sink = sink_for(&dict, spec, traced)?;
    let (sink, _, rec) = replay_bytes(bytes, &TraceOptions::default(), sink)?;
    Ok((finish(&rec, spec, workers, &sink.calls)?, rec))
}

/// The sink that keeps `spec`'s calls, or why the recording cannot have them.
fn sink_for(rec: &Recording, spec: &QueueSpec, traced: bool) -> Result<QueueSink, QueueError> {
    let roles: Vec<Role> = (0..rec.methods.len() as u32)
        .map(|id| role_of(spec, &rec.method_label(MethodId(id))))
        .collect();
    let has = |r: Role| roles.contains(&r);
    let missing = |side| QueueError::Missing {
        side,
        patterns: spec.trace_patterns.clone(),
    };
    if !traced {
        return Err(QueueError::NoTrace(spec.trace_patterns.clone()));
    }
    if !has(Role::Enqueue) || (!spec.enqueue_callers.is_empty() && !has(Role::EnqueueCaller)) {
        return Err(missing("enqueue"));
    }
    if !has(Role::Dequeue) || (!spec.dequeue_callers.is_empty() && !has(Role::DequeueCaller)) {
        return Err(missing("dequeue"));
    }
    if !spec.task.is_empty() && !has(Role::Task) {
        return Err(missing("task"));
    }
    Ok(QueueSink {
        roles,
        callers_e: !spec.enqueue_callers.is_empty(),
        callers_d: !spec.dequeue_callers.is_empty(),
        calls: vec![],
    })
}

fn finish(
    rec: &Recording,
    spec: &QueueSpec,
    workers: Option<u64>,
    calls: &[QCall],
) -> Result<QueueReport, QueueError> {
    let name = |t: u32| {
        rec.thread(ThreadId(t))
            .map_or_else(|| format!("thread-{t}"), |d| d.name.clone())
    };
    let report = fifo(calls, name, spec, workers);
    if report.summary.enqueued == 0 {
        return Err(QueueError::Missing {
            side: "enqueue",
            patterns: spec.trace_patterns.clone(),
        });
    }
    Ok(report)
}

/// The FIFO replay over the matched calls.
fn fifo(
    calls: &[QCall],
    name: impl Fn(u32) -> String,
    spec: &QueueSpec,
    workers: Option<u64>,
) -> QueueReport {
    // (time, order: enqueues first at a tie, index)
    let mut events: Vec<(u64, u8, usize)> = calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c.role {
            Role::Dequeue => Some((c.exit_ns, 1, i)),
            Role::Enqueue => Some((c.enter_ns, 0, i)),
            _ => None,
        })
        .filter(|e| e.0 != u64::MAX)
        .collect();
    events.sort_unstable();
    // Each worker's dequeue calls by entry, and its task calls, for service times.
    let mut asks: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut tasks: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for c in calls {
        match c.role {
            Role::Dequeue => asks.entry(c.thread).or_default().push(c.enter_ns),
            Role::Task => tasks
                .entry(c.thread)
                .or_default()
                .push((c.enter_ns, c.exit_ns)),
            _ => {}
        }
    }
    for v in asks.values_mut() {
        v.sort_unstable();
    }
    for v in tasks.values_mut() {
        v.sort_unstable();
    }
    let by_task = !spec.task.is_empty();
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut name_of = |t: u32| names.entry(t).or_insert_with(|| name(t)).clone();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut requests: Vec<Request> = vec![];
    let mut length = vec![];
    let mut empty = 0;
    for &(t, kind, i) in &events {
        let c = calls[i];
        if kind == 0 {
            queue.push_back(requests.len());
            requests.push(Request {
                id: requests.len() as u64 + 1,
                enqueue_ns: t,
                dequeue_ns: None,
                queue_ns: None,
                service_ns: None,
                producer: name_of(c.thread),
                worker: None,
                length_after_enqueue: queue.len() as u64,
            });
        } else if let Some(r) = queue.pop_front() {
            let next = asks[&c.thread].iter().find(|&&a| a >= t).copied();
            let end = if by_task {
                // The worker's first task call after the dequeue, before its next.
                tasks.get(&c.thread).and_then(|v| {
                    let i = v.partition_point(|&(enter, _)| enter < t);
                    v.get(i)
                        .filter(|&&(enter, _)| next.is_none_or(|n| enter < n))
                        .map(|&(_, exit)| exit)
                })
            } else {
                next
            };
            let r = &mut requests[r];
            r.dequeue_ns = Some(t);
            r.queue_ns = Some(t - r.enqueue_ns);
            r.service_ns = end.map(|n| n.saturating_sub(t));
            r.worker = Some(name_of(c.thread));
        } else {
            empty += 1;
            continue;
        }
        length.push(LengthPoint {
            t_ns: t,
            length: queue.len() as u64,
        });
    }
    let workers = workers.unwrap_or(asks.len() as u64);
    let summary = summarise(&requests, &length, workers, empty, spec);
    QueueReport {
        summary,
        requests,
        length,
    }
}

fn mean_cv(xs: &[f64]) -> (Option<f64>, Option<f64>) {
    if xs.is_empty() {
        return (None, None);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let cv = (xs.len() > 1 && mean > 0.0).then(|| var.sqrt() / mean);
    (Some(mean), cv)
}

fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

fn summarise(
    requests: &[Request],
    length: &[LengthPoint],
    workers: u64,
    empty_dequeues: u64,
    spec: &QueueSpec,
) -> QueueSummary {
    let first = requests.first().map_or(0, |r| r.enqueue_ns);
    let last = length.last().map_or(first, |p| p.t_ns);
    let window = last.saturating_sub(first);
    let secs = window as f64 / 1e9;
    let mut waits: Vec<u64> = requests.iter().filter_map(|r| r.queue_ns).collect();
    waits.sort_unstable();
    let served = waits.len() as u64;
    let mean_wait = if waits.is_empty() {
        0.0
    } else {
        waits.iter().sum::<u64>() as f64 / waits.len() as f64
    };
    let services: Vec<f64> = requests
        .iter()
        .filter_map(|r| r.service_ns.map(|s| s as f64))
        .collect();
    let (mean_service, service_cv) = mean_cv(&services);
    let gaps: Vec<f64> = requests
        .windows(2)
        .map(|w| (w[1].enqueue_ns - w[0].enqueue_ns) as f64)
        .collect();
    let (_, interarrival_cv) = mean_cv(&gaps);
    // L: the area under the length series over the window.
    let mut area = 0.0;
    for w in length.windows(2) {
        area += w[0].length as f64 * (w[1].t_ns - w[0].t_ns) as f64;
    }
    let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    let arrival_rate = per_s(requests.len() as f64);
    let mean_length = if window > 0 {
        area / window as f64
    } else {
        0.0
    };
    let utilisation = (workers > 0 && window > 0)
        .then(|| services.iter().sum::<f64>() / (workers as f64 * window as f64));
    let erlang_c = mean_service.and_then(|s| erlang_c(workers, arrival_rate, 1e9 / s));
    QueueSummary {
        queue: spec.name.clone(),
        enqueued: requests.len() as u64,
        served,
        still_queued: requests.len() as u64 - served,
        empty_dequeues,
        workers,
        window_ns: window,
        arrival_rate,
        mean_queue_ns: mean_wait,
        p50_queue_ns: quantile(&waits, 0.5),
        p90_queue_ns: quantile(&waits, 0.9),
        p99_queue_ns: quantile(&waits, 0.99),
        max_queue_ns: waits.last().copied().unwrap_or(0),
        mean_service_ns: mean_service,
        service_end: match spec.task.first() {
            Some(ThreadMatcher::Glob(g)) => format!(
                "the end of the worker's next {} call",
                g.iter().collect::<String>()
            ),
            Some(ThreadMatcher::Substring(t)) => format!("the end of the worker's next {t} call"),
            None => "the worker's next dequeue".into(),
        },
        interarrival_cv,
        service_cv,
        utilisation,
        mean_length,
        max_length: length.iter().map(|p| p.length).max().unwrap_or(0),
        // λ W with λ = served / window: the requests that left within the window.
        little_lambda_w: per_s(served as f64) * mean_wait / 1e9,
        erlang_c,
    }
}

/// Erlang C for `c` servers, arrival rate `lambda` and service rate `mu` (per
/// second): the probability of waiting and the mean wait; None when ρ ≥ 1.
pub fn erlang_c(c: u64, lambda: f64, mu: f64) -> Option<ErlangC> {
    if c == 0 || !(lambda > 0.0 && mu > 0.0) {
        return None;
    }
    let a = lambda / mu;
    let rho = a / c as f64;
    if rho >= 1.0 {
        return None;
    }
    // Terms a^k / k! built incrementally, stable for large c.
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 0..c {
        sum += term;
        term *= a / (k + 1) as f64;
    }
    let last = term / (1.0 - rho);
    let p_wait = last / (sum + last);
    Some(ErlangC {
        servers: c,
        rho,
        p_wait,
        mean_queue_ns: p_wait / (c as f64 * mu - lambda) * 1e9,
    })
}

impl QueueReport {
    /// Per-request CSV: `request,enqueue_ns,dequeue_ns,queue_ns,service_ns,producer,worker,length_after_enqueue`.
    pub fn write_requests_csv(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(w, "request,enqueue_ns,dequeue_ns,queue_ns,service_ns,producer,worker,length_after_enqueue")?;
        let opt = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
        for r in &self.requests {
            writeln!(
                w,
                "{},{},{},{},{},{},{},{}",
                r.id,
                r.enqueue_ns,
                opt(r.dequeue_ns),
                opt(r.queue_ns),
                opt(r.service_ns),
                csv_field(&r.producer),
                csv_field(r.worker.as_deref().unwrap_or("")),
                r.length_after_enqueue
            )?;
        }
        Ok(())
    }

    /// The queue length series as CSV: `t_ns,length` at every change.
    pub fn write_length_csv(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(w, "t_ns,length")?;
        for p in &self.length {
            writeln!(w, "{},{}", p.t_ns, p.length)?;
        }
        Ok(())
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl fmt::Display for QueueSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: f64| fmt_ns(ns);
        let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| fmt_ns(v as f64));
        writeln!(
            f,
            "queue {}: {} requests enqueued, {} served, {} still queued at the end (FIFO replay)",
            self.queue, self.enqueued, self.served, self.still_queued
        )?;
        if self.empty_dequeues > 0 {
            writeln!(
                f,
                "{} dequeue calls found the queue empty (timed-out polls, interrupted takes)",
                self.empty_dequeues
            )?;
        }
        writeln!(
            f,
            "window {}, arrival rate {:.2}/s, workers (c) {}",
            ms(self.window_ns as f64),
            self.arrival_rate,
            self.workers
        )?;
        writeln!(
            f,
            "time in queue: mean {}, p50 {}, p90 {}, p99 {}, max {}",
            ms(self.mean_queue_ns),
            opt(self.p50_queue_ns),
            opt(self.p90_queue_ns),
            opt(self.p99_queue_ns),
            ms(self.max_queue_ns as f64)
        )?;
        match self.mean_service_ns {
            Some(s) => writeln!(
                f,
                "service time (dequeue to {}): mean {}",
                self.service_end,
                ms(s)
            )?,
            None => writeln!(f, "service time ({}): none measured", self.service_end)?,
        }
        let cv = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.2}"));
        writeln!(
            f,
            "coefficient of variation: inter-arrival {}, service {} (1 for exponential)",
            cv(self.interarrival_cv),
            cv(self.service_cv)
        )?;
        if let Some(u) = self.utilisation {
            writeln!(f, "utilisation (busy workers / c): {:.1}%", u * 100.0)?;
        }
        writeln!(
            f,
            "queue length: mean {:.3}, max {}",
            self.mean_length, self.max_length
        )?;
        writeln!(
            f,
            "Little's law: L = {:.3} (time-average length), lambda W = {:.3}",
            self.mean_length, self.little_lambda_w
        )?;
        if let Some(e) = &self.erlang_c {
            writeln!(
                f,
                "M/M/{} (Erlang C) with these rates: rho {:.3}, P(wait) {:.3}, mean time in queue {}",
                e.servers,
                e.rho,
                e.p_wait,
                ms(e.mean_queue_ns)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_format::TraceKind;

    fn call(thread: u32, enter: u64, exit: u64, dequeue: bool) -> QCall {
        QCall {
            thread,
            enter_ns: enter,
            exit_ns: exit,
            role: if dequeue {
                Role::Dequeue
            } else {
                Role::Enqueue
            },
        }
    }

    #[test]
    fn fifo_replay_matches_requests_in_order_and_measures_waits() {
        let calls = [
            call(9, 10, 11, false), // request 1
            call(9, 20, 21, false), // request 2
            call(1, 0, 12, true),   // worker 1 blocks, takes request 1 at 12
            call(1, 30, 31, true),  // takes request 2 at 31
            call(1, 50, 60, true),  // nothing queued: empty
        ];
        let r = fifo(
            &calls,
            |t| format!("t{t}"),
            &QueueSpec::blocking_queue(),
            None,
        );
        assert_eq!(r.requests.len(), 2);
        assert_eq!(r.requests[0].queue_ns, Some(2));
        assert_eq!(r.requests[1].queue_ns, Some(11));
        // Dequeued at 12; the worker asks again at 30.
        assert_eq!(r.requests[0].service_ns, Some(18));
        assert_eq!(r.requests[1].service_ns, Some(19));
        assert_eq!(r.requests[1].length_after_enqueue, 1);
        assert_eq!(r.summary.empty_dequeues, 1);
        assert_eq!(r.summary.workers, 1);
        // Window 10..31; area: 1 × 2 + 1 × 11 = 13 = the sum of the waits.
        assert_eq!(r.summary.window_ns, 21);
        assert!((r.summary.mean_length - 13.0 / 21.0).abs() < 1e-9);
        assert!((r.summary.little_lambda_w * 1e9 - r.summary.mean_length * 1e9).abs() < 1e-3);
    }

    #[test]
    fn a_task_method_ends_the_service_at_its_exit() {
        let task = |thread, enter, exit| QCall {
            thread,
            enter_ns: enter,
            exit_ns: exit,
            role: Role::Task,
        };
        let calls = [
            call(9, 10, 11, false),
            call(9, 20, 21, false),
            call(1, 0, 12, true),
            task(1, 13, 17),
            call(1, 30, 31, true),
            call(1, 50, 60, true),
        ];
        let spec = QueueSpec::blocking_queue()
            .with_task("demo.Job#run")
            .unwrap();
        let r = fifo(&calls, |t| format!("t{t}"), &spec, None);
        // Request 1: taken at 12, its run ends at 17. Request 2: no run call
        // before the worker's next dequeue, so no service time.
        assert_eq!(r.requests[0].service_ns, Some(5));
        assert_eq!(r.requests[1].service_ns, None);
        assert_eq!(
            r.summary.service_end,
            "the end of the worker's next demo.Job.run call"
        );
        assert!(spec.trace_patterns.ends_with(";demo.Job#run"));
    }

    /// A thread's events: (kind, method label, µs).
    type Events<'a> = Vec<(TraceKind, &'a str, u64)>;

    /// A recording of threads (id, name, events).
    fn recording(threads: &[(u32, &str, Events)]) -> Vec<u8> {
        use jscope_format::*;
        let mut w = ChunkWriter::new();
        let mut dict = Dictionary::new();
        for (id, name, events) in threads {
            jscope_testkit::recording::main_thread(&mut w, *id, name);
            let events = events
                .iter()
                .map(|&(kind, label, us)| {
                    jscope_testkit::recording::trace_event(
                        kind,
                        dict.method_label(&mut w, label),
                        us * 1000,
                    )
                })
                .collect();
            jscope_testkit::recording::trace_batch(&mut w, *id, events);
        }
        jscope_testkit::recording::ns_file(&mut w)
    }

    #[test]
    fn a_thread_pool_queue_is_told_from_other_queues_by_its_callers() {
        use jscope_format::TraceKind::{Enter, Exit, Throw};
        const EXEC: &str = "java.util.concurrent.ThreadPoolExecutor.execute";
        const GET: &str = "java.util.concurrent.ThreadPoolExecutor.getTask";
        const OFFER: &str = "java.util.concurrent.LinkedBlockingQueue.offer";
        const TAKE: &str = "java.util.concurrent.LinkedBlockingQueue.take";
        let submit = |at: u64| {
            [
                (Enter, EXEC, at),
                (Enter, OFFER, at + 1),
                (Exit, OFFER, at + 2),
                (Exit, EXEC, at + 3),
            ]
        };
        let mut main: Events = vec![];
        main.extend(submit(100));
        // Some other queue's offer, not from execute.
        main.extend([(Enter, OFFER, 150), (Exit, OFFER, 151)]);
        main.extend(submit(200));
        let worker = vec![
            (Enter, GET, 0),
            (Enter, TAKE, 1),
            (Exit, TAKE, 130), // request 1 waited 29 µs (offer entered at 101)
            (Exit, GET, 131),
            (Enter, GET, 180),
            (Enter, TAKE, 181),
            (Exit, TAKE, 260), // request 2 waited 59 µs
            (Exit, GET, 261),
            (Enter, GET, 300),
            (Enter, TAKE, 301),
            (Throw, TAKE, 400), // interrupted at shutdown: took nothing
            (Throw, GET, 400),
        ];
        let bytes = recording(&[(1, "main", main), (2, "pool-1-thread-1", worker)]);
        let rec = Recording::from_bytes(&bytes).unwrap();
        let r = replay_queue(&rec, &QueueSpec::thread_pool(), None).unwrap();
        let waits: Vec<_> = r.requests.iter().map(|r| r.queue_ns).collect();
        assert_eq!(waits, [Some(29_000), Some(59_000)]);
        // Taken at 130, the worker's next take is entered at 181; at 260, 301.
        let services: Vec<_> = r.requests.iter().map(|r| r.service_ns).collect();
        assert_eq!(services, [Some(51_000), Some(41_000)]);
        assert_eq!(r.requests[0].worker.as_deref(), Some("pool-1-thread-1"));
        assert_eq!((r.summary.workers, r.summary.empty_dequeues), (1, 0));
        let (streamed, _) = replay_queue_bytes(&bytes, &QueueSpec::thread_pool(), None).unwrap();
        assert_eq!(streamed, r);
        // Every blocking queue: the stray offer is a third request, never taken.
        let all = replay_queue(&rec, &QueueSpec::blocking_queue(), None).unwrap();
        assert_eq!((all.summary.enqueued, all.summary.served), (3, 2));
        assert_eq!(all.summary.still_queued, 1);
        // Without the pool's methods the error names what to trace.
        let bare = recording(&[(1, "main", vec![(Enter, "a.B.c", 0), (Exit, "a.B.c", 1)])]);
        let e = replay_queue_bytes(&bare, &QueueSpec::thread_pool(), None).unwrap_err();
        assert!(
            e.to_string().contains(
                "jscope record --trace 'java.util.concurrent.ThreadPoolExecutor#execute;"
            ),
            "{e}"
        );
    }

    #[test]
    fn erlang_c_matches_known_values() {
        // c = 1: M/M/1, Wq = rho / (mu - lambda).
        let e = erlang_c(1, 5.0, 10.0).unwrap();
        assert!((e.p_wait - 0.5).abs() < 1e-12);
        assert!((e.mean_queue_ns - 0.1e9).abs() < 1.0);
        // c = 4, a = 2.6: P(wait) 0.3544 (tables).
        let e = erlang_c(4, 260.0, 100.0).unwrap();
        assert!((e.p_wait - 0.35442).abs() < 1e-4, "{e:?}");
        assert!(erlang_c(2, 300.0, 100.0).is_none());
    }

    #[test]
    fn specs_parse() {
        let s = QueueSpec::parse("com.acme.Pool#add/com.acme.Pool#get").unwrap();
        assert!(s.enqueue[0].matches("com.acme.Pool.add"));
        assert!(!s.enqueue[0].matches("com.acme.Pool.addAll"));
        assert_eq!(s.trace_patterns, "com.acme.Pool#add;com.acme.Pool#get");
        assert!(QueueSpec::parse("com.acme.Pool.add").is_err());
        let t = QueueSpec::parse("threadpool").unwrap();
        assert!(t.enqueue[0].matches("java.util.concurrent.LinkedBlockingQueue.offer"));
        assert!(t.dequeue_callers[0].matches("java.util.concurrent.ThreadPoolExecutor.getTask"));
    }
}
