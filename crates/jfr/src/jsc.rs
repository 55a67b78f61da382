//! Writes a [`Recording`] as a `.jsc` file: the header chunk, then data chunks with
//! the dictionaries first (so a streaming reader knows every name before it is
//! used) and the samples, events and traces after them.

use jscope_format::{encode_file_start, ChunkWriter, Recording, StackId, StringId};

/// Chunks are cut once this much is buffered, well under the format's limit.
const CHUNK_BYTES: usize = 4 << 20;

struct Chunks {
    w: ChunkWriter,
    out: Vec<u8>,
}

impl Chunks {
    fn maybe_cut(&mut self) {
        if self.w.raw_len() >= CHUNK_BYTES {
            self.out.extend(self.w.finish());
        }
    }
}

/// The bytes of a `.jsc` file holding what `rec` holds.
pub fn encode_jsc(rec: &Recording) -> Vec<u8> {
    let mut c = Chunks {
        w: ChunkWriter::new(),
        out: encode_file_start(&rec.header),
    };
    for (i, s) in rec.strings.iter().enumerate().skip(1) {
        c.w.string(StringId(i as u32), s);
        c.maybe_cut();
    }
    for class in rec.classes.iter().flatten() {
        c.w.class(class);
    }
    for m in rec.methods.iter().flatten() {
        c.w.method(m);
        c.maybe_cut();
    }
    for t in rec.threads.values() {
        c.w.thread(t);
    }
    for (i, frames) in rec.stacks.iter().enumerate() {
        if let Some(frames) = frames {
            c.w.stack(StackId(i as u32), frames);
            c.maybe_cut();
        }
    }
    for d in rec.user_events.iter().flatten() {
        c.w.user_event_def(d);
    }
    for s in &rec.samples {
        c.w.sample(s);
        c.maybe_cut();
    }
    for s in &rec.snapshots {
        c.w.snapshot(s);
        c.maybe_cut();
    }
    for e in &rec.events {
        c.w.event(e);
        c.maybe_cut();
    }
    for call in &rec.remote_calls {
        c.w.remote(call);
        c.maybe_cut();
    }
    for b in &rec.traces {
        for part in b.events.chunks(1 << 16) {
            let mut piece = b.clone();
            piece.events = part.to_vec();
            c.w.trace(&piece);
            c.maybe_cut();
        }
    }
    for a in &rec.call_aggregates {
        c.w.call_aggregate(a);
    }
    if !rec.counters.is_empty() {
        let values: Vec<(&str, u64)> = rec.counters.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let at = rec.end_ticks.unwrap_or(rec.header.start_ticks);
        c.w.counters(at, &values);
    }
    if let Some(end) = rec.end_ticks {
        c.w.end(end);
    }
    if !c.w.is_empty() {
        c.out.extend(c.w.finish());
    }
    c.out
}
