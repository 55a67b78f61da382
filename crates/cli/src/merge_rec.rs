//! Several JVMs' recordings as one: their samples and snapshots with the
//! dictionaries remapped into the first's, so every analysis command reads a
//! service or a label's JVMs as it reads one recording.

use std::collections::HashMap;

use jscope_format::{ClassId, Frame, MethodId, Recording, StackId, StringId, ThreadId};

/// Merges `recs` into the earliest-started one. Times stay wall-clock times: a
/// sample is placed at its own epoch time on the merged recording's clock, so
/// seconds count from the earliest JVM's start. Samples, snapshots, threads and
/// the dictionaries are merged; events, traces and remote calls are those of the
/// first JVM only (they belong to one JVM's timeline and ids).
pub fn merge(mut recs: Vec<Recording>) -> Option<Recording> {
    recs.sort_by_key(|r| r.header.start_wall_ns);
    let merging = recs.len() > 1;
    let mut it = recs.into_iter();
    let mut base = it.next()?;
    let mut m = Merger::new(&base);
    let mut left_out = 0;
    for rec in it {
        left_out += rec.events.len() + rec.traces.len() + rec.remote_calls.len();
        m.add(&mut base, &rec);
    }
    if merging {
        // Once, the others' samples interleaved in time with the first's.
        base.samples.sort_by_key(|s| s.ticks);
        base.snapshots.sort_by_key(|s| s.ticks);
    }
    if left_out > 0 {
        eprintln!("jscope: note: the merged JVMs' samples are all there; their events, traces and remote calls are the earliest JVM's only ({left_out} records of the others left out)");
    }
    Some(base)
}

struct Merger {
    strings: HashMap<String, u32>,
    next_thread: u32,
}

impl Merger {
    fn new(base: &Recording) -> Merger {
        let strings = base
            .strings
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        let next_thread = base.threads.keys().map(|t| t.0).max().unwrap_or(0) + 1;
        Merger {
            strings,
            next_thread,
        }
    }

    fn string(&mut self, base: &mut Recording, text: &str) -> StringId {
        if let Some(&id) = self.strings.get(text) {
            return StringId(id);
        }
        let id = base.strings.len() as u32;
        base.strings.push(text.to_string());
        self.strings.insert(text.to_string(), id);
        StringId(id)
    }

    fn add(&mut self, base: &mut Recording, rec: &Recording) {
        let text = |id: StringId| rec.strings.get(id.0 as usize).cloned().unwrap_or_default();
        // Classes and methods get fresh ids after the base's (no dedup needed: views
        // merge by name).
        let mut classes = HashMap::new();
        for c in rec.classes.iter().flatten() {
            let mut def = *c;
            def.id = ClassId(base.classes.len() as u32);
            def.name = self.string(base, &text(c.name));
            def.source_file = self.string(base, &text(c.source_file));
            classes.insert(c.id, def.id);
            base.classes.push(Some(def));
        }
        let mut methods = HashMap::new();
        for md in rec.methods.iter().flatten() {
            let mut def = *md;
            def.id = MethodId(base.methods.len() as u32);
            def.class = classes.get(&md.class).copied().unwrap_or(ClassId(0));
            def.name = self.string(base, &text(md.name));
            def.signature = self.string(base, &text(md.signature));
            methods.insert(md.id, def.id);
            base.methods.push(Some(def));
        }
        let mut stacks = HashMap::new();
        for (i, stack) in rec.stacks.iter().enumerate() {
            let Some(frames) = stack else { continue };
            let frames: Vec<Frame> = frames
                .iter()
                .map(|f| Frame {
                    method: methods.get(&f.method).copied().unwrap_or(MethodId(0)),
                    ..*f
                })
                .collect();
            stacks.insert(StackId(i as u32), StackId(base.stacks.len() as u32));
            base.stacks.push(Some(frames));
        }
        let mut threads = HashMap::new();
        for (id, def) in &rec.threads {
            let new = ThreadId(self.next_thread);
            self.next_thread += 1;
            let mut def = def.clone();
            def.id = new;
            threads.insert(*id, new);
            base.threads.insert(new, def);
        }
        let clock = Clock::between(rec, base);
        let thread = |t: ThreadId| threads.get(&t).copied().unwrap_or(t);
        // A virtual thread's carrier is one of the same JVM's threads: remapped
        // alike; NONE (a platform thread's sample) stays NONE.
        let carrier = |c: ThreadId| if c == ThreadId::NONE { c } else { thread(c) };
        let stack = |s: StackId| stacks.get(&s).copied().unwrap_or(StackId(0));
        for s in &rec.samples {
            let mut s = *s;
            s.thread = thread(s.thread);
            s.carrier = carrier(s.carrier);
            s.stack = stack(s.stack);
            s.ticks = clock.map(s.ticks);
            base.samples.push(s);
        }
        for snap in &rec.snapshots {
            let mut snap = snap.clone();
            snap.ticks = clock.map(snap.ticks);
            for t in &mut snap.threads {
                t.thread = thread(t.thread);
                t.carrier = carrier(t.carrier);
                t.stack = stack(t.stack);
            }
            base.snapshots.push(snap);
        }
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
    use jscope_format::{ClassDef, FrameKind, MethodDef, Sample, SampleMode, ThreadDef};

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
