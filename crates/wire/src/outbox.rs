//! The client's bounded resend buffer: chunks wait here, numbered, until the collector
//! acknowledges them, so that a reconnection resends exactly what was not yet durable.

use std::collections::VecDeque;

/// What happened to a pushed chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Queued under this sequence number.
    Queued(u64),
    /// The buffer was full; the chunk was dropped and counted. It took no sequence
    /// number, so the stream stays gap-free.
    Dropped,
}

/// Chunks not yet acknowledged, oldest first, bounded in bytes.
///
/// When full, new chunks are dropped and counted rather than blocking the producer:
/// a slow or absent collector must never slow the JVM. A dropped chunk may have held
/// dictionary entries (strings, methods, stacks) that later chunks use, so a producer
/// that sees `Pushed::Dropped` should declare those entries again in a later chunk.
#[derive(Debug)]
pub struct Outbox {
    queue: VecDeque<(u64, Vec<u8>)>,
    bytes: usize,
    max_bytes: usize,
    next_seq: u64,
    /// Highest sequence number written to the current connection.
    sent: u64,
    dropped_chunks: u64,
    dropped_bytes: u64,
}

impl Outbox {
    /// A buffer holding at most `max_bytes` of chunks; the first chunk gets sequence 1.
    pub fn new(max_bytes: usize) -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            bytes: 0,
            max_bytes,
            next_seq: 1,
            sent: 0,
            dropped_chunks: 0,
            dropped_bytes: 0,
        }
    }

    /// Queues a framed chunk, or drops it when it does not fit.
    pub fn push(&mut self, chunk: Vec<u8>) -> Pushed {
        if self.bytes + chunk.len() > self.max_bytes {
            self.dropped_chunks += 1;
            self.dropped_bytes += chunk.len() as u64;
            return Pushed::Dropped;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.bytes += chunk.len();
        self.queue.push_back((seq, chunk));
        Pushed::Queued(seq)
    }

    /// Forgets every chunk up to and including `acked`.
    pub fn ack(&mut self, acked: u64) {
        while let Some((seq, chunk)) = self.queue.front() {
            if *seq > acked {
                break;
            }
            self.bytes -= chunk.len();
            self.queue.pop_front();
        }
    }

    /// After a (re)connection: the collector holds everything up to `acked`, and the
    /// next chunk to send is the first one after it.
    pub fn resume(&mut self, acked: u64) {
        self.ack(acked);
        self.sent = acked;
    }

    /// Puts `first` (chunks declaring a whole dictionary) in front of every chunk held
    /// and numbers them all afresh from the oldest sequence number held, for a
    /// collector that lacks the chunks before it and so the dictionary entries they
    /// declared. Every held chunk must predate `first`'s dictionary. When the result
    /// exceeds the bound, the oldest held chunks go (the dictionary covers what they
    /// declared); when `first` alone exceeds it, everything goes. Returns the chunks
    /// and bytes dropped, and whether `first` was kept.
    pub fn rebase(&mut self, first: Vec<Vec<u8>>) -> (u64, u64, bool) {
        let start = self.next_seq();
        let mut held: VecDeque<Vec<u8>> = self.queue.drain(..).map(|(_, c)| c).collect();
        let head: usize = first.iter().map(Vec::len).sum();
        let (mut chunks, mut bytes) = (0u64, 0u64);
        let mut held_bytes: usize = held.iter().map(Vec::len).sum();
        let kept = head <= self.max_bytes;
        while !held.is_empty() && (!kept || head + held_bytes > self.max_bytes) {
            let c = held.pop_front().expect("not empty");
            held_bytes -= c.len();
            chunks += 1;
            bytes += c.len() as u64;
        }
        let mut next = start;
        let mut put = |c: Vec<u8>, queue: &mut VecDeque<(u64, Vec<u8>)>| {
            queue.push_back((next, c));
            next += 1;
        };
        if kept {
            first.into_iter().for_each(|c| put(c, &mut self.queue));
        } else {
            chunks += first.len() as u64;
            bytes += head as u64;
        }
        held.into_iter().for_each(|c| put(c, &mut self.queue));
        self.next_seq = next;
        self.bytes = self.queue.iter().map(|(_, c)| c.len()).sum();
        self.sent = start - 1;
        self.dropped_chunks += chunks;
        self.dropped_bytes += bytes;
        (chunks, bytes, kept)
    }

    /// The `Hello::next_seq` to announce: the oldest sequence number still held.
    pub fn next_seq(&self) -> u64 {
        self.queue.front().map_or(self.next_seq, |(seq, _)| *seq)
    }

    /// The sequence number of the newest chunk queued so far (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Whether a chunk written to the current connection still awaits its
    /// acknowledgement.
    pub fn in_flight(&self) -> bool {
        self.queue.front().is_some_and(|(seq, _)| *seq <= self.sent)
    }

    /// The next chunk not yet written to the current connection.
    pub fn next_unsent(&self) -> Option<(u64, &[u8])> {
        let first = self.queue.front()?.0;
        let index = self.sent.saturating_add(1).saturating_sub(first) as usize;
        self.queue.get(index).map(|(s, c)| (*s, c.as_slice()))
    }

    /// Records that `seq` was written to the current connection.
    pub fn mark_sent(&mut self, seq: u64) {
        self.sent = self.sent.max(seq);
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn dropped_chunks(&self) -> u64 {
        self.dropped_chunks
    }

    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }
}
