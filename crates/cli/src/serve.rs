//! `jscope serve` and `jscope view`: the collector is a program of its own,
//! `jscope-collector` (the CLI holds no server); these commands run it in place of
//! `jscope` with the same arguments, so its help, its output and Ctrl-C are the
//! command's.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;

pub const COLLECTOR_FILE: &str = "jscope-collector";
pub const COLLECTOR_ENV: &str = "JSCOPE_COLLECTOR";

/// The arguments of `serve` or `view`, passed on as they are (`--help` too).
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct CollectorArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<OsString>,
}

/// `$JSCOPE_COLLECTOR` when set, else the program next to the `jscope` executable,
/// where `cargo build` puts it.
fn find_collector() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(COLLECTOR_ENV) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{COLLECTOR_ENV}={} is not a file", path.display());
        }
        return Ok(path);
    }
    let exe = std::env::current_exe().context("cannot locate the jscope executable")?;
    let path = exe.with_file_name(COLLECTOR_FILE);
    if !path.is_file() {
        bail!(
            "the collector program is not at {} (install it beside jscope, or set {COLLECTOR_ENV} to its path)",
            path.display()
        );
    }
    Ok(path)
}

/// Runs `jscope-collector COMMAND ARGS` in place of this process; returns only
/// when it cannot be started.
pub fn run(command: &str, args: &CollectorArgs) -> Result<()> {
    let exe = find_collector()?;
    // Named `jscope` so its help and usage say `jscope serve`, as typed.
    let err = Command::new(&exe)
        .arg0("jscope")
        .arg(command)
        .args(&args.args)
        .exec();
    bail!("cannot run {}: {err}", exe.display())
}
