//! The embedded store: a directory per JVM holding segment files in the recording
//! format and an index.
//!
//! ```text
//! DATA/jvms/<stream id>/header.jsc          the agent's magic and header chunk
//! DATA/jvms/<stream id>/seg-<first seq>.jsc segments (see segment.rs)
//! DATA/jvms/<stream id>/index.json          identity, labels, segments and time ranges
//! ```
//! A chunk is acknowledged only after `sync` (fdatasync); the index is rewritten
//! atomically when a segment starts or ends. At start-up every segment the index does
//! not list as closed is read up to its first damage, the torn tail cut off, and its
//! range recomputed, so a kill -9 loses nothing that was acknowledged.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jscope_format::Recording;

use jscope_analysis::{Mode, Selection, StackCounts};
use jscope_format::{split_chunk, Split};

use crate::identity::{new_dictionary, JvmIdentity};
use crate::segment::{self, merge_span};
use crate::store::{Counted, Retained, SampleFilter, SegmentInfo, Store, StoredJvm, StreamStatus};
use crate::summary::{self, Summary};
use crate::when::now_ns;
use crate::StoreError;

const HEADER_FILE: &str = "header.jsc";
const INDEX_FILE: &str = "index.json";
/// Held locked (flock) by the one collector writing the directory; holds its pid.
const LOCK_FILE: &str = "collector.lock";

pub struct FileStore {
    root: PathBuf,
    segment_bytes: u64,
    segment_age: Duration,
    jvms: Mutex<BTreeMap<String, Arc<Mutex<JvmFiles>>>>,
    /// Opened by a reader (`jscope report --data`) next to a running collector:
    /// nothing on disk is changed, not even a torn tail.
    read_only: bool,
    /// The directory's lock while this store writes to it; released on drop.
    _lock: Option<File>,
}

struct JvmFiles {
    dir: PathBuf,
    info: StoredJvm,
    open: Option<OpenSegment>,
    /// A connection is streaming into this JVM (retention leaves it alone).
    active: bool,
}

struct OpenSegment {
    file: File,
    path: PathBuf,
    started: Instant,
    dirty: bool,
}

/// Takes the exclusive lock of the data directory `root`: two collectors writing
/// one store would corrupt it. `None` when this process already holds it (a
/// collector restarted in the same process while its old store is still shut down).
fn lock_dir(root: &Path) -> Result<Option<File>, StoreError> {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    let path = root.join(LOCK_FILE);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(StoreError::io(&path))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::WouldBlock {
            return Err(StoreError::Io { path, source: err });
        }
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let pid = text.trim().parse::<u32>().ok();
        if pid == Some(std::process::id()) {
            return Ok(None);
        }
        return Err(StoreError::Locked {
            path: root.to_path_buf(),
            holder: pid.map_or_else(|| "its pid is unknown".into(), describe_process),
        });
    }
    let write = |file: &mut File| -> std::io::Result<()> {
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        file.sync_data()
    };
    write(&mut file).map_err(StoreError::io(&path))?;
    Ok(Some(file))
}

/// `pid 4242: jscope serve --data d`, from /proc when it is readable.
fn describe_process(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        return format!("pid {pid}");
    }
    format!("pid {pid}: {}", words.join(" "))
}

impl FileStore {
    /// Opens (creating if needed) a store under `root` and recovers what it holds.
    pub fn open(
        root: &Path,
        segment_bytes: u64,
        segment_age: Duration,
    ) -> Result<FileStore, StoreError> {
        let jvms_dir = root.join("jvms");
        std::fs::create_dir_all(&jvms_dir).map_err(StoreError::io(&jvms_dir))?;
        let lock = lock_dir(root)?;
        let mut store = FileStore::load(root, true)?;
        (store.segment_bytes, store.segment_age, store._lock) = (segment_bytes, segment_age, lock);
        Ok(store)
    }

    /// Opens a store for reading only, e.g. while a collector is writing to it:
    /// segments are read up to their last intact chunk and nothing is repaired.
    pub fn open_read_only(root: &Path) -> Result<FileStore, StoreError> {
        let jvms_dir = root.join("jvms");
        if !jvms_dir.is_dir() {
            return Err(StoreError::Io {
                path: jvms_dir,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not a jscope data directory",
                ),
            });
        }
        FileStore::load(root, false)
    }

    fn load(root: &Path, repair: bool) -> Result<FileStore, StoreError> {
        let jvms_dir = root.join("jvms");
        let mut jvms = BTreeMap::new();
        for entry in std::fs::read_dir(&jvms_dir).map_err(StoreError::io(&jvms_dir))? {
            let dir = entry.map_err(StoreError::io(&jvms_dir))?.path();
            if let Some(jf) = JvmFiles::recover(&dir, repair)? {
                jvms.insert(jf.info.identity.id.clone(), Arc::new(Mutex::new(jf)));
            }
        }
        Ok(FileStore {
            root: root.to_path_buf(),
            segment_bytes: u64::MAX,
            segment_age: Duration::MAX,
            jvms: Mutex::new(jvms),
            read_only: !repair,
            _lock: None,
        })
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::BadQuery("the store is open read-only".into()));
        }
        Ok(())
    }

    /// The segment files of `stream` that cover `[from_ns, to_ns]`, in order.
    fn covering(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<(PathBuf, Vec<String>), StoreError> {
        let jf = self.get(stream)?;
        let jf = jf.lock().expect("jvm lock");
        let names = jf
            .info
            .segments
            .iter()
            .filter(|s| overlaps(s, from_ns, to_ns))
            .map(|s| s.file.clone())
            .collect();
        Ok((jf.dir.clone(), names))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn get(&self, stream: &str) -> Result<Arc<Mutex<JvmFiles>>, StoreError> {
        self.jvms
            .lock()
            .expect("store lock")
            .get(stream)
            .cloned()
            .ok_or_else(|| StoreError::UnknownJvm(stream.to_string()))
    }

    fn get_or_create(
        &self,
        jvm: &JvmIdentity,
        header: &[u8],
    ) -> Result<Arc<Mutex<JvmFiles>>, StoreError> {
        let mut map = self.jvms.lock().expect("store lock");
        if let Some(jf) = map.get(&jvm.id) {
            return Ok(jf.clone());
        }
        let dir = self.root.join("jvms").join(&jvm.id);
        let jf = JvmFiles::create(&dir, jvm, header)?;
        let jf = Arc::new(Mutex::new(jf));
        map.insert(jvm.id.clone(), jf.clone());
        Ok(jf)
    }

    fn needs_new_segment(&self, jf: &JvmFiles, seq: u64) -> bool {
        let (Some(open), Some(last)) = (&jf.open, jf.info.segments.last()) else {
            return true;
        };
        seq != last.last_seq + 1
            || last.bytes >= self.segment_bytes
            || open.started.elapsed() >= self.segment_age
    }
}

impl JvmFiles {
    fn create(dir: &Path, jvm: &JvmIdentity, header: &[u8]) -> Result<JvmFiles, StoreError> {
        std::fs::create_dir_all(dir).map_err(StoreError::io(dir))?;
        write_atomic(&dir.join(HEADER_FILE), header)?;
        let jf = JvmFiles {
            dir: dir.to_path_buf(),
            info: StoredJvm {
                identity: jvm.clone(),
                segments: Vec::new(),
            },
            open: None,
            active: false,
        };
        jf.write_index()?;
        Ok(jf)
    }

    /// Loads a JVM directory, rescanning every segment not known to be closed; with
    /// `repair`, torn tails are cut and the index rewritten.
    fn recover(dir: &Path, repair: bool) -> Result<Option<JvmFiles>, StoreError> {
        let Ok(header) = std::fs::read(dir.join(HEADER_FILE)) else {
            return Ok(None);
        };
        let Some(id) = dir.file_name().and_then(|n| n.to_str()) else {
            return Ok(None);
        };
        let indexed = read_index(dir);
        let identity = match &indexed {
            Some(ix) => ix.identity.clone(),
            None => identity_from_header(id, &header)?,
        };
        let known: BTreeMap<String, SegmentInfo> = indexed
            .map(|ix| {
                ix.segments
                    .into_iter()
                    .map(|s| (s.file.clone(), s))
                    .collect()
            })
            .unwrap_or_default();
        let mut segments = Vec::new();
        for (first_seq, name) in segment_files(dir)? {
            let path = dir.join(&name);
            let trusted = known
                .get(&name)
                .filter(|s| s.closed && file_len(&path) == Some(s.bytes));
            match trusted {
                Some(s) if s.spans_all_records => segments.push(s.clone()),
                Some(s) => segments.push(respanned(&path, s, &identity)?),
                None => {
                    segments.extend(recover_segment(&path, &name, first_seq, &identity, repair)?)
                }
            }
        }
        if repair {
            resummarise(dir, &segments, &identity);
        }
        let jf = JvmFiles {
            dir: dir.to_path_buf(),
            info: StoredJvm { identity, segments },
            open: None,
            active: false,
        };
        if repair {
            jf.write_index()?;
        }
        Ok(Some(jf))
    }

    fn write_index(&self) -> Result<(), StoreError> {
        let json = serde_json::to_vec_pretty(&self.info).expect("index serialises");
        write_atomic(&self.dir.join(INDEX_FILE), &json)
    }

    fn header_bytes(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.dir.join(HEADER_FILE);
        std::fs::read(&path).map_err(StoreError::io(path))
    }

    fn start_segment(&mut self, seq: u64, dict: &Recording) -> Result<(), StoreError> {
        self.close_segment()?;
        let name = segment::file_name(seq);
        let path = self.dir.join(&name);
        let file = segment::create(&path, &self.header_bytes()?, &segment::encode_prelude(dict))?;
        let bytes = file.metadata().map_err(StoreError::io(&path))?.len();
        self.info.segments.push(SegmentInfo {
            file: name,
            first_seq: seq,
            last_seq: seq - 1,
            bytes,
            start_ns: None,
            end_ns: None,
            spans_all_records: true,
            created_ns: now_ns(),
            closed: false,
        });
        self.open = Some(OpenSegment {
            file,
            path,
            started: Instant::now(),
            dirty: false,
        });
        self.write_index()
    }

    fn append(
        &mut self,
        seq: u64,
        chunk: &[u8],
        span: Option<(u64, u64)>,
    ) -> Result<(), StoreError> {
        let open = self.open.as_mut().expect("a segment is open");
        let meta = self.info.segments.last_mut().expect("open segment listed");
        if let Err(e) = open.file.write_all(chunk) {
            // Cut any partial write so the segment stays a clean sequence of chunks.
            let _ = open.file.set_len(meta.bytes);
            return Err(StoreError::io(&open.path)(e));
        }
        meta.last_seq = seq;
        meta.bytes += chunk.len() as u64;
        let merged = merge_span(meta.start_ns.zip(meta.end_ns), span);
        (meta.start_ns, meta.end_ns) = (merged.map(|s| s.0), merged.map(|s| s.1));
        open.dirty = true;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        if let Some(open) = self.open.as_mut().filter(|o| o.dirty) {
            open.file.sync_data().map_err(StoreError::io(&open.path))?;
            open.dirty = false;
        }
        Ok(())
    }

    fn close_segment(&mut self) -> Result<(), StoreError> {
        if self.open.is_none() {
            return Ok(());
        }
        self.sync()?;
        self.open = None;
        if let Some(last) = self.info.segments.last_mut() {
            last.closed = true;
            // Queries work without it, only slower: a failure is not the ingest's.
            let _ = summary::write(&self.dir.join(&last.file), &self.info.identity);
        }
        self.write_index()
    }

    /// Deletes closed segments that ended before `cutoff`; true when nothing is left.
    fn retain(&mut self, cutoff: u64, out: &mut Retained) -> Result<bool, StoreError> {
        let (old, keep): (Vec<_>, Vec<_>) = self
            .info
            .segments
            .drain(..)
            .partition(|s| s.closed && s.end_ns.unwrap_or(s.created_ns) < cutoff);
        self.info.segments = keep;
        for s in &old {
            let path = self.dir.join(&s.file);
            std::fs::remove_file(&path).map_err(StoreError::io(&path))?;
            let _ = std::fs::remove_file(summary::path_of(&path));
            out.segments_deleted += 1;
            out.bytes_freed += s.bytes;
        }
        if !old.is_empty() {
            self.write_index()?;
        }
        Ok(self.info.segments.is_empty() && !self.active)
    }
}

fn recover_segment(
    path: &Path,
    name: &str,
    first_seq: u64,
    jvm: &JvmIdentity,
    repair: bool,
) -> Result<Option<SegmentInfo>, StoreError> {
    let scanned = match segment::scan(path, jvm)? {
        Some(s) if s.chunks > 0 => s,
        // Created but never acknowledged into: nothing to keep.
        _ => {
            if repair {
                std::fs::remove_file(path).map_err(StoreError::io(path))?;
            }
            return Ok(None);
        }
    };
    if repair && scanned.valid_len < scanned.file_len {
        segment::truncate(path, scanned.valid_len)?;
    }
    Ok(Some(SegmentInfo {
        file: name.to_string(),
        first_seq,
        last_seq: first_seq + scanned.chunks - 1,
        bytes: scanned.valid_len,
        start_ns: scanned.span_ns.map(|s| s.0),
        end_ns: scanned.span_ns.map(|s| s.1),
        spans_all_records: true,
        created_ns: now_ns(),
        closed: true,
    }))
}

/// Writes the summary of every segment whose summary is missing, stale or of an older
/// version (`JSCSUM1` cannot answer thread or state filters): once, when a collector
/// opens the store after an upgrade, at the cost of decoding those segments.
fn resummarise(dir: &Path, segments: &[SegmentInfo], jvm: &JvmIdentity) {
    for s in segments.iter().filter(|s| s.closed) {
        let path = dir.join(&s.file);
        if !summary::is_current(&path) {
            // Queries work without it, only slower.
            let _ = summary::write(&path, jvm);
        }
    }
}

/// A closed segment of an older index, whose span covers only its samples and
/// snapshots, with the span of all its timed records (nothing else changes).
fn respanned(path: &Path, s: &SegmentInfo, jvm: &JvmIdentity) -> Result<SegmentInfo, StoreError> {
    let span = segment::scan(path, jvm)?.and_then(|scanned| scanned.span_ns);
    Ok(SegmentInfo {
        start_ns: span.map(|s| s.0),
        end_ns: span.map(|s| s.1),
        spans_all_records: true,
        ..s.clone()
    })
}

fn identity_from_header(id: &str, header: &[u8]) -> Result<JvmIdentity, StoreError> {
    let rec = Recording::from_bytes(header)?;
    Ok(JvmIdentity::from_header(id, &rec.header, "", &[]))
}

fn read_index(dir: &Path) -> Option<StoredJvm> {
    let bytes = std::fs::read(dir.join(INDEX_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Segment files of a JVM directory, by first sequence number.
fn segment_files(dir: &Path) -> Result<Vec<(u64, String)>, StoreError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(StoreError::io(dir))? {
        let name = entry.map_err(StoreError::io(dir))?.file_name();
        let name = name.to_string_lossy().into_owned();
        if let Some(seq) = segment::first_seq_of(&name) {
            out.push((seq, name));
        }
    }
    out.sort();
    Ok(out)
}

/// Writes a file so that a crash leaves either the old or the new content.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(StoreError::io(&tmp))?;
    f.write_all(bytes).map_err(StoreError::io(&tmp))?;
    f.sync_all().map_err(StoreError::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(StoreError::io(path))?;
    segment::sync_dir(path.parent().expect("file in a directory"))
}

impl Store for FileStore {
    fn resume(&self, stream: &str) -> Result<Option<StreamStatus>, StoreError> {
        let Ok(jf) = self.get(stream) else {
            return Ok(None);
        };
        let jf = jf.lock().expect("jvm lock");
        let acked = jf.info.last_seq();
        let dict = match jf.info.segments.last() {
            Some(last) => {
                segment::scan(&jf.dir.join(&last.file), &jf.info.identity)?.map(|s| s.dict)
            }
            None => None,
        };
        let dict = match dict {
            Some(d) => d,
            None => new_dictionary(&Recording::from_bytes(&jf.header_bytes()?)?.header),
        };
        Ok(Some(StreamStatus { acked, dict }))
    }

    fn acked(&self, stream: &str) -> Result<Option<u64>, StoreError> {
        Ok(self
            .get(stream)
            .ok()
            .map(|jf| jf.lock().expect("jvm lock").info.last_seq()))
    }

    fn open(
        &self,
        jvm: &JvmIdentity,
        header: &[u8],
        _next_seq: u64,
        _dict: &Recording,
    ) -> Result<(), StoreError> {
        self.writable()?;
        // Segments start lazily at the first chunk, so a connection that sends
        // nothing leaves no empty file behind.
        let jf = self.get_or_create(jvm, header)?;
        let mut jf = jf.lock().expect("jvm lock");
        jf.close_segment()?;
        jf.active = true;
        if jf.info.identity != *jvm {
            jf.info.identity = jvm.clone();
            jf.write_index()?;
        }
        Ok(())
    }

    fn append(
        &self,
        stream: &str,
        seq: u64,
        chunk: &[u8],
        span_ns: Option<(u64, u64)>,
        dict: &Recording,
    ) -> Result<(), StoreError> {
        self.writable()?;
        let jf = self.get(stream)?;
        let mut jf = jf.lock().expect("jvm lock");
        if seq <= jf.info.last_seq() {
            return Ok(());
        }
        if self.needs_new_segment(&jf, seq) {
            jf.start_segment(seq, dict)?;
        }
        jf.append(seq, chunk, span_ns)
    }

    fn sync(&self, stream: &str) -> Result<(), StoreError> {
        self.get(stream)?.lock().expect("jvm lock").sync()
    }

    fn close(&self, stream: &str) -> Result<(), StoreError> {
        let jf = self.get(stream)?;
        let mut jf = jf.lock().expect("jvm lock");
        jf.active = false;
        jf.close_segment()
    }

    fn jvms(&self) -> Vec<StoredJvm> {
        let all: Vec<_> = self
            .jvms
            .lock()
            .expect("store lock")
            .values()
            .cloned()
            .collect();
        all.iter()
            .map(|jf| jf.lock().expect("jvm lock").info.clone())
            .collect()
    }

    fn read(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError> {
        let (dir, names) = self.covering(stream, from_ns, to_ns)?;
        if names.is_empty() {
            let mut rec = Recording::from_bytes(
                &std::fs::read(dir.join(HEADER_FILE)).map_err(StoreError::io(&dir))?,
            )?;
            rec.damage = None;
            return Ok(rec);
        }
        let mut rec = None;
        for name in names {
            rec = Some(segment::read_into(rec, &dir.join(name))?);
        }
        Ok(rec.expect("at least one segment"))
    }

    fn raw(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError> {
        let (dir, names) = self.covering(stream, from_ns, to_ns)?;
        let mut out = Vec::new();
        for name in &names {
            segment::raw_into(&mut out, &dir.join(name))?;
        }
        if out.is_empty() {
            let path = dir.join(HEADER_FILE);
            out = std::fs::read(&path).map_err(StoreError::io(&path))?;
        }
        Ok(out)
    }

    fn stack_counts(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
        mode: Option<Mode>,
        filter: &SampleFilter,
    ) -> Result<Option<Counted>, StoreError> {
        let (dir, names) = self.covering(stream, from_ns, to_ns)?;
        let header_path = dir.join(HEADER_FILE);
        let header = std::fs::read(&header_path).map_err(StoreError::io(&header_path))?;
        let mut rec = Recording::from_bytes(&header)?;
        rec.damage = None;
        // Dictionaries in segment order, as `read` applies them, so that thread ids
        // resolve to the names decoding would see. Segments without a usable summary
        // (the open one; a `JSCSUM1` one under a filter) are read whole.
        let mut summarised = Vec::new();
        for name in names {
            let path = dir.join(name);
            match summary::load(&path, !filter.is_empty())
                .filter(|s| s.detailed || filter.is_empty())
            {
                Some(s) => {
                    if let Ok(Split::Chunk(raw)) = split_chunk(&s.dict_chunk, 0) {
                        rec.apply_chunk(&raw)?;
                    }
                    summarised.push((path, s));
                }
                None => rec = segment::read_into(Some(rec), &path)?,
            }
        }
        if summarised.is_empty() {
            return Ok(None);
        }
        let Some(mode) = mode.or_else(|| first_mode(&rec, &summarised)) else {
            return Ok(Some((rec, None, StackCounts::default())));
        };
        let start = rec.header.start_wall_ns;
        let selection = Selection {
            mode: Some(mode),
            thread: filter.thread.clone(),
            states: filter.states.clone(),
            from_s: crate::when::seconds_since(start, from_ns),
            to_s: crate::when::seconds_since(start, to_ns),
            group: Default::default(),
            requests: Default::default(),
        };
        let mut counts = selection.stack_counts(&rec);
        let window = summary::Window {
            mode,
            from_ns,
            to_ns,
        };
        let mut accept = summary::Accept::new(filter, &rec);
        for (path, s) in &summarised {
            summary::count_into(
                s,
                path,
                &header,
                &window,
                &selection,
                &mut accept,
                &mut counts,
            )?;
        }
        Ok(Some((rec, Some(mode), counts)))
    }

    fn retain(&self, cutoff_ns: u64) -> Result<Retained, StoreError> {
        self.writable()?;
        let mut out = Retained::default();
        let mut map = self.jvms.lock().expect("store lock");
        let mut emptied = Vec::new();
        for (id, jf) in map.iter() {
            let mut jf = jf.lock().expect("jvm lock");
            if jf.retain(cutoff_ns, &mut out)? {
                std::fs::remove_dir_all(&jf.dir).map_err(StoreError::io(&jf.dir))?;
                emptied.push(id.clone());
            }
        }
        for id in emptied {
            map.remove(&id);
            out.jvms_deleted += 1;
        }
        Ok(out)
    }
}

/// The first of cpu, wall, snapshot with samples in the summaries or in `rec`'s events.
fn first_mode(rec: &Recording, summarised: &[(PathBuf, Summary)]) -> Option<Mode> {
    Mode::ALL.into_iter().enumerate().find_map(|(i, m)| {
        let in_summaries: u64 = summarised.iter().map(|(_, s)| s.mode_totals[i]).sum();
        let in_rec = match m {
            Mode::Snapshot => rec.snapshots.iter().map(|s| s.threads.len()).sum::<usize>(),
            _ => Selection {
                mode: Some(m),
                ..Selection::default()
            }
            .samples(rec)
            .count(),
        };
        (in_summaries > 0 || in_rec > 0).then_some(m)
    })
}

fn overlaps(s: &SegmentInfo, from: Option<u64>, to: Option<u64>) -> bool {
    let (Some(start), Some(end)) = (s.start_ns, s.end_ns) else {
        return false;
    };
    from.is_none_or(|f| end >= f) && to.is_none_or(|t| start <= t)
}
