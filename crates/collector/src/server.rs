//! Starting and stopping a collector: `serve` wires the store, the plugins, the ingest
//! server, the HTTP API and retention together; `view` serves the UI over one file.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::api::{self, ApiContext};
use crate::hot::HotMethodsListener;
use crate::ingest::{Ingest, StatsSnapshot};
use crate::listener::StoreListener;
use crate::listener::{Listeners, ServerListener};
use crate::live::LiveState;
use crate::{CollectorError, ServerConfig};
use jscope_store::{ClickHouseStore, FileStore, RecordingStore, Store};

/// A running collector. Dropping it without `shutdown` leaves it running in the
/// background until the process exits.
pub struct ServerHandle {
    agents_addr: Option<SocketAddr>,
    http_addr: Option<SocketAddr>,
    ingest: Option<Arc<Ingest>>,
    api: Arc<ApiContext>,
    stopping: Arc<AtomicBool>,
    stop_retention: Option<mpsc::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

fn bind(addr: SocketAddr) -> Result<TcpListener, CollectorError> {
    TcpListener::bind(addr).map_err(|source| CollectorError::Listen {
        addr: addr.to_string(),
        source,
    })
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("spawn a collector thread")
}

/// Starts a collector with the standard plugins (store, live state, hot methods).
pub fn serve(cfg: ServerConfig) -> Result<ServerHandle, CollectorError> {
    serve_with(cfg, Vec::new())
}

/// Starts a collector with the standard plugins followed by `extra` ones.
pub fn serve_with(
    cfg: ServerConfig,
    extra: Vec<Arc<dyn ServerListener>>,
) -> Result<ServerHandle, CollectorError> {
    let agents = cfg.checked_addr(&cfg.agents)?;
    let http = cfg
        .http
        .as_deref()
        .map(|a| cfg.checked_addr(a))
        .transpose()?;
    let tls = cfg
        .tls
        .as_ref()
        .map(|files| files.config())
        .transpose()
        .map_err(|e| CollectorError::Tls(e.to_string()))?;
    let store: Arc<dyn Store> = match &cfg.store {
        Some(url) => Arc::new(ClickHouseStore::connect(url, cfg.log.clone())?),
        None => Arc::new(FileStore::open(
            &cfg.data,
            cfg.segment_bytes,
            cfg.segment_age,
        )?),
    };
    let live = Arc::new(LiveState::new());
    let hot = Arc::new(HotMethodsListener::new());
    let mut listeners = Listeners::default();
    listeners.add(Arc::new(StoreListener::new(store.clone())));
    listeners.add(live.clone());
    listeners.add(hot.clone());
    extra.into_iter().for_each(|l| listeners.add(l));

    let agent_listener = bind(agents)?;
    let agents_addr = agent_listener.local_addr().ok();
    let ingest = Arc::new(Ingest::new(
        cfg.clone(),
        store.clone(),
        listeners,
        tls.clone(),
    ));
    let stats_source = ingest.clone();
    let http_counts = Arc::new(crate::metrics::HttpCounts::default());
    let metrics = {
        let (ingest, live, http) = (ingest.clone(), live.clone(), http_counts.clone());
        move || {
            crate::metrics::render(&crate::metrics::Sources {
                ingest: &ingest.stats,
                live: &live,
                http: &http,
            })
        }
    };
    let api = Arc::new(ApiContext {
        store: store.clone(),
        live: Some(live),
        hot: Some(hot),
        stats: Some(Arc::new(move || stats_source.stats.snapshot())),
        token: cfg.token.clone(),
        trees: Default::default(),
        pushes: Some(Default::default()),
        metrics: Some(Arc::new(metrics)),
    });
    let stopping = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let http_addr = match http {
        Some(addr) => {
            let transport = crate::http::Transport {
                tls,
                log: cfg.log.clone(),
                counts: http_counts,
            };
            Some(start_http(addr, &api, &stopping, &mut threads, transport)?)
        }
        None => None,
    };
    let accepting = ingest.clone();
    threads.push(spawn("jscope-ingest", move || {
        accepting.accept_loop(agent_listener)
    }));
    let stop_retention = cfg.retention.map(|keep| {
        let (tx, rx) = mpsc::channel();
        let (store, log) = (store.clone(), cfg.log.clone());
        threads.push(spawn("jscope-retention", move || {
            retention_loop(&*store, keep, rx, &*log)
        }));
        tx
    });
    Ok(ServerHandle {
        agents_addr,
        http_addr,
        ingest: Some(ingest),
        api,
        stopping,
        stop_retention,
        threads,
    })
}

/// Serves the web UI and API over one recording file (`jscope view FILE`).
pub fn view(recording: &Path, http: &str) -> Result<ServerHandle, CollectorError> {
    let cfg = ServerConfig::default();
    let addr = cfg.checked_addr(http)?;
    let store: Arc<dyn Store> = Arc::new(RecordingStore::open(recording)?);
    let api = Arc::new(ApiContext {
        store,
        live: None,
        hot: None,
        stats: None,
        token: None,
        trees: Default::default(),
        pushes: None,
        metrics: None,
    });
    let stopping = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let transport = crate::http::Transport {
        tls: None,
        log: cfg.log.clone(),
        counts: Default::default(),
    };
    let http_addr = Some(start_http(addr, &api, &stopping, &mut threads, transport)?);
    Ok(ServerHandle {
        agents_addr: None,
        http_addr,
        ingest: None,
        api,
        stopping,
        stop_retention: None,
        threads,
    })
}

fn start_http(
    addr: SocketAddr,
    api: &Arc<ApiContext>,
    stopping: &Arc<AtomicBool>,
    threads: &mut Vec<JoinHandle<()>>,
    transport: crate::http::Transport,
) -> Result<SocketAddr, CollectorError> {
    let listener = bind(addr)?;
    let local = listener
        .local_addr()
        .map_err(|source| CollectorError::Listen {
            addr: addr.to_string(),
            source,
        })?;
    let (handler, stopping) = (api::handler(api.clone()), stopping.clone());
    threads.push(spawn("jscope-http", move || {
        crate::http::serve(listener, handler, stopping, transport)
    }));
    Ok(local)
}

fn retention_loop(
    store: &dyn Store,
    keep: Duration,
    stop: mpsc::Receiver<()>,
    log: &dyn crate::LogSink,
) {
    let every = (keep / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let cutoff = now.saturating_sub(keep).as_nanos() as u64;
        match store.retain(cutoff) {
            Ok(r) if r.segments_deleted > 0 => log.line(&format!(
                "retention: deleted {} segments ({} bytes), {} jvms",
                r.segments_deleted, r.bytes_freed, r.jvms_deleted
            )),
            Ok(_) => {}
            Err(e) => log.line(&format!("retention failed: {e}")),
        }
        if !matches!(
            stop.recv_timeout(every),
            Err(mpsc::RecvTimeoutError::Timeout)
        ) {
            return;
        }
    }
}

impl ServerHandle {
    /// Where agents connect (the bound port when the config asked for port 0).
    pub fn agents_addr(&self) -> Option<SocketAddr> {
        self.agents_addr
    }

    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    pub fn api(&self) -> &ApiContext {
        &self.api
    }

    pub fn stats(&self) -> Option<StatsSnapshot> {
        self.ingest.as_ref().map(|i| i.stats.snapshot())
    }

    /// Blocks until the server stops (it stops only through `shutdown` from elsewhere,
    /// so in practice: forever, as `jscope serve` wants).
    pub fn wait(mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// Stops accepting, closes agent connections (their unacknowledged chunks will be
    /// resent on reconnection) and joins the server threads.
    pub fn shutdown(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(i) = &self.ingest {
            i.stopping.store(true, Ordering::SeqCst);
            i.disconnect_all();
        }
        // Wake the blocking accept loops.
        for addr in [self.agents_addr, self.http_addr].into_iter().flatten() {
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
        }
        drop(self.stop_retention.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
