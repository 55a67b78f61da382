//! `jscope queue` on a real thread pool: an M/M/c fixture (seeded Poisson arrivals,
//! exponential service times, a fixed pool of c workers) measures each task's own
//! time in the queue; the replay from the trace must agree with it within 5% and
//! with the Erlang C formula within 15%.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir};
use serde_json::Value;
use support::*;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/queue_fixtures"))
}

const POOL_TRACE: &str = "java.util.concurrent.ThreadPoolExecutor#execute;java.util.concurrent.ThreadPoolExecutor#getTask;java.util.concurrent.*BlockingQueue#offer;java.util.concurrent.*BlockingQueue#take;java.util.concurrent.*BlockingQueue#poll";

/// Records `PoolApp ARGS` with `--trace PATTERNS`; returns the file and the
/// fixture's stdout.
fn record(dir: &Path, trace: &str, args: &[&str]) -> (PathBuf, String) {
    agent_path();
    let java = &javas()[0];
    let file = dir.join("pool.jsc");
    let out = Command::new(jscope_bin())
        .args([
            "record", "--mode", "none", "--quiet", "--trace", trace, "-o",
        ])
        .arg(&file)
        .args(["--", java.bin.to_str().unwrap(), "-cp"])
        .arg(classes())
        .arg("PoolApp")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (file, stdout(&out))
}

/// Erlang C mean wait for c servers, rates in 1/s.
fn erlang_c_wait_ns(c: u32, lambda: f64, mu: f64) -> f64 {
    let a = lambda / mu;
    let rho = a / c as f64;
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 0..c {
        sum += term;
        term *= a / (k + 1) as f64;
    }
    let last = term / (1.0 - rho);
    last / (sum + last) / (c as f64 * mu - lambda) * 1e9
}

#[test]
fn queue_replay_matches_the_pools_own_measurement_and_erlang_c() {
    let dir = temp_dir("queue-jvm");
    // c = 4 workers, lambda = 130/s, mu = 50/s (20 ms mean service): rho = 0.65,
    // 1000 tasks in about 7.5 s. Seed 27's draws simulate to 5% under Erlang C's
    // mean; wake-up delays add to the waits (an idle worker takes a task only
    // when the scheduler runs it), a few percent at this time scale on a 2-core
    // machine at load average 6 (-4% to +2% in three runs); at 10 ms services
    // they added up to 25%. The fixture keeps the ideal schedule, so late
    // workers do not pile up.
    let (c, lambda, mu, tasks) = (4, 130.0, 50.0, 1000);
    let trace = format!("{POOL_TRACE};PoolApp$Task#run");
    let csv = dir.join("requests.csv");
    let length_csv = dir.join("length.csv");
    // The M/M/c comparison needs Poisson arrivals. On a busy machine the
    // submitting thread can wake so late that tasks go in bursts (an inter-arrival
    // coefficient of variation of 1.4 was seen at load average 8, against 1.0 for
    // the fixture's draws); such a run still checks the replay against the
    // fixture, but is repeated, up to three times, for the model.
    let mut runs = vec![];
    let (file, json, fixture_service_ns) = loop {
        let (file, out) = record(&dir, &trace, &["4", "130", "50", "1000", "27"]);
        // `mean_queue_ns Q mean_service_ns S tasks N seconds T`
        let field = |i: usize| -> f64 {
            out.split_whitespace()
                .nth(i)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("fixture output: {out}"))
        };
        let (fixture_ns, fixture_service_ns) = (field(1), field(3));
        let json = jscope_json(&[
            "queue",
            file.to_str().unwrap(),
            "--format",
            "json",
            "--csv",
            csv.to_str().unwrap(),
            "--length-csv",
            length_csv.to_str().unwrap(),
        ]);
        let s = json["summary"].clone();
        assert_eq!(s["queue"], "threadpool", "{s}");
        assert_eq!(s["enqueued"], tasks, "{s}");
        assert_eq!(s["served"], tasks, "{s}");
        assert_eq!(s["workers"], c, "{s}");
        let mean = s["mean_queue_ns"].as_f64().unwrap();
        assert!(
            (mean / fixture_ns - 1.0).abs() < 0.05,
            "jscope {mean} ns vs the fixture's {fixture_ns} ns: {s}"
        );
        let cv = s["interarrival_cv"].as_f64().unwrap();
        runs.push(format!("inter-arrival cv {cv:.2}, mean wait {mean:.0} ns"));
        if (0.85..1.15).contains(&cv) {
            break (file, json, fixture_service_ns);
        }
        assert!(
            runs.len() < 3,
            "the arrivals were never Poisson-like (the machine delayed the submitting thread): {runs:?}"
        );
        eprintln!(
            "queue test: bursty arrivals ({}), running again",
            runs.last().unwrap()
        );
    };
    let s = &json["summary"];
    let mean = s["mean_queue_ns"].as_f64().unwrap();
    let model = erlang_c_wait_ns(c, lambda, mu);
    assert!(
        (mean / model - 1.0).abs() < 0.15,
        "jscope {mean} ns vs Erlang C {model} ns: {s}"
    );
    // Little's law holds for the replay (every request left within the window).
    let (l, lw) = (
        s["mean_length"].as_f64().unwrap(),
        s["little_lambda_w"].as_f64().unwrap(),
    );
    assert!((l - lw).abs() < 0.01 * l, "{s}");
    let rate = s["arrival_rate"].as_f64().unwrap();
    assert!((rate / lambda - 1.0).abs() < 0.1, "{s}");
    let util = s["utilisation"].as_f64().unwrap();
    assert!((0.55..0.8).contains(&util), "{s}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), tasks as usize + 1);
    assert!(rows.starts_with("request,enqueue_ns,dequeue_ns,queue_ns,service_ns,"));
    assert!(
        rows.lines()
            .nth(1)
            .unwrap()
            .contains(",main,pool-1-thread-"),
        "{rows:.300}"
    );
    let lengths = std::fs::read_to_string(&length_csv).unwrap();
    assert_eq!(lengths.lines().count(), 2 * tasks as usize + 1);

    // Service from the dequeue to the worker's next dequeue holds the task's run
    // and the pool's bookkeeping around it.
    let service = s["mean_service_ns"].as_f64().unwrap();
    assert!(
        (service / fixture_service_ns - 1.0).abs() < 0.05,
        "jscope {service} ns vs the tasks' own {fixture_service_ns} ns: {s}"
    );
    // With the task's run method, the service is its run (every request has one;
    // the last request of each worker has no next dequeue, so the two means are
    // over slightly different sets).
    let by_task = jscope_json(&[
        "queue",
        file.to_str().unwrap(),
        "--task",
        "PoolApp$Task#run",
        "--format",
        "json",
    ]);
    let t = &by_task["summary"];
    let run = t["mean_service_ns"].as_f64().unwrap();
    assert!(
        (run / fixture_service_ns - 1.0).abs() < 0.05,
        "jscope {run} ns vs the tasks' own {fixture_service_ns} ns: {t}"
    );
    assert_eq!(t["mean_queue_ns"], s["mean_queue_ns"]);
    // Request by request, the run ends before the worker asks for more.
    let requests = |j: &Value| -> Vec<Option<u64>> {
        j["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["service_ns"].as_u64())
            .collect()
    };
    let (runs_ns, asks_ns) = (requests(&by_task), requests(&json));
    assert!(runs_ns.iter().all(Option::is_some), "every task ran");
    for (run, ask) in runs_ns.iter().zip(&asks_ns) {
        if let (Some(run), Some(ask)) = (run, ask) {
            assert!(run <= ask, "run {run} ns, next dequeue after {ask} ns");
        }
    }

    let text = stdout(&jscope(&["queue", file.to_str().unwrap()]));
    assert!(text.contains("Little's law: L = "), "{text}");
    assert!(text.contains("M/M/4 (Erlang C)"), "{text}");
}

#[test]
fn a_recording_without_the_queue_methods_says_what_to_trace() {
    let dir = temp_dir("queue-hint");
    let (file, _) = record(&dir, "PoolApp", &["2", "200", "400", "40", "1"]);
    let out = jscope(&["queue", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("jscope: ")
            && err.contains(&format!("jscope record --trace '{POOL_TRACE}'")),
        "{err}"
    );
}
