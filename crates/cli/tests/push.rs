//! Pushes into a real `jscope serve`: Pyroscope's `/ingest` with a JFR body (as
//! pyroscope-java sends it: multipart, gzipped `jfr` part, `labels` part) and with
//! folded lines, OTLP profiles made by `jscope export --format otlp`, the JVM list,
//! flame graph and CLI reading them, bad bodies refused with 400, and the token.

mod serving;
mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use flate2::write::GzEncoder;
use jscope_testkit::temp_dir;
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceResponse;
use prost::Message;
use serde_json::Value;
use serving::Served;
use support::*;

/// `POST PATH` with these headers and body: (status, content type, body).
fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("http connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&out[..at]).to_ascii_lowercase();
    let ct = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or("")
        .to_string();
    (status, ct, out[at..].to_vec())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A multipart form as OkHttp writes it for pyroscope-java.
fn multipart(boundary: &str, parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, bytes) in parts {
        write!(
            out,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            bytes.len()
        )
        .unwrap();
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\r\n");
    }
    write!(out, "--{boundary}--\r\n").unwrap();
    out
}

fn async_profiler_jfr() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../jfr/tests/data/async-profiler.jfr")
}

fn row(served: &Served, id: &str) -> Value {
    let rows = served.json("/api/jvms");
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {rows}"))
        .clone()
}

/// The collector's flame graph of one JVM in one mode: (samples, collapsed).
fn flame(served: &Served, id: &str, mode: &str) -> (u64, String) {
    let f = served.json(&format!("/api/flame?jvm={id}&mode={mode}"));
    (
        f["samples"].as_u64().unwrap(),
        f["collapsed"].as_str().unwrap().to_string(),
    )
}

/// `jscope collapsed ARGS`, sorted by line, checked to succeed.
fn collapsed(args: &[&str]) -> Vec<String> {
    let out = jscope(&[&["collapsed"][..], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let mut lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

fn count_of(collapsed: &str, stack: &str) -> u64 {
    collapsed
        .lines()
        .find_map(|l| l.strip_prefix(stack)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

fn pushed_id(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body).unwrap();
    v["jvm"].as_str().unwrap().to_string()
}

#[test]
fn a_pyroscope_jfr_push_and_an_otlp_push_show_as_jvms_with_their_service() {
    let data = temp_dir("cli-push");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let url = served.url();

    // pyroscope-java: multipart, the JFR gzipped, a labels part (protobuf, ignored).
    let jfr = std::fs::read(async_profiler_jfr()).unwrap();
    let body = multipart("b0undary", &[("jfr", &gzip(&jfr)), ("labels", b"\x0a\x00")]);
    let (status, _, reply) = post(
        served.http,
        "/ingest?name=ap-fixture%7Benv%3Dtest%2Cregion%3Deu%7D&from=1700000000&until=1700000002&format=jfr&spyName=javaspy&sampleRate=100",
        &[("Content-Type", "multipart/form-data; boundary=b0undary")],
        &body,
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
    let jfr_id = pushed_id(&reply);
    let r = row(&served, &jfr_id);
    assert_eq!(r["service"], "ap-fixture");
    assert_eq!(r["labels"]["env"], "test");
    assert_eq!(r["labels"]["region"], "eu");

    // The collector's stacks are the JFR file's, cpu and wall alike.
    let file = async_profiler_jfr();
    let file = file.to_str().unwrap();
    for mode in ["cpu", "wall"] {
        let expected = collapsed(&[file, "--mode", mode]);
        let got = collapsed(&["--collector", &url, "--jvm", &jfr_id, "--mode", mode]);
        assert_eq!(got, expected, "{mode}");
        let (samples, _) = flame(&served, &jfr_id, mode);
        let total: u64 = expected
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(samples, total, "{mode}");
        assert!(total > 0);
    }
    // The test file's known cpu samples (crates/jfr/tests/data/README.md).
    let (cpu_samples, cpu) = flame(&served, &jfr_id, "cpu");
    assert_eq!(cpu_samples, 168);
    assert_eq!(count_of(&cpu, "ApFixture.main;ApFixture.burn"), 19, "{cpu}");

    // Its allocations and monitor waits too.
    for command in ["alloc", "locks"] {
        let of_file = jscope(&[command, file]);
        let of_push = jscope(&[command, "--collector", &url, "--jvm", &jfr_id]);
        assert!(of_push.status.success(), "{}", stderr(&of_push));
        assert_eq!(stdout(&of_push), stdout(&of_file), "{command}");
    }
    assert!(stdout(&jscope(&["alloc", file])).contains("1974"));

    // OTLP: an export of a known recording, as protobuf.
    let dir = temp_dir("cli-push-otlp");
    let jsc = dir.join("app.jsc");
    std::fs::write(&jsc, synthetic_recording().bytes).unwrap();
    let otlp = dir.join("app.otlp");
    let out = jscope(&[
        "export",
        jsc.to_str().unwrap(),
        "--format",
        "otlp",
        "-o",
        otlp.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (status, ct, reply) = post(
        served.http,
        "/v1development/profiles",
        &[("Content-Type", "application/x-protobuf")],
        &std::fs::read(&otlp).unwrap(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
    assert_eq!(ct, "application/x-protobuf");
    let response = ExportProfilesServiceResponse::decode(&reply[..]).unwrap();
    assert!(response.partial_success.is_none());
    let rows = served.json("/api/jvms");
    let otlp_row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["labels"]["process.runtime.name"].is_string())
        .unwrap_or_else(|| panic!("no OTLP JVM in {rows}"))
        .clone();
    let otlp_id = otlp_row["id"].as_str().unwrap();
    assert_eq!(otlp_row["service"], "java");
    let (samples, stacks) = flame(&served, otlp_id, "cpu");
    assert_eq!(samples, 30);
    for method in ["first", "second", "third"] {
        assert_eq!(
            count_of(&stacks, &format!("demo.App.main;demo.App.{method}")),
            10,
            "{stacks}"
        );
    }
    assert_eq!(
        collapsed(&["--collector", &url, "--jvm", otlp_id]),
        collapsed(&[jsc.to_str().unwrap()])
    );
    // The same push again lands in the same JVM.
    post(
        served.http,
        "/v1development/profiles",
        &[("Content-Type", "application/x-protobuf")],
        &std::fs::read(&otlp).unwrap(),
    );
    assert_eq!(flame(&served, otlp_id, "cpu").0, 60);
    assert!(served.interrupt());

    // Everything is on disk for --data after the collector stopped.
    let stored = collapsed(&[
        "--data",
        data.to_str().unwrap(),
        "--jvm",
        &jfr_id,
        "--mode",
        "cpu",
    ]);
    assert_eq!(stored, collapsed(&[file, "--mode", "cpu"]));
}

/// A JFR that a JDK records in the test run (`-XX:StartFlightRecording`, the
/// `JfrSplit` fixture), pushed raw: the collector holds the file's stacks.
#[test]
fn a_jdk_flight_recording_pushed_reads_like_the_file() {
    let java = jscope_testkit::javas()
        .into_iter()
        .next()
        .expect("a JDK to record with");
    let classes = jscope_testkit::compile_fixtures(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jfr_fixtures"),
    );
    let file = temp_dir("cli-push-jdk").join("split.jfr");
    let out = jscope_testkit::Child::spawn(
        std::process::Command::new(&java.bin)
            .arg(format!(
                "-XX:StartFlightRecording=filename={},settings=profile",
                file.display()
            ))
            .arg("-Xlog:jfr=warning")
            .arg("-cp")
            .arg(classes)
            .args(["JfrSplit", "1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped()),
    )
    .finish(Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let data = temp_dir("cli-push-jdk-data");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let jdk = java.major.to_string();
    let (status, _, reply) = post(
        served.http,
        &format!("/ingest?name=jfrsplit%7Bjdk%3D{jdk}%7D&format=jfr&spyName=jfr"),
        &[("Content-Type", "application/octet-stream")],
        &std::fs::read(&file).unwrap(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
    let id = pushed_id(&reply);
    let r = row(&served, &id);
    assert_eq!(r["service"], "jfrsplit");
    assert_eq!(r["labels"]["jdk"], jdk.as_str());
    let file = file.to_str().unwrap();
    let expected = collapsed(&[file, "--mode", "cpu"]);
    assert!(
        expected.iter().any(|l| l.contains("JfrSplit.seventy")),
        "{expected:?}"
    );
    assert_eq!(
        collapsed(&["--collector", &served.url(), "--jvm", &id, "--mode", "cpu"]),
        expected
    );
    let report = |args: &[&str]| {
        let out = jscope(&[&["report", "--mode", "cpu"][..], args].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(
        report(&["--collector", &served.url(), "--jvm", &id]),
        report(&[file])
    );
    assert!(served.interrupt());
}

#[test]
fn folded_pushes_keep_their_labels_and_bad_bodies_get_400() {
    let data = temp_dir("cli-push-folded");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let folded = b"com.acme.Main.main;com.acme.Shop.checkout 30\ncom.acme.Main.main;com.acme.Shop.browse 10\n";
    let push = |name: &str, body: &[u8], format: &str| {
        post(
            served.http,
            &format!("/ingest?name={name}&from=1700000000&until=1700000010&format={format}&sampleRate=100&spyName=test"),
            &[],
            body,
        )
    };
    let (status, _, reply) = push("shop.cpu%7Benv%3Dprod%2Cregion%3Deu%7D", folded, "folded");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
    let prod = pushed_id(&reply);
    let (status, _, reply) = push("shop.cpu%7Benv%3Ddev%7D", folded, "folded");
    assert_eq!(status, 200);
    let dev = pushed_id(&reply);
    assert_ne!(prod, dev);
    let r = row(&served, &prod);
    assert_eq!(r["service"], "shop");
    assert_eq!(
        r["labels"],
        serde_json::json!({"env": "prod", "region": "eu"})
    );
    assert_eq!(
        row(&served, &dev)["labels"],
        serde_json::json!({"env": "dev"})
    );
    let (samples, stacks) = flame(&served, &prod, "cpu");
    assert_eq!(samples, 40);
    assert_eq!(
        count_of(&stacks, "com.acme.Main.main;com.acme.Shop.checkout"),
        30
    );
    assert_eq!(
        count_of(&stacks, "com.acme.Main.main;com.acme.Shop.browse"),
        10
    );
    // Hot methods: the checkout on top of 30 of the 40.
    let hot = served.json(&format!("/api/jvms/{prod}/hot?mode=cpu"));
    assert_eq!(hot["samples"], 40);
    assert_eq!(hot["methods"][0]["method"], "com.acme.Shop.checkout");
    assert_eq!(hot["methods"][0]["self_samples"], 30);
    // Samples spread over from..until: the pushed JVM starts at `from`.
    assert_eq!(r["started_ms"], 1_700_000_000_000u64);

    // Garbage and truncated bodies: 400 with a one-line reason, nothing stored.
    let jfr = std::fs::read(async_profiler_jfr()).unwrap();
    let bad: Vec<(&str, Vec<u8>, &str)> = vec![
        ("jfr", b"garbage, not a recording".to_vec(), "jfr"),
        ("jfr", jfr[..jfr.len() / 2].to_vec(), "jfr"),
        (
            "pprof",
            b"\x0a\xff\xff\xff\xff\x0f garbage".to_vec(),
            "pprof",
        ),
        ("pprof", gzip(b"\x0a\x05abc")[..10].to_vec(), "gzip"),
        ("folded", b"a;b;c notanumber\n".to_vec(), "count"),
        ("folded", Vec::new(), "no samples"),
        ("speedscope", b"{}".to_vec(), "format"),
    ];
    for (format, body, why) in &bad {
        let (status, _, reply) = push("broken.cpu%7Benv%3Dprod%7D", body, format);
        let text = String::from_utf8_lossy(&reply);
        assert_eq!(status, 400, "{format}: {text}");
        let v: Value = serde_json::from_slice(&reply).unwrap();
        let message = v["error"].as_str().unwrap();
        assert!(
            message.starts_with("jscope: ") && !message.contains('\n'),
            "{message}"
        );
        assert!(message.contains(why), "{format}: {message}");
    }
    let (status, _, _) = push("shop%7Benv", folded, "folded");
    assert_eq!(status, 400);
    let (status, _, _) = post(
        served.http,
        "/v1development/profiles",
        &[("Content-Type", "application/x-protobuf")],
        b"\xff\xff\xff garbage",
    );
    assert_eq!(status, 400);
    let (status, _, _) = post(
        served.http,
        "/v1development/profiles",
        &[("Content-Type", "application/json")],
        b"{}",
    );
    assert_eq!(status, 415);
    // A body shorter than its Content-Length.
    let mut s = TcpStream::connect(served.http).unwrap();
    s.write_all(b"POST /ingest?name=cut HTTP/1.1\r\nContent-Length: 100\r\n\r\nshort")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");

    // The collector runs on with what it had.
    let rows = served.json("/api/jvms");
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
    assert_eq!(flame(&served, &prod, "cpu").0, 40);
    let (status, _, reply) = push("shop.cpu%7Benv%3Dprod%2Cregion%3Deu%7D", folded, "folded");
    assert_eq!((status, pushed_id(&reply)), (200, prod.clone()));
    assert_eq!(flame(&served, &prod, "cpu").0, 80);
    // Profile types jscope does not store are accepted and skipped.
    let (status, _, reply) = push("shop.alloc_objects", folded, "folded");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(v["samples"], 0);
    assert_eq!(served.json("/api/jvms").as_array().unwrap().len(), 2);
    assert!(served.interrupt());

    // A restarted collector carries the stream on: new names are added to what the
    // store holds, the old ones keep their meaning.
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let more =
        b"com.acme.Main.main;com.acme.Shop.pay 5\ncom.acme.Main.main;com.acme.Shop.browse 1\n";
    let push = |name: &str, body: &[u8]| {
        post(
            served.http,
            &format!("/ingest?name={name}&from=1700000020&until=1700000021"),
            &[],
            body,
        )
    };
    let (status, _, reply) = push("shop.cpu%7Bregion%3Deu%2Cenv%3Dprod%7D", more);
    assert_eq!((status, pushed_id(&reply)), (200, prod.clone()));
    let (samples, stacks) = flame(&served, &prod, "cpu");
    assert_eq!(samples, 86);
    assert_eq!(
        count_of(&stacks, "com.acme.Main.main;com.acme.Shop.checkout"),
        60
    );
    assert_eq!(
        count_of(&stacks, "com.acme.Main.main;com.acme.Shop.browse"),
        21
    );
    assert_eq!(count_of(&stacks, "com.acme.Main.main;com.acme.Shop.pay"), 5);
    assert!(served.interrupt());
}

#[test]
fn a_pprof_push_reads_like_its_recording() {
    let data = temp_dir("cli-push-pprof");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let dir = temp_dir("cli-push-pprof-file");
    let jsc = dir.join("app.jsc");
    std::fs::write(&jsc, synthetic_recording().bytes).unwrap();
    let pprof = dir.join("app.pb.gz");
    let out = jscope(&[
        "export",
        jsc.to_str().unwrap(),
        "--format",
        "pprof",
        "-o",
        pprof.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let gz = std::fs::read(&pprof).unwrap();
    // As the Go SDK sends it (a multipart `profile` part), and as a raw body.
    let body = multipart("xyz", &[("profile", &gz), ("sample_type_config", b"{}")]);
    let (status, _, reply) = post(
        served.http,
        "/ingest?name=gosvc.cpu%7Bpod%3Da%7D&from=1700000000&until=1700000010&format=pprof",
        &[("Content-Type", "multipart/form-data; boundary=xyz")],
        &body,
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
    let id = pushed_id(&reply);
    let (status, _, reply) = post(
        served.http,
        "/ingest?name=gosvc.cpu%7Bpod%3Da%7D&format=pprof",
        &[],
        &gz,
    );
    assert_eq!((status, pushed_id(&reply)), (200, id.clone()));
    let (samples, stacks) = flame(&served, &id, "cpu");
    assert_eq!(samples, 60);
    for method in ["first", "second", "third"] {
        assert_eq!(
            count_of(&stacks, &format!("demo.App.main;demo.App.{method}")),
            20,
            "{stacks}"
        );
    }
    assert_eq!(row(&served, &id)["service"], "gosvc");
    assert!(served.interrupt());
}

#[test]
fn pushes_need_the_token_when_the_collector_has_one() {
    let data = temp_dir("cli-push-token");
    let served = serving::serve(&jscope_bin(), &data, &["--token", "s3cret"]);
    let path = "/ingest?name=app&from=1700000000&until=1700000001";
    let (status, _, _) = post(served.http, path, &[], b"a;b 1\n");
    assert_eq!(status, 401);
    let (status, _, _) = post(
        served.http,
        path,
        &[("Authorization", "Bearer wrong")],
        b"a;b 1\n",
    );
    assert_eq!(status, 401);
    let (status, _, reply) = post(
        served.http,
        path,
        &[("Authorization", "Bearer s3cret")],
        b"a;b 1\n",
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));

    // `Expect: 100-continue` (curl's way with bodies over 1 KiB) is answered at once.
    let mut s = TcpStream::connect(served.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = b"a;b 2\n";
    write!(
        s,
        "POST {path}&token=s3cret HTTP/1.1\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(body).unwrap();
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap();
    assert!(rest.starts_with("HTTP/1.1 200"), "{rest}");
    assert!(served.interrupt());
}
