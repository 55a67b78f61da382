//! How commands print: a text table or JSON, to standard output or a file, and
//! the one-line warnings of stacks that do not name the code that ran.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use clap::ValueEnum;
use jscope_analysis::{incomplete_stacks, Mode, StackCounts};
use jscope_format::Recording;

/// How a command prints its result: a text table or JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

impl Format {
    /// Prints `v` to stdout as its text table or as pretty JSON.
    pub fn print<T: std::fmt::Display + serde::Serialize>(self, v: &T) -> Result<()> {
        let json = match self {
            Format::Text => None,
            Format::Json => Some(serde_json::to_string_pretty(v)?),
        };
        with_stdout(|w| match &json {
            None => write!(w, "{v}"),
            Some(json) => writeln!(w, "{json}"),
        })
    }
}

/// Runs `write` on buffered stdout and flushes, so a closed pipe surfaces as an error.
pub fn with_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    write(&mut out)?;
    out.flush()?;
    Ok(())
}

/// Writes to the output file or to buffered stdout, flushing at the end so a
/// closed pipe surfaces as an error (treated as success by main).
pub fn with_output(
    output: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    match output {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = BufWriter::new(file);
            write(&mut out)
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            write(&mut out)?;
            out.flush()?;
        }
    }
    Ok(())
}

/// Says, in one line on stderr each, what a profile's readers should know of
/// its stacks: that unknown, broken or empty ones are more than 1% of its
/// samples (see [`jscope_analysis::IncompleteStacks::warning`]), computed here
/// or sent by a collector with the profile. Every command that reads samples
/// warns through here.
pub fn warn_stacks(title: &str, warnings: impl IntoIterator<Item = String>) {
    for w in warnings {
        eprintln!("jscope: warning: {title}: {w}");
    }
}

/// [`warn_stacks`] for `counts`, samples of `mode` selected from `rec`.
pub fn warn_incomplete(rec: &Recording, mode: Option<Mode>, counts: &StackCounts, title: &str) {
    warn_stacks(title, incomplete_stacks(rec, mode, counts).warning());
}
