//! Behaviour of the format as a reader sees it: round trips, golden files, damage.

use jscope_format::*;

fn header() -> Header {
    Header {
        agent_version: "0.1.0".into(),
        pid: 4242,
        host: "build-host".into(),
        command_line: "java -cp classes Demo".into(),
        vm_name: "OpenJDK 64-Bit Server VM".into(),
        vm_vendor: "Debian".into(),
        vm_version: "17.0.15+6".into(),
        java_version: "17.0.15".into(),
        os: "Linux 6.1".into(),
        arch: "amd64".into(),
        start_wall_ns: 1_790_000_000_000_000_000,
        start_ticks: 1_000_000,
        ticks_per_second: 1_000_000_000,
        modes: "cpu+snapshot".into(),
        interval_ns: 10_000_000,
        max_depth: 256,
        extra: vec![("note".into(), "golden".into())],
    }
}

fn frame(method: u32, line: u32) -> Frame {
    Frame {
        method: MethodId(method),
        bci: line as i32 * 2,
        line,
        kind: FrameKind::Java,
    }
}

/// A small recording: two chunks, dictionaries in the first, events in both.
fn sample_recording() -> Vec<u8> {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    for (id, s) in [
        (1, "Demo"),
        (2, "Demo.java"),
        (3, "main"),
        (4, "([Ljava/lang/String;)V"),
        (5, "spin"),
        (6, "()V"),
    ] {
        w.string(StringId(id), s);
    }
    w.class(&ClassDef {
        id: ClassId(1),
        name: StringId(1),
        source_file: StringId(2),
    });
    w.method(&MethodDef {
        id: MethodId(1),
        class: ClassId(1),
        name: StringId(3),
        signature: StringId(4),
        modifiers: 9,
    });
    w.method(&MethodDef {
        id: MethodId(2),
        class: ClassId(1),
        name: StringId(5),
        signature: StringId(6),
        modifiers: 10,
    });
    w.thread(&ThreadDef {
        id: ThreadId(1),
        java_id: 1,
        os_tid: 777,
        name: "main".into(),
        group: "main".into(),
        parent: "system".into(),
        start_order: 1,
        daemon: false,
    });
    w.stack(StackId(1), &[frame(2, 14), frame(1, 5)]);
    for i in 0..3 {
        let s = Sample {
            request: 0,
            thread: ThreadId(1),
            carrier: Default::default(),
            ticks: 2_000_000 + i * 10_000_000,
            stack: StackId(1),
            mode: SampleMode::Cpu,
            weight_ns: 10_000_000,
            state: 5,
        };
        w.sample(&s);
    }
    out.extend(w.finish());
    let snap = Snapshot {
        ticks: 40_000_000,
        interval_ns: 0,
        threads: vec![SnapshotThread {
            thread: ThreadId(1),
            carrier: Default::default(),
            state: 0x401,
            stack: StackId(1),
        }],
    };
    w.snapshot(&snap);
    w.counters(41_000_000, &[("samples.dropped", 2), ("walk.ok", 3)]);
    w.end(50_000_000);
    out.extend(w.finish());
    out
}

#[test]
fn a_written_recording_reads_back_whole() {
    let r = Recording::from_bytes(&sample_recording()).unwrap();
    assert_eq!(r.header, header());
    assert_eq!(r.version, (VERSION_MAJOR, VERSION_MINOR));
    assert_eq!(r.chunks, 3);
    assert_eq!(r.method_label(MethodId(2)), "Demo.spin");
    assert_eq!(r.frame_label(&r.stack(StackId(1))[0]), "Demo.spin:14");
    assert_eq!(r.samples.len(), 3);
    assert_eq!(r.samples[2].ticks, 22_000_000);
    assert_eq!(r.snapshots[0].threads[0].state, 0x401);
    assert_eq!(r.counters["samples.dropped"], 2);
    assert_eq!(r.end_ticks, Some(50_000_000));
    assert_eq!(r.duration_ns(), 49_000_000);
    assert_eq!(r.thread(ThreadId(1)).unwrap().parent, "system");
    assert!(r.damage.is_none());
}

#[test]
fn golden_file_still_reads_and_is_still_written_byte_for_byte() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/small.jsc");
    let written = sample_recording();
    if std::env::var_os("JSCOPE_BLESS").is_some() {
        std::fs::write(&path, &written).unwrap();
    }
    let golden = std::fs::read(&path).expect("golden file (JSCOPE_BLESS=1 writes it)");
    let r = Recording::from_bytes(&golden).unwrap();
    assert_eq!(r.samples.len(), 3);
    assert_eq!(r.method_label(MethodId(1)), "Demo.main");
    assert_eq!(
        golden, written,
        "writer output changed: review, then JSCOPE_BLESS=1 to refresh"
    );
}

#[test]
fn a_file_written_at_zstd_level_3_still_reads() {
    // Writers before the switch to level 1 compressed chunks at level 3.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/small-zstd3.jsc");
    let old = std::fs::read(path).unwrap();
    let r = Recording::from_bytes(&old).unwrap();
    let now = Recording::from_bytes(&sample_recording()).unwrap();
    assert_eq!(r.samples, now.samples);
    assert_eq!(r.snapshots, now.snapshots);
    assert!(r.damage.is_none());
}

#[test]
fn a_truncated_file_keeps_every_whole_chunk_and_says_where_damage_starts() {
    let full = sample_recording();
    let r = Recording::from_bytes(&full[..full.len() - 5]).unwrap();
    let d = r.damage.expect("damage reported");
    assert_eq!(d.chunk_index, 2);
    assert!(d.reason.contains("truncated"), "{d}");
    assert_eq!(r.samples.len(), 3, "the first data chunk survives");
    assert!(r.snapshots.is_empty());
    assert!(r.end_ticks.is_none());
}

#[test]
fn a_flipped_byte_is_caught_by_the_checksum() {
    let mut bytes = sample_recording();
    let n = bytes.len();
    bytes[n - 3] ^= 0x40;
    let r = Recording::from_bytes(&bytes).unwrap();
    let d = r.damage.unwrap();
    assert!(d.reason.contains("checksum"), "{d}");
    assert!(d.offset > 8 && (d.offset as usize) < n);
    assert_eq!(r.samples.len(), 3);
}

#[test]
fn not_a_recording_is_an_error_not_a_panic() {
    assert!(matches!(
        Recording::from_bytes(b"hello world"),
        Err(FormatError::NotARecording(_))
    ));
    assert!(matches!(
        Recording::from_bytes(b"JSCOPE\x09\x00"),
        Err(FormatError::UnsupportedVersion(9, 0))
    ));
    let start = encode_file_start(&header());
    assert!(Recording::from_bytes(&start[..start.len() - 1]).is_err());
}

#[test]
fn unknown_record_kinds_are_skipped() {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    w.raw_record(999, b"from the future");
    w.string(StringId(1), "kept");
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    assert_eq!(r.skipped_records, 1);
    assert_eq!(r.string(StringId(1)), "kept");
    assert!(r.damage.is_none());
}

#[test]
fn per_thread_deltas_survive_interleaving_and_time_going_backwards() {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    let times = [
        (1, 5_000),
        (2, 4_000),
        (1, 9_000),
        (2, 3_000),
        (1, u64::MAX / 2),
    ];
    for (thread, ticks) in times {
        w.sample(&Sample {
            request: 0,
            thread: ThreadId(thread),
            carrier: Default::default(),
            ticks,
            stack: StackId::NONE,
            mode: SampleMode::Wall,
            weight_ns: 1,
            state: 0,
        });
    }
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    let got: Vec<(u32, u64)> = r.samples.iter().map(|s| (s.thread.0, s.ticks)).collect();
    assert_eq!(got, times);
}

#[test]
fn repeated_stacks_compress_well() {
    let mut w = ChunkWriter::new();
    for i in 0..100_000u64 {
        w.sample(&Sample {
            request: 0,
            thread: ThreadId(1 + (i % 4) as u32),
            carrier: Default::default(),
            ticks: i * 10_000_000,
            stack: StackId(1 + (i % 7) as u32),
            mode: SampleMode::Cpu,
            weight_ns: 10_000_000,
            state: 5,
        });
    }
    let raw = w.raw_len();
    let framed = w.finish();
    assert!(
        framed.len() * 10 < raw,
        "{} bytes framed from {raw} raw",
        framed.len()
    );
}

/// A cheap stand-in for the cargo-fuzz target that runs on every `cargo test`:
/// arbitrary corruptions of a valid file never panic, and a corruption after the
/// header chunk never loses the header nor any chunk before the first damaged byte.
#[test]
fn random_corruption_never_panics() {
    let good = sample_recording();
    // Where each chunk ends; the first is the header chunk.
    let ends: Vec<usize> = ChunkReader::new(&good)
        .unwrap()
        .map(|c| c.offset as usize + c.stored_len)
        .collect();
    assert_eq!(ends.len(), 3, "header and two data chunks");
    let whole = Recording::from_bytes(&good).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut after_header = 0;
    for _ in 0..5_000 {
        let mut bytes = good.clone();
        let mut first_damage = bytes.len();
        // Half the time only the data chunks are damaged.
        let from = if next() % 2 == 0 { ends[0] } else { 0 };
        for _ in 0..1 + next() % 4 {
            let i = from + (next() as usize) % (bytes.len() - from);
            let b = next() as u8;
            if bytes[i] != b {
                first_damage = first_damage.min(i);
            }
            bytes[i] = b;
        }
        let cut = ((next() as usize) % (bytes.len() + 1)).max(bytes.len() / 2);
        first_damage = first_damage.min(cut);
        let read = Recording::from_bytes(&bytes[..cut]);
        if first_damage < ends[0] {
            continue; // the header itself is damaged: an error, or what was readable
        }
        after_header += 1;
        let rec = read.unwrap_or_else(|e| panic!("damage at {first_damage} lost the header: {e}"));
        assert_eq!(rec.header, whole.header);
        // Every chunk that ends before the damage is there whole.
        if first_damage >= ends[1] {
            assert_eq!(rec.samples, whole.samples, "damage at {first_damage}");
            assert_eq!(rec.stacks, whole.stacks);
        }
    }
    assert!(
        after_header > 1_000,
        "{after_header} corruptions after the header"
    );
}

#[test]
fn trace_batches_and_call_aggregates_round_trip() {
    let ev = |kind, method, ticks, untraced, cpu_ns| TraceEvent {
        kind,
        method,
        ticks,
        untraced,
        cpu_ns,
    };
    let batch = TraceBatch {
        thread: ThreadId(3),
        has_cpu: true,
        events: vec![
            ev(TraceKind::Enter, MethodId(7), 1_000, 0, 50),
            ev(TraceKind::Enter, MethodId(8), 1_400, 12, 90),
            ev(TraceKind::Throw, MethodId(8), 2_000, 0, 80),
            ev(TraceKind::Exit, MethodId(7), 9_000, 0, 700),
        ],
    };
    let agg = CallAggregate {
        thread: ThreadId(3),
        ticks: 10_000,
        pairs: vec![CallPair {
            caller: MethodId(7),
            callee: MethodId(8),
            calls: 5,
            total_ns: 900,
            min_ns: 100,
            max_ns: 300,
        }],
    };
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    w.trace(&batch);
    w.sample(&Sample {
        request: 0,
        thread: ThreadId(3),
        carrier: Default::default(),
        ticks: 9_500,
        stack: StackId::NONE,
        mode: SampleMode::Cpu,
        weight_ns: 1,
        state: 0,
    });
    w.call_aggregate(&agg);
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    assert_eq!(r.traces, vec![batch]);
    assert_eq!(r.call_aggregates, vec![agg]);
    assert_eq!(
        r.samples[0].ticks, 9_500,
        "the thread's timeline continues after the batch"
    );
}

#[test]
fn a_traced_call_costs_few_bytes_after_compression() {
    let mut w = ChunkWriter::new();
    let mut events = Vec::new();
    let mut t = 0u64;
    for i in 0..100_000u32 {
        t += 40 + u64::from(i % 3);
        events.push(TraceEvent {
            kind: TraceKind::Enter,
            method: MethodId(5 + i % 4),
            ticks: t,
            untraced: 0,
            cpu_ns: 0,
        });
        t += 25;
        events.push(TraceEvent {
            kind: TraceKind::Exit,
            method: MethodId(5 + i % 4),
            ticks: t,
            untraced: 0,
            cpu_ns: 0,
        });
    }
    for chunk in events.chunks(4096) {
        w.trace(&TraceBatch {
            thread: ThreadId(1),
            has_cpu: false,
            events: chunk.to_vec(),
        });
    }
    let bytes = w.finish().len();
    assert!(bytes < 100_000 * 4, "{bytes} bytes for 100000 calls");
}

#[test]
fn every_jvm_event_kind_round_trips_on_its_timeline() {
    let events = vec![
        JvmEvent::on(
            ThreadId(2),
            100,
            EventKind::ThreadStart {
                parent: ThreadId(1),
            },
        ),
        JvmEvent::on(
            ThreadId(2),
            150,
            EventKind::MonitorBlocked {
                duration_ns: 5_000,
                class: ClassId(4),
                object: 77,
                owner: ThreadId(1),
                stack: StackId(3),
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            ThreadId(2),
            9_000,
            EventKind::MonitorWait {
                duration_ns: 10,
                class: ClassId(4),
                object: 77,
                timeout_ms: 50,
                timed_out: true,
                stack: StackId(3),
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            ThreadId(1),
            120,
            EventKind::Park {
                duration_ns: 9,
                blocker_class: ClassId::NONE,
                timeout_ns: 0,
                stack: StackId(2),
                request: Default::default(),
            },
        ),
        JvmEvent::global(130, EventKind::gc_pause(1_000_000)),
        // Trailing fields, written when one is not zero.
        JvmEvent::global(
            135,
            EventKind::Gc {
                duration_ns: 2_000_000,
                collector: StringId(1),
                cause: StringId(2),
                generation: GC_YOUNG,
                heap_before: 40 << 20,
                heap_after: 3 << 20,
                gc_id: 7,
                concurrent: false,
            },
        ),
        JvmEvent::on(
            ThreadId(1),
            140,
            EventKind::Alloc {
                class: ClassId(5),
                size: 1 << 20,
                stack: StackId(2),
                object: 9,
                allocated_total: 3 << 20,
                weight: 0,
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            ThreadId(1),
            150,
            EventKind::Alloc {
                class: ClassId(5),
                size: 24,
                stack: StackId(2),
                object: 0,
                allocated_total: 3 << 20,
                weight: 512 << 10,
                request: Default::default(),
            },
        ),
        JvmEvent::global(
            190,
            EventKind::ObjectFree {
                object: 9,
                allocated_total: 8 << 20,
            },
        ),
        JvmEvent::on(ThreadId(1), 200, EventKind::ClassLoad { class: ClassId(5) }),
        JvmEvent::global(300, EventKind::ClassUnload { class: ClassId(5) }),
        JvmEvent::global(
            310,
            EventKind::Compiled {
                method: MethodId(8),
                code_size: 512,
            },
        ),
        JvmEvent::global(
            320,
            EventKind::CompiledUnload {
                method: MethodId(8),
            },
        ),
        JvmEvent::on(
            ThreadId(2),
            9_100,
            EventKind::User {
                event: 1,
                kind: UserEventKind::Begin,
                value: -42,
            },
        ),
        JvmEvent::on(
            ThreadId(2),
            9_200,
            EventKind::User {
                event: 1,
                kind: UserEventKind::End,
                value: i64::MIN,
            },
        ),
        JvmEvent::on(ThreadId(2), 9_300, EventKind::ThreadEnd {}),
    ];
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    w.string(StringId(1), "request");
    w.user_event_def(&UserEventDef {
        id: 1,
        name: StringId(1),
    });
    for e in &events {
        w.event(e);
    }
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    assert_eq!(r.events, events);
    assert_eq!(
        r.user_events[1],
        Some(UserEventDef {
            id: 1,
            name: StringId(1)
        })
    );
    assert!(r.damage.is_none());
}

#[test]
fn remote_calls_round_trip_on_both_sides() {
    let client = RemoteCall {
        side: RemoteSide::Client,
        protocol: RemoteProtocol::Rmi,
        thread: ThreadId(1),
        ticks: 5_000,
        duration_ns: 2_000_000,
        local_host: StringId(1),
        local_port: 40_000,
        remote_host: StringId(2),
        remote_port: 1099,
        conn_seq: 3,
        object: StringId(3),
        method_hash: u64::MAX - 7,
        method: StringId(4),
        request_id: StringId::NONE,
        stack: StackId(2),
        failed: false,
    };
    let server = RemoteCall {
        side: RemoteSide::Server,
        protocol: RemoteProtocol::Http,
        failed: true,
        ..client
    };
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    w.remote(&client);
    w.remote(&server);
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    assert_eq!(r.remote_calls, vec![client, server]);
}

#[test]
fn every_frame_kind_round_trips_and_a_later_kind_reads_as_unknown() {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    let frames: Vec<Frame> = FrameKind::ALL
        .iter()
        .enumerate()
        .map(|(i, &kind)| Frame {
            method: MethodId(i as u32 + 1),
            bci: -1,
            line: 0,
            kind,
        })
        .collect();
    w.stack(StackId(1), &frames);
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    let kinds: Vec<FrameKind> = r.stack(StackId(1)).iter().map(|f| f.kind).collect();
    assert_eq!(kinds, FrameKind::ALL);
    assert_eq!(FrameKind::from_u8(6), FrameKind::Kernel);
    assert_eq!(FrameKind::from_u8(7), FrameKind::Vm);
    assert_eq!(FrameKind::from_u8(8), FrameKind::C1);
    assert_eq!(FrameKind::from_u8(9), FrameKind::Stub);
    assert_eq!(FrameKind::from_u8(10), FrameKind::Class);
    assert_eq!(
        FrameKind::from_u8(11),
        FrameKind::Unknown,
        "a kind from a later writer"
    );
    for k in FrameKind::ALL {
        assert_eq!(FrameKind::from_u8(k as u8), k);
        assert!(!(k.is_java() && k.is_native()), "{k:?}");
    }
}

#[test]
fn native_kernel_and_unknown_frames_are_labelled_by_library() {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    let strings = [
        "libc.so.6",
        "getpid",
        "[kernel]",
        "do_syscall_64",
        "[unknown]",
        "0x1f",
        "java.lang.Thread",
        "sleep0",
        "(J)V",
        "",
        "[vdso]",
        "clock_gettime",
    ];
    for (i, s) in strings.iter().enumerate() {
        w.string(StringId(i as u32 + 1), s);
    }
    for (id, name) in [(1, 1), (2, 3), (3, 5), (4, 7), (5, 11)] {
        w.class(&ClassDef {
            id: ClassId(id),
            name: StringId(name),
            source_file: StringId(0),
        });
    }
    let method = |id, class, name, signature| MethodDef {
        id: MethodId(id),
        class: ClassId(class),
        name: StringId(name),
        signature: StringId(signature),
        modifiers: 0x100,
    };
    w.method(&method(1, 1, 2, 0));
    w.method(&method(2, 2, 4, 10));
    w.method(&method(3, 3, 6, 0));
    // A Java native method keeps its Java label: it has a signature.
    w.method(&method(4, 4, 8, 9));
    // A native frame of no known library is its symbol alone.
    w.method(&method(5, 0, 2, 0));
    // The kernel's vDSO, a mapping /proc names in brackets.
    w.method(&method(6, 5, 12, 0));
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    let label = |m| r.method_label(MethodId(m));
    assert_eq!(label(1), "getpid [libc.so.6]");
    assert_eq!(label(2), "do_syscall_64_[k]");
    assert_eq!(label(3), "[unknown]");
    assert_eq!(label(4), "java.lang.Thread.sleep0");
    assert_eq!(label(5), "getpid");
    assert_eq!(label(6), "clock_gettime [vdso]");
    assert_eq!(r.native_library(MethodId(1)), Some("libc.so.6"));
    assert_eq!(r.native_library(MethodId(4)), None);
}

#[test]
fn virtual_threads_keep_their_carriers_and_platform_threads_their_old_bytes() {
    let sample = |thread, carrier| Sample {
        request: 0,
        thread: ThreadId(thread),
        carrier: ThreadId(carrier),
        ticks: 1_000,
        stack: StackId(2),
        mode: SampleMode::Wall,
        weight_ns: 10,
        state: 5,
    };
    let snap = |carriers: [u32; 2]| Snapshot {
        ticks: 2_000,
        interval_ns: 0,
        threads: carriers
            .iter()
            .enumerate()
            .map(|(i, &c)| SnapshotThread {
                thread: ThreadId(7 + i as u32),
                carrier: ThreadId(c),
                state: 1,
                stack: StackId(2),
            })
            .collect(),
    };
    let bytes = |s: &Sample, n: &Snapshot| {
        let mut w = ChunkWriter::new();
        w.sample(s);
        w.snapshot(n);
        let mut out = encode_file_start(&header());
        out.extend(w.finish());
        out
    };
    let platform = bytes(&sample(1, 0), &snap([0, 0]));
    let virtual_ = bytes(&sample(9, 3), &snap([0, 4]));
    // The carrier is a trailing field: a platform thread's sample (and a snapshot
    // without virtual threads) is a byte shorter than a virtual one's, as before.
    let r = Recording::from_bytes(&virtual_).unwrap();
    assert_eq!(r.samples, vec![sample(9, 3)]);
    assert_eq!(r.snapshots, vec![snap([0, 4])]);
    let r = Recording::from_bytes(&platform).unwrap();
    assert_eq!(r.samples, vec![sample(1, 0)]);
    assert_eq!(r.snapshots, vec![snap([0, 0])]);
    assert!(virtual_.len() > platform.len());
}

#[test]
fn samples_name_their_request_and_requests_round_trip_with_their_trace_ids() {
    let sample = |thread, carrier, request| Sample {
        request,
        thread: ThreadId(thread),
        carrier: ThreadId(carrier),
        ticks: 1_000,
        stack: StackId(2),
        mode: SampleMode::Cpu,
        weight_ns: 10,
        state: 5,
    };
    let request = Request {
        id: 7,
        thread: ThreadId(1),
        ticks: 900,
        duration_ns: 250_000_000,
        trace_id: Request::parse_trace_id("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        span_id: 0x00f0_67aa_0ba9_02b7,
        parent_span_id: 0x1122_3344_5566_7788,
        parent: 3,
        kind: RequestKind::Http,
        name: StringId(1),
        tags: StringId(2),
        failed: true,
    };
    let mut w = ChunkWriter::new();
    w.string(StringId(1), "GET /slow");
    w.string(StringId(2), "user=ann");
    let samples = [sample(1, 0, 7), sample(9, 3, 7), sample(1, 0, 0)];
    for s in &samples {
        w.sample(s);
    }
    w.request(&request);
    let mut out = encode_file_start(&header());
    out.extend(w.finish());
    let r = Recording::from_bytes(&out).unwrap();
    assert_eq!(r.samples, samples.to_vec());
    assert_eq!(r.requests, vec![request]);
    assert_eq!(
        r.requests[0].trace_id_hex(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(r.requests[0].end_ticks(), 250_000_900);
}

#[test]
fn a_transient_string_names_its_chunk_and_is_no_dictionary_entry() {
    let mut out = encode_file_start(&header());
    let mut w = ChunkWriter::new();
    w.string(StringId(1), "GET");
    w.transient_string(StringId(2), "/users/1");
    out.extend(w.finish());
    let rec = Recording::from_bytes(&out).unwrap();
    assert_eq!(rec.string(StringId(1)), "GET");
    assert_eq!(rec.string(StringId(2)), "/users/1");
    assert_eq!(rec.skipped_records, 0);

    let mut dictionary = ChunkWriter::new();
    let records = [
        Record::String {
            id: StringId(1),
            value: "GET".into(),
        },
        Record::TransientString {
            id: StringId(2),
            value: "/users/1".into(),
        },
    ];
    records.iter().for_each(|r| dictionary.dictionary_entry(r));
    let mut again = encode_file_start(&header());
    again.extend(dictionary.finish());
    let again = Recording::from_bytes(&again).unwrap();
    assert_eq!(
        [again.string(StringId(1)), again.string(StringId(2))],
        ["GET", ""]
    );
}
