//! TLS for every jscope connection (agent to collector, the HTTP UI, API and pushes,
//! the CLI's remote collector, the collector's ClickHouse store), with rustls and its
//! `ring` provider.
//!
//! - [`ServerFiles`] builds a server configuration from PEM files. Its certificate and
//!   key are read again when either file changes on disk (checked at each new
//!   handshake), so a renewed certificate is served to the next connection without a
//!   restart; a file caught half-written keeps the previous certificate in service.
//!   With a client CA, every client must present a certificate that CA signed.
//! - [`ClientFiles`] builds a client configuration: the CA that signs the server's
//!   certificate (the system's bundle when none is named), an optional client
//!   certificate, and `insecure`, the only way to skip the server's verification.
//! - [`Stream`] is one connection, plain or TLS, read and written through one value;
//!   [`Stream::tcp`] gives the socket for timeouts and shutdown.
//! - [`looks_like_tls`] tells a TLS client's first byte from a plaintext protocol's,
//!   so a TLS port can refuse plaintext with a clear line.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{ClientConnection, DigitallySignedStruct, RootCertStore, ServerConnection};

pub use rustls::pki_types;
pub use rustls::{ClientConfig, ServerConfig};

/// Where a client looks for trusted CAs when none is named.
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The first byte of every TLS connection: a handshake record.
pub const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Why a TLS configuration could not be built or a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("{path}: {why}")]
    Pem { path: PathBuf, why: String },
    #[error("TLS configuration: {0}")]
    Config(String),
    #[error("invalid TLS server name {0:?}")]
    ServerName(String),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_path_buf(),
            why: format!("bad PEM: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            why: "no CERTIFICATE in it".into(),
        });
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::Pem {
        path: path.to_path_buf(),
        why: format!("no usable private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}"),
    })
}

fn roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    let (added, _ignored) = store.add_parsable_certificates(certificates(path)?);
    if added == 0 {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            why: "no usable CA certificate in it".into(),
        });
    }
    Ok(store)
}

fn certified_key(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = certificates(cert)?;
    let der = private_key(key)?;
    let signing = provider()
        .key_provider
        .load_private_key(der)
        .map_err(|e| TlsError::Config(format!("private key: {e}")))?;
    let ck = CertifiedKey::new(chain, signing);
    ck.keys_match().map_err(|e| {
        TlsError::Config(format!(
            "{} does not match {}: {e}",
            key.display(),
            cert.display()
        ))
    })?;
    Ok(ck)
}

/// A server's certificate files, and the CA its clients' certificates must come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// When set, clients without a certificate this CA signed are refused.
    pub client_ca: Option<PathBuf>,
}

impl ServerFiles {
    /// Reads the files (an error names the file and what is wrong with it) and builds
    /// a configuration whose certificate follows the files on disk.
    pub fn config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let resolver = ReloadingCert::new(&self.cert, &self.key)?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = match &self.client_ca {
            Some(ca) => {
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
                        .build()
                        .map_err(|e| TlsError::Config(format!("client CA: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = Vec::new();
        Ok(Arc::new(config))
    }
}

/// Modification time and length of a file, to notice it was replaced.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Serves the certificate in its files as they are now: each handshake compares the
/// files' modification times and sizes with those last loaded and reloads on change.
struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    current: Mutex<((Stamp, Stamp), Arc<CertifiedKey>)>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish()
    }
}

impl ReloadingCert {
    fn new(cert: &Path, key: &Path) -> Result<ReloadingCert, TlsError> {
        let stamps = (stamp(cert), stamp(key));
        let loaded = certified_key(cert, key)?;
        Ok(ReloadingCert {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            current: Mutex::new((stamps, Arc::new(loaded))),
        })
    }

    fn now(&self) -> Arc<CertifiedKey> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let stamps = (stamp(&self.cert), stamp(&self.key));
        if stamps != current.0 {
            // A pair that does not load (one file replaced before the other) keeps the
            // old certificate, and is tried again at the next handshake.
            if let Ok(fresh) = certified_key(&self.cert, &self.key) {
                *current = (stamps, Arc::new(fresh));
            }
        }
        current.1.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.now())
    }
}

/// What a client trusts and shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientFiles {
    /// The CA that signs the server's certificate; the system bundle when `None`.
    pub ca: Option<PathBuf>,
    /// A client certificate and its key, for servers that require one.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Accept any server certificate: only on an explicit `--insecure`.
    pub insecure: bool,
}

impl ClientFiles {
    pub fn config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider())))
        } else {
            let ca = self
                .ca
                .clone()
                .unwrap_or_else(|| PathBuf::from(SYSTEM_CA_BUNDLE));
            builder.with_root_certificates(roots(&ca)?)
        };
        let config = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(certificates(cert)?, private_key(key)?)
                .map_err(|e| TlsError::Config(format!("client certificate: {e}")))?,
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(TlsError::Config(
                    "a client certificate needs both its certificate and its key file".into(),
                ))
            }
        };
        Ok(Arc::new(config))
    }
}

/// `--insecure`: any certificate is taken, the handshake's signatures still checked.
#[derive(Debug)]
struct AnyServerCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// True when `first` can start a TLS connection (a handshake record); a plaintext
/// protocol (jscope's preamble, an HTTP method) starts with a letter.
pub fn looks_like_tls(first: u8) -> bool {
    first == TLS_HANDSHAKE_RECORD
}

/// Waits (within the socket's read timeout) for a connection's first byte without
/// consuming it; `None` when the peer closed or sent nothing.
pub fn peek_first(tcp: &TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    match tcp.peek(&mut b) {
        Ok(1) => Some(b[0]),
        _ => None,
    }
}

/// Reads and drops what a refused plaintext client already sent (up to 64 KiB, for
/// at most 200 ms), so that closing the socket does not reset the connection before
/// the client reads the refusal.
pub fn discard_pending(tcp: &TcpStream) {
    let _ = tcp.set_read_timeout(Some(std::time::Duration::from_millis(200)));
    let mut scratch = [0u8; 4096];
    let mut left = 64usize << 10;
    let mut r = tcp;
    while left > 0 {
        match r.read(&mut scratch) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// One connection, plain or TLS.
pub enum Stream {
    Plain(TcpStream),
    Client(Box<rustls::StreamOwned<ClientConnection, TcpStream>>),
    Server(Box<rustls::StreamOwned<ServerConnection, TcpStream>>),
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Stream::Plain(_) => "plain",
            Stream::Client(_) => "tls client",
            Stream::Server(_) => "tls server",
        };
        write!(f, "Stream({kind}, {:?})", self.tcp().peer_addr().ok())
    }
}

fn tls_io(e: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// Runs a handshake to its end (or its error, after the alert is sent) within the
/// socket's timeouts.
fn handshake<S>(
    conn: &mut rustls::ConnectionCommon<S>,
    tcp: &mut TcpStream,
) -> Result<(), io::Error> {
    while conn.is_handshaking() {
        conn.complete_io(tcp)?;
    }
    // TLS 1.3 sends its last handshake flight here; a server refusing the client's
    // certificate answers it with an alert, read by the first read after this.
    while conn.wants_write() {
        conn.write_tls(tcp)?;
    }
    Ok(())
}

impl Stream {
    /// Starts TLS as a client on a connected socket and finishes the handshake.
    pub fn client(
        mut tcp: TcpStream,
        config: Arc<ClientConfig>,
        host: &str,
    ) -> Result<Stream, io::Error> {
        let name = server_name(host).map_err(tls_io)?;
        let mut conn = ClientConnection::new(config, name).map_err(tls_io)?;
        handshake(&mut conn, &mut tcp)?;
        Ok(Stream::Client(Box::new(rustls::StreamOwned::new(
            conn, tcp,
        ))))
    }

    /// Starts TLS as a server on an accepted socket and finishes the handshake.
    pub fn server(mut tcp: TcpStream, config: Arc<ServerConfig>) -> Result<Stream, io::Error> {
        let mut conn = ServerConnection::new(config).map_err(tls_io)?;
        handshake(&mut conn, &mut tcp)?;
        Ok(Stream::Server(Box::new(rustls::StreamOwned::new(
            conn, tcp,
        ))))
    }

    /// The socket under the connection: timeouts, blocking mode, shutdown, addresses.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Client(s) => s.get_ref(),
            Stream::Server(s) => s.get_ref(),
        }
    }

    /// The peer's own certificate (DER), when it presented one over TLS.
    pub fn peer_certificate(&self) -> Option<Vec<u8>> {
        let certs = match self {
            Stream::Plain(_) => None,
            Stream::Client(s) => s.conn.peer_certificates(),
            Stream::Server(s) => s.conn.peer_certificates(),
        };
        certs.and_then(|c| c.first()).map(|c| c.to_vec())
    }

    pub fn is_tls(&self) -> bool {
        !matches!(self, Stream::Plain(_))
    }

    /// Ends a TLS session with its close alert (best effort); a plain one is unchanged.
    pub fn close_notify(&mut self) {
        match self {
            Stream::Plain(_) => {}
            Stream::Client(s) => {
                s.conn.send_close_notify();
                let _ = s.flush();
            }
            Stream::Server(s) => {
                s.conn.send_close_notify();
                let _ = s.flush();
            }
        }
    }
}

/// A peer that closes a TLS connection without its close alert ends the stream as a
/// plain socket would: both mean the connection is over.
fn eof_as_close(r: io::Result<usize>) -> io::Result<usize> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
        r => r,
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Client(s) => eof_as_close(s.read(buf)),
            Stream::Server(s) => eof_as_close(s.read(buf)),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Client(s) => s.write(buf),
            Stream::Server(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Client(s) => s.flush(),
            Stream::Server(s) => s.flush(),
        }
    }
}

/// A host name or IP address as TLS checks it against the server's certificate.
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    let host = host.trim_matches(['[', ']']);
    ServerName::try_from(host.to_string()).map_err(|_| TlsError::ServerName(host.to_string()))
}

/// `tls://HOST:PORT` → `HOST:PORT`, else `None`.
pub fn strip_tls_scheme(addr: &str) -> Option<&str> {
    addr.strip_prefix("tls://")
}

/// The host part of `HOST:PORT` (`[v6]:PORT` too), for the server name.
pub fn host_of(addr: &str) -> &str {
    match addr.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => {
            host.trim_matches(['[', ']'])
        }
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_schemes_are_split() {
        assert_eq!(strip_tls_scheme("tls://a:1"), Some("a:1"));
        assert_eq!(strip_tls_scheme("a:1"), None);
        assert_eq!(host_of("example.org:7000"), "example.org");
        assert_eq!(host_of("[::1]:7000"), "::1");
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("localhost").is_ok());
    }

    #[test]
    fn tls_is_told_from_plaintext_by_its_first_byte() {
        assert!(looks_like_tls(0x16));
        assert!(!looks_like_tls(b'J'));
        assert!(!looks_like_tls(b'G'));
    }

    #[test]
    fn missing_files_are_named() {
        let e = ServerFiles {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
            client_ca: None,
        }
        .config()
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/cert.pem"), "{e}");
        let half = ClientFiles {
            ca: Some("/nonexistent/ca.pem".into()),
            ..ClientFiles::default()
        };
        assert!(half.config().unwrap_err().to_string().contains("ca.pem"));
    }
}
