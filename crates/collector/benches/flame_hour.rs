//! The query target: a flame graph over one hour of 100 JVMs in under 1 s.
//!
//! Writes one hour of cpu samples for N JVMs through the `Store` trait into a fresh
//! data dir (as the ingest would: header, chunks, fsync), starts a collector over it
//! and times `GET /api/flame` for all JVMs merged over the hour, and for one JVM,
//! unfiltered and filtered by thread and state. Prints the summaries' size.
//!
//! cargo bench -p jscope-collector --bench flame_hour -- [--jvms 100] [--seconds 3600]
//!     [--rate 100] [--dir DIR] [--keep]
//! `--rate` is cpu samples per second per JVM (100 = one busy thread at 10 ms);
//! `--dir` reuses data generated before (with the same settings) and `--keep` keeps it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jscope_collector::{serve, ServerConfig};
use jscope_format::thread_state::{ALIVE, RUNNABLE};
use jscope_format::{
    decode_payload, encode_file_start, split_chunk, ChunkWriter, ClassDef, Frame, FrameKind,
    Header, MethodDef, Sample, SampleMode, Split, ThreadDef,
};
use jscope_format::{ClassId, MethodId, StackId, StringId, ThreadId};
use jscope_store::identity::{apply_dictionary, event_span, new_dictionary};
use jscope_store::{FileStore, JvmIdentity, Store};

/// Samples per chunk: agents flush about once a second; bigger chunks only make
/// generation faster, reading costs the same per sample.
const CHUNK_SECONDS: u64 = 10;
const METHODS: u32 = 400;
const STACKS: u32 = 300;
const DEPTH: usize = 24;
const THREADS: u32 = 8;

struct Args {
    jvms: u32,
    seconds: u64,
    rate: u64,
    dir: Option<PathBuf>,
    keep: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        jvms: 100,
        seconds: 3600,
        rate: 100,
        dir: None,
        keep: false,
    };
    let mut it = std::env::args().skip(1).filter(|x| x != "--bench");
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--keep" => a.keep = true,
            _ => {
                let v = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
                match flag.as_str() {
                    "--jvms" => a.jvms = v.parse().unwrap(),
                    "--seconds" => a.seconds = v.parse().unwrap(),
                    "--rate" => a.rate = v.parse().unwrap(),
                    "--dir" => a.dir = Some(PathBuf::from(v)),
                    other => panic!("unknown option {other}"),
                }
            }
        }
    }
    a
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A small deterministic generator, so every run writes the same data.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u32) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as u32
    }
}

fn header(pid: u32, start_wall_ns: u64) -> Header {
    Header {
        agent_version: "bench".into(),
        pid,
        host: "benchhost".into(),
        command_line: format!("com.bench.Service{pid}"),
        vm_name: "OpenJDK 64-Bit Server VM".into(),
        java_version: "17".into(),
        os: "Linux".into(),
        arch: "amd64".into(),
        start_wall_ns,
        start_ticks: 0,
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: 10_000_000,
        max_depth: 64,
        ..Header::default()
    }
}

/// Methods, stacks (shared prefixes, so the flame graph has structure) and threads.
fn declare(w: &mut ChunkWriter, rng: &mut Lcg) {
    w.string(StringId(1), "com.bench.Service");
    w.string(StringId(2), "Service.java");
    w.string(StringId(3), "()V");
    w.class(&ClassDef {
        id: ClassId(1),
        name: StringId(1),
        source_file: StringId(2),
    });
    for m in 1..=METHODS {
        w.string(StringId(10 + m), &format!("method{m}"));
        w.method(&MethodDef {
            id: MethodId(m),
            class: ClassId(1),
            name: StringId(10 + m),
            signature: StringId(3),
            modifiers: 1,
        });
    }
    for s in 0..STACKS {
        // Root-side frames come from a few methods, leaves from many.
        let depth = DEPTH / 2 + rng.next(DEPTH as u32 / 2) as usize;
        let frames: Vec<Frame> = (0..depth)
            .map(|d| {
                let spread = 2 + (d as u32 * METHODS) / DEPTH as u32;
                Frame {
                    method: MethodId(1 + rng.next(spread.min(METHODS))),
                    bci: 1,
                    line: 10 + d as u32,
                    kind: FrameKind::Compiled,
                }
            })
            .rev()
            .collect();
        w.stack(StackId(s + 1), &frames);
    }
    for t in 1..=THREADS {
        w.thread(&ThreadDef {
            id: ThreadId(t),
            java_id: 10 + t as i64,
            os_tid: 0,
            name: format!("worker-{t}"),
            group: "main".into(),
            parent: "system".into(),
            start_order: t,
            daemon: false,
        });
    }
}

/// Writes one JVM's hour through the store, as the ingest would.
fn write_jvm(store: &FileStore, pid: u32, start_wall_ns: u64, a: &Args) {
    let h = header(pid, start_wall_ns);
    let id = format!("benchhost-{pid}-{start_wall_ns}");
    let identity = JvmIdentity::from_header(&id, &h, "127.0.0.1", &[]);
    let mut dict = new_dictionary(&h);
    store
        .open(&identity, &encode_file_start(&h), 1, &dict)
        .unwrap();
    let mut rng = Lcg(pid as u64);
    let mut w = ChunkWriter::new();
    declare(&mut w, &mut rng);
    let per_chunk = a.rate * CHUNK_SECONDS;
    let step = 1_000_000_000 / a.rate.max(1);
    for (seq, chunk_start) in (0..a.seconds).step_by(CHUNK_SECONDS as usize).enumerate() {
        for i in 0..per_chunk {
            w.sample(&Sample {
                request: 0,
                thread: ThreadId(1 + rng.next(THREADS)),
                carrier: Default::default(),
                ticks: chunk_start * 1_000_000_000 + i * step,
                stack: StackId(1 + rng.next(STACKS).min(rng.next(STACKS))),
                mode: SampleMode::Cpu,
                weight_ns: step,
                state: ALIVE | RUNNABLE,
            });
        }
        let chunk = w.finish();
        let Ok(Split::Chunk(raw)) = split_chunk(&chunk, 0) else {
            panic!("a chunk")
        };
        let records = decode_payload(&raw.payload).unwrap();
        apply_dictionary(&mut dict, &records);
        let span = event_span(&identity, &records);
        store
            .append(&id, seq as u64 + 1, &chunk, span, &dict)
            .unwrap();
    }
    store.sync(&id).unwrap();
    store.close(&id).unwrap();
}

fn http_get(addr: SocketAddr, path: &str) -> (u16, usize) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    (status, out.len())
}

/// Where one JVM-hour's query time goes: reading (decompressing and decoding every
/// record), counting the selected samples, labelling the counted stacks.
fn phases(dir: &std::path::Path) {
    let store = FileStore::open_read_only(dir).unwrap();
    let id = store.jvms()[0].identity.id.clone();
    let t = Instant::now();
    let rec = store.read(&id, None, None).unwrap();
    let read = t.elapsed();
    let t = Instant::now();
    let sel = jscope_analysis::Selection::default();
    let counts = sel.stack_counts(&rec);
    let count = t.elapsed();
    let t = Instant::now();
    let collapsed = jscope_analysis::collapse(&rec, &counts, Default::default());
    let label = t.elapsed();
    println!(
        "one JVM-hour ({} samples, {} stacks): read {:.3} s, count {:.3} s, label {:.3} s",
        rec.samples.len(),
        collapsed.stacks.len(),
        read.as_secs_f64(),
        count.as_secs_f64(),
        label.as_secs_f64()
    );
}

/// Bytes of the summaries against those of the segments they summarise.
fn sizes(dir: &std::path::Path) {
    let (mut sums, mut segments) = (0u64, 0u64);
    for jvm in std::fs::read_dir(dir.join("jvms")).unwrap() {
        for f in std::fs::read_dir(jvm.unwrap().path()).unwrap() {
            let path = f.unwrap().path();
            let len = std::fs::metadata(&path).unwrap().len();
            match path.extension().and_then(|e| e.to_str()) {
                Some("sum") => sums += len,
                Some("jsc") if path.file_name().unwrap() != "header.jsc" => segments += len,
                _ => {}
            }
        }
    }
    println!(
        "summaries {:.1} MiB for {:.1} MiB of segments ({:.1}%)",
        sums as f64 / (1 << 20) as f64,
        segments as f64 / (1 << 20) as f64,
        sums as f64 * 100.0 / segments.max(1) as f64
    );
}

fn main() {
    let a = parse_args();
    let dir = a.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("jscope-flame-hour-{}", std::process::id()))
    });
    let reuse = a.dir.is_some() && dir.join("jvms").is_dir();
    // The hour ends now, so `last=1h` covers it.
    let start = now_ns() - a.seconds * 1_000_000_000;
    if !reuse {
        let t = Instant::now();
        let store = FileStore::open(&dir, 64 << 20, Duration::from_secs(3600)).unwrap();
        for j in 0..a.jvms {
            write_jvm(&store, 10_000 + j, start, &a);
        }
        let bytes: u64 = store.jvms().iter().map(|j| j.bytes()).sum();
        println!(
            "generated {} JVMs x {} s x {} samples/s = {} samples, {:.1} MiB stored, in {:.1} s",
            a.jvms,
            a.seconds,
            a.rate,
            a.jvms as u64 * a.seconds * a.rate,
            bytes as f64 / (1 << 20) as f64,
            t.elapsed().as_secs_f64()
        );
    }
    phases(&dir);
    sizes(&dir);
    // Opening the store rewrites summaries of an older version (data from before).
    let t = Instant::now();
    let server = serve(ServerConfig {
        agents: "127.0.0.1:0".into(),
        http: Some("127.0.0.1:0".into()),
        data: dir.clone(),
        ..ServerConfig::default()
    })
    .unwrap();
    println!("collector started in {:.1} s", t.elapsed().as_secs_f64());
    let http = server.http_addr().unwrap();
    let ids: Vec<String> = server
        .api()
        .store
        .jvms()
        .iter()
        .map(|j| j.identity.id.clone())
        .collect();
    let all = format!("/api/flame?last=2h&format=json&jvm={}", ids.join(","));
    let one = format!("/api/flame?last=2h&format=json&jvm={}", ids[0]);
    // The last 50 minutes: the range cuts into a bucket of every JVM.
    let cut = format!("/api/flame?last=50m&format=json&jvm={}", ids.join(","));
    // Filters: served from the summaries' per-thread, per-state counts.
    let jvms = ids.join(",");
    let thread = format!("/api/flame?last=2h&format=json&thread=worker-1&jvm={jvms}");
    let state = format!("/api/flame?last=2h&format=json&state=runnable&jvm={jvms}");
    let both_cut = format!(
        "/api/flame?last=50m&format=json&thread=worker-*&state=runnable&state=blocked&jvm={jvms}"
    );
    for (name, path) in [
        ("one JVM", &one),
        ("all JVMs merged", &all),
        ("all JVMs merged, last 50 min", &cut),
        ("all JVMs merged, thread filter", &thread),
        ("all JVMs merged, state filter", &state),
        (
            "all JVMs merged, last 50 min, thread glob and two states",
            &both_cut,
        ),
    ] {
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let (status, len) = http_get(http, path);
            assert_eq!(status, 200);
            times.push(t.elapsed().as_secs_f64());
            let _ = len;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "flame graph, {name}: best {:.3} s, median {:.3} s",
            times[0], times[1]
        );
    }
    server.shutdown();
    if !a.keep && a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
