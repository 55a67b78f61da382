//! Remote calls recorded by the agent (`remote`) on real JVMs and merged: JaViz's
//! Beacon across four JVMs whose clocks are shifted by minutes (`clockoffset=`),
//! and two client JVMs on one host calling one server object from several threads.

mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jscope_analysis::distributed::{Child as Node, DistributedTree, MRef, Member};
use jscope_analysis::trace::TraceOptions;
use jscope_testkit::{compile_fixtures, javas, temp_dir, Child, Java};
use support::{start_logged, wait_ready};

const MINUTE_NS: i64 = 60_000_000_000;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/beacon/src"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts a traced JVM; its output goes to NAME.log in `dir`.
fn start(java: &Java, dir: &Path, name: &str, extra: &str, args: &[String]) -> (Child, PathBuf) {
    let file = dir.join(format!("{name}.jsc"));
    let options = format!("remote,trace=beacon.*,quiet,file={}{extra}", file.display());
    (
        start_logged(java, dir, name, &options, &classes(), args),
        file,
    )
}
fn calls(kids: &[Node]) -> Vec<MRef> {
    kids.iter()
        .filter_map(|c| match c {
            Node::Call(r) => Some(*r),
            Node::Remote(_) => None,
        })
        .collect()
}

/// The chain s1 -> s2 -> s3 under one client call: returns the JVMs it went through.
fn follow(t: &DistributedTree, link: usize) -> Vec<usize> {
    let mut jvms = vec![];
    let mut at = link;
    loop {
        let l = &t.links[at];
        jvms.push(l.server.jvm);
        let served = calls(&t.remote_children(at));
        assert_eq!(served.len(), 1, "one served call per remote call");
        let label = t.label(served[0]).to_string();
        let inner: Vec<usize> = descendants_remote(t, served[0]);
        if label == "beacon.TerminationServer.remoteFoo" {
            assert!(inner.is_empty());
            return jvms;
        }
        assert_eq!(label, "beacon.BeaconServer.remoteFoo");
        let forwarded: Vec<usize> = inner
            .into_iter()
            .filter(|&i| t.remote(t.links[i].client).method.starts_with("remoteFoo"))
            .collect();
        assert_eq!(forwarded.len(), 1, "each server forwards once");
        at = forwarded[0];
    }
}

/// Remote calls anywhere below a call, not below another remote call.
fn descendants_remote(t: &DistributedTree, r: MRef) -> Vec<usize> {
    let mut out = vec![];
    let mut stack = t.children(r);
    while let Some(c) = stack.pop() {
        match c {
            Node::Call(r) => stack.extend(t.children(r)),
            Node::Remote(i) => out.push(i),
        }
    }
    out
}

fn beacon(java: &Java, skews: [&str; 3]) -> DistributedTree {
    let dir = temp_dir(&format!("beacon-{}", java.major));
    let ports: Vec<String> = (0..3).map(|_| free_port().to_string()).collect();
    let skew = |k: usize| format!(",clockoffset={}", skews[k]);
    let (mut s3, f3) = start(
        java,
        &dir,
        "s3",
        &skew(2),
        &["beacon.TerminationServer".into(), ports[2].clone()],
    );
    wait_ready(&dir, "s3");
    let (mut s2, f2) = start(
        java,
        &dir,
        "s2",
        &skew(1),
        &[
            "beacon.BeaconServer".into(),
            ports[1].clone(),
            ports[2].clone(),
        ],
    );
    wait_ready(&dir, "s2");
    let (mut s1, f1) = start(
        java,
        &dir,
        "s1",
        &skew(0),
        &[
            "beacon.BeaconServer".into(),
            ports[0].clone(),
            ports[1].clone(),
        ],
    );
    wait_ready(&dir, "s1");
    let (mut client, f0) = start(
        java,
        &dir,
        "client",
        "",
        &["beacon.BeaconClient".into(), ports[0].clone(), "2".into()],
    );
    for (c, name) in [
        (&mut client, "client"),
        (&mut s1, "s1"),
        (&mut s2, "s2"),
        (&mut s3, "s3"),
    ] {
        let status = c
            .wait_timeout(Duration::from_secs(120))
            .expect("the JVM exits");
        assert!(status.success(), "JDK {} {name}: {status}", java.major);
    }
    let log = std::fs::read_to_string(dir.join("client.log")).unwrap();
    assert_eq!(log, "request 1: 3 servers\nrequest 2: 3 servers\n");
    let members = [f0, f1, f2, f3]
        .iter()
        .map(|f| Member::read_file(f, &TraceOptions::default()).unwrap())
        .collect();
    DistributedTree::build(members)
}

#[test]
fn the_beacon_chain_across_four_jvms_is_one_tree_even_with_clocks_minutes_apart() {
    for java in javas() {
        let t = beacon(&java, ["3m", "-5m", "7m"]);
        let j = java.major;
        assert_eq!(t.reference, 0, "JDK {j}");
        for u in &t.unmatched_servers {
            let r = t.remote(*u);
            eprintln!("JDK {j} unmatched server: jvm {} {:?}", u.jvm, r);
        }
        assert!(
            t.unmatched_clients.is_empty(),
            "JDK {j}: {:?}",
            t.unmatched_clients
        );
        let main = calls(&t.roots(0));
        assert_eq!(main.len(), 1, "JDK {j}");
        assert_eq!(t.label(main[0]), "beacon.BeaconClient.main");
        let top = descendants_remote(&t, main[0]);
        let requests: Vec<usize> = top
            .iter()
            .copied()
            .filter(|&i| t.remote(t.links[i].client).method == "remoteFoo(int,int)")
            .collect();
        assert_eq!(requests.len(), 2, "JDK {j}: two requests");
        for &i in &requests {
            assert_eq!(follow(&t, i), [1, 2, 3], "JDK {j}");
        }
        // Offsets: each server's clock was shifted by its clockoffset (all four
        // JVMs share one machine, so that is the whole truth); the estimate finds
        // it within its stated uncertainty (plus 1 ms for the JVMs' anchors, each
        // read on two clocks a few µs apart, and scheduling on a busy machine).
        for (k, truth) in [(1, -3), (2, 5), (3, -7)] {
            let o = t.offsets[k].unwrap();
            let err = (o.offset_ns - truth * MINUTE_NS).unsigned_abs();
            assert!(
                err <= o.uncertainty_ns + 1_000_000,
                "JDK {j} jvm {k}: {} ± {} vs {truth} min",
                o.offset_ns,
                o.uncertainty_ns
            );
        }
    }
}

/// The request id of a traced `EchoClient.call`: its thread `caller-T` and its
/// place K among that thread's calls give T * 100 + K.
fn request_id(t: &DistributedTree, call: MRef) -> u32 {
    let thread = t.thread_name(call);
    let tt: u32 = thread.strip_prefix("caller-").unwrap().parse().unwrap();
    let tree = &t.members[call.jvm].tree;
    let nodes = &tree.threads[call.node.thread].nodes;
    let k = (0..call.node.node)
        .filter(|&i| tree.label(nodes[i].method) == "beacon.EchoClient.call")
        .count() as u32;
    tt * 100 + k
}

#[test]
fn two_clients_on_one_host_with_many_threads_each_get_their_own_server_executions() {
    const THREADS: u32 = 4;
    const CALLS: u32 = 6;
    for java in javas() {
        let j = java.major;
        let dir = temp_dir(&format!("echo-{j}"));
        let port = free_port().to_string();
        let (mut server, fs) = start(
            &java,
            &dir,
            "server",
            ",clockoffset=-4m",
            &["beacon.EchoServer".into(), port.clone()],
        );
        wait_ready(&dir, "server");
        let client_args = |last: bool| {
            let mut a = vec![
                "beacon.EchoClient".to_string(),
                port.clone(),
                THREADS.to_string(),
                CALLS.to_string(),
            ];
            if last {
                a.push("shutdown".into());
            }
            a
        };
        let (mut a, fa) = start(&java, &dir, "a", "", &client_args(false));
        let (mut b, fb) = start(&java, &dir, "b", ",clockoffset=2m", &client_args(false));
        for (c, name) in [(&mut a, "a"), (&mut b, "b")] {
            let status = c
                .wait_timeout(Duration::from_secs(120))
                .expect("the JVM exits");
            assert!(status.success(), "JDK {j} {name}: {status}");
        }
        // A third, untraced-side client only stops the server.
        let (mut stopper, _) = start(&java, &dir, "stop", "", &{
            let mut a = client_args(true);
            a[2] = "0".into();
            a
        });
        for c in [&mut stopper, &mut server] {
            assert!(c
                .wait_timeout(Duration::from_secs(120))
                .expect("exits")
                .success());
        }
        let members = [fa, fb, fs]
            .iter()
            .map(|f| Member::read_file(f, &TraceOptions::default()).unwrap())
            .collect();
        let t = DistributedTree::build(members);
        assert!(t.unmatched_clients.is_empty(), "JDK {j}");
        let mut checked = 0;
        for client in 0..2 {
            for l in t.links.iter().filter(|l| l.client.jvm == client) {
                let stub = MRef {
                    jvm: client,
                    node: l.at.expect("under a traced call"),
                };
                assert_eq!(t.label(stub), "beacon.EchoClient.call", "JDK {j}");
                let id = request_id(&t, stub);
                assert_eq!(l.server.jvm, 2);
                let served =
                    calls(&t.remote_children(t.links.iter().position(|x| x == l).unwrap()));
                assert_eq!(served.len(), 1, "JDK {j}");
                assert_eq!(t.label(served[0]), "beacon.EchoServer.echo");
                let digits = t
                    .children(served[0])
                    .into_iter()
                    .filter(
                        |c| matches!(c, Node::Call(r) if t.label(*r) == "beacon.EchoServer.digit"),
                    )
                    .count() as u32;
                assert_eq!(
                    digits,
                    id % 5 + 1,
                    "JDK {j}: request {id} of client {client}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 2 * THREADS * CALLS, "JDK {j}");
        // Every echo the server ran belongs to one of the two clients.
        let own: Vec<&str> = calls(&t.roots(2)).into_iter().map(|r| t.label(r)).collect();
        assert!(!own.contains(&"beacon.EchoServer.echo"), "JDK {j}: {own:?}");
    }
}
