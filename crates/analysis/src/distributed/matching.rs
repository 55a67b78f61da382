//! Linking client records to server records (JaViz's merge step): by connection
//! identity and per-connection order, never by comparing clocks of different JVMs.

use std::collections::HashMap;

use serde::Serialize;

use super::member::{Endpoint, Member, ProtocolName, RemoteSideName};

/// A remote-call record: member index and index in its `remotes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct CallRef {
    pub jvm: usize,
    pub call: usize,
}

/// A client call and the server execution it caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Match {
    pub client: CallRef,
    pub server: CallRef,
}

/// A connection as both sides name it: (client end, server end), and the call's
/// place on it.
type Key = (ProtocolName, Endpoint, Endpoint, u64);

#[derive(Default)]
struct Group {
    clients: Vec<CallRef>,
    servers: Vec<CallRef>,
}

/// Every client record matched to a server record of another JVM.
///
/// The key is the connection (client endpoint, server endpoint) and `conn_seq`.
/// A key is unique unless a port was reused for a later connection (or the same
/// JVM was loaded twice); the records of such a key are paired by their in-band
/// request id when all carry one, else in the order each side saw them (each on
/// its own clock).
pub fn match_calls(members: &[Member]) -> Vec<Match> {
    let mut groups: HashMap<Key, Group> = HashMap::new();
    for (jvm, m) in members.iter().enumerate() {
        for (call, r) in m.remotes.iter().enumerate() {
            let at = CallRef { jvm, call };
            match r.side {
                RemoteSideName::Client => {
                    let key = (r.protocol, r.local.clone(), r.remote.clone(), r.conn_seq);
                    groups.entry(key).or_default().clients.push(at);
                }
                RemoteSideName::Server => {
                    let key = (r.protocol, r.remote.clone(), r.local.clone(), r.conn_seq);
                    groups.entry(key).or_default().servers.push(at);
                }
            }
        }
    }
    let mut out: Vec<Match> = groups
        .into_values()
        .flat_map(|g| pair_group(members, g))
        .collect();
    out.extend(pair_by_request_id(members, &out));
    out.sort_by_key(|m| (m.client, m.server));
    out
}

/// Calls left unmatched by their connection (a side that could not read its
/// endpoints, an address written differently by the two sides) paired by their
/// in-band request id alone (an HTTP traceparent names one call: its span id is
/// new for every request).
fn pair_by_request_id(members: &[Member], matched: &[Match]) -> Vec<Match> {
    let taken: std::collections::HashSet<CallRef> =
        matched.iter().flat_map(|m| [m.client, m.server]).collect();
    let mut servers: HashMap<(ProtocolName, &str), Vec<CallRef>> = HashMap::new();
    let mut clients = Vec::new();
    for (jvm, m) in members.iter().enumerate() {
        for (call, r) in m.remotes.iter().enumerate() {
            let at = CallRef { jvm, call };
            let Some(id) = r.request_id.as_deref().filter(|_| !taken.contains(&at)) else {
                continue;
            };
            match r.side {
                RemoteSideName::Client => clients.push((r.protocol, id, at)),
                RemoteSideName::Server => servers.entry((r.protocol, id)).or_default().push(at),
            }
        }
    }
    clients
        .into_iter()
        .filter_map(|(protocol, id, client)| {
            let list = servers.get_mut(&(protocol, id))?;
            // Exactly one server of another JVM: an id reused by the application
            // on several calls is no proof of which is which.
            if list.len() != 1 {
                return None;
            }
            let m = pair_if_compatible(members, client, list[0])?;
            list.clear();
            Some(m)
        })
        .collect()
}

fn pair_group(members: &[Member], mut g: Group) -> Vec<Match> {
    let remote = |c: &CallRef| &members[c.jvm].remotes[c.call];
    if g.clients.len() == 1 && g.servers.len() == 1 {
        return pair_if_compatible(members, g.clients[0], g.servers[0])
            .into_iter()
            .collect();
    }
    let with_ids = g
        .clients
        .iter()
        .chain(&g.servers)
        .all(|c| remote(c).request_id.is_some());
    if with_ids {
        let by_id: HashMap<&str, CallRef> = g
            .servers
            .iter()
            .map(|s| (remote(s).request_id.as_deref().unwrap_or(""), *s))
            .collect();
        return g
            .clients
            .iter()
            .filter_map(|c| {
                let s = *by_id.get(remote(c).request_id.as_deref().unwrap_or(""))?;
                pair_if_compatible(members, *c, s)
            })
            .collect();
    }
    g.clients.sort_by_key(|c| (remote(c).start_ns, *c));
    g.servers.sort_by_key(|c| (remote(c).start_ns, *c));
    g.clients
        .iter()
        .zip(&g.servers)
        .filter_map(|(c, s)| pair_if_compatible(members, *c, *s))
        .collect()
}

/// A pair is refused when it links a JVM to itself or when both sides carry
/// request ids that differ (the in-band id is exact where present).
fn pair_if_compatible(members: &[Member], client: CallRef, server: CallRef) -> Option<Match> {
    if client.jvm == server.jvm {
        return None;
    }
    let (c, s) = (
        &members[client.jvm].remotes[client.call],
        &members[server.jvm].remotes[server.call],
    );
    if let (Some(a), Some(b)) = (&c.request_id, &s.request_id) {
        if a != b {
            return None;
        }
    }
    Some(Match { client, server })
}
