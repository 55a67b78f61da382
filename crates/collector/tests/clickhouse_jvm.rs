//! Real JVMs into the ClickHouse store's `events`, `trace_calls` and `remote_calls`
//! tables (skipped, saying why, without `clickhouse-server`; needs the agent built):
//! an HTTP client JVM and the server JVM it calls, both recording JVM events, an
//! exact trace and remote calls, stream to a collector over ClickHouse and write
//! their own files; the rows equal what the files decode to, each client call's
//! link finds the server's row, and the SQL answers across the two JVMs equal those
//! computed from the chunks read back.

mod common;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use jscope_analysis::events::EventWeight;
use jscope_analysis::trace::{replay, Call, TraceOptions, THREW, UNFINISHED};
use jscope_format::{MethodId, Recording, ThreadId};
use jscope_store::calls::{
    event_kinds, event_kinds_from_chunks, event_stacks, event_stacks_from_chunks, remote_calls,
    remote_calls_from_chunks, traced_methods, traced_methods_from_chunks,
};
use jscope_store::query::Query;
use jscope_store::{ClickHouseStore, MemoryLog, Store};
use jscope_testkit::{
    agent_path, compile_fixtures, javas, temp_dir, wait_until, Child, ClickHouse,
};

fn classes() -> PathBuf {
    agent_path();
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/http_fixtures"))
}

fn sql(ch: &ClickHouse, q: &str) -> String {
    ch.query(q).unwrap_or_else(|e| panic!("{q}: {e}"))
}

fn java_with(java: &Path, options: &str, args: &[&str], log: &Path) -> Child {
    Child::spawn(
        Command::new(java)
            .arg(format!("-agentpath:{}={options}", agent_path().display()))
            .arg("-cp")
            .arg(classes())
            .args(args)
            .stdout(Stdio::from(std::fs::File::create(log).unwrap()))
            .stderr(Stdio::inherit()),
    )
}

/// The traced calls of a recording as the table's columns, sorted.
fn call_rows(rec: &Recording) -> Vec<String> {
    let (calls, _) = replay(rec, &TraceOptions::default(), Vec::<Call>::new());
    let start = rec.header.start_wall_ns;
    let mut rows: Vec<String> = calls
        .iter()
        .map(|c| {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                rec.method_label(MethodId(c.method)),
                rec.thread(ThreadId(c.thread))
                    .map_or("", |t| t.name.as_str()),
                start + c.enter_ns,
                start + c.exit_ns,
                c.depth,
                u8::from(c.flags & THREW != 0),
                u8::from(c.flags & UNFINISHED != 0),
                c.untraced
            )
        })
        .collect();
    rows.sort();
    rows
}

jscope_testkit::on_each_clickhouse!(
    a_traced_http_client_and_server_fill_the_tables_as_their_files_say
);

fn a_traced_http_client_and_server_fill_the_tables_as_their_files_say(
    server: jscope_testkit::Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-jvm") else {
        return;
    };
    let java = &javas()[0];
    let dir = temp_dir("ch-jvm-run");
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (server, _log) = start(&dir.join("unused"), |c| c.store = Some(url.clone()));
    let addr = server.agents_addr().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let (sf, cf) = (dir.join("server.jsc"), dir.join("client.jsc"));
    let (slog, clog) = (dir.join("server.log"), dir.join("client.log"));
    let options = |remote: &str, file: &Path| {
        format!(
            "{remote},events=all+park,trace=httpchain.*,quiet,collector={addr},file={}",
            file.display()
        )
    };
    let mut s = java_with(
        &java.bin,
        &options("remote=http", &sf),
        &["httpchain.Server", "B", &port, "4"],
        &slog,
    );
    assert!(
        wait_until(Duration::from_secs(60), || {
            std::fs::read_to_string(&slog).is_ok_and(|t| t.contains("ready"))
        }),
        "the server JVM did not start"
    );
    let mut c = java_with(
        &java.bin,
        &options("remote", &cf),
        &["httpchain.Client", &port, "1,2,fail,4"],
        &clog,
    );
    for (jvm, name) in [(&mut c, "client"), (&mut s, "server")] {
        let status = jvm.wait_timeout(Duration::from_secs(120)).expect("exits");
        assert!(status.success(), "JDK {} {name}: {status}", java.major);
    }
    let files = [
        Recording::read_file(&cf).unwrap(),
        Recording::read_file(&sf).unwrap(),
    ];
    let pids = [c.id(), s.id()];

    let store = ClickHouseStore::connect(&url, Arc::new(MemoryLog::default())).unwrap();
    let streams: Vec<String> = pids
        .iter()
        .map(|pid| {
            let mut id = None;
            wait_until(Duration::from_secs(30), || {
                id = store
                    .jvms()
                    .into_iter()
                    .find(|j| j.identity.pid == *pid)
                    .map(|j| j.identity.id);
                id.is_some()
            });
            id.unwrap_or_else(|| panic!("pid {pid} is not in the store"))
        })
        .collect();

    for (stream, rec) in streams.iter().zip(&files) {
        assert!(!rec.events.is_empty() && !rec.traces.is_empty());
        assert!(!rec.remote_calls.is_empty());
        // Events per kind, as the agent's file has them.
        let mut kinds: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for e in &rec.events {
            let k = kinds.entry(e.kind.name()).or_default();
            k.0 += 1;
            k.1 += e.kind.field("duration_ns").map_or(0, |v| v.as_u64());
        }
        let want: String = kinds
            .iter()
            .map(|(k, (n, d))| format!("{k}\t{n}\t{d}\n"))
            .collect();
        let events = format!(
            "SELECT kind, count(), sum(duration_ns) FROM jscope.events WHERE stream = '{stream}' \
             GROUP BY kind ORDER BY kind"
        );
        // The connection's last rows land once the JVM's exit closed it.
        let traced = call_rows(rec);
        let calls = format!(
            "SELECT method, thread, start_ns, end_ns, depth, threw, unfinished, untraced \
             FROM jscope.trace_calls WHERE stream = '{stream}' ORDER BY method, thread, start_ns"
        );
        let sorted = |text: String| {
            let mut rows: Vec<String> = text.lines().map(str::to_string).collect();
            rows.sort();
            rows
        };
        wait_until(Duration::from_secs(30), || {
            ch.query(&events).is_ok_and(|t| t == want)
                && ch.query(&calls).is_ok_and(|t| sorted(t) == traced)
        });
        assert_eq!(sql(&ch, &events), want, "{stream}");
        assert_eq!(sorted(sql(&ch, &calls)), traced, "{stream}");
        assert_eq!(
            sql(
                &ch,
                &format!("SELECT count() FROM jscope.remote_calls WHERE stream = '{stream}'")
            )
            .trim(),
            rec.remote_calls.len().to_string()
        );
    }
    // Every HTTP call of the client finds the server's row by its link, with the
    // traceparent both recorded; the `fail` request failed on both sides.
    assert_eq!(
        sql(
            &ch,
            "SELECT count(), countIf(same_id), sum(failed) FROM \
             (SELECT link, uniqExact(request_id) = 1 AND any(request_id) != '' AS same_id, \
                     max(failed) AS failed \
              FROM jscope.remote_calls WHERE protocol = 'http' GROUP BY link \
              HAVING countIf(direction = 'client') = 1 AND countIf(direction = 'server') = 1)"
        ),
        "4\t4\t1\n"
    );

    // The API's answers across both JVMs: SQL equals the chunks read back.
    let q = Query {
        jvms: streams.clone(),
        ..Query::default()
    };
    assert_eq!(
        event_kinds(&store, &q).unwrap(),
        event_kinds_from_chunks(&store, &q).unwrap()
    );
    let traced = traced_methods(&store, &q).unwrap();
    assert_eq!(traced, traced_methods_from_chunks(&store, &q).unwrap());
    assert!(
        traced
            .iter()
            .any(|m| m.method == "httpchain.Server$Hop.handle" && m.calls == 4),
        "{traced:?}"
    );
    assert_eq!(
        remote_calls(&store, &q).unwrap(),
        remote_calls_from_chunks(&store, &q).unwrap()
    );
    for what in [EventWeight::Alloc, EventWeight::Lock] {
        let total = |v: Vec<(Recording, jscope_analysis::StackCounts)>| -> u64 {
            v.iter().map(|(_, c)| c.total).sum()
        };
        assert_eq!(
            total(event_stacks(&store, &q, what).unwrap()),
            total(event_stacks_from_chunks(&store, &q, what).unwrap()),
            "{what:?}"
        );
    }
    server.shutdown();
}
