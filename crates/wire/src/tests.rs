use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use jscope_format::StringId;
use jscope_format::{encode_file_start, split_chunk, ChunkWriter, Header, Split};

use super::*;

fn header() -> Header {
    Header {
        agent_version: "0.1.0".into(),
        pid: 4242,
        host: "box.example".into(),
        start_wall_ns: 1_700_000_000_000_000_000,
        ticks_per_second: 1_000_000_000,
        ..Header::default()
    }
}

fn chunk(n: u32) -> Vec<u8> {
    let mut w = ChunkWriter::new();
    w.string(StringId(n), &format!("s{n}"));
    w.finish()
}

fn round_trip(m: Message) {
    let bytes = m.encode();
    let back = read_message(&mut bytes.as_slice(), DEFAULT_MAX_FRAME).unwrap();
    assert_eq!(back, m);
}

#[test]
fn every_message_round_trips() {
    round_trip(Message::Hello(Hello {
        token: "t0ken".into(),
        stream: "box-1-2".into(),
        next_seq: 7,
        labels: vec![("app".into(), "shop".into()), ("env".into(), "ü".into())],
        header: encode_file_start(&header()),
    }));
    round_trip(Message::Accept(Accept {
        acked: 6,
        max_frame: 1234,
        server: "jscope-collector 0.1".into(),
    }));
    round_trip(Message::Refuse {
        code: RefuseCode::BadToken,
        message: "wrong token".into(),
    });
    round_trip(Message::Refuse {
        code: RefuseCode::StoreUnavailable,
        message: "clickhouse: connection refused".into(),
    });
    assert!(RefuseCode::StoreUnavailable.is_transient());
    assert!(!RefuseCode::BadToken.is_transient() && !RefuseCode::Other.is_transient());
    round_trip(Message::Chunk {
        seq: 9,
        chunk: chunk(3),
    });
    round_trip(Message::Ack { seq: u64::MAX });
    round_trip(Message::Bye);
}

#[test]
fn chunk_bytes_travel_unchanged() {
    let c = chunk(5);
    let frame = Message::Chunk {
        seq: 1,
        chunk: c.clone(),
    }
    .encode();
    let Message::Chunk { chunk: got, .. } = read_message(&mut frame.as_slice(), 1 << 20).unwrap()
    else {
        panic!("not a chunk")
    };
    assert_eq!(got, c);
    assert!(matches!(split_chunk(&got, 0).unwrap(), Split::Chunk(_)));
}

#[test]
fn oversized_frame_is_refused_before_reading_it() {
    let frame = Message::Chunk {
        seq: 1,
        chunk: vec![0; 100],
    }
    .encode();
    match read_message(&mut &frame[..5], 50) {
        Err(WireError::FrameTooLarge { len: 108, max: 50 }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_is_malformed_not_a_panic() {
    for bytes in [
        &b"\x09\x00\x00\x00\x00"[..],
        b"\x01\x03\x00\x00\x00abc",
        b"\x04\x08\x00\x00\x00\0\0\0\0\0\0\0\0",
    ] {
        assert!(matches!(
            read_message(&mut &bytes[..], 1024),
            Err(WireError::Malformed { .. })
        ));
    }
    let mut hello = Message::Hello(Hello::default()).encode();
    hello.truncate(hello.len() - 1);
    assert!(read_message(&mut hello.as_slice(), 1024).is_err());
}

#[test]
fn preamble_checks_magic_and_version() {
    let mut ok = Vec::new();
    write_preamble(&mut ok).unwrap();
    read_preamble(&mut ok.as_slice()).unwrap();
    assert!(matches!(
        read_preamble(&mut &b"GET / HTTP/1.1\r\n"[..]),
        Err(WireError::BadPreamble)
    ));
    assert!(matches!(
        read_preamble(&mut &b"JSCWIRE\x07"[..]),
        Err(WireError::UnsupportedVersion(7))
    ));
}

#[test]
fn timeouts_tell_idle_from_stalled() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    server
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    assert!(matches!(
        read_message(&mut server, 1024),
        Err(WireError::Idle)
    ));
    client.write_all(&[5, 8, 0, 0, 0, 1, 2]).unwrap();
    match read_message(&mut server, 1024) {
        Err(WireError::Stalled { got: 7, want: 13 }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn stream_ids_are_file_name_safe() {
    assert!(valid_stream_id("box-4242-17"));
    assert!(valid_stream_id(&stream_id_for(&header())));
    assert!(!valid_stream_id(""));
    assert!(!valid_stream_id("../etc"));
    assert!(!valid_stream_id("a/b"));
    assert!(!valid_stream_id(&"x".repeat(MAX_STREAM_ID + 1)));
    let weird = Header {
        host: "a b/c".into(),
        ..header()
    };
    assert!(valid_stream_id(&stream_id_for(&weird)));
}

/// A minimal server speaking the protocol: accepts, acks every chunk, stops at bye.
fn echo_server(listener: TcpListener, acked: u64) -> thread::JoinHandle<Vec<(u64, Vec<u8>)>> {
    thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        read_preamble(&mut s).unwrap();
        let Message::Hello(h) = read_message(&mut s, DEFAULT_MAX_FRAME).unwrap() else {
            panic!("no hello")
        };
        assert_eq!(h.stream, "box-1");
        let accept = Accept {
            acked,
            max_frame: 4096,
            server: "test".into(),
        };
        write_message(&mut s, &Message::Accept(accept)).unwrap();
        let mut got = Vec::new();
        loop {
            match read_message(&mut s, 4096).unwrap() {
                Message::Chunk { seq, chunk } => {
                    write_message(&mut s, &Message::Ack { seq }).unwrap();
                    got.push((seq, chunk));
                }
                Message::Bye => {
                    write_message(&mut s, &Message::Ack { seq: 99 }).unwrap();
                    return got;
                }
                other => panic!("{other:?}"),
            }
        }
    })
}

#[test]
fn client_streams_chunks_and_reads_acks() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = echo_server(listener, 2);
    let cfg = ClientConfig::new(addr, "box-1");
    let mut c = WireClient::connect(&cfg, &encode_file_start(&header()), 1).unwrap();
    assert_eq!(c.accept().acked, 2);
    for seq in 3..=5 {
        c.send(seq, &chunk(seq as u32)).unwrap();
    }
    assert_eq!(c.wait_for_ack(5, Duration::from_secs(5)).unwrap(), 5);
    assert!(matches!(
        c.send(6, &vec![0; 5000]),
        Err(WireError::FrameTooLarge { max: 4096, .. })
    ));
    assert_eq!(c.finish(Duration::from_secs(5)).unwrap(), 99);
    let got = server.join().unwrap();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(got[0].1, chunk(3));
}

#[test]
fn client_reports_refusal_and_absent_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let t = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        read_preamble(&mut s).unwrap();
        read_message(&mut s, DEFAULT_MAX_FRAME).unwrap();
        let no = Message::Refuse {
            code: RefuseCode::BadToken,
            message: "wrong token".into(),
        };
        write_message(&mut s, &no).unwrap();
    });
    let cfg = ClientConfig::new(addr.clone(), "box-1");
    match WireClient::connect(&cfg, &encode_file_start(&header()), 1) {
        Err(WireError::Refused { code, message }) => {
            assert_eq!(code, RefuseCode::BadToken);
            assert!(!code.is_transient());
            assert_eq!(message, "wrong token");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    t.join().unwrap();
    // Nobody listens any more on that port.
    let err = WireClient::connect(&cfg, &[], 1).err().unwrap();
    assert!(matches!(err, WireError::Connect { .. }), "{err}");
}

#[test]
fn outbox_numbers_resends_and_bounds() {
    let mut o = Outbox::new(100);
    assert_eq!(o.next_seq(), 1);
    assert_eq!(o.push(vec![1; 40]), Pushed::Queued(1));
    assert_eq!(o.push(vec![2; 40]), Pushed::Queued(2));
    assert_eq!(o.push(vec![3; 40]), Pushed::Dropped);
    assert_eq!((o.dropped_chunks(), o.dropped_bytes()), (1, 40));
    assert_eq!(o.next_unsent().unwrap().0, 1);
    o.mark_sent(1);
    assert_eq!(o.next_unsent().unwrap().0, 2);
    o.mark_sent(2);
    assert!(o.next_unsent().is_none());
    // The connection died; the collector had made only chunk 1 durable.
    o.resume(1);
    assert_eq!(o.next_seq(), 2);
    assert_eq!(o.next_unsent().unwrap(), (2, &[2u8; 40][..]));
    assert_eq!(o.push(vec![4; 50]), Pushed::Queued(3));
    o.ack(3);
    assert!(o.is_empty());
    assert_eq!((o.bytes(), o.next_seq()), (0, 4));
}

#[test]
fn outbox_rebase_puts_the_dictionary_first_and_renumbers() {
    let mut o = Outbox::new(100);
    for i in 1..=3u8 {
        assert_eq!(o.push(vec![i; 20]), Pushed::Queued(i as u64));
    }
    o.mark_sent(2);
    o.ack(1);
    // A collector without the chunks before 2 (another store): dictionary first.
    assert_eq!(o.rebase(vec![vec![9; 10], vec![8; 10]]), (0, 0, true));
    let order: Vec<(u64, u8)> = (2..=5)
        .map(|seq| {
            let (s, first) = o.next_unsent().map(|(s, c)| (s, c[0])).unwrap();
            o.mark_sent(s);
            assert_eq!(s, seq);
            (s, first)
        })
        .collect();
    assert_eq!(order, [(2, 9), (3, 8), (4, 2), (5, 3)]);
    assert_eq!((o.bytes(), o.push(vec![4; 10])), (60, Pushed::Queued(6)));
    // Over the bound: the oldest held chunks go, the dictionary stays.
    assert_eq!(o.rebase(vec![vec![7; 50]]), (2, 20, true));
    let held: Vec<(u64, u8)> = std::iter::from_fn(|| {
        let (s, first) = o.next_unsent().map(|(s, c)| (s, c[0]))?;
        o.mark_sent(s);
        Some((s, first))
    })
    .collect();
    assert_eq!(held, [(2, 7), (3, 2), (4, 3), (5, 4)]);
    assert_eq!(o.bytes(), 100);
    // A dictionary larger than the bound: nothing is kept.
    assert_eq!(o.rebase(vec![vec![6; 101]]), (5, 201, false));
    assert!(o.is_empty());
    assert_eq!(o.next_seq(), 2);
    assert_eq!(o.dropped_chunks(), 7);
}

#[test]
fn a_peer_that_answers_http_is_named_as_not_a_collector() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let t = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = [0u8; 8];
        s.read_exact(&mut got).unwrap();
        s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .unwrap();
    });
    let cfg = ClientConfig::new(addr, "box-1");
    let err = WireClient::connect(&cfg, &encode_file_start(&header()), 1)
        .err()
        .unwrap();
    t.join().unwrap();
    assert!(matches!(err, WireError::NotACollector { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "not a jscope collector: it answered \"HTTP/1.1 400 Bad Request\" (an HTTP server: \
         the collector's --http port? agents send to its --agents port)"
    );
}
