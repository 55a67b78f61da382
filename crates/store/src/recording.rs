//! A read-only store over one recording file, so `jscope view FILE` serves the same
//! UI and API as a collector.

use std::path::{Path, PathBuf};

use jscope_format::Recording;

use crate::identity::{batch_ticks, event_ticks, span_of_times, JvmIdentity};
use crate::store::{Retained, SegmentInfo, Store, StoredJvm, StreamStatus};
use crate::StoreError;

pub struct RecordingStore {
    path: PathBuf,
    jvm: StoredJvm,
}

fn read_only() -> StoreError {
    StoreError::BadQuery("a recording file is read-only".into())
}

impl RecordingStore {
    pub fn open(path: &Path) -> Result<RecordingStore, StoreError> {
        let rec = Recording::read_file(path)?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "recording".into());
        let identity = JvmIdentity::from_header(&id, &rec.header, &rec.header.host, &[]);
        let span = span_of(&identity, &rec);
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let segment = SegmentInfo {
            file: path.display().to_string(),
            first_seq: 1,
            last_seq: rec.chunks.saturating_sub(1),
            bytes,
            start_ns: span.map(|s| s.0),
            end_ns: span.map(|s| s.1),
            spans_all_records: true,
            created_ns: identity.start_wall_ns,
            closed: true,
        };
        Ok(RecordingStore {
            path: path.to_path_buf(),
            jvm: StoredJvm {
                identity,
                segments: vec![segment],
            },
        })
    }
}

/// The span of every timed record of the recording, as the file store indexes it.
fn span_of(jvm: &JvmIdentity, rec: &Recording) -> Option<(u64, u64)> {
    let at = |t: u64| (t, t, 0);
    let times = (rec.samples.iter().map(|s| at(s.ticks)))
        .chain(rec.snapshots.iter().map(|s| at(s.ticks)))
        .chain(rec.traces.iter().filter_map(batch_ticks))
        .chain(rec.call_aggregates.iter().map(|a| at(a.ticks)))
        .chain(rec.events.iter().map(event_ticks))
        .chain(
            rec.remote_calls
                .iter()
                .map(|c| (c.ticks, c.ticks, c.duration_ns)),
        );
    span_of_times(jvm, times)
}

impl Store for RecordingStore {
    fn resume(&self, _stream: &str) -> Result<Option<StreamStatus>, StoreError> {
        Err(read_only())
    }

    fn open(&self, _: &JvmIdentity, _: &[u8], _: u64, _: &Recording) -> Result<(), StoreError> {
        Err(read_only())
    }

    fn append(
        &self,
        _: &str,
        _: u64,
        _: &[u8],
        _: Option<(u64, u64)>,
        _: &Recording,
    ) -> Result<(), StoreError> {
        Err(read_only())
    }

    fn sync(&self, _: &str) -> Result<(), StoreError> {
        Err(read_only())
    }

    fn close(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }

    fn jvms(&self) -> Vec<StoredJvm> {
        vec![self.jvm.clone()]
    }

    fn read(&self, stream: &str, _: Option<u64>, _: Option<u64>) -> Result<Recording, StoreError> {
        if stream != self.jvm.identity.id {
            return Err(StoreError::UnknownJvm(stream.to_string()));
        }
        Ok(Recording::read_file(&self.path)?)
    }

    fn raw(&self, stream: &str, _: Option<u64>, _: Option<u64>) -> Result<Vec<u8>, StoreError> {
        if stream != self.jvm.identity.id {
            return Err(StoreError::UnknownJvm(stream.to_string()));
        }
        std::fs::read(&self.path).map_err(StoreError::io(&self.path))
    }

    fn retain(&self, _: u64) -> Result<Retained, StoreError> {
        Ok(Retained::default())
    }
}
