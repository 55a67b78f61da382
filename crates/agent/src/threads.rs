//! The agent's table of threads: which Java thread each Linux thread id is, the
//! logical start order (which doubles as the recording's thread id), and which
//! Linux threads are not Java threads or belong to the agent itself.
//!
//! Filled from JVMTI callbacks, the start-up enumeration, the snapshot sampler and
//! the writer; never touched from a signal handler.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::jvm::ThreadInfo;

/// The group of threads known only by their Linux id (GC workers, compiler
/// threads, the VM thread, native threads).
pub const NATIVE_GROUP: &str = "[native]";

/// What the agent knows about one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadEntry {
    /// Logical start order, 1-based; also the thread's id in the recording.
    pub order: u32,
    /// Thread.getId(), or 0 for a thread known only by its Linux id.
    pub java_id: i64,
    /// Linux thread id, 0 while unknown.
    pub os_tid: u32,
    pub info: ThreadInfo,
    /// Bumped on every change, so the writer knows when to re-emit the definition.
    pub revision: u32,
}

#[derive(Default)]
struct Inner {
    entries: Vec<ThreadEntry>,
    by_java_id: HashMap<i64, u32>,
    by_tid: HashMap<u32, u32>,
    not_java: HashSet<u32>,
    agent: HashSet<u32>,
    agent_java: HashSet<i64>,
}

impl Inner {
    fn entry_mut(&mut self, order: u32) -> &mut ThreadEntry {
        &mut self.entries[order as usize - 1]
    }

    fn insert(&mut self, java_id: i64, info: ThreadInfo) -> u32 {
        let order = self.entries.len() as u32 + 1;
        self.entries.push(ThreadEntry {
            order,
            java_id,
            os_tid: 0,
            info,
            revision: 1,
        });
        if java_id != 0 {
            self.by_java_id.insert(java_id, order);
        }
        order
    }

    fn set_tid(&mut self, order: u32, tid: u32) {
        self.by_tid.insert(tid, order);
        self.not_java.remove(&tid);
        let entry = self.entry_mut(order);
        if entry.os_tid != tid {
            entry.os_tid = tid;
            entry.revision += 1;
        }
    }
}

/// Thread bookkeeping shared by callbacks, samplers and the writer.
#[derive(Default)]
pub struct ThreadTable {
    inner: Mutex<Inner>,
}

impl ThreadTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every update is a
        // single insert or field store), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a sighting of Java thread `java_id` and returns its start order.
    /// The first sighting assigns the next order; later ones update name, group
    /// and daemon flag (bumping the revision when they changed) and the Linux id.
    pub fn see(&self, java_id: i64, info: ThreadInfo, tid: Option<u32>) -> u32 {
        let mut inner = self.lock();
        let order = match inner.by_java_id.get(&java_id) {
            Some(&order) => {
                let entry = inner.entry_mut(order);
                // A thread that has ended has no group any more (JVMTI reports none);
                // it keeps the group it ran in.
                let info = if info.group.is_empty() {
                    ThreadInfo {
                        group: entry.info.group.clone(),
                        parent: entry.info.parent.clone(),
                        ..info
                    }
                } else {
                    info
                };
                if entry.info != info {
                    entry.info = info;
                    entry.revision += 1;
                }
                order
            }
            None => inner.insert(java_id, info),
        };
        if let Some(tid) = tid.filter(|t| *t != 0) {
            inner.set_tid(order, tid);
        }
        order
    }

    /// Registers a Linux thread that could not be matched to a Java thread object,
    /// named from the kernel's view, so its samples still have a thread.
    pub fn see_anonymous(&self, tid: u32, name: String) -> u32 {
        let mut inner = self.lock();
        if let Some(&order) = inner.by_tid.get(&tid) {
            return order;
        }
        let order = inner.insert(
            0,
            ThreadInfo {
                name,
                group: NATIVE_GROUP.to_string(),
                ..ThreadInfo::default()
            },
        );
        inner.set_tid(order, tid);
        order
    }

    /// The Linux id of the thread with start order `order`; 0 when unknown.
    pub fn tid_of(&self, order: u32) -> u32 {
        let inner = self.lock();
        let index = (order as usize).wrapping_sub(1);
        inner.entries.get(index).map_or(0, |e| e.os_tid)
    }

    pub fn order_of_tid(&self, tid: u32) -> Option<u32> {
        self.lock().by_tid.get(&tid).copied()
    }

    /// The Java id of the thread known to run as Linux thread `tid`.
    pub fn java_id_of_tid(&self, tid: u32) -> Option<i64> {
        let inner = self.lock();
        let order = *inner.by_tid.get(&tid)?;
        let java_id = inner.entries[order as usize - 1].java_id;
        (java_id != 0).then_some(java_id)
    }

    pub fn order_of_java_id(&self, java_id: i64) -> Option<u32> {
        self.lock().by_java_id.get(&java_id).copied()
    }

    /// The entry for `order` if its revision differs from `known_revision`.
    pub fn changed_since(&self, order: u32, known_revision: u32) -> Option<ThreadEntry> {
        let inner = self.lock();
        let entry = inner.entries.get((order as usize).checked_sub(1)?)?;
        (entry.revision != known_revision).then(|| entry.clone())
    }

    /// Marks a Linux thread as not attached to the VM (GC, compiler, native threads).
    pub fn mark_not_java(&self, tid: u32) {
        self.lock().not_java.insert(tid);
    }

    /// Marks a Linux thread as one of the agent's own: its CPU time is sampled
    /// (it is the process's, and the profile shows what the profiler costs),
    /// its wall time and its events are not.
    /// Called on that thread itself: its name is its Rust thread's, kept here
    /// because the agent's short-lived threads are often gone before their
    /// samples are written.
    pub fn mark_agent(&self, tid: u32) {
        self.lock().agent.insert(tid);
        let name = std::thread::current()
            .name()
            .unwrap_or("jscope")
            .to_string();
        self.see_anonymous(tid, name);
    }

    /// True for threads that must not be signalled: the agent's own and known
    /// non-Java threads.
    #[cfg(test)]
    pub fn is_excluded(&self, tid: u32) -> bool {
        let inner = self.lock();
        inner.agent.contains(&tid) || inner.not_java.contains(&tid)
    }

    /// Drops known non-Java threads from `tids`, and the agent's own unless
    /// `agent` (their CPU time is sampled with mixed stacks), under one lock.
    pub fn retain_sampleable(&self, tids: &mut Vec<u32>, agent: bool) {
        let inner = self.lock();
        tids.retain(|t| (agent || !inner.agent.contains(t)) && !inner.not_java.contains(t));
    }

    /// Marks a Java thread id as one of the agent's own threads.
    pub fn mark_agent_java(&self, java_id: i64) {
        self.lock().agent_java.insert(java_id);
    }

    pub fn is_agent_java(&self, java_id: i64) -> bool {
        self.lock().agent_java.contains(&java_id)
    }

    pub fn is_agent(&self, tid: u32) -> bool {
        self.lock().agent.contains(&tid)
    }

    /// Forgets the Linux id of a thread that ended, so a reused id is not
    /// mistaken for it.
    #[cfg(test)]
    pub fn forget_tid(&self, tid: u32) {
        let mut inner = self.lock();
        inner.by_tid.remove(&tid);
        inner.not_java.remove(&tid);
    }
}

/// The calling thread's Linux id. Async-signal-safe (a bare system call).
pub fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Linux ids of all threads of this process, from /proc/self/task.
pub fn process_tids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The kernel's name of a thread of this process (at most 15 bytes).
pub fn kernel_thread_name(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> ThreadInfo {
        ThreadInfo {
            name: name.to_string(),
            group: "main".to_string(),
            parent: "system".to_string(),
            daemon: false,
        }
    }

    #[test]
    fn start_order_follows_first_sighting() {
        let t = ThreadTable::default();
        assert_eq!(t.see(11, info("main"), None), 1);
        assert_eq!(t.see(20, info("worker"), Some(300)), 2);
        assert_eq!(
            t.see(11, info("main"), Some(100)),
            1,
            "a second sighting keeps the order"
        );
        assert_eq!(t.order_of_tid(300), Some(2));
        assert_eq!(t.order_of_tid(100), Some(1));
        assert_eq!(t.order_of_java_id(20), Some(2));
        assert_eq!(t.java_id_of_tid(300), Some(20));
        assert_eq!(t.java_id_of_tid(301), None);
        t.see_anonymous(301, "GC Thread#0".into());
        assert_eq!(t.java_id_of_tid(301), None, "no Java thread behind it");
    }

    #[test]
    fn renames_bump_the_revision() {
        let t = ThreadTable::default();
        let order = t.see(5, info("a"), None);
        let first = t.changed_since(order, 0).unwrap();
        assert_eq!(t.changed_since(order, first.revision), None);
        t.see(5, info("a"), None);
        assert_eq!(
            t.changed_since(order, first.revision),
            None,
            "same info, same revision"
        );
        t.see(5, info("b"), None);
        let renamed = t.changed_since(order, first.revision).unwrap();
        assert_eq!(renamed.info.name, "b");
    }

    #[test]
    fn an_ended_thread_keeps_the_group_it_ran_in() {
        let t = ThreadTable::default();
        let order = t.see(5, info("waiter"), None);
        let first = t.changed_since(order, 0).unwrap();
        let ended = ThreadInfo {
            group: String::new(),
            parent: String::new(),
            ..info("waiter")
        };
        t.see(5, ended, None);
        assert_eq!(
            t.changed_since(order, first.revision),
            None,
            "seen once more as it ends, nothing changed"
        );
    }

    #[test]
    fn exclusions_and_forgetting() {
        let t = ThreadTable::default();
        t.mark_agent(7);
        t.mark_not_java(8);
        assert!(t.is_excluded(7) && t.is_excluded(8) && !t.is_excluded(9));
        t.see(1, info("x"), Some(8));
        assert!(
            !t.is_excluded(8),
            "a thread that attached is Java after all"
        );
        t.forget_tid(8);
        assert_eq!(t.order_of_tid(8), None);
        let anon = t.see_anonymous(9, "GC Thread#0".into());
        assert_eq!(t.see_anonymous(9, "other".into()), anon);
    }

    #[test]
    fn this_process_lists_its_own_thread() {
        assert!(process_tids().contains(&gettid()));
        assert!(!kernel_thread_name(gettid()).is_empty());
    }
}
