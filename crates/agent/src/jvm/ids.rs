//! Method and field ids resolved once per class: a handler that calls
//! `o.name()` or reads `o.field` by name asks the JVM for the id (a symbol
//! lookup of the name and descriptor, then a search of the class and its
//! supertypes; for a class without the member, a NoSuchMethodError with its
//! stack trace) only the first time it meets `o`'s class; after that the id
//! is found by comparing `o`'s class with the classes seen, one
//! `IsSameObject` each.
//!
//! A class is held by a weak global reference, so the cache never keeps a
//! class (or its loader) alive: an unloaded class's entry no longer matches
//! any class. An id is valid while its class is loaded, which a live instance
//! of it guarantees. The entries are never removed (their weak references
//! stay valid handles for the process) and there are at most [`MAX`]; past
//! that, ids are looked up as if uncached.

use std::ptr::null_mut;
use std::sync::Mutex;

use super::Jni;
use crate::sys;

/// At most this many (class, member) pairs are cached.
const MAX: usize = 1024;

/// The most classes one member name is compared against (a member of more
/// classes than this is looked up uncached for the rest).
const PER_NAME: usize = 8;

/// Which kind of id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Member {
    Method,
    Field,
}

struct Entry {
    member: Member,
    name: Box<str>,
    descriptor: Box<str>,
    /// A weak global reference to the class.
    class: usize,
    /// The jmethodID or jfieldID; 0 when the class has no such member.
    id: usize,
}

/// The process's resolved ids.
static IDS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

impl Entry {
    fn is(&self, member: Member, name: &str, descriptor: &str) -> bool {
        self.member == member && &*self.name == name && &*self.descriptor == descriptor
    }
}

/// The id of `name` with `descriptor` in `class` (a local reference to a
/// live class), through the cache; `resolve` asks the JVM (null: none, which
/// is cached as well).
pub(super) fn id_of(
    env: &Jni,
    class: sys::jclass,
    (member, name, descriptor): (Member, &str, &str),
    resolve: impl FnOnce() -> *mut std::ffi::c_void,
) -> *mut std::ffi::c_void {
    if class.is_null() {
        return null_mut();
    }
    {
        // IsSameObject runs no Java code, so nothing re-enters the lock.
        let entries = IDS.lock().unwrap_or_else(|e| e.into_inner());
        let seen = entries.iter().filter(|e| e.is(member, name, descriptor));
        for e in seen {
            if env.is_same_object(class, e.class as sys::jobject) {
                return e.id as *mut std::ffi::c_void;
            }
        }
    }
    // A class without the member is remembered too: asking again would throw
    // (and fill the stack trace of) a NoSuchMethodError each time.
    let id = resolve();
    let weak = env.new_weak_global(class);
    if weak.is_null() {
        return id;
    }
    let mut entries = IDS.lock().unwrap_or_else(|e| e.into_inner());
    let same = entries
        .iter()
        .filter(|e| e.is(member, name, descriptor))
        .count();
    if entries.len() < MAX && same < PER_NAME {
        entries.push(Entry {
            member,
            name: name.into(),
            descriptor: descriptor.into(),
            class: weak as usize,
            id: id as usize,
        });
    } else {
        drop(entries);
        env.delete_weak_global(weak);
    }
    id
}
