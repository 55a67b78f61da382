use jscope_store::StoreError;

/// Why the collector could not start, a request was refused, or its store failed.
#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr} is not a loopback address; listening there needs --token")]
    NeedsToken { addr: String },
    #[error("bad address {0:?}")]
    BadAddress(String),
    #[error("bad duration {0:?} (use e.g. 90s, 30m, 12h, 7d)")]
    BadDuration(String),
    /// A request's parameters say something the API cannot answer.
    #[error("bad query: {0}")]
    BadQuery(String),
    #[error("TLS: {0}")]
    Tls(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<jscope_store::SelectError> for CollectorError {
    fn from(e: jscope_store::SelectError) -> CollectorError {
        CollectorError::Store(e.into())
    }
}
