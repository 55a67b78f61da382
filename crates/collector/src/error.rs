use std::path::PathBuf;

/// Why the collector could not start or a store operation failed.
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
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is in use by another collector ({holder}); stop it or give another --data directory", path.display())]
    Locked { path: PathBuf, holder: String },
    #[error("{0}")]
    Format(#[from] jscope_format::FormatError),
    #[error("unknown jvm {0:?}")]
    UnknownJvm(String),
    #[error("clickhouse: {0}")]
    ClickHouse(String),
    #[error("bad query: {0}")]
    BadQuery(String),
    #[error("cannot read the stored data of jvm {jvm:?}: {message}")]
    Unreadable { jvm: String, message: String },
}

impl CollectorError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CollectorError {
        let path = path.into();
        move |source| CollectorError::Io { path, source }
    }
}
