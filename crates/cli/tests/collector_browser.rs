//! The collector's web UI in headless Chromium, served by `jscope serve`, over
//! simulated agents (real protocol and chunks) whose new snapshots the test controls:
//! JVM list, live threads refreshing and frozen by Pause, flame graph, call graph.
//! And over real JVMs streaming to `jscope serve`: the trace tree browser (find-next
//! in tree order, node info against `jscope stats`, the mapper following the scroll),
//! the sandwich view and the diff view of two runs where one method became slower,
//! and `jscope diff --collector` on the same two JVMs.
//! Skipped with a notice when Chromium is absent.

#[path = "../../collector/tests/common/sim.rs"]
mod common;
mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::SimJvm;
use jscope_testkit::{compile_fixtures, javas, temp_dir, wait_until};
use serde_json::{json, Value};
use serving::cdp::Browser;
use serving::ui::{self, Shown};
use serving::Served;
use support::{jscope, jscope_bin, jscope_json, start_logged, stderr};

#[test]
fn ui_over_simulated_agents_in_chromium() {
    let Some(mut browser) = Browser::launch("sim") else {
        return;
    };
    let served = serving::serve(&jscope_bin(), &temp_dir("cli-collector-browser"), &[]);
    let agents = served.agents.unwrap();
    let mut shop = SimJvm::new(6101, "com.acme.Shop --port 8080");
    let mut billing = SimJvm::new(6102, "com.acme.Billing");
    let mut shop_client = shop.connect(agents, 1);
    let mut billing_client = billing.connect(agents, 1);
    let mut seq = 0;
    for _ in 0..3 {
        seq += 1;
        shop_client.send(seq, &shop.chunk()).unwrap();
        billing_client.send(seq, &billing.chunk()).unwrap();
    }
    shop_client
        .wait_for_ack(seq, Duration::from_secs(10))
        .unwrap();
    billing_client
        .wait_for_ack(seq, Duration::from_secs(10))
        .unwrap();

    let shown = [
        Shown {
            id: &shop.stream,
            pid: 6101,
            command: "com.acme.Shop --port 8080",
            method: "com.acme.App6101.work",
        },
        Shown {
            id: &billing.stream,
            pid: 6102,
            command: "com.acme.Billing",
            method: "com.acme.App6102.work",
        },
    ];
    ui::check_jvm_list(&mut browser, &served, &shown, "cli-sim-jvms.png");

    // New snapshots of the shop arrive when the check asks for them.
    let shop_id = shop.stream.clone();
    let mut more = || {
        seq += 1;
        shop_client.send(seq, &shop.chunk()).unwrap();
        shop_client
            .wait_for_ack(seq, Duration::from_secs(10))
            .unwrap();
        let want = seq;
        assert!(wait_until(Duration::from_secs(10), || {
            served
                .json("/api/jvms")
                .as_array()
                .unwrap()
                .iter()
                .any(|j| j["id"] == shop_id.as_str() && j["last_seq"] == want)
        }));
    };
    let shown_shop = Shown {
        id: &shop_id,
        pid: 6101,
        command: "com.acme.Shop",
        method: "com.acme.App6101.work",
    };
    ui::check_threads_pause(
        &mut browser,
        &served,
        &shown_shop,
        "worker-2",
        "com.acme.App6101.main",
        &mut more,
        "cli-sim-threads-paused.png",
    );
    ui::check_flame(&mut browser, &served, &shown_shop, "cli-sim-flame.png");
    ui::check_call_graph(&mut browser, &served, &shown_shop, "cli-sim-callgraph.png");
    assert!(served.interrupt());
}

fn fixtures(dir: &str) -> PathBuf {
    compile_fixtures(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(dir),
    )
}

/// The stream id of each pid once the collector has all of its data (the agent
/// said goodbye after its last chunk was acknowledged).
fn stored_ids(served: &Served, pids: &[u32]) -> Vec<String> {
    let mut ids = Vec::new();
    let all_gone = wait_until(Duration::from_secs(30), || {
        let jvms = served.json("/api/jvms");
        let rows = jvms.as_array().unwrap();
        ids = pids
            .iter()
            .filter_map(|&pid| {
                rows.iter()
                    .find(|j| j["pid"] == json!(pid) && j["status"] == "gone")
                    .map(|j| j["id"].as_str().unwrap().to_string())
            })
            .collect();
        ids.len() == pids.len()
    });
    assert!(all_gone, "every JVM streamed and disconnected");
    ids
}

fn goto(b: &mut Browser, url: &str) {
    // A new document each time: the app reads its hash once at start.
    b.goto("about:blank");
    b.goto(url);
}

/// A field of the tree browser's node-info panel: its text and its ns value.
fn info(b: &mut Browser, field: &str) -> (String, Option<u64>) {
    let cell = b.eval(&format!(
        "(() => {{ const c = document.querySelector('#tb-info td[data-field=\"{field}\"]'); \
         return c ? [c.textContent, c.dataset.ns || null] : ['', null]; }})()"
    ));
    (
        cell[0].as_str().unwrap().to_string(),
        cell[1].as_str().map(|v| v.parse().unwrap()),
    )
}

fn wait_match(b: &mut Browser, at: usize) {
    b.wait_for(
        &format!("document.querySelector('#tb-found').dataset.at === '{at}'"),
        Duration::from_secs(20),
    );
}

/// Find-next walks the calls of TracedApp.depth in tree order: main's four nested
/// calls, then the three of the thread TracedApp.launch started, then wraps.
fn check_find_next(b: &mut Browser, served: &Served, traced: &str) {
    goto(
        b,
        &format!(
            "{}/#tab=tree&jvm={traced}&find=TracedApp.depth",
            served.url()
        ),
    );
    wait_match(b, 0);
    let api = served.json(&format!("/api/jvms/{traced}/tree?find=TracedApp.depth"));
    let matches = api["matches"].as_array().unwrap();
    assert_eq!(api["count"], json!(7), "{api}");
    let mut walked = Vec::new();
    for k in 0..matches.len() {
        let want = matches[k].as_array().unwrap().last().unwrap().clone();
        let id = b.eval("document.querySelector('#tb-info').dataset.id");
        assert_eq!(id, want, "match {k} selected");
        // Selected, marked and scrolled into view.
        let row = b.html(&format!(
            "#tb-rows .tb-row[data-id=\"{}\"]",
            id.as_str().unwrap()
        ));
        assert!(row.contains("selected") && row.contains("match"), "{row}");
        let (call, call_ns) = info(b, "call");
        assert!(call.ends_with(" s"), "{call}");
        walked.push((
            info(b, "method").0,
            info(b, "caller").0,
            info(b, "thread").0,
            call_ns.unwrap(),
        ));
        b.click("#tb-next");
        wait_match(b, (k + 1) % matches.len());
    }
    let callers: Vec<(&str, &str)> = walked
        .iter()
        .map(|(_, caller, thread, _)| (caller.as_str(), thread.as_str()))
        .collect();
    assert_eq!(
        callers,
        [
            ("TracedApp.main", "main"),
            ("TracedApp.depth", "main"),
            ("TracedApp.depth", "main"),
            ("TracedApp.depth", "main"),
            ("TracedApp.task", "traced-task"),
            ("TracedApp.depth", "traced-task"),
            ("TracedApp.depth", "traced-task"),
        ]
    );
    assert!(walked.iter().all(|w| w.0 == "TracedApp.depth"));
    assert!(
        walked.windows(2).all(|w| w[0].3 < w[1].3),
        "in order of entry: {walked:?}"
    );
}

/// The keys of the tree: from main's first depth() call (match 1, selected), Up
/// is main, Left closes it, Right opens it and goes to its first callee, Left
/// closes that and goes up again, F3 is the next match.
fn check_keys(b: &mut Browser) {
    let key = |b: &mut Browser, k: &str| {
        b.eval(&format!(
            "document.querySelector('#tb-scroll').dispatchEvent(new KeyboardEvent('keydown', {{ key: '{k}', bubbles: true }}))"
        ));
    };
    let selected = |b: &mut Browser| {
        b.eval("document.querySelector('#tb-info').dataset.id")
            .as_str()
            .unwrap()
            .to_string()
    };
    let rows = |b: &mut Browser| {
        b.eval("parseFloat(document.querySelector('#tb-spacer').style.height) / 20")
            .as_f64()
            .unwrap() as u64
    };
    wait_match(b, 0);
    let first = selected(b);
    key(b, "ArrowUp");
    assert_eq!(info(b, "method").0, "TracedApp.main");
    let main = selected(b);
    let open = rows(b);
    key(b, "ArrowLeft");
    b.wait_for(
        "parseFloat(document.querySelector('#tb-spacer').style.height) === 2 * 20",
        Duration::from_secs(10),
    );
    key(b, "ArrowRight");
    b.wait_for(
        &format!("parseFloat(document.querySelector('#tb-spacer').style.height) === {open} * 20"),
        Duration::from_secs(10),
    );
    key(b, "ArrowRight");
    assert_eq!(selected(b), first);
    key(b, "ArrowLeft");
    b.wait_for(
        &format!(
            "parseFloat(document.querySelector('#tb-spacer').style.height) === ({open} - 3) * 20"
        ),
        Duration::from_secs(10),
    );
    key(b, "ArrowLeft");
    assert_eq!(selected(b), main);
    key(b, "F3");
    wait_match(b, 1);
    assert!(rows(b) == open, "the match's ancestors opened again");
}

/// The three pause calls' node info (clicked from the method table) shows the
/// durations `jscope stats` gives for the same stored recording.
fn check_node_info(b: &mut Browser, served: &Served, traced: &str, dir: &Path) {
    let (status, bytes) = served.get(&format!("/api/jvms/{traced}/recording"));
    assert_eq!(status, 200);
    let file = dir.join("traced.jsc");
    std::fs::write(&file, bytes).unwrap();
    let stats = jscope_json(&["stats", file.to_str().unwrap(), "--format", "json"]);
    let pause = stats["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["method"] == "TracedApp.pause")
        .expect("pause in the stats")
        .clone();
    let ns = |k: &str| pause[k].as_u64().unwrap();
    let (min, max, total, cpu) = (ns("min_ns"), ns("max_ns"), ns("total_ns"), ns("cpu_ns"));

    // The method table is linked to the tree: a click finds the method's calls.
    b.click("#tb-stats tr[data-method=\"TracedApp.pause\"]");
    b.wait_for(
        "document.querySelector('#tb-found').textContent === 'match 1 of 3'",
        Duration::from_secs(20),
    );
    let (mut durations, mut cpus) = (Vec::new(), Vec::new());
    for k in 0..3 {
        wait_match(b, k);
        assert_eq!(info(b, "method").0, "TracedApp.pause");
        assert_eq!(info(b, "caller").0, "TracedApp.main");
        let d = info(b, "duration").1.unwrap();
        let (call, ret) = (info(b, "call").1.unwrap(), info(b, "return").1.unwrap());
        assert_eq!(ret - call, d, "return - call is the duration");
        // Thread.sleep is not traced: all of pause's time is its own.
        assert_eq!(info(b, "self").1, Some(d));
        assert!(info(b, "duration").0.ends_with(" ms"));
        // Recorded with tracecpu: sleeping takes little of the thread's CPU.
        let c = info(b, "cpu").1.expect("CPU time shown");
        assert!(c < d, "cpu {c} ns of {d} ns");
        durations.push(d);
        cpus.push(c);
        b.click("#tb-next");
    }
    // pause(1), pause(2), pause(3) as a set: a slow wake-up may reorder them.
    let mut sorted = durations.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [min, total - min - max, max], "{durations:?}");
    assert!(
        durations[0] >= 1_000_000 && durations[2] >= 3_000_000,
        "{durations:?}"
    );
    assert_eq!(
        cpus.iter().sum::<u64>(),
        cpu,
        "each call's CPU time: {cpus:?}"
    );
    b.screenshot("cli-tree-browser.png");

    // The same calls in the merged tree across the stored JVMs (the Shift JVMs
    // have no traces): the same durations.
    b.eval(
        "const s = document.querySelector('#tb-source'); s.value = 'distributed'; s.onchange();",
    );
    b.wait_for(
        "document.body.dataset.treeReady === 'true' && \
         document.querySelector('#tb-summary').textContent.startsWith('3 JVMs')",
        Duration::from_secs(30),
    );
    b.eval("document.querySelector('#tb-find').value = 'TracedApp.pause'; document.querySelector('#tb-find-go').click();");
    let mut merged = Vec::new();
    for k in 0..3 {
        wait_match(b, k);
        assert_eq!(info(b, "jvm").0, traced);
        merged.push(info(b, "duration").1.unwrap());
        b.click("#tb-next");
    }
    assert_eq!(merged, durations);
}

/// The mapper's marker follows the scroll, and a click on the mapper scrolls there.
fn check_mapper(b: &mut Browser, served: &Served, traced: &str) {
    goto(
        b,
        &format!(
            "{}/#tab=tree&jvm={traced}&find=TracedApp.depth",
            served.url()
        ),
    );
    wait_match(b, 0);
    // The last match: both threads' paths open, 17 rows.
    b.click("#tb-prev");
    wait_match(b, 6);
    // A short view, so the tree shown (about 16 rows) scrolls.
    b.eval(
        "for (const s of ['#tb-scroll', '#tb-mapper']) { const e = document.querySelector(s); \
         e.style.minHeight = '0'; e.style.height = '120px'; } \
         document.querySelector('#tb-scroll').scrollTop = 0; \
         document.querySelector('#tb-scroll').dispatchEvent(new Event('scroll'));",
    );
    b.wait_for(
        "document.querySelector('#tb-marker').dataset.top === '0.0' && \
         document.querySelector('#tb-scroll').scrollHeight > 240",
        Duration::from_secs(10),
    );
    let height = |b: &mut Browser| {
        b.eval("parseFloat(document.querySelector('#tb-marker').style.height)")
            .as_f64()
            .unwrap()
    };
    let at_top = height(b);
    assert!(
        at_top < 70.0,
        "the marker is the part in view: {at_top}px of 120"
    );
    b.eval("const s = document.querySelector('#tb-scroll'); s.scrollTop = s.scrollHeight;");
    let moved = b.wait_for(
        "(() => { const t = Number(document.querySelector('#tb-marker').dataset.top); \
         return t > 40 ? t : 0; })()",
        Duration::from_secs(10),
    );
    let bottom = moved.as_f64().unwrap() + height(b);
    assert!(
        (bottom - 120.0).abs() < 2.0,
        "marker at the bottom: ends at {bottom}"
    );
    b.screenshot("cli-tree-mapper.png");
    // A click on the mapper's top jumps back there.
    b.eval(
        "(() => { const m = document.querySelector('#tb-map'); const r = m.getBoundingClientRect(); \
         m.dispatchEvent(new MouseEvent('click', { clientX: r.left + 5, clientY: r.top + 1, bubbles: true })); })()",
    );
    b.wait_for(
        "document.querySelector('#tb-scroll').scrollTop === 0 && \
         document.querySelector('#tb-marker').dataset.top === '0.0'",
        Duration::from_secs(10),
    );
}

/// The sandwich of Shift.grows has Shift.main among its callers; Shift.main's has
/// Shift.grows among its callees.
fn check_sandwich(b: &mut Browser, served: &Served, jvm: &str) {
    goto(
        b,
        &format!(
            "{}/#tab=sandwich&jvm={jvm}&method=Shift.grows",
            served.url()
        ),
    );
    b.wait_for(
        "document.body.dataset.sandwichReady === 'true' && \
         document.querySelector('#sw-focus').textContent.startsWith('Shift.grows: ')",
        Duration::from_secs(30),
    );
    let level = |b: &mut Browser, table: &str| -> Vec<String> {
        serde_json::from_value(b.eval(&format!(
            "[...document.querySelectorAll('#{table} tbody tr[data-depth=\"1\"]')].map(r => r.dataset.method)"
        )))
        .unwrap()
    };
    let callers = level(b, "sw-callers");
    assert!(callers.iter().any(|m| m == "Shift.main"), "{callers:?}");
    b.screenshot("cli-sandwich.png");
    b.click("#sw-methods tr[data-method=\"Shift.main\"]");
    b.wait_for(
        "document.querySelector('#sw-focus').textContent.startsWith('Shift.main: ')",
        Duration::from_secs(10),
    );
    let callees = level(b, "sw-callees");
    for m in ["Shift.grows", "Shift.steady", "Shift.other"] {
        assert!(callees.iter().any(|c| c == m), "{m} in {callees:?}");
    }
}

/// The diff view of the two Shift runs (chosen by JVM, or by their agent label)
/// ranks Shift.grows first, grown, and draws the differential flame graph with
/// Shift.grows red.
fn check_diff_view(b: &mut Browser, served: &Served, base: &str, new: &str) {
    goto(
        b,
        &format!("{}/#tab=diff&base={base}&new={new}", served.url()),
    );
    b.wait_for(
        "document.body.dataset.diffReady === 'true' && \
         document.querySelectorAll('#diff-table tbody tr').length >= 3",
        Duration::from_secs(30),
    );
    assert_eq!(b.text("#diff-error"), "");
    assert_eq!(
        b.eval("document.querySelector('#diff-base').value"),
        json!(base)
    );
    assert_eq!(
        b.eval("document.querySelector('#diff-new').value"),
        json!(new)
    );
    let first = b.html("#diff-table tbody tr");
    assert!(
        first.contains("data-method=\"Shift.grows\"") && first.contains("class=\"grew\""),
        "{first}"
    );
    let grows = b.wait_for(
        "(() => { const d = document.querySelector('#diff-frame').contentDocument; \
         if (!d || !d.body) return ''; \
         const t = [...d.querySelectorAll('title')].find(t => t.textContent.startsWith('Shift.grows (')); \
         return t ? t.parentNode.outerHTML : ''; })()",
        Duration::from_secs(30),
    );
    let grows = grows.as_str().unwrap();
    assert!(grows.contains("rgb(255,"), "Shift.grows is red: {grows}");
    b.screenshot("cli-diff.png");
}

#[test]
fn tree_browser_sandwich_and_diff_over_real_jvms_in_chromium() {
    let Some(mut browser) = Browser::launch("real") else {
        return;
    };
    let java = javas().into_iter().next().expect("a java");
    let dir = temp_dir("cli-collector-browser-real");
    let served = serving::serve(&jscope_bin(), &dir.join("data"), &[]);
    let agents = served.agents.unwrap();
    let (traced_classes, shift_classes) = (fixtures("trace_fixtures"), fixtures("diff_fixtures"));
    let mut traced = start_logged(
        &java,
        &dir,
        "traced",
        &format!("trace=TracedApp;java.lang.Thread#start,tracecpu,quiet,collector={agents}"),
        &traced_classes,
        &["TracedApp"],
    );
    // The same 2 s of CPU; in the new run grows() spins four times as long.
    let sampled =
        |run: &str| format!("mode=cpu,interval=5ms,quiet,labels=run:{run},collector={agents}");
    let mut base = start_logged(
        &java,
        &dir,
        "base",
        &sampled("base"),
        &shift_classes,
        &["Shift", "2", "1"],
    );
    let mut new = start_logged(
        &java,
        &dir,
        "new",
        &sampled("new"),
        &shift_classes,
        &["Shift", "2", "4"],
    );
    let pids = [traced.id(), base.id(), new.id()];
    for (p, name) in [
        (&mut traced, "traced"),
        (&mut base, "base"),
        (&mut new, "new"),
    ] {
        let status = p
            .wait_timeout(Duration::from_secs(120))
            .expect("the JVM exits");
        assert!(status.success(), "{name}: {status}");
    }
    let ids = stored_ids(&served, &pids);
    let (traced_id, base_id, new_id) = (&ids[0], &ids[1], &ids[2]);

    check_find_next(&mut browser, &served, traced_id);
    check_keys(&mut browser);
    check_node_info(&mut browser, &served, traced_id, &dir);
    check_mapper(&mut browser, &served, traced_id);
    check_sandwich(&mut browser, &served, new_id);
    check_diff_view(&mut browser, &served, base_id, new_id);
    check_diff_view(&mut browser, &served, "label:run=base", "label:run=new");
    let by_label = served.json("/api/diff?base_label=run=base&new_label=run=new&limit=1");
    assert_eq!(by_label["diff"]["methods"][0]["method"], "Shift.grows");
    assert_eq!(by_label["base"]["jvms"], json!([base_id]));

    // The CLI on the same collector: sides by pid, and one JVM's two time ranges.
    let url = served.url();
    let (base_pid, new_pid) = (pids[1].to_string(), pids[2].to_string());
    let json: Value = jscope_json(&[
        "diff",
        "--collector",
        &url,
        &base_pid,
        &new_pid,
        "--format",
        "json",
    ]);
    assert_eq!(json["methods"][0]["method"], "Shift.grows", "{json:#}");
    assert!(
        json["methods"][0]["self_delta"].as_f64().unwrap() > 15.0,
        "{json:#}"
    );
    // Split where the JVM's records are half done, not at a fixed second: on a loaded
    // machine the agent's start-up can take the whole first second.
    let segments = served.json(&format!("/api/jvms/{new_id}"));
    let started = segments["jvm"]["started_ns"].as_f64().unwrap();
    let span = |key: &'static str| -> Vec<f64> {
        let all = segments["segments"].as_array().unwrap();
        all.iter().map(|s| s[key].as_f64().unwrap()).collect()
    };
    let first_ns = span("start_ns").into_iter().fold(f64::MAX, f64::min);
    let last_ns = span("end_ns").into_iter().fold(0.0, f64::max);
    let mid = format!("{:.3}", ((first_ns + last_ns) / 2.0 - started) / 1e9);
    let halves = jscope_json(&[
        "diff",
        "--collector",
        &url,
        &format!("{new_pid}@0..{mid}"),
        &format!("{new_pid}@{mid}.."),
        "--format",
        "json",
    ]);
    let whole = served.json(&format!("/api/diff?base_jvm={new_id}&new_jvm={new_id}"));
    let (first, second) = (
        halves["base_samples"].as_u64().unwrap(),
        halves["new_samples"].as_u64().unwrap(),
    );
    assert!(first > 0 && second > 0, "split at {mid} s: {halves}");
    assert_eq!(
        first + second,
        whole["diff"]["new_samples"].as_u64().unwrap()
    );
    let out = jscope(&[
        "diff",
        "--collector",
        &url,
        &format!("{new_pid}@2..1"),
        &base_pid,
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.starts_with("jscope: base side: the range of ") && err.lines().count() == 1,
        "{err}"
    );
    assert!(served.interrupt());
}

/// A traced recording of `App.main` handling `requests` requests, each `App.handle`
/// -> `App.parse`, `App.query` (-> 3 x `Db.exec`), `App.render`.
fn wide_trace(requests: u64) -> Vec<u8> {
    use jscope_format::*;
    let header = Header {
        pid: 4242,
        command_line: "java App".into(),
        ticks_per_second: 1_000_000_000,
        modes: "trace".into(),
        ..Header::default()
    };
    let mut b = jscope_testkit::RecordingBuilder::with_header(header);
    let methods = [
        "App.main",
        "App.handle",
        "App.parse",
        "App.query",
        "Db.exec",
        "App.render",
    ]
    .map(|label| b.method_with(label, "", 9));
    let mut at = 0u64;
    let mut events = Vec::new();
    let mut ev = |kind, method: usize, step: u64| {
        at += step;
        events.push(TraceEvent {
            kind,
            method: methods[method - 1],
            ticks: at,
            untraced: 0,
            cpu_ns: 0,
        });
    };
    use TraceKind::{Enter, Exit};
    ev(Enter, 1, 1000);
    for r in 0..requests {
        ev(Enter, 2, 500);
        ev(Enter, 3, 100);
        ev(Exit, 3, 2_000 + r);
        ev(Enter, 4, 100);
        for _ in 0..3 {
            ev(Enter, 5, 50);
            ev(Exit, 5, 10_000);
        }
        ev(Exit, 4, 100);
        ev(Enter, 6, 100);
        ev(Exit, 6, 3_000);
        ev(Exit, 2, 200);
    }
    ev(Exit, 1, 1000);
    b.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events,
    });
    b.bytes(None)
}

/// A call with 1,200 callees (`jscope view FILE`): the browser fetches them in pages
/// of 500, find-next jumps to a match in a page not fetched yet, the pages between
/// stay one "not loaded" row until it is clicked.
#[test]
fn tree_browser_pages_a_wide_tree_in_chromium() {
    let Some(mut b) = Browser::launch("wide") else {
        return;
    };
    let dir = temp_dir("cli-tree-wide");
    let file = dir.join("wide.jsc");
    std::fs::write(&file, wide_trace(1200)).unwrap();
    let served = serving::start(
        &jscope_bin(),
        &["view", file.to_str().unwrap(), "--http", "127.0.0.1:0"],
    );
    let id = served.json("/api/jvms")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let top = served.json(&format!("/api/jvms/{id}/tree"));
    assert_eq!(
        (&top["calls"], &top["total"]),
        (&json!(1 + 7 * 1200), &json!(1))
    );
    let main = top["nodes"][0]["id"].as_str().unwrap().to_string();
    let kids = served.json(&format!("/api/jvms/{id}/tree?node={main}&offset=1000"));
    assert_eq!(kids["total"], json!(1200));
    assert_eq!(kids["nodes"].as_array().unwrap().len(), 200);
    let found = served.json(&format!("/api/jvms/{id}/tree?find=App.render"));
    assert_eq!(found["count"], json!(1200));
    let last = found["matches"][1199].as_array().unwrap();
    assert_eq!(found["indexes"][1199], json!([0, 1199, 2]));

    goto(
        &mut b,
        &format!("{}/#tab=tree&jvm={id}&find=App.render", served.url()),
    );
    wait_match(&mut b, 0);
    b.click("#tb-prev");
    wait_match(&mut b, 1199);
    assert_eq!(
        b.eval("document.querySelector('#tb-info').dataset.id"),
        last[2]
    );
    assert_eq!(info(&mut b, "caller").0, "App.handle");
    assert_eq!(info(&mut b, "duration").1, Some(3_000));
    // main, its first and last pages with one row for the page between, and the
    // two open calls' children: not 1,200 rows.
    let rows = |b: &mut Browser| {
        b.eval("parseFloat(document.querySelector('#tb-spacer').style.height) / 20")
            .as_f64()
            .unwrap() as u64
    };
    assert_eq!(rows(&mut b), 1 + 500 + 1 + 200 + 3 + 3);
    b.eval("document.querySelector('#tb-scroll').scrollTop = 480 * 20;");
    let gap = b.wait_for(
        "(() => { const g = document.querySelector('#tb-rows .tb-gap'); return g ? g.textContent : ''; })()",
        Duration::from_secs(10),
    );
    assert_eq!(
        gap,
        json!("\u{2026} 500 calls not loaded (click to load 500)")
    );
    b.screenshot("cli-tree-wide.png");
    b.click("#tb-rows .tb-gap");
    b.wait_for(
        "parseFloat(document.querySelector('#tb-spacer').style.height) / 20 === 1 + 500 + 500 + 200 + 3 + 3",
        Duration::from_secs(10),
    );
    assert!(served.interrupt());
}
