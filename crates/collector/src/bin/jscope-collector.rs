//! `jscope-collector`: the collector as a program. `jscope serve` and `jscope view`
//! run it (it is found next to `jscope`), so the CLI holds no server: `serve` takes
//! agents' streams, stores them and serves the web UI and HTTP API; `view` serves
//! the same UI over one recording file or a session of `jscope merge`. Both print
//! where to connect, then run until Ctrl-C. Errors are one `jscope: ...` line and
//! exit code 1.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use jscope_analysis::distributed::{is_session, DistributedTree, DistributedView, Session};
use jscope_analysis::trace::TraceOptions;
use jscope_collector::{parse_duration, CollectorError, ServerConfig};

/// jscope's collector: agents stream to it, it stores their data and serves a web UI.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a collector: agents stream to it, it stores their data and serves a web UI.
    Serve(ServeArgs),
    /// Serve the collector's web UI over one recording file.
    View(ViewArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  jscope serve --data /var/lib/jscope --retention 7d\n  java -agentpath:libjscope_agent.so=collector=127.0.0.1:7000 -jar app.jar"
)]
struct ServeArgs {
    /// Where agents connect. A non-loopback address needs --token.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7000")]
    agents: String,
    /// Where the web UI and HTTP API listen. A non-loopback address needs --token.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7080")]
    http: String,
    /// Directory of the stored data (created if needed).
    #[arg(long, value_name = "DIR", default_value = "jscope-data")]
    data: PathBuf,
    /// Delete stored data older than this (e.g. 12h, 7d); default: keep everything
    /// (30d with --store clickhouse://..., whose whole days are dropped).
    #[arg(long, value_name = "DURATION")]
    retention: Option<String>,
    /// Keep the data in ClickHouse instead of --data:
    /// clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE (its HTTP port; user and password
    /// also from JSCOPE_CLICKHOUSE_USER and JSCOPE_CLICKHOUSE_PASSWORD).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Token agents and HTTP clients must present.
    #[arg(long)]
    token: Option<String>,
    /// Speak TLS on --agents and HTTPS on --http with this certificate (PEM, chain
    /// included); read again when the file changes, without a restart.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Refuse agents and HTTP clients without a certificate this CA (PEM) signed.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    client_ca: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  jscope view app.jsc --http 127.0.0.1:7081")]
struct ViewArgs {
    /// The recording (.jsc, or a JFR file) to show, or a session from `jscope merge` (the tree across JVMs).
    file: PathBuf,
    /// Where the web UI listens.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7080")]
    http: String,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let done = match &cli.command {
        Command::Serve(a) => serve(a),
        Command::View(a) => view(a),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jscope: {}", error_text(&e));
            ExitCode::from(1)
        }
    }
}

/// Help and version go to stdout with success; a usage error is one line naming
/// the problem and the command's help.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = write!(std::io::stdout(), "{e}");
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let message = text.split("\n\nUsage:").next().unwrap_or(&text);
    let message = message.trim().trim_start_matches("error: ");
    let message = message.replace("For more information, try '--help'.", "");
    let words: Vec<&str> = message.split_whitespace().collect();
    let command = std::env::args().nth(1).filter(|c| !c.starts_with('-'));
    let help = command.map_or("jscope --help".into(), |c| format!("jscope {c} --help"));
    eprintln!("jscope: {} (see {help})", words.join(" "));
    ExitCode::from(1)
}

/// The error and its causes joined by `: `, each said once.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

fn serve(args: &ServeArgs) -> Result<()> {
    let mut retention = args.retention.as_deref().map(parse_duration).transpose()?;
    if args.store.is_some() && retention.is_none() {
        retention = Some(Duration::from_secs(30 * 86_400));
    }
    let cfg = ServerConfig {
        agents: args.agents.clone(),
        http: Some(args.http.clone()),
        data: args.data.clone(),
        store: args.store.clone(),
        retention,
        token: args.token.clone().filter(|t| !t.is_empty()),
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(jscope_tls::ServerFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.client_ca.clone(),
            }),
            _ => None,
        },
        ..ServerConfig::default()
    };
    catch_interrupts();
    let handle = jscope_collector::serve(cfg)
        .map_err(|e| port_hint(e, &[("--agents", &args.agents), ("--http", &args.http)]))
        .context("cannot start the collector")?;
    if let Some(addr) = handle.agents_addr() {
        let place = match &args.store {
            Some(url) => format!("data in {}", hide_password(url)),
            None => format!("data in {}", args.data.display()),
        };
        let scheme = if args.tls_cert.is_some() {
            "tls://"
        } else {
            ""
        };
        say(&format!("agents: collector={scheme}{addr} ({place})"));
    }
    announce_ui(
        handle.http_addr(),
        args.token.as_deref(),
        args.tls_cert.is_some(),
    );
    wait_for_interrupt();
    handle.shutdown();
    Ok(())
}

/// The store URL without its password, for printing.
fn hide_password(url: &str) -> String {
    let Some((auth, rest)) = url.split_once('@') else {
        return url.to_string();
    };
    match auth.rsplit_once(':') {
        Some((user, _)) if user != "clickhouse" => format!("{user}:***@{rest}"),
        _ => url.to_string(),
    }
}

fn view(args: &ViewArgs) -> Result<()> {
    if is_session(&args.file).with_context(|| format!("cannot read {}", args.file.display()))? {
        return view_session(args);
    }
    let copy = JscCopy::of_jfr(&args.file)?;
    let file = copy.as_ref().map_or(args.file.as_path(), |c| c.0.as_path());
    catch_interrupts();
    let handle = jscope_collector::view(file, &args.http)
        .map_err(|e| port_hint(e, &[("--http", &args.http)]))
        .with_context(|| format!("cannot serve {}", args.file.display()))?;
    announce_ui(handle.http_addr(), None, false);
    wait_for_interrupt();
    handle.shutdown();
    Ok(())
}

/// A session file (`jscope merge -o`): the merged tree, coloured by JVM.
fn view_session(args: &ViewArgs) -> Result<()> {
    let options = TraceOptions::default();
    let warn = |w: String| eprintln!("jscope: warning: {w}");
    let (members, matches) = Session::open(&args.file, |sources| {
        jscope_store::distributed::load_sources(sources, &options, &warn)
            .map_err(anyhow::Error::from)
    })?;
    let tree = DistributedTree::with_matches(members, &matches);
    let rows = tree.flatten(&DistributedView::default());
    catch_interrupts();
    let server = jscope_collector::view_distributed(&rows, &args.http)
        .with_context(|| format!("cannot serve {}", args.file.display()))?;
    announce_ui(Some(server.http_addr()), None, false);
    wait_for_interrupt();
    server.shutdown();
    Ok(())
}

/// A port in use names the flag that chooses another.
fn port_hint(e: CollectorError, flags: &[(&str, &String)]) -> anyhow::Error {
    if let CollectorError::Listen { addr, source } = &e {
        if source.kind() == std::io::ErrorKind::AddrInUse {
            let flag = flags
                .iter()
                .find(|(_, a)| *a == addr)
                .map_or("--http or --agents", |(f, _)| *f);
            return anyhow::anyhow!(
                "cannot listen on {addr}: {source}; another program (another jscope serve or view?) holds it: choose another port with {flag} HOST:PORT"
            );
        }
    }
    e.into()
}

fn announce_ui(addr: Option<SocketAddr>, token: Option<&str>, tls: bool) {
    if let Some(addr) = addr {
        let query = token
            .filter(|t| !t.is_empty())
            .map(|t| format!("?token={t}"))
            .unwrap_or_default();
        let scheme = if tls { "https" } else { "http" };
        say(&format!("UI: {scheme}://{addr}/{query}"));
    }
}

/// One line on stdout, flushed at once: scripts and tests wait for it.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "jscope: {line}");
    let _ = out.flush();
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Replaces the default "die" action of SIGINT and SIGTERM with a flag, so the
/// collector stops cleanly (its store synced) on Ctrl-C.
fn catch_interrupts() {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

fn wait_for_interrupt() {
    while !INTERRUPTED.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(100));
    }
    say("stopping");
}

/// A `.jsc` copy of a JFR file in the temporary directory, which `view` serves
/// through the recording store; removed when dropped.
struct JscCopy(PathBuf);

impl JscCopy {
    /// The copy, or `None` when `path` is not JFR (and is read as it is).
    fn of_jfr(path: &Path) -> Result<Option<JscCopy>> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if !jscope_jfr::is_jfr(&bytes) {
            return Ok(None);
        }
        let rec = jscope_jfr::read_bytes(&bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if let Some(damage) = &rec.damage {
            eprintln!(
                "jscope: warning: {} is {damage}; read up to there",
                path.display()
            );
        }
        let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or("jfr");
        let copy = std::env::temp_dir().join(format!("jscope-{}-{name}.jsc", std::process::id()));
        std::fs::write(&copy, jscope_jfr::encode_jsc(&rec))
            .with_context(|| format!("cannot write {}", copy.display()))?;
        Ok(Some(JscCopy(copy)))
    }
}

impl Drop for JscCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
