//! The trace tree browser on a big tree: how long `GET /api/jvms/ID/tree` takes to
//! build a tree of about a million calls from a recording, and then to answer what
//! the browser asks as it is used (the top-level calls, one node's children, a
//! find over the whole tree, the method table), with the size of each answer.
//!
//! cargo bench -p jscope-collector --bench tree_browse -- [--requests 142857]
//!
//! The recording (written to a temporary file and served as `jscope view FILE`
//! serves it) is one thread: `App.main` handling REQUESTS requests, each
//! `App.handle` -> `App.parse`, `App.query` (-> 3 x `Db.exec`), `App.render`: 7
//! calls a request.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use jscope_format::{encode_file_start, ChunkWriter, ClassDef, Header, MethodDef, ThreadDef};
use jscope_format::{ClassId, MethodId, StringId, ThreadId, TraceBatch, TraceEvent, TraceKind};

const EVENTS_PER_CHUNK: usize = 200_000;

fn requests() -> u64 {
    let mut it = std::env::args().skip(1).filter(|x| x != "--bench");
    while let Some(flag) = it.next() {
        if flag == "--requests" {
            return it.next().expect("--requests N").parse().unwrap();
        }
    }
    142_857
}

/// Methods: 1 App.main, 2 App.handle, 3 App.parse, 4 App.query, 5 Db.exec, 6 App.render.
fn recording(requests: u64) -> Vec<u8> {
    let header = Header {
        pid: 4242,
        command_line: "java App".into(),
        ticks_per_second: 1_000_000_000,
        modes: "trace".into(),
        ..Header::default()
    };
    let mut bytes = encode_file_start(&header);
    let mut w = ChunkWriter::new();
    let names = [
        "App", "Db", "main", "handle", "parse", "query", "exec", "render",
    ];
    for (i, n) in names.iter().enumerate() {
        w.string(StringId(i as u32 + 1), n);
    }
    for (id, name) in [(1, 1), (2, 2)] {
        w.class(&ClassDef {
            id: ClassId(id),
            name: StringId(name),
            source_file: StringId::NONE,
        });
    }
    for (id, class, name) in [
        (1, 1, 3),
        (2, 1, 4),
        (3, 1, 5),
        (4, 1, 6),
        (5, 2, 7),
        (6, 1, 8),
    ] {
        w.method(&MethodDef {
            id: MethodId(id),
            class: ClassId(class),
            name: StringId(name),
            signature: StringId::NONE,
            modifiers: 9,
        });
    }
    w.thread(&ThreadDef {
        id: ThreadId(1),
        java_id: 1,
        name: "main".into(),
        group: "main".into(),
        start_order: 1,
        ..ThreadDef::default()
    });
    let mut at = 0u64;
    let mut events = Vec::with_capacity(EVENTS_PER_CHUNK + 16);
    let mut ev = |events: &mut Vec<TraceEvent>, kind, method, step: u64| {
        at += step;
        events.push(TraceEvent {
            kind,
            method: MethodId(method),
            ticks: at,
            untraced: 0,
            cpu_ns: 0,
        });
    };
    let flush = |w: &mut ChunkWriter, events: &mut Vec<TraceEvent>, bytes: &mut Vec<u8>| {
        w.trace(&TraceBatch {
            thread: ThreadId(1),
            has_cpu: false,
            events: std::mem::take(events),
        });
        bytes.extend(w.finish());
    };
    use TraceKind::{Enter, Exit};
    ev(&mut events, Enter, 1, 1000);
    for r in 0..requests {
        ev(&mut events, Enter, 2, 500);
        ev(&mut events, Enter, 3, 100);
        ev(&mut events, Exit, 3, 2_000 + r % 700);
        ev(&mut events, Enter, 4, 100);
        for k in 0..3 {
            ev(&mut events, Enter, 5, 50);
            ev(&mut events, Exit, 5, 10_000 + (r * 31 + k * 977) % 9_000);
        }
        ev(&mut events, Exit, 4, 100);
        ev(&mut events, Enter, 6, 100);
        ev(&mut events, Exit, 6, 3_000 + r % 1_100);
        ev(&mut events, Exit, 2, 200);
        if events.len() >= EVENTS_PER_CHUNK {
            flush(&mut w, &mut events, &mut bytes);
        }
    }
    ev(&mut events, Exit, 1, 1000);
    flush(&mut w, &mut events, &mut bytes);
    bytes
}

fn get(addr: SocketAddr, path: &str) -> (Duration, usize, String) {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let took = t.elapsed();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{path}: {}",
        String::from_utf8_lossy(&out[..at])
    );
    let body = String::from_utf8_lossy(&out[at..]).into_owned();
    (took, out.len() - at, body)
}

fn main() {
    let requests = requests();
    let t = Instant::now();
    let bytes = recording(requests);
    let dir = std::env::temp_dir().join(format!("jscope-tree-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.jsc");
    std::fs::write(&file, &bytes).unwrap();
    println!(
        "recording: {} requests, {} calls, {:.1} MB, written in {:.2?}",
        requests,
        1 + 7 * requests,
        bytes.len() as f64 / 1e6,
        t.elapsed()
    );
    let server = jscope_collector::view(&file, "127.0.0.1:0").unwrap();
    let addr = server.http_addr().unwrap();
    let (_, _, jvms) = get(addr, "/api/jvms");
    let v: serde_json::Value = serde_json::from_str(&jvms).unwrap();
    let id = v[0]["id"].as_str().unwrap().to_string();
    let base = format!("/api/jvms/{id}/tree");
    let report = |what: &str, (took, size, _): (Duration, usize, String)| {
        println!(
            "{what:<44} {:>9.1} ms {:>12} bytes",
            took.as_secs_f64() * 1e3,
            size
        );
    };
    report("first request (builds the tree)", get(addr, &base));
    report("top-level calls again (cached)", get(addr, &base));
    let (took, size, body) = get(addr, &format!("{base}?node=0.0"));
    report(
        "children of App.main (first page of 500)",
        (took, size, body),
    );
    report(
        "children of one request",
        get(addr, &format!("{base}?node=0.1")),
    );
    report(
        "children of App.main (last page)",
        get(addr, &format!("{base}?node=0.0&offset={}", requests - 500)),
    );
    report(
        "find Db.exec (first 10,000 paths of all)",
        get(addr, &format!("{base}?find=Db.exec")),
    );
    report("find *.render", get(addr, &format!("{base}?find=*.render")));
    report("method table", get(addr, &format!("{base}?stats=1")));
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
