//! Synthetic trace events for the trace bench and the big-trace generator: each
//! thread makes nested calls 1 to 6 deep among 40 methods, 20 to 300 ns apart,
//! with an untraced call now and then (what a traced loop of real code looks like
//! to the writer).

use jscope_format::{MethodId, TraceEvent, TraceKind};

/// Methods the synthetic code calls (ids 1 to METHODS).
pub const METHODS: u32 = 40;

/// One thread's synthetic call sequence.
pub struct Synth {
    x: u64,
    pub ticks: u64,
    stack: Vec<u32>,
}

impl Synth {
    pub fn new(seed: u64, start_ticks: u64) -> Synth {
        Synth {
            x: 88172645463325252 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ticks: start_ticks,
            stack: Vec::new(),
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }

    /// Replaces `out` with the next `n` events.
    pub fn fill(&mut self, out: &mut Vec<TraceEvent>, n: usize) {
        out.clear();
        while out.len() < n {
            let r = self.next_u64();
            self.ticks += 20 + r % 280;
            let enter = self.stack.is_empty() || (self.stack.len() < 6 && r & (1 << 20) != 0);
            let (kind, method, untraced) = if enter {
                let m = 1 + ((r >> 24) % u64::from(METHODS)) as u32;
                self.stack.push(m);
                let untraced = if r & (0xf << 40) == 0 {
                    (r >> 50) as u32 % 5
                } else {
                    0
                };
                (TraceKind::Enter, m, untraced)
            } else {
                (TraceKind::Exit, self.stack.pop().expect("not empty"), 0)
            };
            out.push(TraceEvent {
                kind,
                method: MethodId(method),
                ticks: self.ticks,
                untraced,
                cpu_ns: 0,
            });
        }
    }
}
