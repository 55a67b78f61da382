//! Chunk summaries and the readers that use them: an indexed file reads as the
//! same recording, `Overview` counts what a full decode counts (from summaries, or
//! by decoding older files), and `ChunkStream` reads files without loading them.

use std::path::{Path, PathBuf};

use jscope_format::*;

fn header() -> Header {
    Header {
        start_ticks: 1_000,
        ticks_per_second: 1_000_000_000,
        modes: "none".into(),
        ..Default::default()
    }
}

fn thread(id: u32, name: &str) -> ThreadDef {
    ThreadDef {
        id: ThreadId(id),
        java_id: id.into(),
        os_tid: 100 + id,
        name: name.into(),
        group: "main".into(),
        parent: String::new(),
        start_order: id,
        daemon: false,
    }
}

/// Chunks of trace batches on two threads, thread and counter records, a JVM
/// event, and (when `samples`) a chunk with a stack and samples; each chunk
/// finished with `finish` (summaries or not).
fn recording(finish: fn(&mut ChunkWriter) -> Vec<u8>, samples: bool) -> Vec<u8> {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    w.string(StringId(1), "demo.A");
    w.string(StringId(2), "run");
    w.class(&ClassDef {
        id: ClassId(1),
        name: StringId(1),
        source_file: StringId::NONE,
    });
    w.method(&MethodDef {
        id: MethodId(1),
        class: ClassId(1),
        name: StringId(2),
        signature: StringId::NONE,
        modifiers: 1,
    });
    let mut ticks = 5_000u64;
    for chunk in 0..4u64 {
        w.thread(&thread(1 + chunk as u32 % 2, &format!("worker-{chunk}")));
        for t in 1..=2u32 {
            let mut events = Vec::new();
            for i in 0..1000u64 {
                ticks += 7;
                let kind = match i % 4 {
                    0 | 2 => TraceKind::Enter,
                    1 => TraceKind::Exit,
                    _ => TraceKind::Throw,
                };
                events.push(TraceEvent {
                    kind,
                    method: MethodId(1),
                    ticks,
                    untraced: (i % 3) as u32,
                    cpu_ns: if t == 2 { i * 5 } else { 0 },
                });
            }
            w.trace(&TraceBatch {
                thread: ThreadId(t),
                has_cpu: t == 2,
                events,
            });
        }
        w.event(&JvmEvent::global(ticks + 3, EventKind::gc_pause(9)));
        if samples && chunk == 2 {
            w.stack(StackId(1), &[]);
            for s in 0..3 {
                w.sample(&Sample {
                    request: 0,
                    thread: ThreadId(1),
                    carrier: Default::default(),
                    ticks: ticks + 100 * s,
                    stack: StackId(1),
                    mode: SampleMode::Cpu,
                    weight_ns: 10,
                    state: 0,
                });
            }
        }
        w.counters(
            ticks,
            &[
                ("trace.events_written", (chunk + 1) * 2000),
                ("trace.events_dropped", chunk),
            ],
        );
        out.extend(finish(&mut w));
    }
    w.end(ticks + 10_000);
    out.extend(finish(&mut w));
    out
}

fn indexed(w: &mut ChunkWriter) -> Vec<u8> {
    w.finish_indexed()
}

fn plain(w: &mut ChunkWriter) -> Vec<u8> {
    w.finish()
}

fn write_temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jscope-format-summary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn full_counts(rec: &Recording) -> TraceCounts {
    let mut c = TraceCounts::default();
    for b in &rec.traces {
        c.add_batch(b);
    }
    c
}

/// What `Overview` must agree on with a full decode.
fn assert_same(o: &Overview, full: &Recording) {
    assert_eq!(o.trace, full_counts(full));
    assert_eq!(o.jvm_events, full.events.len() as u64);
    let mut by_kind = std::collections::BTreeMap::new();
    for e in &full.events {
        *by_kind.entry(e.kind.name()).or_insert(0u64) += 1;
    }
    assert_eq!(o.jvm_events_by_kind, by_kind);
    assert_eq!(o.rec.threads, full.threads);
    assert_eq!(o.rec.counters, full.counters);
    assert_eq!(o.rec.end_ticks, full.end_ticks);
    assert_eq!(o.rec.chunks, full.chunks);
    assert_eq!(o.rec.skipped_records, full.skipped_records);
    assert_eq!(o.rec.samples, full.samples);
    assert_eq!(o.rec.header, full.header);
    assert_eq!(o.duration_ns(), full.duration_ns());
    assert_eq!(
        o.rec.damage.as_ref().map(ToString::to_string),
        full.damage.as_ref().map(ToString::to_string)
    );
}

#[test]
fn an_indexed_file_reads_as_the_same_recording() {
    let a = Recording::from_bytes(&recording(indexed, true)).unwrap();
    let b = Recording::from_bytes(&recording(plain, true)).unwrap();
    assert_eq!(a.traces, b.traces);
    assert_eq!(a.events, b.events);
    assert_eq!(a.samples, b.samples);
    assert_eq!(a.threads, b.threads);
    assert_eq!(a.counters, b.counters);
    assert_eq!(
        (a.chunks, a.skipped_records, a.end_ticks),
        (b.chunks, b.skipped_records, b.end_ticks)
    );
    assert_eq!(a.chunks, 6);
    assert_eq!(full_counts(&a).events(), 8000);
}

#[test]
fn overview_counts_from_summaries_what_a_full_decode_counts() {
    let bytes = recording(indexed, true);
    let path = write_temp("indexed.jsc", &bytes);
    let o = Overview::read_file(&path).unwrap();
    assert_same(&o, &Recording::from_bytes(&bytes).unwrap());
    // The chunk with samples is decoded; the others are counted from summaries.
    assert_eq!((o.summarized_chunks, o.decoded_chunks), (4, 1));
    assert_eq!(
        (o.trace.enters, o.trace.exits, o.trace.throws),
        (4000, 2000, 2000)
    );
    assert_eq!(o.rec.counters["trace.events_dropped"], 3);
}

#[test]
fn overview_of_a_file_without_summaries_decodes_it_chunk_by_chunk() {
    // Samples after trace batches on the same thread: their times are deltas
    // from the batches' last events, which counting must follow.
    let bytes = recording(plain, true);
    let path = write_temp("plain.jsc", &bytes);
    let o = Overview::read_file(&path).unwrap();
    assert_same(&o, &Recording::from_bytes(&bytes).unwrap());
    assert_eq!((o.summarized_chunks, o.decoded_chunks), (0, 5));
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/small.jsc");
    let o = Overview::read_file(&golden).unwrap();
    assert_same(&o, &Recording::read_file(&golden).unwrap());
}

#[test]
fn overview_of_a_cut_file_counts_up_to_the_cut_and_says_where() {
    let bytes = recording(indexed, false);
    for cut in [bytes.len() - 1, bytes.len() - 200, bytes.len() / 2, 190] {
        let path = write_temp("cut.jsc", &bytes[..cut]);
        let o = Overview::read_file(&path).unwrap();
        let full = Recording::from_bytes(&bytes[..cut]).unwrap();
        assert!(full.damage.is_some(), "cut at {cut}");
        assert_same(&o, &full);
    }
    let path = write_temp("magic.jsc", &bytes[..12]);
    assert!(matches!(
        Overview::read_file(&path),
        Err(FormatError::DamagedHeader(_))
    ));
    let path = write_temp("junk.jsc", b"not a recording at all");
    assert!(matches!(
        Overview::read_file(&path),
        Err(FormatError::NotARecording(_))
    ));
}

#[test]
fn chunk_stream_reads_what_chunk_reader_reads_and_stops_at_the_same_damage() {
    let bytes = recording(indexed, true);
    for cut in [bytes.len(), bytes.len() - 5, bytes.len() / 3] {
        let bytes = &bytes[..cut];
        let mut reader = ChunkReader::new(bytes).unwrap();
        let want: Vec<_> = reader
            .by_ref()
            .map(|c| (c.offset, c.kind, c.payload))
            .collect();
        let mut stream = ChunkStream::new(std::io::Cursor::new(bytes)).unwrap();
        let got: Vec<_> = stream
            .by_ref()
            .map(|c| (c.offset, c.kind, c.payload))
            .collect();
        assert_eq!(got, want);
        assert_eq!(stream.damage(), reader.damage());
    }
}
