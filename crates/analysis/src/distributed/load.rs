//! Reading the JVMs of a session into [`Member`]s: from recording files or from a
//! collector's store (by stream id), several at a time. The CLI (`jscope merge`,
//! `jscope tree --distributed`) and the collector (`GET /api/distributed`) both
//! load through here, so they read a JVM the same way.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::Member;
use crate::trace::{TraceError, TraceOptions};

/// Where a member's recording comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberSource {
    /// A recording file.
    File(PathBuf),
    /// A JVM of a collector's data directory (`jscope serve --data DIR`): the
    /// directory and the JVM's stream id in it.
    Data { dir: PathBuf, jvm: String },
}

impl MemberSource {
    /// How the member is named in messages and in [`Member::name`]: the path, or
    /// `DIR#ID`.
    pub fn name(&self) -> String {
        match self {
            MemberSource::File(p) => p.display().to_string(),
            MemberSource::Data { dir, jvm } => format!("{}#{jvm}", dir.display()),
        }
    }
}

/// JVMs' stored recordings by stream id: what a collector's store gives
/// (jscope-collector implements it for its stores).
pub trait RecordingStore: Sync {
    /// What the store answers when it cannot give a JVM's recording.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Everything stored of a JVM, as the bytes of one recording.
    fn recording(&self, jvm: &str) -> Result<Vec<u8>, Self::Error>;
}

impl<S: RecordingStore + ?Sized> RecordingStore for Box<S> {
    type Error = S::Error;

    fn recording(&self, jvm: &str) -> Result<Vec<u8>, S::Error> {
        (**self).recording(jvm)
    }
}

impl<S: RecordingStore + ?Sized> RecordingStore for &S {
    type Error = S::Error;

    fn recording(&self, jvm: &str) -> Result<Vec<u8>, S::Error> {
        (**self).recording(jvm)
    }
}

/// Why a stored JVM could not be read; `E` is the store's error.
#[derive(Debug, Error)]
pub enum StoredError<E: std::error::Error + 'static> {
    /// The store could not give the JVM's recording (e.g. it does not hold it).
    #[error("cannot read JVM {jvm} from {store}")]
    Store {
        /// How the store was named (its directory).
        store: String,
        jvm: String,
        #[source]
        source: E,
    },
    /// The stored bytes are not a readable recording.
    #[error("cannot read JVM {jvm} from {store}")]
    Unreadable {
        store: String,
        jvm: String,
        #[source]
        source: TraceError,
    },
}

/// Why a member could not be read; `E` is the store's error.
#[derive(Debug, Error)]
pub enum LoadError<E: std::error::Error + 'static> {
    /// A recording file that cannot be read or is not a recording.
    #[error("cannot read {}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: TraceError,
    },
    /// A collector's data directory that cannot be opened.
    #[error("cannot open collector data {}", dir.display())]
    OpenStore {
        dir: PathBuf,
        #[source]
        source: E,
    },
    #[error(transparent)]
    Stored(#[from] StoredError<E>),
}

/// A stored JVM's whole recording read into a member named `name`. `store_name`
/// names the store in errors. Everything stored is read: a call that matters may
/// have begun long before any window asked for.
pub fn load_stored<S: RecordingStore + ?Sized>(
    store: &S,
    store_name: &str,
    jvm: &str,
    name: &str,
    options: &TraceOptions,
) -> Result<Member, StoredError<S::Error>> {
    let bytes = store.recording(jvm).map_err(|source| StoredError::Store {
        store: store_name.to_string(),
        jvm: jvm.to_string(),
        source,
    })?;
    Member::from_bytes(name, &bytes, options).map_err(|source| StoredError::Unreadable {
        store: store_name.to_string(),
        jvm: jvm.to_string(),
        source,
    })
}

/// One member from its source; `open_data` opens a collector's data directory
/// (read-only: a collector may be writing to it) for [`MemberSource::Data`].
pub fn load_source<S, F>(
    source: &MemberSource,
    options: &TraceOptions,
    open_data: F,
) -> Result<Member, LoadError<S::Error>>
where
    S: RecordingStore,
    F: FnOnce(&Path) -> Result<S, S::Error>,
{
    match source {
        MemberSource::File(path) => {
            Member::read_file(path, options).map_err(|source| LoadError::File {
                path: path.clone(),
                source,
            })
        }
        MemberSource::Data { dir, jvm } => {
            let store = open_data(dir).map_err(|source| LoadError::OpenStore {
                dir: dir.clone(),
                source,
            })?;
            let store_name = dir.display().to_string();
            Ok(load_stored(
                &store,
                &store_name,
                jvm,
                &source.name(),
                options,
            )?)
        }
    }
}

/// Runs `load` on every item, as many at a time as there are cores (a member's
/// tree is built on one core), and gives the members in the items' order; the
/// error of the first item (in that order) that failed otherwise.
pub fn load_members<T, E, F>(items: &[T], load: F) -> Result<Vec<Member>, E>
where
    T: Sync,
    E: Send,
    F: Fn(&T) -> Result<Member, E> + Sync,
{
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(workers) {
        let loaded: Vec<Result<Member, E>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|item| {
                    let load = &load;
                    s.spawn(move || load(item))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("loading a member does not panic"))
                .collect()
        });
        for m in loaded {
            out.push(m?);
        }
    }
    Ok(out)
}
