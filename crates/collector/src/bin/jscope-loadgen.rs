//! Load generator speaking the agent protocol: N simulated agents, each sending one
//! chunk per second holding `rate` snapshots of `threads` threads, like an agent in
//! snapshot mode. Reports what was sent and acknowledged, and (with --pid) the
//! collector's CPU time and peak memory over the run.
//!
//! Usage: jscope-loadgen ADDR [--agents N] [--rate SNAPSHOTS_PER_S] [--threads T]
//!        [--seconds S] [--pid COLLECTOR_PID] [--services K] [--events E] [--calls C]
//!
//! With `--services K`, agent i names the service `svc-(i mod K)` (the agent's
//! `service=` option), so a service's JVMs can be queried together. `--events E`
//! adds E JVM events per agent-second (monitor entries, lock parks, allocation
//! samples, GC pauses, each with a stack), `--calls C` C exactly traced calls (a
//! caller and its callee per pair, on the first thread), to measure what the
//! ClickHouse store's event and trace-call rows cost.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use jscope_format::{
    encode_file_start, ChunkWriter, ClassDef, EventKind, Frame, FrameKind, Header, JvmEvent,
    MethodDef, Snapshot, SnapshotThread, ThreadDef, TraceBatch, TraceEvent, TraceKind,
};
use jscope_format::{ClassId, MethodId, StackId, StringId, ThreadId};
use jscope_wire::{ClientConfig, Outbox, Pushed, WireClient};

struct Args {
    addr: String,
    agents: usize,
    rate: u64,
    threads: u32,
    seconds: u64,
    pid: Option<u32>,
    services: usize,
    events: u64,
    calls: u64,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        addr: it
            .next()
            .context("usage: jscope-loadgen ADDR [--agents N] ...")?,
        agents: 10,
        rate: 10,
        threads: 50,
        seconds: 10,
        pid: None,
        services: 0,
        events: 0,
        calls: 0,
    };
    while let Some(flag) = it.next() {
        let v = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--agents" => a.agents = v.parse()?,
            "--rate" => a.rate = v.parse()?,
            "--threads" => a.threads = v.parse()?,
            "--seconds" => a.seconds = v.parse()?,
            "--pid" => a.pid = Some(v.parse()?),
            "--services" => a.services = v.parse()?,
            "--events" => a.events = v.parse()?,
            "--calls" => a.calls = v.parse()?,
            other => bail!("unknown option {other}"),
        }
    }
    Ok(a)
}

#[derive(Default)]
struct Totals {
    chunks: AtomicU64,
    acked: AtomicU64,
    samples: AtomicU64,
    bytes: AtomicU64,
    failures: AtomicU64,
}

const METHODS: u32 = 64;
const STACKS: u32 = 256;
const DEPTH: u32 = 24;

/// Dictionaries of a simulated JVM: 64 methods, 256 stacks, `threads` threads.
fn dictionary(w: &mut ChunkWriter, threads: u32) {
    w.string(StringId(1), "com.example.Work");
    w.string(StringId(2), "Work.java");
    w.class(&ClassDef {
        id: ClassId(1),
        name: StringId(1),
        source_file: StringId(2),
    });
    w.string(StringId(3), "()V");
    for m in 1..=METHODS {
        w.string(StringId(10 + m), &format!("step{m}"));
        w.method(&MethodDef {
            id: MethodId(m),
            class: ClassId(1),
            name: StringId(10 + m),
            signature: StringId(3),
            modifiers: 1,
        });
    }
    for s in 1..=STACKS {
        let frames: Vec<Frame> = (0..DEPTH)
            .map(|d| Frame {
                method: MethodId(1 + (s * 7 + d * 13) % METHODS),
                bci: d as i32,
                line: 10 + d,
                kind: FrameKind::Interpreted,
            })
            .collect();
        w.stack(StackId(s), &frames);
    }
    for t in 1..=threads {
        w.thread(&ThreadDef {
            id: ThreadId(t),
            java_id: t as i64,
            name: format!("worker-{t}"),
            group: "main".into(),
            parent: "system".into(),
            start_order: t,
            ..ThreadDef::default()
        });
    }
}

fn agent(i: usize, a: &Args, totals: &Totals, deadline: Instant) -> anyhow::Result<()> {
    let header = Header {
        agent_version: "loadgen".into(),
        pid: 100_000 + i as u32,
        host: "loadgen".into(),
        command_line: format!("Simulated{i}"),
        vm_name: "LoadGen VM".into(),
        start_wall_ns: now_ns(),
        ticks_per_second: 1_000_000_000,
        modes: "snapshot".into(),
        interval_ns: 1_000_000_000 / a.rate.max(1),
        extra: match a.services {
            0 => Vec::new(),
            k => vec![("service".into(), format!("svc-{}", i % k))],
        },
        ..Header::default()
    };
    let mut cfg = ClientConfig::new(
        a.addr.clone(),
        format!("loadgen-{i}-{}", header.start_wall_ns),
    );
    cfg.io_timeout = Duration::from_secs(30);
    let mut client = WireClient::connect(&cfg, &encode_file_start(&header), 1)?;
    let mut out = Outbox::new(64 << 20);
    let mut w = ChunkWriter::new();
    dictionary(&mut w, a.threads);
    let mut ticks = 0u64;
    let mut next = Instant::now();
    while Instant::now() < deadline {
        for _ in 0..a.rate {
            ticks += header.interval_ns;
            let threads = (1..=a.threads)
                .map(|t| SnapshotThread {
                    thread: ThreadId(t),
                    carrier: Default::default(),
                    state: 0x5,
                    stack: StackId(1 + (t * 31 + ticks as u32 / 7) % STACKS),
                })
                .collect();
            w.snapshot(&Snapshot {
                ticks,
                interval_ns: header.interval_ns,
                threads,
            });
        }
        events_and_calls(&mut w, a, ticks, header.interval_ns * a.rate);
        let chunk = w.finish();
        totals
            .bytes
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        if let Pushed::Queued(seq) = out.push(chunk) {
            let (_, bytes) = out.next_unsent().expect("just queued");
            client.send(seq, bytes)?;
            out.mark_sent(seq);
            totals.chunks.fetch_add(1, Ordering::Relaxed);
            totals
                .samples
                .fetch_add(a.rate * a.threads as u64, Ordering::Relaxed);
        }
        out.ack(client.poll_acks()?);
        next += Duration::from_secs(1);
        thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let acked = client.finish(Duration::from_secs(30))?;
    totals.acked.fetch_add(acked, Ordering::Relaxed);
    Ok(())
}

/// `--events` JVM events and `--calls` traced calls spread over the second that
/// ends at `end` ticks.
fn events_and_calls(w: &mut ChunkWriter, a: &Args, end: u64, span: u64) {
    let start = end.saturating_sub(span);
    for e in 0..a.events {
        let ticks = start + span * e / a.events.max(1);
        let stack = StackId(1 + (e as u32 * 17) % STACKS);
        let kind = match e % 4 {
            0 => EventKind::MonitorBlocked {
                duration_ns: 50_000 + e,
                class: ClassId(1),
                object: e,
                owner: ThreadId(1),
                stack,
                request: Default::default(),
            },
            1 => EventKind::Park {
                duration_ns: 80_000 + e,
                blocker_class: ClassId(1),
                timeout_ns: 0,
                stack,
                request: Default::default(),
            },
            2 => EventKind::Alloc {
                class: ClassId(1),
                size: 64 + e,
                stack,
                object: 0,
                allocated_total: 0,
                weight: 524_288,
                request: Default::default(),
            },
            _ => EventKind::gc_pause(2_000_000),
        };
        w.event(&JvmEvent {
            thread: ThreadId(1 + (e as u32 % a.threads.max(1))),
            ticks,
            kind,
        });
    }
    if a.calls == 0 {
        return;
    }
    let pairs = a.calls.div_ceil(2);
    let step = span / (pairs * 4).max(1);
    let ev = |kind, m, ticks| TraceEvent {
        kind,
        method: MethodId(m),
        ticks,
        untraced: 0,
        cpu_ns: 0,
    };
    let mut events = Vec::with_capacity(pairs as usize * 4);
    for p in 0..pairs {
        let t = start + p * 4 * step;
        let caller = 1 + (p as u32 % METHODS);
        let callee = 1 + ((p as u32 + 1) % METHODS);
        events.extend([
            ev(TraceKind::Enter, caller, t),
            ev(TraceKind::Enter, callee, t + step),
            ev(TraceKind::Exit, callee, t + 2 * step),
            ev(TraceKind::Exit, caller, t + 3 * step),
        ]);
    }
    w.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events,
    });
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// (user+system CPU seconds, peak RSS in KiB) of a process, from /proc.
fn usage(pid: u32) -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ticks as f64 / hz, hwm))
}

fn main() -> anyhow::Result<()> {
    let a = Arc::new(parse_args()?);
    let totals = Arc::new(Totals::default());
    let before = a.pid.and_then(usage);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(a.seconds);
    let workers: Vec<_> = (0..a.agents)
        .map(|i| {
            let (a, totals) = (a.clone(), totals.clone());
            thread::Builder::new().stack_size(256 << 10).spawn(move || {
                if let Err(e) = agent(i, &a, &totals, deadline) {
                    totals.failures.fetch_add(1, Ordering::Relaxed);
                    eprintln!("agent {i}: {e}");
                }
            })
        })
        .collect::<Result<_, _>>()?;
    for w in workers {
        let _ = w.join();
    }
    let secs = start.elapsed().as_secs_f64();
    let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
    println!(
        "agents={} seconds={secs:.1} chunks={} acked={} samples={} samples_per_s={:.0} MiB_per_s={:.2} failed_agents={}",
        a.agents,
        get(&totals.chunks),
        get(&totals.acked),
        get(&totals.samples),
        get(&totals.samples) as f64 / secs,
        get(&totals.bytes) as f64 / secs / (1 << 20) as f64,
        get(&totals.failures),
    );
    if let (Some(pid), Some((cpu0, _))) = (a.pid, before) {
        if let Some((cpu1, hwm)) = usage(pid) {
            println!(
                "collector cpu_s={:.2} cores={:.3} peak_rss_MiB={:.0} samples_per_cpu_s={:.0}",
                cpu1 - cpu0,
                (cpu1 - cpu0) / secs,
                hwm as f64 / 1024.0,
                get(&totals.samples) as f64 / (cpu1 - cpu0).max(1e-9)
            );
        }
    }
    Ok(())
}
