//! `jscope record`: run java with `-agentpath` inserted.

use std::path::Path;
use std::process::{Command, ExitStatus};

use anyhow::{bail, Context, Result};

use crate::agent::SamplingArgs;
use crate::agent::{absolute, agent_options, find_agent};
use crate::signals;
use clap::Args;

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  jscope record --mode cpu+snapshot -o app.jsc -- java -cp app.jar com.acme.Main"
)]
pub struct RecordArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// The Java command line: the java executable first, then its arguments.
    #[arg(last = true, required = true, value_name = "JAVA ARGS")]
    pub command: Vec<String>,
}

/// Runs the program and returns java's exit code for jscope to exit with.
pub fn run(args: &RecordArgs) -> Result<i32> {
    let file = absolute(&args.sampling.output)?;
    // Else the JVM runs, the agent cannot create the file and disables itself, and
    // the program's work is done for nothing.
    if let Some(dir) = file.parent().filter(|d| !d.is_dir()) {
        bail!(
            "cannot write {}: the directory {} does not exist",
            file.display(),
            dir.display()
        );
    }
    let agent = find_agent()?;
    let options = agent_options(&args.sampling, &file)?;
    let argv = with_agent(&args.command, &agent, &options);
    // Ctrl-C reaches java too; jscope outlives it to pass on its exit code.
    signals::catch_interrupts();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .status()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let code = exit_code(status);
    if let Some(why) = missing_recording(&argv[0], code, &file) {
        // A run that produced nothing is a failure even when the program succeeded.
        eprintln!("jscope: {why}");
        return Ok(if code == 0 { 1 } else { code });
    }
    Ok(code)
}

/// Why `file` holds no recording after `program` exited with `code`, in one line;
/// `None` when the agent wrote at least the recording's header.
fn missing_recording(program: &str, code: i32, file: &Path) -> Option<String> {
    let len = std::fs::metadata(file).map(|m| m.len()).ok();
    if len.is_some_and(|n| n > jscope_format::MAGIC.len() as u64) {
        return None;
    }
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| program.to_string(), |n| n.to_string_lossy().into_owned());
    let exited = format!("`{name}` exited with code {code}");
    let what = match len {
        None => format!("no recording was written to {}", file.display()),
        Some(_) => format!(
            "{} holds no recording header (truncated before the agent wrote it)",
            file.display()
        ),
    };
    Some(if looks_like_java(&name) {
        format!("{exited} and {what}: the JVM did not start or did not load jscope's agent (java's own message, if any, is above)")
    } else {
        format!("{exited} and {what}: `{name}` is not a JVM, so jscope's agent never loaded; the command after `--` must be java (e.g. -- java -cp app.jar com.acme.Main)")
    })
}

/// `java`, `java.exe`, `javaw`, or a launcher whose name says java.
fn looks_like_java(name: &str) -> bool {
    name.to_ascii_lowercase().contains("java")
}

/// The command with `-agentpath:AGENT=OPTIONS` right after the java executable,
/// so it comes before `-jar` or the main class.
pub fn with_agent(command: &[String], agent: &Path, options: &str) -> Vec<String> {
    let mut argv = command.to_vec();
    argv.insert(1, format!("-agentpath:{}={options}", agent.display()));
    argv
}

/// The code a shell would report: the exit code, or 128 + the signal.
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_goes_right_after_the_java_executable() {
        let cmd: Vec<String> = ["java", "-Xmx64m", "-jar", "app.jar", "arg"]
            .map(String::from)
            .to_vec();
        let argv = with_agent(
            &cmd,
            Path::new("/opt/libjscope_agent.so"),
            "mode=cpu,file=/tmp/a.jsc",
        );
        assert_eq!(
            argv,
            vec![
                "java",
                "-agentpath:/opt/libjscope_agent.so=mode=cpu,file=/tmp/a.jsc",
                "-Xmx64m",
                "-jar",
                "app.jar",
                "arg"
            ]
        );
    }
}
