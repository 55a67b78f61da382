//! Virtual threads (issue 16) on a real JVM, traced and cpu-sampled at once:
//! 10,000 virtual threads each call a traced method three times, every call
//! computing a little and sleeping 1 ms (every fifth thread also parks 1 ms), so
//! each unmounts in the middle of every call and may resume on another carrier.
//! `jscope stats` counts exactly 3N calls of at least 1 ms with nothing
//! unfinished, `jscope tree` shows one tree per virtual thread, named by its
//! name or `virtual-<id>`, and cpu samples taken while a virtual thread ran
//! belong to it, with its carrier kept (`--group-by carrier` counts them for the
//! carriers), as do snapshots of its carriers and its parks. Run on JDK 21 and 25; on JDK 17 (no virtual threads) nothing
//! changes.

mod support;

use std::path::{Path, PathBuf};

use jscope_analysis::trace::{CallTree, TraceOptions};
use jscope_testkit::{all_javas, compile_fixtures, virtual_thread_javas, Java};
use serde_json::Value;
use support::*;

const THREADS: usize = 10_000;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vthread_fixtures"))
}

/// Runs VThreads traced; None on a JDK without virtual threads.
fn traced_run(java: &Java) -> Option<PathBuf> {
    let (file, printed) = agent_run(
        java,
        &format!("trace-vthreads-{}", java.major),
        &[],
        "mode=cpu+snapshot,interval=1ms,snapinterval=20ms,events=park,parkthreshold=0,\
         trace=VThreads#task;VThreads#work",
        &classes(),
        &["VThreads", &THREADS.to_string()],
        180,
    );
    if printed == "no virtual threads\n" {
        assert!(java.major < 21, "JDK {} has virtual threads", java.major);
        return None;
    }
    assert_eq!(printed, format!("done {THREADS}\n"));
    Some(file)
}

fn tree_recording(bytes: &[u8]) -> jscope_format::Recording {
    jscope_format::Recording::from_bytes(bytes).unwrap()
}

fn method<'a>(stats: &'a Value, label: &str) -> &'a Value {
    stats["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["method"] == label)
        .unwrap_or_else(|| panic!("no {label} in {stats}"))
}

#[test]
fn each_virtual_thread_keeps_its_calls_across_unmount_and_mount() {
    let mut tested = 0;
    for java in all_javas() {
        let Some(file) = traced_run(&java) else {
            continue;
        };
        tested += 1;
        let path = file.to_str().unwrap();
        let jdk = java.major;

        let stats = jscope_json(&["stats", path, "--format", "json"]);
        let work = method(&stats, "VThreads.work");
        assert_eq!(work["calls"], 3 * THREADS as u64, "JDK {jdk}: {work}");
        let min = work["min_ns"].as_u64().unwrap();
        assert!(min >= 1_000_000, "JDK {jdk}: a 1 ms sleep took {min} ns");
        let task = method(&stats, "VThreads.task");
        assert_eq!(task["calls"], THREADS as u64, "JDK {jdk}: {task}");
        let anomalies = &stats["anomalies"];
        for key in ["unfinished", "unmatched_exits", "mismatched_exits"] {
            assert_eq!(anomalies[key], 0, "JDK {jdk}: {key} in {anomalies}");
        }

        // One tree per virtual thread: a task call with its three work calls.
        let bytes = std::fs::read(&file).unwrap();
        let tree = CallTree::from_bytes(&bytes, &TraceOptions::default())
            .unwrap()
            .0;
        let virtual_trees: Vec<_> = tree
            .threads
            .iter()
            .filter(|t| t.name.starts_with("vt-") || t.name.starts_with("virtual-"))
            .collect();
        assert_eq!(virtual_trees.len(), THREADS, "JDK {jdk}");
        for t in &virtual_trees {
            let roots: Vec<usize> = t.roots().collect();
            assert_eq!(roots.len(), 1, "JDK {jdk}: {} has {roots:?}", t.name);
            assert_eq!(tree.label(t.nodes[roots[0]].method), "VThreads.task");
            let works: Vec<usize> = t.children(roots[0]).collect();
            assert_eq!(works.len(), 3, "JDK {jdk}: {}", t.name);
            for w in works {
                assert_eq!(tree.label(t.nodes[w].method), "VThreads.work");
                assert!(t.nodes[w].duration_ns() >= 1_000_000, "JDK {jdk}");
            }
        }
        // Named ones by name (even i), the others by their Java id.
        let named = virtual_trees
            .iter()
            .filter(|t| t.name.starts_with("vt-"))
            .count();
        assert_eq!(named, THREADS / 2, "JDK {jdk}");
        for name in ["vt-0", "vt-998", &format!("vt-{}", THREADS - 2)] {
            assert!(
                virtual_trees.iter().any(|t| t.name == name),
                "JDK {jdk}: no tree for {name}"
            );
        }

        // Each names the carrier it started on (a platform thread of the JVM).
        let rec = tree_recording(&bytes);
        let vt0 = rec.threads.values().find(|t| t.name == "vt-0").unwrap();
        assert!(
            vt0.group.starts_with("virtual (carrier "),
            "JDK {jdk}: {vt0:?}"
        );
        assert!(vt0.java_id > 0 && vt0.os_tid == 0, "JDK {jdk}: {vt0:?}");

        // Cpu samples taken while a virtual thread ran are the virtual thread's,
        // with the carrier (a platform thread) it ran on.
        let on_virtual: Vec<_> = rec.samples.iter().filter(|s| s.carrier.0 != 0).collect();
        // By their top Java frame (kernel and native frames may lie above it: cpu
        // mode's mixed stacks). The spin is the most sampled; a virtual thread's
        // timed park costs CPU too (its yield, the mount events).
        let mut by_top: std::collections::HashMap<String, usize> = Default::default();
        for s in &on_virtual {
            if let Some(f) = rec.stack(s.stack).iter().find(|f| f.kind.is_java()) {
                *by_top.entry(rec.method_label(f.method)).or_default() += 1;
            }
        }
        let spinning = by_top.get("VThreads.spin").copied().unwrap_or(0);
        let most = by_top.values().copied().max().unwrap_or(0);
        assert!(
            spinning >= 20 && spinning == most && spinning * 4 >= on_virtual.len(),
            "JDK {jdk}: {spinning} of {} virtual threads' samples in VThreads.spin, {} samples; by top Java frame {by_top:?}",
            on_virtual.len(),
            rec.samples.len()
        );
        for s in &on_virtual {
            let (t, c) = (&rec.threads[&s.thread], &rec.threads[&s.carrier]);
            assert!(
                t.os_tid == 0 && t.java_id > 0 && t.group.starts_with("virtual"),
                "JDK {jdk}: {t:?}"
            );
            assert!(
                c.os_tid != 0 && !c.group.starts_with("virtual"),
                "JDK {jdk}: {c:?}"
            );
        }
        let virtual_threads: std::collections::HashSet<_> =
            on_virtual.iter().map(|s| s.thread).collect();
        assert!(
            virtual_threads.len() >= 10,
            "JDK {jdk}: {virtual_threads:?}"
        );
        // Reports count them for the virtual threads, or for their carriers.
        let report = |group: &str, thread: &str| {
            let j = jscope_json(&[
                "report",
                path,
                "--group-by",
                group,
                "--thread",
                thread,
                "--format",
                "json",
            ]);
            j["samples"].as_u64().unwrap_or_else(|| panic!("{j}"))
        };
        let named = report("virtual", "vt-*") + report("virtual", "virtual-*");
        assert_eq!(named, on_virtual.len() as u64, "JDK {jdk}");
        assert_eq!(
            report("carrier", "vt-*") + report("carrier", "virtual-*"),
            0
        );
        assert!(report("carrier", "ForkJoinPool-*") >= on_virtual.len() as u64);

        // Snapshots too: a carrier running a virtual thread stands for it, with
        // the virtual thread's own stack.
        let entries: Vec<_> = rec
            .snapshots
            .iter()
            .flat_map(|s| &s.threads)
            .filter(|t| t.carrier.0 != 0)
            .collect();
        let in_task = entries
            .iter()
            .filter(|t| {
                rec.stack(t.stack)
                    .iter()
                    .any(|f| rec.method_label(f.method) == "VThreads.task")
            })
            .count();
        assert!(
            in_task >= 5 && in_task * 2 >= entries.len(),
            "JDK {jdk}: {in_task} of {} snapshot entries of virtual threads in VThreads.task",
            entries.len()
        );
        for t in &entries {
            assert_eq!(rec.threads[&t.thread].os_tid, 0, "JDK {jdk}");
            assert_ne!(rec.threads[&t.carrier].os_tid, 0, "JDK {jdk}");
        }

        // Parks inside VThreads.work are the virtual threads' own: every fifth
        // thread parks in each of its three calls, looping until 1 ms has passed.
        // The loop's time is not all parked time: a carrier the OS preempts
        // between two parks of the loop (a loaded 2-core machine does, for a
        // millisecond at a time) shortens that thread's parked total, so the
        // typical thread is held to the 3 ms, not every one of the 2,000.
        let mut parked: std::collections::HashMap<u32, (u64, u32)> = Default::default();
        for e in &rec.events {
            if let jscope_format::EventKind::Park {
                duration_ns, stack, ..
            } = e.kind
            {
                let frames = rec.stack(stack);
                if !frames
                    .iter()
                    .any(|f| rec.method_label(f.method) == "VThreads.work")
                {
                    continue;
                }
                let t = &rec.threads[&e.thread];
                assert!(
                    t.os_tid == 0 && t.group.starts_with("virtual"),
                    "JDK {jdk}: {t:?}"
                );
                let entry = parked.entry(e.thread.0).or_default();
                entry.0 += duration_ns;
                entry.1 += 1;
            }
        }
        assert_eq!(parked.len(), THREADS / 5, "JDK {jdk}");
        assert!(
            parked.values().all(|&(_, parks)| parks >= 3),
            "JDK {jdk}: a thread with fewer parks than calls: {:?}",
            parked.values().map(|&(_, parks)| parks).min()
        );
        let mut totals: Vec<u64> = parked.values().map(|&(ns, _)| ns).collect();
        totals.sort_unstable();
        assert!(
            totals[totals.len() / 2] >= 2_900_000,
            "JDK {jdk}: median parked time {} ns (min {}, max {})",
            totals[totals.len() / 2],
            totals[0],
            totals[totals.len() - 1]
        );
        let vt0_id = rec
            .threads
            .iter()
            .find(|(_, t)| t.name == "vt-0")
            .unwrap()
            .0;
        assert!(parked.contains_key(&vt0_id.0), "JDK {jdk}: vt-0 parks");

        // `jscope tree` prints them under their names.
        let out = jscope(&["tree", path]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("VThreads.task [vt-0]"), "JDK {jdk}");
        assert!(text.contains("VThreads.work [vt-998]"), "JDK {jdk}");
        let unnamed = text
            .lines()
            .filter(|l| l.starts_with("  VThreads.task [virtual-"))
            .count();
        assert_eq!(unnamed, THREADS / 2, "JDK {jdk}");
    }
    // Every JDK with virtual threads ran them (none is a failure under CI=true).
    assert_eq!(tested, virtual_thread_javas().len());
}
