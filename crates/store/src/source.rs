//! One read interface over recorded JVMs, wherever they are: a store on this
//! machine (a collector's data directory, ClickHouse, one recording file) or a
//! running collector over HTTP. The CLI reads through it; the collector's API
//! answers the same questions from its store, so both give the same answers.

use jscope_analysis::{HotMethods, Mode};
use jscope_flame::FlameGraph;
use jscope_format::Recording;

use crate::jvms::{stored_jvms, JvmSummary};
use crate::query::{self, with_warnings, Query, WithWarnings};
use crate::remote::RemoteCollector;
use crate::store::Store;
use crate::StoreError;

/// Where recorded JVMs are read from.
pub trait JvmSource {
    /// Every JVM, connected ones first.
    fn jvm_list(&self) -> Result<Vec<JvmSummary>, StoreError>;

    /// A JVM's data covering `[from_ns, to_ns)` (epoch ns) as the bytes of one
    /// recording file; it may hold more than the window.
    fn recording_bytes(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError>;

    /// The same data as a recording.
    fn recording(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError>;

    /// The hot methods of the query's samples, merged across its JVMs where the
    /// data lives, with the warnings a reader shows with them (unknown, broken
    /// or empty stacks above 1% of the samples).
    fn hot(&self, q: &Query, limit: usize) -> Result<WithWarnings<HotMethods>, StoreError>;

    /// The query's samples as merged stacks and the mode they are of, with their
    /// warnings as [`JvmSource::hot`]'s.
    fn flame(&self, q: &Query) -> Result<WithWarnings<(FlameGraph, Option<Mode>)>, StoreError>;
}

impl<S: Store + ?Sized> JvmSource for S {
    fn jvm_list(&self) -> Result<Vec<JvmSummary>, StoreError> {
        Ok(stored_jvms(self))
    }

    fn recording_bytes(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError> {
        self.raw(id, from_ns, to_ns)
    }

    fn recording(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError> {
        self.read(id, from_ns, to_ns)
    }

    fn hot(&self, q: &Query, limit: usize) -> Result<WithWarnings<HotMethods>, StoreError> {
        let (hot, incomplete) = query::hot(self, q, limit)?;
        Ok(with_warnings(hot, &incomplete))
    }

    fn flame(&self, q: &Query) -> Result<WithWarnings<(FlameGraph, Option<Mode>)>, StoreError> {
        let (graph, mode, incomplete) = query::flame(self, q)?;
        Ok(with_warnings((graph, mode), &incomplete))
    }
}

impl JvmSource for RemoteCollector {
    fn jvm_list(&self) -> Result<Vec<JvmSummary>, StoreError> {
        RemoteCollector::jvm_list(self)
    }

    fn recording_bytes(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError> {
        RemoteCollector::recording_bytes(self, id, from_ns, to_ns)
    }

    fn recording(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError> {
        RemoteCollector::recording(self, id, from_ns, to_ns)
    }

    fn hot(&self, q: &Query, limit: usize) -> Result<WithWarnings<HotMethods>, StoreError> {
        RemoteCollector::hot(self, q, limit)
    }

    fn flame(&self, q: &Query) -> Result<WithWarnings<(FlameGraph, Option<Mode>)>, StoreError> {
        RemoteCollector::flame(self, q)
    }
}
