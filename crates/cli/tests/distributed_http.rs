//! HTTP calls recorded by the agent (`remote`) on real JVMs and merged: a client
//! -> server A -> server B chain over `HttpURLConnection` (or
//! `java.net.http.HttpClient`) and `com.sun.net.httpserver`, each its own JVM with
//! its clock shifted by minutes, is one tree rooted at the client's main with two
//! nested remote subtrees; and
//! `jscope view SESSION` shows it in headless Chromium, coloured by JVM, with each
//! remote call's network time.

mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use jscope_analysis::distributed::{Child as Node, DistributedTree, MRef, Member};
use jscope_analysis::trace::TraceOptions;
use jscope_testkit::{javas, temp_dir, Child, Java};
use serde_json::{json, Value};
use serving::cdp::Browser;
use support::{fmt_ns, free_port, http_classes, start_logged, wait_ready};

const MINUTE_NS: i64 = 60_000_000_000;

fn classes() -> PathBuf {
    http_classes()
}

/// The chain's recordings merged, the client's JVM the reference and every call
/// matched.
fn merged_whole(files: &[PathBuf], jdk: u32) -> DistributedTree {
    let members = files
        .iter()
        .map(|f| Member::read_file(f, &TraceOptions::default()).unwrap())
        .collect();
    let t = DistributedTree::build(members);
    assert_eq!(t.reference, 0, "JDK {jdk}");
    assert!(t.unmatched_clients.is_empty(), "JDK {jdk}");
    assert!(t.unmatched_servers.is_empty(), "JDK {jdk}");
    t
}

/// Starts a traced JVM; its output goes to NAME.log in `dir`.
fn start(java: &Java, dir: &Path, name: &str, skew: &str, args: &[&str]) -> (Child, PathBuf) {
    let file = dir.join(format!("{name}.jsc"));
    let options = format!(
        "remote=http,trace=httpchain.*,quiet,clockoffset={skew},file={}",
        file.display()
    );
    (
        start_logged(java, dir, name, &options, &classes(), args),
        file,
    )
}
/// Runs client -> A -> B with `requests` requests; the recordings in order.
fn chain(java: &Java, dir: &Path, requests: usize) -> [PathBuf; 3] {
    chain_over(java, dir, requests, Api::UrlConnection)
}

/// The JDK HTTP client the client and A call with.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    UrlConnection,
    /// `java.net.http.HttpClient.send`.
    HttpClient,
}

fn chain_over(java: &Java, dir: &Path, requests: usize, api: Api) -> [PathBuf; 3] {
    let (pa, pb) = (free_port(), free_port());
    let n = requests.to_string();
    let (mut b, fb) = start(java, dir, "b", "-3m", &["httpchain.Server", "B", &pb, &n]);
    wait_ready(dir, "b");
    let mut args = vec!["httpchain.Server", "A", &pa, &n, &pb];
    let ids: Vec<String> = (1..=requests).map(|k| k.to_string()).collect();
    let ids = ids.join(",");
    let client_args = match api {
        Api::UrlConnection => vec!["httpchain.Client", &pa, &n],
        Api::HttpClient => {
            args.push("httpclient");
            vec!["httpchain.NewClient", &pa, &ids, "-"]
        }
    };
    let (mut a, fa) = start(java, dir, "a", "4m", &args);
    wait_ready(dir, "a");
    let (mut c, fc) = start(java, dir, "client", "0s", &client_args);
    for (p, name) in [(&mut c, "client"), (&mut a, "a"), (&mut b, "b")] {
        let status = p
            .wait_timeout(Duration::from_secs(120))
            .expect("the JVM exits");
        assert!(status.success(), "JDK {} {name}: {status}", java.major);
    }
    let log = std::fs::read_to_string(dir.join("client.log")).unwrap();
    let word = if api == Api::HttpClient {
        "send"
    } else {
        "request"
    };
    let want: String = (1..=requests)
        .map(|k| format!("{word} {k}: A(0) B(0)\n"))
        .collect();
    assert_eq!(log, want);
    [fc, fa, fb]
}

fn calls(kids: &[Node]) -> Vec<MRef> {
    kids.iter()
        .filter_map(|c| match c {
            Node::Call(r) => Some(*r),
            Node::Remote(_) => None,
        })
        .collect()
}

/// Remote calls anywhere below these nodes, not below another remote call.
fn remote_below(t: &DistributedTree, mut stack: Vec<Node>) -> Vec<usize> {
    let mut out = vec![];
    while let Some(c) = stack.pop() {
        match c {
            Node::Call(r) => stack.extend(t.children(r)),
            Node::Remote(i) => out.push(i),
        }
    }
    out.sort_by_key(|&i| t.remote(t.links[i].client).start_ns);
    out
}

/// Labels of the calls anywhere below a remote call on its server, in pre-order.
fn served_labels(t: &DistributedTree, link: usize) -> Vec<String> {
    let mut out = vec![];
    let mut stack: Vec<MRef> = calls(&t.remote_children(link));
    stack.reverse();
    while let Some(r) = stack.pop() {
        assert_eq!(r.jvm, t.links[link].server.jvm, "served on the server");
        out.push(t.label(r).to_string());
        let mut kids = calls(&t.children(r));
        kids.reverse();
        stack.extend(kids);
    }
    out
}

fn trace_id(t: &DistributedTree, link: usize) -> String {
    let id = t.remote(t.links[link].client).request_id.clone();
    let id = id.expect("a traceparent");
    assert_eq!(
        t.remote(t.links[link].server).request_id.as_deref(),
        Some(id.as_str())
    );
    id.split('-').nth(1).unwrap().to_string()
}

#[test]
fn an_http_chain_across_three_jvms_is_one_tree_even_with_clocks_minutes_apart() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("http-chain-{j}"));
        let files = chain(&java, &dir, 2);
        let t = merged_whole(&files, j);
        let main = calls(&t.roots(0));
        assert_eq!(main.len(), 1, "JDK {j}");
        assert_eq!(t.label(main[0]), "httpchain.Client.main");
        let requests = remote_below(&t, t.children(main[0]));
        assert_eq!(requests.len(), 2, "JDK {j}: two requests from main");
        for (k, &outer) in requests.iter().enumerate() {
            let stub = MRef {
                jvm: 0,
                node: t.links[outer].at.expect("under a traced call"),
            };
            assert_eq!(t.label(stub), "httpchain.Client.get");
            assert_eq!(t.links[outer].server.jvm, 1, "JDK {j}: A serves it");
            let client = t.remote(t.links[outer].client);
            assert_eq!(
                (client.object.as_str(), client.method.as_str()),
                ("/hop", "GET")
            );
            assert_eq!(client.conn_seq, k as u64 + 1, "one kept-alive connection");
            // A's handler did its work and called B from inside the grafted subtree.
            assert_eq!(
                served_labels(&t, outer),
                ["httpchain.Server.work", "httpchain.Client.get"],
                "JDK {j}"
            );
            let inner = remote_below(&t, t.remote_children(outer));
            assert_eq!(inner.len(), 1, "JDK {j}: A forwards once");
            assert_eq!(t.links[inner[0]].server.jvm, 2, "JDK {j}: B serves it");
            assert_eq!(served_labels(&t, inner[0]), ["httpchain.Server.work"]);
            assert!(remote_below(&t, t.remote_children(inner[0])).is_empty());
            // A's call to B continues the client's trace (same trace id, new span).
            assert_eq!(trace_id(&t, outer), trace_id(&t, inner[0]), "JDK {j}");
            for l in [outer, inner[0]] {
                let link = &t.links[l];
                let (c, s) = (t.remote(link.client), t.remote(link.server));
                let (cd, sd) = (c.end_ns - c.start_ns, s.end_ns - s.start_ns);
                assert!(sd <= cd, "JDK {j}: the server's part fits in the client's");
                assert_eq!(link.network_ns, cd - sd);
            }
        }
        assert_ne!(trace_id(&t, requests[0]), trace_id(&t, requests[1]));
        // Each JVM's clock was shifted by its clockoffset (one machine, so that is
        // the whole truth): the estimate finds it within its uncertainty + 1 ms.
        for (k, truth) in [(1, -4), (2, 3)] {
            let o = t.offsets[k].unwrap();
            let err = (o.offset_ns - truth * MINUTE_NS).unsigned_abs();
            assert!(
                err <= o.uncertainty_ns + 1_000_000,
                "JDK {j} jvm {k}: {} ± {} vs {truth} min",
                o.offset_ns,
                o.uncertainty_ns
            );
        }
        // The command line shows the same tree: B's subtree inside A's, inside main.
        let paths: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
        let mut args = vec!["tree", "--distributed"];
        args.extend(&paths);
        let out = support::jscope(&args);
        let text = support::stdout(&out);
        assert!(out.status.success(), "{}", support::stderr(&out));
        let depth_of = |needle: &str| -> Vec<usize> {
            text.lines()
                .filter(|l| l.contains(needle))
                .map(|l| l.len() - l.trim_start().len())
                .collect()
        };
        let to_a = depth_of("=> http to jvm 1 ");
        let to_b = depth_of("=> http to jvm 2 ");
        assert_eq!((to_a.len(), to_b.len()), (2, 2), "JDK {j}:\n{text}");
        assert!(to_b.iter().zip(&to_a).all(|(b, a)| b > a), "{text}");
        assert!(
            text.contains(
                "4 remote calls matched, 0 client calls unmatched, 0 server calls unmatched"
            ),
            "{text}"
        );
    }
}

#[test]
fn an_http_client_chain_is_one_tree_with_the_trace_continued_across_hops() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("httpclient-chain-{j}"));
        let files = chain_over(&java, &dir, 2, Api::HttpClient);
        let t = merged_whole(&files, j);
        let main = calls(&t.roots(0));
        assert_eq!(main.len(), 1, "JDK {j}");
        assert_eq!(t.label(main[0]), "httpchain.NewClient.main");
        // send() is called from main itself: the calls hang right under it.
        let requests = remote_below(&t, t.children(main[0]));
        assert_eq!(requests.len(), 2, "JDK {j}: two requests from main");
        for &outer in &requests {
            assert_eq!(t.links[outer].at, Some(main[0].node), "JDK {j}");
            assert_eq!(t.links[outer].server.jvm, 1, "JDK {j}: A serves it");
            let client = t.remote(t.links[outer].client);
            assert_eq!(
                (client.object.as_str(), client.method.as_str()),
                ("/hop", "GET")
            );
            // A did its work and called B with HttpClient inside the grafted subtree.
            assert_eq!(
                served_labels(&t, outer),
                ["httpchain.Server.work", "httpchain.NewClient.get"],
                "JDK {j}"
            );
            let inner = remote_below(&t, t.remote_children(outer));
            assert_eq!(inner.len(), 1, "JDK {j}: A forwards once");
            assert_eq!(t.links[inner[0]].server.jvm, 2, "JDK {j}: B serves it");
            assert_eq!(served_labels(&t, inner[0]), ["httpchain.Server.work"]);
            assert_eq!(trace_id(&t, outer), trace_id(&t, inner[0]), "JDK {j}");
            for l in [outer, inner[0]] {
                let link = &t.links[l];
                let (c, s) = (t.remote(link.client), t.remote(link.server));
                assert!(
                    s.end_ns - s.start_ns <= c.end_ns - c.start_ns,
                    "JDK {j}: the server's part fits in the client's"
                );
            }
        }
        assert_ne!(trace_id(&t, requests[0]), trace_id(&t, requests[1]));
        for (k, truth) in [(1, -4), (2, 3)] {
            let o = t.offsets[k].unwrap();
            let err = (o.offset_ns - truth * MINUTE_NS).unsigned_abs();
            assert!(
                err <= o.uncertainty_ns + 1_000_000,
                "JDK {j} jvm {k}: {} ± {} vs {truth} min",
                o.offset_ns,
                o.uncertainty_ns
            );
        }
    }
}

/// The browser's view of the tree: per row its JVM, depth, visibility, the colour of
/// its JVM mark, its network cell and `data-network-ns`.
const ROWS_JS: &str = "[...document.querySelectorAll('#tree tbody tr[data-row]')].map(tr => ({\
    jvm: Number(tr.dataset.jvm), depth: Number(tr.dataset.depth), remote: tr.classList.contains('remote'),\
    shown: tr.style.display !== 'none',\
    colour: getComputedStyle(tr.querySelector('td.call')).borderLeftColor,\
    network: tr.querySelector('td.network').textContent,\
    network_ns: tr.dataset.networkNs === undefined ? null : Number(tr.dataset.networkNs),\
    text: tr.querySelector('td.call').textContent }))";

const LEGEND_JS: &str = "[...document.querySelectorAll('#legend tbody tr')].map(tr => ({\
    jvm: Number(tr.dataset.jvm), text: tr.textContent,\
    colour: getComputedStyle(tr.querySelector('.swatch')).backgroundColor }))";
#[test]
fn the_merged_http_chain_in_chromium_is_coloured_by_jvm_with_network_times() {
    let Some(mut browser) = Browser::launch("distributed-http") else {
        return;
    };
    let java = javas().into_iter().next().expect("a JDK");
    let dir = temp_dir("http-chain-ui");
    let files = chain(&java, &dir, 2);
    let session = dir.join("chain.jss");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["-o", session.to_str().unwrap()]);
    let out = support::jscope(&args);
    assert!(out.status.success(), "{}", support::stderr(&out));

    let served = serving::start(
        &support::jscope_bin(),
        &["view", session.to_str().unwrap(), "--http", "127.0.0.1:0"],
    );
    let api = served.json("/api/distributed");
    let nodes = api["nodes"].as_array().unwrap();
    browser.goto(&format!("{}/", served.url()));
    browser.wait_for(
        "document.body.dataset.ready === 'true'",
        Duration::from_secs(20),
    );

    // The legend: one distinct colour per JVM.
    let legend: Vec<Value> = serde_json::from_value(browser.eval(LEGEND_JS)).unwrap();
    assert_eq!(legend.len(), 3, "{legend:?}");
    assert!(legend[0]["text"].as_str().unwrap().contains("reference"));
    // A's clock runs 4 minutes ahead: its offset to the reference is about -240 s.
    let offset = api["jvms"][1]["offset_ns"].as_i64().unwrap();
    assert!((offset + 4 * MINUTE_NS).abs() < 1_000_000_000, "{offset}");
    let shown = format!("-{} \u{b1}", fmt_ns(offset.unsigned_abs()));
    assert!(
        legend[1]["text"].as_str().unwrap().contains(&shown),
        "{legend:?} {shown}"
    );
    let colours: Vec<&str> = legend
        .iter()
        .map(|l| l["colour"].as_str().unwrap())
        .collect();
    assert!(colours[0] != colours[1] && colours[1] != colours[2] && colours[0] != colours[2]);

    // Every row of the API is shown, in its JVM's colour; remote rows with their network time.
    let rows: Vec<Value> = serde_json::from_value(browser.eval(ROWS_JS)).unwrap();
    assert_eq!(rows.len(), nodes.len());
    for (row, node) in rows.iter().zip(nodes) {
        let j = node["jvm"].as_u64().unwrap() as usize;
        assert_eq!(row["jvm"], json!(j));
        assert_eq!(row["colour"], json!(colours[j]), "{row}");
        if let Some(r) = node["remote"].as_object() {
            let ns = r["network_ns"].as_u64().unwrap();
            assert_eq!(row["network_ns"], json!(ns));
            assert_eq!(row["network"], json!(fmt_ns(ns)));
        }
    }
    // Under the client's main: jvm 0 -> A (jvm 1) -> B (jvm 2), nested.
    let remote: Vec<&Value> = rows.iter().filter(|r| r["remote"] == json!(true)).collect();
    assert_eq!(remote.len(), 4, "{remote:?}");
    for pair in remote.chunks(2) {
        assert!(pair[0]["text"].as_str().unwrap().contains("http to jvm 1"));
        assert!(pair[1]["text"].as_str().unwrap().contains("http to jvm 2"));
        assert!(pair[1]["depth"].as_u64() > pair[0]["depth"].as_u64());
    }
    let b_rows = rows.iter().filter(|r| r["jvm"] == json!(2)).count();
    assert!(b_rows >= 2, "B's work is shown");
    // Each JVM's own tree under its heading, the client's first.
    let roots = browser
        .eval("[...document.querySelectorAll('#tree tr.root')].map(r => Number(r.dataset.root))");
    assert_eq!(roots, json!([0, 1, 2]));

    // Collapsing the first remote call hides everything A and B did for it.
    let first = rows
        .iter()
        .position(|r| r["remote"] == json!(true))
        .unwrap();
    let selector = format!("#tree tr[data-row=\"{first}\"] .toggle");
    browser.click(&selector);
    let hidden: Vec<Value> = serde_json::from_value(browser.eval(ROWS_JS)).unwrap();
    let depth = rows[first]["depth"].as_u64().unwrap();
    let below = hidden[first + 1..]
        .iter()
        .take_while(|r| r["depth"].as_u64().unwrap() > depth)
        .collect::<Vec<_>>();
    assert!(below.len() >= 3 && below.iter().all(|r| r["shown"] == json!(false)));
    assert!(hidden[..=first].iter().all(|r| r["shown"] == json!(true)));
    browser.click(&selector);
    browser.screenshot("distributed-http-tree.png");
    assert!(served.interrupt(), "jscope view stops on Ctrl-C");
}
