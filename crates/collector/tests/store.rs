//! The embedded store on its own: torn tails, segment rotation and retention.

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Duration;

use common::*;
use jscope_collector::jvm::{apply_dictionary, new_dictionary};
use jscope_collector::{FileStore, JvmIdentity, Store};
use jscope_format::{decode_payload, split_chunk, Recording, Split};
use jscope_testkit::temp_dir;

/// Appends `n` chunks of `sim` as the ingest would, keeping the dictionary current.
fn append(
    store: &FileStore,
    sim: &mut SimJvm,
    id: &JvmIdentity,
    dict: &mut Recording,
    seqs: std::ops::RangeInclusive<u64>,
) {
    for seq in seqs {
        let chunk = sim.chunk();
        let Ok(Split::Chunk(raw)) = split_chunk(&chunk, 0) else {
            panic!()
        };
        let records = decode_payload(&raw.payload).unwrap();
        apply_dictionary(dict, &records);
        let span = jscope_collector::jvm::event_span(id, &records);
        store.append(&id.id, seq, &chunk, span, dict).unwrap();
    }
    store.sync(&id.id).unwrap();
}

#[test]
fn a_torn_tail_is_cut_and_the_stream_resumes_after_the_last_intact_chunk() {
    let dir = temp_dir("store-torn");
    let mut sim = SimJvm::new(7000, "com.acme.Torn");
    let id = JvmIdentity::from_header(&sim.stream, &sim.header, "127.0.0.1", &[]);
    let mut dict = new_dictionary(&sim.header);
    {
        let store = FileStore::open(&dir, 64 << 20, Duration::from_secs(3600)).unwrap();
        store.open(&id, &sim.header_bytes(), 1, &dict).unwrap();
        append(&store, &mut sim, &id, &mut dict, 1..=3);
        // The collector dies halfway through writing chunk 4.
        let seg = dir
            .join("jvms")
            .join(&sim.stream)
            .join("seg-000000000001.jsc");
        let half = sim.chunk();
        OpenOptions::new()
            .append(true)
            .open(&seg)
            .unwrap()
            .write_all(&half[..half.len() / 2])
            .unwrap();
    }
    let store = FileStore::open(&dir, 64 << 20, Duration::from_secs(3600)).unwrap();
    let status = store.resume(&sim.stream).unwrap().expect("stream known");
    assert_eq!(status.acked, 3);
    assert_eq!(status.dict.method_label(2), "com.acme.App7000.work");
    let mut dict = status.dict;
    store.open(&id, &sim.header_bytes(), 4, &dict).unwrap();
    append(&store, &mut sim, &id, &mut dict, 4..=5);
    let rec = store.read(&sim.stream, None, None).unwrap();
    assert_eq!(
        rec.snapshots.len() as u64,
        5 * SNAPSHOTS_PER_CHUNK,
        "chunks 1-3, then 4-5 after the cut"
    );
    let first = &store.jvms()[0].segments[0];
    assert_eq!(
        (first.first_seq, first.last_seq, first.closed),
        (1, 3, true)
    );
    let seg = dir.join("jvms").join(&sim.stream).join(&first.file);
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), first.bytes);
    let alone = Recording::read_file(&seg).unwrap();
    assert!(
        alone.damage.is_none(),
        "the torn half chunk was cut off: {:?}",
        alone.damage
    );
    assert_eq!(alone.snapshots.len() as u64, 3 * SNAPSHOTS_PER_CHUNK);
}

#[test]
fn every_segment_reads_on_its_own_and_retention_deletes_old_ones() {
    let dir = temp_dir("store-rotate");
    let mut sim = SimJvm::new(7001, "com.acme.Rotate");
    let id = JvmIdentity::from_header(&sim.stream, &sim.header, "127.0.0.1", &[]);
    let mut dict = new_dictionary(&sim.header);
    // One chunk per segment.
    let store = FileStore::open(&dir, 1, Duration::from_secs(3600)).unwrap();
    store.open(&id, &sim.header_bytes(), 1, &dict).unwrap();
    append(&store, &mut sim, &id, &mut dict, 1..=4);
    let jvm = &store.jvms()[0];
    assert_eq!(jvm.segments.len(), 4);
    let last = jvm.segments.last().unwrap().clone();
    // Only the last segment overlaps; its prelude declares what chunk 1 declared.
    let rec = store.read(&sim.stream, last.start_ns, None).unwrap();
    assert_eq!(rec.snapshots.len() as u64, SNAPSHOTS_PER_CHUNK);
    let stack = rec.snapshots[0].threads[0].stack;
    assert_eq!(
        rec.frame_label(&rec.stack(stack)[0]),
        "com.acme.App7001.work:42"
    );

    // Everything but the open segment is older than a cutoff in the future.
    let cutoff = now_ns() + 3_600_000_000_000;
    let r = store.retain(cutoff).unwrap();
    assert_eq!((r.segments_deleted, r.jvms_deleted), (3, 0));
    store.close(&sim.stream).unwrap();
    let r = store.retain(cutoff).unwrap();
    assert_eq!((r.segments_deleted, r.jvms_deleted), (1, 1));
    assert!(store.jvms().is_empty());
    assert!(!dir.join("jvms").join(&sim.stream).exists());
}

#[test]
fn raw_bytes_of_several_segments_read_as_one_recording_and_a_reader_changes_nothing() {
    let dir = temp_dir("store-raw");
    let mut sim = SimJvm::new(7002, "com.acme.Raw");
    let id = JvmIdentity::from_header(&sim.stream, &sim.header, "127.0.0.1", &[]);
    let mut dict = new_dictionary(&sim.header);
    // One chunk per segment, so the raw bytes join three segments.
    let store = FileStore::open(&dir, 1, Duration::from_secs(3600)).unwrap();
    store.open(&id, &sim.header_bytes(), 1, &dict).unwrap();
    append(&store, &mut sim, &id, &mut dict, 1..=3);
    // A writer is halfway through chunk 4 of the open segment.
    let seg = dir
        .join("jvms")
        .join(&sim.stream)
        .join("seg-000000000003.jsc");
    let half = sim.chunk();
    OpenOptions::new()
        .append(true)
        .open(&seg)
        .unwrap()
        .write_all(&half[..half.len() / 2])
        .unwrap();
    let torn_len = std::fs::metadata(&seg).unwrap().len();

    let reader = FileStore::open_read_only(&dir).unwrap();
    let raw = reader.raw(&sim.stream, None, None).unwrap();
    let rec = Recording::from_bytes(&raw).unwrap();
    assert!(rec.damage.is_none(), "torn tail left out: {:?}", rec.damage);
    assert_eq!(rec.snapshots.len() as u64, 3 * SNAPSHOTS_PER_CHUNK);
    assert_eq!(rec.header.pid, 7002);
    let stack = rec.snapshots.last().unwrap().threads[0].stack;
    assert_eq!(
        rec.frame_label(&rec.stack(stack)[0]),
        "com.acme.App7002.work:42"
    );
    let read = reader.read(&sim.stream, None, None).unwrap();
    assert_eq!(read.snapshots.len(), rec.snapshots.len());
    assert_eq!(
        std::fs::metadata(&seg).unwrap().len(),
        torn_len,
        "a reader repairs nothing"
    );
    assert!(reader.retain(u64::MAX).is_err(), "a reader deletes nothing");
    assert!(FileStore::open_read_only(&dir.join("nope")).is_err());
}
