//! The bytes of every JVM event kind, pinned: reshaping `JvmEvent` must not change
//! what a writer puts on disk.

use jscope_format::*;

/// One event of each kind, with values that need multi-byte varints and zigzag.
fn one_of_each() -> Vec<JvmEvent> {
    vec![
        JvmEvent::ThreadStart {
            thread: 3,
            ticks: 1_000_000,
            parent: 1,
        },
        JvmEvent::ThreadEnd {
            thread: 3,
            ticks: 9_000_000,
        },
        JvmEvent::MonitorBlocked {
            thread: 3,
            ticks: 2_000_000,
            duration_ns: 1_500_000,
            class: 7,
            object: 300,
            owner: 4,
            stack: 12,
        },
        JvmEvent::MonitorWait {
            thread: 4,
            ticks: 2_100_000,
            duration_ns: 5_000_000,
            class: 7,
            object: 300,
            timeout_ms: 50,
            timed_out: true,
            stack: 13,
        },
        JvmEvent::Park {
            thread: 4,
            ticks: 2_050_000,
            duration_ns: 700_000,
            blocker_class: 8,
            timeout_ns: 1_000_000,
            stack: 14,
        },
        JvmEvent::Gc {
            ticks: 3_000_000,
            duration_ns: 2_000_000,
        },
        JvmEvent::Alloc {
            thread: 3,
            ticks: 3_500_000,
            class: 9,
            size: 1 << 20,
            stack: 15,
            object: 301,
            allocated_total: 5 << 20,
        },
        JvmEvent::ObjectFree {
            ticks: 4_000_000,
            object: 301,
            allocated_total: 6 << 20,
        },
        JvmEvent::ClassLoad {
            thread: 3,
            ticks: 4_100_000,
            class: 10,
        },
        JvmEvent::ClassUnload {
            ticks: 4_200_000,
            class: 10,
        },
        JvmEvent::Compiled {
            ticks: 4_300_000,
            method: 21,
            code_size: 480,
        },
        JvmEvent::CompiledUnload {
            ticks: 4_400_000,
            method: 21,
        },
        JvmEvent::User {
            thread: 3,
            ticks: 4_500_000,
            event: 2,
            kind: UserEventKind::End,
            value: -42,
        },
    ]
}

fn payload_of(events: &[JvmEvent]) -> Vec<u8> {
    let mut w = ChunkWriter::new();
    w.user_event_def(&UserEventDef { id: 2, name: 5 });
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
