//! A client JVM and a server JVM calling each other over HTTP (`HttpURLConnection`
//! and `com.sun.net.httpserver`), traced with no sampling and streaming to a running
//! `jscope serve` (agent option `collector=`), the server's clock two minutes ahead:
//! the collector's `GET /api/distributed` answers one tree with the server's work
//! grafted under the client's calls; `jscope tree --distributed --collector` and
//! `jscope merge --collector` read the same; the UI's Distributed tab shows it in
//! headless Chromium, coloured by JVM.

mod serving;
mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jscope_testkit::{javas, temp_dir, wait_until, Child, Java};
use serde_json::{json, Value};
use serving::cdp::Browser;
use serving::Served;
use support::{fmt_ns, free_port, http_classes, start_logged, wait_ready};

const MINUTE_NS: i64 = 60_000_000_000;
const REQUESTS: usize = 3;

fn classes() -> PathBuf {
    http_classes()
}

/// Starts a JVM that traces `httpchain.*`, records HTTP calls and streams to
/// `collector` only (no file, no sampling); its output goes to NAME.log in `dir`.
fn start(java: &Java, dir: &Path, name: &str, collector: SocketAddr, args: &[&str]) -> Child {
    let skew = if name == "server" { "2m" } else { "0s" };
    let options =
        format!("remote=http,trace=httpchain.*,quiet,clockoffset={skew},collector={collector}");
    start_logged(java, dir, name, &options, &classes(), args)
}
/// Runs the server and the client against `served` until both exited and the
/// collector holds both streams whole; the two JVMs' stream ids (client, server).
fn client_and_server(java: &Java, dir: &Path, served: &Served) -> (String, String) {
    let agents = served.agents.unwrap();
    let port = free_port();
    let n = REQUESTS.to_string();
    let mut server = start(
        java,
        dir,
        "server",
        agents,
        &["httpchain.Server", "S", &port, &n],
    );
    wait_ready(dir, "server");
    let mut client = start(
        java,
        dir,
        "client",
        agents,
        &["httpchain.Client", &port, &n],
    );
    for (p, name) in [(&mut client, "client"), (&mut server, "server")] {
        let status = p
            .wait_timeout(Duration::from_secs(120))
            .expect("the JVM exits");
        assert!(status.success(), "JDK {} {name}: {status}", java.major);
    }
    let log = std::fs::read_to_string(dir.join("client.log")).unwrap();
    let want: String = (1..=REQUESTS)
        .map(|k| format!("request {k}: S(0)\n"))
        .collect();
    assert_eq!(log, want);
    // An agent says goodbye after its last chunk is acknowledged: both gone = all stored.
    let (client_pid, server_pid) = (client.id(), server.id());
    let mut ids = (String::new(), String::new());
    let stored = wait_until(Duration::from_secs(30), || {
        let jvms = served.json("/api/jvms");
        let gone = |pid: u32| {
            jvms.as_array()
                .unwrap()
                .iter()
                .find(|j| j["pid"] == json!(pid) && j["status"] == "gone")
                .map(|j| j["id"].as_str().unwrap().to_string())
        };
        match (gone(client_pid), gone(server_pid)) {
            (Some(c), Some(s)) => {
                ids = (c, s);
                true
            }
            _ => false,
        }
    });
    assert!(stored, "both JVMs streamed and disconnected");
    ids
}

/// The JVM index of stream `id` in a tree's JVM list.
fn jvm_index(tree: &Value, id: &str) -> usize {
    tree["jvms"]
        .as_array()
        .unwrap()
        .iter()
        .position(|j| j["name"] == json!(id))
        .unwrap_or_else(|| panic!("{id} in {tree}"))
}

/// The API's merged tree: one remote row per request under the client's
/// `Client.get`, each with the server's `work` (on the server JVM) under it; the
/// server's offset about -2 minutes.
fn check_tree(tree: &Value, client: usize, server: usize) {
    assert_eq!(tree["reference"], json!(client));
    assert_eq!(
        (
            &tree["matched"],
            &tree["unmatched_clients"],
            &tree["unmatched_servers"]
        ),
        (&json!(REQUESTS), &json!(0), &json!(0)),
        "{tree}"
    );
    let offset = tree["jvms"][server]["offset_ns"].as_i64().unwrap();
    let uncertainty = tree["jvms"][server]["uncertainty_ns"].as_i64().unwrap();
    assert!(
        (offset + 2 * MINUTE_NS).abs() <= uncertainty + 1_000_000,
        "{offset} ± {uncertainty}"
    );
    let nodes = tree["nodes"].as_array().unwrap();
    let remote: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i]["remote"].is_object())
        .collect();
    assert_eq!(remote.len(), REQUESTS);
    for &r in &remote {
        let row = &nodes[r];
        assert_eq!(row["jvm"], json!(client));
        assert_eq!(row["remote"]["server_jvm"], json!(server));
        let parent = &nodes[row["parent"].as_u64().unwrap() as usize];
        assert!(
            parent["label"].as_str().unwrap().ends_with("Client.get"),
            "{parent}"
        );
        let served: Vec<&Value> = nodes.iter().filter(|n| n["parent"] == json!(r)).collect();
        assert!(
            served
                .iter()
                .any(|n| n["jvm"] == json!(server) && n["label"] == "httpchain.Server.work"),
            "{served:?}"
        );
        let r = &row["remote"];
        let network = r["client_ns"].as_u64().unwrap() - r["server_ns"].as_u64().unwrap();
        assert_eq!(r["network_ns"].as_u64().unwrap(), network);
    }
}

fn run_ok(args: &[&str]) -> String {
    let out = support::jscope(args);
    assert!(
        out.status.success(),
        "jscope {args:?}: {}",
        support::stderr(&out)
    );
    support::stdout(&out)
}

#[test]
fn a_client_and_a_server_streaming_to_a_collector_merge_into_one_tree() {
    for java in javas() {
        let dir = temp_dir(&format!("collector-distributed-{}", java.major));
        let served = serving::serve(&support::jscope_bin(), &dir.join("data"), &[]);
        let (client_id, server_id) = client_and_server(&java, &dir, &served);
        let tree = served.json("/api/distributed");
        assert_eq!(tree["jvms"].as_array().unwrap().len(), 2);
        let (c, s) = (jvm_index(&tree, &client_id), jvm_index(&tree, &server_id));
        check_tree(&tree, c, s);
        // The client alone: its calls are unmatched and nothing of the server shows.
        let alone = served.json(&format!("/api/distributed?jvm={client_id}"));
        assert_eq!(
            (&alone["matched"], &alone["unmatched_clients"]),
            (&json!(0), &json!(REQUESTS))
        );

        // The CLI over the running collector, through the same API.
        let url = served.url();
        let text = run_ok(&["tree", "--distributed", "--collector", &url]);
        assert!(
            text.contains(&format!(
                "{REQUESTS} remote calls matched, 0 client calls unmatched, 0 server calls unmatched"
            )),
            "{text}"
        );
        assert_eq!(text.matches("=> http to jvm").count(), REQUESTS, "{text}");
        let session = dir.join("two.jss");
        let summary = run_ok(&[
            "merge",
            "--collector",
            &url,
            "--jvm",
            &client_id,
            "--jvm",
            &server_id,
            "-o",
            session.to_str().unwrap(),
        ]);
        assert!(
            summary.contains(&format!("{REQUESTS} remote calls matched")),
            "{summary}"
        );
        assert!(served.interrupt(), "jscope serve stops on Ctrl-C");

        // The session reads without the collector: its recordings were saved with it.
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
        let paths: Vec<&str> = json["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                format!("two.{client_id}.jsc"),
                format!("two.{server_id}.jsc")
            ]
        );
        let rows: Value = serde_json::from_str(&run_ok(&[
            "tree",
            "--distributed",
            session.to_str().unwrap(),
            "--format",
            "json",
        ]))
        .unwrap();
        check_tree(&rows, 0, 1);
    }
}

const ROWS_JS: &str =
    "[...document.querySelectorAll('#dist-tree tbody tr[data-row]')].map(tr => ({\
    jvm: Number(tr.dataset.jvm), remote: tr.classList.contains('remote'),\
    colour: getComputedStyle(tr.querySelector('td.call')).borderLeftColor,\
    network: tr.querySelector('td.network').textContent,\
    text: tr.querySelector('td.call').textContent }))";

const LEGEND_JS: &str = "[...document.querySelectorAll('#dist-legend tbody tr')].map(tr => ({\
    jvm: Number(tr.dataset.jvm), text: tr.textContent,\
    colour: getComputedStyle(tr.querySelector('.swatch')).backgroundColor }))";
#[test]
fn the_collectors_distributed_tab_shows_the_merged_tree_coloured_by_jvm() {
    let Some(mut browser) = Browser::launch("collector-distributed") else {
        return;
    };
    let java = javas().into_iter().next().expect("a JDK");
    let dir = temp_dir("collector-distributed-ui");
    let served = serving::serve(&support::jscope_bin(), &dir.join("data"), &[]);
    let (client_id, server_id) = client_and_server(&java, &dir, &served);
    let api = served.json("/api/distributed");
    let (c, s) = (jvm_index(&api, &client_id), jvm_index(&api, &server_id));
    let nodes = api["nodes"].as_array().unwrap();

    browser.goto(&format!("{}/#tab=distributed", served.url()));
    let ready = "document.body.dataset.distReady === 'true'";
    browser.wait_for(ready, Duration::from_secs(30));
    // Both JVMs chosen by default; the legend gives each its own colour.
    let checked =
        browser.eval("[...document.querySelectorAll('#dist-jvms input')].map(i => i.checked)");
    assert_eq!(checked, json!([true, true]));
    let legend: Vec<Value> = serde_json::from_value(browser.eval(LEGEND_JS)).unwrap();
    assert_eq!(legend.len(), 2, "{legend:?}");
    assert!(legend[c]["text"].as_str().unwrap().contains("reference"));
    let offset = api["jvms"][s]["offset_ns"].as_i64().unwrap();
    let shown = format!("-{} \u{b1}", fmt_ns(offset.unsigned_abs()));
    assert!(
        legend[s]["text"].as_str().unwrap().contains(&shown),
        "{legend:?} {shown}"
    );
    let colours = [
        legend[0]["colour"].as_str().unwrap(),
        legend[1]["colour"].as_str().unwrap(),
    ];
    assert_ne!(colours[0], colours[1]);

    // Every row of the API, in its JVM's colour; both JVMs' rows are there.
    let rows: Vec<Value> = serde_json::from_value(browser.eval(ROWS_JS)).unwrap();
    assert_eq!(rows.len(), nodes.len());
    for (row, node) in rows.iter().zip(nodes) {
        let j = node["jvm"].as_u64().unwrap() as usize;
        assert_eq!(row["jvm"], json!(j));
        assert_eq!(row["colour"], json!(colours[j]), "{row}");
        assert_eq!(row["remote"], json!(node["remote"].is_object()));
    }
    assert!(
        rows.iter().any(|r| r["jvm"] == json!(s)),
        "the server's work is shown"
    );
    let remote: Vec<&Value> = rows.iter().filter(|r| r["remote"] == json!(true)).collect();
    assert_eq!(remote.len(), REQUESTS);
    assert!(remote.iter().all(|r| r["text"]
        .as_str()
        .unwrap()
        .contains(&format!("http to jvm {s}"))
        && !r["network"].as_str().unwrap().is_empty()));
    browser.screenshot("collector-distributed-tab.png");

    // Only the client: merged again, its calls are unmatched.
    browser.click(&format!("#dist-jvms input[value=\"{server_id}\"]"));
    browser.click("#dist-go");
    browser.wait_for(ready, Duration::from_secs(30));
    let summary = browser.text("#dist-summary");
    assert_eq!(
        summary,
        format!("1 JVMs, 0 remote calls matched, {REQUESTS} client and 0 server calls unmatched")
    );
    assert!(served.interrupt(), "jscope serve stops on Ctrl-C");
}
