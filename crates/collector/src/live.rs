//! Live state, a plugin: every JVM seen since the collector started, whether it is
//! connected, how fast samples arrive, what was dropped, and its latest snapshot.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jscope_analysis::{threads_at, ThreadsView};
use jscope_format::{Record, Recording};

use crate::listener::Connection;
use crate::listener::{Disconnect, ListenerError, ServerListener, Trace};
use jscope_store::JvmIdentity;

/// Samples per second are averaged over this window.
const RATE_WINDOW: Duration = Duration::from_secs(10);

/// One JVM's live figures.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFigures {
    pub identity: Arc<JvmIdentity>,
    pub connected: bool,
    /// Epoch ns of the current (or last) connection.
    pub connected_since_ns: u64,
    pub disconnected_ns: Option<u64>,
    pub disconnect_reason: Option<String>,
    pub samples_per_second: f64,
    pub samples: u64,
    pub chunks: u64,
    /// Chunks the agent never delivered (gaps in its sequence numbers).
    pub lost_chunks: u64,
    /// The agent's own `samples.dropped` counter.
    pub dropped_samples: u64,
    pub last_seq: u64,
}

struct LiveJvm {
    dict: Arc<RwLock<Recording>>,
    figures: LiveFigures,
    window: VecDeque<(Instant, u64)>,
}

impl LiveJvm {
    fn rate(&mut self, now: Instant) -> f64 {
        while self
            .window
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > RATE_WINDOW)
        {
            self.window.pop_front();
        }
        let n: u64 = self.window.iter().map(|(_, n)| n).sum();
        n as f64 / RATE_WINDOW.as_secs_f64()
    }
}

#[derive(Default)]
pub struct LiveState {
    jvms: RwLock<BTreeMap<String, Arc<Mutex<LiveJvm>>>>,
}

fn epoch_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn stack_samples(records: &[Record]) -> u64 {
    records
        .iter()
        .map(|r| match r {
            Record::Sample(_) => 1,
            Record::Snapshot(s) => s.threads.len() as u64,
            _ => 0,
        })
        .sum()
}

impl LiveState {
    pub fn new() -> LiveState {
        LiveState::default()
    }

    fn get(&self, id: &str) -> Option<Arc<Mutex<LiveJvm>>> {
        self.jvms.read().expect("live lock").get(id).cloned()
    }

    /// Every JVM seen since start, by id.
    pub fn figures(&self) -> Vec<LiveFigures> {
        let all: Vec<_> = self
            .jvms
            .read()
            .expect("live lock")
            .values()
            .cloned()
            .collect();
        let now = Instant::now();
        all.iter()
            .map(|j| Self::current(&mut j.lock().expect("jvm lock"), now))
            .collect()
    }

    pub fn figures_of(&self, id: &str) -> Option<LiveFigures> {
        let j = self.get(id)?;
        let mut j = j.lock().expect("jvm lock");
        Some(Self::current(&mut j, Instant::now()))
    }

    fn current(j: &mut LiveJvm, now: Instant) -> LiveFigures {
        let mut f = j.figures.clone();
        f.samples_per_second = if f.connected { j.rate(now) } else { 0.0 };
        f.dropped_samples = j
            .dict
            .read()
            .expect("dict lock")
            .counters
            .get("samples.dropped")
            .copied()
            .unwrap_or(0);
        f
    }

    /// The latest values of the counters the JVM's agent sends (`walk.failed.*`,
    /// `samples.dropped`, `collector.buffered_bytes`, ...).
    pub fn counters_of(&self, id: &str) -> Option<BTreeMap<String, u64>> {
        let dict = self.get(id)?.lock().expect("jvm lock").dict.clone();
        let counters = dict.read().expect("dict lock").counters.clone();
        Some(counters)
    }

    /// The threads of the JVM's latest snapshot, in start order, with their stacks.
    pub fn threads(&self, id: &str) -> Option<ThreadsView> {
        let dict = self.get(id)?.lock().expect("jvm lock").dict.clone();
        let rec = dict.read().expect("dict lock");
        threads_at(&rec, None).ok()
    }
}

impl ServerListener for LiveState {
    fn name(&self) -> &'static str {
        "live"
    }

    fn on_connect(&self, c: &Connection) -> Result<(), ListenerError> {
        let figures = LiveFigures {
            identity: c.jvm.clone(),
            connected: true,
            connected_since_ns: epoch_ns(c.connected_at),
            disconnected_ns: None,
            disconnect_reason: None,
            samples_per_second: 0.0,
            samples: 0,
            chunks: 0,
            lost_chunks: 0,
            dropped_samples: 0,
            last_seq: c.resumed_after,
        };
        let mut map = self.jvms.write().expect("live lock");
        match map.get(&c.jvm.id) {
            Some(j) => {
                let mut j = j.lock().expect("jvm lock");
                let kept = (j.figures.samples, j.figures.chunks, j.figures.lost_chunks);
                j.figures = figures;
                (j.figures.samples, j.figures.chunks, j.figures.lost_chunks) = kept;
                j.dict = c.dict.clone();
            }
            None => {
                let j = LiveJvm {
                    dict: c.dict.clone(),
                    figures,
                    window: VecDeque::new(),
                };
                map.insert(c.jvm.id.clone(), Arc::new(Mutex::new(j)));
            }
        }
        Ok(())
    }

    fn on_data(&self, c: &Connection, t: &Trace) -> Result<(), ListenerError> {
        if let Some(snap) = t.records.iter().rev().find_map(|r| match r {
            Record::Snapshot(s) => Some(s),
            _ => None,
        }) {
            c.dict.write().expect("dict lock").snapshots = vec![snap.clone()];
        }
        let Some(j) = self.get(&c.jvm.id) else {
            return Ok(());
        };
        let mut j = j.lock().expect("jvm lock");
        let n = stack_samples(t.records);
        j.window.push_back((Instant::now(), n));
        let f = &mut j.figures;
        f.samples += n;
        f.chunks += 1;
        f.lost_chunks += t.lost_before;
        f.last_seq = t.seq;
        Ok(())
    }

    fn on_disconnect(&self, c: &Connection, why: &Disconnect) {
        if let Some(j) = self.get(&c.jvm.id) {
            let mut j = j.lock().expect("jvm lock");
            j.figures.connected = false;
            j.figures.disconnected_ns = Some(epoch_ns(SystemTime::now()));
            j.figures.disconnect_reason = match why {
                Disconnect::Clean => None,
                Disconnect::Lost(why) => Some(why.clone()),
            };
            j.window.clear();
        }
    }
}
