//! Moving records from one recording's ids to another's: the one re-interning that
//! merging recordings, storing pushed profiles and rebuilding stacks from names
//! share.
//!
//! - [`Interner`]: a recording's dictionaries indexed by value, so a string, class,
//!   method, stack or thread name added twice gets one id; what it adds is kept
//!   for a caller that writes it into a chunk ([`Interner::take_added`]).
//! - [`IdMap`]: ids of one recording to another's. Every record kind maps through
//!   it: JVM events by the `event_kinds!` table ([`crate::EventKind::remap`]),
//!   samples, snapshots, trace batches, call aggregates and remote calls by
//!   [`Remapper::remap_into`].
//! - [`Remapper`]: the [`IdMap`] of a source recording into an [`Interner`], by
//!   names (classes by name and source file, methods by class, name, signature
//!   and modifiers, stacks by their frames).

use std::collections::HashMap;

use crate::{
    ClassDef, ClassId, Frame, IdMap, MethodDef, MethodId, Record, Recording, RequestId, StackId,
    StringId, ThreadDef, ThreadId, UserEventDef,
};

type MethodKey = (ClassId, StringId, StringId, u32);

/// A recording whose dictionaries grow by value: each string, class, method and
/// stack once. Id 0 stays "none" in every dictionary.
#[derive(Debug, Default)]
pub struct Interner {
    rec: Recording,
    strings: HashMap<String, StringId>,
    classes: HashMap<(StringId, StringId), ClassId>,
    methods: HashMap<MethodKey, MethodId>,
    stacks: HashMap<Vec<Frame>, StackId>,
    threads: HashMap<String, ThreadId>,
    user_events: HashMap<StringId, u32>,
    added: Vec<Record>,
}

/// The next id of a dictionary indexed by id, 0 being none.
fn next<T>(v: &[Option<T>]) -> u32 {
    v.len().max(1) as u32
}

impl Interner {
    /// Indexes `rec`'s dictionaries; what is added goes into `rec`.
    pub fn new(rec: Recording) -> Interner {
        let mut i = Interner {
            rec,
            ..Interner::default()
        };
        if i.rec.strings.is_empty() {
            i.rec.strings.push(String::new());
        }
        let r = &i.rec;
        for (n, s) in r.strings.iter().enumerate().skip(1) {
            i.strings.entry(s.clone()).or_insert(StringId(n as u32));
        }
        for c in r.classes.iter().flatten() {
            i.classes.entry((c.name, c.source_file)).or_insert(c.id);
        }
        for m in r.methods.iter().flatten() {
            let key = (m.class, m.name, m.signature, m.modifiers);
            i.methods.entry(key).or_insert(m.id);
        }
        for (n, frames) in r.stacks.iter().enumerate() {
            if let Some(f) = frames {
                i.stacks.entry(f.clone()).or_insert(StackId(n as u32));
            }
        }
        for t in r.threads.values() {
            i.threads.entry(t.name.clone()).or_insert(t.id);
        }
        for d in r.user_events.iter().flatten() {
            i.user_events.entry(d.name).or_insert(d.id);
        }
        i
    }

    /// The recording with everything added.
    pub fn recording(&self) -> &Recording {
        &self.rec
    }

    /// The recording, to add data records to.
    pub fn recording_mut(&mut self) -> &mut Recording {
        &mut self.rec
    }

    pub fn into_recording(self) -> Recording {
        self.rec
    }

    /// The dictionary records added since the last call, in the order added (a
    /// class after its strings, a stack after its methods).
    pub fn take_added(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.added)
    }

    fn add(&mut self, r: Record) {
        self.rec.apply(r.clone());
        self.added.push(r);
    }

    pub fn string(&mut self, s: &str) -> StringId {
        if s.is_empty() {
            return StringId::NONE;
        }
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = StringId(self.rec.strings.len() as u32);
        self.strings.insert(s.to_string(), id);
        self.add(Record::String {
            id,
            value: s.to_string(),
        });
        id
    }

    /// A class by name and source file (empty when unknown).
    pub fn class(&mut self, name: &str, source_file: &str) -> ClassId {
        if name.is_empty() && source_file.is_empty() {
            return ClassId(0);
        }
        let key = (self.string(name), self.string(source_file));
        if let Some(&id) = self.classes.get(&key) {
            return id;
        }
        let id = ClassId(next(&self.rec.classes));
        self.classes.insert(key, id);
        self.add(Record::Class(ClassDef {
            id,
            name: key.0,
            source_file: key.1,
        }));
        id
    }

    /// A method of `class` by name, signature and modifiers.
    pub fn method(
        &mut self,
        class: ClassId,
        name: &str,
        signature: &str,
        modifiers: u32,
    ) -> MethodId {
        let key = (class, self.string(name), self.string(signature), modifiers);
        if let Some(&id) = self.methods.get(&key) {
            return id;
        }
        let id = MethodId(next(&self.rec.methods));
        self.methods.insert(key, id);
        self.add(Record::Method(MethodDef {
            id,
            class,
            name: key.1,
            signature: key.2,
            modifiers,
        }));
        id
    }

    /// A stack of this recording's methods, top frame first.
    pub fn stack(&mut self, frames: Vec<Frame>) -> StackId {
        if let Some(&id) = self.stacks.get(&frames) {
            return id;
        }
        let id = StackId(next(&self.rec.stacks));
        self.stacks.insert(frames.clone(), id);
        self.add(Record::Stack { id, frames });
        id
    }

    /// The thread called `name`, declared the first time it is asked for.
    pub fn thread_named(&mut self, name: &str) -> ThreadId {
        if let Some(&id) = self.threads.get(name) {
            return id;
        }
        self.new_thread(ThreadDef {
            name: name.to_string(),
            ..ThreadDef::default()
        })
    }

    /// A thread of its own, even when another has its name (threads of several
    /// JVMs stay apart); `def`'s id and start order are assigned here.
    pub fn new_thread(&mut self, mut def: ThreadDef) -> ThreadId {
        let id = ThreadId(self.rec.threads.keys().map(|t| t.0).max().unwrap_or(0) + 1);
        def.id = id;
        def.start_order = id.0;
        self.threads.entry(def.name.clone()).or_insert(id);
        self.add(Record::Thread(def));
        id
    }

    /// A user event by name.
    pub fn user_event(&mut self, name: &str) -> u32 {
        let name = self.string(name);
        if let Some(&id) = self.user_events.get(&name) {
            return id;
        }
        let id = next(&self.rec.user_events);
        self.user_events.insert(name, id);
        self.add(Record::UserEventDef(UserEventDef { id, name }));
        id
    }
}

/// How a source recording's threads become the target's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Each its own thread (several JVMs merged: their `main`s stay apart).
    Apart,
    /// By name (pushes of one stream: the same thread push after push).
    ByName,
}

/// The ids of `from` as an [`Interner`]'s, by name; each id is looked up once.
pub struct Remapper<'a> {
    from: &'a Recording,
    to: &'a mut Interner,
    threads: Threads,
    memo: HashMap<(u8, u32), u32>,
    /// Request ids are a JVM's own: moved past the target's (as they were when
    /// the remapper was made) so that the requests of several JVMs stay apart in
    /// one recording.
    request_base: u64,
}

impl<'a> Remapper<'a> {
    pub fn new(from: &'a Recording, to: &'a mut Interner, threads: Threads) -> Remapper<'a> {
        let request_base = to.rec.requests.iter().map(|r| r.id).max().unwrap_or(0);
        Remapper {
            from,
            to,
            threads,
            memo: HashMap::new(),
            request_base,
        }
    }

    /// The id `kind`/`id` maps to, made by `make` the first time; 0 (none) stays 0.
    fn memo(&mut self, kind: u8, id: u32, make: impl FnOnce(&mut Self) -> u32) -> u32 {
        if id == 0 {
            return 0;
        }
        if let Some(&to) = self.memo.get(&(kind, id)) {
            return to;
        }
        let to = make(self);
        self.memo.insert((kind, id), to);
        to
    }

    /// Every data record of `from` (samples, snapshots, events, trace batches, call
    /// aggregates, remote calls) with its ids mapped, its times by `ticks`, added to
    /// the target recording.
    pub fn remap_into(&mut self, ticks: &dyn Fn(u64) -> u64) {
        let from = self.from;
        let request = |m: &mut Self, id: u64| m.request(RequestId(id)).0;
        for s in &from.samples {
            let mut s = *s;
            s.request = request(self, s.request);
            s.thread = self.thread(s.thread);
            s.carrier = self.carrier(s.carrier);
            s.stack = self.stack(s.stack);
            s.ticks = ticks(s.ticks);
            self.to.rec.samples.push(s);
        }
        for snap in &from.snapshots {
            let mut snap = snap.clone();
            snap.ticks = ticks(snap.ticks);
            for t in &mut snap.threads {
                t.thread = self.thread(t.thread);
                t.carrier = self.carrier(t.carrier);
                t.stack = self.stack(t.stack);
            }
            self.to.rec.snapshots.push(snap);
        }
        for e in &from.events {
            let mut e = e.remap(self);
            e.ticks = ticks(e.ticks);
            self.to.rec.events.push(e);
        }
        for b in &from.traces {
            let mut b = b.clone();
            b.thread = self.thread(b.thread);
            for e in &mut b.events {
                e.method = self.method(e.method);
                e.ticks = ticks(e.ticks);
            }
            self.to.rec.traces.push(b);
        }
        for a in &from.call_aggregates {
            let mut a = a.clone();
            a.thread = self.thread(a.thread);
            a.ticks = ticks(a.ticks);
            for p in &mut a.pairs {
                p.caller = self.method(p.caller);
                p.callee = self.method(p.callee);
            }
            self.to.rec.call_aggregates.push(a);
        }
        for c in &from.remote_calls {
            let mut c = *c;
            c.thread = self.thread(c.thread);
            c.ticks = ticks(c.ticks);
            for s in [
                &mut c.local_host,
                &mut c.remote_host,
                &mut c.object,
                &mut c.method,
                &mut c.request_id,
            ] {
                *s = self.string(*s);
            }
            c.stack = self.stack(c.stack);
            self.to.rec.remote_calls.push(c);
        }
        for r in &from.requests {
            let mut r = *r;
            (r.id, r.parent) = (request(self, r.id), request(self, r.parent));
            r.thread = self.thread(r.thread);
            r.ticks = ticks(r.ticks);
            r.name = self.string(r.name);
            r.tags = self.string(r.tags);
            self.to.rec.requests.push(r);
        }
    }

    /// A virtual thread's carrier is one of the same JVM's threads; none stays none.
    fn carrier(&mut self, c: ThreadId) -> ThreadId {
        if c == ThreadId::NONE {
            c
        } else {
            self.thread(c)
        }
    }
}

const STRING: u8 = 0;
const CLASS: u8 = 1;
const METHOD: u8 = 2;
const STACK: u8 = 3;
const THREAD: u8 = 4;
const USER_EVENT: u8 = 5;

impl IdMap for Remapper<'_> {
    fn string(&mut self, id: StringId) -> StringId {
        StringId(self.memo(STRING, id.0, |m| m.to.string(m.from.string(id)).0))
    }

    fn class(&mut self, id: ClassId) -> ClassId {
        ClassId(self.memo(CLASS, id.0, |m| {
            let Some(c) = m.from.class(id) else { return 0 };
            let (name, file) = (m.from.string(c.name), m.from.string(c.source_file));
            m.to.class(name, file).0
        }))
    }

    fn method(&mut self, id: MethodId) -> MethodId {
        MethodId(self.memo(METHOD, id.0, |m| {
            let Some(md) = m.from.method(id).copied() else {
                return 0;
            };
            let class = m.class(md.class);
            let (name, sig) = (m.from.string(md.name), m.from.string(md.signature));
            m.to.method(class, name, sig, md.modifiers).0
        }))
    }

    fn stack(&mut self, id: StackId) -> StackId {
        StackId(self.memo(STACK, id.0, |m| {
            let frames: Vec<Frame> = m
                .from
                .stack(id)
                .iter()
                .map(|f| Frame {
                    method: m.method(f.method),
                    ..*f
                })
                .collect();
            m.to.stack(frames).0
        }))
    }

    fn thread(&mut self, id: ThreadId) -> ThreadId {
        ThreadId(self.memo(THREAD, id.0, |m| {
            let def = m.from.thread(id).cloned().unwrap_or_else(|| ThreadDef {
                name: format!("thread {}", id.0),
                ..ThreadDef::default()
            });
            match m.threads {
                Threads::ByName => m.to.thread_named(&def.name).0,
                Threads::Apart => m.to.new_thread(def).0,
            }
        }))
    }

    fn request(&mut self, id: RequestId) -> RequestId {
        if id.is_none() {
            id
        } else {
            RequestId(id.0 + self.request_base)
        }
    }

    fn user_event(&mut self, id: u32) -> u32 {
        self.memo(USER_EVENT, id, |m| {
            let name = m
                .from
                .user_events
                .get(id as usize)
                .and_then(Option::as_ref)
                .map_or("", |d| m.from.string(d.name));
            m.to.user_event(name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventKind, FrameKind, JvmEvent};

    /// A recording with one method `Cls.name` on one stack, a thread `main` and a
    /// contended monitor on that stack, all ids 1.
    fn rec(cls: &str, name: &str) -> Recording {
        let mut r = Recording {
            strings: vec!["".into(), cls.into(), name.into()],
            classes: vec![
                None,
                Some(ClassDef {
                    id: ClassId(1),
                    name: StringId(1),
                    source_file: StringId(0),
                }),
            ],
            methods: vec![
                None,
                Some(MethodDef {
                    id: MethodId(1),
                    class: ClassId(1),
                    name: StringId(2),
                    ..MethodDef::default()
                }),
            ],
            stacks: vec![
                None,
                Some(vec![Frame {
                    method: MethodId(1),
                    bci: 0,
                    line: 1,
                    kind: FrameKind::Java,
                }]),
            ],
            ..Recording::default()
        };
        r.threads.insert(
            ThreadId(1),
            ThreadDef {
                id: ThreadId(1),
                name: "main".into(),
                ..ThreadDef::default()
            },
        );
        r.events.push(JvmEvent::on(
            ThreadId(1),
            5,
            EventKind::MonitorBlocked {
                duration_ns: 7,
                class: ClassId(1),
                object: 9,
                owner: ThreadId(1),
                stack: StackId(1),
                request: Default::default(),
            },
        ));
        r
    }

    #[test]
    fn a_second_recording_keeps_its_names_under_new_ids() {
        let mut to = Interner::new(rec("A", "run"));
        let other = rec("B", "work");
        Remapper::new(&other, &mut to, Threads::Apart).remap_into(&|t| t + 100);
        let r = to.into_recording();
        assert_eq!(r.events.len(), 2);
        let EventKind::MonitorBlocked {
            class,
            owner,
            stack,
            ..
        } = r.events[1].kind
        else {
            panic!("{:?}", r.events[1]);
        };
        assert_eq!(r.string(r.class(class).unwrap().name), "B");
        assert_eq!(
            (r.events[1].thread, owner, r.events[1].ticks),
            (ThreadId(2), ThreadId(2), 105)
        );
        assert_eq!(r.method_label(r.stack(stack)[0].method), "B.work");
        assert_eq!(r.threads.len(), 2, "the JVMs' threads stay apart");
    }

    #[test]
    fn events_requests_move_past_the_targets_as_samples_do() {
        let mut target = rec("A", "run");
        target.requests = (1..=3)
            .map(|id| crate::Request {
                id,
                ..crate::Request::default()
            })
            .collect();
        let mut other = rec("B", "work");
        let EventKind::MonitorBlocked { request, .. } = &mut other.events[0].kind else {
            unreachable!()
        };
        *request = RequestId(2);
        other.events.push(JvmEvent::on(
            ThreadId(1),
            6,
            EventKind::Alloc {
                class: ClassId(1),
                size: 16,
                stack: StackId(1),
                object: 0,
                allocated_total: 16,
                weight: 16,
                request: RequestId::NONE,
            },
        ));
        other.requests.push(crate::Request {
            id: 2,
            ..crate::Request::default()
        });
        let mut to = Interner::new(target);
        Remapper::new(&other, &mut to, Threads::Apart).remap_into(&|t| t);
        let r = to.into_recording();
        let requests: Vec<u64> = r.events.iter().map(JvmEvent::request).collect();
        assert_eq!(
            requests,
            [0, 5, 0],
            "2 moved past the target's 3; none stays none"
        );
        assert_eq!(r.requests.last().map(|q| q.id), Some(5));
    }

    #[test]
    fn what_is_known_keeps_its_id_and_what_is_added_is_said_once() {
        let mut to = Interner::new(rec("A", "run"));
        let same = rec("A", "run");
        let mut m = Remapper::new(&same, &mut to, Threads::ByName);
        assert_eq!(
            (m.stack(StackId(1)), m.thread(ThreadId(1))),
            (StackId(1), ThreadId(1))
        );
        assert!(to.take_added().is_empty());
        let c = to.class("C", "");
        let s = to.stack(vec![]);
        assert_eq!((to.class("C", ""), to.stack(vec![])), (c, s));
        let added: Vec<&str> = to
            .take_added()
            .iter()
            .map(|r| match r {
                Record::String { .. } => "string",
                Record::Class(_) => "class",
                Record::Stack { .. } => "stack",
                _ => "other",
            })
            .collect();
        assert_eq!(added, ["string", "class", "stack"]);
    }
}
