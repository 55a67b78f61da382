//! Typed ids: the numbers by which records refer to dictionary entries. Each kind
//! of entry has its own type, so a class id cannot be passed where a method id is
//! meant. Writers assign ids (from 1; 0 means none or unknown) and readers index by
//! them; on the wire each is a varint, as a bare `u32` was.

use std::fmt;

macro_rules! typed_ids {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// Id 0: no entry (an absent source file, an unknown thread, ...).
            pub const NONE: $name = $name(0);

            pub fn is_none(self) -> bool {
                self.0 == 0
            }

            /// The id as an index into a table kept by id.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl From<u32> for $name {
            fn from(v: u32) -> $name {
                $name(v)
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0.into()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

typed_ids! {
    /// A string of the recording's string dictionary.
    StringId;
    /// A class declared by a class record.
    ClassId;
    /// A method declared by a method record.
    MethodId;
    /// A stack (frames, top first) declared by a stack record.
    StackId;
    /// A recording thread, declared by a thread record; 0 is the process-wide timeline.
    ThreadId;
}

/// The request an event's thread was serving when it happened
/// ([`crate::Request::id`]), 0 for none. A JVM's own number, so merging
/// recordings moves it ([`IdMap::request`]), as it moves a sample's `request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RequestId(pub u64);

impl RequestId {
    /// No request.
    pub const NONE: RequestId = RequestId(0);

    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

impl From<RequestId> for u64 {
    fn from(id: RequestId) -> u64 {
        id.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Ids of one recording to another's.
pub trait IdMap {
    fn string(&mut self, id: StringId) -> StringId;
    fn class(&mut self, id: ClassId) -> ClassId;
    fn method(&mut self, id: MethodId) -> MethodId;
    fn stack(&mut self, id: StackId) -> StackId;
    fn thread(&mut self, id: ThreadId) -> ThreadId;
    /// A user event id (`UserEventDef::id`).
    fn user_event(&mut self, id: u32) -> u32;
    /// A request id; none stays none.
    fn request(&mut self, id: RequestId) -> RequestId;
}
