//! `remote` for HTTP on real JVMs (each JDK testkit finds): an `HttpURLConnection`
//! client calling a `com.sun.net.httpserver` server. The client puts a W3C
//! `traceparent` on the wire and records it, the server records the one it got,
//! endpoints mirror and per-connection sequence numbers agree; a header the
//! application set is kept; peers without the agent work as before. The same for
//! `java.net.http.HttpClient` (`send` and `sendAsync`) against that server.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jscope_format::StringId;
use jscope_format::{Recording, RemoteCall, RemoteProtocol, RemoteSide};
use jscope_testkit::{
    agent_path, compile_fixtures, compile_fixtures_release, java11, javas, temp_dir, Child, Java,
};

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http_fixtures"))
}

fn free_port() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string()
}

/// Starts a JVM, with the agent when `options` is given.
fn start(java: &Java, options: Option<&str>, args: &[&str], log: &Path) -> Child {
    start_with(java, options, &classes(), args, log)
}

/// [`start`] with the classes in `cp`.
fn start_with(java: &Java, options: Option<&str>, cp: &Path, args: &[&str], log: &Path) -> Child {
    let mut cmd = Command::new(&java.bin);
    if let Some(o) = options {
        cmd.arg(format!("-agentpath:{}={o}", agent_path().display()));
    }
    cmd.arg("-cp")
        .arg(cp)
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(log).unwrap()))
        .stderr(Stdio::inherit());
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

/// A JVM's agent options (none: no agent), arguments and stdout log.
type Side<'a> = (Option<&'a str>, &'a [&'a str], &'a Path);

/// Runs a server JVM (until it says `ready`) and then a client JVM against it,
/// and waits for both to exit successfully.
fn exchange(java: &Java, server: Side, client: Side) {
    let mut s = start(java, server.0, server.1, server.2);
    wait_for(server.2, "ready");
    let mut c = start(java, client.0, client.1, client.2);
    finish(java, &mut [(&mut c, "client"), (&mut s, "server")]);
}

fn finish(java: &Java, children: &mut [(&mut Child, &str)]) {
    for (c, name) in children.iter_mut() {
        let status = c
            .wait_timeout(Duration::from_secs(120))
            .expect("the JVM exits");
        assert!(status.success(), "JDK {} {name}: {status}", java.major);
    }
}

fn http(rec: &Recording, s: RemoteSide) -> Vec<&RemoteCall> {
    rec.remote_calls
        .iter()
        .filter(|c| c.side == s && c.protocol == RemoteProtocol::Http)
        .collect()
}

/// The traceparents the server's handler saw, in order (`served id=N traceparent=T`).
fn seen(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| l.split(" traceparent=").nth(1))
        .map(str::to_string)
        .collect()
}

fn is_traceparent(t: &str) -> bool {
    let p: Vec<&str> = t.split('-').collect();
    p.len() == 4
        && p[0] == "00"
        && p[1].len() == 32
        && p[2].len() == 16
        && p[1..3]
            .iter()
            .all(|x| x.bytes().all(|b| b.is_ascii_hexdigit()) && x.bytes().any(|b| b != b'0'))
}

#[test]
fn client_and_server_records_carry_the_traceparent_sent_on_the_wire() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("http-{j}"));
        let port = free_port();
        let (sf, cf) = (dir.join("server.jsc"), dir.join("client.jsc"));
        let (slog, clog) = (dir.join("server.log"), dir.join("client.log"));
        let so = format!("remote=http,quiet,trace=httpchain.*,file={}", sf.display());
        let co = format!("remote,quiet,trace=httpchain.*,file={}", cf.display());
        exchange(
            &java,
            (Some(&so), &["httpchain.Server", "B", &port, "3"], &slog),
            (Some(&co), &["httpchain.Client", &port, "3"], &clog),
        );
        assert_eq!(
            std::fs::read_to_string(&clog).unwrap(),
            "request 1: B(0)\nrequest 2: B(0)\nrequest 3: B(0)\n"
        );
        let (c, s) = (
            Recording::read_file(&cf).unwrap(),
            Recording::read_file(&sf).unwrap(),
        );
        let (calls, served) = (http(&c, RemoteSide::Client), http(&s, RemoteSide::Server));
        assert_eq!((calls.len(), served.len()), (3, 3), "JDK {j}");
        // Captured by calls inserted into the methods, no breakpoint: the
        // server's handle and sendResponseHeaders, the client's
        // HttpURLConnection.writeRequests, HttpClient's two writeRequests and
        // parseHTTP (every test JDK has the same four).
        let how = |r: &Recording| {
            let n = |k: &str| r.counters.get(k).copied();
            (
                n("remote.methods_inserted"),
                n("remote.methods_breakpointed"),
            )
        };
        assert_eq!(how(&s), (Some(2), Some(0)), "JDK {j}: server");
        assert_eq!(how(&c), (Some(4), Some(0)), "JDK {j}: client");
        let wire = seen(&slog);
        assert_eq!(wire.len(), 3, "JDK {j}: {wire:?}");
        for (k, (r, x)) in calls.iter().zip(&served).enumerate() {
            let id = c.string(r.request_id);
            assert!(is_traceparent(id), "JDK {j}: {id:?}");
            // What the client recorded is what the handler received, and the server's record.
            assert_eq!(wire[k], id, "JDK {j}");
            assert_eq!(s.string(x.request_id), id, "JDK {j}");
            assert_eq!((c.string(r.object), c.string(r.method)), ("/hop", "GET"));
            assert_eq!((s.string(x.object), s.string(x.method)), ("/hop", "GET"));
            assert_eq!(c.string(r.remote_host), "127.0.0.1");
            assert_eq!(r.remote_port.to_string(), port);
            assert_eq!(
                (s.string(x.remote_host), x.remote_port),
                (c.string(r.local_host), r.local_port),
                "JDK {j}: mirrored endpoints"
            );
            assert_eq!(x.local_port, r.remote_port);
            // One kept-alive connection: the calls are its 1st, 2nd and 3rd.
            assert_eq!((r.conn_seq, x.conn_seq), (k as u64 + 1, k as u64 + 1));
            assert!(
                r.duration_ns > 0 && x.duration_ns <= r.duration_ns,
                "JDK {j}"
            );
            assert!(!r.failed && !x.failed);
        }
        // Every request is its own trace with its own span.
        let ids: std::collections::HashSet<&str> = wire.iter().map(|w| &w[3..35]).collect();
        assert_eq!(ids.len(), 3, "JDK {j}");
    }
}

#[test]
fn an_application_traceparent_is_kept_and_peers_without_the_agent_work() {
    let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("http-peers-{j}"));
        // A client with the agent, a server without it; the application sets its own header.
        let port = free_port();
        let (cf, slog, clog) = (
            dir.join("client.jsc"),
            dir.join("plain-server.log"),
            dir.join("client.log"),
        );
        let co = format!("remote=http,quiet,file={}", cf.display());
        exchange(
            &java,
            (None, &["httpchain.Server", "P", &port, "2"], &slog),
            (Some(&co), &["httpchain.Client", &port, "2", own], &clog),
        );
        assert_eq!(
            std::fs::read_to_string(&clog).unwrap(),
            "request 1: P(0)\nrequest 2: P(0)\n"
        );
        assert_eq!(
            seen(&slog),
            [own, own],
            "JDK {j}: the application's header, once"
        );
        let c = Recording::read_file(&cf).unwrap();
        let calls = http(&c, RemoteSide::Client);
        assert_eq!(calls.len(), 2, "JDK {j}");
        assert!(calls.iter().all(|r| c.string(r.request_id) == own));

        // A client without the agent, a server with it: recorded with no request id.
        let port = free_port();
        let (sf, slog, clog) = (
            dir.join("server.jsc"),
            dir.join("server.log"),
            dir.join("plain-client.log"),
        );
        let so = format!("remote,quiet,file={}", sf.display());
        exchange(
            &java,
            (Some(&so), &["httpchain.Server", "S", &port, "1"], &slog),
            (None, &["httpchain.Client", &port, "1"], &clog),
        );
        assert_eq!(std::fs::read_to_string(&clog).unwrap(), "request 1: S(0)\n");
        assert_eq!(seen(&slog), ["null"], "JDK {j}: nothing added on the way");
        let s = Recording::read_file(&sf).unwrap();
        let served = http(&s, RemoteSide::Server);
        assert_eq!(served.len(), 1, "JDK {j}");
        assert_eq!(served[0].request_id, StringId::NONE);
        assert_eq!(s.string(served[0].object), "/hop");
    }
}

#[test]
fn a_server_error_marks_both_records_failed() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("http-fail-{j}"));
        let port = free_port();
        let (sf, cf) = (dir.join("server.jsc"), dir.join("client.jsc"));
        let (slog, clog) = (dir.join("server.log"), dir.join("client.log"));
        let so = format!("remote=http,quiet,file={}", sf.display());
        let co = format!("remote=http,quiet,file={}", cf.display());
        let args = ["httpchain.Client", &port, "fail,2"];
        exchange(
            &java,
            (Some(&so), &["httpchain.Server", "S", &port, "2"], &slog),
            (Some(&co), &args, &clog),
        );
        assert_eq!(
            std::fs::read_to_string(&clog).unwrap(),
            "request fail: error Server returned HTTP response code: 503\nrequest 2: S(0)\n"
        );
        let (c, s) = (
            Recording::read_file(&cf).unwrap(),
            Recording::read_file(&sf).unwrap(),
        );
        let failed = |calls: Vec<&RemoteCall>| calls.iter().map(|r| r.failed).collect::<Vec<_>>();
        assert_eq!(
            failed(http(&c, RemoteSide::Client)),
            [true, false],
            "JDK {j}"
        );
        assert_eq!(
            failed(http(&s, RemoteSide::Server)),
            [true, false],
            "JDK {j}"
        );
    }
}

#[test]
fn a_handler_left_by_an_exception_ends_its_request_failed() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("http-throw-{j}"));
        let port = free_port();
        let sf = dir.join("server.jsc");
        let (slog, clog) = (dir.join("server.log"), dir.join("client.log"));
        let so = format!("remote=http,quiet,file={}", sf.display());
        let args = ["httpchain.Client", &port, "throw,2,3"];
        exchange(
            &java,
            (Some(&so), &["httpchain.Server", "S", &port, "2"], &slog),
            (None, &args, &clog),
        );
        let client = std::fs::read_to_string(&clog).unwrap();
        assert!(client.starts_with("request throw: error "), "{client}");
        assert!(
            client.ends_with("request 2: S(0)\nrequest 3: S(0)\n"),
            "{client}"
        );
        let s = Recording::read_file(&sf).unwrap();
        let mut served = http(&s, RemoteSide::Server);
        served.sort_by_key(|r| r.ticks);
        // The thrown request (sent again by HttpURLConnection on some JDKs)
        // ends, failed, when the thread serves the next one; the next ones end
        // at their handler's return.
        let failed: Vec<bool> = served.iter().map(|r| r.failed).collect();
        let thrown = served.len() - 2;
        assert!((1..=2).contains(&thrown), "JDK {j}: {failed:?}");
        assert_eq!(failed[..thrown], vec![true; thrown][..], "JDK {j}");
        assert_eq!(failed[thrown..], [false, false], "JDK {j}");
    }
}

/// What the server's handler saw, by request id (`served id=N traceparent=T`).
fn seen_by_id(log: &Path) -> std::collections::HashMap<String, String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("served id="))
        .filter_map(|l| l.split_once(" traceparent="))
        .map(|(id, t)| (id.to_string(), t.to_string()))
        .collect()
}

fn thread_name(rec: &Recording, call: &RemoteCall) -> String {
    rec.thread(call.thread)
        .map(|t| t.name.clone())
        .unwrap_or_default()
}

#[test]
fn java_net_http_client_send_and_send_async_carry_the_traceparent_both_sides_record() {
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("httpclient-{j}"));
        let port = free_port();
        let (sf, cf) = (dir.join("server.jsc"), dir.join("client.jsc"));
        let (slog, clog) = (dir.join("server.log"), dir.join("client.log"));
        let so = format!("remote=http,quiet,file={}", sf.display());
        let co = format!("remote,quiet,trace=httpchain.*,file={}", cf.display());
        let args = ["httpchain.NewClient", &port, "1,2,fail", "a1,a2,a3,a4"];
        exchange(
            &java,
            (Some(&so), &["httpchain.Server", "B", &port, "7"], &slog),
            (Some(&co), &args, &clog),
        );
        assert_eq!(
            std::fs::read_to_string(&clog).unwrap(),
            "send 1: B(0)\nsend 2: B(0)\nsend fail: status 503\n\
             async a1: B(0)\nasync a2: B(0)\nasync a3: B(0)\nasync a4: B(0)\n",
            "JDK {j}"
        );
        let (c, s) = (
            Recording::read_file(&cf).unwrap(),
            Recording::read_file(&sf).unwrap(),
        );
        let (calls, served) = (http(&c, RemoteSide::Client), http(&s, RemoteSide::Server));
        assert_eq!((calls.len(), served.len()), (7, 7), "JDK {j}");
        // The request id each traceparent went out with, from what the handler got.
        let wire = seen_by_id(&slog);
        let id_of: std::collections::HashMap<&str, &str> = wire
            .iter()
            .map(|(id, t)| (t.as_str(), id.as_str()))
            .collect();
        assert_eq!(
            id_of.len(),
            7,
            "JDK {j}: one traceparent per request: {wire:?}"
        );
        let mut ids = Vec::new();
        for r in &calls {
            let t = c.string(r.request_id);
            assert!(is_traceparent(t), "JDK {j}: {t:?}");
            let id = *id_of
                .get(t)
                .expect("the handler got what the client recorded");
            ids.push(id);
            let x = served
                .iter()
                .find(|x| s.string(x.request_id) == t)
                .expect("the server recorded the same traceparent");
            assert_eq!((c.string(r.object), c.string(r.method)), ("/hop", "GET"));
            assert_eq!(
                (c.string(r.remote_host), r.remote_port.to_string()),
                ("127.0.0.1", port.clone())
            );
            assert_eq!(
                (s.string(x.remote_host), x.remote_port),
                (c.string(r.local_host), r.local_port),
                "JDK {j}: mirrored endpoints"
            );
            assert!(r.conn_seq > 0 && r.conn_seq == x.conn_seq, "JDK {j}: {id}");
            assert!(x.duration_ns <= r.duration_ns, "JDK {j}: {id}");
            assert_eq!(
                (r.failed, x.failed),
                (id == "fail", id == "fail"),
                "JDK {j}"
            );
            // sendAsync's responses arrive on the client's own threads; the call
            // still belongs to the thread that made it.
            assert_eq!(thread_name(&c, r), "main", "JDK {j}: {id}");
        }
        ids.sort_unstable();
        assert_eq!(ids, ["1", "2", "a1", "a2", "a3", "a4", "fail"], "JDK {j}");
        let traces: std::collections::HashSet<&str> = wire.values().map(|w| &w[3..35]).collect();
        assert_eq!(traces.len(), 7, "JDK {j}: a trace per request");
    }
}

#[test]
fn java_net_http_client_keeps_an_application_traceparent_and_a_plain_server_works() {
    let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("httpclient-peers-{j}"));
        for traceparent in [Some(own), None] {
            let port = free_port();
            let tag = if traceparent.is_some() {
                "own"
            } else {
                "added"
            };
            let (cf, slog, clog) = (
                dir.join(format!("client-{tag}.jsc")),
                dir.join(format!("plain-server-{tag}.log")),
                dir.join(format!("client-{tag}.log")),
            );
            let co = format!("remote=http,quiet,file={}", cf.display());
            let mut args = vec!["httpchain.NewClient", &port, "1,2", "a1,a2"];
            args.extend(traceparent);
            exchange(
                &java,
                (None, &["httpchain.Server", "P", &port, "4"], &slog),
                (Some(&co), &args, &clog),
            );
            assert_eq!(
                std::fs::read_to_string(&clog).unwrap(),
                "send 1: P(0)\nsend 2: P(0)\nasync a1: P(0)\nasync a2: P(0)\n",
                "JDK {j} {tag}"
            );
            let wire = seen(&slog);
            let c = Recording::read_file(&cf).unwrap();
            let mut recorded: Vec<String> = http(&c, RemoteSide::Client)
                .iter()
                .map(|r| c.string(r.request_id).to_string())
                .collect();
            match traceparent {
                // The application's header, once per request, recorded as sent.
                Some(own) => {
                    assert_eq!(wire, [own; 4], "JDK {j}");
                    assert_eq!(recorded, [own; 4], "JDK {j}");
                }
                None => {
                    let mut wire = wire;
                    assert!(wire.iter().all(|t| is_traceparent(t)), "JDK {j}: {wire:?}");
                    wire.sort();
                    recorded.sort();
                    assert_eq!(recorded, wire, "JDK {j}");
                }
            }
        }
    }
}

/// The fewest bytes a round of `Escape` allocated with these agent options.
fn escape_allocates(java: &Java, remote: &str, dir: &Path) -> u64 {
    let log = dir.join(format!("escape-{remote}-{}.log", java.major));
    let file = dir.join(format!("escape-{remote}.jsc"));
    let options = format!("remote={remote},quiet,file={}", file.display());
    // Compiled for JDK 11 (a runtime without javac), the fixtures run on all.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http_fixtures");
    let cp = compile_fixtures_release(&fixtures, 11);
    let mut c = start_with(java, Some(&options), &cp, &["httpchain.Escape"], &log);
    finish(java, &mut [(&mut c, remote)]);
    let text = std::fs::read_to_string(&log).unwrap();
    text.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("JDK {} remote={remote}: {text}", java.major))
}

/// HTTP is captured by calls inserted into its methods, which need no
/// breakpoints or local-variable access. Holding either capability makes
/// HotSpot keep every local alive in compiled code and, before JDK 15, compile
/// without escape analysis at all. So on every JDK a JVM recorded with
/// `remote=http` has a loop's non-escaping objects not allocated, while on JDK
/// 11 RMI's breakpoints cost exactly that (32 MB a round): the fixture tells
/// the two apart.
#[test]
fn http_capture_leaves_the_jits_escape_analysis_on() {
    let dir = temp_dir("http-escape");
    let mut all = javas();
    if !all.iter().any(|j| j.major == 11) {
        all.splice(0..0, java11());
    }
    assert!(
        all.iter().any(|j| j.major < 15) || std::env::var_os("CI").is_none(),
        "no JDK 11 to tell the captures apart"
    );
    for java in all {
        let http = escape_allocates(&java, "http", &dir);
        assert!(
            http < 1 << 20,
            "JDK {}: {http} bytes a round with remote=http",
            java.major
        );
        if java.major < 15 {
            let rmi = escape_allocates(&java, "rmi", &dir);
            assert!(
                rmi > 16 << 20,
                "JDK {}: {rmi} bytes a round with remote=rmi",
                java.major
            );
        }
    }
}

/// The framework readers' class files the agent embeds
/// (`crates/agent/java/classes`) are what their sources compile to
/// (`crates/agent/java/build.sh`, against Debian's framework jars).
#[test]
fn framework_readers_are_compiled_from_their_sources() {
    let jars = [
        ("servlet-api.jar", "libjetty9-java"),
        ("tomcat10-servlet-api.jar", "libtomcat10-java"),
        ("netty-codec-http.jar", "libnetty-java"),
        ("okhttp.jar", "libokhttp-java"),
        ("httpcore5.jar", "libhttpclient5-java"),
    ];
    for (jar, package) in jars {
        let path = Path::new("/usr/share/java").join(jar);
        if !path.exists() {
            jscope_testkit::tools::missing(
                &path.display().to_string(),
                &format!("apt-get install {package}"),
            );
            return;
        }
    }
    let java = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
    let out = temp_dir("readers");
    let status = Command::new("bash")
        .arg(java.join("build.sh"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "crates/agent/java/build.sh failed");
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let committed = java.join("classes");
    assert_eq!(names(&out), names(&committed));
    for name in names(&out) {
        assert!(
            std::fs::read(out.join(&name)).unwrap()
                == std::fs::read(committed.join(&name)).unwrap(),
            "{name} differs from its source: run bash crates/agent/java/build.sh"
        );
    }
}
