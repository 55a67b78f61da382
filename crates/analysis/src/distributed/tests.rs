//! Merged trees of synthetic recordings written with `ChunkWriter`: skewed clocks,
//! nested chains, two clients on one host with many threads, unmatched calls.

use std::collections::BTreeMap;

use jscope_format::*;

use super::*;
use crate::trace::TraceOptions;

/// 1 tick = 1 µs.
const TPS: u64 = 1_000_000;
const WALL: u64 = 1_700_000_000_000_000_000;
const MINUTE_NS: i64 = 60_000_000_000;

/// One JVM's recording; times are given in µs of true time, and the JVM's wall
/// clock is off by `skew_ns`.
struct Jvm {
    w: ChunkWriter,
    dict: Dictionary,
    events: BTreeMap<u32, Vec<(u64, TraceEvent)>>,
    remotes: Vec<RemoteCall>,
    pid: u32,
    host: String,
    start_ticks: u64,
    skew_ns: i64,
    protocol: RemoteProtocol,
}

impl Jvm {
    fn new(pid: u32, host: &str, skew_ns: i64) -> Jvm {
        Jvm {
            w: ChunkWriter::new(),
            dict: Dictionary::new(),
            events: BTreeMap::new(),
            remotes: vec![],
            pid,
            host: host.into(),
            // Monotonic clocks of different machines share no origin.
            start_ticks: 1_000_000 * u64::from(pid),
            skew_ns,
            protocol: RemoteProtocol::Rmi,
        }
    }

    fn string(&mut self, s: &str) -> u32 {
        (self.dict.string(&mut self.w, s)).0
    }

    /// `label` is `pkg.Class.method`.
    fn method(&mut self, label: &str) -> u32 {
        (self.dict.method_label(&mut self.w, label)).0
    }

    fn thread(&mut self, id: u32, name: &str) {
        self.w.thread(&ThreadDef {
            id: ThreadId(id),
            java_id: id.into(),
            name: name.into(),
            group: "main".into(),
            start_order: id,
            ..Default::default()
        });
    }

    fn ticks(&self, us: u64) -> u64 {
        self.start_ticks + us
    }

    fn call(&mut self, thread: u32, label: &str, from_us: u64, to_us: u64) {
        let method = self.method(label);
        let ev = |kind, at| TraceEvent {
            kind,
            method: MethodId(method),
            ticks: at,
            untraced: 0,
            cpu_ns: 0,
        };
        let (a, b) = (self.ticks(from_us), self.ticks(to_us));
        let list = self.events.entry(thread).or_default();
        list.push((from_us * 2 + 1, ev(TraceKind::Enter, a)));
        list.push((to_us * 2, ev(TraceKind::Exit, b)));
    }

    #[allow(clippy::too_many_arguments)]
    fn remote(
        &mut self,
        side: RemoteSide,
        thread: u32,
        from_us: u64,
        to_us: u64,
        local: (&str, u32),
        remote: (&str, u32),
        conn_seq: u64,
        method: &str,
        request: &str,
    ) {
        let (lh, rh) = (self.string(local.0), self.string(remote.0));
        let (object, m) = (self.string("[0:0:0, 1]"), self.string(method));
        let request_id = if request.is_empty() {
            0
        } else {
            self.string(request)
        };
        self.remotes.push(RemoteCall {
            side,
            protocol: self.protocol,
            thread: ThreadId(thread),
            ticks: self.ticks(from_us),
            duration_ns: (to_us - from_us) * 1000,
            local_host: StringId(lh),
            local_port: local.1,
            remote_host: StringId(rh),
            remote_port: remote.1,
            conn_seq,
            object: StringId(object),
            method_hash: 0x1234,
            method: StringId(m),
            request_id: StringId(request_id),
            stack: StackId::NONE,
            failed: false,
        });
    }

    fn member(self, name: &str) -> Member {
        let bytes = self.bytes(name);
        Member::from_bytes(name, &bytes, &TraceOptions::default()).unwrap()
    }

    /// The recording file's bytes (its command line is `java NAME`).
    fn bytes(mut self, name: &str) -> Vec<u8> {
        for (thread, mut evs) in std::mem::take(&mut self.events) {
            // Exits sort before entries at the same µs (keys 2t and 2t+1).
            evs.sort_by_key(|e| e.0);
            self.w.trace(&TraceBatch {
                thread: ThreadId(thread),
                has_cpu: false,
                events: evs.into_iter().map(|e| e.1).collect(),
            });
        }
        let mut remotes = std::mem::take(&mut self.remotes);
        remotes.sort_by_key(|r| r.ticks);
        for r in &remotes {
            self.w.remote(r);
        }
        let header = Header {
            pid: self.pid,
            host: self.host.clone(),
            command_line: format!("java {name}"),
            start_ticks: self.start_ticks,
            start_wall_ns: (WALL as i64 + self.skew_ns) as u64,
            ticks_per_second: TPS,
            modes: "trace".into(),
            ..Default::default()
        };
        let mut bytes = encode_file_start(&header);
        bytes.extend(self.w.finish());
        bytes
    }
}

use RemoteSide::{Client, Server};

const STUB: &str = "beacon.BeaconServer_Stub.remoteFoo";
const IMPL: &str = "beacon.BeaconServer.remoteFoo";
const TERM: &str = "beacon.TerminationServer.remoteFoo";

/// JaViz's Beacon: client -> s1 -> s2 -> s3, each server on its own host with its
/// clock off by minutes. Server `k` (1..=3) runs its dispatch inside
/// [1000k + 500, 10000 - 1000k - 500] µs of true time.
fn beacon(skews_min: [i64; 4]) -> Vec<Member> {
    beacon_recordings(skews_min)
        .into_iter()
        .map(|(n, bytes)| Member::from_bytes(n, &bytes, &TraceOptions::default()).unwrap())
        .collect()
}

/// [`beacon`]'s JVMs as recording files' bytes, with their names.
pub(super) fn beacon_recordings(skews_min: [i64; 4]) -> Vec<(&'static str, Vec<u8>)> {
    let hosts = ["10.0.0.1", "10.0.0.11", "10.0.0.12", "10.0.0.13"];
    let mut jvms: Vec<Jvm> = (0..4)
        .map(|k| Jvm::new(100 + k as u32, hosts[k], skews_min[k] * MINUTE_NS))
        .collect();
    jvms[0].thread(1, "main");
    jvms[0].call(1, "beacon.BeaconClient.main", 0, 10_000);
    for k in 0..4u64 {
        let j = &mut jvms[k as usize];
        if k > 0 {
            j.thread(1, "main");
            j.call(1, "beacon.BeaconServer.main", 0, 20);
            j.thread(7, "RMI TCP Connection(2)-10.0.0.1");
            let label = if k == 3 { TERM } else { IMPL };
            j.call(7, label, 1000 * k + 600, 10_000 - 1000 * k - 600);
            let client = (hosts[k as usize - 1], 40_000 + k as u32);
            let (from, to) = (1000 * k + 500, 10_000 - 1000 * k - 500);
            j.remote(
                Server,
                7,
                from,
                to,
                (hosts[k as usize], 1099),
                client,
                1,
                "remoteFoo(II)V",
                "",
            );
        }
        if k < 3 {
            let thread = if k == 0 { 1 } else { 7 };
            let (from, to) = (1000 * (k + 1), 10_000 - 1000 * (k + 1));
            j.call(thread, STUB, from, to);
            let local = (hosts[k as usize], 40_001 + k as u32);
            let server = (hosts[k as usize + 1], 1099);
            j.remote(
                Client,
                thread,
                from + 100,
                to - 100,
                local,
                server,
                1,
                "remoteFoo(II)V",
                "",
            );
        }
    }
    let names = ["client", "s1", "s2", "s3"];
    jvms.into_iter()
        .zip(names)
        .map(|(j, n)| (n, j.bytes(n)))
        .collect()
}

fn calls(kids: &[Child]) -> Vec<MRef> {
    kids.iter()
        .filter_map(|c| match c {
            Child::Call(r) => Some(*r),
            Child::Remote(_) => None,
        })
        .collect()
}

fn remotes(kids: &[Child]) -> Vec<usize> {
    kids.iter()
        .filter_map(|c| match c {
            Child::Remote(i) => Some(*i),
            Child::Call(_) => None,
        })
        .collect()
}

fn jvm_named(t: &DistributedTree, name: &str) -> usize {
    t.members.iter().position(|m| m.name == name).unwrap()
}

#[test]
fn the_beacon_chain_is_one_tree_with_three_nested_remote_subtrees_despite_skewed_clocks() {
    let mut members = beacon([0, 3, -5, 7]);
    // Load order must not matter: the client is found as the reference.
    members.swap(0, 2);
    let t = DistributedTree::build(members);
    let client = jvm_named(&t, "client");
    assert_eq!(t.reference, client);
    assert_eq!(t.links.len(), 3);
    assert!(t.unmatched_clients.is_empty() && t.unmatched_servers.is_empty());

    let roots = calls(&t.roots(client));
    assert_eq!(roots.len(), 1);
    assert_eq!(t.label(roots[0]), "beacon.BeaconClient.main");
    let mut at = roots[0];
    for (k, server) in ["s1", "s2", "s3"].into_iter().enumerate() {
        let kids = t.children(at);
        let stub = calls(&kids);
        assert_eq!(stub.len(), 1, "{server}");
        assert_eq!(t.label(stub[0]), STUB);
        let r = remotes(&t.children(stub[0]));
        assert_eq!(r.len(), 1, "one remote call under the stub to {server}");
        let link = &t.links[r[0]];
        assert_eq!(link.server.jvm, jvm_named(&t, server));
        // Client 7.8 ms minus server 7 ms at the first hop.
        let client_us = 7_800 - 2_000 * k as u64;
        assert_eq!(link.network_ns, 800_000, "{client_us}");
        let served = calls(&t.remote_children(r[0]));
        assert_eq!(served.len(), 1);
        assert_eq!(served[0].jvm, jvm_named(&t, server));
        assert_eq!(t.thread_name(served[0]), "RMI TCP Connection(2)-10.0.0.1");
        assert_eq!(t.label(served[0]), if k == 2 { TERM } else { IMPL });
        at = served[0];
    }
    assert!(
        t.children(at).is_empty(),
        "the termination server calls nobody"
    );

    // The servers' own trees keep their main and lose the calls made for the client.
    for server in ["s1", "s2", "s3"] {
        let j = jvm_named(&t, server);
        let own = calls(&t.roots(j));
        let labels: Vec<&str> = own.iter().map(|&r| t.label(r)).collect();
        assert_eq!(labels, ["beacon.BeaconServer.main"], "{server}");
    }
}

#[test]
fn clock_offsets_are_recovered_within_their_stated_uncertainty() {
    let skews = [0, 3, -5, 7];
    let t = DistributedTree::build(beacon(skews));
    for (j, skew) in skews.iter().enumerate() {
        let o = t.offsets[j].unwrap();
        // offset maps the JVM's clock onto the client's: minus its skew.
        let truth = -skew * MINUTE_NS;
        assert!(o.consistent);
        assert!(
            (o.offset_ns - truth).unsigned_abs() <= o.uncertainty_ns,
            "jvm {j}: {} vs {truth} ± {}",
            o.offset_ns,
            o.uncertainty_ns
        );
        if j > 0 {
            // Each hop leaves 100 µs each way of slack; errors add up along the chain.
            assert_eq!(o.uncertainty_ns, 400_000 * j as u64);
        }
    }
    // On the client's timeline, s3's termination call lies inside the client's stub.
    let s3 = 3;
    let term = t.members[s3]
        .tree
        .find(TERM, 0)
        .map(|node| MRef { jvm: s3, node })
        .unwrap();
    let (start, unc) = t.on_reference(s3, t.node(term).enter_ns).unwrap();
    assert!((start - 3_600_000).unsigned_abs() <= unc as u128);
}

#[test]
fn the_text_shows_each_jvm_offsets_and_remote_lines_without_false_precision() {
    let t = DistributedTree::build(beacon([0, 3, -5, 7]));
    let mut out = vec![];
    t.write_text(&DistributedView::default(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("jvm 0: client host 10.0.0.1 pid 100, reference clock"),
        "{text}"
    );
    assert!(text.contains("jvm 1: s1 host 10.0.0.11 pid 101, clock offset -180.000s±400.000us (via jvm 0, 1 pairs)"), "{text}");
    assert!(
        text.contains("3 remote calls matched, 0 client calls unmatched, 0 server calls unmatched")
    );
    assert!(text.contains("      => rmi to jvm 1 10.0.0.11:1099 object=[0:0:0, 1] method=remoteFoo(II)V conn=10.0.0.1:40001#1 client=7.800ms server=7.000ms network=800.000us"), "{text}");
    // s1's call: ±400 µs, so shown to 0.0001 s.
    assert!(
        text.contains(&format!(
            "        {IMPL} [jvm 1 RMI TCP Connection(2)-10.0.0.1] call=~0.0016s±400.000us"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "  beacon.BeaconClient.main [jvm 0 main] call=0.000000000s return=0.010000000s"
        ),
        "{text}"
    );
}

/// Two client JVMs on one host, four threads each, each thread on its own
/// connection making five calls; the server runs them on a pool of threads,
/// interleaved and overlapping, on a clock two minutes ahead. Each call's method
/// name carries its request id (as the fixture's argument would).
fn two_clients() -> Vec<Member> {
    let mut server = Jvm::new(300, "10.0.0.9", 2 * MINUTE_NS);
    let mut clients = [
        Jvm::new(301, "10.0.0.5", 0),
        Jvm::new(302, "10.0.0.5", -MINUTE_NS),
    ];
    let mut pool = 0u32;
    for (c, jvm) in clients.iter_mut().enumerate() {
        for th in 0..4u32 {
            jvm.thread(th + 1, &format!("worker-{th}"));
            let port = 50_000 + 10 * c as u32 + th;
            for seq in 0..5u64 {
                let id = format!("c{c}t{th}n{seq}");
                // All connections run at the same times: only identity can tell them apart.
                let from = 1_000 + seq * 1_000 + th as u64 * 10 + c as u64 * 5;
                jvm.call(th + 1, &format!("app.Stub.{id}"), from, from + 900);
                jvm.remote(
                    Client,
                    th + 1,
                    from + 10,
                    from + 890,
                    ("10.0.0.5", port),
                    ("10.0.0.9", 1099),
                    seq + 1,
                    "call(I)V",
                    "",
                );
                // A pool of three server threads, in an order unrelated to the
                // clients'; each thread's calls follow one another.
                let worker = 10 + pool % 3;
                pool += 1;
                server.thread(worker, &format!("RMI-{worker}"));
                let slot = 2_000_000 + ((pool * 7) % 40) as u64 * 1_000;
                server.call(worker, &format!("app.Server.{id}"), slot + 100, slot + 800);
                server.remote(
                    Server,
                    worker,
                    slot + 50,
                    slot + 850,
                    ("10.0.0.9", 1099),
                    ("10.0.0.5", port),
                    seq + 1,
                    "call(I)V",
                    "",
                );
            }
        }
    }
    let [a, b] = clients;
    vec![a.member("a"), b.member("b"), server.member("server")]
}

#[test]
fn two_clients_on_one_host_with_many_threads_get_their_own_server_executions() {
    let t = DistributedTree::build(two_clients());
    assert_eq!(t.links.len(), 40);
    assert!(t.unmatched_clients.is_empty() && t.unmatched_servers.is_empty());
    let mut checked = 0;
    for j in 0..2 {
        for root in calls(&t.roots(j)) {
            let stub = t.label(root).strip_prefix("app.Stub.").unwrap().to_string();
            let r = remotes(&t.children(root));
            assert_eq!(r.len(), 1);
            let served = calls(&t.remote_children(r[0]));
            assert_eq!(served.len(), 1);
            assert_eq!(t.label(served[0]), format!("app.Server.{stub}"));
            checked += 1;
        }
    }
    assert_eq!(checked, 40);
    assert!(
        t.roots(2).is_empty(),
        "every server call belongs to a client"
    );
}

#[test]
fn calls_without_a_common_connection_pair_by_a_unique_request_id() {
    // A client that could not read its endpoints, and one whose id two servers
    // carry: the first pairs by its id, the second stays unmatched.
    let mut c = Jvm::new(1, "h1", 0);
    let mut s = Jvm::new(2, "h2", 10 * MINUTE_NS);
    c.thread(1, "main");
    c.call(1, "app.Stub.a", 1_000, 6_000);
    c.remote(Client, 1, 1_010, 5_990, ("", 0), ("", 0), 0, "GET", "tp-a");
    c.call(1, "app.Stub.b", 10_000, 16_000);
    c.remote(
        Client,
        1,
        10_010,
        15_990,
        ("", 0),
        ("", 0),
        0,
        "GET",
        "tp-b",
    );
    s.thread(5, "handler");
    s.call(5, "app.Handler.a", 110, 500);
    s.remote(
        Server,
        5,
        100,
        600,
        ("h2", 80),
        ("h1", 6000),
        1,
        "GET",
        "tp-a",
    );
    for (k, from) in [2_000u64, 3_000].into_iter().enumerate() {
        s.call(5, "app.Handler.b", from + 10, from + 500);
        s.remote(
            Server,
            5,
            from,
            from + 600,
            ("h2", 80),
            ("h1", 7000 + k as u32),
            1,
            "GET",
            "tp-b",
        );
    }
    let t = DistributedTree::build(vec![c.member("c"), s.member("s")]);
    assert_eq!(t.links.len(), 1);
    let l = &t.links[0];
    assert_eq!(t.remote(l.client).request_id.as_deref(), Some("tp-a"));
    assert_eq!(t.remote(l.server).request_id.as_deref(), Some("tp-a"));
    assert_eq!(t.unmatched_clients.len(), 1);
}

#[test]
fn matching_survives_a_reused_port_through_order_and_request_ids() {
    // The same client port is used by two connections one after the other; both
    // start at conn_seq 1. With request ids they pair exactly, even when the server
    // logged them in the other order.
    let mut c = Jvm::new(1, "h1", 0);
    let mut s = Jvm::new(2, "h2", 10 * MINUTE_NS);
    c.thread(1, "main");
    for (k, id) in ["r1", "r2"].into_iter().enumerate() {
        let from = 1_000 + k as u64 * 10_000;
        c.call(1, &format!("app.Stub.{id}"), from, from + 5_000);
        c.remote(
            Client,
            1,
            from + 10,
            from + 4_990,
            ("h1", 6000),
            ("h2", 80),
            1,
            "GET",
            id,
        );
    }
    s.thread(5, "handler");
    for (k, id) in ["r2", "r1"].into_iter().enumerate() {
        let from = 100 + k as u64 * 1_000;
        s.call(5, &format!("app.Handler.{id}"), from + 10, from + 500);
        s.remote(
            Server,
            5,
            from,
            from + 600,
            ("h2", 80),
            ("h1", 6000),
            1,
            "GET",
            id,
        );
    }
    let t = DistributedTree::build(vec![c.member("c"), s.member("s")]);
    assert_eq!(t.links.len(), 2);
    for l in &t.links {
        assert_eq!(t.remote(l.client).request_id, t.remote(l.server).request_id);
        let stub = t.label(MRef {
            jvm: 0,
            node: l.at.unwrap(),
        });
        let served = t.label(MRef {
            jvm: 1,
            node: l.roots[0],
        });
        assert_eq!(stub.rsplit('.').next(), served.rsplit('.').next());
    }
}

#[test]
fn unmatched_calls_stay_where_they_were_and_the_servers_own_work_is_kept() {
    let mut c = Jvm::new(1, "h1", 0);
    let mut s = Jvm::new(2, "h2", -MINUTE_NS);
    c.thread(1, "main");
    c.call(1, "app.Client.main", 0, 10_000);
    c.call(1, "app.Stub.a", 1_000, 3_000);
    c.remote(
        Client,
        1,
        1_010,
        2_990,
        ("h1", 7000),
        ("h2", 1099),
        1,
        "a()V",
        "",
    );
    // A call to a JVM that was not loaded.
    c.call(1, "app.Stub.b", 4_000, 5_000);
    c.remote(
        Client,
        1,
        4_010,
        4_990,
        ("h1", 7001),
        ("h3", 1099),
        1,
        "b()V",
        "",
    );
    s.thread(3, "RMI TCP Connection(1)");
    // The server's own method A began before the dispatch and ends inside it: it is
    // the server's own work, not the client's (JaViz).
    s.call(3, "app.Server.methodA", 500, 1_200);
    s.call(3, "app.Server.a", 1_300, 2_600);
    s.remote(
        Server,
        3,
        1_100,
        2_700,
        ("h2", 1099),
        ("h1", 7000),
        1,
        "a()V",
        "",
    );
    // A call from a client that was not loaded.
    s.call(3, "app.Server.fromElsewhere", 6_000, 6_500);
    s.remote(
        Server,
        3,
        5_900,
        6_600,
        ("h2", 1099),
        ("h9", 7000),
        1,
        "a()V",
        "",
    );
    let t = DistributedTree::build(vec![c.member("c"), s.member("s")]);
    assert_eq!(t.links.len(), 1);
    assert_eq!(t.unmatched_clients, [CallRef { jvm: 0, call: 1 }]);
    assert_eq!(t.unmatched_servers, [CallRef { jvm: 1, call: 1 }]);
    let own: Vec<&str> = calls(&t.roots(1)).iter().map(|&r| t.label(r)).collect();
    assert_eq!(own, ["app.Server.methodA", "app.Server.fromElsewhere"]);
    let main = calls(&t.roots(0))[0];
    let stubs = calls(&t.children(main));
    assert!(remotes(&t.children(stubs[1])).is_empty(), "no server for b");
    let served = calls(&t.remote_children(remotes(&t.children(stubs[0]))[0]));
    let labels: Vec<&str> = served.iter().map(|&r| t.label(r)).collect();
    assert_eq!(labels, ["app.Server.a"]);
}

#[test]
fn a_client_record_outside_any_traced_call_hangs_under_the_virtual_root() {
    let mut c = Jvm::new(1, "h1", 0);
    let mut s = Jvm::new(2, "h2", 0);
    c.thread(1, "main");
    c.remote(
        Client,
        1,
        100,
        900,
        ("h1", 7000),
        ("h2", 1099),
        1,
        "a()V",
        "",
    );
    s.thread(3, "rmi");
    s.call(3, "app.Server.a", 200, 800);
    s.remote(
        Server,
        3,
        150,
        850,
        ("h2", 1099),
        ("h1", 7000),
        1,
        "a()V",
        "",
    );
    let t = DistributedTree::build(vec![c.member("c"), s.member("s")]);
    let r = remotes(&t.roots(0));
    assert_eq!(r.len(), 1);
    assert_eq!(t.links[r[0]].at, None);
    assert_eq!(calls(&t.remote_children(r[0])).len(), 1);
}

#[test]
fn an_http_chain_is_linked_the_same_way_by_connection_and_traceparent() {
    // client -> api -> db over HTTP; each hop carries a W3C traceparent.
    let hosts = ["10.3.0.1", "10.3.0.2", "10.3.0.3"];
    let mut jvms: Vec<Jvm> = (0..3)
        .map(|k| {
            Jvm::new(
                400 + k as u32,
                hosts[k],
                (k as i64 - 1) * 90 * 1_000_000_000,
            )
        })
        .collect();
    for j in &mut jvms {
        j.protocol = RemoteProtocol::Http;
    }
    let tp = |span: &str| format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{span}-01");
    jvms[0].thread(1, "main");
    jvms[0].call(1, "web.Client.main", 0, 5_000);
    jvms[0].call(1, "java.net.http.HttpClient.send", 500, 4_500);
    let (p1, p2) = (tp("00f067aa0ba902b7"), tp("53995c3f42cd8ad8"));
    jvms[0].remote(
        Client,
        1,
        600,
        4_400,
        (hosts[0], 52_000),
        (hosts[1], 8080),
        1,
        "GET",
        &p1,
    );
    jvms[1].thread(9, "HTTP-Dispatcher");
    jvms[1].remote(
        Server,
        9,
        900,
        4_100,
        (hosts[1], 8080),
        (hosts[0], 52_000),
        1,
        "GET",
        &p1,
    );
    jvms[1].call(9, "web.Api.handle", 1_000, 4_000);
    jvms[1].call(9, "java.net.HttpURLConnection.getInputStream", 1_500, 3_500);
    jvms[1].remote(
        Client,
        9,
        1_600,
        3_400,
        (hosts[1], 53_000),
        (hosts[2], 8081),
        1,
        "POST",
        &p2,
    );
    jvms[2].thread(4, "HTTP-Dispatcher");
    jvms[2].remote(
        Server,
        4,
        1_900,
        3_100,
        (hosts[2], 8081),
        (hosts[1], 53_000),
        1,
        "POST",
        &p2,
    );
    jvms[2].call(4, "web.Db.handle", 2_000, 3_000);
    let members: Vec<Member> = jvms
        .into_iter()
        .zip(["client", "api", "db"])
        .map(|(j, n)| j.member(n))
        .collect();
    let t = DistributedTree::build(members);
    assert_eq!(t.links.len(), 2);
    let main = calls(&t.roots(0))[0];
    let send = calls(&t.children(main))[0];
    let hop1 = remotes(&t.children(send));
    assert_eq!(
        t.remote(t.links[hop1[0]].client).protocol,
        ProtocolName::Http
    );
    let api = calls(&t.remote_children(hop1[0]))[0];
    assert_eq!((api.jvm, t.label(api)), (1, "web.Api.handle"));
    let get = calls(&t.children(api))[0];
    let hop2 = remotes(&t.children(get));
    let db = calls(&t.remote_children(hop2[0]))[0];
    assert_eq!((db.jvm, t.label(db)), (2, "web.Db.handle"));
    assert_eq!(
        t.remote(t.links[hop2[0]].server).request_id.as_deref(),
        Some(p2.as_str())
    );
    assert!(t.roots(1).is_empty() && t.roots(2).is_empty());
}

#[test]
fn the_flat_rows_carry_each_nodes_jvm_and_each_remote_calls_network_time() {
    let t = DistributedTree::build(beacon([0, 3, -5, 7]));
    let flat = t.flatten(&DistributedView {
        jvm: Some(0),
        ..Default::default()
    });
    let labels: Vec<(usize, usize, &str)> = flat
        .nodes
        .iter()
        .map(|n| (n.depth, n.jvm, n.label.as_str()))
        .collect();
    let remote = "rmi [0:0:0, 1] remoteFoo(II)V";
    assert_eq!(
        labels,
        [
            (0, 0, "beacon.BeaconClient.main"),
            (1, 0, STUB),
            (2, 0, remote),
            (3, 1, IMPL),
            (4, 1, STUB),
            (5, 1, remote),
            (6, 2, IMPL),
            (7, 2, STUB),
            (8, 2, remote),
            (9, 3, TERM),
        ]
    );
    for (i, n) in flat.nodes.iter().enumerate().skip(1) {
        assert_eq!(n.parent, Some(i - 1));
        assert_eq!(n.root_jvm, 0);
    }
    // A stub's own time leaves out the remote call grafted under it.
    for (stub, call) in [(1, 2), (4, 5), (7, 8)] {
        let (stub, call) = (&flat.nodes[stub], &flat.nodes[call]);
        assert!(call.duration_ns > 0 && call.duration_ns < stub.duration_ns);
        assert_eq!(
            stub.self_ns,
            stub.duration_ns - call.duration_ns,
            "{}",
            stub.label
        );
    }
    assert_eq!(
        flat.nodes[0].self_ns,
        flat.nodes[0].duration_ns - flat.nodes[1].duration_ns
    );
    let hop = flat.nodes[5].remote.as_ref().unwrap();
    assert_eq!(
        (hop.server_jvm, hop.network_ns, hop.server_ns),
        (2, 800_000, 5_000_000)
    );
    let term = &flat.nodes[9];
    assert_eq!(term.uncertainty_ns, 1_200_000);
    assert!((term.start_ns - 3_600_000).unsigned_abs() <= term.uncertainty_ns);
    assert_eq!(flat.jvms[3].offset_ns, Some(-7 * MINUTE_NS));
    let json = serde_json::to_value(&flat).unwrap();
    assert_eq!(json["nodes"][2]["remote"]["network_ns"], 800_000);
    assert_eq!(json["nodes"][9]["jvm"], 3);
}
