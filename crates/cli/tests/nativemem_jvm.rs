//! `jscope record --nativemem --nativelock` on a real JVM (the agent's JNI
//! fixture, crates/agent/tests/nativemem_fixtures, built by cc in the run),
//! then what reads it: `jscope nativemem` (--leaks, --by), `collapsed` and
//! `flame --mode leak|nativemem|nativelock`, `locks`, the pprof export read
//! by `go tool pprof`, and `jscope view`'s /api/jvms/ID/nativemem,
//! /api/flame?mode=leak and, in headless Chromium, the flame tab's native modes.

mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir};
use serde_json::Value;
use serving::cdp::Browser;
use support::{jscope, jscope_bin, jscope_json, stderr, stdout};

const LEAK_BYTES: f64 = (64 << 20) as f64;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/nativemem_fixtures")
}

fn library_dir() -> PathBuf {
    let dir = temp_dir("cli-libnativemem");
    let include = jscope_testkit::jni_include();
    let status = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC"])
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()))
        .arg("-o")
        .arg(dir.join("libnativemem.so"))
        .arg(fixtures().join("nativemem.c"))
        .arg("-lpthread")
        .status()
        .expect("a C compiler (cc) must be installed to build the JNI fixture");
    assert!(status.success());
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Records the fixture's leak, churn, grow and contend paths.
fn recorded() -> PathBuf {
    agent_path();
    let java = &javas()[0];
    let file = temp_dir("cli-nativemem").join("native.jsc");
    let out = Command::new(jscope_bin())
        .args([
            "record",
            "--mode",
            "none",
            "--quiet",
            "--nativemem",
            "64k",
            "--nativelock",
            "-o",
        ])
        .arg(&file)
        .arg("--")
        .arg(&java.bin)
        .arg("-Xcheck:jni")
        .arg(format!("-Djava.library.path={}", library_dir().display()))
        .arg("-cp")
        .arg(compile_fixtures(&fixtures()))
        .args(["NativeMem", "load", "leak", "churn", "grow", "contend"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    file
}

fn within(got: f64, want: f64) -> bool {
    (got - want).abs() <= want * 0.15
}

#[test]
fn nativemem_leaks_locks_flame_export_and_api_over_one_recording() {
    let file = recorded();
    let f = s(&file);

    let leaks = jscope_json(&[
        "nativemem",
        f,
        "--leaks",
        "--by",
        "caller",
        "--format",
        "json",
    ]);
    let top = &leaks["rows"][0];
    assert_eq!(top["key"], "NativeMem.leak", "{leaks}");
    assert_eq!(top["site"]["function"], "leak_block [libnativemem.so]");
    assert!(within(top["bytes"].as_f64().unwrap(), LEAK_BYTES), "{top}");
    let text = stdout(&jscope(&["nativemem", f, "--leaks"]));
    assert!(text.starts_with("Native memory not freed: "), "{text}");
    assert!(text.contains("NativeMem.leakPath:"), "{text}");
    assert!(
        !text.contains("churn_block") && !text.contains("grow_buffer"),
        "{text}"
    );
    let by_lib = jscope_json(&["nativemem", f, "--by", "library", "--format", "json"]);
    assert_eq!(by_lib["rows"][0]["key"], "libnativemem.so", "{by_lib}");
    assert!(by_lib["freed_bytes"].as_u64().unwrap() > 256 << 20);

    let collapsed = stdout(&jscope(&["collapsed", f, "--mode", "leak"]));
    assert!(
        collapsed
            .lines()
            .any(|l| l.contains("NativeMem.leak;Java_NativeMem_leak [libnativemem.so];leak_block")),
        "{collapsed}"
    );
    assert!(!collapsed.contains("churn_block"));
    let all = stdout(&jscope(&["collapsed", f, "--mode", "nativemem"]));
    assert!(all.contains("churn_block") && all.contains("grow_buffer"));
    let flame = temp_dir("cli-nativemem-flame").join("locks.html");
    let out = jscope(&["flame", f, "--mode", "nativelock", "-o", s(&flame)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&flame).unwrap();
    assert!(page.contains("contend_once") && page.contains("ns waiting for native locks"));

    let locks = stdout(&jscope(&["locks", f]));
    assert!(
        locks.contains("Native locks (") && locks.contains("pthread_mutex_lock"),
        "{locks}"
    );
    assert!(locks.contains("contend_once [libnativemem.so]"), "{locks}");

    let pb = temp_dir("cli-nativemem-pprof").join("leak.pb.gz");
    let out = jscope(&[
        "export",
        f,
        "--mode",
        "leak",
        "--format",
        "pprof",
        "-o",
        s(&pb),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    if let Some(go) = jscope_testkit::tools::go() {
        let top = Command::new(go)
            .args(["tool", "pprof", "-top", "-sample_index=native_inuse_space"])
            .arg(&pb)
            .output()
            .expect("run go tool pprof");
        let text = stdout(&top);
        assert!(
            text.contains("leak_block [libnativemem.so]"),
            "{text}{}",
            stderr(&top)
        );
    }

    let served = serving::start(&jscope_bin(), &["view", f, "--http", "127.0.0.1:0"]);
    let jvms = served.json("/api/jvms");
    let id = jvms[0]["id"].as_str().unwrap().to_string();
    let api: Value = served.json(&format!(
        "/api/jvms/{id}/nativemem?leaks=1&by=function&top=3"
    ));
    assert_eq!(
        api["rows"][0]["key"], "leak_block [libnativemem.so]",
        "{api}"
    );
    assert!(api["rows"].as_array().unwrap().len() <= 3);
    assert_eq!(
        served.get(&format!("/api/jvms/{id}/nativemem?by=colour")).0,
        400
    );
    let graph = served.json(&format!("/api/flame?jvm={id}&mode=leak&format=json"));
    assert_eq!(graph["mode"], "leak");
    assert!(
        graph["collapsed"].as_str().unwrap().contains("leak_block"),
        "{graph}"
    );

    let Some(mut b) = Browser::launch("nativemem") else {
        return;
    };
    b.goto(&format!("{}/#tab=flame&jvm={id}", served.url()));
    let frame_has = |text: &str| {
        format!(
            "(() => {{ const d = document.querySelector('#flame-frame').contentDocument; \
             return !!d && !!d.body && d.body.innerHTML.includes({}); }})()",
            serde_json::json!(text)
        )
    };
    for (mode, top, unit) in [
        (
            "nativemem",
            "churn_block",
            "native bytes allocated (estimated)",
        ),
        ("leak", "leak_block", "native bytes not freed (estimated)"),
        (
            "nativelock",
            "contend_once",
            "ns waiting for native locks (estimated)",
        ),
    ] {
        b.eval(&format!(
            "document.querySelector('#flame-mode').value = '{mode}'"
        ));
        b.click("#flame-go");
        b.wait_for(&frame_has(unit), Duration::from_secs(30));
        assert!(b
            .wait_for(&frame_has(top), Duration::from_secs(5))
            .as_bool()
            .unwrap());
        b.screenshot(&format!("flame-{mode}.png"));
    }
}
