//! Java readers between the frameworks' HTTP methods and the agent.
//!
//! A handler that reads a request through JNI calls back into Java for each
//! getter: a trip through the JVM's call machinery that, once per request, runs
//! cold (its code and data long out of the caches), about 5 to 30 µs a call
//! here, most of the request context's cost. So the calls inserted into a
//! framework's method go to a small Java class instead (`crates/agent/java/src`,
//! compiled by `crates/agent/java/build.sh` into the class files embedded
//! here): it calls the request's getters in Java, where the JIT compiles them
//! with the method (the application calls most of them anyway), and hands the
//! agent plain values through one native of `jscope/Remote` (`served`,
//! `calling`, `answered`, `sends`, `leave` in `calls`; each given the current
//! thread, so the agent need not ask JVMTI for it). The native leaves them for
//! the site's handler (`take`), which then reads nothing itself. Anything a
//! reader's Java throws is caught there: the native is told there was nothing
//! to read.
//!
//! A reader is defined, with JNI's DefineClass, in the loader of the framework
//! class that calls it (only there are the framework's types visible), as that
//! class loads. Classes of a named module cannot read the loader's unnamed
//! module, where the reader lives: theirs, and those of a loader the reader
//! cannot be defined in, call `jscope/Remote.enter` as before.

use std::cell::Cell;

use super::http::Call;
use super::REMOTE;
use crate::jvm::{Jni, Jvmti};
use crate::sys;

pub(super) const JAVAX_SERVLET: &str = "jscope/fw/JavaxServlet";
pub(super) const JAKARTA_SERVLET: &str = "jscope/fw/JakartaServlet";
pub(super) const NETTY_READ: &str = "jscope/fw/NettyRead";
pub(super) const NETTY_ENCODE: &str = "jscope/fw/NettyEncode";
pub(super) const OKHTTP_CALL: &str = "jscope/fw/OkHttpCall";
pub(super) const OKHTTP_SEND: &str = "jscope/fw/OkHttpSend";
pub(super) const HC5_CALL: &str = "jscope/fw/Hc5Call";
pub(super) const HC5_SEND: &str = "jscope/fw/Hc5Send";

/// Each reader's class file.
pub(super) const READERS: [(&str, &[u8]); 8] = [
    (
        JAVAX_SERVLET,
        include_bytes!("../../java/classes/JavaxServlet.class"),
    ),
    (
        JAKARTA_SERVLET,
        include_bytes!("../../java/classes/JakartaServlet.class"),
    ),
    (
        NETTY_READ,
        include_bytes!("../../java/classes/NettyRead.class"),
    ),
    (
        NETTY_ENCODE,
        include_bytes!("../../java/classes/NettyEncode.class"),
    ),
    (
        OKHTTP_CALL,
        include_bytes!("../../java/classes/OkHttpCall.class"),
    ),
    (
        OKHTTP_SEND,
        include_bytes!("../../java/classes/OkHttpSend.class"),
    ),
    (HC5_CALL, include_bytes!("../../java/classes/Hc5Call.class")),
    (HC5_SEND, include_bytes!("../../java/classes/Hc5Send.class")),
];

/// At most this many (reader, loader) pairs are remembered; past that a
/// reader's definition in a new loader is tried and, failing as a duplicate
/// in a loader that has it, leaves that class on `jscope/Remote`.
const KEPT: usize = 256;

/// Whether `reader` can be called from a class of `package` (internal form)
/// that `loader` is loading: defined there now if it was not.
pub(super) fn ready(
    jvmti: Jvmti,
    env: Jni,
    loader: sys::jobject,
    package: &str,
    reader: &'static str,
) -> bool {
    if loader.is_null() || jvmti.in_named_module(loader, package) != Some(false) {
        return false;
    }
    let defined = |list: &[(&str, usize)]| {
        list.iter()
            .any(|&(r, weak)| r == reader && env.is_same_object(weak as sys::jobject, loader))
    };
    if defined(&REMOTE.readers.lock().unwrap_or_else(|e| e.into_inner())) {
        return true;
    }
    let Some(&(_, bytes)) = READERS.iter().find(|(r, _)| *r == reader) else {
        return false;
    };
    // Not under the lock: defining takes the loader's own lock, which a thread
    // loading a framework class holds while it waits for ours.
    let class = env.define_class(reader, loader, bytes);
    if class.is_null() {
        return false;
    }
    env.delete_local(class);
    let mut list = REMOTE.readers.lock().unwrap_or_else(|e| e.into_inner());
    if list.len() < KEPT {
        let weak = env.new_weak_global(loader);
        if !weak.is_null() {
            list.push((reader, weak as usize));
        }
    }
    true
}

/// What a reader read for its site's handler.
pub(super) enum Read {
    /// A served request, the key of its connection (a local reference valid
    /// while the native that left it runs, which is when its handler takes
    /// it) and, for a key that may move to another connection, its (local,
    /// remote) ports.
    Served(Call, sys::jobject, Option<(u32, u32)>),
    /// A client call (with the traceparent it sends).
    Calling(Call),
    /// The object an exchange goes over (a socket, a connection: one that
    /// stays with its connection), a local reference valid while the native
    /// that left it runs, which is when its handler takes it.
    Sends(sys::jobject),
    /// The status of a response being encoded.
    Answered(u32),
    /// Nothing to open (not an HTTP message, or the reader's Java failed).
    Nothing,
}

thread_local! {
    /// What a reader read for the handler its native runs on this thread.
    static READ: Cell<Option<Read>> = const { Cell::new(None) };
}

/// Leaves `read` for the handler about to run on this thread.
pub(super) fn leave_for_handler(read: Read) {
    READ.with(|r| r.set(Some(read)));
}

/// What the reader read for the handler running now (None: reached without
/// a reader; the handler reads for itself).
pub(super) fn take() -> Option<Read> {
    READ.with(Cell::take)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reader_is_a_class_file_of_its_name() {
        for (name, bytes) in READERS {
            let class = jscope_bytecode::ClassFile::parse(bytes).unwrap();
            assert_eq!(class.name().unwrap(), name);
        }
    }
}
