//! The tag explorer in headless Chromium over real agents: two JVMs of one service
//! stream to `jscope serve`, labelled version=a (spinning in Hot.alpha for 3 s) and
//! version=b (Hot.beta for 1.5 s). `/api/tags` lists the key and its values, and
//! the Explore view broken down by version shows each value's samples and share as
//! the recordings read one by one from the data directory give them, each value's
//! top method, and a clicked value's top methods and flame graph. The browser's part
//! is skipped with a notice when Chromium is absent.

mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, wait_until, Child};
use serde_json::{json, Value};
use serving::cdp::Browser;
use support::{jscope_bin, jscope_json};

fn classes() -> PathBuf {
    agent_path();
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

#[test]
fn the_explorer_breaks_a_service_down_by_version_in_chromium() {
    let java = javas().into_iter().next().expect("a java");
    let dir = temp_dir("cli-explore-browser");
    let data = dir.join("data");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let agents = served.agents.unwrap().to_string();
    let runs = [("a", "alpha", "3000"), ("b", "beta", "1500")];
    let mut children: Vec<Child> = runs
        .iter()
        .map(|(version, method, ms)| {
            Child::spawn(
                Command::new(jscope_bin())
                    .args(["record", "--mode", "cpu", "--stream-to", &agents])
                    .args([
                        "--service",
                        "shop",
                        "--label",
                        &format!("version={version}"),
                    ])
                    .arg("-o")
                    .arg(dir.join(format!("{version}.jsc")))
                    .arg("--")
                    .arg(&java.bin)
                    .arg("-cp")
                    .arg(classes())
                    .args(["Hot", method, ms])
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit()),
            )
        })
        .collect();
    for c in &mut children {
        let status = c
            .wait_timeout(Duration::from_secs(60))
            .expect("record ends");
        assert!(status.success(), "{status}");
    }
    assert!(
        wait_until(Duration::from_secs(20), || {
            let r = served.json("/api/jvms");
            let r = r.as_array().unwrap();
            r.len() == 2 && r.iter().all(|r| r["status"] == "gone")
        }),
        "both JVMs streamed and disconnected"
    );

    // The keys: service and host built in, then the label, with JVM counts.
    let tags = served.json("/api/tags");
    let key = |k: &str| {
        tags["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["key"] == k)
            .unwrap_or_else(|| panic!("{k} in {tags}"))
            .clone()
    };
    assert_eq!(
        key("service")["values"],
        json!([{ "value": "shop", "jvms": 2 }])
    );
    assert_eq!(
        key("version")["values"],
        json!([{ "value": "a", "jvms": 1 }, { "value": "b", "jvms": 1 }])
    );
    assert_eq!(key("version")["built_in"], json!(false));

    // Each value's samples and top method from its recording, read from the data
    // directory (not through the API).
    let data_dir = data.to_str().unwrap();
    let truth = |version: &str| -> (u64, String) {
        let r = jscope_json(&[
            "report",
            "--format",
            "json",
            "--mode",
            "cpu",
            "--data",
            data_dir,
            "--label",
            &format!("version={version}"),
        ]);
        let top = r["methods"][0]["method"].as_str().unwrap().to_string();
        (r["samples"].as_u64().unwrap(), top)
    };
    let (a, top_a) = truth("a");
    let (bn, top_b) = truth("b");
    assert_eq!((top_a.as_str(), top_b.as_str()), ("Hot.alpha", "Hot.beta"));
    assert!(a > 5 && bn > 5, "{a} {bn}");
    let share = |n: u64| n as f64 * 100.0 / (a + bn) as f64;

    let api = served.json("/api/explore?by=version&mode=cpu&service=shop");
    assert_eq!(api["samples"].as_u64(), Some(a + bn), "{api}");
    let value = |v: &str| {
        api["values"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["value"] == v)
            .unwrap_or_else(|| panic!("{v} in {api}"))
            .clone()
    };
    for (v, n, top) in [("a", a, &top_a), ("b", bn, &top_b)] {
        let got = value(v);
        assert_eq!(got["samples"].as_u64(), Some(n), "{got}");
        assert_eq!(got["share"].as_f64(), Some(share(n)), "{got}");
        assert_eq!(
            got["top"][0]["method"].as_str(),
            Some(top.as_str()),
            "{got}"
        );
    }
    // A value's flame graph holds its own method only.
    let (code, body) = served.get("/api/explore?by=version&value=b&mode=cpu&format=collapsed");
    assert_eq!(code, 200);
    let collapsed = String::from_utf8(body).unwrap();
    assert!(
        collapsed.contains("Hot.beta") && !collapsed.contains("Hot.alpha"),
        "{collapsed}"
    );
    let (code, _) = served.get("/api/explore?by=version&value=c");
    assert_eq!(code, 400, "a value no JVM has");

    // The view.
    let Some(mut b) = Browser::launch("explore") else {
        assert!(served.interrupt());
        return;
    };
    b.goto("about:blank");
    b.goto(&format!(
        "{}/#tab=explore&by=version&mode=cpu&since=",
        served.url()
    ));
    b.wait_for(
        "document.body.dataset.exploreReady === 'true' && \
         document.querySelectorAll('#ex-values tbody tr').length === 2",
        Duration::from_secs(30),
    );
    assert_eq!(b.text("#ex-error"), "");
    let rows = b.eval(
        "[...document.querySelectorAll('#ex-values tbody tr')].map((tr) => \
         [tr.dataset.value, tr.dataset.samples, tr.dataset.share, tr.dataset.top])",
    );
    // Values by samples, most first: a spun twice as long.
    let want = |v: &str, n: u64, top: &str| json!([v, n.to_string(), share(n), top]);
    let mut shown: Vec<Value> = rows.as_array().unwrap().clone();
    for r in &mut shown {
        let s: f64 = r[2].as_str().unwrap().parse().unwrap();
        r[2] = json!(s);
    }
    let mut expected = vec![want("a", a, &top_a), want("b", bn, &top_b)];
    expected.sort_by_key(|r| std::cmp::Reverse(r[1].as_str().unwrap().parse::<u64>().unwrap()));
    assert_eq!(shown, expected);
    b.screenshot("cli-explore.png");

    // Click b: its top methods beside the whole's, and its flame graph.
    b.click("#ex-values tr[data-value=\"b\"]");
    b.wait_for(
        "document.body.dataset.exploreReady === 'true' && \
         document.querySelector('#ex-chosen').dataset.value === 'b' && \
         document.querySelectorAll('#ex-top tbody tr').length > 0",
        Duration::from_secs(30),
    );
    assert_eq!(
        b.eval("document.querySelector('#ex-top tbody tr').dataset.method"),
        json!("Hot.beta")
    );
    let whole = b.eval(
        "[...document.querySelectorAll('#ex-whole tbody tr')].map((tr) => tr.dataset.method)",
    );
    let whole: Vec<&str> = whole
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        whole.contains(&"Hot.alpha") && whole.contains(&"Hot.beta"),
        "{whole:?}"
    );
    assert!(
        b.text("#ex-chosen").contains(&format!("{bn} samples")),
        "{}",
        b.text("#ex-chosen")
    );
    b.wait_for(
        "(() => { const d = document.querySelector('#ex-frame').contentDocument; \
         return !!d && d.readyState === 'complete' && d.documentElement.outerHTML.includes('Hot.beta'); })()",
        Duration::from_secs(30),
    );
    let frame =
        b.eval("document.querySelector('#ex-frame').contentDocument.documentElement.outerHTML");
    assert!(
        !frame.as_str().unwrap().contains("Hot.alpha"),
        "b's flame graph only"
    );
    assert!(b
        .eval("location.hash")
        .as_str()
        .unwrap()
        .contains("value=b"));
    b.screenshot("cli-explore-b.png");

    // The JVM list shows service and labels, and its filter keeps a label's JVMs.
    b.goto("about:blank");
    b.goto(&format!("{}/#tab=jvms", served.url()));
    b.wait_for(
        "document.querySelectorAll('#jvms tbody tr').length === 2",
        Duration::from_secs(20),
    );
    b.eval(
        "(() => { const f = document.querySelector('#jvms-filter'); f.value = 'version=b'; \
         f.dispatchEvent(new Event('input')); })()",
    );
    b.wait_for(
        "document.querySelectorAll('#jvms tbody tr').length === 1",
        Duration::from_secs(20),
    );
    assert_eq!(b.text("#jvms tbody td.service"), "shop");
    assert_eq!(b.text("#jvms tbody td.labels"), "version=b");

    // The Flame graph tab draws a service's JVMs with a label, without checking JVMs.
    b.goto("about:blank");
    b.goto(&format!("{}/#tab=flame", served.url()));
    b.wait_for(
        "document.querySelectorAll('#flame-service option').length === 2",
        Duration::from_secs(20),
    );
    b.eval(
        "(() => { document.querySelector('#flame-service').value = 'shop'; \
         document.querySelector('#flame-labels').value = 'version=a'; \
         document.querySelector('#flame-range').value = ''; \
         document.querySelector('#flame-mode').value = 'cpu'; \
         document.querySelector('#flame-go').click(); })()",
    );
    b.wait_for(
        "(() => { const d = document.querySelector('#flame-frame').contentDocument; \
         return !!d && d.readyState === 'complete' && d.documentElement.outerHTML.includes('Hot.alpha'); })()",
        Duration::from_secs(30),
    );
    let src = b.eval("document.querySelector('#flame-frame').getAttribute('src')");
    assert!(
        src.as_str()
            .unwrap()
            .contains("service=shop&label=version%3Da")
            && !src.as_str().unwrap().contains("jvm="),
        "{src}"
    );
    let page =
        b.eval("document.querySelector('#flame-frame').contentDocument.documentElement.outerHTML");
    let page = page.as_str().unwrap();
    assert!(!page.contains("Hot.beta"), "version=a's JVM only");
    assert!(
        page.contains("service shop, version=a (1 JVM) (cpu)"),
        "the title names the selection"
    );
    assert!(served.interrupt());
}
