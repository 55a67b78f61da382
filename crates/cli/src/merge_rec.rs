//! Several JVMs' recordings as one: every record of the others (samples,
//! snapshots, JVM events, traces, call aggregates, remote calls) with their ids
//! remapped into the first's dictionaries (`jscope_format::Remapper`, the one
//! re-interning there is) and their times onto its clock, so every analysis
//! command reads a service or a label's JVMs as it reads one recording.

use jscope_analysis::events::AllocWeights;
use jscope_format::{EventKind, Interner, Recording, Remapper, Threads};

/// Merges `recs` into the earliest-started one. Times stay wall-clock times: a
/// record is placed at its own epoch time on the merged recording's clock, so
/// seconds count from the earliest JVM's start. The JVMs' threads stay apart.
pub fn merge(mut recs: Vec<Recording>) -> Option<Recording> {
    recs.sort_by_key(|r| r.header.start_wall_ns);
    let merging = recs.len() > 1;
    let mut it = recs.into_iter();
    let mut to = Interner::new(it.next()?);
    for mut rec in it {
        keep_alloc_weights(&mut rec);
        let clock = Clock::between(&rec, to.recording());
        Remapper::new(&rec, &mut to, Threads::Apart).remap_into(&|t| clock.map(t));
        let base = to.recording_mut();
        base.end_ticks = match (base.end_ticks, rec.end_ticks) {
            (Some(a), Some(b)) => Some(a.max(clock.map(b))),
            _ => None,
        };
        base.chunks += rec.chunks;
        base.skipped_records += rec.skipped_records;
        if base.damage.is_none() {
            base.damage = rec.damage.clone();
        }
    }
    let mut base = to.into_recording();
    if merging {
        // Once, the others' records interleaved in time with the first's.
        base.samples.sort_by_key(|s| s.ticks);
        base.snapshots.sort_by_key(|s| s.ticks);
        base.events.sort_by_key(|e| e.ticks);
        base.remote_calls.sort_by_key(|c| c.ticks);
    }
    Some(base)
}

/// Allocation samples written without their weight are weighed by their own
/// JVM's sampling interval (its header's), which the merged header does not hold.
fn keep_alloc_weights(rec: &mut Recording) {
    let weights = AllocWeights::of(rec);
    for i in 0..rec.events.len() {
        let w = weights.weight(&rec.events[i]);
        if let (EventKind::Alloc { weight, .. }, Some(w)) = (&mut rec.events[i].kind, w) {
            *weight = w;
        }
    }
}

/// Maps one recording's clock readings onto another's through wall-clock time.
struct Clock<'a> {
    from: &'a Recording,
    to_start_ticks: u64,
    to_tps: u64,
    /// Wall ns from the target's start to the source's start (the source started later).
    offset_ns: u64,
}

impl Clock<'_> {
    fn between<'a>(from: &'a Recording, to: &Recording) -> Clock<'a> {
        Clock {
            from,
            to_start_ticks: to.header.start_ticks,
            to_tps: match to.header.ticks_per_second {
                0 => 1_000_000_000,
                t => t,
            },
            offset_ns: from
                .header
                .start_wall_ns
                .saturating_sub(to.header.start_wall_ns),
        }
    }

    fn map(&self, ticks: u64) -> u64 {
        let ns = self.from.ticks_to_ns(ticks) as u128 + self.offset_ns as u128;
        let to = ns * self.to_tps as u128 / 1_000_000_000;
        self.to_start_ticks
            .saturating_add(to.min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_format::{
        ClassDef, ClassId, Frame, FrameKind, MethodDef, MethodId, Sample, SampleMode, StackId,
        StringId, ThreadDef, ThreadId,
    };

    /// A recording with one method `Cls.name`, one thread and samples at `ms`.
    fn rec(cls: &str, name: &str, start_wall_ns: u64, tps: u64, ms: &[u64]) -> Recording {
        let mut r = Recording::default();
        r.header.start_wall_ns = start_wall_ns;
        r.header.start_ticks = 5_000;
        r.header.ticks_per_second = tps;
        // Ids collide on purpose: both recordings use 1 for everything.
        r.strings = vec!["".into(), cls.into(), name.into()];
        r.classes = vec![
            None,
            Some(ClassDef {
                id: ClassId(1),
                name: StringId(1),
                source_file: StringId(0),
            }),
        ];
        r.methods = vec![
            None,
            Some(MethodDef {
                id: MethodId(1),
                class: ClassId(1),
                name: StringId(2),
                ..MethodDef::default()
            }),
        ];
        let frame = Frame {
            method: MethodId(1),
            bci: 0,
            line: 1,
            kind: FrameKind::Java,
        };
        r.stacks = vec![None, Some(vec![frame])];
        r.threads.insert(
            ThreadId(1),
            ThreadDef {
                id: ThreadId(1),
                name: "main".into(),
                ..ThreadDef::default()
            },
        );
        r.samples = ms
            .iter()
            .map(|m| Sample {
                request: 0,
                thread: ThreadId(1),
                carrier: Default::default(),
                ticks: 5_000 + m * tps / 1000,
                stack: StackId(1),
                mode: SampleMode::Cpu,
                weight_ns: 1,
                state: 0,
            })
            .collect();
        r
    }

    fn method_of(r: &Recording, s: &Sample) -> String {
        let frames = r.stacks[s.stack.0 as usize].as_ref().unwrap();
        let m = r.methods[frames[0].method.0 as usize].unwrap();
        let c = r.classes[m.class.0 as usize].unwrap();
        format!(
            "{}.{}",
            r.strings[c.name.0 as usize], r.strings[m.name.0 as usize]
        )
    }

    #[test]
    fn samples_keep_their_methods_threads_and_wall_times() {
        let second = 1_000_000_000;
        // B started 2 s after A and counts ticks in microseconds.
        let a = rec("A", "run", 100 * second, 1_000_000_000, &[0, 500]);
        let b = rec("B", "work", 102 * second, 1_000_000, &[250]);
        let merged = merge(vec![b, a]).unwrap();
        assert_eq!(merged.header.start_wall_ns, 100 * second, "the earliest's");
        let seen: Vec<(String, u64, u32)> = merged
            .samples
            .iter()
            .map(|s| {
                let at_ms = merged.ticks_to_ns(s.ticks) / 1_000_000;
                (method_of(&merged, s), at_ms, s.thread.0)
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("A.run".to_string(), 0, 1),
                ("A.run".to_string(), 500, 1),
                ("B.work".to_string(), 2_250, 2),
            ]
        );
        assert_eq!(merged.threads.len(), 2, "threads stay apart per JVM");
        assert!(merge(Vec::new()).is_none());
    }
}
