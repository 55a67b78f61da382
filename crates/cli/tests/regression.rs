//! Regression tests named after what a new user saw (issue 15, "a newcomer's first
//! hour"): each asserts the message or behaviour that replaced a puzzling one.

mod serving;
mod support;

use std::path::PathBuf;

use jscope_testkit::temp_dir;
use support::*;

fn synthetic_file(name: &str) -> PathBuf {
    let file = temp_dir(name).join("synthetic.jsc");
    std::fs::write(&file, synthetic_recording().bytes).unwrap();
    file
}

/// One line of stderr, starting `jscope: `.
fn one_error_line(out: &std::process::Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("jscope: ")).collect();
    assert_eq!(lines.len(), 1, "one jscope line expected: {err}");
    lines[0].to_string()
}

#[test]
fn record_java_without_double_dash_said_unexpected_argument_java() {
    let out = jscope(&["record", "-o", "x.jsc", "java", "-cp", "classes", "Main"]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(line.contains("'java'"), "{line}");
    assert!(line.contains("put `--` before the java command"), "{line}");
}

#[test]
fn record_ls_said_see_the_agents_message_above_with_no_message_above() {
    let dir = temp_dir("record-ls");
    let file = dir.join("ls.jsc");
    let out = jscope(&["record", "-o", file.to_str().unwrap(), "--", "true"]);
    // `true` succeeded, but nothing was recorded: that is a failure.
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(!line.contains("above"), "{line}");
    assert!(line.contains("`true` exited with code 0"), "{line}");
    assert!(line.contains("is not a JVM"), "{line}");
    assert!(line.contains("no recording was written"), "{line}");
}

#[test]
fn port_in_use_said_address_already_in_use_twice() {
    let file = synthetic_file("port-in-use");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = jscope(&["view", file.to_str().unwrap(), "--http", &addr]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert_eq!(line.matches("in use").count(), 1, "{line}");
    assert!(line.contains(&addr), "{line}");
    assert!(line.contains("choose another port with --http"), "{line}");
    let data = temp_dir("port-in-use-serve");
    let out = jscope(&[
        "serve",
        "--data",
        data.to_str().unwrap(),
        "--agents",
        &addr,
        "--http",
        "127.0.0.1:0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert_eq!(line.matches("in use").count(), 1, "{line}");
    assert!(line.contains("choose another port with --agents"), "{line}");
}

#[test]
fn recording_cut_inside_its_header_was_called_not_a_jscope_recording() {
    let synthetic = synthetic_recording();
    let dir = temp_dir("cut-header");
    let cut = dir.join("cut.jsc");
    // Inside the header chunk: after the magic, before the first data chunk.
    std::fs::write(&cut, &synthetic.bytes[..synthetic.chunk_offsets[0] - 5]).unwrap();
    let out = jscope(&["info", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(!line.contains("not a jscope recording"), "{line}");
    assert!(line.contains("damaged recording"), "{line}");
    assert!(line.contains("at byte 8"), "{line}");
    assert!(line.contains("truncated"), "{line}");
    // Only the magic: also a cut recording, not a foreign file.
    std::fs::write(&cut, &synthetic.bytes[..8]).unwrap();
    let line = one_error_line(&jscope(&["info", cut.to_str().unwrap()]));
    assert!(
        line.contains("damaged recording") && line.contains("byte 8"),
        "{line}"
    );
    // A file that is not a recording at all still says so.
    std::fs::write(&cut, b"hello world").unwrap();
    let line = one_error_line(&jscope(&["info", cut.to_str().unwrap()]));
    assert!(line.contains("not a jscope recording"), "{line}");
}

// ---- Recordings of a real JVM ------------------------------------------------

fn events_classes() -> PathBuf {
    jscope_testkit::agent_path();
    jscope_testkit::compile_fixtures(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/events_fixtures"),
    )
}

/// `jscope record FLAGS -o DIR/NAME.jsc -- java -cp EVENTS EventsApp APP_ARGS` on
/// the first JDK found.
fn record_events_app(name: &str, flags: &[&str], app_args: &[&str]) -> PathBuf {
    let java = jscope_testkit::javas().remove(0);
    let file = temp_dir(name).join(format!("{name}.jsc"));
    let cp = events_classes();
    let mut args = vec!["record"];
    args.extend_from_slice(flags);
    args.extend(["-o", file.to_str().unwrap(), "--"]);
    args.extend([
        java.bin.to_str().unwrap(),
        "-cp",
        cp.to_str().unwrap(),
        "EventsApp",
    ]);
    args.extend_from_slice(app_args);
    let out = jscope(&args);
    assert!(out.status.success(), "jscope {args:?}: {}", stderr(&out));
    file
}

fn f(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// `--mode none` left `mode=` out and the agent sampled cpu, its default; the
/// agent's own `mode=none` was refused.
#[test]
fn record_mode_none_with_events_only_still_sampled_cpu() {
    let file = record_events_app(
        "mode-none",
        &["--mode", "none", "--events", "gc"],
        &["gc", "1"],
    );
    let rec = jscope_format::Recording::read_file(&file).unwrap();
    assert_eq!(rec.header.modes, "");
    assert!(rec.samples.is_empty(), "{} samples", rec.samples.len());
    assert!(!rec.events.is_empty(), "the gc events are recorded");
}

#[test]
fn trace_only_recording_gave_a_flame_graph_saying_0_no_samples_and_info_saying_modes_comma() {
    let file = record_events_app(
        "trace-only",
        &["--mode", "none", "--trace", "EventsApp", "--events", "gc"],
        &["gc", "2"],
    );
    let out = jscope(&["flame", f(&file), "-o", f(&file.with_extension("html"))]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(line.contains("holds no samples"), "{line}");
    assert!(line.contains("recorded without sampling"), "{line}");
    assert!(line.contains("jscope tree"), "{line}");
    assert!(line.contains("--mode cpu"), "{line}");
    assert!(!file.with_extension("html").exists());
    let out = jscope(&["report", f(&file), "--mode", "wall"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(one_error_line(&out).contains("no wall samples"));

    let out = jscope(&["info", f(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("modes ,"), "{text}");
    assert!(!text.contains("interval 100ms"), "{text}");
    assert!(!text.contains(", interval"), "{text}");
    assert!(
        text.contains("no sampling (tracing or events only)"),
        "{text}"
    );
    assert!(text.contains("samples:    none"), "{text}");
    assert!(!text.contains("0 wall"), "{text}");

    // No lock or allocation events were asked for: the empty reports say so.
    let out = jscope(&["locks", f(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("record with --events monitors"),
        "{}",
        stderr(&out)
    );
    let out = jscope(&["alloc", f(&file)]);
    assert!(
        stderr(&out).contains("record with --events alloc"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn report_mode_wall_on_a_cpu_recording_printed_0_samples_wall_and_alloc_ages_an_empty_table() {
    let file = record_events_app(
        "cpu-alloc",
        &[
            "--mode",
            "cpu+snapshot",
            "--interval",
            "5ms",
            "--events",
            "alloc",
            "--alloc-rate",
            "64k",
        ],
        &["alloc", "300"],
    );
    let out = jscope(&["report", f(&file), "--mode", "wall"]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(line.contains("has no wall samples"), "{line}");
    assert!(line.contains("cpu"), "{line}");
    assert!(
        line.contains("record with --mode cpu+snapshot+wall"),
        "{line}"
    );

    let out = jscope(&["info", f(&file)]);
    let text = stdout(&out);
    assert!(text.contains("modes cpu+snapshot"), "{text}");
    assert!(!text.contains(" wall\n"), "no wall line expected: {text}");

    // `threads --at 99` on a recording of a fraction of a second.
    let out = jscope(&["threads", f(&file), "--at", "99"]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(line.contains("past the end"), "{line}");
    assert!(jscope(&["threads", f(&file), "--at", "0"]).status.success());

    // Allocations without object ids: --ages says how to get them.
    let out = jscope(&["alloc", f(&file), "--ages"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("object ages: none"), "{text}");
    assert!(text.contains("--object-ages"), "{text}");
}

#[test]
fn alloc_ages_had_no_way_to_switch_object_ages_on_from_record() {
    let file = record_events_app(
        "object-ages",
        &[
            "--mode",
            "none",
            "--object-ages",
            "--alloc-rate",
            "64k",
            "--quiet",
        ],
        &["alloc", "300"],
    );
    let out = jscope(&["alloc", f(&file), "--ages", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["ages"]["rows"].as_array().expect("age rows");
    assert!(!rows.is_empty(), "{json}");
    assert!(!stderr(&out).contains("no object ages"), "{}", stderr(&out));
}

#[test]
fn agent_options_needed_a_raw_agentpath() {
    // An unknown key reaches the agent, which refuses it: proof that --agent-opt
    // passes options through (the JVM then runs unprofiled and jscope says so).
    let java = jscope_testkit::javas().remove(0);
    let file = temp_dir("agent-opt").join("a.jsc");
    let out = jscope(&[
        "record",
        "--agent-opt",
        "nosuchoption=1",
        "-o",
        f(&file),
        "--",
        java.bin.to_str().unwrap(),
        "-version",
    ]);
    assert!(stderr(&out).contains("nosuchoption"), "{}", stderr(&out));
    let out = jscope(&["record", "--agent-opt", "a,b", "-o", f(&file), "--", "java"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn ui_locks_and_allocations_tabs_were_empty_tables_without_a_hint() {
    let file = record_events_app(
        "ui-hints",
        &[
            "--mode",
            "cpu+snapshot",
            "--snap-interval",
            "5ms",
            "--events",
            "gc",
        ],
        &["gc", "20"],
    );
    let served = serving::start(&jscope_bin(), &["view", f(&file), "--http", "127.0.0.1:0"]);
    let id = served.json("/api/jvms")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let locks = served.json(&format!("/api/jvms/{id}/locks"));
    assert_eq!(locks["recorded_events"], "gc", "{locks}");
    let Some(mut b) = serving::cdp::Browser::launch("ui-hints") else {
        return;
    };
    let wait = std::time::Duration::from_secs(30);
    b.goto(&format!("{}/#tab=jvms&jvm={id}", served.url()));
    // The JVM list cut the command at `java -agentpath:/long/path/libjsc…`: it now
    // shows what the JVM runs, the full command in the cell's title.
    b.wait_for(
        "document.querySelectorAll('#jvms tbody td.cmd').length > 0",
        wait,
    );
    let cmd = b.text("#jvms tbody td.cmd");
    assert!(cmd.starts_with("EventsApp gc 20"), "{cmd}");
    let picker = b.eval("document.querySelector('#locks-jvm option').textContent");
    assert!(picker.as_str().unwrap().contains("EventsApp"), "{picker}");
    assert!(!picker.as_str().unwrap().contains("agentpath"), "{picker}");
    b.click("button[data-tab=locks]");
    b.wait_for(
        "document.querySelector('#locks-hint').textContent.length > 0",
        wait,
    );
    let hint = b.text("#locks-hint");
    assert!(
        hint.contains("recorded no monitor, wait or park events"),
        "{hint}"
    );
    assert!(hint.contains("--events monitors,waits,park"), "{hint}");
    b.click("button[data-tab=alloc]");
    b.wait_for(
        "document.querySelector('#alloc-hint').textContent.length > 0",
        wait,
    );
    let hint = b.text("#alloc-hint");
    assert!(hint.contains("recorded no allocations"), "{hint}");
    assert!(hint.contains("--events alloc"), "{hint}");
    b.screenshot("ui-hints-alloc.png");

    // The Threads tab: the CLI's thread ids and the UI's agree, and the stack panel's
    // rows keep their height next to a longer thread table.
    let cli = jscope_json(&["threads", f(&file), "--format", "json"]);
    let mut cli_ids: Vec<u64> = cli["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    cli_ids.sort();
    b.click("button[data-tab=threads]");
    b.wait_for(
        "document.querySelectorAll('#threads tbody tr').length > 0",
        wait,
    );
    let ui_ids: Vec<u64> = serde_json::from_value(b.eval(
        "[...document.querySelectorAll('#threads tbody tr')].map(tr => Number(tr.children[1].textContent)).sort((a, b) => a - b)",
    ))
    .unwrap();
    assert_eq!(ui_ids, cli_ids);
    // The thread with the shortest non-empty stack, so the thread table is the taller.
    b.eval(
        "[...document.querySelectorAll('#threads tbody tr')].filter(tr => Number(tr.children[5].textContent) > 0)\
         .sort((a, b) => Number(a.children[5].textContent) - Number(b.children[5].textContent))[0].click()",
    );
    let heights: Vec<f64> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('#stack tbody tr')].map(tr => tr.getBoundingClientRect().height)"),
    )
    .unwrap();
    assert!(!heights.is_empty());
    assert!(
        heights.iter().all(|&h| h < 40.0),
        "stretched stack rows: {heights:?}"
    );
    b.screenshot("ui-threads-stack.png");
}

#[test]
fn a_second_serve_on_the_same_data_started_without_complaint() {
    let data = temp_dir("two-collectors");
    let first = serving::serve(&jscope_bin(), &data, &[]);
    let pid = first.child.id();
    let out = jscope(&[
        "serve",
        "--agents",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--data",
        f(&data),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(line.contains("is in use by another collector"), "{line}");
    assert!(line.contains(&format!("pid {pid}: ")), "{line}");
    assert!(line.contains("serve"), "{line}");
    assert!(line.contains("another --data"), "{line}");
    // Readers need no lock.
    let out = jscope(&["info", "--data", f(&data)]);
    assert!(!stderr(&out).contains("in use"), "{}", stderr(&out));
    // Once the first has stopped, the directory is free again.
    assert!(first.interrupt());
    let second = serving::serve(&jscope_bin(), &data, &[]);
    assert!(second.interrupt());
}

fn fixture_classes() -> PathBuf {
    jscope_testkit::agent_path();
    jscope_testkit::compile_fixtures(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
    )
}

#[test]
fn there_was_no_way_to_list_jvms() {
    let java = jscope_testkit::javas().remove(0);
    let dir = temp_dir("jvms");
    let cp = fixture_classes();
    // One JVM with jscope's agent, one without.
    let with = start_logged(
        &java,
        &dir,
        "with",
        "mode=cpu,quiet,file=/dev/null",
        &cp,
        &["Idle", "60"],
    );
    let log = std::fs::File::create(dir.join("without.log")).unwrap();
    let without = jscope_testkit::Child::spawn(
        std::process::Command::new(&java.bin)
            .arg("-cp")
            .arg(&cp)
            .args(["Idle", "60"])
            .stdout(log),
    );
    wait_ready(&dir, "with");
    wait_ready(&dir, "without");
    let out = jscope(&["jvms", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |pid: u32| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["pid"] == pid)
            .unwrap_or_else(|| panic!("pid {pid} in {rows}"))
            .clone()
    };
    let w = row(with.id());
    assert_eq!(w["main_class"], "Idle", "{w}");
    assert_eq!(w["jscope_loaded"], true, "{w}");
    let wo = row(without.id());
    assert_eq!(wo["main_class"], "Idle", "{wo}");
    assert_eq!(wo["jscope_loaded"], false, "{wo}");
    let text = stdout(&jscope(&["jvms"]));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{} ", with.id())))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("loaded") && line.ends_with("Idle"), "{line}");
}

#[test]
fn a_collectors_jvms_were_not_listed_by_the_cli() {
    let java = jscope_testkit::javas().remove(0);
    let data = temp_dir("jvms-collector");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let agents = served.agents.unwrap().to_string();
    let file = data.join("hot.jsc");
    let cp = fixture_classes();
    let out = jscope(&[
        "record",
        "--stream-to",
        &agents,
        "--labels",
        "app:demo",
        "-o",
        f(&file),
        "--",
        java.bin.to_str().unwrap(),
        "-cp",
        cp.to_str().unwrap(),
        "Hot",
        "alpha",
        "300",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let url = served.url();
    let mut text = String::new();
    assert!(
        jscope_testkit::wait_until(std::time::Duration::from_secs(20), || {
            text = stdout(&jscope(&["jvms", "--collector", &url]));
            text.contains(" Hot")
        }),
        "{text}"
    );
    let line = text.lines().find(|l| l.ends_with(" Hot")).unwrap();
    assert!(
        line.contains("gone") || line.contains("connected"),
        "{line}"
    );
    let rows = jscope_json(&["jvms", "--collector", &url, "--format", "json"]);
    assert_eq!(rows[0]["main_class"], "Hot", "{rows}");
    assert_eq!(rows[0]["labels"]["app"], "demo", "{rows}");
}

fn readme() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap()
}

#[test]
fn readme_never_said_where_jscope_is_and_used_another_classpath_than_run_sh() {
    let text = readme();
    assert!(
        text.contains("target/release/"),
        "where the build puts jscope"
    );
    assert!(
        text.contains("cargo install --path crates/cli"),
        "how to install it"
    );
    assert!(
        text.contains("Graphviz") && text.contains("browser"),
        "dot and a browser"
    );
    // Exactly the two set-up commands.
    let setup = &text[text.find("## Set up").unwrap()..text.find("## A tour").unwrap()];
    let commands: Vec<&str> = setup
        .lines()
        .filter(|l| l.starts_with("    "))
        .map(str::trim)
        .collect();
    assert_eq!(commands, ["bash examples/run.sh", "./scripts/test.sh"]);
    // CI runs the same test command, which sets up what the tests need first.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci.lines().any(|l| l.trim() == "./scripts/test.sh"), "{ci}");
    let test_sh = std::fs::read_to_string(root.join("scripts/test.sh")).unwrap();
    assert!(test_sh.contains("scripts/setup.sh") && test_sh.contains("cargo test --workspace"));
    // The tour's class path is where examples/run.sh compiles the classes.
    let run_sh = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/run.sh"),
    )
    .unwrap();
    assert!(run_sh.contains("out=target/example") && run_sh.contains("-d \"$out/classes\""));
    let mut cps = 0;
    for l in text.lines().filter(|l| l.contains(" -cp ")) {
        let cp = l
            .split(" -cp ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        assert_eq!(cp, "target/example/classes", "{l}");
        cps += 1;
    }
    assert!(cps >= 3);
}

#[test]
fn readme_tour_commands_name_real_subcommands_and_flags() {
    let text = readme();
    let mut checked = 0;
    for line in text.lines().filter(|l| l.starts_with("    jscope ")) {
        // `jscope locks a; jscope gc b` is two commands; comments and pipes end one.
        for cmd in line.split(';') {
            let cmd = cmd.split(" #").next().unwrap();
            let cmd = cmd
                .split(" | ")
                .next()
                .unwrap()
                .split(" > ")
                .next()
                .unwrap();
            let cmd = cmd.split(" -- ").next().unwrap();
            let words: Vec<&str> = cmd.split_whitespace().collect();
            assert_eq!(words[0], "jscope", "{line}");
            let mut help_args: Vec<&str> = vec![words[1]];
            if words[1] == "trace" {
                help_args.push(words[2]);
            }
            help_args.push("--help");
            let help = jscope(&help_args);
            assert!(
                help.status.success(),
                "jscope {help_args:?}: {}",
                stderr(&help)
            );
            let help = stdout(&help);
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                assert!(
                    help.contains(&format!("{flag} "))
                        || help.contains(&format!("{flag}\n"))
                        || help.contains(&format!("{flag} <")),
                    "{flag} of `{cmd}` is not in jscope {help_args:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked} commands");
}

/// The tour's commands that need nothing but the example (no running JVM's pid, no
/// collector, no app.jar or what it recorded), run as written, in order, in a directory where
/// `target/example/classes` holds the example as `examples/run.sh` compiles it.
#[test]
fn readme_tour_runs_as_written() {
    let text = readme();
    let tour = &text[text.find("## A tour").unwrap()..text.find("## Documentation").unwrap()];
    let dir = temp_dir("readme-tour");
    let classes = dir.join("target/example/classes");
    std::fs::create_dir_all(&classes).unwrap();
    let java = jscope_testkit::javas().remove(0);
    let javac = java.bin.with_file_name("javac");
    let javac = if javac.is_file() {
        javac
    } else {
        "javac".into()
    };
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/src/demo/Shop.java");
    let st = std::process::Command::new(javac)
        .args(["--release", "17", "-g", "-d"])
        .arg(&classes)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    jscope_testkit::agent_path();
    let bin_dir = jscope_bin().parent().unwrap().to_path_buf();
    let java_dir = java.bin.parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}:{}",
        bin_dir.display(),
        java_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let has_dot = std::process::Command::new("sh")
        .args(["-c", "command -v dot"])
        .output()
        .is_ok_and(|o| o.status.success());
    // Placeholders a reader replaces: a pid, a collector, an app of their own.
    let needs_more = [
        "12345",
        "127.0.0.1",
        "/var/lib",
        "app.jar",
        "app.jsc",
        // Recorded from app.jar (the example allocates no native memory of its own).
        "native.jsc",
        "/path/to",
        ".session",
        "client.jsc",
        "beacon",
        "jscope view",
    ];
    let mut ran = 0;
    for line in tour.lines().filter(|l| l.starts_with("    ")) {
        let line = line.trim();
        if needs_more.iter().any(|p| line.contains(p)) || (line.contains("| dot ") && !has_dot) {
            continue;
        }
        // A trailing `# comment` is for the reader.
        let cmd = line.split("  #").next().unwrap().trim();
        let out = std::process::Command::new("sh")
            .args(["-ec", cmd])
            .current_dir(&dir)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(out.status.success(), "`{cmd}` failed: {}", stderr(&out));
        ran += 1;
    }
    assert!(ran >= 14, "{ran} tour commands ran");
    for made in [
        "shop.jsc",
        "shop.html",
        "shop.folded",
        "trace.jsc",
        "trace.json",
        "events.jsc",
    ] {
        assert!(dir.join(made).is_file(), "{made}");
    }
}

// Papercuts found by attaching as a user would (issue 27).

#[test]
fn collapsed_mode_lock_advised_events_monitor_park_which_is_no_option() {
    let file = synthetic_file("lock-advice");
    let out = jscope(&["collapsed", file.to_str().unwrap(), "--mode", "lock"]);
    let line = one_error_line(&out);
    assert!(
        line.contains("--events monitors,park") && line.contains("events=monitors+park"),
        "{line}"
    );
}

/// `Idle 60` with its stdout (`ready`, then nothing) read and its stderr kept.
fn idle_jvm(dir: &std::path::Path) -> (jscope_testkit::Child, PathBuf) {
    use std::io::BufRead;
    let java = jscope_testkit::javas().remove(0);
    let err = dir.join("stderr.log");
    let mut idle = jscope_testkit::Child::spawn(
        std::process::Command::new(&java.bin)
            .arg("-cp")
            .arg(fixture_classes())
            .args(["Idle", "60"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap()),
    );
    let mut line = String::new();
    std::io::BufReader::new(idle.0.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    (idle, err)
}

#[test]
fn attach_events_monitors_park_exited_0_and_recorded_no_parks() {
    let dir = temp_dir("attach-park");
    let (idle, _) = idle_jvm(&dir);
    let pid = idle.id().to_string();
    let file = dir.join("park.jsc");
    let f = file.to_str().unwrap();
    // Said in the user's terminal, before anything is loaded into the JVM.
    for extra in [
        &["--events", "monitors,park"][..],
        &["--park-threshold", "0"],
        &["--agent-opt", "events=monitors+park"],
    ] {
        let out = jscope(&[&["attach", &pid, "-o", f, "--mode", "none"], extra].concat());
        assert_eq!(out.status.code(), Some(1));
        let line = one_error_line(&out);
        assert!(
            line.contains("park events need the agent loaded at JVM start"),
            "{line}"
        );
    }
    // Nothing was loaded: an attach without park records.
    let out = jscope(&[
        "attach",
        &pid,
        "-o",
        f,
        "--events",
        "monitors",
        "--duration",
        "1s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn attach_quiet_still_printed_into_the_applications_stderr() {
    let dir = temp_dir("attach-quiet");
    let (mut idle, err) = idle_jvm(&dir);
    let pid = idle.id().to_string();
    let file = dir.join("quiet.jsc");
    let out = jscope(&[
        "attach",
        &pid,
        "-o",
        file.to_str().unwrap(),
        "--quiet",
        "--duration",
        "1s",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let _ = idle.0.kill();
    let _ = idle.0.wait();
    let printed = std::fs::read_to_string(&err).unwrap();
    assert!(
        !printed.contains("jscope"),
        "the application's stderr: {printed}"
    );
}
