//! Pushed profiles: Pyroscope's HTTP ingest (`POST /ingest`) and OTLP profiles over
//! HTTP (`POST /v1development/profiles`), so JVMs that run pyroscope-java or an
//! OpenTelemetry profiler show up beside jscope agents.
//!
//! Every push is parsed whole into [`Pushed`] first (a bad body stores nothing),
//! then written as data chunks of one stream per service and label set: a JVM in
//! the store like an agent's, whose dictionary grows with each push (names, methods
//! and stacks are interned once per stream, so pushes never reuse each other's ids).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jscope_format::{
    encode_file_start, ChunkWriter, ClassId, Frame, FrameKind, Header, IdMap, Interner, JvmEvent,
    MethodId, Recording, Sample, SampleMode, StackId, StringId, ThreadId,
};

use crate::http::{Request, Response};
use crate::push_formats as formats;
use jscope_store::identity::new_dictionary;
use jscope_store::when::now_ns;
use jscope_store::JvmIdentity;
use jscope_store::{Store, StoreError};

/// Samples one push may expand to (a folded line's count is that many samples).
const MAX_SAMPLES: u64 = 5_000_000;
/// Data chunks are cut at this size, well under the format's limit.
const CHUNK_BYTES: usize = 4 << 20;

/// Why a push was refused: the HTTP status and a one-line reason.
#[derive(Debug)]
pub struct PushError {
    pub status: u16,
    pub message: String,
}

impl PushError {
    pub fn bad(message: impl Into<String>) -> PushError {
        PushError {
            status: 400,
            message: format!("jscope: {}", message.into()),
        }
    }
}

impl From<StoreError> for PushError {
    fn from(e: StoreError) -> PushError {
        PushError {
            status: 500,
            message: format!("jscope: storing the push failed: {e}"),
        }
    }
}

/// One pushed frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PushedFrame {
    /// `com.acme.Foo`; empty when the name has no class part.
    pub class: String,
    pub method: String,
    pub line: u32,
    pub kind: FrameKind,
    /// Native or kernel code: `class` is its library (`libc.so.6`, `[kernel]`, or
    /// empty when unknown) and `method` its symbol, so the frame's label is the
    /// name as pushed (`start_thread [libc.so.6]`, `do_syscall_64_[k]`).
    pub native: bool,
}

impl PushedFrame {
    /// Splits `com.acme.Foo.bar` (or `com/acme/Foo.bar`) at its last separator; a
    /// trailing argument list is dropped. Names that say they are native, as
    /// jscope and async-profiler print them (`sym [lib]`, `sym_[k]`, C++'s
    /// `Class::method`), stay whole, as native frames.
    pub fn from_name(name: &str, line: u32, kind: FrameKind) -> PushedFrame {
        let name = name.trim();
        if let Some(f) = PushedFrame::native(name, line) {
            return f;
        }
        let name = match name.find('(') {
            Some(i) if i > 0 => &name[..i],
            _ => name,
        };
        let (class, method) = match (name.rfind("::"), name.rfind('.')) {
            (Some(i), _) => (&name[..i], &name[i + 2..]),
            (None, Some(i)) if i > 0 && i + 1 < name.len() => (&name[..i], &name[i + 1..]),
            _ => ("", name),
        };
        PushedFrame {
            class: class.replace('/', "."),
            method: method.to_string(),
            line,
            kind,
            native: false,
        }
    }

    /// A native or kernel frame's library and symbol, when `name` says it is one.
    fn native(name: &str, line: u32) -> Option<PushedFrame> {
        let (library, symbol, kind) = if let Some(symbol) = name.strip_suffix("_[k]") {
            ("[kernel]", symbol, FrameKind::Kernel)
        } else if let Some((symbol, library)) = name
            .strip_suffix(']')
            .and_then(|n| n.rsplit_once(" ["))
            .filter(|(s, l)| !s.is_empty() && !l.is_empty())
        {
            let kind = if library == "libjvm.so" {
                FrameKind::Vm
            } else {
                FrameKind::Native
            };
            (library, symbol, kind)
        } else if name.contains("::") {
            ("", name, FrameKind::Native)
        } else {
            return None;
        };
        Some(PushedFrame {
            class: library.to_string(),
            method: symbol.to_string(),
            line,
            kind,
            native: true,
        })
    }
}

/// Observations of one stack on one thread.
#[derive(Debug, Clone)]
pub struct PushedSample {
    /// Index into [`Pushed::stacks`].
    pub stack: usize,
    pub thread: String,
    pub mode: SampleMode,
    /// How many samples, spread evenly over `[from_ns, to_ns]` (epoch ns).
    pub count: u64,
    pub from_ns: u64,
    pub to_ns: u64,
    /// What each sample stands for.
    pub weight_ns: u64,
    /// JVMTI state bits; 0 when unknown.
    pub state: u32,
}

/// A parsed push: stacks (top frame first) and their samples.
#[derive(Debug, Clone, Default)]
pub struct Pushed {
    pub stacks: Vec<Vec<PushedFrame>>,
    pub samples: Vec<PushedSample>,
    /// Profile types the push held that jscope does not store (alloc, lock, ...).
    pub skipped: Vec<String>,
    /// A pushed JFR recording, whose JVM events (allocations, monitors, parks, GC,
    /// thread starts and ends) are stored beside the samples.
    pub events_of: Option<Recording>,
}

impl Pushed {
    /// The index of a stack, added once.
    pub fn stack(
        &mut self,
        index: &mut HashMap<Vec<PushedFrame>, usize>,
        frames: Vec<PushedFrame>,
    ) -> usize {
        let stacks = &mut self.stacks;
        *index.entry(frames).or_insert_with_key(|f| {
            stacks.push(f.clone());
            stacks.len() - 1
        })
    }

    fn total(&self) -> u64 {
        self.samples
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.count))
    }

    fn events(&self) -> usize {
        self.events_of.as_ref().map_or(0, |r| r.events.len())
    }
}

/// Who pushed: the stream's service, labels and where it came from.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub service: String,
    pub labels: Vec<(String, String)>,
    /// `pyroscope` or `otlp`.
    pub protocol: &'static str,
    /// The client, e.g. Pyroscope's `spyName`.
    pub client: String,
    pub host: String,
    pub pid: u32,
    pub command_line: String,
    pub interval_ns: u64,
}

impl Source {
    /// A stable stream id: the service's name and a hash of service and labels.
    pub fn stream_id(&self) -> String {
        let mut key = self.service.clone();
        let mut labels = self.labels.clone();
        labels.sort();
        for (k, v) in &labels {
            key.push('\0');
            key.push_str(k);
            key.push('=');
            key.push_str(v);
        }
        let name: String = self
            .service
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let name = name.trim_start_matches('.');
        let name = if name.is_empty() { "service" } else { name };
        format!("{name}-{:08x}", crc32c::crc32c(key.as_bytes()))
    }
}

/// A pushed stream's dictionary and where it stands.
struct Stream {
    /// Names, methods, stacks and threads once per stream, across pushes.
    dict: Interner,
    next_seq: u64,
}

impl Stream {
    fn new(dict: Recording, next_seq: u64) -> Stream {
        Stream {
            dict: Interner::new(dict),
            next_seq,
        }
    }

    fn start_wall_ns(&self) -> u64 {
        self.dict.recording().header.start_wall_ns
    }

    /// Declares in `w` what the dictionary gained since the last call.
    fn declare(&mut self, w: &mut ChunkWriter) {
        for r in self.dict.take_added() {
            w.dictionary_entry(&r);
        }
    }

    fn method(&mut self, f: &PushedFrame) -> MethodId {
        // Native code is a method with the native modifier and no signature, whose
        // class names its library (docs/FORMAT.md).
        let class = self.dict.class(&f.class, "");
        let modifiers = if f.native { 0x100 } else { 0 };
        self.dict.method(class, &f.method, "", modifiers)
    }

    fn stack(&mut self, frames: &[PushedFrame]) -> StackId {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|f| Frame {
                method: self.method(f),
                bci: -1,
                line: f.line,
                kind: f.kind,
            })
            .collect();
        self.dict.stack(frames)
    }
}

/// A pushed recording's ids as the stream's: classes, methods, stacks and threads by
/// name, as the push's samples are named, so its events and samples share them.
struct PushIds<'a> {
    rec: &'a Recording,
    st: &'a mut Stream,
    stacks: HashMap<StackId, StackId>,
}

impl IdMap for PushIds<'_> {
    fn string(&mut self, id: StringId) -> StringId {
        self.st.dict.string(self.rec.string(id))
    }

    fn class(&mut self, id: ClassId) -> ClassId {
        let name = self.rec.class(id).map_or("", |c| self.rec.string(c.name));
        self.st.dict.class(name, "")
    }

    fn method(&mut self, id: MethodId) -> MethodId {
        let frame = Frame {
            method: id,
            ..Frame::default()
        };
        self.st.method(&formats::pushed_frame(self.rec, &frame))
    }

    fn stack(&mut self, id: StackId) -> StackId {
        if id == StackId::NONE {
            return id;
        }
        if let Some(&s) = self.stacks.get(&id) {
            return s;
        }
        let s = self.st.stack(&formats::frames_of(self.rec, id));
        self.stacks.insert(id, s);
        s
    }

    fn thread(&mut self, id: ThreadId) -> ThreadId {
        if id == ThreadId::NONE {
            return id;
        }
        self.st
            .dict
            .thread_named(&formats::thread_name(self.rec, id))
    }

    fn user_event(&mut self, id: u32) -> u32 {
        let def = self
            .rec
            .user_events
            .get(id as usize)
            .and_then(Option::as_ref);
        let name = def.map_or("", |d| self.rec.string(d.name));
        self.st.dict.user_event(name)
    }
}

/// The pushed streams this collector has written to since it started: a cache of
/// their dictionaries, checked against the store at every push.
#[derive(Default)]
pub struct Pushes {
    streams: Mutex<HashMap<String, Arc<Mutex<Stream>>>>,
}

fn header_of(src: &Source, start_wall_ns: u64, modes: &str) -> Header {
    Header {
        agent_version: format!("{} push", src.protocol),
        pid: src.pid,
        host: src.host.clone(),
        command_line: src.command_line.clone(),
        vm_name: if src.client.is_empty() {
            src.protocol.to_string()
        } else {
            format!("{} ({})", src.protocol, src.client)
        },
        start_wall_ns,
        start_ticks: 0,
        ticks_per_second: 1_000_000_000,
        modes: modes.to_string(),
        interval_ns: src.interval_ns,
        extra: vec![("service".into(), src.service.clone())],
        ..Header::default()
    }
}

impl Pushes {
    /// Stores a parsed push under its source's stream; returns the stream id and the
    /// samples stored.
    pub fn store(
        &self,
        store: &dyn Store,
        src: &Source,
        pushed: &Pushed,
    ) -> Result<(String, u64), PushError> {
        let total = pushed.total();
        if total > MAX_SAMPLES {
            return Err(PushError::bad(format!(
                "the push holds {total} samples, over the limit of {MAX_SAMPLES}"
            )));
        }
        let id = src.stream_id();
        if total == 0 && pushed.events() == 0 {
            return Ok((id, 0));
        }
        let stream = {
            // Held while a new stream opens, so that two first pushes of one stream
            // open it once; opening reads at most the stream's last segment.
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            match streams.get(&id) {
                Some(s) => s.clone(),
                None => {
                    let s = Arc::new(Mutex::new(self.open(store, &id, src, pushed)?));
                    streams.insert(id.clone(), s.clone());
                    s
                }
            }
        };
        let mut st = stream.lock().unwrap_or_else(|e| e.into_inner());
        // The cached stream is stale when another collector of a shared store
        // wrote to it since: carry on where the store stands.
        if store.acked(&id)?.is_some_and(|acked| acked >= st.next_seq) {
            *st = self.open(store, &id, src, pushed)?;
        }
        write(store, &id, &mut st, pushed)?;
        Ok((id, total))
    }

    /// Opens the stream in the store: where it stands if a earlier run stored it,
    /// else a new JVM whose clock starts at the push's first sample.
    fn open(
        &self,
        store: &dyn Store,
        id: &str,
        src: &Source,
        pushed: &Pushed,
    ) -> Result<Stream, PushError> {
        let first = pushed
            .samples
            .iter()
            .map(|s| s.from_ns)
            .min()
            .unwrap_or_else(now_ns);
        let mut modes: Vec<&str> = pushed.samples.iter().map(|s| s.mode.name()).collect();
        modes.sort();
        modes.dedup();
        let (dict, next_seq) = match store.resume(id)? {
            Some(status) => (status.dict, status.acked + 1),
            None => {
                let header = header_of(src, first, &modes.join("+"));
                (new_dictionary(&header), 1)
            }
        };
        let mut identity = JvmIdentity::from_header(id, &dict.header, "", &src.labels);
        identity.service = src.service.clone();
        store.open(&identity, &encode_file_start(&dict.header), next_seq, &dict)?;
        Ok(Stream::new(dict, next_seq))
    }
}

/// Writes the samples as data chunks (cut at [`CHUNK_BYTES`]) and makes them durable.
fn write(store: &dyn Store, id: &str, st: &mut Stream, pushed: &Pushed) -> Result<(), PushError> {
    let start = st.start_wall_ns();
    let mut w = ChunkWriter::new();
    let mut span: Option<(u64, u64)> = None;
    let mut stacks: HashMap<usize, StackId> = HashMap::new();
    for s in &pushed.samples {
        let stack = match stacks.get(&s.stack) {
            Some(&id) => id,
            None => {
                let id = st.stack(&pushed.stacks[s.stack]);
                stacks.insert(s.stack, id);
                id
            }
        };
        let thread = st.dict.thread_named(&s.thread);
        st.declare(&mut w);
        let (from, to) = (s.from_ns.min(s.to_ns), s.to_ns.max(s.from_ns));
        for i in 0..s.count {
            let wall = from + ((to - from) as u128 * i as u128 / s.count as u128) as u64;
            w.sample(&Sample {
                thread,
                carrier: Default::default(),
                ticks: wall.saturating_sub(start),
                stack,
                mode: s.mode,
                weight_ns: s.weight_ns,
                state: s.state,
            });
            let wall = wall.max(start);
            span = Some(span.map_or((wall, wall), |(a, b)| (a.min(wall), b.max(wall))));
            if w.raw_len() >= CHUNK_BYTES {
                append(store, id, st, &mut w, span.take())?;
            }
        }
    }
    if let Some(rec) = &pushed.events_of {
        let mut ids = PushIds {
            rec,
            st,
            stacks: HashMap::new(),
        };
        for e in &rec.events {
            let wall = rec
                .header
                .start_wall_ns
                .saturating_add(rec.ticks_to_ns(e.ticks));
            let e = JvmEvent {
                ticks: wall.saturating_sub(start),
                ..e.remap(&mut ids)
            };
            ids.st.declare(&mut w);
            w.event(&e);
            let lo = start.saturating_add(e.ticks);
            let hi = lo.saturating_add(jscope_store::identity::event_ticks(&e).2);
            span = Some(span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            if w.raw_len() >= CHUNK_BYTES {
                append(store, id, ids.st, &mut w, span.take())?;
            }
        }
    }
    if !w.is_empty() {
        append(store, id, st, &mut w, span)?;
    }
    store.sync(id)?;
    Ok(())
}

fn append(
    store: &dyn Store,
    id: &str,
    st: &mut Stream,
    w: &mut ChunkWriter,
    span: Option<(u64, u64)>,
) -> Result<(), PushError> {
    let chunk = w.finish();
    store.append(id, st.next_seq, &chunk, span, st.dict.recording())?;
    st.next_seq += 1;
    Ok(())
}

/// `POST /ingest`: Pyroscope's ingest API.
pub fn ingest(pushes: &Pushes, store: &dyn Store, req: &Request) -> Result<Response, PushError> {
    let (src, pushed) = formats::pyroscope(req)?;
    let (id, samples) = pushes.store(store, &src, &pushed)?;
    Ok(Response::json(&serde_json::json!({
        "jvm": id,
        "service": src.service,
        "samples": samples,
        "events": pushed.events(),
        "skipped": pushed.skipped,
    })))
}

/// `POST /v1development/profiles`: an OTLP `ExportProfilesServiceRequest`; the
/// reply is an empty `ExportProfilesServiceResponse`.
pub fn otlp(pushes: &Pushes, store: &dyn Store, req: &Request) -> Result<Response, PushError> {
    let resources = formats::otlp(req)?;
    for (src, pushed) in &resources {
        pushes.store(store, src, pushed)?;
    }
    Ok(Response::bytes(
        "application/x-protobuf",
        formats::otlp_response(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_split_at_the_last_separator() {
        let f = |n| {
            let p = PushedFrame::from_name(n, 0, FrameKind::Java);
            (p.class, p.method)
        };
        assert_eq!(f("com.acme.Foo.bar"), ("com.acme.Foo".into(), "bar".into()));
        assert_eq!(
            f("com/acme/Foo.bar(I)V"),
            ("com.acme.Foo".into(), "bar".into())
        );
        assert_eq!(f("start_thread"), ("".into(), "start_thread".into()));
    }

    #[test]
    fn native_and_kernel_frame_names_stay_whole() {
        let f = |n| {
            let p = PushedFrame::from_name(n, 0, FrameKind::Java);
            (p.class, p.method, p.kind, p.native)
        };
        assert_eq!(
            f("start_thread [libc.so.6]"),
            (
                "libc.so.6".into(),
                "start_thread".into(),
                FrameKind::Native,
                true
            )
        );
        assert_eq!(
            f("JavaThread::run() [libjvm.so]"),
            (
                "libjvm.so".into(),
                "JavaThread::run()".into(),
                FrameKind::Vm,
                true
            )
        );
        assert_eq!(
            f("do_syscall_64_[k]"),
            (
                "[kernel]".into(),
                "do_syscall_64".into(),
                FrameKind::Kernel,
                true
            )
        );
        assert_eq!(
            f("std::vec::push"),
            ("".into(), "std::vec::push".into(), FrameKind::Native, true)
        );
        assert!(!f("[unknown_java]").3, "not a library suffix");
    }

    #[test]
    fn stream_ids_are_stable_and_valid() {
        let src = |labels: &[(&str, &str)]| Source {
            service: "my app/1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Source::default()
        };
        let a = src(&[("env", "prod"), ("region", "eu")]).stream_id();
        let b = src(&[("region", "eu"), ("env", "prod")]).stream_id();
        let c = src(&[("env", "dev")]).stream_id();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("my_app_1-"), "{a}");
        assert!(jscope_wire::valid_stream_id(&a));
    }
}
