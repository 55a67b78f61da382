//! The Thread.start -> run link (issue 15) on a real traced JVM: eight threads
//! started in a loop (from one call site, from a traced helper, by a thread pool)
//! that make their first traced call in scrambled order each hang under their
//! own start() call, with and without `java.lang.Thread#start` traced.

mod support;

use std::path::{Path, PathBuf};

use jscope_analysis::trace::{CallTree, NodeRef, TraceOptions};
use jscope_testkit::{compile_fixtures, javas, Java};
use support::*;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_fixtures"))
}

const PATTERNS: &str = "Starts#main;Starts#work;Starts#launch;Starts#viaPool";

/// Runs Starts traced with `patterns` and builds its call tree.
fn traced_tree(java: &Java, name: &str, patterns: &str) -> CallTree {
    let (file, printed) = agent_run(
        java,
        &format!("trace-starts-{name}-{}", java.major),
        &["-Xverify:all"],
        &format!("trace={patterns}"),
        &classes(),
        &["Starts"],
        120,
    );
    assert_eq!(
        printed, "started w0 w1 w2 w3 w4 w5 w6 w7\n",
        "the names in start order"
    );
    let bytes = std::fs::read(&file).unwrap();
    CallTree::from_bytes(&bytes, &TraceOptions::default())
        .unwrap()
        .0
}

fn label(tree: &CallTree, r: NodeRef) -> &str {
    tree.label(tree.node(r).method)
}

/// Every call of `label` on thread `t`, in pre-order (= call order on one thread).
fn calls_of(tree: &CallTree, t: usize, label: &str) -> Vec<NodeRef> {
    (0..tree.threads[t].nodes.len())
        .map(|node| NodeRef { thread: t, node })
        .filter(|&r| tree.label(tree.node(r).method) == label)
        .collect()
}

fn thread_named(tree: &CallTree, name: &str) -> usize {
    tree.threads
        .iter()
        .position(|t| t.name == name)
        .unwrap_or_else(|| panic!("no traced thread {name}"))
}

/// The call in main that started thread `k`, as the fixture makes them: the
/// first and second `launch` for w1 and w6, `viaPool` for w4, `main` otherwise.
fn starting_call(tree: &CallTree, main: usize, k: usize) -> NodeRef {
    match k {
        1 => calls_of(tree, main, "Starts.launch")[0],
        6 => calls_of(tree, main, "Starts.launch")[1],
        4 => calls_of(tree, main, "Starts.viaPool")[0],
        _ => calls_of(tree, main, "Starts.main")[0],
    }
}

fn assert_each_thread_under_its_own_start(java: &Java, tree: &CallTree, start_traced: bool) {
    let jdk = java.major;
    let main = thread_named(tree, "main");
    // Those inside Starts.main (the JVM may start a thread before main runs).
    let main_call = calls_of(tree, main, "Starts.main")[0];
    let inside = main_call.node..=main_call.node + tree.node(main_call).descendants as usize;
    let starts: Vec<NodeRef> = calls_of(tree, main, "java.lang.Thread.start")
        .into_iter()
        .filter(|r| inside.contains(&r.node))
        .collect();
    assert_eq!(starts.len(), if start_traced { 8 } else { 0 }, "JDK {jdk}");
    for k in 0..8 {
        let name = format!("w{k}");
        let t = thread_named(tree, &name);
        let root = tree.thread_roots(t).next().expect("a root call");
        assert_eq!(label(tree, root), "Starts.work", "JDK {jdk}: {name}");
        let at = tree.threads[t]
            .started_by
            .unwrap_or_else(|| panic!("JDK {jdk}: {name} is not linked"));
        let expected = if start_traced {
            // The k-th start() call, itself inside the call that made it.
            let start = *starts.get(k).expect("eight start calls");
            assert_eq!(tree.parent(start), Some(starting_call(tree, main, k)));
            start
        } else {
            starting_call(tree, main, k)
        };
        assert_eq!(
            (at, label(tree, at)),
            (expected, label(tree, expected)),
            "JDK {jdk}: {name} hangs under the wrong call"
        );
        assert!(tree.children(at).contains(&root), "JDK {jdk}: {name}");
        assert_eq!(tree.parent(root), Some(at));
    }
    // Threads started under one call come in start order.
    let under_main: Vec<&str> = tree
        .children(starting_call(tree, main, 0))
        .into_iter()
        .filter(|r| r.thread != main)
        .map(|r| tree.threads[r.thread].name.as_str())
        .collect();
    let expected: &[&str] = if start_traced {
        &[]
    } else {
        &["w0", "w2", "w3", "w5", "w7"]
    };
    assert_eq!(under_main, expected, "JDK {jdk}");
}

#[test]
fn eight_threads_started_in_a_loop_each_hang_under_their_own_start_call() {
    for java in javas() {
        let with_start = format!("{PATTERNS};java.lang.Thread#start");
        let tree = traced_tree(&java, "with-start", &with_start);
        assert_each_thread_under_its_own_start(&java, &tree, true);
        let tree = traced_tree(&java, "without-start", PATTERNS);
        assert_each_thread_under_its_own_start(&java, &tree, false);
    }
}
