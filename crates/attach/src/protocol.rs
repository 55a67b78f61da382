//! The bytes of the attach protocol, version 1: request encoding and reply parsing.
//! Pure functions, so they are tested without a JVM.

use crate::error::AttachError;

/// Version 1 is the one every HotSpot since JDK 6 understands, including those that
/// also speak version 2 (JDK 25 does).
const PROTOCOL_VERSION: &str = "1";
/// A version-1 request always carries exactly this many arguments.
const ARG_COUNT: usize = 3;
/// HotSpot's limits for version 1 (JDK 17 and 25 alike): for a longer field the VM
/// closes the connection without a reply, so it is refused here with a clear message.
const MAX_COMMAND_LEN: usize = 16;
const MAX_ARG_LEN: usize = 1024;

/// Encodes `version cmd arg0 arg1 arg2`, each NUL-terminated, missing arguments empty.
pub(crate) fn encode_request(cmd: &str, args: &[&str]) -> Result<Vec<u8>, AttachError> {
    check_field("command", cmd, MAX_COMMAND_LEN)?;
    if cmd.is_empty() {
        return Err(AttachError::InvalidRequest("empty command".into()));
    }
    if args.len() > ARG_COUNT {
        return Err(AttachError::InvalidRequest(format!(
            "{} arguments given, the protocol carries at most {ARG_COUNT}",
            args.len()
        )));
    }
    let mut bytes = Vec::new();
    for field in [PROTOCOL_VERSION, cmd] {
        push_field(&mut bytes, field);
    }
    for index in 0..ARG_COUNT {
        let arg = args.get(index).copied().unwrap_or("");
        check_field("argument", arg, MAX_ARG_LEN)?;
        push_field(&mut bytes, arg);
    }
    Ok(bytes)
}

fn check_field(what: &str, value: &str, max_len: usize) -> Result<(), AttachError> {
    if value.contains('\0') {
        return Err(AttachError::InvalidRequest(format!(
            "{what} contains a NUL byte"
        )));
    }
    if value.len() > max_len {
        return Err(AttachError::InvalidRequest(format!(
            "{what} is {} bytes long, the limit is {max_len}",
            value.len()
        )));
    }
    Ok(())
}

fn push_field(bytes: &mut Vec<u8>, field: &str) {
    bytes.extend_from_slice(field.as_bytes());
    bytes.push(0);
}

/// What the VM answered: its result code (0 is success) and the command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: i32,
    pub output: String,
}

impl Reply {
    /// Splits the raw answer: the first line is the result code, the rest is output.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Reply, AttachError> {
        if bytes.is_empty() {
            return Err(AttachError::Protocol(
                "the JVM closed the connection without replying".into(),
            ));
        }
        // Output is mostly ASCII; a stray invalid byte should not lose the rest.
        let text = String::from_utf8_lossy(bytes);
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        let code = first
            .trim()
            .parse()
            .map_err(|_| AttachError::Protocol(format!("expected a result code, got {first:?}")))?;
        Ok(Reply {
            code,
            output: rest.to_string(),
        })
    }

    pub fn is_ok(&self) -> bool {
        self.code == 0
    }

    /// The output when the VM reported success, else `CommandFailed` with its message.
    pub fn into_result(self) -> Result<String, AttachError> {
        match self.code {
            0 => Ok(self.output),
            code => Err(AttachError::CommandFailed {
                code,
                message: one_line(&self.output),
            }),
        }
    }

    /// Reads the outcome of a `load` request: the agent's `Agent_OnAttach` return code.
    ///
    /// When the agent ran, the VM answers result code 0 and `return code: N` (older
    /// JDKs print the bare number). When the library could not be loaded, JDK 17
    /// answers a non-zero result code, while JDK 25 answers 0; both then say
    /// why in the output, which is what tells the cases apart.
    pub(crate) fn agent_return_code(self) -> Result<i32, AttachError> {
        let first = self.output.lines().next().unwrap_or("").trim();
        let number = first.strip_prefix("return code:").unwrap_or(first).trim();
        match number.parse() {
            Ok(agent_code) if self.code == 0 => Ok(agent_code),
            _ => Err(AttachError::AgentNotLoaded {
                code: self.code,
                message: one_line(&self.output),
            }),
        }
    }
}

/// Joins a multi-line VM message so errors stay on one line.
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        "no message".to_string()
    } else {
        lines.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_always_carries_three_nul_terminated_arguments() {
        let bytes = encode_request("jcmd", &["VM.version"]).unwrap();
        assert_eq!(bytes, b"1\0jcmd\0VM.version\0\0\0");
        let bytes = encode_request("properties", &[]).unwrap();
        assert_eq!(bytes, b"1\0properties\0\0\0\0");
    }

    #[test]
    fn request_fields_that_the_vm_would_reject_are_refused() {
        for (cmd, args) in [
            ("jcmd", vec!["a\0b"]),
            ("", vec![]),
            ("a-command-longer-than-16", vec![]),
            ("load", vec!["a", "b", "c", "d"]),
        ] {
            let err = encode_request(cmd, &args).unwrap_err();
            assert!(matches!(err, AttachError::InvalidRequest(_)), "{err}");
        }
        let long = "x".repeat(MAX_ARG_LEN + 1);
        assert!(encode_request("jcmd", &[&long]).is_err());
        let longest = "x".repeat(MAX_ARG_LEN);
        assert!(encode_request("jcmd", &[&longest]).is_ok());
    }

    #[test]
    fn reply_splits_code_from_output() {
        let reply = Reply::parse(b"0\nline one\nline two\n").unwrap();
        assert_eq!(reply.code, 0);
        assert_eq!(reply.output, "line one\nline two\n");
        let reply = Reply::parse(b"-1").unwrap();
        assert_eq!((reply.code, reply.output.as_str()), (-1, ""));
    }

    #[test]
    fn reply_without_a_code_is_a_protocol_error() {
        assert!(matches!(Reply::parse(b""), Err(AttachError::Protocol(_))));
        assert!(matches!(
            Reply::parse(b"hello\n"),
            Err(AttachError::Protocol(_))
        ));
    }

    #[test]
    fn agent_return_code_is_read_in_both_jdk_styles() {
        let old = Reply::parse(b"0\n0\n").unwrap();
        assert_eq!(old.agent_return_code().unwrap(), 0);
        let new = Reply::parse(b"0\nreturn code: 7\n").unwrap();
        assert_eq!(new.agent_return_code().unwrap(), 7);
    }

    #[test]
    fn failed_load_carries_the_vm_message_on_one_line_in_both_jdk_styles() {
        let message = "/x/lib.so was not loaded.\n/x/lib.so: cannot open shared object file\n";
        for code in ["-1", "0"] {
            let reply = Reply::parse(format!("{code}\n{message}").as_bytes()).unwrap();
            let err = reply.agent_return_code().unwrap_err();
            assert_eq!(
                err.to_string(),
                "the JVM did not load the agent: /x/lib.so was not loaded.; \
                 /x/lib.so: cannot open shared object file"
            );
        }
    }

    #[test]
    fn failed_command_carries_the_vm_message() {
        let reply = Reply::parse(b"-1\nOperation bogus not recognized!").unwrap();
        assert_eq!(
            reply.into_result().unwrap_err().to_string(),
            "the JVM reported failure (code -1): Operation bogus not recognized!"
        );
    }
}
