//! The embedded store on its own: torn tails, segment rotation and retention.

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Duration;

use common::*;
use jscope_analysis::{Mode, Selection, ThreadMatcher};
use jscope_format::thread_state::{
    ALIVE, BLOCKED_ON_MONITOR_ENTER, IN_NATIVE, PARKED, RUNNABLE, WAITING,
};
use jscope_format::{decode_payload, split_chunk, Recording, Split};
use jscope_format::{MethodId, StackId, ThreadId};
use jscope_format::{StateClass, ThreadDef};
use jscope_store::identity::{apply_dictionary, new_dictionary};
use jscope_store::when::seconds_since;
use jscope_store::{FileStore, JvmIdentity, SampleFilter, Store};
use jscope_testkit::{temp_dir, RecordingBuilder};

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
        let span = jscope_store::identity::event_span(id, &records);
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
    assert_eq!(
        status.dict.method_label(MethodId(2)),
        "com.acme.App7000.work"
    );
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

/// A cpu+wall stream whose samples are 5 s apart, so summaries hold many buckets.
struct Sparse {
    header: jscope_format::Header,
    writer: RecordingBuilder,
    next: u64,
}

impl Sparse {
    fn new(pid: u32) -> Sparse {
        let sim = SimJvm::new(pid, "com.acme.Sparse");
        let mut b = RecordingBuilder::with_header(sim.header.clone());
        let m: Vec<MethodId> = (1..=4)
            .map(|m| b.method(&format!("com.acme.Sparse.m{m}")))
            .collect();
        let frame = |method: MethodId| jscope_format::Frame {
            method,
            bci: 0,
            line: method.0,
            kind: jscope_format::FrameKind::Interpreted,
        };
        for s in 1..=3 {
            b.stack_of(&[frame(m[s]), frame(m[0])]);
        }
        Sparse {
            header: sim.header,
            writer: b,
            next: 0,
        }
    }

    /// Four samples 5 s apart: cpu on stacks 1-3 in turn, every fourth a wall sample.
    fn chunk(&mut self) -> Vec<u8> {
        for _ in 0..4 {
            let i = self.next;
            self.next += 1;
            self.writer.raw_sample(&jscope_format::Sample {
                request: 0,
                thread: ThreadId(1),
                carrier: Default::default(),
                ticks: self.header.start_ticks + i * 5_000_000_000,
                stack: StackId(1 + (i % 3) as u32),
                mode: if i % 4 == 3 {
                    jscope_format::SampleMode::Wall
                } else {
                    jscope_format::SampleMode::Cpu
                },
                weight_ns: 10_000_000,
                state: 0,
            });
        }
        self.writer.take_chunk()
    }
}

#[test]
fn summaries_of_closed_segments_count_exactly_what_decoding_counts() {
    let dir = temp_dir("store-summary");
    let mut sparse = Sparse::new(7003);
    let stream = format!("testhost-7003-{}", sparse.header.start_wall_ns);
    let id = JvmIdentity::from_header(&stream, &sparse.header, "127.0.0.1", &[]);
    let mut dict = new_dictionary(&sparse.header);
    // Segments of about 12 chunks (4 minutes); the last one stays open.
    let store = FileStore::open(&dir, 1200, Duration::from_secs(3600)).unwrap();
    store
        .open(
            &id,
            &jscope_format::encode_file_start(&sparse.header),
            1,
            &dict,
        )
        .unwrap();
    for seq in 1..=40u64 {
        let chunk = sparse.chunk();
        let Ok(Split::Chunk(raw)) = split_chunk(&chunk, 0) else {
            panic!()
        };
        let records = decode_payload(&raw.payload).unwrap();
        apply_dictionary(&mut dict, &records);
        let span = jscope_store::identity::event_span(&id, &records);
        store.append(&stream, seq, &chunk, span, &dict).unwrap();
    }
    store.sync(&stream).unwrap();
    let segments = &store.jvms()[0].segments;
    assert!(segments.len() >= 3, "{segments:?}");
    let sums = std::fs::read_dir(dir.join("jvms").join(&stream))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().unwrap() == "sum")
        .count();
    assert_eq!(sums, segments.len() - 1, "a summary per closed segment");

    let start = sparse.header.start_wall_ns;
    let s = 1_000_000_000u64;
    let ranges = [
        (None, None),
        (Some(start), None),
        (Some(start + 61 * s), Some(start + 302 * s)),
        (Some(start + 5 * s), Some(start + 10 * s)),
        (Some(start + 100 * s + 1), Some(start + 700 * s)),
        (None, Some(start + 180 * s)),
        (Some(start + 900 * s), None),
    ];
    for (from, to) in ranges {
        for mode in [
            None,
            Some(Mode::Cpu),
            Some(Mode::Wall),
            Some(Mode::Snapshot),
        ] {
            let Some((rec, m, fast)) = store
                .stack_counts(&stream, from, to, mode, &SampleFilter::default())
                .unwrap()
            else {
                // Nothing summarised overlaps: callers read and select instead.
                assert_eq!(from, Some(start + 900 * s), "summaries used");
                continue;
            };
            let full = store.read(&stream, from, to).unwrap();
            // Seconds from the start as the store's decode path takes them (integer
            // ns first: epoch ns as f64 are a few hundred ns apart).
            let sel = Selection {
                mode,
                from_s: seconds_since(start, from),
                to_s: seconds_since(start, to),
                ..Selection::default()
            };
            let slow = sel.stack_counts(&full);
            assert_eq!(m, sel.mode_in(&full), "{from:?}..{to:?} {mode:?}");
            assert_eq!(
                (fast.total, fast.by_stack()),
                (slow.total, slow.by_stack()),
                "{from:?}..{to:?} {mode:?}"
            );
            assert_eq!(rec.method_label(MethodId(2)), "com.acme.Sparse.m2");
        }
    }
    // A damaged summary is ignored, not trusted.
    let first = dir.join("jvms").join(&stream).join(&segments[0].file);
    std::fs::write(first.with_extension("sum"), b"JSCSUM1\ngarbage").unwrap();
    let (_, _, fast) = store
        .stack_counts(&stream, None, None, None, &SampleFilter::default())
        .unwrap()
        .unwrap();
    let slow = Selection::default().stack_counts(&store.read(&stream, None, None).unwrap());
    assert_eq!(fast.by_stack(), slow.by_stack());
}

/// A cpu+wall+snapshot stream over five threads in several states, 5 s apart. Thread
/// 4 is declared only in chunk 15 (its earlier samples have no name until then), and
/// thread 3 is renamed from `pool-3` to `worker-3` in chunk 25.
struct Busy {
    header: jscope_format::Header,
    writer: RecordingBuilder,
    chunks: u64,
    next: u64,
}

const BUSY_STATES: [u32; 5] = [
    ALIVE | RUNNABLE,
    ALIVE | BLOCKED_ON_MONITOR_ENTER,
    ALIVE | WAITING | PARKED,
    0,
    ALIVE | RUNNABLE | IN_NATIVE,
];

impl Busy {
    fn new(pid: u32) -> Busy {
        let mut b = Busy {
            header: SimJvm::new(pid, "com.acme.Busy").header,
            writer: Sparse::new(pid).writer,
            chunks: 0,
            next: 0,
        };
        for (id, name) in [(1, "worker-1"), (2, "worker-2"), (3, "pool-3"), (5, "gc")] {
            b.declare(id, name);
        }
        b
    }

    fn declare(&mut self, id: u32, name: &str) {
        self.writer.thread_def(ThreadDef {
            id: ThreadId(id),
            java_id: id as i64,
            name: name.into(),
            group: "main".into(),
            start_order: id,
            ..ThreadDef::default()
        });
    }

    /// Three samples 5 s apart, of varied mode, thread, state and stack, and a
    /// snapshot of three threads with the last.
    fn chunk(&mut self) -> Vec<u8> {
        match self.chunks {
            15 => self.declare(4, "http-nio-4"),
            25 => self.declare(3, "worker-3"),
            _ => {}
        }
        self.chunks += 1;
        for _ in 0..3 {
            let i = self.next;
            self.next += 1;
            let ticks = self.header.start_ticks + i * 5_000_000_000;
            self.writer.raw_sample(&jscope_format::Sample {
                request: 0,
                thread: ThreadId(1 + (i % 5) as u32),
                carrier: Default::default(),
                ticks,
                stack: StackId(1 + (i % 3) as u32),
                mode: if i % 4 == 3 {
                    jscope_format::SampleMode::Wall
                } else {
                    jscope_format::SampleMode::Cpu
                },
                weight_ns: 10_000_000,
                state: BUSY_STATES[(i / 2 % 5) as usize],
            });
            if i % 3 == 2 {
                let threads = (0..3u64)
                    .map(|t| jscope_format::SnapshotThread {
                        thread: ThreadId(1 + ((i + t) % 5) as u32),
                        carrier: Default::default(),
                        state: BUSY_STATES[((i + 2 * t) % 5) as usize],
                        stack: StackId(1 + ((i + t) % 3) as u32),
                    })
                    .collect();
                self.writer.raw_snapshot(&jscope_format::Snapshot {
                    ticks,
                    interval_ns: 0,
                    threads,
                });
            }
        }
        self.writer.take_chunk()
    }
}

#[test]
fn thread_and_state_filters_count_from_summaries_exactly_what_decoding_counts() {
    let dir = temp_dir("store-filtered-summaries");
    let mut busy = Busy::new(4343);
    let stream = format!("h-4343-{}", busy.header.start_wall_ns);
    let id = JvmIdentity::from_header(&stream, &busy.header, "127.0.0.1", &[]);
    let mut dict = new_dictionary(&busy.header);
    // Segments of about 10 chunks (2.5 minutes); the last one stays open.
    let store = FileStore::open(&dir, 1500, Duration::from_secs(3600)).unwrap();
    let header = jscope_format::encode_file_start(&busy.header);
    store.open(&id, &header, 1, &dict).unwrap();
    for seq in 1..=40u64 {
        let chunk = busy.chunk();
        let Ok(Split::Chunk(raw)) = split_chunk(&chunk, 0) else {
            panic!()
        };
        let records = decode_payload(&raw.payload).unwrap();
        apply_dictionary(&mut dict, &records);
        let span = jscope_store::identity::event_span(&id, &records);
        store.append(&stream, seq, &chunk, span, &dict).unwrap();
    }
    store.sync(&stream).unwrap();
    let segments = store.jvms()[0].segments.clone();
    assert!(segments.len() >= 4, "{segments:?}");

    let start = busy.header.start_wall_ns;
    let s = 1_000_000_000u64;
    let ranges = [
        (None, None),
        (Some(start), None),
        // Inside the first segments only: before thread 4 is named and 3 renamed.
        (None, Some(start + 120 * s)),
        (Some(start + 61 * s), Some(start + 302 * s)),
        (Some(start + 5 * s), Some(start + 10 * s)),
        (Some(start + 100 * s + 1), Some(start + 500 * s)),
    ];
    let filters = [
        (Some("worker"), vec![]),
        (Some("worker-?"), vec![]),
        (Some("pool-3"), vec![]),
        (Some("http*"), vec![]),
        (Some("nobody"), vec![]),
        (None, vec![StateClass::Runnable]),
        (None, vec![StateClass::Blocked, StateClass::Parked]),
        (None, vec![StateClass::Unknown, StateClass::Native]),
        (
            Some("worker"),
            vec![StateClass::Runnable, StateClass::Native],
        ),
        (None, vec![]),
    ];
    let mut nonzero = 0;
    for (from, to) in ranges {
        for mode in [
            None,
            Some(Mode::Cpu),
            Some(Mode::Wall),
            Some(Mode::Snapshot),
        ] {
            let full = store.read(&stream, from, to).unwrap();
            for (thread, states) in &filters {
                let filter = SampleFilter {
                    thread: thread.map(ThreadMatcher::new),
                    states: states.clone(),
                };
                let what = format!("{from:?}..{to:?} {mode:?} {filter:?}");
                let (rec, m, fast) = store
                    .stack_counts(&stream, from, to, mode, &filter)
                    .unwrap()
                    .unwrap_or_else(|| panic!("summaries used: {what}"));
                let sel = Selection {
                    mode,
                    thread: filter.thread.clone(),
                    states: filter.states.clone(),
                    from_s: seconds_since(start, from),
                    to_s: seconds_since(start, to),
                    group: Default::default(),
                    requests: Default::default(),
                };
                let slow = sel.stack_counts(&full);
                assert_eq!(m, sel.mode_in(&full), "{what}");
                assert_eq!(
                    (fast.total, fast.by_stack()),
                    (slow.total, slow.by_stack()),
                    "{what}"
                );
                assert_eq!(rec.threads.len(), full.threads.len(), "{what}");
                nonzero += usize::from(fast.total > 0);
            }
        }
    }
    assert!(nonzero > 150, "most answers count something: {nonzero}");
    // Renamed: the whole range sees thread 3 as worker-3 only.
    let count = |thread: &str| {
        let filter = SampleFilter {
            thread: Some(ThreadMatcher::new(thread)),
            states: vec![],
        };
        let c = store.stack_counts(&stream, None, None, Some(Mode::Cpu), &filter);
        c.unwrap().unwrap().2.total
    };
    assert_eq!(count("pool-3"), 0);
    assert!(count("worker-3") > 0);

    // A collector opening the store writes the summaries that are missing or of
    // an older version, including the one of the segment left open.
    drop(store);
    let jvm_dir = dir.join("jvms").join(&stream);
    let sum = |i: usize| jvm_dir.join(&segments[i].file).with_extension("sum");
    std::fs::remove_file(sum(0)).unwrap();
    std::fs::write(sum(1), b"JSCSUM1\nolder").unwrap();
    let store = FileStore::open(&dir, 1500, Duration::from_secs(3600)).unwrap();
    for i in 0..segments.len() {
        let bytes = std::fs::read(sum(i)).unwrap();
        assert!(bytes.starts_with(b"JSCSUM2\n"), "segment {i}");
    }
    let filter = SampleFilter {
        thread: Some(ThreadMatcher::new("worker")),
        states: vec![StateClass::Runnable],
    };
    let (_, _, fast) = store
        .stack_counts(&stream, None, None, None, &filter)
        .unwrap()
        .unwrap();
    let slow = Selection {
        thread: filter.thread.clone(),
        states: filter.states.clone(),
        ..Selection::default()
    }
    .stack_counts(&store.read(&stream, None, None).unwrap());
    assert_eq!((fast.total, fast.by_stack()), (slow.total, slow.by_stack()));
    assert!(fast.total > 0);

    // A JSCSUM1 summary (here a valid one claiming no buckets) serves unfiltered
    // queries only: a reader, which rewrites nothing, reads that segment whole under
    // a filter.
    let mut v1 = b"JSCSUM1\n".to_vec();
    v1.extend_from_slice(&segments[0].bytes.to_le_bytes());
    v1.extend_from_slice(&[0; 4 + 3 * 8 + 4]);
    std::fs::write(sum(0), &v1).unwrap();
    let reader = FileStore::open_read_only(&dir).unwrap();
    let all = SampleFilter::default();
    let counted = |filter: &SampleFilter| {
        let c = reader.stack_counts(&stream, None, None, Some(Mode::Cpu), filter);
        c.unwrap().unwrap().2.total
    };
    let decoded = |filter: &SampleFilter| {
        Selection {
            mode: Some(Mode::Cpu),
            thread: filter.thread.clone(),
            states: filter.states.clone(),
            ..Selection::default()
        }
        .stack_counts(&reader.read(&stream, None, None).unwrap())
        .total
    };
    assert_eq!(counted(&filter), decoded(&filter));
    assert!(
        counted(&all) < decoded(&all),
        "the summary, not the segment"
    );
}

#[test]
fn a_second_store_on_one_directory_is_refused_while_another_process_holds_it() {
    let dir = temp_dir("store-locked");
    // Another process's lock: a child holding an flock on the lock file.
    std::fs::create_dir_all(dir.join("jvms")).unwrap();
    let lock = dir.join("collector.lock");
    use std::os::unix::process::CommandExt;
    let mut holder = std::process::Command::new("flock")
        .arg(&lock)
        .args(["sleep", "30"])
        .process_group(0)
        .spawn()
        .expect("flock(1)");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&lock, format!("{}\n", holder.id())).unwrap();
    let err = FileStore::open(&dir, 64 << 20, Duration::from_secs(3600))
        .err()
        .expect("locked");
    let text = err.to_string();
    assert!(text.contains("in use by another collector"), "{text}");
    assert!(text.contains(&format!("pid {}", holder.id())), "{text}");
    // A reader needs no lock.
    assert!(FileStore::open_read_only(&dir).is_ok());
    // flock(1) and its sleep, which inherited the locked descriptor.
    unsafe { libc::kill(-(holder.id() as i32), libc::SIGKILL) };
    let _ = holder.wait();
    std::thread::sleep(Duration::from_millis(200));
    assert!(FileStore::open(&dir, 64 << 20, Duration::from_secs(3600)).is_ok());
}
