//! End to end with real JVMs: `jscope serve` as a child process, JVMs streaming to it
//! with the agent's `collector=` option, and the CLI and the web UI reading what it
//! stored. On each JDK that `jscope_testkit::javas()` finds.

mod jvms;
mod serving;
mod support;

use std::time::Duration;

use jscope_testkit::{javas, temp_dir, wait_until, Child, Java};
use jvms::*;
use serving::cdp::Browser;
use serving::ui::{self, Shown};
use serving::Served;
use support::*;

#[test]
fn three_jvms_stream_at_once_and_each_is_reported_and_shown() {
    let _one = serial();
    for (n, java) in javas().iter().enumerate() {
        let data = temp_dir(&format!("e2e-three-jdk{}", java.major));
        let served = serving::serve(&jscope_bin(), &data, &[]);
        let addr = served.agents.unwrap();
        let options = format!("mode=cpu+snapshot,collector={addr}");
        let which = ["alpha", "beta", "gamma"];
        // Long enough for the browser checks on the first JDK.
        let millis = if n == 0 { 20_000 } else { 8_000 };
        let mut jvms: Vec<Child> = which
            .iter()
            .map(|w| hot_jvm(java, &options, w, millis))
            .collect();
        let pids: Vec<u32> = jvms.iter().map(Child::id).collect();
        assert!(
            wait_until(Duration::from_secs(20), || {
                pids.iter()
                    .all(|&p| row_of(&served, p).is_some_and(|r| r["status"] == "connected"))
            }),
            "jdk {}: three JVMs connected: {:?}",
            java.major,
            rows(&served)
        );
        for (pid, w) in pids.iter().zip(which) {
            let row = row_of(&served, *pid).unwrap();
            let cmd = row["command_line"].as_str().unwrap();
            assert!(cmd.contains(&format!("Hot {w} {millis}")), "{row}");
            assert_eq!(row["address"], "127.0.0.1", "{row}");
            assert!(
                row["java_version"]
                    .as_str()
                    .unwrap()
                    .starts_with(&java.major.to_string()),
                "{row}"
            );
        }
        // Let them stream some seconds of cpu samples (the rows' counts hold
        // snapshots too, which alone passed 100 while a JVM starved on a busy
        // machine had no cpu sample stored).
        let url = served.url();
        let cpu_samples = |pid: u32| {
            let pid = pid.to_string();
            let args = [
                "report",
                "--collector",
                &url,
                "--jvm",
                &pid,
                "--mode",
                "cpu",
            ];
            let out = jscope(&[&args[..], &["--format", "json"]].concat());
            serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .ok()
                .and_then(|r| r["samples"].as_u64())
                .unwrap_or(0)
        };
        assert!(
            wait_until(Duration::from_secs(60), || pids
                .iter()
                .all(|&p| cpu_samples(p) >= 50)),
            "jdk {}: 50 cpu samples of each JVM stored",
            java.major
        );
        for (pid, w) in pids.iter().zip(which) {
            let pid = pid.to_string();
            let report = jscope_json(&[
                "report",
                "--collector",
                &url,
                "--jvm",
                &pid,
                "--mode",
                "cpu",
                "--format",
                "json",
            ]);
            let top = &report["methods"][0];
            assert_eq!(
                top["method"],
                format!("Hot.{w}"),
                "jdk {}: the hot method of pid {pid}: {report}",
                java.major
            );
        }
        if n == 0 {
            check_ui_with_real_jvms(&served, pids[0], java);
        }
        for jvm in &mut jvms {
            wait_exit(jvm, java);
        }
        assert!(wait_until(Duration::from_secs(10), || {
            pids.iter()
                .all(|&p| row_of(&served, p).is_some_and(|r| r["status"] == "gone"))
        }));
        assert!(served.interrupt());
    }
}

/// The browser test on real data: JVM list, live threads with Pause, flame graph
/// and call graph of the first JVM.
fn check_ui_with_real_jvms(served: &Served, pid: u32, java: &Java) {
    let Some(mut browser) = Browser::launch("e2e") else {
        return;
    };
    let row = row_of(served, pid).unwrap();
    let id = row["id"].as_str().unwrap().to_string();
    let command = row["command_line"].as_str().unwrap().to_string();
    let jvm = Shown {
        id: &id,
        pid,
        command: &command,
        method: "Hot.alpha",
    };
    let tag = format!("jdk{}", java.major);
    ui::check_jvm_list(
        &mut browser,
        served,
        std::slice::from_ref(&jvm),
        &format!("e2e-{tag}-jvms.png"),
    );
    // Real JVMs send a snapshot every 100 ms: new data arrives by itself.
    let threads_path = format!("/api/jvms/{id}/threads");
    let mut more = || {
        let before = served.json(&threads_path)["at_s"].clone();
        assert!(wait_until(Duration::from_secs(10), || {
            served.json(&threads_path)["at_s"] != before
        }));
    };
    ui::check_threads_pause(
        &mut browser,
        served,
        &jvm,
        "hot-worker",
        "Hot.alpha",
        &mut more,
        &format!("e2e-{tag}-threads-paused.png"),
    );
    ui::check_flame(&mut browser, served, &jvm, &format!("e2e-{tag}-flame.png"));
    ui::check_call_graph(
        &mut browser,
        served,
        &jvm,
        &format!("e2e-{tag}-callgraph.png"),
    );
}

#[test]
fn kill_9_of_the_collector_loses_no_acknowledged_chunk_and_agents_reconnect() {
    let _one = serial();
    for java in javas() {
        let dir = temp_dir(&format!("e2e-kill9-jdk{}", java.major));
        let data = dir.join("data");
        let file = dir.join("copy.jsc");
        let served = serving::serve(&jscope_bin(), &data, &[]);
        let addr = served.agents.unwrap();
        let options = format!("mode=cpu+snapshot,collector={addr},file={}", file.display());
        let mut jvm = hot_jvm(&java, &options, "beta", 8_000);
        let pid = jvm.id();
        assert!(wait_until(Duration::from_secs(20), || {
            row_of(&served, pid).is_some_and(|r| r["last_seq"].as_u64().unwrap_or(0) >= 2)
        }));
        let acked_before = row_of(&served, pid).unwrap()["last_seq"].as_u64().unwrap();
        served.kill();
        std::thread::sleep(Duration::from_millis(1500));
        let served = serving::serve_on(&jscope_bin(), &data, addr);
        assert!(
            wait_until(Duration::from_secs(20), || {
                row_of(&served, pid).is_some_and(|r| r["status"] == "connected")
            }),
            "jdk {}: the agent reconnected by itself",
            java.major
        );
        wait_exit(&mut jvm, &java);
        assert!(wait_until(Duration::from_secs(10), || {
            row_of(&served, pid).is_some_and(|r| r["status"] == "gone")
        }));

        let copy = info(&[file.to_str().unwrap()]);
        let stored = info(&["--data", data.to_str().unwrap(), "--jvm", &pid.to_string()]);
        let acked = counter(&copy, "collector.chunks_acked").expect("acked counter");
        assert!(
            counter(&copy, "collector.reconnects").unwrap_or(0) >= 1,
            "{copy}"
        );
        assert_eq!(counter(&copy, "collector.chunks_dropped").unwrap_or(0), 0);
        let stored_seq = served.json(&format!(
            "/api/jvms/{}",
            row_of(&served, pid).unwrap()["id"].as_str().unwrap()
        ))["jvm"]["last_seq"]
            .as_u64()
            .unwrap();
        assert!(
            stored_seq >= acked && acked > acked_before,
            "jdk {}: the store holds every acknowledged chunk ({stored_seq} >= {acked} > {acked_before})",
            java.major
        );
        // Nothing dropped: the collector's copy holds what the file holds.
        assert_eq!(
            holdings(&stored),
            holdings(&copy),
            "jdk {}: stored {stored} vs file {copy}",
            java.major
        );
        assert!(holdings(&copy).0 > 50, "{copy}");
        assert!(served.interrupt());
    }
}

#[test]
fn a_jvm_started_while_the_collector_is_down_delivers_its_buffer_once_it_is_up() {
    let _one = serial();
    for java in javas() {
        let dir = temp_dir(&format!("e2e-late-jdk{}", java.major));
        let data = dir.join("data");
        let file = dir.join("copy.jsc");
        let addr = free_addr();
        let options = format!(
            "quiet,mode=cpu+snapshot,collector={addr},file={}",
            file.display()
        );
        let mut jvm = hot_jvm(&java, &options, "gamma", 6_000);
        let pid = jvm.id();
        // The collector comes up once the agent's own file holds cpu samples
        // (after a fixed two seconds, a JVM starting slowly on a busy machine
        // had none yet): those must reach the store too.
        let copy_cpu = || {
            let out = jscope(&["info", file.to_str().unwrap(), "--format", "json"]);
            serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .ok()
                .and_then(|i| i["samples"]["cpu"].as_u64())
                .unwrap_or(0)
        };
        assert!(
            wait_until(Duration::from_secs(30), || copy_cpu() > 10),
            "jdk {}: cpu samples in the agent's file",
            java.major
        );
        let early = copy_cpu();
        let served = serving::serve_on(&jscope_bin(), &data, addr);
        assert!(
            wait_until(Duration::from_secs(20), || row_of(&served, pid).is_some()),
            "jdk {}: the agent found the collector",
            java.major
        );
        wait_exit(&mut jvm, &java);
        assert!(wait_until(Duration::from_secs(10), || {
            row_of(&served, pid).is_some_and(|r| r["status"] == "gone")
        }));
        let copy = info(&[file.to_str().unwrap()]);
        let stored = info(&["--data", data.to_str().unwrap(), "--jvm", &pid.to_string()]);
        assert_eq!(counter(&copy, "collector.chunks_dropped").unwrap_or(0), 0);
        assert_eq!(
            holdings(&stored),
            holdings(&copy),
            "jdk {}: the buffered start arrived: stored {stored} vs file {copy}",
            java.major
        );
        // The samples taken before the collector was up are among them.
        assert!(
            holdings(&stored).0 >= early,
            "jdk {}: {early} cpu samples before the collector was up, {stored} stored",
            java.major
        );
        assert!(served.interrupt());
    }
}
