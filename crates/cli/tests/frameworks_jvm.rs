//! Requests across three JVMs of Debian's frameworks, each recorded by the agent
//! (`remote=http`): an OkHttp 3 client (each call a `jscope.Span`) -> a Jetty 9
//! servlet -> (Apache HttpClient 5) -> a Netty 4.1 backend. Every 20th request
//! takes the servlet's CPU-heavy branch. Checked: the calls link across the
//! JVMs, `jscope requests` lists each slow request under one trace id with its
//! parent and child calls, `--latency 100ms` leaves mostly the heavy branch, a
//! chosen `traceparent` keeps its trace id, and `--request ID` keeps only
//! samples the fixtures' own logs place inside that request on its threads.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use jscope_analysis::{RequestFilter, Selection};
use jscope_format::Recording;
use jscope_testkit::{javas, temp_dir, tools};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use prost::Message;
use serde_json::Value;
use support::{
    collapsed_share as share, free_port, jscope_ok as jscope, rfc3339, start_logged, wait_ready,
};

const CHOSEN: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// The Debian jars the fixtures compile and run against: (jar, package).
const JARS: [(&str, &str); 18] = [
    ("okhttp.jar", "libokhttp-java"),
    ("okio.jar", "libokhttp-java"),
    ("httpclient5.jar", "libhttpclient5-java"),
    ("httpcore5.jar", "libhttpclient5-java"),
    ("httpcore5-h2.jar", "libhttpclient5-java"),
    ("slf4j-api.jar", "libhttpclient5-java"),
    ("servlet-api.jar", "libjetty9-java"),
    ("jetty9-server.jar", "libjetty9-java"),
    ("jetty9-servlet.jar", "libjetty9-java"),
    ("jetty9-security.jar", "libjetty9-java"),
    ("jetty9-util.jar", "libjetty9-java"),
    ("jetty9-http.jar", "libjetty9-java"),
    ("jetty9-io.jar", "libjetty9-java"),
    ("netty-transport.jar", "libnetty-java"),
    ("netty-codec-http.jar", "libnetty-java"),
    ("netty-codec.jar", "libnetty-java"),
    ("netty-common.jar", "libnetty-java"),
    ("netty-buffer.jar", "libnetty-java"),
];

/// The jars' class path, or None (noted, or a failure under CI) when one is missing.
fn jars() -> Option<String> {
    let mut cp = Vec::new();
    for (jar, package) in JARS
        .iter()
        .chain(&[("netty-resolver.jar", "libnetty-java")])
    {
        let path = Path::new("/usr/share/java").join(jar);
        if !path.exists() {
            tools::missing(
                &path.display().to_string(),
                &format!("apt-get install {package}"),
            );
            return None;
        }
        cp.push(path.display().to_string());
    }
    Some(cp.join(":"))
}

fn compile(jars: &str) -> PathBuf {
    compile_dirs(jars, &["fw", "jscope"])
}

/// The fixtures of `dirs` (of `frameworks_fixtures`), compiled against `jars`.
fn compile_dirs(jars: &str, dirs: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/frameworks_fixtures");
    let out = temp_dir("frameworks-classes");
    let mut sources = Vec::new();
    for dir in dirs.iter().map(|d| src.join(d)) {
        for e in std::fs::read_dir(dir).unwrap() {
            sources.push(e.unwrap().path());
        }
    }
    let status = Command::new("javac")
        .args(["--release", "17", "-g", "-cp", jars, "-d"])
        .arg(&out)
        .args(&sources)
        .status()
        .expect("javac runs");
    assert!(status.success(), "javac failed on the framework fixtures");
    out
}

/// A fixture's log: trace id -> (thread name, start ns, end ns) it served.
fn served(log: &Path) -> HashMap<String, Vec<(String, u64, u64)>> {
    let mut out: HashMap<String, Vec<(String, u64, u64)>> = HashMap::new();
    for line in std::fs::read_to_string(log).unwrap().lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() == 5 && f[0] == "serve" {
            out.entry(f[1].to_string()).or_default().push((
                f[2].to_string(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            ));
        }
    }
    out
}

/// `jscope merge` of the three recordings into `session`: what it said.
fn merge(files: &[String], session: &str) -> String {
    let merged = Command::new(env!("CARGO_BIN_EXE_jscope"))
        .args(["merge", &files[0], &files[1], &files[2], "-o", session])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&merged.stderr).to_string()
        + &String::from_utf8_lossy(&merged.stdout);
    assert!(merged.status.success(), "{said}");
    said
}

/// `jscope requests SESSION --format json`, every request.
fn requests(session: &str) -> Value {
    serde_json::from_str(&jscope(&[
        "requests", session, "--format", "json", "--limit", "1000",
    ]))
    .unwrap()
}

/// The requests that took the servlet's heavy branch.
fn heavy_rows(rows: &[Value]) -> Vec<&Value> {
    rows.iter()
        .filter(|r| {
            r["tree"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "GET /api/heavy")
        })
        .collect()
}

/// The names of the parts of the request sent with the chosen traceparent.
fn chosen_names(rows: &[Value]) -> Vec<&str> {
    let chosen = rows
        .iter()
        .find(|r| r["id"] == CHOSEN)
        .expect("the chosen trace");
    chosen["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

#[test]
fn okhttp_jetty_and_netty_requests_link_and_narrow_profiles() {
    let Some(jars) = jars() else {
        return;
    };
    let java = javas().remove(0);
    let dir = temp_dir("frameworks");
    let cp = format!("{}:{jars}", compile(&jars).display());
    let cp = Path::new(&cp);
    let (front_port, back_port) = (free_port(), free_port());
    let options = |name: &str| {
        format!(
            "remote=http,mode=cpu+wall,interval=2ms,quiet,file={}",
            dir.join(format!("{name}.jsc")).display()
        )
    };
    let mut back = start_logged(
        &java,
        &dir,
        "back",
        &options("back"),
        cp,
        &["fw.Backend", &back_port],
    );
    wait_ready(&dir, "back");
    let front_args = ["fw.Front", front_port.as_str(), back_port.as_str()];
    let mut front = start_logged(&java, &dir, "front", &options("front"), cp, &front_args);
    wait_ready(&dir, "front");
    let chosen = format!("00-{CHOSEN}-b7ad6b7169203331-01");
    let client_args = [
        "fw.Client",
        front_port.as_str(),
        "40",
        "200",
        chosen.as_str(),
    ];
    let mut client = start_logged(&java, &dir, "client", &options("client"), cp, &client_args);
    for (name, child) in [
        ("client", &mut client),
        ("front", &mut front),
        ("back", &mut back),
    ] {
        let status = child.wait_timeout(Duration::from_secs(120));
        assert!(status.is_some_and(|s| s.success()), "{name} failed");
    }
    let pids = [client.id(), front.id(), back.id()];
    let files: Vec<String> = ["client", "front", "back"]
        .iter()
        .map(|n| dir.join(format!("{n}.jsc")).display().to_string())
        .collect();

    // Every call links across the JVMs.
    let session = dir.join("s.json").display().to_string();
    let said = merge(&files, &session);
    assert!(
        said.contains("0 client calls unmatched, 0 server calls unmatched"),
        "{said}"
    );

    // Slow requests: one trace id over the three JVMs, client span -> servlet ->
    // backend, each part called by the one before.
    let listed = requests(&session);
    let rows = listed["requests"].as_array().unwrap();
    let heavy = heavy_rows(rows);
    assert_eq!(heavy.len(), 10, "every 20th of 200 requests is heavy");
    for r in &heavy {
        assert!(r["duration_ns"].as_u64().unwrap() >= 150_000_000, "{r}");
        let jvms: Vec<u64> = r["jvms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(jvms, pids.map(u64::from), "{r}");
        let tree = r["tree"].as_array().unwrap();
        let part = |name: &str| tree.iter().position(|p| p["name"] == name).unwrap();
        let (call, api, b) = (part("call"), part("GET /api/heavy"), part("GET /b"));
        assert_eq!(tree[call]["jvm"], pids[0]);
        assert_eq!(tree[call]["parent"], Value::Null);
        assert_eq!(tree[api]["jvm"], pids[1]);
        assert_eq!(tree[api]["parent"], call);
        assert_eq!(tree[b]["jvm"], pids[2]);
        assert_eq!(tree[b]["parent"], api);
        assert_eq!(tree[call]["calls"][0]["path"], "/api/heavy");
        assert_eq!(tree[api]["calls"][0]["span_id"], tree[b]["parent_span_id"]);
    }
    // The chosen traceparent's trace id is the servlet's and the backend's.
    let names = chosen_names(rows);
    assert_eq!(names, ["GET /api/light", "GET /b"]);

    // --latency: the heavy branch's share of the measured phase's cpu samples.
    let client_log = std::fs::read_to_string(dir.join("client.log")).unwrap();
    let measure: u64 = client_log
        .lines()
        .find_map(|l| l.strip_prefix("measure "))
        .unwrap()
        .parse()
        .unwrap();
    let from = rfc3339(measure * 1_000_000);
    let (all, heavy_all) = share(
        &jscope(&["collapsed", &session, "--from", &from]),
        "Front.heavy",
    );
    let (slow, heavy_slow) = share(
        &jscope(&["collapsed", &session, "--from", &from, "--latency", "100ms"]),
        "Front.heavy",
    );
    let (before, after) = (
        heavy_all as f64 / all as f64,
        heavy_slow as f64 / slow as f64,
    );
    assert!(before < 0.30, "heavy share without --latency {before:.2}");
    assert!(after >= 0.80, "heavy share with --latency 100ms {after:.2}");

    // --request: only samples the logs place in the request, on its threads.
    let logs = ["client", "front", "back"].map(|n| served(&dir.join(format!("{n}.log"))));
    let recs: Vec<Recording> = files
        .iter()
        .map(|f| Recording::from_bytes(&std::fs::read(f).unwrap()).unwrap())
        .collect();
    let mut seen = [0u64; 3];
    const SLACK_NS: u64 = 5_000_000;
    for r in &heavy {
        let trace = r["trace_id"].as_str().unwrap();
        let mut kept = 0;
        for (j, rec) in recs.iter().enumerate() {
            let spans = logs[j].get(trace).cloned().unwrap_or_default();
            for mode in [jscope_analysis::Mode::Cpu, jscope_analysis::Mode::Wall] {
                let sel = Selection {
                    mode: Some(mode),
                    requests: RequestFilter {
                        request: Some(trace.to_string()),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                for s in sel.samples(rec) {
                    let name = &rec.threads[&jscope_format::ThreadId(s.thread)].name;
                    let inside = spans.iter().any(|(t, a, b)| {
                        t == name && s.ticks + SLACK_NS >= *a && s.ticks <= b + SLACK_NS
                    });
                    assert!(
                        inside,
                        "JVM {j}: a sample of {name} at {} is outside {trace}: {spans:?}",
                        s.ticks
                    );
                    seen[j] += 1;
                    kept += u64::from(mode == jscope_analysis::Mode::Cpu);
                }
            }
        }
        let (n, _) = share(&jscope(&["collapsed", &session, "--request", trace]), "");
        assert_eq!(n, kept, "the CLI keeps the same cpu samples of {trace}");
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "samples of the heavy requests per JVM: {seen:?}"
    );

    // Exports: the chosen request's samples link to its trace (OTLP's link
    // table, pprof's labels), decoded with the formats' own types.
    let otlp = dir.join("front.otlp");
    let pprof = dir.join("front.pb.gz");
    let heavy_trace = heavy[0]["trace_id"].as_str().unwrap();
    for (format, out, id) in [("otlp", &otlp, CHOSEN), ("pprof", &pprof, heavy_trace)] {
        let out = out.display().to_string();
        jscope(&[
            "export",
            &files[1],
            "--format",
            format,
            "--request",
            id,
            "-o",
            &out,
        ]);
    }
    let req = ExportProfilesServiceRequest::decode(&*std::fs::read(&otlp).unwrap()).unwrap();
    let dict = req.dictionary.unwrap();
    let chosen_bytes: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&CHOSEN[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let samples: Vec<_> = req
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .flat_map(|p| &p.samples)
        .collect();
    assert!(!samples.is_empty());
    for s in samples {
        let link = &dict.link_table[s.link_index as usize];
        assert_eq!(link.trace_id, chosen_bytes);
        assert_eq!(link.span_id.len(), 8);
    }
    let mut gz = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&*std::fs::read(&pprof).unwrap()),
        &mut gz,
    )
    .unwrap();
    let p = jscope_export::pprof::Profile::decode(&*gz).unwrap();
    let label = |s: &jscope_export::pprof::Sample, key: &str| {
        s.label
            .iter()
            .find(|l| p.string_table[l.key as usize] == key)
            .map(|l| p.string_table[l.str as usize].clone())
    };
    assert!(!p.sample.is_empty());
    for s in &p.sample {
        assert_eq!(label(s, "trace_id").as_deref(), Some(heavy_trace));
        assert_eq!(label(s, "span_id").map(|v| v.len()), Some(16));
    }
}

/// Tomcat 10's jars (the embedded server and its jakarta servlet API).
const TOMCAT_JARS: [&str; 10] = [
    "tomcat10-catalina.jar",
    "tomcat10-coyote.jar",
    "tomcat10-util.jar",
    "tomcat10-util-scan.jar",
    "tomcat10-juli.jar",
    "tomcat10-api.jar",
    "tomcat10-jni.jar",
    "tomcat10-servlet-api.jar",
    "tomcat10-jaspic-api.jar",
    "tomcat10-annotations-api.jar",
];

/// An OkHttp client -> a Tomcat 10 servlet (jakarta; HttpClient 5 to its
/// backend) -> the Netty backend with Netty on the module path. The servlet's
/// and the clients' calls go through the agent's Java readers; Netty's classes,
/// in named (automatic) modules, call the agent directly instead. Both link:
/// every call matched across the JVMs, one trace id per request, a chosen
/// traceparent kept.
#[test]
fn a_tomcat_servlet_and_a_module_path_netty_link_their_requests() {
    let Some(jars) = jars() else {
        return;
    };
    let mut tomcat = Vec::new();
    for jar in TOMCAT_JARS {
        let path = Path::new("/usr/share/java").join(jar);
        if !path.exists() {
            tools::missing(
                &path.display().to_string(),
                "apt-get install libtomcat10-java",
            );
            return;
        }
        tomcat.push(path.display().to_string());
    }
    let all = format!("{jars}:{}", tomcat.join(":"));
    let classes = compile_dirs(&all, &["fw", "jscope", "tomcat"]);
    let java = javas().remove(0);
    let dir = temp_dir("frameworks-tomcat");
    let (front_port, back_port) = (free_port(), free_port());
    let options = |name: &str| {
        format!(
            "remote=http,interval=5ms,quiet,file={}",
            dir.join(format!("{name}.jsc")).display()
        )
    };
    let (netty, rest): (Vec<&str>, Vec<&str>) = all.split(':').partition(|j| j.contains("/netty-"));
    let netty = netty.join(":");
    let back_args = [
        "--module-path",
        netty.as_str(),
        "--add-modules",
        "ALL-MODULE-PATH",
        "fw.Backend",
        back_port.as_str(),
    ];
    let mut back = start_logged(&java, &dir, "back", &options("back"), &classes, &back_args);
    wait_ready(&dir, "back");
    let cp = format!("{}:{}", classes.display(), rest.join(":"));
    let base = dir.join("tomcat").display().to_string();
    let front_args = ["fw.TomcatFront", &front_port, &back_port, &base];
    let mut front = start_logged(
        &java,
        &dir,
        "front",
        &options("front"),
        Path::new(&cp),
        &front_args,
    );
    wait_ready(&dir, "front");
    let chosen = format!("00-{CHOSEN}-b7ad6b7169203331-01");
    let client_args = ["fw.Client", front_port.as_str(), "5", "40", chosen.as_str()];
    let mut client = start_logged(
        &java,
        &dir,
        "client",
        &options("client"),
        Path::new(&cp),
        &client_args,
    );
    for (name, child) in [
        ("client", &mut client),
        ("front", &mut front),
        ("back", &mut back),
    ] {
        let status = child.wait_timeout(Duration::from_secs(120));
        assert!(status.is_some_and(|s| s.success()), "{name} failed");
    }
    let files: Vec<String> = ["client", "front", "back"]
        .iter()
        .map(|n| dir.join(format!("{n}.jsc")).display().to_string())
        .collect();
    let recs: Vec<Recording> = files
        .iter()
        .map(|f| Recording::from_bytes(&std::fs::read(f).unwrap()).unwrap())
        .collect();
    // OkHttp's two methods and the servlet's and HttpClient 5's went through
    // readers; Netty's two, in named modules, did not.
    let through = |r: &Recording| r.counters["remote.methods_through_readers"];
    assert_eq!(through(&recs[0]), 2);
    assert!(through(&recs[1]) >= 2, "{}", through(&recs[1]));
    assert_eq!(through(&recs[2]), 0);
    assert!(recs[2].counters["remote.methods_inserted"] >= 2);

    // 46 requests (5 warm-up, 40, the quit), each a call on both sides of both hops.
    let session = dir.join("s.json").display().to_string();
    let said = merge(&files, &session);
    assert!(
        said.contains(
            "92 remote calls matched, 0 client calls unmatched, 0 server calls unmatched"
        ),
        "{said}"
    );
    let listed = requests(&session);
    let rows = listed["requests"].as_array().unwrap();
    let heavy = heavy_rows(rows);
    assert_eq!(heavy.len(), 2, "the 7th and 27th of 40 requests are heavy");
    for r in &heavy {
        let tree = r["tree"].as_array().unwrap();
        let part = |name: &str| tree.iter().position(|p| p["name"] == name).unwrap();
        let (call, api, b) = (part("call"), part("GET /api/heavy"), part("GET /b"));
        assert_eq!(tree[api]["parent"], call, "{r}");
        assert_eq!(tree[b]["parent"], api, "{r}");
        assert_eq!(
            tree[api]["calls"][0]["span_id"], tree[b]["parent_span_id"],
            "{r}"
        );
    }
    let names = chosen_names(rows);
    assert_eq!(names, ["GET /api/light", "GET /b"]);
}
