//! `jscope export` through the command line's loader: files and a collector's
//! data (simulated agents, real protocol), the selection options, and one-line
//! errors for what cannot be exported.

#[path = "../../collector/tests/common/sim.rs"]
mod common;
mod serving;
mod support;

use std::io::Read;
use std::time::Duration;

use common::{SimJvm, SNAPSHOTS_PER_CHUNK, THREADS};
use jscope_testkit::temp_dir;
use prost::Message;
use support::*;

fn write_synthetic(name: &str) -> std::path::PathBuf {
    let file = temp_dir(name).join("app.jsc");
    std::fs::write(&file, synthetic_recording().bytes).unwrap();
    file
}

fn pprof(path: &std::path::Path) -> jscope_export::pprof::Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    jscope_export::pprof::Profile::decode(&*raw).unwrap()
}

#[test]
fn exports_read_a_collectors_jvm_and_its_window() {
    let data = temp_dir("cli-export-collector");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let mut sim = SimJvm::new(5301, "com.acme.Main5301 --port 1");
    // A start 128 ns past an even multiple of 256 ns, where epoch ns as f64 (256 ns
    // apart today) round the start down and the start + 0.5 s up: seconds from the
    // start taken from the two f64 are 0.500000256, which dropped the snapshot at
    // 0.5 s from the collector's side of the window only (one start in 512 when
    // left to the clock).
    sim.header.start_wall_ns = (sim.header.start_wall_ns & !0x1ff) | 0x80;
    let mut c = sim.connect(served.agents.unwrap(), 1);
    for seq in 1..=4 {
        c.send(seq, &sim.chunk()).unwrap();
    }
    assert_eq!(c.finish(Duration::from_secs(10)).unwrap(), 4);
    let url = served.url();
    let samples = 4 * SNAPSHOTS_PER_CHUNK * THREADS as u64;

    // Collapsed export is `jscope collapsed` of the same selection.
    for window in [&[][..], &["--from", "0.5", "--to", "1.0"][..]] {
        let src = [&["--collector", url.as_str(), "--jvm", "5301"][..], window].concat();
        let out = jscope(&[&["export", "--format", "collapsed"][..], &src].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        let expected = jscope(&[&["collapsed"][..], &src].concat());
        assert_eq!(stdout(&out), stdout(&expected), "{window:?}");
        assert!(!stdout(&out).is_empty());
    }

    // pprof out of the data directory: every snapshot thread, weighted.
    let file = data.join("app.pb.gz");
    let out = jscope(&[
        "export",
        "--data",
        data.to_str().unwrap(),
        "--format",
        "pprof",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p = pprof(&file);
    let counted: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(counted as u64, samples);
    let names: Vec<&str> = p
        .function
        .iter()
        .map(|f| p.string_table[f.name as usize].as_str())
        .collect();
    assert!(names.contains(&"com.acme.App5301.work"), "{names:?}");
    assert!(served.interrupt());
}

#[test]
fn a_file_exports_in_every_format_and_mode_options_select() {
    let file = write_synthetic("cli-export-file");
    let dir = file.parent().unwrap();
    for format in ["pprof", "otlp", "otlp-json", "speedscope", "chrome"] {
        let out_file = dir.join(format!("out.{format}"));
        let out = jscope(&[
            "export",
            file.to_str().unwrap(),
            "--format",
            format,
            "-o",
            out_file.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{format}: {}", stderr(&out));
        assert!(
            std::fs::metadata(&out_file).unwrap().len() > 100,
            "{format}"
        );
    }
    let out = jscope(&["export", file.to_str().unwrap(), "--format", "collapsed"]);
    assert_eq!(
        stdout(&out),
        "demo.App.main;demo.App.first 10\ndemo.App.main;demo.App.second 10\ndemo.App.main;demo.App.third 10\n"
    );
    // The window keeps the second chunk's samples only (100 ms to 200 ms).
    let out = jscope(&[
        "export",
        file.to_str().unwrap(),
        "--format",
        "collapsed",
        "--from",
        "0.1",
        "--to",
        "0.2",
    ]);
    assert_eq!(stdout(&out), "demo.App.main;demo.App.second 10\n");
}

#[test]
fn what_cannot_be_exported_is_a_one_line_error() {
    let file = write_synthetic("cli-export-errors");
    let f = file.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--format", "pprof"], "give -o FILE"),
        (
            &["--format", "chrome", "--mode", "heap"],
            "unknown export mode",
        ),
        (
            &["--format", "chrome", "--mode", "alloc"],
            "no alloc events",
        ),
        (&["--format", "chrome", "--mode", "wall"], "no wall samples"),
        (
            &["--format", "chrome", "--mode", "trace"],
            "no trace events",
        ),
    ];
    for (args, message) in cases {
        let out = jscope(&[&["export", f][..], args].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("jscope: ") && err.contains(message) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}
