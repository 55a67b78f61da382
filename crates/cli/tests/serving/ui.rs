//! The collector's web UI checked in headless Chromium: JVM list, live threads with
//! Pause, flame graph and call graph. Shared by the simulated-agent and real-JVM tests.

use std::time::{Duration, Instant};

use super::cdp::Browser;
use super::Served;

/// One JVM the UI should show.
pub struct Shown<'a> {
    pub id: &'a str,
    pub pid: u32,
    /// Part of its command line.
    pub command: &'a str,
    /// A method that must appear in its flame graph and call graph.
    pub method: &'a str,
}

fn goto(b: &mut Browser, url: &str) {
    // A new document each time: the app reads its hash once at start.
    b.goto("about:blank");
    b.goto(url);
}

/// The JVM list has a row per JVM with its pid, command line and status.
pub fn check_jvm_list(b: &mut Browser, served: &Served, jvms: &[Shown], shot: &str) {
    goto(b, &format!("{}/", served.url()));
    let wait = format!(
        "document.querySelectorAll('#jvms tbody tr').length >= {}",
        jvms.len()
    );
    b.wait_for(&wait, Duration::from_secs(20));
    for j in jvms {
        let row = b.html(&format!("#jvms tr[data-id=\"{}\"]", j.id));
        assert!(row.contains(&format!(">{}<", j.pid)), "{row}");
        assert!(row.contains(j.command), "{row}");
        assert!(row.contains(">connected<"), "{row}");
    }
    b.screenshot(shot);
}

/// Selecting `thread_name` shows `stack_method` with a line in its stack.
/// The threads view of `jvm` refreshes as snapshots arrive, Pause freezes it while
/// new ones keep arriving (the API has them), and Resume brings it up to date.
/// `more` makes new snapshots arrive and returns when the API has them.
pub fn check_threads_pause(
    b: &mut Browser,
    served: &Served,
    jvm: &Shown,
    thread_name: &str,
    stack_method: &str,
    more: &mut dyn FnMut(),
    shot: &str,
) {
    goto(b, &format!("{}/#tab=threads&jvm={}", served.url(), jvm.id));
    b.wait_for(
        "document.querySelectorAll('#threads tbody tr').length > 0",
        Duration::from_secs(20),
    );
    assert!(
        b.html("#threads")
            .contains(&format!("<td>{thread_name}</td>")),
        "thread {thread_name} listed"
    );
    // Selecting the thread shows its stack, with line numbers.
    b.eval(&format!(
        "[...document.querySelectorAll('#threads tbody tr')]\
         .find(tr => tr.children[2].textContent === {}).click()",
        serde_json::json!(thread_name)
    ));
    let frame = format!(
        "[...document.querySelectorAll('#stack tbody tr')].some(tr => \
         tr.children[0].textContent === {} && Number(tr.children[1].textContent) > 0)",
        serde_json::json!(stack_method)
    );
    b.wait_for(&frame, Duration::from_secs(10));
    let before = b.text("#threads-info");
    more();
    let changed = format!(
        "document.querySelector('#threads-info').textContent !== {}",
        serde_json::json!(before)
    );
    b.wait_for(&changed, Duration::from_secs(20));

    b.click("#pause");
    b.wait_for(
        "document.body.dataset.paused === 'true'",
        Duration::from_secs(5),
    );
    // Let a request that was in flight when Pause was clicked settle.
    std::thread::sleep(Duration::from_millis(1500));
    let frozen = threads_view(b);
    let api_before = served.json(&format!("/api/jvms/{}/threads", jvm.id))["at_s"].clone();
    more();
    let api_after = served.json(&format!("/api/jvms/{}/threads", jvm.id))["at_s"].clone();
    assert_ne!(api_before, api_after, "new snapshots arrived while paused");
    // Several refresh periods (1 s) pass with newer data on the server.
    let until = Instant::now() + Duration::from_millis(3000);
    while Instant::now() < until {
        assert_eq!(threads_view(b), frozen, "the paused view is frozen");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(b.html("#pause").contains(">Resume<"));
    b.screenshot(shot);

    let frozen_info = b.text("#threads-info");
    b.click("#pause");
    let resumed = format!(
        "document.body.dataset.paused === 'false' && \
         document.querySelector('#threads-info').textContent !== {}",
        serde_json::json!(frozen_info)
    );
    b.wait_for(&resumed, Duration::from_secs(20));
    assert!(b.html("#pause").contains(">Pause<"));
}

/// What the threads view shows of the JVM (the JVM picker, which tracks the JVM
/// list, is not part of it).
fn threads_view(b: &mut Browser) -> String {
    ["#threads-info", "#threads", "#stack"]
        .iter()
        .map(|s| b.html(s))
        .collect()
}

/// The flame graph tab draws the JVM's stored samples.
pub fn check_flame(b: &mut Browser, served: &Served, jvm: &Shown, shot: &str) {
    goto(b, &format!("{}/#tab=flame&jvm={}", served.url(), jvm.id));
    let js = format!(
        "(() => {{ const d = document.querySelector('#flame-frame').contentDocument; \
         return !!d && !!d.body && d.body.innerHTML.includes({}); }})()",
        serde_json::json!(jvm.method)
    );
    b.wait_for(&js, Duration::from_secs(30));
    b.screenshot(shot);
}

/// The call graph tab draws an SVG with a node per hot method and weighted edges.
pub fn check_call_graph(b: &mut Browser, served: &Served, jvm: &Shown, shot: &str) {
    goto(
        b,
        &format!("{}/#tab=callgraph&jvm={}", served.url(), jvm.id),
    );
    b.wait_for(
        "document.querySelectorAll('#cg-svg .cg-node').length >= 2",
        Duration::from_secs(30),
    );
    let labels = b.eval(
        "[...document.querySelectorAll('#cg-svg .cg-node title')].map(t => t.textContent.split('\\n')[0])",
    );
    let labels: Vec<String> = serde_json::from_value(labels).unwrap();
    assert!(
        labels.iter().any(|l| l == jvm.method),
        "{} drawn: {labels:?}",
        jvm.method
    );
    let edges = b.eval("document.querySelectorAll('#cg-svg .cg-edge').length");
    assert!(edges.as_u64().unwrap() >= 1, "calls drawn");
    // Nodes lower in the graph are callees: the first row holds a root.
    let widths = b.eval(
        "[...document.querySelectorAll('#cg-svg .cg-edge')].map(e => Number(e.getAttribute('stroke-width')))",
    );
    let widths: Vec<f64> = serde_json::from_value(widths).unwrap();
    assert!(
        widths.iter().all(|w| (1.0..=10.0).contains(w)),
        "{widths:?}"
    );
    b.screenshot(shot);
}
