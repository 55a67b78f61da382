//! What every protocol's capture shares: the methods to break at and how
//! they are set (entries and returns), the calls open on a thread's stack,
//! the order of calls on a connection, and the endpoints of a socket.

use std::collections::HashMap;

use jscope_bytecode::insn;

use super::REMOTE;
use crate::jvm::breakpoints::{self, Handler, Hit};
pub(super) use crate::jvm::locals::Args;
use crate::jvm::{Jni, Jvmti, WeakRef};
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

/// The endpoints of the connections a thread used last, each under a weak
/// reference to the object they were read from (a socket, a channel, a
/// connection: one that stays with its connection), so that the next request
/// on a kept-alive connection reads none of them again.
#[derive(Default)]
pub(super) struct Connections {
    /// Oldest first.
    seen: Vec<(WeakRef, (Endpoint, Endpoint))>,
}

impl Connections {
    /// How many connections a thread remembers (a servlet thread calling a
    /// backend uses two per request).
    const KEPT: usize = 4;

    pub fn find(&self, env: Jni, connection: sys::jobject) -> Option<(Endpoint, Endpoint)> {
        self.seen
            .iter()
            .rev()
            .find(|(c, _)| c.is(env, connection))
            .map(|(_, ends)| ends.clone())
    }

    pub fn add(&mut self, env: Jni, connection: sys::jobject, ends: (Endpoint, Endpoint)) {
        let Some(weak) = WeakRef::new(env, connection) else {
            return;
        };
        if self.seen.len() >= Self::KEPT {
            self.seen.remove(0);
        }
        self.seen.push((weak, ends));
    }
}

/// A method to break at: class signature, name, descriptor, what to run at
/// its breakpoints, and whether its returns matter (then it breaks at every
/// return instruction too, `Hit::location` telling them from its entry, 0).
pub(super) struct Target {
    pub class: &'static str,
    pub name: &'static str,
    pub descriptor: &'static str,
    pub on_hit: fn(&Hit),
    pub returns: bool,
    /// The Java reader (`readers`) its inserted calls go through, which reads
    /// the method's arguments in Java; None: they call `jscope/Remote` itself.
    pub reader: Option<&'static str>,
}

impl Target {
    /// Breaks at the method's entry only.
    pub const fn entry(
        class: &'static str,
        name: &'static str,
        descriptor: &'static str,
        on_hit: fn(&Hit),
    ) -> Self {
        Self {
            class,
            name,
            descriptor,
            on_hit,
            returns: false,
            reader: None,
        }
    }

    /// Breaks at the method's entry and at each of its return instructions.
    pub const fn entry_and_returns(
        class: &'static str,
        name: &'static str,
        descriptor: &'static str,
        on_hit: fn(&Hit),
    ) -> Self {
        Self {
            returns: true,
            ..Self::entry(class, name, descriptor, on_hit)
        }
    }

    /// Its inserted calls go through `reader` (`readers::READERS`).
    pub const fn through(self, reader: &'static str) -> Self {
        Self {
            reader: Some(reader),
            ..self
        }
    }
}

// Why returns are breakpoints, not JVMTI frame pops: in HotSpot a thread
// waiting for a frame pop runs in the interpreter only, so a whole request
// would. Breakpoints leave everything else compiled. A frame left by an
// exception hits no return: it is noticed at the thread's next breakpoint of
// the same capture (see `Frames`), and its call then ends, failed.

/// Sets the breakpoints of each target method of a prepared class (its entry,
/// and its returns when they matter), routed to the target's `on_hit`, unless
/// the method has inserted calls. Returns how many methods got breakpoints.
pub(super) fn set_breakpoints(
    jvmti: Jvmti,
    sig: &str,
    class: sys::jclass,
    targets: &[Target],
) -> usize {
    if !targets.iter().any(|t| t.class == sig) {
        return 0;
    }
    let mut set = 0;
    for (m, name, desc) in jvmti.methods(class) {
        for t in targets.iter().filter(|t| t.class == sig) {
            if name != t.name || desc != t.descriptor || inserted(sig, &name, &desc) {
                continue;
            }
            let handler = Handler {
                on_breakpoint: t.on_hit,
            };
            if !breakpoints::set(jvmti, m, 0, handler) {
                missed(sig, &name, &desc);
                continue;
            }
            REMOTE
                .breakpointed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            set += 1;
            if t.returns {
                for at in jvmti
                    .bytecodes(m)
                    .map(|c| returns_of(&c))
                    .unwrap_or_default()
                {
                    breakpoints::set(jvmti, m, at, handler);
                }
            }
        }
    }
    set
}

/// A target method with neither inserted calls (its class loaded before they
/// could be, or the rewriter refused it) nor a breakpoint (the capability is
/// held only with RMI or park events): its calls are not captured; said once
/// per method, and counted.
fn missed(sig: &str, name: &str, desc: &str) {
    REMOTE
        .missed
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let class = sig.trim_start_matches('L').trim_end_matches(';');
    crate::report(format!(
        "{class}.{name}{desc} is not captured: it has no inserted calls, and breakpoints \
         are off (remote=rmi or events=park turn them on)"
    ));
}

/// Whether calls inserted into `sig.name desc` stand for its breakpoints
/// (`calls`).
fn inserted(sig: &str, name: &str, desc: &str) -> bool {
    let list = REMOTE.inserted.lock().unwrap_or_else(|e| e.into_inner());
    list.iter()
        .any(|(s, n, d)| s == sig && n == name && d == desc)
}

/// The offsets of a method's return instructions (none at 0, its entry).
fn returns_of(code: &[u8]) -> Vec<i64> {
    insn::decode(code)
        .unwrap_or_default()
        .iter()
        .filter(|i| (insn::op::IRETURN..=insn::op::RETURN).contains(&i.opcode) && i.offset > 0)
        .map(|i| i64::from(i.offset))
        .collect()
}

/// Where a breakpoint fired in its thread's stack: the depth of the frame
/// that hit it, and whether at the method's entry (else at a return).
#[derive(Clone, Copy)]
pub(super) struct At {
    pub depth: i32,
    pub entry: bool,
}

impl At {
    /// None when the thread's stack cannot be read. The depth the inserted
    /// calls counted, else JVMTI's (an inserted call's native frame not
    /// counted: depths are the method's own, as at a breakpoint).
    pub fn of(hit: &Hit) -> Option<Self> {
        let depth = match hit.depth {
            Some(d) => d,
            None => hit.jvmti.frame_count(hit.thread)? - i32::from(hit.inserted),
        };
        Some(Self {
            depth,
            entry: hit.location == 0,
        })
    }

    /// Frames entered at this depth or deeper are gone: at an entry, the
    /// frame's own depth; at a return, the frames below it.
    pub fn gone_from(self) -> i32 {
        if self.entry {
            self.depth
        } else {
            self.depth + 1
        }
    }
}

/// A thread's open calls of one capture, each with the stack depth of the
/// frame that made it, innermost last.
pub(super) struct Frames<T>(Vec<(i32, T)>);

impl<T> Default for Frames<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T> Frames<T> {
    pub fn push(&mut self, depth: i32, call: T) {
        self.0.push((depth, call));
    }

    /// Takes the innermost call whose frame is gone at `at` (left by an
    /// exception: no return of it was hit); call it until None.
    pub fn take_left(&mut self, at: At) -> Option<T> {
        let gone = self.0.last().is_some_and(|(d, _)| *d >= at.gone_from());
        gone.then(|| self.0.pop().map(|(_, c)| c)).flatten()
    }

    /// At a return: the call of the returning frame, if it made one.
    pub fn take_returning(&mut self, at: At) -> Option<T> {
        let own = !at.entry && self.0.last().is_some_and(|(d, _)| *d == at.depth);
        own.then(|| self.0.pop().map(|(_, c)| c)).flatten()
    }

    /// Takes the innermost call, its frame still on the stack.
    pub fn pop(&mut self) -> Option<T> {
        self.0.pop().map(|(_, c)| c)
    }

    pub fn last_mut(&mut self) -> Option<&mut T> {
        self.0.last_mut().map(|(_, c)| c)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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

/// The (local, remote) endpoints two address getters of `o` return (`getters`,
/// both of type `descriptor`: a `SocketAddress` that is an
/// `InetSocketAddress`).
pub(super) fn socket_addresses(
    env: Jni,
    o: sys::jobject,
    (local, remote): (&str, &str),
    descriptor: &str,
) -> Option<(Endpoint, Endpoint)> {
    let local = socket_address(env, o, (local, descriptor))?;
    Some((local, socket_address(env, o, (remote, descriptor))?))
}

/// The `InetSocketAddress` a getter of `o` returns (`(name, descriptor)`), as
/// (host address, port).
fn socket_address(
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
