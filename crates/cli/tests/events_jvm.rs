//! `jscope locks`, `gc`, `alloc` and `events` on recordings the agent wrote with its
//! JVM events on, in real JVMs (each JDK testkit finds): JPMT's shared counter names
//! the counter's class and site, System.gc() K times gives at least K pauses, a user
//! event logged N times is N lines, the top allocation site and the producer/consumer's
//! waits are found; and `jscope view` of a real recording draws the timeline in
//! headless Chromium with a lane per thread and GC bars.

mod events_ui;
mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child, Java};
use serving::cdp::Browser;
use support::{jscope, jscope_bin, jscope_json, stdout};

/// The fixture, without its compile-time stub of `jscope.Events` (the agent's must load).
fn classes() -> PathBuf {
    let dir =
        compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/events_fixtures"));
    let _ = std::fs::remove_dir_all(dir.join("jscope"));
    dir
}

/// Runs `EventsApp ARGS` with the agent's events on; returns the recording.
fn record(java: &Java, name: &str, options: &str, args: &[&str]) -> PathBuf {
    let file = temp_dir(&format!("events-jvm-{name}-{}", java.major)).join("app.jsc");
    let agent = format!(
        "-agentpath:{}={options},quiet,file={}",
        agent_path().display(),
        file.display()
    );
    let mut cmd = Command::new(&java.bin);
    cmd.args(["-Xcheck:jni", &agent, "-cp"])
        .arg(classes())
        .arg("EventsApp")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(180));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("Exception"),
        "JDK {}: EventsApp {args:?}: {err}",
        java.major
    );
    assert!(String::from_utf8_lossy(&out.stdout).ends_with(&format!("done {}\n", args[0])));
    file
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn duration_s(file: &Path) -> f64 {
    jscope_json(&["info", s(file), "--format", "json"])["duration_s"]
        .as_f64()
        .unwrap_or(f64::MAX)
}

#[test]
fn shared_counter_contention_names_the_class_and_site() {
    for java in javas() {
        let f = record(
            &java,
            "counter",
            "events=monitors",
            &["counter", "4", "50000"],
        );
        let j = jscope_json(&["locks", s(&f), "--format", "json"]);
        let m = &j["monitors"][0];
        assert_eq!(m["class"], "EventsApp$Tally", "JDK {}: {j}", java.major);
        let site = m["sites"][0]["site"].as_str().unwrap();
        assert!(
            site.starts_with("EventsApp$Tally.increment:"),
            "JDK {}: {site}",
            java.major
        );
        // Plausible blocked time: some, and at most every counter thread blocked all along.
        let total_s = m["total_ns"].as_f64().unwrap() / 1e9;
        assert!(
            m["count"].as_u64().unwrap() >= 1 && total_s > 0.0,
            "JDK {}: {m}",
            java.major
        );
        let wall = duration_s(&f);
        assert!(
            total_s <= 4.0 * wall,
            "JDK {}: {total_s}s blocked in {wall}s",
            java.major
        );
        let text = stdout(&jscope(&["locks", s(&f)]));
        assert!(text.contains("EventsApp$Tally\n"), "{text}");
        // The same events, one per line, on the counter threads only. (A
        // counter thread may also wait for its own Thread object's monitor as
        // it exits while the main thread joins it: not a Tally's.)
        let lines = stdout(&jscope(&[
            "events",
            s(&f),
            "--type",
            "monitor",
            "--thread",
            "counter-*",
        ]));
        let on_tally = lines
            .lines()
            .skip(1)
            .filter(|l| l.split_whitespace().nth(6) == Some("EventsApp$Tally"))
            .count();
        assert_eq!(on_tally as u64, m["count"].as_u64().unwrap(), "{lines}");
    }
}

#[test]
fn system_gc_k_times_gives_at_least_k_pauses() {
    for java in javas() {
        let f = record(&java, "gc", "events=gc", &["gc", "6"]);
        let j = jscope_json(&["gc", s(&f), "--format", "json"]);
        assert!(j["count"].as_u64().unwrap() >= 6, "JDK {}: {j}", java.major);
        assert!(j["total_ns"].as_u64().unwrap() > 0 && j["wall_percent"].as_f64().unwrap() < 100.0);
        let lines = stdout(&jscope(&["events", s(&f), "--type", "gc"]));
        assert_eq!(
            lines.lines().count() as u64 - 1,
            j["count"].as_u64().unwrap()
        );
    }
}

#[test]
fn user_event_logged_n_times_is_n_lines() {
    for java in javas() {
        let f = record(&java, "user", "events=user", &["user", "777"]);
        let text = stdout(&jscope(&["events", s(&f), "--type", "user"]));
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines.len(), 777, "JDK {}", java.major);
        assert!(
            lines.iter().all(|l| l.contains(" user main order ")),
            "{}",
            lines[0]
        );
        // Values 0..777 in order, in the value column.
        let values: Vec<i64> = lines
            .iter()
            .map(|l| l.split(' ').nth(3).unwrap().parse().unwrap())
            .collect();
        assert_eq!(values, (0..777).collect::<Vec<i64>>());
        let j = jscope_json(&["events", s(&f), "--intervals", "--format", "json"]);
        assert_eq!(j["rows"][0]["count"], 777);
        assert!(j["rows"][0]["interval_min_ns"].as_u64().is_some());
    }
}

#[test]
fn allocation_site_and_waits_are_found() {
    for java in javas() {
        let f = record(
            &java,
            "alloc",
            "events=alloc,objectages",
            &["alloc", "3000"],
        );
        let j = jscope_json(&["alloc", s(&f), "--ages", "--format", "json"]);
        let top = &j["alloc"]["rows"][0];
        assert!(
            top["key"]
                .as_str()
                .unwrap()
                .starts_with("EventsApp.makeBuffer:"),
            "JDK {}: {top}",
            java.major
        );
        assert_eq!(top["top_class"], "byte[]");
        let class = jscope_json(&["alloc", s(&f), "--by", "class", "--format", "json"]);
        assert_eq!(class["rows"][0]["key"], "byte[]", "{class}");
        let ages = &j["ages"];
        assert!(
            ages["freed"].as_u64().unwrap() + ages["live"].as_u64().unwrap() > 0,
            "{ages}"
        );

        let q = record(&java, "queue", "events=waits", &["queue", "20"]);
        let locks = jscope_json(&["locks", s(&q), "--format", "json"]);
        let waits = locks["waits"].as_array().unwrap();
        let mailbox = waits
            .iter()
            .find(|w| w["class"] == "EventsApp$Mailbox")
            .unwrap_or_else(|| panic!("JDK {}: {locks}", java.major));
        assert!(mailbox["count"].as_u64().unwrap() >= 1);
        assert_eq!(
            mailbox["with_timeout"], mailbox["count"],
            "every wait had 200 ms"
        );
        // JDK 21+ waits in Object.wait0 under Object.wait: the caller is further down.
        let stack = mailbox["sites"][0]["stack"].as_array().unwrap();
        assert!(
            stack
                .iter()
                .any(|f| f.as_str().unwrap().starts_with("EventsApp$Mailbox.take:")),
            "JDK {}: {stack:?}",
            java.major
        );
    }
}

/// A real JVM with wall sampling and every event kind, shown by `jscope view`.
#[test]
fn timeline_of_a_real_jvm_in_chromium() {
    let Some(java) = javas().into_iter().next() else {
        return;
    };
    let f = record(&java, "view", "mode=wall,events=all,objectages", &["all"]);
    let served = serving::start(&jscope_bin(), &["view", s(&f), "--http", "127.0.0.1:0"]);
    let id = served.json("/api/jvms")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let t = served.json(&format!("/api/jvms/{id}/timeline"));
    assert!(t["gc"].as_array().unwrap().len() >= 3, "{}", t["gc"]);
    let Some(mut b) = Browser::launch("events-jvm") else {
        return;
    };
    let want = events_ui::Expect {
        lanes: &["main", "counter-0", "counter-3", "consumer"],
        min_gc: 3,
        state: "tl-running",
    };
    events_ui::check_timeline(&mut b, &served, &id, &want, "events-jvm-timeline.png");
    let blocked =
        b.eval("document.querySelectorAll('#tl-svg .tl-blocked, #tl-svg .tl-waiting').length");
    assert!(
        blocked.as_u64().unwrap() > 0,
        "blocked or waiting spans drawn"
    );
    events_ui::check_locks_and_alloc(
        &mut b,
        &served,
        &id,
        "EventsApp$Tally",
        "EventsApp.makeBuffer:",
        "events-jvm.png",
    );
}

/// Every monitor event in the subtree of an event-tree node, with the path of
/// invocation labels down to it.
fn monitor_paths(node: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<String>) {
    path.push(node["label"].as_str().unwrap().to_string());
    for e in node["events"].as_array().unwrap() {
        if e["type"] == "monitor" {
            out.push(format!(
                "{} > {}",
                path.join(" > "),
                e["subject"].as_str().unwrap()
            ));
        }
    }
    for c in node["children"].as_array().unwrap() {
        monitor_paths(c, path, out);
    }
    path.pop();
}

/// JPMT's event trace: with exact tracing on, the counter threads' monitor events
/// nest inside the traced invocation of the lambda that calls `increment` (the
/// monitor is entered before `increment`'s body, so before its entry probe).
#[test]
fn event_tree_nests_monitor_events_in_traced_invocations() {
    for java in javas() {
        let options = "trace=EventsApp*,events=monitors+user";
        let f = record(&java, "tree", options, &["counter", "4", "20000"]);
        let tree = jscope_json(&[
            "events",
            s(&f),
            "--tree",
            "--type",
            "monitor",
            "--format",
            "json",
        ]);
        assert_eq!(tree["basis"], "traced");
        let mut paths = Vec::new();
        for t in tree["threads"].as_array().unwrap() {
            if t["name"].as_str().unwrap().starts_with("counter-") {
                for root in t["roots"].as_array().unwrap() {
                    monitor_paths(root, &mut vec![], &mut paths);
                }
            }
        }
        assert!(!paths.is_empty(), "JDK {}: {tree}", java.major);
        assert!(
            paths
                .iter()
                .all(|p| p == "EventsApp.lambda$counter$0 > EventsApp$Tally"),
            "JDK {}: {paths:?}",
            java.major
        );
        let text = stdout(&jscope(&["events", s(&f), "--tree", "--type", "monitor"]));
        assert!(text.contains("\n  EventsApp.lambda$counter$0 ["), "{text}");
        assert!(text.contains(" monitor EventsApp$Tally "), "{text}");
    }
}
