//! The agent's `collector=HOST:PORT` transport against a small collector that runs
//! in the test process: it speaks the real protocol (jscope_wire's read_message and
//! write_message), keeps every chunk it receives by sequence number and acknowledges
//! it. Real JVMs (each JDK jscope_testkit::javas() finds) run fixtures compiled during
//! the test run; what the collector received is decoded with jscope_format.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jscope_format::{split_chunk, ChunkKind, Recording, Split, MAGIC};
use jscope_format::{MethodId, StackId, ThreadId};
use jscope_testkit::{
    compile_fixtures, java_with_agent, javas, jcmd, jcmd_agent_load, temp_dir, wait_until, Child,
    Java,
};
use jscope_wire::{
    read_message, read_preamble, stream_id_for, write_message, Accept, Hello, Message, RefuseCode,
    DEFAULT_MAX_FRAME,
};

const JVM_LIMIT: Duration = Duration::from_secs(60);

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// What the test collector has received.
#[derive(Default)]
struct Received {
    hellos: Vec<Hello>,
    chunks: BTreeMap<u64, Vec<u8>>,
    byes: usize,
}

/// A minimal collector: accepts agents, checks the token, stores and (unless
/// mute) acknowledges chunks. Stops accepting when dropped.
struct TestCollector {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    stop: Arc<AtomicBool>,
}

/// The tests of this file run one at a time: each times a JVM against its
/// collector (backoff, buffer filling, samples per second), which several JVMs
/// competing for two cores would skew.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// How the test collector treats an agent.
#[derive(Clone)]
struct Policy {
    token: String,
    /// False for a collector that takes chunks and never acknowledges them.
    acks: bool,
}

impl TestCollector {
    fn start(token: &str) -> TestCollector {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap(), token)
    }

    fn on(listener: TcpListener, token: &str) -> TestCollector {
        let policy = Policy {
            token: token.to_string(),
            acks: true,
        };
        Self::with(listener, policy)
    }

    fn with(listener: TcpListener, policy: Policy) -> TestCollector {
        let collector = TestCollector {
            addr: listener.local_addr().unwrap(),
            received: Arc::default(),
            stop: Arc::default(),
        };
        listener.set_nonblocking(true).unwrap();
        let (received, stop) = (collector.received.clone(), collector.stop.clone());
        std::thread::spawn(move || accept_loop(listener, policy, received, stop));
        collector
    }

    fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// The stream as a recording file would hold it: the hello's header bytes, then
    /// every chunk in sequence order. Also checks the sequence has no gap.
    fn stream_bytes(&self) -> Vec<u8> {
        let r = self.received.lock().unwrap();
        let hello = r.hellos.first().expect("the agent said hello");
        let seqs: Vec<u64> = r.chunks.keys().copied().collect();
        let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "chunks numbered from 1 without gaps");
        let mut bytes = hello.header.clone();
        for chunk in r.chunks.values() {
            bytes.extend_from_slice(chunk);
        }
        bytes
    }

    fn recording(&self) -> Recording {
        let rec = Recording::from_bytes(&self.stream_bytes()).expect("the stream decodes");
        assert!(rec.damage.is_none(), "damaged stream: {:?}", rec.damage);
        rec
    }

    fn hello(&self) -> Hello {
        self.received.lock().unwrap().hellos[0].clone()
    }
}

impl Drop for TestCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

fn accept_loop(
    listener: TcpListener,
    policy: Policy,
    received: Arc<Mutex<Received>>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((socket, _)) => {
                let (received, policy) = (received.clone(), policy.clone());
                std::thread::spawn(move || {
                    let _ = serve(socket, &policy, &received);
                });
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// One agent connection: handshake, then chunks until bye or hang-up.
fn serve(
    socket: TcpStream,
    policy: &Policy,
    received: &Mutex<Received>,
) -> Result<(), jscope_wire::WireError> {
    socket.set_nonblocking(false)?;
    let mut reader = BufReader::new(socket.try_clone()?);
    let mut writer = BufWriter::new(socket);
    read_preamble(&mut reader)?;
    let Message::Hello(hello) = read_message(&mut reader, DEFAULT_MAX_FRAME)? else {
        return Ok(());
    };
    if hello.token != policy.token {
        let refuse = Message::Refuse {
            code: RefuseCode::BadToken,
            message: "wrong token".into(),
        };
        write_message(&mut writer, &refuse)?;
        writer.flush()?;
        return Ok(());
    }
    let acked = {
        let mut r = received.lock().unwrap();
        r.hellos.push(hello);
        r.chunks.keys().last().copied().unwrap_or(0)
    };
    let accept = Message::Accept(Accept {
        acked,
        max_frame: DEFAULT_MAX_FRAME,
        server: "agent-test-collector".into(),
    });
    write_message(&mut writer, &accept)?;
    writer.flush()?;
    loop {
        let ack = match read_message(&mut reader, DEFAULT_MAX_FRAME)? {
            Message::Chunk { seq, chunk } => {
                received.lock().unwrap().chunks.entry(seq).or_insert(chunk);
                seq
            }
            Message::Bye => {
                let mut r = received.lock().unwrap();
                r.byes += 1;
                r.chunks.keys().last().copied().unwrap_or(0)
            }
            _ => return Ok(()),
        };
        if policy.acks {
            write_message(&mut writer, &Message::Ack { seq: ack })?;
            writer.flush()?;
        }
    }
}

/// `java -agentpath:AGENT=OPTIONS -cp CLASSES MAIN ARGS...` in `dir`, not yet waited for.
fn start_jvm(java: &Java, options: &str, dir: &Path, main: &str, args: &[&str]) -> Child {
    let mut cmd = java_with_agent(java, options, &classes(), main, args);
    cmd.current_dir(dir);
    Child::spawn(&mut cmd)
}

/// User and system CPU time of process `pid`, in ms (0 once it is gone).
fn process_cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let field = |i: usize| -> u64 {
        rest.split_whitespace()
            .nth(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    // utime and stime are the 14th and 15th fields, the 12th and 13th after it.
    (field(11) + field(12)) * 1000 / ticks
}

fn agent_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("jscope: "))
        .map(str::to_string)
        .collect()
}

fn assert_ran(java: &Java, out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "JDK {}: the fixture failed: {stderr}",
        java.major
    );
    assert!(
        !stderr.contains("WARNING"),
        "JDK {}: -Xcheck:jni complained: {stderr}",
        java.major
    );
}

fn thread_name(rec: &Recording, id: u32) -> &str {
    rec.thread(ThreadId(id)).map_or("", |t| t.name.as_str())
}

/// Every sample and snapshot refers only to threads, stacks and methods the
/// recording defines: nothing was orphaned by a lost chunk.
fn assert_no_orphans(rec: &Recording) {
    let defined_stack = |id: u32| rec.stacks.get(id as usize).is_some_and(Option::is_some);
    let snapshot_refs = rec
        .snapshots
        .iter()
        .flat_map(|s| &s.threads)
        .map(|t| (t.thread, t.stack));
    let refs: Vec<(ThreadId, StackId)> = rec
        .samples
        .iter()
        .map(|s| (s.thread, s.stack))
        .chain(snapshot_refs)
        .collect();
    for (thread, stack) in refs {
        assert!(rec.thread(thread).is_some(), "thread {thread} undefined");
        assert!(defined_stack(stack.0), "stack {stack} undefined");
        for f in rec.stack(stack) {
            assert!(
                f.method == MethodId::NONE || rec.method(f.method).is_some(),
                "method {} undefined",
                f.method
            );
        }
    }
}

/// A recording file without its summary chunks, which only files get.
fn without_summaries(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes[..MAGIC.len()].to_vec();
    let mut pos = MAGIC.len();
    while pos < bytes.len() {
        let Ok(Split::Chunk(c)) = split_chunk(&bytes[pos..], pos as u64) else {
            out.extend_from_slice(&bytes[pos..]);
            break;
        };
        if c.kind != ChunkKind::Summary as u8 {
            out.extend_from_slice(&bytes[pos..pos + c.stored_len]);
        }
        pos += c.stored_len;
    }
    out
}

#[test]
fn the_stream_carries_exactly_the_file_with_identity_token_and_labels() {
    let _serial = serial();
    for java in javas() {
        let collector = TestCollector::start("sesame");
        let dir = temp_dir(&format!("stream-{}", java.major));
        let file = dir.join("both.jsc");
        let options = format!(
            "mode=cpu+wall,interval=5ms,collector={},token=sesame,labels=app:fixture;run:1,file={}",
            collector.addr(),
            file.display()
        );
        let jvm = start_jvm(&java, &options, &dir, "SleepAndSpin", &["1500"]);
        let pid = jvm.id();
        let out = jvm.finish(JVM_LIMIT);
        assert_ran(&java, &out);

        // The file has a summary chunk before each data chunk; the stream has
        // the rest, byte for byte.
        let file_bytes = without_summaries(&std::fs::read(&file).unwrap());
        let stream = collector.stream_bytes();
        assert!(
            stream == file_bytes,
            "JDK {}: the stream ({} bytes) differs from the file ({} bytes)",
            java.major,
            stream.len(),
            file_bytes.len()
        );
        let rec = collector.recording();
        assert!(
            rec.end_ticks.is_some(),
            "the final chunk reached the collector"
        );
        assert_eq!(rec.header.pid, pid);
        assert!(rec.header.java_version.starts_with(&java.major.to_string()));
        assert!(rec.header.command_line.contains("SleepAndSpin"));
        assert!(!rec.header.host.is_empty() && !rec.header.os.is_empty());
        let addresses = rec.header.extra("addresses").expect("the host's addresses");
        assert_eq!(addresses, jscope_agent::header::host_addresses().join(" "));
        assert_eq!(
            rec.header.extra("collector"),
            Some(collector.addr().as_str())
        );
        let spinner = rec
            .samples
            .iter()
            .filter(|s| thread_name(&rec, s.thread.0) == "spinner")
            .count();
        assert!(
            spinner >= 30,
            "JDK {}: {spinner} spinner samples",
            java.major
        );
        assert_eq!(rec.counters["collector.chunks_dropped"], 0);
        assert!(rec.counters["collector.chunks_acked"] >= 1);

        let hello = collector.hello();
        assert_eq!(hello.token, "sesame");
        assert_eq!(hello.stream, stream_id_for(&rec.header));
        assert_eq!(hello.next_seq, 1);
        let labels: Vec<(&str, &str)> = hello
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(labels, [("app", "fixture"), ("run", "1")]);
        assert_eq!(
            collector.received.lock().unwrap().byes,
            1,
            "a clean goodbye"
        );
    }
}

#[test]
fn a_collector_alone_gets_the_recording_and_no_file_is_written() {
    let _serial = serial();
    for java in javas() {
        let collector = TestCollector::start("");
        let dir = temp_dir(&format!("nofile-{}", java.major));
        let options = format!("mode=cpu,collector={}", collector.addr());
        let out = start_jvm(&java, &options, &dir, "Spin", &["1000"]).finish(JVM_LIMIT);
        assert_ran(&java, &out);
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(files.is_empty(), "JDK {}: wrote {files:?}", java.major);
        assert_eq!(
            agent_lines(&out),
            [format!(
                "jscope: recording cpu to collector {}",
                collector.addr()
            )]
        );
        let rec = collector.recording();
        assert!(rec.end_ticks.is_some());
        assert_eq!(rec.header.extra("file"), Some(""));
        assert!(
            rec.samples.len() >= 30,
            "JDK {}: {} samples",
            java.major,
            rec.samples.len()
        );
    }
}

#[test]
fn a_jvm_started_before_its_collector_delivers_everything_once_it_comes_up() {
    let _serial = serial();
    for java in javas() {
        // A port nobody listens on yet.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = temp_dir(&format!("late-{}", java.major));
        let options = format!("mode=cpu+snapshot,interval=5ms,collector=127.0.0.1:{port}");
        let jvm = start_jvm(&java, &options, &dir, "SleepAndSpin", &["4000"]);
        // The collector comes up once the JVM has used 1.5 s of CPU, a good part
        // of it spinning under the 5 ms sampler (after a fixed 2 s, a JVM starting
        // slowly on a busy machine had taken 19 samples).
        assert!(
            wait_until(Duration::from_secs(60), || process_cpu_ms(jvm.id()) >= 1500),
            "JDK {}: the JVM ran",
            java.major
        );
        let collector = TestCollector::on(TcpListener::bind(("127.0.0.1", port)).unwrap(), "");
        let up_wall_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let out = jvm.finish(JVM_LIMIT);
        assert_ran(&java, &out);
        let lines = agent_lines(&out);
        assert_eq!(lines.len(), 2, "JDK {}: {lines:?}", java.major);
        // The sender's line and the start line come from two threads, in either order.
        assert!(
            lines
                .iter()
                .any(|l| l.to_lowercase().contains("connection refused") && l.contains("retrying")),
            "one line says the collector is away: {lines:?}"
        );

        let rec = collector.recording();
        assert!(rec.end_ticks.is_some());
        assert_eq!(rec.counters["collector.chunks_dropped"], 0);
        assert_eq!(rec.counters["collector.reconnects"], 0, "one connection");
        // Samples taken before the collector was listening (wall clock), however
        // long the JVM took to start.
        let away = rec
            .samples
            .iter()
            .filter(|s| rec.header.start_wall_ns + rec.ticks_to_ns(s.ticks) < up_wall_ns)
            .count();
        assert!(
            away >= 20,
            "JDK {}: {away} samples from before the collector came up, buffered while it was away",
            java.major
        );
        assert!(rec.snapshots.len() >= 30);
    }
}

/// How long a short JVM run takes with `options` (plus a file).
fn time_exit(java: &Java, options: &str) -> (Duration, Output, Recording) {
    let dir = temp_dir(&format!("exit-{}", java.major));
    let file = dir.join("exit.jsc");
    let options = format!("{options}mode=cpu+wall,file={}", file.display());
    let started = Instant::now();
    let out = start_jvm(java, &options, &dir, "ExitCode", &[]).finish(JVM_LIMIT);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(3), "the fixture's own exit code");
    let rec = Recording::read_file(&file).unwrap();
    assert!(rec.end_ticks.is_some(), "the file is complete");
    (took, out, rec)
}

#[test]
fn an_absent_silent_or_mute_collector_does_not_hold_the_jvm_exit() {
    let _serial = serial();
    for java in javas() {
        let (baseline, _, _) = time_exit(&java, "");
        // Accepts connections into its backlog and never answers a hello.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let absent_port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Takes the stream and never acknowledges a chunk.
        let mute = TestCollector::with(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            Policy {
                token: String::new(),
                acks: false,
            },
        );
        // The agent waits up to 0.5 s for a sender still connecting and up to
        // 2.5 s for one connected and waiting for acknowledgements.
        let cases = [
            ("silent", silent.local_addr().unwrap().to_string(), 1500),
            ("absent", format!("127.0.0.1:{absent_port}"), 1500),
            ("mute", mute.addr(), 3000),
        ];
        for (what, addr, limit_ms) in cases {
            let (took, out, rec) = time_exit(&java, &format!("collector={addr},"));
            assert!(
                took < baseline + Duration::from_millis(limit_ms),
                "JDK {}: a {what} collector held the exit: {took:?} against {baseline:?} without",
                java.major
            );
            let lines = agent_lines(&out);
            assert!(lines.len() <= 2, "JDK {} {what}: {lines:?}", java.major);
            assert_eq!(rec.counters["collector.chunks_acked"], 0);
        }
        assert!(
            mute.recording().end_ticks.is_some(),
            "the mute collector got every chunk, the last one too"
        );
    }
}

#[test]
fn a_refused_token_is_reported_once_and_the_file_still_completes() {
    let _serial = serial();
    for java in javas() {
        let collector = TestCollector::start("right");
        let dir = temp_dir(&format!("refused-{}", java.major));
        let file = dir.join("r.jsc");
        let options = format!(
            "quiet,mode=cpu,collector={},token=wrong,file={}",
            collector.addr(),
            file.display()
        );
        let out = start_jvm(&java, &options, &dir, "Spin", &["1500"]).finish(JVM_LIMIT);
        assert_ran(&java, &out);
        let lines = agent_lines(&out);
        assert_eq!(lines.len(), 1, "JDK {}: {lines:?}", java.major);
        assert!(
            lines[0].contains("refused") && lines[0].contains("wrong token"),
            "{lines:?}"
        );
        let rec = Recording::read_file(&file).unwrap();
        assert!(rec.end_ticks.is_some() && rec.samples.len() >= 30);
        assert_eq!(rec.counters["collector.chunks_acked"], 0);
        assert!(collector.received.lock().unwrap().chunks.is_empty());
    }
}

#[test]
fn a_full_buffer_drops_whole_chunks_and_a_resync_keeps_the_rest_readable() {
    let _serial = serial();
    for java in javas() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = temp_dir(&format!("drops-{}", java.major));
        let file = dir.join("all.jsc");
        // cpu samples make chunks of 1 to 2 KiB a second, so a 4 KiB buffer is
        // full after about three seconds (Java-only stacks, cstack=no: mixed
        // stacks of every thread make chunks larger than the whole buffer). TwoPhases.second starts at 4.5 s, while
        // the collector is still away (it comes up at 5.5 s and the agent's backoff
        // reaches it at about 6.5 s): the chunk that first declares second() and
        // its stacks is dropped, and later chunks use them again.
        let options = format!(
            "quiet,mode=cpu,interval=1ms,cstack=no,buffer=4k,collector=127.0.0.1:{port},file={}",
            file.display()
        );
        let jvm = start_jvm(&java, &options, &dir, "TwoPhases", &["4500", "5500"]);
        std::thread::sleep(Duration::from_millis(5500));
        let collector = TestCollector::on(TcpListener::bind(("127.0.0.1", port)).unwrap(), "");
        let out = jvm.finish(JVM_LIMIT);
        assert_ran(&java, &out);

        let rec = collector.recording();
        let full = Recording::read_file(&file).unwrap();
        assert!(rec.end_ticks.is_some() && full.end_ticks.is_some());
        // A loaded machine gives the JVM less CPU, so fewer and smaller chunks: one
        // dropped chunk is then all it takes, and it forces the resync all the same.
        assert!(
            rec.counters["collector.chunks_dropped"] >= 1,
            "JDK {}: {:?}",
            java.major,
            rec.counters
        );
        assert!(rec.counters["collector.resyncs"] >= 1);
        assert_no_orphans(&rec);
        let late = |r: &Recording| -> Vec<(u64, String)> {
            r.samples
                .iter()
                .filter(|s| r.ticks_to_ns(s.ticks) > 8_000_000_000)
                .map(|s| {
                    let frames = r.stack(s.stack).iter().map(|f| r.frame_label(f));
                    (s.ticks, frames.collect::<Vec<_>>().join(";"))
                })
                .collect()
        };
        let (streamed, written) = (late(&rec), late(&full));
        assert!(
            streamed.len() >= 100 && streamed == written,
            "JDK {}: after the resync the stream has the file's samples, frames resolved ({} against {})",
            java.major,
            streamed.len(),
            written.len()
        );
        // Late samples are the second phase's, frames resolved through the resync's
        // dictionary; a stray sample of the JVM's own shutdown may land among them.
        let second = streamed
            .iter()
            .filter(|(_, stack)| stack.contains("TwoPhases.second"))
            .count();
        assert!(
            second * 10 >= streamed.len() * 9,
            "JDK {}: {second} of {} late samples in second()",
            java.major,
            streamed.len()
        );
        assert!(
            rec.samples.len() < full.samples.len(),
            "the file keeps what the stream lost"
        );
    }
}

/// Names of the threads of process `pid`, from /proc.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|n| n.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn attach_streams_until_stop_and_the_agent_threads_leave() {
    let _serial = serial();
    let javas: Vec<Java> = javas().into_iter().filter(|j| jcmd(j).is_some()).collect();
    assert!(!javas.is_empty(), "no JDK with jcmd found");
    for java in javas {
        let collector = TestCollector::start("");
        let dir = temp_dir(&format!("attach-stream-{}", java.major));
        let mut cmd = Command::new(&java.bin);
        cmd.current_dir(&dir)
            .args(["-XX:+EnableDynamicAgentLoading", "-cp"])
            .arg(classes())
            .args(["SleepAndSpin", "30000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut jvm = Child::spawn(&mut cmd);
        std::thread::sleep(Duration::from_millis(700));
        let options = format!("mode=cpu+wall,collector={}", collector.addr());
        let started = jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), &options);
        assert!(
            started.contains("return code: 0"),
            "JDK {}: {started}",
            java.major
        );
        std::thread::sleep(Duration::from_millis(1500));
        let running = thread_names(jvm.id());
        for name in ["jscope-sender", "jscope-wall", "jscope-writer"] {
            assert!(running.iter().any(|n| n == name), "{name} in {running:?}");
        }
        let stopped = jcmd_agent_load(&jcmd(&java).unwrap(), jvm.id(), "stop");
        assert!(
            stopped.contains("return code: 0"),
            "JDK {}: {stopped}",
            java.major
        );

        let rec = collector.recording();
        assert!(rec.end_ticks.is_some(), "stop delivers the last chunk");
        assert_eq!(rec.header.extra("started_by"), Some("attach"));
        assert_eq!(rec.header.pid, jvm.id());
        let sleeping = rec
            .samples
            .iter()
            .filter(|s| thread_name(&rec, s.thread.0) == "sleeper")
            .filter(|s| {
                jscope_format::thread_state::classify(s.state)
                    == jscope_format::StateClass::Sleeping
            })
            .count();
        assert!(
            sleeping >= 10,
            "JDK {}: {sleeping} sleeping wall samples of a thread that predates the attach",
            java.major
        );
        let gone = jscope_testkit::wait_until(Duration::from_secs(2), || {
            let names = thread_names(jvm.id());
            !names.iter().any(|n| n.starts_with("jscope-"))
        });
        assert!(gone, "agent threads left: {:?}", thread_names(jvm.id()));
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "no file without file="
        );
        assert!(
            jvm.wait_timeout(Duration::from_millis(50)).is_none(),
            "the JVM runs on"
        );
    }
}
