//! The CLI and the collector choose the same JVMs: given the same stored JVMs (two
//! with one pid started within the same millisecond, services, labels), `jscope
//! info`/`report` with `--data DIR` or `--collector URL` and the collector's
//! `/api/jvms` pick the same ones for every `--jvm`, `--service` and `--label`.

#[path = "../../collector/tests/common/sim.rs"]
mod common;
mod serving;
mod support;

use std::path::Path;

use common::{SimJvm, SNAPSHOTS_PER_CHUNK, THREADS};
use jscope_format::{decode_payload, split_chunk, Split};
use jscope_store::identity::{apply_dictionary, new_dictionary, timed_span};
use jscope_store::{FileStore, JvmIdentity, Store};
use jscope_testkit::temp_dir;
use support::*;

/// A stored JVM: pid, start (epoch ns), main class, service, labels, chunks.
struct Stored(u32, u64, &'static str, &'static str, &'static str, u64);

const SECOND: u64 = 1_000_000_000;
const START: u64 = 1_800_000_000 * SECOND;

/// A and B share pid 10 and the millisecond they started in: only the
/// nanoseconds say A is the newer (and A's id sorts first, so a tie on the
/// millisecond picks neither by chance).
const JVMS: [Stored; 3] = [
    Stored(10, START + 900, "com.acme.A", "shop", "env:prod", 1),
    Stored(10, START + 100, "com.acme.B", "shop", "env:dev", 2),
    Stored(
        11,
        START + 5 * SECOND,
        "com.acme.C",
        "billing",
        "env:prod",
        3,
    ),
];

fn store_jvms(dir: &Path) {
    let store = FileStore::open(dir, 64 << 20, std::time::Duration::from_secs(3600)).unwrap();
    for Stored(pid, start, main, service, labels, chunks) in JVMS {
        let mut sim = SimJvm::new(pid, main);
        sim.header.start_wall_ns = start;
        sim.header.extra = vec![
            ("service".into(), service.into()),
            ("labels".into(), labels.into()),
        ];
        let id = format!("{main}-{pid}");
        let identity = JvmIdentity::from_header(&id, &sim.header, "127.0.0.1", &[]);
        let mut dict = new_dictionary(&sim.header);
        store
            .open(&identity, &sim.header_bytes(), 1, &dict)
            .unwrap();
        for seq in 1..=chunks {
            let chunk = sim.chunk();
            let Ok(Split::Chunk(raw)) = split_chunk(&chunk, 0) else {
                panic!("one whole chunk")
            };
            let records = decode_payload(&raw.payload).unwrap();
            apply_dictionary(&mut dict, &records);
            let span = timed_span(&identity, &records);
            store.append(&id, seq, &chunk, span, &dict).unwrap();
        }
        store.sync(&id).unwrap();
        store.close(&id).unwrap();
    }
}

/// The samples each stored JVM holds, by its main class.
fn samples_of(main: &str) -> u64 {
    let j = JVMS.iter().find(|j| j.2 == main).unwrap();
    j.5 * SNAPSHOTS_PER_CHUNK * THREADS as u64
}

/// The main classes of the JVMs the collector's API picks for `query`.
fn api_pick(served: &serving::Served, query: &str) -> Vec<String> {
    let rows = served.json(&format!("/api/jvms?{query}"));
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["main_class"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_cli_and_the_collector_pick_the_same_jvms() {
    let data = temp_dir("cli-selection");
    store_jvms(&data);
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let url = served.url();
    let sources: [[&str; 2]; 2] = [["--data", data.to_str().unwrap()], ["--collector", &url]];
    let cases: [(&[&str], &str); 4] = [
        (&["--jvm", "10"], "jvm=10"),
        (
            &["--service", "shop", "--label", "env=prod"],
            "service=shop&label=env=prod",
        ),
        (&["--label", "env=prod"], "label=env=prod"),
        (&["--service", "shop"], "service=shop"),
    ];
    for (args, query) in cases {
        let picked = api_pick(&served, query);
        assert!(!picked.is_empty(), "{query}");
        for source in &sources {
            let cli_args = [source.as_slice(), args].concat();
            if let [one] = picked.as_slice() {
                let info = jscope_json(&[&["info", "--format", "json"], &cli_args[..]].concat());
                assert_eq!(
                    info["command_line"],
                    one.as_str(),
                    "{cli_args:?} vs {query}"
                );
            }
            let report = jscope_json(&[&["report", "--format", "json"], &cli_args[..]].concat());
            let expected: u64 = picked.iter().map(|m| samples_of(m)).sum();
            assert_eq!(
                report["samples"], expected,
                "{cli_args:?} vs {query}: {picked:?}"
            );
        }
    }
    // The newer of the two JVMs of pid 10, by the nanosecond.
    assert_eq!(api_pick(&served, "jvm=10"), ["com.acme.A"]);
    // A JVM outside the narrowing is refused alike.
    let (status, body) = served.get("/api/jvms?jvm=com.acme.C-11&service=shop");
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("is not of service shop"));
    for source in &sources {
        let out = jscope(
            &[
                &["info"],
                source.as_slice(),
                &["--jvm", "com.acme.C-11", "--service", "shop"],
            ]
            .concat(),
        );
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("is not of service shop"),
            "{}",
            stderr(&out)
        );
    }
}
