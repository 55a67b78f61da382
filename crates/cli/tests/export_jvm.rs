//! `jscope export` of a real JVM's recording, read by the real consumers:
//! `go tool pprof -top` agrees with `jscope report`, the OTLP request decodes
//! with the official schema's types, and speedscope (the npm package) in headless
//! Chromium shows the methods, of samples and of exact traces (evented). A consumer
//! that is absent skips its test with a note, or fails it under CI=true
//! (scripts/setup.sh installs them).

mod serving;
mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use serving::cdp::Browser;
use support::*;

/// CpuSplit recorded once (cpu, 5 ms) for every test here, with its report.
struct Recorded {
    file: PathBuf,
    report: Report,
}

fn recorded() -> &'static Recorded {
    static REC: OnceLock<Recorded> = OnceLock::new();
    REC.get_or_init(|| {
        agent_path();
        let classes =
            compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
        let java = &javas()[0];
        let file = temp_dir("export-jvm").join("cpusplit.jsc");
        record(
            &file,
            &["--mode", "cpu", "--interval", "5ms"],
            &java.bin,
            &classes,
            &["CpuSplit", "2"],
        );
        let report = Report::of(&file, &[]);
        assert!(report.samples > 100, "{} samples", report.samples);
        Recorded { file, report }
    })
}

fn export(format: &str, out: &Path) {
    let rec = recorded();
    let o = jscope(&[
        "export",
        rec.file.to_str().unwrap(),
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{format}: {}", stderr(&o));
}

/// (method, self %, total %) of the report's rows, hottest first.
fn report_rows(r: &Report) -> Vec<(String, f64, f64)> {
    r.json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["method"].as_str().unwrap().to_string(),
                m["self_percent"].as_f64().unwrap(),
                m["total_percent"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// method -> (self samples, total samples) of the report's rows.
fn report_counts(r: &Report) -> BTreeMap<String, (u64, u64)> {
    r.json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let n = |k: &str| m[k].as_u64().unwrap();
            let name = m["method"].as_str().unwrap().to_string();
            (name, (n("self_samples"), n("total_samples")))
        })
        .collect()
}

/// function -> (flat, cum) in samples of `go tool pprof -top`'s rows, every row:
/// no node dropped or cut by count, sample counts rather than CPU time, and names
/// as the profile has them (pprof otherwise simplifies C++-looking names such as
/// `BasicHashtable<(MEMFLAGS)1>::free_entry`).
fn pprof_top(go: &Path, file: &Path) -> BTreeMap<String, (u64, u64)> {
    let out = Command::new(go)
        .args([
            "tool",
            "pprof",
            "-top",
            "-sample_index=samples",
            "-nodecount=0",
            "-nodefraction=0",
            "-edgefraction=0",
            "-symbolize=none",
        ])
        .arg(file)
        .env("HOME", temp_dir("export-go-home"))
        .output()
        .expect("run go tool pprof");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let count = |s: &str| {
        s.parse::<u64>()
            .unwrap_or_else(|_| panic!("a sample count, not {s:?}, in:\n{text}"))
    };
    let mut rows = BTreeMap::new();
    let lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"));
    for l in lines.skip(1) {
        let cols: Vec<&str> = l.split_whitespace().collect();
        let Some(name) = cols.get(5..).map(|c| c.join(" ")) else {
            continue;
        };
        // pprof marks a function the JIT inlined into every caller `NAME (inline)`,
        // into some callers but not all `NAME (partial-inline)`.
        let name = name
            .strip_suffix(" (inline)")
            .or_else(|| name.strip_suffix(" (partial-inline)"))
            .unwrap_or(&name)
            .to_string();
        let row = (count(cols[0]), count(cols[3]));
        assert!(rows.insert(name, row).is_none(), "a name twice in:\n{text}");
    }
    rows
}

#[test]
fn go_tool_pprof_top_shows_the_reports_hot_methods() {
    let Some(go) = jscope_testkit::tools::go() else {
        return;
    };
    let rec = recorded();
    let file = temp_dir("export-pprof").join("cpusplit.pb.gz");
    export("pprof", &file);
    let top = pprof_top(&go, &file);
    let report = report_counts(&rec.report);
    // Every method of the report with its self and total samples as pprof's flat
    // and cum, and nothing else: methods sampled both inlined and not (the clock
    // read of CpuSplit.spin before and after the JIT inlines it) included.
    let differ: Vec<_> = report
        .keys()
        .chain(top.keys())
        .filter(|m| report.get(*m) != top.get(*m))
        .map(|m| (m, report.get(m), top.get(m)))
        .collect();
    assert!(
        differ.is_empty(),
        "(method, report, pprof) that differ: {differ:?}"
    );
    let hottest = report
        .iter()
        .max_by_key(|(_, &(self_n, _))| self_n)
        .unwrap();
    assert_eq!(hottest.0, "CpuSplit.spin", "{report:?}");
    assert!(report.len() > 3, "{report:?}");
    assert!(top
        .get("CpuSplit.seventy")
        .is_some_and(|&(flat, cum)| cum > flat));
}

#[test]
fn otlp_export_decodes_with_the_official_schema() {
    let rec = recorded();
    let file = temp_dir("export-otlp").join("cpusplit.otlp");
    export("otlp", &file);
    let req = ExportProfilesServiceRequest::decode(&*std::fs::read(&file).unwrap())
        .expect("an ExportProfilesServiceRequest");
    let dict = req.dictionary.as_ref().expect("a dictionary");
    let s = |i: i32| dict.string_table[i as usize].as_str();
    let rp = &req.resource_profiles[0];
    let service = rp
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .find(|a| a.key == "service.name");
    let service = service
        .and_then(|a| a.value.as_ref())
        .and_then(|v| v.value.clone());
    assert_eq!(service, Some(AnyValue::StringValue("CpuSplit".into())));
    let profiles = &rp.scope_profiles[0].profiles;
    assert_eq!(profiles.len(), 1, "one cpu profile");
    let cpu = &profiles[0];
    let st = cpu.sample_type.unwrap();
    assert_eq!(
        (s(st.type_strindex), s(st.unit_strindex)),
        ("cpu", "nanoseconds")
    );
    let observed: usize = cpu
        .samples
        .iter()
        .map(|x| x.timestamps_unix_nano.len())
        .sum();
    assert_eq!(observed as u64, rec.report.samples);
    for x in &cpu.samples {
        assert_eq!(x.values.len(), x.timestamps_unix_nano.len());
        assert!(x
            .timestamps_unix_nano
            .iter()
            .all(|&t| t >= cpu.time_unix_nano));
    }
    // The leaf of the hottest stack is CpuSplit.spin, with a line number.
    let hottest = cpu.samples.iter().max_by_key(|x| x.values.len()).unwrap();
    let stack = &dict.stack_table[hottest.stack_index as usize];
    let leaf = &dict.location_table[stack.location_indices[0] as usize].lines[0];
    let function = dict.function_table[leaf.function_index as usize];
    assert_eq!(s(function.name_strindex), "CpuSplit.spin");
    assert_eq!(s(function.filename_strindex), "CpuSplit.java");
    assert!(leaf.line > 0);
    let names: Vec<&str> = hottest
        .attribute_indices
        .iter()
        .map(|&a| s(dict.attribute_table[a as usize].key_strindex))
        .collect();
    assert!(names.contains(&"thread.name"), "{names:?}");

    let json_file = file.with_extension("json");
    export("otlp-json", &json_file);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_file).unwrap()).unwrap();
    let samples = json["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]["samples"]
        .as_array()
        .unwrap();
    assert_eq!(samples.len(), cpu.samples.len());
}

/// Serves the files under `root` over HTTP on a local port until the process ends.
fn serve_dir(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            let root = root.clone();
            std::thread::spawn(move || serve_one(&root, conn));
        }
    });
    port
}

fn serve_one(root: &Path, mut conn: TcpStream) {
    let mut line = String::new();
    let mut r = BufReader::new(conn.try_clone().unwrap());
    if r.read_line(&mut line).is_err() {
        return;
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split(['?', '#'])
        .next()
        .unwrap();
    let file = root.join(path.trim_start_matches('/').replace("..", ""));
    let (status, body) = match std::fs::read(&file) {
        Ok(b) => ("200 OK", b),
        Err(_) => ("404 Not Found", Vec::new()),
    };
    let kind = match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("wasm") => "application/wasm",
        _ => "application/octet-stream",
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(&body);
}

/// The speedscope release the Sandwich-view markup below was read from
/// (scripts/setup.sh installs the same).
const SPEEDSCOPE: &str = "1.25.0";

/// The DOM of speedscope's Sandwich view over the profile at `profile`, as headless
/// Chromium renders it; `None` when Chromium or npm is absent (a failure in CI).
fn speedscope_dom(profile: &Path) -> Option<String> {
    let dist = jscope_testkit::tools::speedscope(SPEEDSCOPE)?;
    let root = temp_dir("export-speedscope");
    for entry in std::fs::read_dir(&dist).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), root.join(entry.file_name())).unwrap();
    }
    std::fs::copy(profile, root.join("profile.json")).unwrap();
    let port = serve_dir(root.clone());
    let url = format!(
        "http://127.0.0.1:{port}/index.html#profileURL=http://127.0.0.1:{port}/profile.json&view=sandwich"
    );
    // Speedscope fills the Sandwich table a few frames after the profile
    // loads: the DOM is read once a symbol row is there (a one-shot dump taken
    // at a fixed time missed it on a loaded machine).
    let mut browser = Browser::launch_with("export-speedscope", &["--window-size=1400,2000"])?;
    browser.goto(&url);
    browser.wait_for(
        "document.documentElement.outerHTML.split('<tr').slice(1).some(r => r.includes('%)<div'))",
        std::time::Duration::from_secs(60),
    );
    let dom = browser.eval("document.documentElement.outerHTML");
    Some(dom.as_str().unwrap_or_default().to_string())
}

/// The Sandwich table's symbol rows, by self time (the profile picker's rows carry
/// no shares, symbol rows do).
fn symbol_rows(dom: &str) -> Vec<&str> {
    dom.split("<tr")
        .skip(1)
        .filter(|r| r.contains("%)<div"))
        .collect()
}

#[test]
fn speedscope_export_opens_in_speedscope_in_chromium() {
    let rec = recorded();
    let file = temp_dir("export-speedscope-cpu").join("cpusplit.speedscope.json");
    export("speedscope", &file);
    let Some(dom) = speedscope_dom(&file) else {
        return;
    };
    // The page title is the profile's name; the profile shown is the main thread's.
    assert!(
        dom.contains("<title>cpusplit.jsc - speedscope</title>"),
        "{dom}"
    );
    assert!(dom.contains("main (cpu)"), "{dom}");
    // The report's hottest method first, with its source file as the row's title,
    // and the share it has on the main thread.
    let rows = symbol_rows(&dom);
    assert!(!rows.is_empty(), "no symbol rows: {dom}");
    let first = rows[0];
    assert!(
        first.contains(">CpuSplit.spin</td>") && first.contains("title=\"CpuSplit.java\""),
        "{first}"
    );
    let main = Report::of(&rec.file, &["--thread", "main"]);
    let (_, self_pct, _) = report_rows(&main)[0].clone();
    let shown = [self_pct.floor(), self_pct.ceil()].map(|p| format!("({p}%)"));
    assert!(
        shown.iter().any(|s| first.contains(s)),
        "{shown:?} in {first}"
    );
    for method in ["CpuSplit.seventy", "CpuSplit.thirty", "CpuSplit.main"] {
        assert!(
            dom.contains(&format!(">{method}</td>")),
            "{method} in the sandwich view"
        );
    }
}

#[test]
fn traces_export_as_evented_profiles_that_speedscope_opens() {
    agent_path();
    let classes = compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
    let java = &javas()[0];
    let dir = temp_dir("export-speedscope-trace");
    let file = dir.join("trace.jsc");
    record(
        &file,
        &["--mode", "none", "--trace", "CpuSplit"],
        &java.bin,
        &classes,
        &["CpuSplit", "1"],
    );
    let json_file = dir.join("trace.speedscope.json");
    let out = jscope(&[
        "export",
        file.to_str().unwrap(),
        "--format",
        "speedscope",
        "-o",
        json_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // One open and one close per traced call, as many spin calls as seventy and
    // thirty calls together (jscope stats counts them).
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_file).unwrap()).unwrap();
    let profile = &json["profiles"][0];
    assert_eq!(
        (&profile["type"], &profile["name"]),
        (&"evented".into(), &"main (trace)".into())
    );
    let stats = jscope_json(&["stats", file.to_str().unwrap(), "--format", "json"]);
    let calls = |m: &str| {
        stats["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["method"] == m)
            .map_or(0, |r| r["calls"].as_u64().unwrap())
    };
    let spin = calls("CpuSplit.spin");
    assert!(spin > 20, "{spin} spin calls");
    assert_eq!(spin, calls("CpuSplit.seventy") + calls("CpuSplit.thirty"));
    let frames = json["shared"]["frames"].as_array().unwrap();
    let opens = profile["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["type"] == "O"
                && frames[e["frame"].as_u64().unwrap() as usize]["name"] == "CpuSplit.spin"
        })
        .count();
    assert_eq!(opens as u64, spin);

    let Some(dom) = speedscope_dom(&json_file) else {
        return;
    };
    assert!(
        dom.contains("<title>trace.jsc - speedscope</title>"),
        "{dom}"
    );
    assert!(dom.contains("main (trace)"), "{dom}");
    let rows = symbol_rows(&dom);
    assert!(
        rows.first()
            .is_some_and(|r| r.contains(">CpuSplit.spin</td>")),
        "{rows:?}"
    );
    for method in ["CpuSplit.seventy", "CpuSplit.thirty", "CpuSplit.main"] {
        assert!(
            dom.contains(&format!(">{method}</td>")),
            "{method} in {dom}"
        );
    }
}
