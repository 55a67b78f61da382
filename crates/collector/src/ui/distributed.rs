//! The distributed-tree page (`jscope view SESSION`): one merged execution tree
//! across JVMs (jscope_analysis::distributed's `FlatTree`), each node coloured by
//! its JVM with a legend (JaViz's mapper), remote calls with their network time.
//!
//! It is served on its own, over a tree computed once: `/` the page, `/api/distributed`
//! the rows as JSON.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use jscope_analysis::distributed::FlatTree;

use crate::http::{Request, Response};
use crate::{CollectorError, ServerConfig};

const PAGE: &str = include_str!("distributed.html");
const SCRIPT: &str = include_str!("distributed.js");
const STYLE: &str = include_str!("distributed.css");

/// The answer to one request for the page over `tree_json`.
pub fn respond(tree_json: &[u8], req: &Request) -> Response {
    match req.path.as_str() {
        "/" | "/distributed.html" => Response::bytes("text/html; charset=utf-8", PAGE),
        "/distributed.js" => Response::bytes("text/javascript; charset=utf-8", SCRIPT),
        "/distributed.css" => Response::bytes("text/css; charset=utf-8", STYLE),
        "/api/distributed" => Response::bytes("application/json", tree_json.to_vec()),
        _ => Response::error(404, "no such page"),
    }
}

/// A running distributed-tree page.
pub struct DistributedServer {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Serves the page over `tree` at `http` (a loopback address: the page has no token).
pub fn view_distributed(tree: &FlatTree, http: &str) -> Result<DistributedServer, CollectorError> {
    let addr = ServerConfig::default().checked_addr(http)?;
    let listen_error = |source| CollectorError::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(listen_error)?;
    let local = listener.local_addr().map_err(listen_error)?;
    let json: Arc<Vec<u8>> = Arc::new(serde_json::to_vec(tree).expect("serialisable"));
    let handler: crate::http::Handler = Arc::new(move |req: &Request| respond(&json, req));
    let stopping = Arc::new(AtomicBool::new(false));
    let stop = stopping.clone();
    let thread = std::thread::Builder::new()
        .name("jscope-http".into())
        .spawn(move || {
            let transport = crate::http::Transport {
                tls: None,
                log: Arc::new(jscope_store::StderrLog),
                counts: Default::default(),
            };
            crate::http::serve(listener, handler, stop, transport)
        })
        .map_err(listen_error)?;
    Ok(DistributedServer {
        addr: local,
        stopping,
        thread: Some(thread),
    })
}

impl DistributedServer {
    pub fn http_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and joins the server thread.
    pub fn shutdown(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::parse_target;

    #[test]
    fn the_page_its_assets_and_the_rows_are_served() {
        let json = br#"{"nodes":[]}"#;
        let page = respond(json, &parse_target("/"));
        assert_eq!(page.status, 200);
        let html = String::from_utf8(page.body).unwrap();
        assert!(html.contains("distributed.js") && html.contains("id=\"legend\""));
        assert_eq!(respond(json, &parse_target("/api/distributed")).body, json);
        assert_eq!(respond(json, &parse_target("/distributed.js")).status, 200);
        assert_eq!(respond(json, &parse_target("/api/jvms")).status, 404);
    }
}
