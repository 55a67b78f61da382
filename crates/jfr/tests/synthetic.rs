//! A JFR chunk written byte by byte in the test, so each part of the format is
//! exercised on purpose: both integer encodings, every string encoding, a tick clock
//! that is not nanoseconds, and constant pools split over two checkpoints (one of
//! them written after the events that refer to it).

use jscope_format::{FrameKind, SampleMode, TraceKind};

/// Writes JFR primitives, compressed (varints) or not (big-endian).
struct Out {
    buf: Vec<u8>,
    compressed: bool,
}

impl Out {
    fn new(compressed: bool) -> Out {
        Out {
            buf: Vec::new(),
            compressed,
        }
    }

    fn varint(&mut self, mut v: u64) {
        for _ in 0..8 {
            if v < 0x80 {
                self.buf.push(v as u8);
                return;
            }
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn int(&mut self, v: i64) {
        if self.compressed {
            self.varint(v as i32 as u32 as u64);
        } else {
            self.buf.extend((v as i32).to_be_bytes());
        }
    }

    fn long(&mut self, v: i64) {
        if self.compressed {
            self.varint(v as u64);
        } else {
            self.buf.extend(v.to_be_bytes());
        }
    }

    fn utf8(&mut self, s: &str) {
        self.buf.push(3);
        self.int(s.len() as i64);
        self.buf.extend(s.as_bytes());
    }

    fn latin1(&mut self, s: &str) {
        self.buf.push(5);
        self.int(s.chars().count() as i64);
        self.buf.extend(s.chars().map(|c| c as u8));
    }

    fn chars(&mut self, s: &str) {
        self.buf.push(4);
        let units: Vec<u16> = s.encode_utf16().collect();
        self.int(units.len() as i64);
        for u in units {
            if self.compressed {
                self.varint(u.into());
            } else {
                self.buf.extend(u.to_be_bytes());
            }
        }
    }

    /// Frames `body` as an event of `ty`: `size type body`, size padded to 4
    /// bytes when compressed (as the JDK writes it) so it is known up front.
    fn event(&mut self, ty: i64, body: impl FnOnce(&mut Out)) {
        let mut inner = Out::new(self.compressed);
        inner.long(ty);
        body(&mut inner);
        let size = inner.buf.len() + 4;
        if self.compressed {
            for i in 0..4 {
                let b = ((size >> (7 * i)) & 0x7f) as u8;
                self.buf.push(if i < 3 { b | 0x80 } else { b });
            }
        } else {
            self.buf.extend((size as i32).to_be_bytes());
        }
        self.buf.extend(inner.buf);
    }
}

// Type ids (0 and 1 are the metadata and checkpoint event types).
const LONG: i64 = 10;
const INT: i64 = 11;
const STRING: i64 = 12;
const BOOLEAN: i64 = 13;
const THREAD: i64 = 20;
const SYMBOL: i64 = 21;
const CLASS: i64 = 22;
const METHOD: i64 = 23;
const FRAME: i64 = 24;
const FRAME_TYPE: i64 = 25;
const STACK: i64 = 26;
const SAMPLE: i64 = 30;
const TRACE: i64 = 31;
const TIMESPAN: i64 = 40;

/// (type id, name, fields: (name, type, constant pool, array, timespan unit)).
type Field = (&'static str, i64, bool, bool, Option<&'static str>);

fn types() -> Vec<(i64, &'static str, Vec<Field>)> {
    let f = |n, t, cp| (n, t, cp, false, None);
    vec![
        (LONG, "long", vec![]),
        (INT, "int", vec![]),
        (STRING, "java.lang.String", vec![]),
        (BOOLEAN, "boolean", vec![]),
        (TIMESPAN, "jdk.jfr.Timespan", vec![]),
        (
            THREAD,
            "java.lang.Thread",
            vec![f("javaName", STRING, false), f("javaThreadId", LONG, false)],
        ),
        (SYMBOL, "jdk.types.Symbol", vec![f("string", STRING, false)]),
        (CLASS, "java.lang.Class", vec![f("name", SYMBOL, true)]),
        (
            METHOD,
            "jdk.types.Method",
            vec![
                f("type", CLASS, true),
                f("name", SYMBOL, true),
                f("descriptor", SYMBOL, true),
            ],
        ),
        (
            FRAME_TYPE,
            "jdk.types.FrameType",
            vec![f("description", STRING, false)],
        ),
        (
            FRAME,
            "jdk.types.StackFrame",
            vec![
                f("method", METHOD, true),
                f("lineNumber", INT, false),
                f("bytecodeIndex", INT, false),
                f("type", FRAME_TYPE, true),
            ],
        ),
        (
            STACK,
            "jdk.types.StackTrace",
            vec![
                f("truncated", BOOLEAN, false),
                ("frames", FRAME, false, true, None),
            ],
        ),
        (
            SAMPLE,
            "jdk.ExecutionSample",
            vec![
                f("startTime", LONG, false),
                f("sampledThread", THREAD, true),
                f("stackTrace", STACK, true),
            ],
        ),
        (
            TRACE,
            "jdk.MethodTrace",
            vec![
                f("startTime", LONG, false),
                ("duration", LONG, false, false, Some("TICKS")),
                f("eventThread", THREAD, true),
                f("method", METHOD, true),
            ],
        ),
    ]
}

/// The metadata event's string table and element tree.
fn metadata(o: &mut Out) {
    let mut strings: Vec<String> = Vec::new();
    let mut s = |v: &str| -> i64 {
        if let Some(i) = strings.iter().position(|x| x == v) {
            return i as i64;
        }
        strings.push(v.to_string());
        strings.len() as i64 - 1
    };
    // Elements as (name, attributes, children), flattened into bytes afterwards.
    let mut classes = Out::new(o.compressed);
    let all = types();
    classes.int(all.len() as i64);
    for (id, name, fields) in &all {
        classes.int(s("class"));
        classes.int(2);
        for (k, v) in [("id", id.to_string()), ("name", name.to_string())] {
            classes.int(s(k));
            classes.int(s(&v));
        }
        classes.int(fields.len() as i64);
        for (fname, ty, cpool, array, unit) in fields {
            let mut attrs = vec![("name", fname.to_string()), ("class", ty.to_string())];
            if *cpool {
                attrs.push(("constantPool", "true".into()));
            }
            if *array {
                attrs.push(("dimension", "1".into()));
            }
            classes.int(s("field"));
            classes.int(attrs.len() as i64);
            for (k, v) in attrs {
                classes.int(s(k));
                classes.int(s(&v));
            }
            match unit {
                Some(u) => {
                    classes.int(1);
                    classes.int(s("annotation"));
                    classes.int(2);
                    classes.int(s("class"));
                    classes.int(s(&TIMESPAN.to_string()));
                    classes.int(s("value"));
                    classes.int(s(u));
                    classes.int(0);
                }
                None => classes.int(0),
            }
        }
    }
    let (root, meta) = (s("root"), s("metadata"));
    o.long(0); // start
    o.long(0); // duration
    o.long(1); // metadata id
    o.int(strings.len() as i64);
    for v in &strings {
        o.utf8(v);
    }
    o.int(root);
    o.int(0);
    o.int(1);
    o.int(meta);
    o.int(0);
    o.buf.extend(classes.buf);
}

fn checkpoint(o: &mut Out, pools: impl FnOnce(&mut Out) -> i64) {
    o.long(0);
    o.long(0);
    o.long(0);
    o.buf.push(0);
    let mut body = Out::new(o.compressed);
    let n = pools(&mut body);
    o.int(n);
    o.buf.extend(body.buf);
}

const START_NANOS: i64 = 1_700_000_000_000_000_000;
const START_TICKS: i64 = 5_000;
/// Ticks are microseconds here, so every time must be converted.
const TICKS_PER_SECOND: i64 = 1_000_000;

/// One chunk: metadata, a checkpoint with threads, classes and some symbols, the
/// events, then a checkpoint with the methods, stacks, frame types and the rest.
fn chunk(compressed: bool) -> Vec<u8> {
    chunk_with(compressed, "JIT compiled", 42)
}

/// As [`chunk`], with the frame's JFR type and the thread's Java id given.
fn chunk_with(compressed: bool, frame_type: &str, java_id: i64) -> Vec<u8> {
    let mut body = Out::new(compressed);
    let metadata_offset = 68 + body.buf.len();
    body.event(0, metadata);
    body.event(1, |o| {
        checkpoint(o, |p| {
            p.long(THREAD);
            p.int(1);
            p.long(7);
            p.buf.extend([2]); // the name is a key into the string pool
            p.long(1);
            p.long(java_id);
            p.long(SYMBOL);
            p.int(2);
            p.long(1);
            p.latin1("com/acme/Caf\u{e9}");
            p.long(2);
            p.chars("brew");
            p.long(CLASS);
            p.int(1);
            p.long(100);
            p.long(1);
            3
        })
    });
    for i in 0..3 {
        body.event(SAMPLE, |o| {
            o.long(START_TICKS + 1_000 * (i + 1));
            o.long(7);
            o.long(500);
        });
    }
    body.event(TRACE, |o| {
        o.long(START_TICKS + 10_000);
        o.long(2_500);
        o.long(7);
        o.long(200);
    });
    body.event(1, |o| {
        checkpoint(o, |p| {
            p.long(SYMBOL);
            p.int(1);
            p.long(3);
            p.utf8("()V");
            p.long(METHOD);
            p.int(1);
            p.long(200);
            p.long(100);
            p.long(2);
            p.long(3);
            p.long(FRAME_TYPE);
            p.int(1);
            p.long(1);
            p.utf8(frame_type);
            p.long(STACK);
            p.int(1);
            p.long(500);
            p.buf.push(0);
            p.int(1);
            p.long(200);
            p.int(17);
            p.int(4);
            p.long(1);
            p.long(STRING);
            p.int(1);
            p.long(1);
            p.utf8("worker-1");
            5
        })
    });
    let size = 68 + body.buf.len();
    let mut out = Vec::new();
    out.extend(b"FLR\0");
    out.extend(2u16.to_be_bytes());
    out.extend(1u16.to_be_bytes());
    for v in [
        size as i64,
        0,
        metadata_offset as i64,
        START_NANOS,
        20_000_000,
        START_TICKS,
        TICKS_PER_SECOND,
    ] {
        out.extend(v.to_be_bytes());
    }
    out.extend(i32::from(compressed).to_be_bytes());
    out.extend(body.buf);
    out
}

#[test]
fn both_integer_encodings_every_string_encoding_and_split_pools_read() {
    for compressed in [true, false] {
        let rec = jscope_jfr::read_bytes(&chunk(compressed)).unwrap();
        assert_eq!(rec.damage, None, "compressed={compressed}");
        assert_eq!(rec.samples.len(), 3);
        let s = rec.samples[0];
        assert_eq!(s.mode, SampleMode::Cpu);
        // 1000 ticks of 1 µs after the chunk's start.
        assert_eq!(s.ticks, START_NANOS as u64 + 1_000_000);
        let frames = rec.stack(s.stack);
        assert_eq!(frames.len(), 1);
        assert_eq!(rec.method_label(frames[0].method), "com.acme.Café.brew");
        assert_eq!((frames[0].line, frames[0].bci), (17, 4));
        assert_eq!(frames[0].kind, FrameKind::Compiled);
        let m = rec.method(frames[0].method).unwrap();
        assert_eq!(rec.string(m.signature), "()V");
        let t = rec.thread(s.thread).unwrap();
        assert_eq!((t.name.as_str(), t.java_id), ("worker-1", 42));

        assert_eq!(rec.traces.len(), 1);
        let ev = &rec.traces[0].events;
        assert_eq!(ev.len(), 2);
        assert_eq!(
            (ev[0].kind, ev[1].kind),
            (TraceKind::Enter, TraceKind::Exit)
        );
        // 2500 ticks of 1 µs.
        assert_eq!(ev[1].ticks - ev[0].ticks, 2_500_000);
        assert_eq!(rec.end_ticks, Some(START_NANOS as u64 + 20_000_000));
    }
}

#[test]
fn async_profilers_cpp_kernel_and_native_frames_and_threads_without_java_ids_map() {
    for (frame_type, kind, label) in [
        ("C++", FrameKind::Vm, "com.acme.Caf\u{e9}.brew"),
        ("Native", FrameKind::Native, "com.acme.Caf\u{e9}.brew"),
        ("Kernel", FrameKind::Kernel, "brew_[k]"),
        (
            "Interpreted",
            FrameKind::Interpreted,
            "com.acme.Caf\u{e9}.brew",
        ),
    ] {
        let rec = jscope_jfr::read_bytes(&chunk_with(true, frame_type, 0)).unwrap();
        let s = rec.samples[0];
        let frames = rec.stack(s.stack);
        assert_eq!(frames[0].kind, kind, "{frame_type}");
        assert_eq!(rec.method_label(frames[0].method), label, "{frame_type}");
        let t = rec.thread(s.thread).unwrap();
        assert_eq!((t.java_id, t.group.as_str()), (0, "[native]"));
    }
    let rec = jscope_jfr::read_bytes(&chunk(true)).unwrap();
    assert_eq!(rec.thread(rec.samples[0].thread).unwrap().group, "");
}

#[test]
fn an_event_that_does_not_fit_its_chunk_stops_there_with_damage() {
    let mut bytes = chunk(true);
    let whole = jscope_jfr::read_bytes(&bytes).unwrap();
    // The chunk claims more bytes than the file has.
    let len = bytes.len() as i64;
    bytes[8..16].copy_from_slice(&(len + 100).to_be_bytes());
    let rec = jscope_jfr::read_bytes(&bytes).unwrap();
    let damage = rec.damage.expect("damage");
    assert!(damage.reason.contains("chunk cut"), "{}", damage.reason);
    assert_eq!(rec.samples.len(), whole.samples.len());
}

/// The JDK writes a chunk's metadata after its first events: a file cut before it
/// is damaged where the cut is, not at the metadata's offset past the end.
#[test]
fn a_cut_before_the_metadata_is_damage_at_the_cut() {
    let mut bytes = chunk(true);
    // As the JDK's: the metadata event thousands of bytes in, past the cut.
    bytes[24..32].copy_from_slice(&8092i64.to_be_bytes());
    let cut = 100;
    let rec = jscope_jfr::read_bytes(&bytes[..cut]).unwrap();
    let damage = rec.damage.expect("damage");
    assert_eq!(damage.offset, cut as u64, "{}", damage.reason);
    assert!(
        damage.reason.contains("chunk cut") && damage.reason.contains("metadata"),
        "{}",
        damage.reason
    );
}
