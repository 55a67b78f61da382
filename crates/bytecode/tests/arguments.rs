//! `call_with_arguments` on javac-compiled methods of every argument shape, run
//! under -Xverify:all on every test JDK: the code verifies, gives the results of
//! the unchanged code, and the probes see each method's slots as they were at its
//! entry, its returns and the exception that left it.

use std::path::Path;

use jscope_bytecode::{call_with_arguments, ArgumentProbes, CallSite};
use jscope_testkit::{compile_fixtures_release, javas, temp_dir};

const PROBES: ArgumentProbes = ArgumentProbes {
    class: "jscope/Remote",
    enter: "enter",
    exit: "exit",
    thrown: "thrown",
};

/// Site ids: the constructor 1, `all` 2, `countDown` 3, `fails` 4 (`main` none).
fn site(name: &str, _descriptor: &str) -> Option<CallSite> {
    let id = match name {
        "<init>" => 1,
        "all" => 2,
        "countDown" => 3,
        "fails" => 4,
        _ => return None,
    };
    Some(CallSite { id, returns: true })
}

fn run(java: &Path, classes: &Path) -> String {
    let out = std::process::Command::new(java)
        .args(["-Xverify:all", "-cp"])
        .arg(classes)
        .arg("fixtures.Args")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn probes_see_every_argument_shape_and_the_code_still_verifies() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/arguments_fixtures");
    let plain = compile_fixtures_release(&fixtures, 11);
    let rewritten = temp_dir("arguments-rewritten");
    std::fs::create_dir_all(rewritten.join("fixtures")).unwrap();
    std::fs::create_dir_all(rewritten.join("jscope")).unwrap();
    let remote = "jscope/Remote.class";
    std::fs::copy(plain.join(remote), rewritten.join(remote)).unwrap();
    let bytes = std::fs::read(plain.join("fixtures/Args.class")).unwrap();
    let (new_bytes, methods) = call_with_arguments(&bytes, site, &PROBES)
        .unwrap()
        .expect("methods rewritten");
    let names: Vec<&str> = methods.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["<init>", "all", "countDown", "fails"]);
    std::fs::write(rewritten.join("fixtures/Args.class"), new_bytes).unwrap();

    for java in javas() {
        let before = run(&java.bin, &plain);
        let after = run(&java.bin, &rewritten);
        assert_eq!(
            before
                .lines()
                .filter(|l| !l.starts_with("enter") && !l.starts_with("exit"))
                .collect::<Vec<_>>(),
            ["caught no", "results n7 125 0"],
            "jdk {}",
            java.major
        );
        let want = [
            // A constructor's `this` is not initialised at its entry: null.
            "enter 1 null n:String 7:Long null",
            "exit 1",
            "enter 2 this 1:Integer 2:Long null c:String 3.5:Double null 1:Integer 6:Integer 103:Integer 7.5:Float array",
            "exit 2",
            "enter 3 3:Integer",
            "exit 3",
            "enter 4 no:String",
            "thrown 4",
            "caught no",
            "results n7 125 0",
        ];
        assert_eq!(
            after.lines().collect::<Vec<_>>(),
            want,
            "jdk {}",
            java.major
        );
    }
}
