//! The running hot-methods table, a plugin: per JVM, how many stack samples each
//! distinct stack got since the collector started, labelled only when asked for.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use jscope_analysis::{hot_methods, HotMethods, Mode, StackCounts};
use jscope_format::{Record, Recording, SampleMode};

use crate::jvm::Connection;
use crate::listener::{ListenerError, ServerListener, Trace};

struct Table {
    dict: Arc<RwLock<Recording>>,
    /// Samples per mode per stack id.
    counts: BTreeMap<Mode, HashMap<u32, u64>>,
}

#[derive(Default)]
pub struct HotMethodsListener {
    tables: Mutex<HashMap<String, Arc<Mutex<Table>>>>,
}

impl HotMethodsListener {
    pub fn new() -> HotMethodsListener {
        HotMethodsListener::default()
    }

    fn table(&self, id: &str) -> Option<Arc<Mutex<Table>>> {
        self.tables.lock().expect("hot lock").get(id).cloned()
    }

    /// The table for one JVM: `mode`, or else the first of cpu, wall and snapshot
    /// that has samples; at most `limit` rows.
    pub fn hot_methods(&self, id: &str, mode: Option<Mode>, limit: usize) -> Option<HotMethods> {
        let table = self.table(id)?;
        let table = table.lock().expect("table lock");
        let mode = mode.or_else(|| Mode::ALL.into_iter().find(|m| table.counts.contains_key(m)));
        let mut counts = StackCounts::default();
        if let Some(per_stack) = mode.and_then(|m| table.counts.get(&m)) {
            for (&stack, &n) in per_stack {
                counts.counts.insert((stack, 0), n);
                counts.total += n;
            }
        }
        let dict = table.dict.read().expect("dict lock");
        let mut out = hot_methods(&dict, mode, &counts);
        out.truncate(limit);
        Some(out)
    }
}

fn count(counts: &mut BTreeMap<Mode, HashMap<u32, u64>>, records: &[Record]) {
    for r in records {
        match r {
            Record::Sample(s) => {
                let mode = match s.mode {
                    SampleMode::Cpu => Mode::Cpu,
                    SampleMode::Wall => Mode::Wall,
                };
                *counts
                    .entry(mode)
                    .or_default()
                    .entry(s.stack.0)
                    .or_default() += 1;
            }
            Record::Snapshot(snap) => {
                let m = counts.entry(Mode::Snapshot).or_default();
                for t in &snap.threads {
                    *m.entry(t.stack.0).or_default() += 1;
                }
            }
            _ => {}
        }
    }
}

impl ServerListener for HotMethodsListener {
    fn name(&self) -> &'static str {
        "hot-methods"
    }

    fn on_connect(&self, c: &Connection) -> Result<(), ListenerError> {
        let mut tables = self.tables.lock().expect("hot lock");
        let table = tables.entry(c.jvm.id.clone()).or_insert_with(|| {
            Arc::new(Mutex::new(Table {
                dict: c.dict.clone(),
                counts: BTreeMap::new(),
            }))
        });
        table.lock().expect("table lock").dict = c.dict.clone();
        Ok(())
    }

    fn on_data(&self, c: &Connection, t: &Trace) -> Result<(), ListenerError> {
        if let Some(table) = self.table(&c.jvm.id) {
            count(&mut table.lock().expect("table lock").counts, t.records);
        }
        Ok(())
    }
}
