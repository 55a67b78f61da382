//! Real JDK classes (dumped from each test JDK's own jrt: image, so major 61 on JDK 17
//! and 69 on JDK 25): they parse and write back byte-identical, and every method
//! instruments into code that decodes again with consistent frames.

mod support;

use std::path::{Path, PathBuf};

use jscope_bytecode::frames::{decode_stack_map, encode_stack_map, initial_locals};
use jscope_bytecode::{insn, ClassFile, CodeAttribute};
use jscope_testkit::{compile_fixtures, javas, temp_dir, Java};
use support::{class_files, instrument_class, run_java, text, TreeReport};

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
            if let Some(out) = instrument_class(&bytes, &mut report, &file) {
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
