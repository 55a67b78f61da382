//! `jscope serve` and `jscope view`: thin wrappers over jscope_collector's `serve`
//! and `view` (`view_distributed` for a session file of `jscope merge`). They
//! print where to connect, then run until Ctrl-C.

use std::io::Write;
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result};
use jscope_collector::{parse_duration, ServerConfig, ServerHandle};

use crate::args::{ServeArgs, ViewArgs};
use crate::signals;

pub fn serve(args: &ServeArgs) -> Result<()> {
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
        ..ServerConfig::default()
    };
    signals::catch_interrupts();
    let handle = jscope_collector::serve(cfg)
        .map_err(|e| port_hint(e, &[("--agents", &args.agents), ("--http", &args.http)]))
        .context("cannot start the collector")?;
    if let Some(addr) = handle.agents_addr() {
        let place = match &args.store {
            Some(url) => format!("data in {}", hide_password(url)),
            None => format!("data in {}", args.data.display()),
        };
        say(&format!("agents: collector={addr} ({place})"));
    }
    announce_ui(handle.http_addr(), args.token.as_deref());
    run_until_interrupted(handle);
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

pub fn view(args: &ViewArgs) -> Result<()> {
    if crate::distributed::is_session(&args.file)? {
        return view_session(args);
    }
    let copy = crate::convert::JscCopy::of_jfr(&args.file)?;
    let file = copy.as_ref().map_or(args.file.as_path(), |c| c.path());
    signals::catch_interrupts();
    let handle = jscope_collector::view(file, &args.http)
        .map_err(|e| port_hint(e, &[("--http", &args.http)]))
        .with_context(|| format!("cannot serve {}", args.file.display()))?;
    announce_ui(handle.http_addr(), None);
    run_until_interrupted(handle);
    Ok(())
}

/// A session file (`jscope merge -o`): the merged tree, coloured by JVM.
fn view_session(args: &ViewArgs) -> Result<()> {
    let rows = crate::distributed::session_rows(&args.file)?;
    signals::catch_interrupts();
    let server = jscope_collector::view_distributed(&rows, &args.http)
        .with_context(|| format!("cannot serve {}", args.file.display()))?;
    announce_ui(Some(server.http_addr()), None);
    while !signals::interrupted() {
        thread::sleep(Duration::from_millis(100));
    }
    say("stopping");
    server.shutdown();
    Ok(())
}

/// A port in use names the flag that chooses another.
fn port_hint(e: jscope_collector::CollectorError, flags: &[(&str, &String)]) -> anyhow::Error {
    use jscope_collector::CollectorError;
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

fn announce_ui(addr: Option<SocketAddr>, token: Option<&str>) {
    if let Some(addr) = addr {
        let query = token
            .filter(|t| !t.is_empty())
            .map(|t| format!("?token={t}"))
            .unwrap_or_default();
        say(&format!("UI: http://{addr}/{query}"));
    }
}

/// One line on stdout, flushed at once: scripts and tests wait for it.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "jscope: {line}");
    let _ = out.flush();
}

fn run_until_interrupted(handle: ServerHandle) {
    while !signals::interrupted() {
        thread::sleep(Duration::from_millis(100));
    }
    say("stopping");
    handle.shutdown();
}
