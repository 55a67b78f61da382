//! What every protocol's capture shares: the methods to break at and how
//! they are set, the order of calls on a connection, and the endpoints of a
//! socket.

use std::collections::HashMap;

use super::REMOTE;
use crate::jvm::breakpoints::{self, Handler};
use crate::jvm::{Jni, Jvmti};
use crate::sys;

/// (host address, port).
pub(super) type Endpoint = (String, u32);

/// The number of the next call on the connection between `local` and
/// `remote` (both sides count alike).
pub(super) fn next_seq(local: &Endpoint, remote: &Endpoint) -> u64 {
    let mut m = REMOTE.conn_seq.lock().unwrap_or_else(|e| e.into_inner());
    let n = m
        .get_or_insert_with(HashMap::new)
        .entry((local.clone(), remote.clone()))
        .or_insert(0);
    *n += 1;
    *n
}

/// A method to break at: (class signature, name, descriptor, its handler).
pub(super) type Target = (&'static str, &'static str, &'static str, Handler);

/// Sets a breakpoint at the entry of each target method of a prepared class,
/// routed to the target's handler.
pub(super) fn set_breakpoints(jvmti: Jvmti, sig: &str, class: sys::jclass, targets: &[Target]) {
    if !targets.iter().any(|t| t.0 == sig) {
        return;
    }
    for (m, name, desc) in jvmti.methods(class) {
        for (_, n, d, handler) in targets.iter().filter(|t| t.0 == sig) {
            if name == *n && desc == *d {
                breakpoints::set(jvmti, m, 0, *handler);
            }
        }
    }
}

/// The endpoints of a connected `java.net.Socket`, from this JVM's side.
pub(super) fn socket_endpoints(env: Jni, socket: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    if socket.is_null() {
        return None;
    }
    let host = |getter: &str| {
        let addr = env.call_object(socket, getter, "()Ljava/net/InetAddress;");
        let h = env.call_string(addr, "getHostAddress");
        env.delete_local(addr);
        h
    };
    let local = (
        host("getLocalAddress"),
        env.call_int(socket, "getLocalPort"),
    );
    let remote = (host("getInetAddress"), env.call_int(socket, "getPort"));
    match (local, remote) {
        ((Some(lh), Some(lp)), (Some(rh), Some(rp))) => Some(((lh, lp as u32), (rh, rp as u32))),
        _ => None,
    }
}

/// The `InetSocketAddress` a getter of `o` returns (`(name, descriptor)`), as
/// (host address, port).
pub(super) fn socket_address(
    env: Jni,
    o: sys::jobject,
    (getter, descriptor): (&str, &str),
) -> Option<Endpoint> {
    let sa = env.call_object(o, getter, descriptor);
    let addr = env.call_object(sa, "getAddress", "()Ljava/net/InetAddress;");
    let host = env.call_string(addr, "getHostAddress");
    let port = env.call_int(sa, "getPort");
    env.delete_local(addr);
    env.delete_local(sa);
    Some((host?, port? as u32))
}
