//! Aggregate tracing (JX): instead of events, each thread keeps caller→callee
//! totals (calls, total, min and max duration) that the writer takes and resets
//! about once a second, so always-on timing costs a few bytes per pair and
//! interval whatever the call rate.

use crate::java_threads::ThreadKey;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Totals of one caller→callee pair, durations in probe ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairTotals {
    pub calls: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
}

impl PairTotals {
    fn add(&mut self, ticks: u64) {
        self.calls += 1;
        self.total += ticks;
        self.min = self.min.min(ticks);
        self.max = self.max.max(ticks);
    }
}

/// (caller probe index or 0, callee probe index).
pub type PairKey = (u32, u32);

type PairMap = HashMap<PairKey, PairTotals, BuildHasherDefault<PairHasher>>;

/// A multiplicative hash for the two small integers of a key: the table is
/// updated on every traced exit, where SipHash's cost would show.
#[derive(Default)]
pub struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One thread's totals. Its lock is taken by the thread on each traced exit and
/// by the writer once per interval, so it is practically never contended.
pub struct ThreadAgg {
    pairs: Mutex<PairMap>,
    pub thread: ThreadKey,
    pub ended: AtomicBool,
}

impl ThreadAgg {
    pub fn new(thread: ThreadKey) -> ThreadAgg {
        ThreadAgg {
            pairs: Mutex::default(),
            thread,
            ended: AtomicBool::new(false),
        }
    }

    #[inline]
    pub fn add(&self, caller: u32, callee: u32, ticks: u64) {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        pairs
            .entry((caller, callee))
            .or_insert(PairTotals {
                calls: 0,
                total: 0,
                min: u64::MAX,
                max: 0,
            })
            .add(ticks);
    }

    /// The totals since the last take, leaving the table empty.
    pub fn take(&self) -> Vec<(PairKey, PairTotals)> {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<_> = pairs.drain().collect();
        out.sort_unstable_by_key(|(k, _)| *k);
        out
    }
}

/// Forgets the tables of ended threads (after their last take).
pub fn forget_ended(tables: &mut Vec<Arc<ThreadAgg>>) {
    tables.retain(|t| !t.ended.load(Ordering::Acquire));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up_and_reset_on_take() {
        let t = ThreadAgg::new(ThreadKey::new(1, 2, 0));
        t.add(0, 5, 10);
        t.add(0, 5, 30);
        t.add(5, 6, 7);
        assert_eq!(
            t.take(),
            [
                (
                    (0, 5),
                    PairTotals {
                        calls: 2,
                        total: 40,
                        min: 10,
                        max: 30
                    }
                ),
                (
                    (5, 6),
                    PairTotals {
                        calls: 1,
                        total: 7,
                        min: 7,
                        max: 7
                    }
                )
            ]
        );
        assert!(t.take().is_empty());
    }
}
