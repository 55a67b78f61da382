//! The running hot-methods table, a plugin: per JVM, how many stack samples each
//! distinct stack got since the collector started, labelled only when asked for.
//! A table is a cache of what the store holds: one that missed part of the stream
//! (a collector started, or taken over to, mid-stream; chunks that went to another
//! collector of the same store) answers nothing, and the API asks the store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use jscope_analysis::{
    hot_methods, incomplete_stacks, HotMethods, IncompleteStacks, Mode, StackCounts,
};
use jscope_format::{Record, Recording};

use crate::listener::Connection;
use crate::listener::{ListenerError, ServerListener, Trace};

struct Table {
    dict: Arc<RwLock<Recording>>,
    /// Samples per mode per stack id.
    counts: BTreeMap<Mode, HashMap<u32, u64>>,
    /// The last chunk counted.
    last_seq: u64,
    /// Every chunk of the stream up to `last_seq` was counted here.
    whole: bool,
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
    /// that has samples; at most `limit` rows; with its incomplete stacks.
    /// `None` when this collector has no table for it or its table missed part
    /// of the stream.
    pub fn hot_methods(
        &self,
        id: &str,
        mode: Option<Mode>,
        limit: usize,
    ) -> Option<(HotMethods, IncompleteStacks)> {
        let table = self.table(id)?;
        let table = table.lock().expect("table lock");
        if !table.whole {
            return None;
        }
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
        Some((out, incomplete_stacks(&dict, mode, &counts)))
    }
}

fn count(counts: &mut BTreeMap<Mode, HashMap<u32, u64>>, records: &[Record]) {
    for r in records {
        match r {
            Record::Sample(s) => {
                *counts
                    .entry(Mode::of_sample(s.mode))
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
                last_seq: 0,
                whole: true,
            }))
        });
        let mut table = table.lock().expect("table lock");
        table.dict = c.dict.clone();
        // Chunks the store holds that this table never counted.
        if c.resumed_after > table.last_seq {
            table.whole = false;
        }
        Ok(())
    }

    fn on_data(&self, c: &Connection, t: &Trace) -> Result<(), ListenerError> {
        if let Some(table) = self.table(&c.jvm.id) {
            let mut table = table.lock().expect("table lock");
            count(&mut table.counts, t.records);
            table.last_seq = t.seq;
        }
        Ok(())
    }
}
