//! Expectations about stacks that do not name the code that ran: marker frames
//! and empty stacks, counted, shown and warned about; frame kinds in names.

use jscope_format::{FrameKind, Recording, SampleMode};

use crate::*;
use jscope_testkit::recording::*;

const MAIN: u32 = 1;

/// 100 cpu samples on main: 90 in `demo.Work.hot` (C1, inlined into C2), 4
/// `[unknown_java]`, 3 broken under `demo.Work.hot` (`[break_compiled]` at the
/// bottom), 2 with no frame at all, 1 in an itable stub under its receiver.
fn walked() -> Recording {
    let mut b = RecordingBuilder::new();
    b.thread(MAIN, "main", "main", 1);
    let hot = b.stack_with_kinds(&[
        ("demo.Work.hot", 12, FrameKind::C1),
        ("demo.Work.loop", 20, FrameKind::Inlined),
        ("demo.Main.main", 5, FrameKind::Compiled),
    ]);
    let unknown = b.stack_with_kinds(&[("[unknown_java]", 0, FrameKind::Unknown)]);
    let broken = b.stack_with_kinds(&[
        ("demo.Work.hot", 12, FrameKind::Interpreted),
        ("[break_compiled]", 0, FrameKind::Unknown),
    ]);
    let stub = b.stack_with_kinds(&[
        ("demo.Circle", 0, FrameKind::Class),
        ("itable stub", 0, FrameKind::Stub),
        ("demo.Main.main", 5, FrameKind::Compiled),
    ]);
    let samples = [
        (hot, 90),
        (unknown, 4),
        (broken, 3),
        (jscope_format::StackId(0), 2),
        (stub, 1),
    ];
    let mut at = 0;
    for (stack, n) in samples {
        for _ in 0..n {
            b.sample(SampleMode::Cpu, MAIN, at, stack.0, RUNNING);
            at += 1;
        }
    }
    b.counters(&[
        ("walk.failed.unknown_java", 4),
        ("walk.failed.break_compiled", 3),
    ]);
    let mut rec = b.build(Some(200));
    rec.header.modes = "cpu".into();
    rec
}

fn cpu(rec: &Recording) -> IncompleteStacks {
    let sel = Selection::default();
    incomplete_stacks(rec, sel.mode_in(rec), &sel.stack_counts(rec))
}

#[test]
fn marker_frames_and_empty_stacks_are_counted_by_reason() {
    let rec = walked();
    let found = cpu(&rec);
    assert_eq!((found.samples, found.incomplete), (100, 9));
    let reasons: Vec<(&str, u64)> = found
        .reasons
        .iter()
        .map(|(r, n)| (r.as_str(), *n))
        .collect();
    assert_eq!(
        reasons,
        [("break_compiled", 3), ("no_stack", 2), ("unknown_java", 4)]
    );
    assert_eq!(
        found.warning().as_deref(),
        Some("9.0% of 100 cpu samples have no complete Java stack (unknown_java 4, break_compiled 3, no_stack 2); see jscope info")
    );
}

#[test]
fn the_warning_starts_above_one_percent() {
    let mut found = IncompleteStacks {
        mode: Some(Mode::Wall),
        samples: 1945,
        incomplete: 19,
        ..Default::default()
    };
    found.reasons.insert("unknown_java".into(), 19);
    assert_eq!(found.warning(), None, "0.98% is no warning");
    found.incomplete = 20;
    found.reasons.insert("unknown_java".into(), 20);
    assert_eq!(
        found.warning().as_deref(),
        Some("1.0% of 1,945 wall samples have no complete Java stack (unknown_java 20); see jscope info")
    );
    // Two JVMs' counts add up.
    let mut merged = found.clone();
    merged.add(&found);
    assert_eq!((merged.samples, merged.incomplete), (3890, 40));
    assert_eq!(merged.reasons["unknown_java"], 40);
    assert_eq!(IncompleteStacks::default().warning(), None);
}

#[test]
fn a_snapshot_thread_without_java_frames_is_no_failure() {
    let mut b = RecordingBuilder::new();
    b.thread(MAIN, "Signal Dispatcher", "system", 1);
    b.snapshot(10, 0, &[(MAIN, RUNNING, 0)]);
    let rec = b.build(Some(20));
    let found = cpu(&rec);
    assert_eq!(
        (found.mode, found.samples, found.incomplete),
        (Some(Mode::Snapshot), 1, 0)
    );
    // It is still shown rather than left out.
    let sel = Selection::default();
    let collapsed = collapse(&rec, &sel.stack_counts(&rec), CollapseOptions::default());
    assert_eq!(collapsed.stacks, vec![(vec!["[no_stack]".to_string()], 1)]);
}

#[test]
fn samples_without_frames_are_shown_as_no_stack() {
    let rec = walked();
    let counts = Selection::default().stack_counts(&rec);
    let collapsed = collapse(&rec, &counts, CollapseOptions::default());
    assert!(
        collapsed.stacks.contains(&(vec![NO_STACK.to_string()], 2)),
        "{:?}",
        collapsed.stacks
    );
    assert_eq!(collapsed.total(), 100, "no sample left out");
    let hot = hot_methods(&rec, Some(Mode::Cpu), &counts);
    let row = hot
        .methods
        .iter()
        .find(|m| m.method == "[no_stack]")
        .unwrap();
    assert_eq!((row.self_samples, row.self_percent), (2, 2.0));
    let graph = call_graph(&rec, &counts);
    assert!(graph.nodes.iter().any(|n| n.label == "[no_stack]"));
}

#[test]
fn annotations_name_each_frame_kind() {
    let rec = walked();
    let counts = Selection::default().stack_counts(&rec);
    let stacks = |annotate| {
        let opts = CollapseOptions {
            annotate,
            ..Default::default()
        };
        collapse(&rec, &counts, opts)
            .stacks
            .into_iter()
            .map(|(frames, n)| format!("{} {n}", frames.join(";")))
            .collect::<Vec<_>>()
    };
    let tiers = stacks(Annotation::Tiers);
    assert!(
        tiers.contains(&"demo.Main.main_[j];demo.Work.loop_[i];demo.Work.hot_[1] 90".into()),
        "{tiers:?}"
    );
    // async-profiler reads class frames as `_[i]` and leaves stubs plain.
    assert!(
        tiers.contains(&"demo.Main.main_[j];itable stub;demo.Circle_[i] 1".into()),
        "{tiers:?}"
    );
    assert!(tiers.contains(&"[break_compiled];demo.Work.hot_[0] 3".into()));
    let kinds = stacks(Annotation::Kinds);
    assert!(
        kinds.contains(&"demo.Main.main_[j];itable stub_[s];demo.Circle_[t] 1".into()),
        "{kinds:?}"
    );
    let plain = stacks(Annotation::None);
    assert!(plain.contains(&"demo.Main.main;demo.Work.loop;demo.Work.hot 90".into()));
}

#[test]
fn info_gives_the_walker_and_each_failure_with_its_share() {
    let mut rec = walked();
    let extra = [
        ("cpu_engine", "perf"),
        ("cstack", "vm"),
        ("kernel_frames", "no"),
        ("stack_walker", "vm"),
    ];
    rec.header
        .extra
        .extend(extra.map(|(k, v)| (k.to_string(), v.to_string())));
    let info = Info::of(&rec);
    assert_eq!(info.stack_walker.as_deref(), Some("vm"));
    let text = info.to_string();
    assert!(
        text.contains("cpu engine: perf (cstack vm, kernel frames no, stack walker vm)\n"),
        "{text}"
    );
    assert!(!text.contains("  stack_walker"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap()
    };
    assert!(line("break_compiled").ends_with(" 3 (3.00%)"), "{text}");
    assert!(line("unknown_java").ends_with(" 4 (4.00%)"), "{text}");
    assert!(
        text.contains("empty stacks: 2 (2.00%; shown as [no_stack])"),
        "{text}"
    );
    assert!(
        text.contains("marker frame such as [break_compiled]"),
        "{text}"
    );

    rec.header.extra.retain(|(k, _)| k != "stack_walker");
    rec.header
        .extra
        .push(("stack_walker".into(), "asgct".into()));
    rec.header.extra.push((
        "stack_walker_fallback".into(),
        "no gHotSpotVMStructs".into(),
    ));
    rec.counters.insert("walk.failed.unknown_java".into(), 0);
    rec.counters.insert("walk.failed.gc_active".into(), 1);
    for _ in 0..99_900 {
        rec.samples.push(rec.samples[0]);
    }
    let text = Info::of(&rec).to_string();
    assert!(
        text.contains("stack walker asgct (fell back: no gHotSpotVMStructs))"),
        "{text}"
    );
    assert!(
        line_of(&text, "gc_active").ends_with(" 1 (<0.01%)"),
        "{text}"
    );
}

fn line_of<'t>(text: &'t str, name: &str) -> &'t str {
    text.lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap()
}

#[test]
fn a_recording_written_whole_shows_its_empty_stacks_as_no_stack() {
    let mut rec = walked();
    fill_empty_stacks(&mut rec);
    let empty = rec.samples.iter().filter(|s| rec.stack(s.stack).is_empty());
    assert_eq!(empty.count(), 0);
    let shown: Vec<_> = rec
        .samples
        .iter()
        .filter(|s| rec.stack(s.stack).len() == 1)
        .map(|s| rec.method_label(rec.stack(s.stack)[0].method))
        .filter(|l| l == NO_STACK)
        .collect();
    assert_eq!(shown.len(), 2);
    // Still counted as samples without a stack.
    let found = cpu(&rec);
    assert_eq!(found.reasons["no_stack"], 2);
}

#[test]
fn an_allocated_class_is_added_once_per_stack() {
    let mut rec = walked();
    let hot = rec.samples[0].stack;
    let mut leaves = AllocationStacks::new();
    let a = leaves.stack_named(&mut rec, hot, "byte[]");
    assert_eq!(leaves.stack_named(&mut rec, hot, "byte[]"), a);
    let b = leaves.stack_named(&mut rec, hot, "java.lang.String");
    assert_ne!(a, b);
    assert_eq!(
        leaves.stack_named(&mut rec, hot, ""),
        hot,
        "no class, no leaf"
    );
    let frames = rec.stack(a);
    assert_eq!(frames.len(), 4);
    assert_eq!(
        (rec.method_label(frames[0].method), frames[0].kind),
        ("byte[]".to_string(), FrameKind::Class)
    );
    assert_eq!(&frames[1..], rec.stack(hot));
    assert_eq!(rec.native_library(frames[0].method), Some(""));
}
