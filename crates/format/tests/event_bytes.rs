//! The bytes of every JVM event kind, pinned: reshaping `JvmEvent` must not change
//! what a writer puts on disk.

use jscope_format::*;

/// One event of each kind, with values that need multi-byte varints and zigzag.
fn one_of_each() -> Vec<JvmEvent> {
    use EventKind::*;
    let (t3, t4) = (ThreadId(3), ThreadId(4));
    vec![
        JvmEvent::on(
            t3,
            1_000_000,
            ThreadStart {
                parent: ThreadId(1),
            },
        ),
        JvmEvent::on(t3, 9_000_000, ThreadEnd {}),
        JvmEvent::on(
            t3,
            2_000_000,
            MonitorBlocked {
                duration_ns: 1_500_000,
                class: ClassId(7),
                object: 300,
                owner: t4,
                stack: StackId(12),
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            t4,
            2_100_000,
            MonitorWait {
                duration_ns: 5_000_000,
                class: ClassId(7),
                object: 300,
                timeout_ms: 50,
                timed_out: true,
                stack: StackId(13),
                request: Default::default(),
            },
        ),
        JvmEvent::on(
            t4,
            2_050_000,
            Park {
                duration_ns: 700_000,
                blocker_class: ClassId(8),
                timeout_ns: 1_000_000,
                stack: StackId(14),
                request: Default::default(),
            },
        ),
        JvmEvent::global(3_000_000, EventKind::gc_pause(2_000_000)),
        JvmEvent::on(
            t3,
            3_500_000,
            Alloc {
                class: ClassId(9),
                size: 1 << 20,
                stack: StackId(15),
                object: 301,
                allocated_total: 5 << 20,
                weight: 0,
                request: Default::default(),
            },
        ),
        JvmEvent::global(
            4_000_000,
            ObjectFree {
                object: 301,
                allocated_total: 6 << 20,
            },
        ),
        JvmEvent::on(t3, 4_100_000, ClassLoad { class: ClassId(10) }),
        JvmEvent::global(4_200_000, ClassUnload { class: ClassId(10) }),
        JvmEvent::global(
            4_300_000,
            Compiled {
                method: MethodId(21),
                code_size: 480,
            },
        ),
        JvmEvent::global(
            4_400_000,
            CompiledUnload {
                method: MethodId(21),
            },
        ),
        JvmEvent::on(
            t3,
            4_500_000,
            User {
                event: 2,
                kind: UserEventKind::End,
                value: -42,
            },
        ),
    ]
}

fn payload_of(events: &[JvmEvent]) -> Vec<u8> {
    let mut w = ChunkWriter::new();
    w.user_event_def(&UserEventDef {
        id: 2,
        name: StringId(5),
    });
    for e in events {
        w.event(e);
    }
    match split_chunk(&w.finish(), 0).unwrap() {
        Split::Chunk(c) => c.payload,
        Split::NeedMore(_) => unreachable!("a whole chunk was given"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Written by the field-by-field encoder this file was added beside.
const PINNED: &str = concat!(
    "c0843d07020205200303000121050380c8d007220d03ffbed606e0c65b07ac02040c230f04c0a386",
    "01c096b10207ac0232010d240c049f8d06e0dc2a08c0843d0e2508008092f40180897a261003c08d",
    "b701098080400fad028080c002270a0080897aad0280808003280503809f490a29050080b5180a2a",
    "0700c09a0c15e0032b0500c09a0c152c070380ea30020253",
);

#[test]
fn every_event_kind_is_written_as_before() {
    assert_eq!(hex(&payload_of(&one_of_each())), PINNED);
}

#[test]
fn every_event_kind_reads_back_as_written() {
    let events = one_of_each();
    let records = decode_payload(&payload_of(&events)).unwrap();
    let read: Vec<JvmEvent> = records
        .into_iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(read, events);
}

#[test]
fn docs_format_md_lists_every_kind_with_its_fields_in_wire_order() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/FORMAT.md"),
    )
    .unwrap();
    for k in EVENT_KINDS {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", k.tag)))
            .unwrap_or_else(|| panic!("no row for tag {}", k.tag));
        let cell = row.split('|').nth(3).unwrap();
        let listed = cell.split('`').nth(1).unwrap_or("");
        let mut names = String::new();
        let mut depth = 0;
        for ch in listed.chars() {
            match ch {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => names.push(ch),
                _ => {}
            }
        }
        let want: Vec<&str> = k.fields.iter().map(|f| f.name).collect();
        assert_eq!(names.split_whitespace().collect::<Vec<_>>(), want, "{row}");
    }
}

#[test]
fn events_carry_their_request_after_the_fields_older_files_have() {
    let request = RequestId(7);
    let with: Vec<JvmEvent> = one_of_each()
        .into_iter()
        .map(|mut e| {
            match &mut e.kind {
                EventKind::MonitorBlocked { request: r, .. }
                | EventKind::MonitorWait { request: r, .. }
                | EventKind::Park { request: r, .. }
                | EventKind::Alloc { request: r, .. } => *r = request,
                _ => {}
            }
            e
        })
        .collect();
    let carrying: Vec<&str> = with
        .iter()
        .filter(|e| e.request() == 7)
        .map(|e| e.kind.name())
        .collect();
    assert_eq!(carrying, ["monitor", "wait", "park", "alloc"]);
    let read: Vec<JvmEvent> = decode_payload(&payload_of(&with))
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(
        read, with,
        "the request reads back; an alloc's weight stays 0"
    );
    assert_eq!(read[2].field("request"), Some(FieldValue::U64(7)));
    // The old bytes (no request) read as none.
    let old = decode_payload(&payload_of(&one_of_each())).unwrap();
    assert!(old
        .iter()
        .all(|r| !matches!(r, Record::Event(e) if e.request() != 0)));
    // One byte per request, and the alloc's weight (0) before its request.
    assert_eq!(
        payload_of(&with).len(),
        payload_of(&one_of_each()).len() + 5
    );
}
