//! Issue 16 on real JVMs (each JDK testkit finds) running `tests/alloc_fixtures/AllocGc.java`:
//! estimated allocation totals against a known allocation, object ages in bytes
//! allocated against a known lifetime and `--live` naming the kept objects' site,
//! `jscope gc` causes and heap sizes against the JVM's own `-Xlog:gc` of the same
//! run, and `flame`/`collapsed --mode alloc|lock` with the right top frames.

mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child, Java};
use serving::cdp::Browser;
use support::{jscope, jscope_bin, jscope_json, stdout};

/// `byte[1024]` and `long[126]`: 16 bytes of header plus 1024 of data.
const OBJECT: f64 = 1040.0;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alloc_fixtures"))
}

/// Runs `AllocGc ARGS` with the agent's `options` and the JVM flags `jvm`;
/// returns the recording.
fn record(java: &Java, name: &str, options: &str, jvm: &[&str], args: &[&str]) -> PathBuf {
    let dir = temp_dir(&format!("alloc-gc-{name}-{}", java.major));
    let file = dir.join("app.jsc");
    let agent = format!(
        "-agentpath:{}={options},quiet,file={}",
        agent_path().display(),
        file.display()
    );
    let mut cmd = Command::new(&java.bin);
    cmd.args(["-Xcheck:jni", &agent])
        .args(jvm)
        .arg("-cp")
        .arg(classes())
        .arg("AllocGc")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(180));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("Exception") && !err.contains("jscope:"),
        "JDK {}: AllocGc {args:?}: {err}",
        java.major
    );
    assert!(String::from_utf8_lossy(&out.stdout).ends_with(&format!("done {}\n", args[0])));
    file
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn within(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= tolerance * want
}

#[test]
fn estimated_totals_match_a_known_allocation() {
    const N: u64 = 64 * 1024;
    for java in javas() {
        let f = record(
            &java,
            "alloc",
            "events=alloc,allocrate=64k",
            &[],
            &["alloc", &N.to_string()],
        );
        let j = jscope_json(&["alloc", s(&f), "--format", "json"]);
        let row = j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"].as_str().unwrap().starts_with("AllocGc.makeBlock:"))
            .unwrap_or_else(|| panic!("JDK {}: no makeBlock row: {j}", java.major));
        assert_eq!(row["top_class"], "byte[]", "JDK {}: {row}", java.major);
        let want = N as f64 * OBJECT;
        let est = row["est_bytes"].as_f64().unwrap();
        assert!(
            within(est, want, 0.15),
            "JDK {}: estimated {est} bytes of {want}: {row}",
            java.major
        );
        let objects = row["est_objects"].as_f64().unwrap();
        assert!(
            within(objects, N as f64, 0.15),
            "JDK {}: estimated {objects} objects of {N}",
            java.major
        );
        assert!(j["weights_recorded"].as_bool().unwrap());
        // The sampled sizes alone are a small fraction of it (the bug of issue 16).
        assert!(row["bytes"].as_f64().unwrap() < want / 10.0, "{row}");
        let text = stdout(&jscope(&["alloc", s(&f)]));
        assert!(text.contains("Estimated allocated: "), "{text}");

        // The allocation flame graph: the heaviest stack ends in the class
        // makeBlock allocates, and every stack in a class allocated.
        let collapsed = stdout(&jscope(&["collapsed", s(&f), "--mode", "alloc"]));
        let (top, weight) = heaviest(&collapsed);
        assert!(
            top.ends_with("AllocGc.makeBlock;byte[]"),
            "JDK {}: {top}\n{collapsed}",
            java.major
        );
        let by_class = jscope_json(&["alloc", s(&f), "--by", "class", "--format", "json"]);
        let classes: Vec<&str> = by_class["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap())
            .collect();
        for line in collapsed.lines() {
            let (frames, _) = line.rsplit_once(' ').unwrap();
            let leaf = frames.rsplit(';').next().unwrap();
            assert!(
                classes.contains(&leaf),
                "JDK {}: {line} (classes {classes:?})",
                java.major
            );
        }
        assert!(within(weight as f64, want, 0.2), "{weight} of {want}");
        let svg = f.with_extension("svg");
        let out = jscope(&["flame", s(&f), "--mode", "alloc", "-o", s(&svg)]);
        assert!(out.status.success(), "{}", support::stderr(&out));
        let page = std::fs::read_to_string(&svg).unwrap();
        assert!(page.contains("AllocGc.makeBlock") && page.contains("bytes allocated (estimated)"));
    }
}

/// The collapsed line with the largest weight: (frames, weight).
fn heaviest(collapsed: &str) -> (String, u64) {
    collapsed
        .lines()
        .filter_map(|l| {
            let (frames, n) = l.rsplit_once(' ')?;
            Some((frames.to_string(), n.parse().ok()?))
        })
        .max_by_key(|(_, n)| *n)
        .expect("no stacks")
}

#[test]
fn object_ages_in_bytes_match_a_known_lifetime_and_live_names_the_kept_site() {
    // Every 64th object is kept for 512 * 64 objects of 1040 bytes: 34 MB. A young
    // generation of 8 MB (eden 2.7 MB) frees the rest quickly and the kept ones at
    // the first young GC after their lifetime (at most 2.7 MB later).
    let (n, k, r) = (400_000u64, 64u64, 512u64);
    let lifetime = (r * k) as f64 * OBJECT;
    let jvm = [
        "-XX:+UseSerialGC",
        "-Xmn8m",
        "-XX:SurvivorRatio=1",
        "-XX:MaxTenuringThreshold=15",
        "-Xmx256m",
    ];
    for java in javas() {
        let args = ["ages", &n.to_string(), &k.to_string(), &r.to_string()];
        let f = record(
            &java,
            "ages",
            "events=alloc,objectages,allocrate=32k",
            &jvm,
            &args.map(|a| a as &str),
        );
        let j = jscope_json(&[
            "alloc",
            s(&f),
            "--ages",
            "--by",
            "class",
            "--format",
            "json",
        ]);
        let ages = &j["ages"]["rows"];
        let kept = ages
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["class"] == "long[]")
            .unwrap_or_else(|| panic!("JDK {}: no long[] ages: {j}", java.major));
        let p50 = kept["p50_bytes"].as_f64().unwrap();
        assert!(
            within(p50, lifetime, 0.2),
            "JDK {}: median age {p50} bytes, kept for {lifetime}: {kept}",
            java.major
        );
        let temp = ages
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["class"] == "byte[]")
            .unwrap();
        assert!(
            temp["p50_bytes"].as_f64().unwrap() < lifetime / 4.0,
            "JDK {}: temporaries live short: {temp}",
            java.major
        );
        // The estimated total of the run too (n objects of 1040 bytes).
        let est = j["alloc"]["est_bytes"].as_f64().unwrap();
        assert!(
            within(est, n as f64 * OBJECT, 0.15),
            "JDK {}: {est}",
            java.major
        );

        let live = jscope_json(&["alloc", s(&f), "--live", "--format", "json"]);
        let top = live["rows"][0]["key"].as_str().unwrap();
        assert!(
            top.starts_with("AllocGc.makeKept:"),
            "JDK {}: live {live}",
            java.major
        );
        let text = stdout(&jscope(&["alloc", s(&f), "--live"]));
        assert!(text.contains("AllocGc.makeKept"), "{text}");
    }
}

/// One collection of `-Xlog:gc`: its cause and heap used before and after in MB.
#[derive(Debug)]
struct Logged {
    cause: String,
    before_mb: u64,
    after_mb: u64,
}

/// `[0.123s][info][gc] GC(3) Pause Young (Normal) (G1 Evacuation Pause) 24M->2M(256M) 3.456ms`
fn parse_xlog(text: &str) -> Vec<Logged> {
    let mb = |v: &str| -> Option<u64> {
        let (n, unit) = v.split_at(v.len() - 1);
        let n: u64 = n.parse().ok()?;
        Some(match unit {
            "K" => n / 1024,
            "M" => n,
            "G" => n * 1024,
            _ => return None,
        })
    };
    text.lines()
        .filter(|l| l.contains("Pause"))
        .filter_map(|l| {
            let sizes = l.split_whitespace().find(|w| w.contains("->"))?;
            let (before, rest) = sizes.split_once("->")?;
            let after = rest.split('(').next()?;
            let head = &l[..l.find(sizes)?];
            let cause = last_parenthesized(head.trim_end())?;
            Some(Logged {
                cause: cause.to_string(),
                before_mb: mb(before)?,
                after_mb: mb(after)?,
            })
        })
        .collect()
}

/// The text of the last balanced `(...)` that `s` ends with: `System.gc()` of
/// `Pause Full (System.gc())`.
fn last_parenthesized(s: &str) -> Option<&str> {
    let inner = s.strip_suffix(')')?;
    let mut depth = 0;
    for (i, c) in inner.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => return Some(&inner[i + 1..]),
            '(' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[test]
fn gc_causes_and_heap_sizes_agree_with_the_jvms_own_log() {
    for java in javas() {
        let log = temp_dir(&format!("alloc-gc-xlog-{}", java.major)).join("gc.log");
        let xlog = format!("-Xlog:gc:file={}", log.display());
        let jvm = ["-XX:+UseG1GC", "-Xmx256m", "-Xms256m", "-Xmn32m", &xlog];
        let f = record(&java, "gc", "events=gc", &jvm, &["gc", "3", "100"]);
        let mut logged = parse_xlog(&std::fs::read_to_string(&log).unwrap());
        let j = jscope_json(&["gc", s(&f), "--pauses", "--format", "json"]);
        let mut ours: Vec<&serde_json::Value> = j["pauses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["cause"].is_string() && p["concurrent"].is_null())
            .collect();
        // Paired by cause and heap size, not by order: a young pause and a full
        // one close together can be listed in either order (their notifications'
        // start times have milliseconds only).
        logged.sort_by(|a, b| (&a.cause, a.before_mb).cmp(&(&b.cause, b.before_mb)));
        ours.sort_by_key(|p| {
            (
                p["cause"].as_str().unwrap_or_default().to_string(),
                p["heap_before"].as_u64().unwrap_or(0),
            )
        });
        assert_eq!(
            ours.len(),
            logged.len(),
            "JDK {}: ours {j}\nlogged {logged:?}",
            java.major
        );
        assert!(
            logged.iter().filter(|l| l.cause == "System.gc()").count() == 3
                && logged.iter().any(|l| l.cause == "G1 Evacuation Pause"),
            "JDK {}: {logged:?}",
            java.major
        );
        for (p, l) in ours.iter().zip(&logged) {
            assert_eq!(
                p["cause"],
                l.cause.as_str(),
                "JDK {}: {p} vs {l:?}",
                java.major
            );
            let before = p["heap_before"].as_u64().unwrap() >> 20;
            let after = p["heap_after"].as_u64().unwrap() >> 20;
            assert!(
                before.abs_diff(l.before_mb) <= 1 && after.abs_diff(l.after_mb) <= 1,
                "JDK {}: {p} vs {l:?}",
                java.major
            );
            let generation = if l.cause == "System.gc()" {
                "full"
            } else {
                "young"
            };
            assert_eq!(p["generation"], generation, "{p}");
            assert!(p["collector"].as_str().unwrap().starts_with("G1 "), "{p}");
        }
        let text = stdout(&jscope(&["gc", s(&f), "--pauses"]));
        assert!(
            text.contains("G1 Old Generation: System.gc()")
                && text.contains("G1 Young Generation: G1 Evacuation Pause"),
            "{text}"
        );
    }
}

#[test]
fn lock_flame_graph_tops_at_the_contended_monitor() {
    for java in javas() {
        let f = record(&java, "lock", "events=monitors", &[], &["lock", "4", "100"]);
        let collapsed = stdout(&jscope(&["collapsed", s(&f), "--mode", "lock"]));
        let (top, ns) = heaviest(&collapsed);
        assert!(
            top.ends_with("AllocGc.hold"),
            "JDK {}: {top}\n{collapsed}",
            java.major
        );
        // 4 threads, 100 entries of 1 ms each: some were blocked for a while.
        assert!(ns > 10_000_000, "JDK {}: {ns} ns", java.major);
        let html = f.with_extension("html");
        let out = jscope(&["flame", s(&f), "--mode", "lock", "-o", s(&html)]);
        assert!(out.status.success(), "{}", support::stderr(&out));
        assert!(std::fs::read_to_string(&html)
            .unwrap()
            .contains("ns of contention"));
        // A recording without allocation samples has no allocation graph.
        let out = jscope(&["flame", s(&f), "--mode", "alloc", "-o", s(&html)]);
        assert!(!out.status.success());
        assert!(
            support::stderr(&out).starts_with("jscope: "),
            "{}",
            support::stderr(&out)
        );
    }
}

#[test]
fn xlog_lines_parse() {
    let l = parse_xlog(
        "[0.1s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->2M(256M) 3.4ms\n\
         [0.2s][info][gc] GC(1) Pause Full (System.gc()) 30M->1M(256M) 9.1ms\n\
         [0.3s][info][gc] GC(2) Concurrent Mark Cycle 1.2ms\n",
    );
    assert_eq!(l.len(), 2);
    assert_eq!(
        (l[0].cause.as_str(), l[0].before_mb, l[0].after_mb),
        ("G1 Evacuation Pause", 24, 2)
    );
    assert_eq!(l[1].cause, "System.gc()");
}

/// The collector's flame API draws `mode=alloc` and `mode=lock`, and the web UI's
/// flame view has them in its mode selector; the timeline's GC bars tell the
/// cause on hover and the allocation view shows estimated bytes.
#[test]
fn flame_modes_in_the_collector_api_and_the_web_ui() {
    let Some(java) = javas().into_iter().next() else {
        return;
    };
    let f = record(
        &java,
        "mix",
        "mode=wall,events=alloc+monitors+gc,allocrate=64k",
        &[],
        &["mix"],
    );
    let served = serving::start(&jscope_bin(), &["view", s(&f), "--http", "127.0.0.1:0"]);
    let id = served.json("/api/jvms")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (mode, top) in [
        ("alloc", "AllocGc.makeBlock;byte[]"),
        ("lock", "AllocGc.hold"),
    ] {
        let (status, body) =
            served.get(&format!("/api/flame?jvm={id}&mode={mode}&format=collapsed"));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let (frames, _) = heaviest(&String::from_utf8_lossy(&body));
        assert!(frames.ends_with(top), "{mode}: {frames}");
        let j = served.json(&format!("/api/flame?jvm={id}&mode={mode}"));
        assert_eq!(j["mode"], mode);
        assert!(j["samples"].as_u64().unwrap() > 0);
    }
    let t = served.json(&format!("/api/jvms/{id}/timeline?last=1h"));
    assert!(
        t["gc"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["cause"] == "System.gc()" && g["heap_before"].as_u64().unwrap() > 0),
        "{}",
        t["gc"]
    );
    let Some(mut b) = Browser::launch("alloc-gc") else {
        return;
    };
    b.goto(&format!("{}/#tab=flame&jvm={id}", served.url()));
    let frame_has = |text: &str| {
        format!(
            "(() => {{ const d = document.querySelector('#flame-frame').contentDocument; \
             return !!d && !!d.body && d.body.innerHTML.includes({}); }})()",
            serde_json::json!(text)
        )
    };
    for (mode, top, unit) in [
        ("alloc", "AllocGc.makeBlock", "bytes allocated (estimated)"),
        ("lock", "AllocGc.hold", "ns of contention"),
    ] {
        b.eval(&format!(
            "document.querySelector('#flame-mode').value = '{mode}'"
        ));
        b.click("#flame-go");
        b.wait_for(&frame_has(unit), Duration::from_secs(30));
        assert!(b
            .wait_for(&frame_has(top), Duration::from_secs(5))
            .as_bool()
            .unwrap());
        b.screenshot(&format!("flame-{mode}.png"));
    }
    // The timeline's GC bars tell the cause on hover.
    // A hash-only navigation does not reload the page: switch tabs by clicking.
    b.click("button[data-tab=timeline]");
    b.wait_for(
        "[...document.querySelectorAll('#tl-svg .tl-gc title')].some(t => t.textContent.includes('System.gc()'))",
        Duration::from_secs(30),
    );
    // The allocation view: estimated bytes by site.
    b.click("button[data-tab=alloc]");
    b.wait_for(
        "document.querySelector('#alloc tbody').textContent.includes('AllocGc.makeBlock') && document.querySelector('#alloc-info').textContent.startsWith('about ')",
        Duration::from_secs(30),
    );
    b.screenshot("alloc-estimates.png");
}
