//! Reading JFR files: async-profiler's (kept as test data), several chunks in one
//! file, and truncated or corrupt copies, which are read up to the damage.

use std::path::Path;

use jscope_format::{EventKind, Recording, SampleMode};

fn async_profiler_file() -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/async-profiler.jfr");
    std::fs::read(p).expect("test data")
}

fn labels_of_samples(rec: &Recording, mode: SampleMode) -> Vec<String> {
    rec.samples
        .iter()
        .filter(|s| s.mode == mode)
        .flat_map(|s| {
            rec.stack(s.stack)
                .iter()
                .map(|f| rec.method_label(f.method))
        })
        .collect()
}

#[test]
fn async_profiler_cpu_wall_alloc_and_lock_events_read() {
    let rec = jscope_jfr::read_bytes(&async_profiler_file()).unwrap();
    assert_eq!(rec.damage, None);
    assert_eq!(rec.chunks, 1);
    assert_eq!(rec.header.agent_version, "async-profiler (JFR)");
    // The counts `jfr summary` (JDK 17) gives for the file: 168 execution samples;
    // its 249 wall-clock events hold 705 samples (`samples`: async-profiler batches
    // an idle thread's), which async-profiler's converters count, and so does jscope.
    let count = |mode| rec.samples.iter().filter(|s| s.mode == mode).count();
    assert_eq!(
        (count(SampleMode::Cpu), count(SampleMode::Wall)),
        (168, 705)
    );
    let wall_ns: u64 = rec
        .samples
        .iter()
        .filter(|s| s.mode == SampleMode::Wall)
        .map(|s| s.weight_ns)
        .sum();
    assert_eq!(wall_ns, 705 * 50_000_000);
    let kinds = |name: &str| rec.events.iter().filter(|e| e.kind.name() == name).count();
    assert_eq!((kinds("alloc"), kinds("monitor")), (1974, 133));
    let cpu = labels_of_samples(&rec, SampleMode::Cpu);
    let wall = labels_of_samples(&rec, SampleMode::Wall);
    for m in ["ApFixture.burn", "ApFixture.contend", "ApFixture.main"] {
        assert!(cpu.iter().any(|l| l == m), "{m} not in the cpu samples");
    }
    assert!(wall.iter().any(|l| l == "ApFixture.contend"));
    // The recording's settings: itimer every 10 ms, wall clock every 50 ms.
    let cpu_sample = rec
        .samples
        .iter()
        .find(|s| s.mode == SampleMode::Cpu)
        .unwrap();
    assert_eq!(cpu_sample.weight_ns, 10_000_000);
    let wall_sample = rec
        .samples
        .iter()
        .find(|s| s.mode == SampleMode::Wall)
        .unwrap();
    assert_eq!(wall_sample.weight_ns % 50_000_000, 0);

    let allocs: Vec<_> = rec
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Alloc {
                class, size, stack, ..
            } => Some((class, size, stack)),
            _ => None,
        })
        .collect();
    assert!(!allocs.is_empty());
    let (class, size, stack) = allocs[0];
    assert_eq!(rec.string(rec.class(class).unwrap().name), "[B");
    assert!(size >= 100_000, "{size}");
    assert_eq!(
        rec.method_label(rec.stack(stack)[0].method),
        "ApFixture.allocate"
    );

    let lock = rec
        .events
        .iter()
        .find_map(|e| match e.kind {
            EventKind::MonitorBlocked {
                duration_ns,
                class,
                stack,
                ..
            } => Some((e.thread, duration_ns, class, stack)),
            _ => None,
        })
        .expect("a monitor event");
    assert!(lock.1 > 0);
    assert_eq!(
        rec.string(rec.class(lock.2).unwrap().name),
        "java.lang.Object"
    );
    assert_eq!(
        rec.method_label(rec.stack(lock.3)[0].method),
        "ApFixture.contend"
    );
    assert!(rec.thread(lock.0).unwrap().name.starts_with("contender-"));
}

#[test]
fn a_file_of_several_chunks_reads_them_all() {
    let one = async_profiler_file();
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let a = jscope_jfr::read_bytes(&one).unwrap();
    let b = jscope_jfr::read_bytes(&two).unwrap();
    assert_eq!((b.chunks, b.damage.clone()), (2, None));
    assert_eq!(b.samples.len(), 2 * a.samples.len());
    assert_eq!(b.events.len(), 2 * a.events.len());
    // Names are shared across chunks, not declared again.
    assert_eq!(b.methods.len(), a.methods.len());
    assert_eq!(b.threads.len(), a.threads.len());
}

#[test]
fn a_cut_file_is_read_up_to_the_cut_at_every_offset() {
    let one = async_profiler_file();
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let whole = jscope_jfr::read_bytes(&one).unwrap();
    let step = two.len() / 41;
    for cut in (4..two.len())
        .step_by(step)
        .chain([two.len() - 1, one.len() + 3])
    {
        let rec =
            jscope_jfr::read_bytes(&two[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let damage = rec
            .damage
            .clone()
            .unwrap_or_else(|| panic!("cut at {cut}: no damage"));
        if cut >= one.len() {
            // The first chunk is whole: all of it is kept, and what the cut
            // second chunk holds before the cut (async-profiler writes its metadata
            // first).
            assert!(rec.samples.len() >= whole.samples.len(), "cut at {cut}");
            assert_eq!(damage.chunk_index, 1, "cut at {cut}");
        }
    }
}

#[test]
fn corrupt_bytes_give_damage_or_wrong_values_never_a_panic() {
    let one = async_profiler_file();
    for at in (68..one.len()).step_by(one.len() / 61) {
        for flip in [0xff, 0x80, 0x01] {
            let mut bad = one.clone();
            bad[at] ^= flip;
            let _ = jscope_jfr::read_bytes(&bad);
        }
    }
    let mut bad = one.clone();
    bad[8..16].copy_from_slice(&u64::MAX.to_be_bytes()); // chunk size
    let rec = jscope_jfr::read_bytes(&bad).unwrap();
    assert!(rec.damage.is_some());
}

#[test]
fn a_file_that_is_not_jfr_is_an_error() {
    let e = jscope_jfr::read_bytes(b"JSCOPE\0\0 not jfr").unwrap_err();
    assert!(e.to_string().starts_with("not a JFR file"), "{e}");
    assert!(jscope_jfr::read_bytes(b"").is_err());
}

#[test]
fn a_converted_recording_reads_back_the_same() {
    let rec = jscope_jfr::read_bytes(&async_profiler_file()).unwrap();
    let back = Recording::from_bytes(&jscope_jfr::encode_jsc(&rec)).unwrap();
    assert_eq!(back.damage, None);
    assert_eq!(back.samples, rec.samples);
    assert_eq!(back.events, rec.events);
    assert_eq!(back.stacks, rec.stacks);
    assert_eq!(back.methods, rec.methods);
    assert_eq!(back.strings, rec.strings);
    assert_eq!(back.threads, rec.threads);
    assert_eq!(back.header, rec.header);
}

/// async-profiler names native and C++ frames' class after their library; they
/// read `libc.so.6.__futex_abstimed_wait_common` where jscope's own mixed stacks
/// (and docs/CLI.md for async-profiler files) say `__futex_abstimed_wait_common
/// [libc.so.6]`, so the two never matched in a diff.
#[test]
fn async_profiler_native_frames_are_named_symbol_and_library_as_the_agents() {
    let rec = jscope_jfr::read_bytes(&async_profiler_file()).unwrap();
    let wall = labels_of_samples(&rec, SampleMode::Wall);
    assert!(
        wall.iter()
            .any(|l| l == "__futex_abstimed_wait_common [libc.so.6]"),
        "{:?}",
        &wall[..wall.len().min(20)]
    );
    assert!(wall
        .iter()
        .any(|l| l == "os::PlatformMonitor::wait [libjvm.so]"));
    assert!(!wall.iter().any(|l| l.starts_with("libc.so.6.")));
    // Java frames keep their class.
    assert!(wall.iter().any(|l| l == "java.lang.Thread.run"));
    let futex = rec
        .samples
        .iter()
        .flat_map(|s| rec.stack(s.stack).iter())
        .find(|f| rec.method_label(f.method).starts_with("__futex"))
        .unwrap();
    assert_eq!(rec.native_library(futex.method), Some("libc.so.6"));
}
