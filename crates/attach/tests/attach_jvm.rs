//! Attaching to real JVMs: every test starts the AttachTarget fixture on each JDK the
//! testkit finds (JDK 17 and JDK 25 when JSCOPE_TEST_JAVAS or the CI venv names it).

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use jscope_attach::{attach, AttachError};
use jscope_testkit::{compile_fixtures, javas, temp_dir, wait_until, Child, Java};

const TIMEOUT: Duration = Duration::from_secs(10);
const NOBODY: u32 = 65534;

/// A running AttachTarget JVM, killed when dropped.
struct Fixture {
    child: Child,
    /// The JVM itself: `child`, or its only child when `child` is a wrapper that forks.
    jvm: u32,
    /// Held open: a JVM that does not start its listener prints a thread dump here.
    _stdout: BufReader<ChildStdout>,
    cwd: PathBuf,
}

impl Fixture {
    fn start(java: &Java, jvm_args: &[&str]) -> Fixture {
        Self::start_wrapped(&[], java, jvm_args)
    }

    /// Starts the JVM under `wrapper` (e.g. `unshare ...`) and waits until main runs,
    /// by which time HotSpot has installed its SIGQUIT handler.
    fn start_wrapped(wrapper: &[&str], java: &Java, jvm_args: &[&str]) -> Fixture {
        let classes =
            compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
        let cwd = temp_dir(&format!("attach-jdk{}", java.major));
        let mut cmd = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut cmd = Command::new(program);
                cmd.args(rest).arg(&java.bin);
                cmd
            }
            None => Command::new(&java.bin),
        };
        cmd.args(jvm_args)
            .arg("-cp")
            .arg(&classes)
            .arg("AttachTarget")
            .current_dir(&cwd)
            .stdout(Stdio::piped());
        let mut child = Child::spawn(&mut cmd);
        let mut stdout = BufReader::new(child.0.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("reading the fixture's stdout");
        assert_eq!(
            line.trim(),
            "ready",
            "the fixture did not start on {java:?}"
        );
        let jvm = only_child(child.id()).unwrap_or(child.id());
        Fixture {
            child,
            jvm,
            _stdout: stdout,
            cwd,
        }
    }

    fn pid(&self) -> u32 {
        self.jvm
    }

    fn assert_no_trigger_file_left(&self, nspid: u32) {
        let name = format!(".attach_pid{nspid}");
        for dir in [self.cwd.as_path(), Path::new("/tmp")] {
            assert!(
                !dir.join(&name).exists(),
                "{name} left in {}",
                dir.display()
            );
        }
    }
}

impl Drop for Fixture {
    /// Ends the JVM with SIGTERM so it removes its attach socket from /tmp, as a
    /// SIGKILL (the testkit's fallback) would leave it behind. The JVM is signalled
    /// itself because `unshare --fork` ignores SIGTERM.
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the pid is our own live child.
        unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGTERM) };
        self.child.wait_timeout(Duration::from_secs(5));
    }
}

/// The pid of the single child of `parent`, if it has one.
fn only_child(parent: u32) -> Option<u32> {
    let list = fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    list.split_whitespace().next()?.parse().ok()
}

/// The feature version in VM.version's `JDK 25.0.2` line.
fn jdk_major(vm_version: &str) -> Option<u32> {
    let version = vm_version.lines().find_map(|l| l.strip_prefix("JDK "))?;
    version.split(['.', '+', '-']).next()?.trim().parse().ok()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn jcmd_and_properties_name_the_running_jdk() {
    for java in javas() {
        eprintln!("attaching on JDK {} ({})", java.major, java.bin.display());
        let fixture = Fixture::start(&java, &[]);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        fixture.assert_no_trigger_file_left(fixture.pid());

        let version = vm.jcmd("VM.version").unwrap();
        assert_eq!(version.code, 0, "{version:?}");
        assert_eq!(
            jdk_major(&version.output),
            Some(java.major),
            "{}",
            version.output
        );

        let properties = vm
            .execute("properties", &[])
            .unwrap()
            .into_result()
            .unwrap();
        let java_version = properties
            .lines()
            .find_map(|l| l.strip_prefix("java.version="))
            .expect("java.version among the properties");
        let major = java_version.split(['.', '+', '-']).next().unwrap();
        assert_eq!(major, java.major.to_string(), "java.version={java_version}");
    }
}

#[test]
fn second_attach_uses_the_running_listener() {
    for java in javas() {
        let fixture = Fixture::start(&java, &[]);
        let first = attach(fixture.pid(), TIMEOUT).unwrap();
        let second = attach(fixture.pid(), TIMEOUT).unwrap();
        assert_eq!(first.socket(), second.socket());
        let uptime = second.jcmd("VM.uptime").unwrap().into_result().unwrap();
        assert!(uptime.trim_end().ends_with(" s"), "{uptime}");
    }
}

#[test]
fn newer_jdks_offer_protocol_2_yet_answer_version_1_requests() {
    for java in javas() {
        let fixture = Fixture::start(&java, &[]);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        // `getversion` (newer JDKs) names the newest protocol the VM speaks; JDK 17 has none.
        let reply = vm.execute("getversion", &[]).unwrap();
        match java.major {
            17 => assert!(reply.output.contains("not recognized"), "{reply:?}"),
            25 => assert_eq!((reply.code, reply.output.as_str()), (0, "2"), "{reply:?}"),
            _ => {}
        }
    }
}

#[test]
fn longest_argument_the_client_allows_is_accepted_by_the_vm() {
    for java in javas() {
        let fixture = Fixture::start(&java, &[]);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        let line = format!("{:<1024}", "VM.version");
        let version = vm.jcmd(&line).unwrap().into_result().unwrap();
        assert_eq!(jdk_major(&version), Some(java.major), "{version}");
        let too_long = format!("{line} ");
        let err = vm.jcmd(&too_long).unwrap_err();
        assert!(matches!(err, AttachError::InvalidRequest(_)), "{err}");
    }
}

#[test]
fn unknown_command_is_reported_with_the_vm_message() {
    for java in javas() {
        let fixture = Fixture::start(&java, &[]);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        let reply = vm.execute("no-such-op", &[]).unwrap();
        assert_ne!(reply.code, 0);
        let err = reply.into_result().unwrap_err().to_string();
        assert!(err.contains("no-such-op not recognized"), "{err}");
    }
}

#[test]
fn loading_a_missing_library_fails_with_the_vm_message() {
    for java in javas() {
        let fixture = Fixture::start(&java, &[]);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        let missing = fixture.cwd.join("libjscope-missing.so");
        let err = vm.load_agent(&missing, "").unwrap_err();
        let AttachError::AgentNotLoaded { message, .. } = &err else {
            panic!("expected AgentNotLoaded on JDK {}, got {err}", java.major);
        };
        let path = missing.to_str().unwrap();
        assert!(
            message.contains(&format!("{path} was not loaded")),
            "{message}"
        );
        assert!(message.contains("No such file"), "{message}");
    }
}

/// Builds the tiny C agent whose Agent_OnAttach returns its options as a number.
fn return_code_agent() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native/return_code_agent.c");
    let library = temp_dir("return-code-agent").join("libreturn_code_agent.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("cc must be installed to build the test agent");
    assert!(status.success(), "cc failed on {}", source.display());
    library
}

#[test]
fn load_agent_returns_the_agents_own_return_code() {
    let agent = return_code_agent();
    for java in javas() {
        // JDK 21+ warns on stderr about dynamically loaded agents unless allowed.
        let allow = if java.major >= 21 {
            vec!["-XX:+EnableDynamicAgentLoading"]
        } else {
            vec![]
        };
        let fixture = Fixture::start(&java, &allow);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        assert_eq!(vm.load_agent(&agent, "0").unwrap(), 0, "JDK {}", java.major);
        assert_eq!(vm.load_agent(&agent, "7").unwrap(), 7, "JDK {}", java.major);
    }
}

#[test]
fn dead_and_zombie_processes_are_reported_as_missing() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    let is_zombie = || {
        fs::read_to_string(format!("/proc/{pid}/status"))
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("State:\tZ")))
    };
    assert!(
        wait_until(Duration::from_secs(5), is_zombie),
        "`true` did not exit"
    );
    let err = attach(pid, TIMEOUT).unwrap_err();
    assert!(
        matches!(err, AttachError::NoSuchProcess { pid: p } if p == pid),
        "{err}"
    );

    child.wait().unwrap();
    let err = attach(pid, TIMEOUT).unwrap_err();
    assert_eq!(err.to_string(), format!("no such process: {pid}"));
}

#[test]
fn process_without_a_sigquit_handler_is_left_alone() {
    let mut sleeper = Child::spawn(Command::new("sleep").arg("30"));
    let err = attach(sleeper.id(), TIMEOUT).unwrap_err();
    assert!(matches!(err, AttachError::NoSigquitHandler { .. }), "{err}");
    let exited = sleeper.wait_timeout(Duration::from_millis(300));
    assert!(exited.is_none(), "sleep was killed: {exited:?}");
}

#[test]
fn jvm_that_refuses_attaching_is_not_signalled() {
    let java = &javas()[0];
    let fixture = Fixture::start(java, &["-XX:+DisableAttachMechanism"]);
    let started = Instant::now();
    let err = attach(fixture.pid(), TIMEOUT).unwrap_err();
    // It used to be sent SIGQUIT, print a thread dump and time out.
    assert!(matches!(err, AttachError::AttachDisabled { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(1));
    fixture.assert_no_trigger_file_left(fixture.pid());
}

#[test]
fn jvm_that_never_starts_its_listener_times_out() {
    let java = &javas()[0];
    // The VM still handles SIGQUIT (it prints a thread dump) but never listens;
    // without performance data nothing says so beforehand.
    let fixture = Fixture::start(java, &["-XX:+DisableAttachMechanism", "-XX:-UsePerfData"]);
    let started = Instant::now();
    let err = attach(fixture.pid(), Duration::from_secs(1)).unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err, AttachError::Timeout { .. }), "{err}");
    assert!(
        err.to_string().starts_with("timed out after 1s waiting"),
        "{err}"
    );
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    fixture.assert_no_trigger_file_left(fixture.pid());
}

#[test]
fn read_timeout_bounds_the_wait_for_a_stopped_jvm() {
    let fixture = Fixture::start(&javas()[0], &[]);
    let mut vm = attach(fixture.pid(), TIMEOUT).unwrap();
    vm.set_read_timeout(Some(Duration::from_millis(500)));
    // A stopped VM still has its connections queued by the kernel, but never answers.
    let pid = fixture.pid() as libc::pid_t;
    // SAFETY: kill has no memory preconditions; the pid is our own live child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    // kill returns before the stop takes effect: wait until the kernel says stopped,
    // or a listener thread still running could answer.
    assert!(
        wait_until(Duration::from_secs(5), || process_state(pid) == Some('T')),
        "the JVM did not stop"
    );
    let started = Instant::now();
    let result = vm.jcmd("VM.version");
    let waited = started.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let err = result.unwrap_err();
    assert!(matches!(err, AttachError::ReplyTimeout { .. }), "{err}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    assert!(
        vm.jcmd("VM.version").unwrap().is_ok(),
        "the VM answers once resumed"
    );
}

#[test]
fn stale_socket_left_by_an_earlier_process_is_replaced() {
    for java in javas() {
        let fixture = Fixture::start(&java, &[]);
        let socket = format!("/tmp/.java_pid{}", fixture.pid());
        // Binding then closing leaves the file with nobody listening, as a JVM killed
        // with SIGKILL does.
        drop(UnixListener::bind(&socket).unwrap());
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        assert!(vm.jcmd("VM.version").unwrap().is_ok());
    }
}

#[test]
fn socket_owned_by_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: only root can give the impostor socket another owner");
        return;
    }
    let fixture = Fixture::start(&javas()[0], &[]);
    let socket = format!("/tmp/.java_pid{}", fixture.pid());
    let impostor = UnixListener::bind(&socket).unwrap();
    std::os::unix::fs::chown(&socket, Some(NOBODY), None).unwrap();
    let result = attach(fixture.pid(), TIMEOUT);
    fs::remove_file(&socket).unwrap();
    drop(impostor);
    let err = result.unwrap_err();
    assert!(
        matches!(
            err,
            AttachError::SocketOwnerMismatch {
                owner: NOBODY,
                expected: 0,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn root_attaches_to_a_jvm_run_by_another_user() {
    if !is_root() {
        eprintln!("skipped: needs root to run the JVM as another user");
        return;
    }
    let as_nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    for java in javas() {
        let fixture = Fixture::start_wrapped(&as_nobody, &java, &["-XX:-UsePerfData"]);
        let vm = attach(fixture.pid(), TIMEOUT).unwrap();
        assert_eq!(fs::metadata(vm.socket()).unwrap().uid(), NOBODY);
        let version = vm.jcmd("VM.version").unwrap();
        assert_eq!(
            jdk_major(&version.output),
            Some(java.major),
            "{}",
            version.output
        );
    }
}

/// Whether this process may create pid and mount namespaces (root, util-linux present).
fn can_create_namespaces() -> bool {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount", "true"])
        .status();
    is_root() && probe.is_ok_and(|s| s.success())
}

fn nspid(pid: u32) -> u32 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let ids = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .unwrap();
    ids.split_whitespace().last().unwrap().parse().unwrap()
}

#[test]
fn reaches_a_jvm_in_its_own_pid_and_mount_namespace() {
    if !can_create_namespaces() {
        eprintln!("skipped: needs root and unshare(1) to build a container-like namespace");
        return;
    }
    let container = [
        "unshare",
        "--kill-child",
        "--pid",
        "--mount",
        "--mount-proc",
    ];
    for java in javas() {
        let fixture = Fixture::start_wrapped(&container, &java, &["-XX:-UsePerfData"]);
        let pid = fixture.pid();
        assert_eq!(nspid(pid), 1);
        // A /tmp of the JVM's own, as in a container; mounted after start so the JDK
        // and the classes, which may live under /tmp, stay reachable.
        let mounted = Command::new("nsenter")
            .args([
                format!("--target={pid}").as_str(),
                "--mount",
                "mount",
                "-t",
                "tmpfs",
            ])
            .args(["jscope-test", "/tmp"])
            .status()
            .unwrap();
        assert!(mounted.success());

        let vm = attach(pid, TIMEOUT).unwrap();
        assert_eq!(
            vm.socket(),
            Path::new(&format!("/proc/{pid}/root/tmp/.java_pid1"))
        );
        assert!(
            !Path::new("/tmp/.java_pid1").exists(),
            "socket leaked into our /tmp"
        );
        let version = vm.jcmd("VM.version").unwrap();
        assert_eq!(
            jdk_major(&version.output),
            Some(java.major),
            "{}",
            version.output
        );
        fixture.assert_no_trigger_file_left(1);
    }
}

/// The state letter of /proc/PID/stat (R, S, T, ...).
fn process_state(pid: libc::pid_t) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may hold spaces; the state follows it.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}
