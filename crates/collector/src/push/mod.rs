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
    encode_file_start, ChunkWriter, ClassId, Frame, Header, IdMap, Interner, JvmEvent, MethodId,
    Recording, RequestId, Sample, StackId, StringId, ThreadId,
};
use jscope_store::identity::new_dictionary;
use jscope_store::when::now_ns;
use jscope_store::{JvmIdentity, Store};

use crate::http::{Request, Response};

mod formats;
mod pushed;

pub use pushed::{PushError, Pushed, PushedFrame, PushedSample, Source};

/// Samples one push may expand to (a folded line's count is that many samples).
const MAX_SAMPLES: u64 = 5_000_000;
/// Data chunks are cut at this size, well under the format's limit.
const CHUNK_BYTES: usize = 4 << 20;

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

    /// A pushed recording's requests are not kept (its samples carry none
    /// either): its events' ids would name nothing in the stream.
    fn request(&mut self, _: RequestId) -> RequestId {
        RequestId::NONE
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

/// A linked request of a push: (id, thread, first and last sample ticks).
type Linked = (u64, jscope_format::ThreadId, u64, u64);

/// A linked request's id, the same in every push of the link (never 0).
fn request_id((trace, span): ([u8; 16], u64)) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in trace.iter().chain(&span.to_be_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    // 48 bits: merging JVMs shifts ids past each other's without overflow.
    (h >> 16).max(1)
}

/// Writes the samples as data chunks (cut at [`CHUNK_BYTES`]) and makes them durable.
fn write(store: &dyn Store, id: &str, st: &mut Stream, pushed: &Pushed) -> Result<(), PushError> {
    let start = st.start_wall_ns();
    let mut w = ChunkWriter::new();
    let mut span: Option<(u64, u64)> = None;
    let mut stacks: HashMap<usize, StackId> = HashMap::new();
    let mut requests: HashMap<([u8; 16], u64), Linked> = HashMap::new();
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
            let ticks = wall.saturating_sub(start);
            let request = s.link.map_or(0, |link| {
                let r = requests
                    .entry(link)
                    .or_insert((request_id(link), thread, ticks, ticks));
                (r.2, r.3) = (r.2.min(ticks), r.3.max(ticks));
                r.0
            });
            w.sample(&Sample {
                request,
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
    // Each link a request, spanning its samples, so that the collector's
    // request filters and lists see what the pusher linked.
    for ((trace_id, span_id), (id, thread, first, last)) in requests {
        w.request(&jscope_format::Request {
            id,
            thread,
            ticks: first,
            duration_ns: last - first,
            trace_id,
            span_id,
            kind: jscope_format::RequestKind::Span,
            name: jscope_format::StringId::NONE,
            tags: jscope_format::StringId::NONE,
            ..Default::default()
        });
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
