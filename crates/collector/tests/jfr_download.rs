//! `/api/jfr`: stored JVMs downloaded as one JDK Flight Recorder file, a chunk per
//! JVM, which jscope's reader and the JDK's own `jfr` tool read with each JVM's
//! names and counts.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use common::*;
use jscope_format::Recording;
use jscope_testkit::{javas, jfr_tool, temp_dir};

const CHUNKS: u64 = 3;

/// GET `path`; the status and the body's bytes.
fn get_bytes(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("http connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let status = String::from_utf8_lossy(&out[9..12]).parse().unwrap();
    let body = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| out[at + 4..].to_vec())
        .unwrap_or_default();
    (status, body)
}

fn downloaded(http: SocketAddr, query: &str) -> (Vec<u8>, Recording) {
    let (status, bytes) = get_bytes(http, &format!("/api/jfr?{query}"));
    assert_eq!(status, 200, "{query}: {}", String::from_utf8_lossy(&bytes));
    let rec = jscope_jfr::read_bytes(&bytes).expect("a JFR file");
    assert_eq!(rec.damage, None);
    (bytes, rec)
}

fn snapshot_threads(rec: &Recording) -> usize {
    rec.snapshots.iter().map(|s| s.threads.len()).sum()
}

#[test]
fn any_selection_of_jvms_downloads_as_one_jfr_file_with_a_chunk_per_jvm() {
    let (server, _log) = start(&temp_dir("collector-jfr"), |_| {});
    let agents = server.agents_addr().unwrap();
    let http = server.http_addr().unwrap();
    let mut sims = [
        SimJvm::new(4201, "com.acme.A"),
        SimJvm::new(4202, "com.acme.B"),
    ];
    for sim in &mut sims {
        let mut c = sim.connect(agents, 1);
        for seq in 1..=CHUNKS {
            c.send(seq, &sim.chunk()).unwrap();
        }
        assert_eq!(c.finish(Duration::from_secs(10)).unwrap(), CHUNKS);
    }
    let (a, b) = (&sims[0].stream, &sims[1].stream);
    let snapshots = (CHUNKS * SNAPSHOTS_PER_CHUNK) as usize;

    let (bytes, rec) = downloaded(http, &format!("jvm={a}&jvm={b}"));
    assert_eq!(rec.chunks, 2);
    assert_eq!(rec.snapshots.len(), 2 * snapshots);
    assert_eq!(snapshot_threads(&rec), 2 * snapshots * THREADS as usize);
    let labels: Vec<String> = (1..rec.stacks.len())
        .flat_map(|s| rec.stack(jscope_format::StackId(s as u32)).to_vec())
        .map(|f| rec.method_label(f.method))
        .collect();
    for app in ["com.acme.App4201.work", "com.acme.App4202.work"] {
        assert!(labels.iter().any(|l| l == app), "{app} in {labels:?}");
    }

    // One JVM, its main thread only: one thread of each snapshot.
    let (_, main) = downloaded(http, &format!("jvm={a}&thread=main&mode=snapshot"));
    assert_eq!(main.chunks, 1);
    assert_eq!(snapshot_threads(&main), snapshots);

    // Nothing selected, or a kind that is not one, is a 400 saying why.
    let (status, body) = get_bytes(http, "/api/jfr");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let (status, body) = get_bytes(http, &format!("/api/jfr?jvm={a}&mode=heap"));
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("heap"));
    server.shutdown();

    // The JDK's reader takes both chunks, each with its own JVM's names.
    let file = temp_dir("collector-jfr-file").join("two.jfr");
    std::fs::write(&file, &bytes).unwrap();
    for java in javas() {
        let what = format!("jdk {} reading a collector's JFR download", java.major);
        let Some(tool) = jfr_tool(&java) else {
            continue;
        };
        let out = Command::new(&tool[0])
            .args(&tool[1..])
            .arg("print")
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{what}");
        let text = String::from_utf8_lossy(&out.stdout);
        let count = |s: &str| text.matches(s).count();
        assert_eq!(
            count("profiler.WallClockSample {"),
            2 * snapshots * THREADS as usize,
            "{what}"
        );
        assert!(count("com.acme.App4201.work()") > 0, "{what}");
        assert!(count("com.acme.App4202.work()") > 0, "{what}");
    }
}
