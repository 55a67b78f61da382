//! The collector's Queue view in headless Chromium: the queue fixture's thread pool
//! (traced) streams to `jscope serve`; the view's summary has the mean wait that
//! `jscope queue --format json` gives on the same stored recording, and its chart
//! draws every point of the length series the API sends. A JVM without the queue's
//! methods gets the CLI's one-line hint. Skipped with a notice when Chromium is absent.

mod serving;
mod support;

use std::path::Path;
use std::time::Duration;

use jscope_testkit::{compile_fixtures, javas, temp_dir, wait_until};
use serde_json::json;
use serving::cdp::Browser;
use support::{jscope_json, start_logged};

const POOL_TRACE: &str = "java.util.concurrent.ThreadPoolExecutor#execute;java.util.concurrent.ThreadPoolExecutor#getTask;java.util.concurrent.*BlockingQueue#offer;java.util.concurrent.*BlockingQueue#take;java.util.concurrent.*BlockingQueue#poll";

#[test]
fn queue_view_over_a_real_thread_pool_in_chromium() {
    let Some(mut b) = Browser::launch("queue") else {
        return;
    };
    let java = javas().into_iter().next().expect("a java");
    let dir = temp_dir("cli-queue-browser");
    let served = serving::serve(&support::jscope_bin(), &dir.join("data"), &[]);
    let agents = served.agents.unwrap();
    let classes =
        compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/queue_fixtures"));
    // 3 workers, lambda 150/s, mu 60/s, 300 tasks (about 2 s), seed 5.
    let mut pool = start_logged(
        &java,
        &dir,
        "pool",
        &format!("trace={POOL_TRACE};PoolApp$Task#run,quiet,collector={agents}"),
        &classes,
        &["PoolApp", "3", "150", "60", "300", "5"],
    );
    let status = pool
        .wait_timeout(Duration::from_secs(120))
        .expect("the JVM exits");
    assert!(status.success(), "{status}");
    let pid = pool.id();
    let mut id = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            let jvms = served.json("/api/jvms");
            match jvms
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["pid"] == json!(pid) && j["status"] == "gone")
            {
                Some(j) => {
                    id = j["id"].as_str().unwrap().to_string();
                    true
                }
                None => false,
            }
        }),
        "the pool streamed and disconnected"
    );

    // The CLI on the stored recording.
    let (code, bytes) = served.get(&format!("/api/jvms/{id}/recording"));
    assert_eq!(code, 200);
    let file = dir.join("stored.jsc");
    std::fs::write(&file, bytes).unwrap();
    let cli = jscope_json(&["queue", file.to_str().unwrap(), "--format", "json"]);
    let want_mean = cli["summary"]["mean_queue_ns"].as_f64().unwrap();
    assert_eq!(cli["summary"]["enqueued"], 300, "{}", cli["summary"]);
    assert!(want_mean > 0.0);

    // The API: the same summary, every request, the length series under 2,000 points.
    let api = served.json(&format!("/api/jvms/{id}/queue"));
    assert_eq!(api["summary"], cli["summary"]);
    assert_eq!(api["requests_total"], 300);
    assert_eq!(api["requests"], cli["requests"]);
    let points = api["length"].as_array().unwrap().len();
    assert_eq!(api["length_total"], cli["length"].as_array().unwrap().len());
    assert!((2..=2_000).contains(&points), "{points}");

    // The view.
    b.goto("about:blank");
    b.goto(&format!("{}/#tab=queue&jvm={id}", served.url()));
    b.wait_for(
        "document.body.dataset.queueReady === 'true' && \
         !!document.querySelector('#q-summary td[data-field=\"mean_queue_ns\"]')",
        Duration::from_secs(30),
    );
    assert_eq!(b.text("#q-error"), "");
    let shown: f64 = b
        .eval("document.querySelector('#q-summary td[data-field=\"mean_queue_ns\"]').dataset.value")
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(shown, want_mean);
    let text = b.text("#q-summary td[data-field=\"mean_queue_ns\"]");
    assert_eq!(text, format!("{:.3} ms", want_mean / 1e6), "{text}");
    assert_eq!(
        b.eval("document.querySelector('#q-summary td[data-field=\"queue\"]').textContent"),
        json!("threadpool")
    );
    // The step chart: one vertex per point (M, then H/V per further point), up to
    // the series' maximum.
    let line = b.eval(
        "(() => { const p = document.querySelector('#q-length-line'); \
         return [p.dataset.points, p.getAttribute('d').split('V').length, p.dataset.max]; })()",
    );
    assert_eq!(line[0], json!(points.to_string()));
    assert_eq!(line[1], json!(points));
    assert_eq!(line[2], json!(cli["summary"]["max_length"].to_string()));
    // Every served request has its time-in-queue dot and its service dot.
    let served_n = cli["summary"]["served"].as_u64().unwrap();
    assert_eq!(
        b.eval("document.querySelectorAll('#q-dots circle.q-wait').length"),
        json!(served_n)
    );
    b.screenshot("cli-queue.png");

    // A queue the recording lacks: the CLI's hint, in one line, as a 400 and in the view.
    let (code, body) = served.get(&format!(
        "/api/jvms/{id}/queue?queue=com.acme.Pool%23add/com.acme.Pool%23get"
    ));
    assert_eq!(code, 400);
    let err: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let err = err["error"].as_str().unwrap();
    assert!(
        err.starts_with("the recording has no calls of the queue's")
            && err.contains("--trace 'com.acme.Pool#add;com.acme.Pool#get'")
            && !err.contains('\n'),
        "{err}"
    );
    b.goto("about:blank");
    b.goto(&format!(
        "{}/#tab=queue&jvm={id}&queue=com.acme.Pool%23add/com.acme.Pool%23get",
        served.url()
    ));
    b.wait_for(
        "document.body.dataset.queueReady === 'true' && \
         document.querySelector('#q-error').textContent !== ''",
        Duration::from_secs(30),
    );
    assert_eq!(b.text("#q-error"), err);
    assert!(served.interrupt());
}
