//! `jscope convert IN.jfr -o OUT.jsc`: keeps a JFR file (JDK Flight Recorder or
//! async-profiler) as a jscope recording, so it reads without the JFR reader.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  jscope convert app.jfr -o app.jsc\n  jscope report app.jsc")]
pub struct ConvertArgs {
    /// The JFR file to read.
    pub file: PathBuf,
    /// The .jsc recording to write.
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run(args: &ConvertArgs) -> Result<()> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    if !jscope_jfr::is_jfr(&bytes) {
        bail!(
            "{} is not a JFR file (it does not start with FLR\\0); convert reads JFR",
            args.file.display()
        );
    }
    write(&args.output, &jsc_of(&args.file, &bytes)?)
}

/// The `.jsc` bytes of a JFR file's bytes; damage is a warning.
fn jsc_of(path: &Path, jfr: &[u8]) -> Result<Vec<u8>> {
    let rec =
        jscope_jfr::read_bytes(jfr).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(damage) = &rec.damage {
        eprintln!(
            "jscope: warning: {} is {damage}; read up to there",
            path.display()
        );
    }
    Ok(jscope_jfr::encode_jsc(&rec))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
