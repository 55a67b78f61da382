//! `jscope record`: run java with `-agentpath` inserted.

use std::path::Path;
use std::process::{Command, ExitStatus};

use anyhow::{Context, Result};

use crate::agent::{absolute, agent_options, find_agent};
use crate::args::RecordArgs;
use crate::signals;

/// Runs the program and returns java's exit code for jscope to exit with.
pub fn run(args: &RecordArgs) -> Result<i32> {
    let agent = find_agent()?;
    let file = absolute(&args.sampling.output)?;
    let options = agent_options(&args.sampling, &file)?;
    let argv = with_agent(&args.command, &agent, &options);
    // Ctrl-C reaches java too; jscope outlives it to pass on its exit code.
    signals::catch_interrupts();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .status()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    if !file.exists() {
        // The agent explains on java's stderr; say where to look.
        eprintln!(
            "jscope: warning: no recording was written to {} (see the agent's message above)",
            file.display()
        );
    }
    Ok(exit_code(status))
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
