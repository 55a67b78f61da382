//! The web UI in headless Chromium over real streamed data: the JVM list, the live
//! threads view with Pause, and the flame graph. Screenshots are kept under
//! target/jscope-test/ as artefacts. Skipped with a notice when Chromium is absent.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use jscope_testkit::{target_dir, temp_dir};

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("which").arg(name).output().ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

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
    let Some(browser) = chromium() else {
        eprintln!("NOTICE: chromium not found; skipping the browser test");
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
