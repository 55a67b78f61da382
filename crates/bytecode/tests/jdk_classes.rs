//! Real JDK classes (dumped from each test JDK's own jrt: image, so major 61 on JDK 17
//! and 69 on JDK 25): they parse and write back byte-identical, and every method
//! instruments into code that decodes again with consistent frames.

mod support;

use std::path::{Path, PathBuf};

use jscope_bytecode::frames::{decode_stack_map, encode_stack_map, initial_locals};
use jscope_bytecode::{insn, ClassFile, CodeAttribute, Probes};
use jscope_testkit::{compile_fixtures, javas, temp_dir, Java};
use support::{class_files, instrument_class, instrument_tree, run_java, text, TreeReport};

/// Package directories with a spread of shapes: collections and streams (lambdas,
/// switches), core lang and invoke (constructors, intrinsics), the XML parser (huge
/// methods and tables), Swing (deep hierarchies).
const PACKAGES: &[&str] = &[
    "java.base/java/util",
    "java.base/java/util/concurrent",
    "java.base/java/util/stream",
    "java.base/java/util/regex",
    "java.base/java/lang",
    "java.base/java/lang/invoke",
    "java.base/java/time",
    "java.base/java/math",
    "java.base/java/io",
    "java.base/sun/security/util",
    "java.xml/com/sun/org/apache/xerces/internal/impl",
    "java.desktop/javax/swing",
];

fn dump_jdk_classes(java: &Java, per_package: usize) -> PathBuf {
    let tool = compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jrt"));
    let out = temp_dir(&format!("jdk{}-classes", java.major));
    let limit = per_package.to_string();
    let mut args = vec![
        "-cp",
        tool.to_str().unwrap(),
        "DumpJrt",
        out.to_str().unwrap(),
        &limit,
    ];
    args.extend(PACKAGES);
    let run = run_java(java, &args);
    assert!(
        run.status.success(),
        "DumpJrt failed: {}",
        text(&run.stderr)
    );
    out
}

#[test]
fn jdk_classes_round_trip_byte_identical() {
    for java in javas() {
        let dir = dump_jdk_classes(&java, 80);
        let files = class_files(&dir);
        assert!(
            files.len() >= 300,
            "only {} classes from JDK {}",
            files.len(),
            java.major
        );
        let mut methods = 0;
        for file in &files {
            let bytes = std::fs::read(file).unwrap();
            let class =
                ClassFile::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert_eq!(class.to_bytes().unwrap(), bytes, "{}", file.display());
            methods += check_methods_round_trip(&class, file);
        }
        eprintln!(
            "JDK {}: {} classes, {methods} methods with code",
            java.major,
            files.len()
        );
        assert!(methods > 5000);
    }
}

/// Code attributes write back identical, decode into instructions that tile the code,
/// and stack maps decode and re-encode to the same frames. Returns the methods seen.
fn check_methods_round_trip(class: &ClassFile, file: &Path) -> usize {
    let name = class.name().unwrap();
    let mut seen = 0;
    for m in &class.methods {
        let Some(attr) = class.find_attribute(&m.attributes, "Code") else {
            continue;
        };
        seen += 1;
        let code = CodeAttribute::parse(&attr.info).unwrap();
        assert_eq!(code.to_bytes().unwrap(), attr.info, "{}", file.display());
        let insns = insn::decode(&code.code).unwrap();
        let total: u32 = insns.iter().map(|i| i.len).sum();
        assert_eq!(total as usize, code.code.len());
        if let Some(smt) = class.find_attribute(&code.attributes, "StackMapTable") {
            let method = class.pool.utf8(m.name_index).unwrap();
            let desc = class.pool.utf8(m.descriptor_index).unwrap();
            let initial = initial_locals(&name, &method, &desc, m.access & 0x0008 != 0).unwrap();
            let frames = decode_stack_map(&smt.info, &class.pool, &initial).unwrap();
            let mut pool = class.pool.clone();
            let encoded = encode_stack_map(&frames, &initial, &mut pool).unwrap();
            assert_eq!(pool, class.pool, "re-encoding needs no new constants");
            assert_eq!(decode_stack_map(&encoded, &pool, &initial).unwrap(), frames);
        }
    }
    seen
}

#[test]
fn jdk_classes_instrument_and_reparse() {
    for java in javas() {
        let dir = dump_jdk_classes(&java, 80);
        let mut report = TreeReport::default();
        for file in class_files(&dir) {
            let bytes = std::fs::read(&file).unwrap();
            if let Some(out) = instrument_class(&bytes, &mut report, &file, &Probes::default()) {
                let class = ClassFile::parse(&out).unwrap();
                assert_eq!(class.to_bytes().unwrap(), out);
                check_methods_round_trip(&class, &file);
            }
        }
        let summary: Vec<_> = report
            .skipped
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.len()))
            .collect();
        eprintln!(
            "JDK {}: {} instrumented, skipped {summary:?}",
            java.major, report.instrumented
        );
        for (reason, methods) in &report.skipped {
            let expected = reason == "NoCode" || reason == "CodeTooLarge";
            assert!(
                expected,
                "{reason}: {:?}",
                &methods[..methods.len().min(10)]
            );
        }
        assert!(report.instrumented > 5000);
    }
}

/// The running JDK's own java.util, java.util.stream, java.util.regex, java.util.function
/// and java.time, instrumented and patched into java.base: the VM boots on them and
/// runs a program under -Xverify:all with the same results, and the probes fire.
#[test]
fn instrumented_jdk_classes_boot_the_jvm() {
    let driver = compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jdkdriver"));
    let probe = compile_jdk_probe();
    for java in javas() {
        let dumped = dump_packages(&java, JVM_PACKAGES);
        let patch = temp_dir(&format!("jdk{}-patch", java.major));
        let report = instrument_tree(&dumped, &patch, |_| true, &jdk_probes());
        copy_probe(&probe, &patch);
        eprintln!(
            "JDK {}: patched {} classes, {} methods",
            java.major, report.classes_changed, report.instrumented
        );
        assert!(report.instrumented > 5000, "{report:?}");
        let cp = driver.to_str().unwrap();
        let plain = run_java(&java, &["-Xverify:all", "-cp", cp, "UseJdk"]);
        let patch_arg = format!("--patch-module=java.base={}", patch.display());
        let traced = run_java(&java, &["-Xverify:all", &patch_arg, "-cp", cp, "UseJdk"]);
        let (plain_out, traced_out) = (text(&plain.stdout), text(&traced.stdout));
        assert!(
            traced.status.success(),
            "JDK {}: {}",
            java.major,
            text(&traced.stderr)
        );
        let results = |s: &str| {
            s.lines()
                .filter(|l| l.starts_with("RESULT"))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(results(&plain_out).len(), 6, "{plain_out}");
        assert_eq!(results(&plain_out), results(&traced_out));
        assert!(plain_out.contains("PROBE none"));
        let counts = probe_counts(&traced_out);
        eprintln!("JDK {}: probe counts {counts:?}", java.major);
        assert!(counts[0] > 10_000 && counts[1] > 10_000, "{counts:?}");
        // Calls still open in this and other threads at the time of the read.
        assert!(counts[0] >= counts[1] + counts[2]);
        assert!(counts[0] - counts[1] - counts[2] < 100, "{counts:?}");
    }
}

const JVM_PACKAGES: &[&str] = &[
    "java.base/java/util",
    "java.base/java/util/stream",
    "java.base/java/util/regex",
    "java.base/java/util/function",
    "java.base/java/time",
    "java.base/java/time/format",
];

fn jdk_probes() -> Probes {
    Probes {
        class: "java/util/JscopeProbe".into(),
        ..Probes::default()
    }
}

fn dump_packages(java: &Java, packages: &[&str]) -> PathBuf {
    let tool = compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jrt"));
    let out = temp_dir(&format!("jdk{}-packages", java.major));
    let mut args = vec![
        "-cp",
        tool.to_str().unwrap(),
        "DumpJrt",
        out.to_str().unwrap(),
        "100000",
    ];
    args.extend(packages);
    let run = run_java(java, &args);
    assert!(
        run.status.success(),
        "DumpJrt failed: {}",
        text(&run.stderr)
    );
    out
}

/// javac --release cannot compile into java.base, so this one is built by hand.
fn compile_jdk_probe() -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jdkprobe");
    let out = temp_dir("jdk-probe");
    let status = std::process::Command::new(javac())
        .arg(format!("--patch-module=java.base={}", src.display()))
        .arg("-d")
        .arg(&out)
        .arg(src.join("java/util/JscopeProbe.java"))
        .status()
        .expect("javac");
    assert!(status.success());
    out
}

fn javac() -> PathBuf {
    match std::env::var_os("JAVA_HOME") {
        Some(home) => Path::new(&home).join("bin/javac"),
        None => PathBuf::from("javac"),
    }
}

fn copy_probe(probe: &Path, patch: &Path) {
    let name = "java/util/JscopeProbe.class";
    std::fs::copy(probe.join(name), patch.join(name)).unwrap();
}

fn probe_counts(stdout: &str) -> Vec<u64> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("PROBE ["))
        .unwrap_or_else(|| panic!("{stdout}"));
    line[7..line.len() - 1]
        .split(", ")
        .map(|v| v.parse().unwrap())
        .collect()
}
