//! `remote` on real JVMs (each JDK testkit finds): a Beacon client calling a
//! termination server records one client record per call and the server one per
//! execution, with mirrored endpoints and equal per-connection sequence numbers;
//! `clockoffset=` shifts the recording's wall-clock anchor.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jscope_format::{Recording, RemoteCall, RemoteSide, ThreadId};
use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child, Java};

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/beacon/src"))
}

fn start(java: &Java, options: &str, args: &[&str], log: &Path) -> Child {
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!("-agentpath:{}={options}", agent_path().display()))
        .arg("-cp")
        .arg(classes())
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(log).unwrap()))
        .stderr(Stdio::piped());
    Child::spawn(&mut cmd)
}

fn wait_for(log: &Path, text: &str) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if std::fs::read_to_string(log).is_ok_and(|s| s.contains(text)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no {text:?} in {}", log.display());
}

fn side(rec: &Recording, s: RemoteSide) -> Vec<&RemoteCall> {
    rec.remote_calls.iter().filter(|c| c.side == s).collect()
}

#[test]
fn client_and_server_records_pair_by_connection_and_order() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("remote-{j}"));
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string();
        let (sf, cf) = (dir.join("server.jsc"), dir.join("client.jsc"));
        let (slog, clog) = (dir.join("server.log"), dir.join("client.log"));
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let mut server = start(
            &java,
            &format!("remote,quiet,clockoffset=5m,file={}", sf.display()),
            &["beacon.TerminationServer", &port],
            &slog,
        );
        wait_for(&slog, "ready");
        let mut client = start(
            &java,
            &format!("remote,quiet,trace=beacon.*,file={}", cf.display()),
            &["beacon.BeaconClient", &port, "3"],
            &clog,
        );
        for (c, name) in [(&mut client, "client"), (&mut server, "server")] {
            let status = c
                .wait_timeout(Duration::from_secs(120))
                .expect("the JVM exits");
            assert!(status.success(), "JDK {j} {name}: {status}");
        }
        let (c, s) = (
            Recording::read_file(&cf).unwrap(),
            Recording::read_file(&sf).unwrap(),
        );

        // The server's clock seems 5 minutes ahead: its wall-clock anchor is shifted.
        let shift = s.header.start_wall_ns as i64 - before;
        assert!(
            (shift - 300_000_000_000).abs() < 30_000_000_000,
            "JDK {j}: shift {shift}"
        );
        assert!((c.header.start_wall_ns as i64 - before).abs() < 30_000_000_000);

        let calls = side(&c, RemoteSide::Client);
        let methods: Vec<&str> = calls.iter().map(|r| c.string(r.method)).collect();
        assert_eq!(
            methods,
            [
                "remoteFoo(int,int)",
                "remoteFoo(int,int)",
                "remoteFoo(int,int)",
                "shutdown()"
            ],
            "JDK {j}"
        );
        let served: Vec<&RemoteCall> = side(&s, RemoteSide::Server)
            .into_iter()
            .filter(|r| s.string(r.object) == "beacon.TerminationServer")
            .collect();
        assert_eq!(served.len(), 4, "JDK {j}");
        for r in &calls {
            assert_eq!(c.string(r.remote_host), "127.0.0.1");
            // The object's own port (exported on an anonymous port), not the registry's.
            assert!(r.remote_port != 0 && r.local_port != 0);
            assert!(
                c.string(r.object).starts_with('['),
                "an ObjID: {}",
                c.string(r.object)
            );
            assert_ne!(r.method_hash, 0);
            let partner: Vec<&&RemoteCall> = served
                .iter()
                .filter(|x| {
                    s.string(x.remote_host) == c.string(r.local_host)
                        && x.remote_port == r.local_port
                        && s.string(x.local_host) == c.string(r.remote_host)
                        && x.local_port == r.remote_port
                        && x.conn_seq == r.conn_seq
                })
                .collect();
            assert_eq!(
                partner.len(),
                1,
                "JDK {j}: one server record for seq {}",
                r.conn_seq
            );
            assert!(partner[0].duration_ns <= r.duration_ns + 5_000_000);
            // The client record lies inside the traced proxy call on its thread.
            let threads: Vec<ThreadId> = c.traces.iter().map(|b| b.thread).collect();
            assert!(
                threads.contains(&r.thread),
                "JDK {j}: {} not in {threads:?} {:?}",
                r.thread,
                c.threads
            );
        }
        let mut seqs: Vec<u64> = calls.iter().map(|r| r.conn_seq).collect();
        seqs.dedup();
        assert_eq!(
            seqs.len(),
            calls.len(),
            "JDK {j}: calls on one connection count up"
        );
    }
}

#[test]
fn a_bad_clock_offset_is_refused_with_the_other_option_errors() {
    for java in javas() {
        let out = Command::new(&java.bin)
            .arg(format!(
                "-agentpath:{}=remote,clockoffset=soon",
                agent_path().display()
            ))
            .arg("-version")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("bad clockoffset \"soon\""),
            "JDK {}: {err}",
            java.major
        );
    }
}
