use std::path::PathBuf;

/// Why a store, a collector asked over HTTP, or a selection of JVMs could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
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
    #[error(transparent)]
    Select(#[from] SelectError),
    /// A collector asked over HTTP did not answer, or answered an error.
    #[error("{0}")]
    Remote(String),
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { path, source }
    }
}

/// Why a selection picked no JVM.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("no JVM matches {0}")]
    NoMatch(String),
    #[error("no JVM with id or pid {0}")]
    NoSuchJvm(String),
    #[error("JVM {jvm} is not of {selection}")]
    NotOf { jvm: String, selection: String },
    #[error("{0}")]
    BadLabel(String),
}
