//! `jscope serve` / `jscope view` as processes, and the analysis commands reading a
//! collector (`--collector URL`, `--data DIR`) instead of a file. The agents here are
//! simulated (real protocol, real recording chunks); collector_e2e.rs uses real JVMs.

#[path = "../../collector/tests/common/sim.rs"]
mod common;
mod serving;
mod support;

use std::time::Duration;

use common::{SimJvm, SNAPSHOTS_PER_CHUNK, THREADS};
use jscope_testkit::temp_dir;
use support::*;

const CHUNKS: u64 = 5;

/// Streams `CHUNKS` chunks of a simulated JVM and waits until all are acknowledged.
fn stream(agents: std::net::SocketAddr, pid: u32) -> SimJvm {
    let mut sim = SimJvm::new(pid, &format!("com.acme.Main{pid} --port {pid}"));
    let mut c = sim.connect(agents, 1);
    for seq in 1..=CHUNKS {
        c.send(seq, &sim.chunk()).unwrap();
    }
    assert_eq!(c.finish(Duration::from_secs(10)).unwrap(), CHUNKS);
    sim
}

/// `samples` and the (self, total) samples of each method of `jscope report --format json`.
struct Hot {
    samples: u64,
    json: serde_json::Value,
}

impl Hot {
    fn row(&self, method: &str) -> Option<(u64, u64)> {
        let m = self.json["methods"]
            .as_array()?
            .iter()
            .find(|m| m["method"] == method)?;
        Some((m["self_samples"].as_u64()?, m["total_samples"].as_u64()?))
    }
}

fn report(args: &[&str]) -> Hot {
    let out = jscope(&[&["report", "--format", "json"], args].concat());
    assert!(out.status.success(), "report {args:?}: {}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    Hot {
        samples: json["samples"].as_u64().unwrap(),
        json,
    }
}

#[test]
fn analysis_commands_read_a_running_collector_and_its_data_dir() {
    let data = temp_dir("cli-collector-source");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let agents = served.agents.expect("serve prints the agents address");
    let a = stream(agents, 5101);
    let b = stream(agents, 5102);
    let url = served.url();
    let samples = CHUNKS * SNAPSHOTS_PER_CHUNK * THREADS as u64;

    for (source, value) in [
        ("--collector", url.as_str()),
        ("--data", data.to_str().unwrap()),
    ] {
        for (sim, pid) in [(&a, "5101"), (&b, "5102")] {
            let r = report(&[source, value, "--jvm", pid]);
            assert_eq!(r.samples, samples, "{source} {pid}");
            let main = format!("{}.main", sim.class_name());
            let work = format!("{}.work", sim.class_name());
            // main is the leaf of 2 of 3 threads, work of 1; main is on every stack.
            assert_eq!(r.row(&main), Some((samples * 2 / 3, samples)), "{source}");
            assert_eq!(r.row(&work), Some((samples / 3, samples / 3)), "{source}");
        }
        // By stream id, too.
        let r = report(&[source, value, "--jvm", &b.stream]);
        assert_eq!(r.samples, samples);
        // Two JVMs and no --jvm: a clear error naming both.
        let out = jscope(&["report", source, value]);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(
            err.contains("--jvm") && err.contains(&a.stream) && err.contains(&b.stream),
            "{err}"
        );
    }

    // --from/--to count seconds from the JVM's start: snapshots are 100 ms apart,
    // 20 of them, so [0.5 s, 1.0 s) holds 5 snapshots of 3 threads.
    let r = report(&[
        "--collector",
        &url,
        "--jvm",
        "5101",
        "--from",
        "0.5",
        "--to",
        "1.0",
    ]);
    assert_eq!(r.samples, 5 * THREADS as u64);

    // The other commands go through the same path.
    let threads = jscope_json(&[
        "threads",
        "--collector",
        &url,
        "--jvm",
        "5102",
        "--format",
        "json",
    ]);
    let rows = threads["threads"].as_array().unwrap();
    assert_eq!(rows.len(), THREADS as usize);
    assert_eq!(rows[0]["name"], "main");
    let info = jscope_json(&[
        "info",
        "--data",
        data.to_str().unwrap(),
        "--jvm",
        "5102",
        "--format",
        "json",
    ]);
    assert_eq!(info["pid"], 5102, "{info}");
    let out = jscope(&["collapsed", "--collector", &url, "--jvm", "5101"]);
    let text = stdout(&out);
    assert!(
        text.contains("com.acme.App5101.main;com.acme.App5101.work 20"),
        "{text}"
    );
    let html = data.join("flame.html");
    let out = jscope(&[
        "flame",
        "--collector",
        &url,
        "--jvm",
        "5101",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("com.acme.Main5101 (pid 5101)"),
        "titled by the JVM"
    );
    let out = jscope(&["callgraph", "--collector", &url, "--jvm", "5101", "--dot"]);
    assert!(stdout(&out).contains("digraph"), "{}", stderr(&out));

    // Errors are one line: an unknown JVM, a file and a collector at once.
    let out = jscope(&["report", "--collector", &url, "--jvm", "999"]);
    assert!(
        stderr(&out).contains("no JVM with id or pid 999"),
        "{}",
        stderr(&out)
    );
    let out = jscope(&["report", "x.jsc", "--collector", &url]);
    assert!(!out.status.success());
    let out = jscope(&["report"]);
    assert!(!out.status.success());

    assert!(served.interrupt(), "Ctrl-C stops jscope serve cleanly");
    // After the collector stopped, its data dir still answers.
    let r = report(&["--data", data.to_str().unwrap(), "--jvm", "5101"]);
    assert_eq!(r.samples, samples);
}

#[test]
fn view_serves_the_ui_over_one_recording() {
    let dir = temp_dir("cli-view");
    let file = dir.join("app.jsc");
    std::fs::write(&file, synthetic_recording().bytes).unwrap();
    let served = serving::start(
        &jscope_bin(),
        &["view", file.to_str().unwrap(), "--http", "127.0.0.1:0"],
    );
    let jvms = served.json("/api/jvms");
    assert_eq!(jvms[0]["id"], "app");
    let (status, page) = served.get("/");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&page).contains("<script"));
    let (status, raw) = served.get("/api/jvms/app/recording");
    assert_eq!(status, 200);
    assert_eq!(
        raw,
        std::fs::read(&file).unwrap(),
        "the file, byte for byte"
    );
    assert!(served.interrupt());
}

#[test]
fn serve_refuses_a_public_address_without_a_token() {
    let out = jscope(&["serve", "--agents", "0.0.0.0:0", "--http", "127.0.0.1:0"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("needs --token"), "{}", stderr(&out));
}
