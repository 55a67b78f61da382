//! The web UI in headless Chromium over real streamed data: the JVM list, the live
//! threads view with Pause, and the flame graph. Screenshots are kept under
//! target/jscope-test/ as artefacts. Skipped with a notice when Chromium is absent.

mod common;
// The CLI tests' DevTools client, shared rather than copied.
#[allow(dead_code)]
#[path = "../../cli/tests/serving/cdp.rs"]
mod cdp;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use jscope_testkit::{target_dir, temp_dir, RecordingBuilder};

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--virtual-time-budget=4000",
        "--window-size=1400,900",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The page's DOM after its scripts ran.
fn dom(browser: &Path, profile: &Path, url: &str) -> String {
    let out = headless(browser, profile)
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn screenshot(browser: &Path, profile: &Path, url: &str, name: &str) -> PathBuf {
    let dir = target_dir().join("jscope-test").join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    let _ = std::fs::remove_file(&file);
    let out = headless(browser, profile)
        .arg(format!("--screenshot={}", file.display()))
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::metadata(&file)
            .map(|m| m.len() > 5000)
            .unwrap_or(false),
        "screenshot {} written",
        file.display()
    );
    file
}

#[test]
fn jvm_list_threads_with_pause_and_flame_graph_in_chromium() {
    let Some(browser) = jscope_testkit::tools::chromium() else {
        return;
    };
    let (server, _log) = start(&temp_dir("collector-browser"), |_| {});
    let agents = server.agents_addr().unwrap();
    let http = server.http_addr().unwrap();
    let mut sims = [
        SimJvm::new(8101, "com.acme.Shop --port 8080"),
        SimJvm::new(8102, "com.acme.Billing"),
    ];
    let mut clients = Vec::new();
    for sim in sims.iter_mut() {
        let mut c = sim.connect(agents, 1);
        for seq in 1..=3 {
            c.send(seq, &sim.chunk()).unwrap();
        }
        c.wait_for_ack(3, Duration::from_secs(5)).unwrap();
        clients.push(c);
    }
    let profile = temp_dir("chromium-profile");
    let base = format!("http://{http}/");

    let list = dom(&browser, &profile, &base);
    for (sim, cmd) in sims
        .iter()
        .zip(["com.acme.Shop --port 8080", "com.acme.Billing"])
    {
        let row_start = list
            .find(&format!("data-id=\"{}\"", sim.stream))
            .expect("a row per JVM");
        let row = &list[row_start..row_start + list[row_start..].find("</tr>").unwrap()];
        assert!(row.contains(&format!(">{}<", sim.header.pid)), "{row}");
        assert!(row.contains(cmd), "{row}");
        assert!(row.contains("testhost/127.0.0.1"), "{row}");
        assert!(
            row.contains("OpenJDK 64-Bit Server VM 17.0.9 Test"),
            "{row}"
        );
        assert!(row.contains(">connected<"), "{row}");
    }
    assert!(list.contains("2 connected, 2 known"));
    screenshot(&browser, &profile, &base, "collector-jvms.png");

    let threads_url = format!("{base}#tab=threads&jvm={}&thread=1&pause=1", sims[0].stream);
    let threads = dom(&browser, &profile, &threads_url);
    for name in ["main", "worker-2", "worker-3"] {
        assert!(
            threads.contains(&format!("<td>{name}</td>")),
            "thread {name} listed"
        );
    }
    assert!(
        threads.contains(
            "<td>com.acme.App8101.work</td><td class=\"num\">42</td><td>App.java:42</td>"
        ),
        "stack with lines"
    );
    assert!(threads.contains("data-paused=\"true\""), "paused");
    assert!(
        threads.contains(">Resume</button>"),
        "the Pause button became Resume"
    );
    screenshot(&browser, &profile, &threads_url, "collector-threads.png");

    let flame_url = format!(
        "{base}api/flame?jvm={}&jvm={}&format=html",
        sims[0].stream, sims[1].stream
    );
    let flame = dom(&browser, &profile, &flame_url);
    assert!(
        flame.contains("com.acme.App8101.work") && flame.contains("com.acme.App8102.work"),
        "both JVMs merged"
    );
    screenshot(&browser, &profile, &flame_url, "collector-flame.png");
    screenshot(
        &browser,
        &profile,
        &format!("{base}#tab=flame&jvm={}", sims[0].stream),
        "collector-flame-tab.png",
    );

    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

/// A snapshot-mode recording (header and one chunk) whose only stack has a kernel
/// frame on top, then the Java method `java_leaf` under `com.acme.App.main`, then
/// a native frame of libc at the root, as a mixed-stack sampler records it.
fn mixed_stack_jvm(pid: u32, command: &str, java_leaf: &str) -> (SimJvm, Vec<u8>) {
    use jscope_format::{Frame, FrameKind};
    let sim = SimJvm::new(pid, command);
    let mut b = RecordingBuilder::with_header(sim.header.clone());
    let leaf = b.method(java_leaf);
    let main = b.method("com.acme.App.main");
    let kernel = b.native("[kernel]", "finish_task_switch.isra.0");
    let libc = b.native("libc.so.6", "start_thread");
    let frame = |method, kind| Frame {
        method,
        bci: 0,
        line: 0,
        kind,
    };
    let stack = b.stack_of(&[
        frame(kernel, FrameKind::Kernel),
        frame(leaf, FrameKind::Interpreted),
        frame(main, FrameKind::Interpreted),
        frame(libc, FrameKind::Native),
    ]);
    main_thread_snapshots(sim, b, stack, 10)
}

/// A collector with two JVMs (services `com.acme.Warehouse` and
/// `com.acme.Storefront`) streaming [`mixed_stack_jvm`]'s recording.
fn serve_two_mixed_stack_jvms(
    name: &str,
) -> (
    jscope_collector::ServerHandle,
    Vec<jscope_wire::WireClient>,
    Vec<String>,
) {
    let (server, _log) = start(&temp_dir(name), |_| {});
    let agents = server.agents_addr().unwrap();
    let leaf = "com.acme.inventory.WarehouseReplenishmentPlanner.recomputeSafetyStock";
    let mut clients = Vec::new();
    let mut streams = Vec::new();
    for (pid, command) in [(8201, "com.acme.Warehouse"), (8202, "com.acme.Storefront")] {
        let (sim, chunk) = mixed_stack_jvm(pid, command, leaf);
        let mut c = sim.connect(agents, 1);
        c.send(1, &chunk).unwrap();
        c.wait_for_ack(1, Duration::from_secs(5)).unwrap();
        clients.push(c);
        streams.push(sim.stream.clone());
    }
    (server, clients, streams)
}

#[test]
fn call_graph_names_native_and_kernel_frames_whole() {
    let (server, clients, streams) = serve_two_mixed_stack_jvms("collector-browser-cg");
    let Some(mut b) = cdp::Browser::launch("collector-cg") else {
        return;
    };
    let base = format!("http://{}/", server.http_addr().unwrap());
    // A Java method's box says Class.method; a native or kernel frame's box keeps
    // its whole name (not `so.6]` or `isra.0_[k]`).
    b.goto(&format!("{base}#tab=callgraph&jvm={}", streams[0]));
    b.wait_for(
        "document.querySelectorAll('#cg-graph .cg-name').length >= 4",
        Duration::from_secs(20),
    );
    let names =
        b.eval("[...document.querySelectorAll('#cg-graph .cg-name')].map(t => t.textContent)");
    let names: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for want in [
        "start_thread [libc.so.6]",
        "finish_task_switch.isra.0_[k]",
        "App.main",
        "WarehouseReplenishmentPlanner.recomputeSafetyStock",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    b.screenshot("collector-callgraph-native.png");
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

#[test]
fn explore_values_table_stays_in_its_column() {
    let (server, clients, _) = serve_two_mixed_stack_jvms("collector-browser-explore");
    let Some(mut b) = cdp::Browser::launch("collector-explore") else {
        return;
    };
    let base = format!("http://{}/", server.http_addr().unwrap());
    // By service: the values table (long values, a long top method) stays left of
    // the chosen value's heading and tables instead of running under them.
    b.goto(&format!("{base}#tab=explore&by=service"));
    b.wait_for(
        "document.querySelectorAll('#ex-values tbody tr').length === 2",
        Duration::from_secs(20),
    );
    let edges = b.eval(
        "(() => { const t = document.querySelector('#ex-values').getBoundingClientRect();
                  const r = document.querySelector('#ex-chosen').parentElement.getBoundingClientRect();
                  return [t.right, r.left]; })()",
    );
    let (table_right, side_left) = (edges[0].as_f64().unwrap(), edges[1].as_f64().unwrap());
    b.screenshot("collector-explore-columns.png");
    assert!(
        table_right <= side_left,
        "the values table ends at {table_right}px, over the side column from {side_left}px"
    );
    assert!(b
        .text("#ex-values tbody")
        .contains("finish_task_switch.isra.0_[k]"));
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

#[test]
fn the_flame_tab_downloads_its_selection_as_one_jfr_file() {
    let (server, clients, streams) = serve_two_mixed_stack_jvms("collector-browser-jfr");
    let http = server.http_addr().unwrap();
    let Some(mut b) = cdp::Browser::launch("collector-jfr") else {
        return;
    };
    b.goto(&format!("http://{http}/#tab=flame&jvm={}", streams[0]));
    b.wait_for(
        "document.querySelector('#flame-jfr').href.includes('jvm=')",
        Duration::from_secs(20),
    );
    // Checking the other JVM too puts both in the download.
    b.eval("[...document.querySelectorAll('#flame-jvms input')].find(i => !i.checked).click()");
    let href = b.eval("document.querySelector('#flame-jfr').href");
    let href = href.as_str().unwrap();
    assert!(href.contains("api/jfr?"), "{href}");
    for s in &streams {
        assert!(href.contains(s.as_str()), "{s} in {href}");
    }
    assert_eq!(
        b.eval("document.querySelector('#flame-jfr').getAttribute('download')"),
        "jscope.jfr"
    );
    let got = b.eval(
        "fetch(document.querySelector('#flame-jfr').href).then(r => r.arrayBuffer())\
           .then(a => { const u = new Uint8Array(a); return [u.length, String.fromCharCode(...u.slice(0, 3))]; })",
    );
    assert_eq!(got[1], "FLR", "{got}");
    let bytes = http_get_bytes(http, &href[href.find("/api/").unwrap()..]);
    let rec = jscope_jfr::read_bytes(&bytes).expect("a JFR file");
    assert_eq!((rec.chunks, got[0].as_u64()), (2, Some(bytes.len() as u64)));
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

/// GET `path`: the body's bytes (the status must be 200).
fn http_get_bytes(addr: std::net::SocketAddr, path: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    out[at + 4..].to_vec()
}

#[test]
fn pushed_profiles_are_named_by_service_in_the_jvm_pickers() {
    let (server, clients, _) = serve_two_mixed_stack_jvms("collector-browser-push");
    let http = server.http_addr().unwrap();
    let until = now_ns() / 1_000_000_000;
    let push = format!(
        "/ingest?name=checkout.cpu%7Benv%3Dstaging%7D&from={}&until={until}",
        until - 10
    );
    assert_eq!(http_post(http, &push, "main;work 30\n").0, 200);
    let Some(mut b) = cdp::Browser::launch("collector-push") else {
        return;
    };
    b.goto(&format!("http://{http}/#tab=flame"));
    b.wait_for(
        "document.querySelectorAll('#flame-jvms label').length === 3",
        Duration::from_secs(20),
    );
    let labels = b
        .eval("[...document.querySelectorAll('#flame-jvms label')].map(l => l.textContent.trim())");
    let labels: Vec<&str> = labels
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(labels.contains(&"checkout env=staging"), "{labels:?}");
    assert!(labels.contains(&"8201 com.acme.Warehouse"), "{labels:?}");
    b.screenshot("collector-flame-push-picker.png");
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

#[test]
fn a_long_error_wraps_instead_of_widening_the_page() {
    let (server, clients, streams) = serve_two_mixed_stack_jvms("collector-browser-error");
    let Some(mut b) = cdp::Browser::launch("collector-error") else {
        return;
    };
    let base = format!("http://{}/", server.http_addr().unwrap());
    // A JVM without a trace: the queue view shows the API's hint, whose `--trace`
    // patterns are one long word.
    b.goto(&format!("{base}#tab=queue&jvm={}", streams[0]));
    let hint = b.wait_for(
        "document.querySelector('#q-error').textContent",
        Duration::from_secs(20),
    );
    assert!(
        hint.as_str()
            .unwrap()
            .contains("--trace 'java.util.concurrent."),
        "{hint}"
    );
    let widths =
        b.eval("[document.documentElement.scrollWidth, document.documentElement.clientWidth]");
    b.screenshot("collector-queue-hint.png");
    assert!(
        widths[0].as_f64() <= widths[1].as_f64(),
        "the page is {} px wide in a {} px window",
        widths[0],
        widths[1]
    );
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

#[test]
fn the_trace_tree_of_a_jvm_without_a_trace_says_how_to_record_one() {
    let (server, clients, streams) = serve_two_mixed_stack_jvms("collector-browser-notrace");
    let Some(mut b) = cdp::Browser::launch("collector-notrace") else {
        return;
    };
    let base = format!("http://{}/", server.http_addr().unwrap());
    b.goto(&format!("{base}#tab=tree&jvm={}", streams[0]));
    let summary = b.wait_for(
        "document.querySelector('#tb-summary').textContent",
        Duration::from_secs(20),
    );
    let summary = summary.as_str().unwrap();
    assert!(
        summary.starts_with("0 calls in 0 threads, 0 events"),
        "{summary}"
    );
    assert!(
        summary.contains("no exact trace; record with jscope record --trace"),
        "{summary}"
    );
    b.screenshot("collector-tree-no-trace.png");
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

/// A JVM whose one stack is `depth` Java frames deep, sampled `snapshots` times.
fn deep_stack_jvm(pid: u32, depth: u32, snapshots: u64) -> (SimJvm, Vec<u8>) {
    let sim = SimJvm::new(pid, &format!("com.acme.Deep{pid}"));
    let mut b = RecordingBuilder::with_header(sim.header.clone());
    let frames: Vec<(String, u32)> = (0..depth)
        .rev()
        .map(|i| (format!("com.acme.Deep.level{i}"), 0))
        .collect();
    let frames: Vec<(&str, u32)> = frames.iter().map(|(l, n)| (l.as_str(), *n)).collect();
    let stack = b.stack(&frames);
    main_thread_snapshots(sim, b, stack, snapshots)
}

/// Finishes a simulated JVM's chunk: one runnable thread `main` whose `stack` is
/// taken by `snapshots` snapshots, 100 ms apart.
fn main_thread_snapshots(
    sim: SimJvm,
    mut b: RecordingBuilder,
    stack: jscope_format::StackId,
    snapshots: u64,
) -> (SimJvm, Vec<u8>) {
    b.thread(1, "main", "main", 1);
    for k in 0..snapshots {
        b.snapshot(k * 100, 100, &[(1, 0x5, stack.0)]);
    }
    let chunk = b.take_chunk();
    (sim, chunk)
}

#[test]
fn flame_graphs_deeper_than_their_frame_open_at_their_root() {
    let (server, _log) = start(&temp_dir("collector-browser-deep"), |_| {});
    let agents = server.agents_addr().unwrap();
    let mut clients = Vec::new();
    let mut streams = Vec::new();
    for (pid, snapshots) in [(8301, 10), (8302, 20)] {
        let (sim, chunk) = deep_stack_jvm(pid, 120, snapshots);
        let mut c = sim.connect(agents, 1);
        c.send(1, &chunk).unwrap();
        c.wait_for_ack(1, Duration::from_secs(5)).unwrap();
        clients.push(c);
        streams.push(sim.stream.clone());
    }
    let Some(mut b) = cdp::Browser::launch("collector-deep") else {
        return;
    };
    let base = format!("http://{}/", server.http_addr().unwrap());
    // The frame's view ends at the bottom of the page, where the root is.
    let at_bottom = |frame: &str| {
        format!(
            "(() => {{ const f = document.querySelector('{frame}');
                       const d = f.contentDocument;
                       if (!d || d.readyState !== 'complete' || !d.body || !d.body.textContent.includes('level0')) return null;
                       const e = d.documentElement;
                       return [e.scrollHeight, f.contentWindow.scrollY + f.contentWindow.innerHeight]; }})()"
        )
    };
    for (url, frame, shot) in [
        (
            format!("{base}#tab=diff&base={}&new={}", streams[0], streams[1]),
            "#diff-frame",
            "collector-diff-deep.png",
        ),
        (
            format!("{base}#tab=flame&jvm={}", streams[0]),
            "#flame-frame",
            "collector-flame-deep.png",
        ),
    ] {
        b.goto("about:blank");
        b.goto(&url);
        b.wait_for(&at_bottom(frame), Duration::from_secs(20));
        // The page's load handler scrolls right after the load; give it a moment.
        let scrolled = format!(
            "(() => {{ const s = {}; return s && s[1] >= s[0] - 1 ? s : null; }})()",
            at_bottom(frame)
        );
        let sizes = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            b.wait_for(&scrolled, Duration::from_secs(3))
        })) {
            Ok(s) => s,
            Err(_) => b.eval(&at_bottom(frame)),
        };
        let (page, seen_to) = (sizes[0].as_f64().unwrap(), sizes[1].as_f64().unwrap());
        // The screenshot is drawn a frame later than the scroll.
        std::thread::sleep(Duration::from_millis(500));
        b.screenshot(shot);
        assert!(
            page > 1000.0,
            "{frame}: a page taller than its frame ({page} px)"
        );
        assert!(
            seen_to >= page - 1.0,
            "{frame} shows down to {seen_to} px of {page}"
        );
    }
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}

#[test]
fn the_distributed_tree_of_jvms_without_calls_says_how_to_record_them() {
    let (server, clients, _) = serve_two_mixed_stack_jvms("collector-browser-nodist");
    let Some(mut b) = cdp::Browser::launch("collector-nodist") else {
        return;
    };
    b.goto(&format!(
        "http://{}/#tab=distributed",
        server.http_addr().unwrap()
    ));
    let summary = b.wait_for(
        "document.body.dataset.distReady === 'true' && document.querySelector('#dist-summary').textContent",
        Duration::from_secs(20),
    );
    let summary = summary.as_str().unwrap();
    assert!(
        summary.starts_with("2 JVMs, 0 remote calls matched"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "no traced or remote calls in these JVMs; record them with jscope record --remote"
        ),
        "{summary}"
    );
    for c in clients {
        c.finish(Duration::from_secs(5)).unwrap();
    }
    server.shutdown();
}
