//! Simulated agents that speak the real protocol with real recording chunks, and a
//! tiny HTTP client: shared by the collector's tests and the CLI's.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jscope_format::{
    encode_file_start, Frame, FrameKind, Header, Snapshot, SnapshotThread, StackId, ThreadDef,
    ThreadId,
};
use jscope_testkit::RecordingBuilder;
use jscope_wire::{ClientConfig, WireClient};

pub const SNAPSHOTS_PER_CHUNK: u64 = 4;
pub const THREADS: u32 = 3;
const TICK_NS: u64 = 100_000_000;

/// A simulated JVM in snapshot mode: 3 threads; its methods are named after its pid so
/// each JVM's data is recognisable in merged views.
pub struct SimJvm {
    pub header: Header,
    pub stream: String,
    /// The chunks' records: the dictionaries once, then snapshots.
    recording: Option<RecordingBuilder>,
    stacks: [StackId; 2],
    chunks_made: u64,
}

pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

impl SimJvm {
    pub fn new(pid: u32, command: &str) -> SimJvm {
        let header = Header {
            agent_version: "0.1.0-test".into(),
            pid,
            host: "testhost".into(),
            command_line: command.into(),
            vm_name: "OpenJDK 64-Bit Server VM".into(),
            vm_version: "17.0.9".into(),
            vm_vendor: "Test".into(),
            java_version: "17".into(),
            os: "Linux".into(),
            arch: "amd64".into(),
            start_wall_ns: now_ns(),
            start_ticks: 1_000,
            ticks_per_second: 1_000_000_000,
            modes: "snapshot".into(),
            interval_ns: TICK_NS,
            max_depth: 64,
            extra: vec![],
        };
        let stream = format!("testhost-{pid}-{}", header.start_wall_ns);
        SimJvm {
            header,
            stream,
            recording: None,
            stacks: [StackId::NONE; 2],
            chunks_made: 0,
        }
    }

    pub fn class_name(&self) -> String {
        format!("com.acme.App{}", self.header.pid)
    }

    pub fn header_bytes(&self) -> Vec<u8> {
        encode_file_start(&self.header)
    }

    /// The dictionaries: `main` and `work` of the JVM's class on two stacks, and
    /// its threads.
    fn declare(&mut self) -> RecordingBuilder {
        let mut b = RecordingBuilder::with_header(self.header.clone());
        let class = b.class_in_file(&self.class_name(), "App.java");
        let main = b.method_of(class, "main", "()V", 9);
        let work = b.method_of(class, "work", "()V", 1);
        let frame = |method, line| Frame {
            method,
            bci: 3,
            line,
            kind: FrameKind::Interpreted,
        };
        self.stacks = [
            b.stack_of(&[frame(work, 42), frame(main, 7)]),
            b.stack_of(&[frame(main, 9)]),
        ];
        for t in 1..=THREADS {
            b.thread_def(ThreadDef {
                id: ThreadId(t),
                java_id: 10 + t as i64,
                os_tid: 0,
                name: if t == 1 {
                    "main".into()
                } else {
                    format!("worker-{t}")
                },
                group: "main".into(),
                parent: "system".into(),
                start_order: t,
                daemon: false,
            });
        }
        b
    }

    /// Chunk number `n` (from 1): the first also declares the dictionaries.
    pub fn chunk(&mut self) -> Vec<u8> {
        self.chunk_with_counters(&[])
    }

    /// [`SimJvm::chunk`] also carrying the agent's own counters, as a real agent
    /// writes them into every chunk.
    pub fn chunk_with_counters(&mut self, counters: &[(&str, u64)]) -> Vec<u8> {
        self.chunks_made += 1;
        let mut b = match self.recording.take() {
            Some(b) => b,
            None => self.declare(),
        };
        for i in 0..SNAPSHOTS_PER_CHUNK {
            let k = (self.chunks_made - 1) * SNAPSHOTS_PER_CHUNK + i;
            let threads = (1..=THREADS)
                .map(|t| SnapshotThread {
                    thread: ThreadId(t),
                    carrier: Default::default(),
                    state: if t == 1 { 0x5 } else { 0x191 },
                    stack: self.stacks[usize::from(t != 1)],
                })
                .collect();
            b.raw_snapshot(&Snapshot {
                ticks: self.header.start_ticks + k * TICK_NS,
                interval_ns: TICK_NS,
                threads,
            });
        }
        if !counters.is_empty() {
            b.counters(counters);
        }
        let chunk = b.take_chunk();
        self.recording = Some(b);
        chunk
    }

    pub fn connect(&self, addr: SocketAddr, next_seq: u64) -> WireClient {
        let cfg = ClientConfig::new(addr.to_string(), self.stream.clone());
        WireClient::connect(&cfg, &self.header_bytes(), next_seq).expect("collector accepts")
    }
}

/// GET `path`; returns the status and the body.
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("http connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

pub fn get_json(addr: SocketAddr, path: &str) -> serde_json::Value {
    let (status, body) = http_get(addr, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// POSTs `body` to `path`; returns the status and the body.
pub fn http_post(addr: SocketAddr, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("http connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}
