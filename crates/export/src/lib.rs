//! Exports of jscope recordings to other tools' formats.
//!
//! A recording's samples of one [`Kind`] (cpu, wall, snapshot, alloc, lock, or the
//! self time of exact traces) are first gathered into a [`Profile`]: functions
//! named as `jscope report` names them, stacks interned once, one [`Sample`] per
//! observation with its thread, state, time and weight. The writers turn it into:
//!
//! - [`pprof`]: gzipped `profile.proto`, for `go tool pprof` and Pyroscope;
//! - [`otlp`]: an OTLP `ExportProfilesServiceRequest` (protobuf or JSON), one
//!   profile per kind;
//! - [`speedscope`]: sampled profiles per thread, or evented ones for traces;
//! - [`chrome`]: trace-event JSON, samples as nested slices over time per thread;
//! - collapsed stacks ([`Profile::collapsed`]);
//! - [`jfr`]: a JDK Flight Recorder file of the recording itself (every kind, or
//!   the one asked), for the JDK's tools, JMC, IDEs and async-profiler.
//!
//! Exact traces also export as themselves: Chrome events per call and collapsed
//! self time (the call tree's own writers), speedscope evented profiles.
//! docs/EXPORT.md maps each kind to each format's sample types.

pub mod chrome;
pub mod jfr;
mod model;
pub mod otlp;
pub mod pprof;
pub mod speedscope;

use std::io::{self, Write};

use jscope_analysis::trace::{CallTree, TraceOptions};
use jscope_analysis::Selection;
use jscope_format::Recording;

pub use model::{Frame, Function, Kind, Profile, Sample};

/// Why an export could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("unknown export mode {0:?} (expected cpu, wall, snapshot, alloc, lock or trace)")]
    UnknownKind(String),
    #[error("{0}")]
    NoData(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The formats an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pprof,
    Otlp,
    OtlpJson,
    Speedscope,
    Chrome,
    Collapsed,
    /// JDK Flight Recorder: the recording itself, not one kind's profile.
    Jfr,
}

/// What to export from a recording.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `None`: [`Kind::default_for`]; for OTLP, every kind the recording has.
    pub kind: Option<Kind>,
    /// Thread, state and time filters (its mode is ignored: `kind` decides).
    pub selection: Selection,
    /// Methods hidden from trace exports.
    pub trace: TraceOptions,
    /// What to call the profile in viewers (the file name).
    pub name: String,
    /// Name Java frames with their tier, as async-profiler's `--annotate` (`_[0]`
    /// interpreted, `_[j]` JIT-compiled, `_[i]` inlined).
    pub annotate: bool,
}

/// Whether the recording holds anything of `kind` at all (before filters).
pub fn has_kind(rec: &Recording, kind: Kind) -> bool {
    model::has_kind(rec, kind)
}

/// The kinds an export covers: the asked one, or the recording's default; for
/// OTLP without a kind, every kind the recording has (traces only when there is
/// nothing else).
pub fn kinds(rec: &Recording, req: &Request, format: Format) -> Vec<Kind> {
    if let Some(k) = req.kind {
        return vec![k];
    }
    if matches!(format, Format::Otlp | Format::OtlpJson) {
        let sampled: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|&k| k != Kind::Trace && has_kind(rec, k))
            .collect();
        if !sampled.is_empty() {
            return sampled;
        }
    }
    Kind::default_for(rec).into_iter().collect()
}

/// An export ready to write: its kinds chosen and its data gathered, so that
/// nothing to export is an error before any output is opened.
pub struct Export {
    format: Format,
    name: String,
    resource: otlp::ResourceInfo,
    data: Data,
}

enum Data {
    /// One profile per kind, the first the one single-kind formats write.
    Profiles(Vec<Profile>),
    /// Exact traces: their call tree and its self time as a profile.
    Trace(Box<CallTree>, Profile),
    /// A JFR file's bytes.
    Jfr(Vec<u8>),
}

impl Export {
    /// Gathers what `req` asks of `rec` for `format`.
    pub fn new(rec: &Recording, req: &Request, format: Format) -> Result<Export, ExportError> {
        if format == Format::Jfr {
            return Export::jfr(rec, req);
        }
        let kinds = kinds(rec, req, format);
        let data = match kinds.first() {
            None => {
                return Err(ExportError::NoData(format!(
                    "{} holds no samples, allocations, lock waits or traces to export",
                    req.name
                )))
            }
            Some(Kind::Trace) => {
                let tree = trace_tree(rec, req)?;
                let profile = Profile::of_trace(rec, &tree);
                Data::Trace(Box::new(tree), profile)
            }
            Some(_) => Data::Profiles(
                kinds
                    .iter()
                    .map(|&k| Profile::of(rec, k, &req.selection, req.annotate))
                    .collect(),
            ),
        };
        Ok(Export {
            format,
            name: req.name.clone(),
            resource: resource_info(rec),
            data,
        })
    }

    /// A JFR file of what `req` selects of `rec`: everything it holds, or one kind.
    fn jfr(rec: &Recording, req: &Request) -> Result<Export, ExportError> {
        let kept = jfr::selected(rec, req);
        if jfr::holds_nothing(&kept) {
            let what = req
                .kind
                .map_or("samples, events or traces".into(), |k| format!("{k} data"));
            let selected = if jfr::narrowed(req) { " selected" } else { "" };
            return Err(ExportError::NoData(format!(
                "{} holds no{selected} {what} to export",
                req.name
            )));
        }
        Ok(Export {
            format: Format::Jfr,
            name: req.name.clone(),
            resource: resource_info(rec),
            data: Data::Jfr(jscope_jfr::encode_jfr(&kept)),
        })
    }

    /// The export of a call tree already built (e.g. streamed from a file with
    /// [`CallTree::from_bytes`], which keeps no trace events in memory) out of the
    /// recording it was built from. A JFR export holds the calls themselves, so it
    /// is made of the recording, as [`Export::new`] makes it.
    pub fn of_trace(
        rec: &Recording,
        tree: CallTree,
        req: &Request,
        format: Format,
    ) -> Result<Export, ExportError> {
        if format == Format::Jfr {
            return Export::jfr(rec, req);
        }
        if tree.events == 0 {
            return Err(no_traces(rec, &req.name));
        }
        let profile = Profile::of_trace(rec, &tree);
        Ok(Export {
            format,
            name: req.name.clone(),
            resource: resource_info(rec),
            data: Data::Trace(Box::new(tree), profile),
        })
    }

    /// Writes the export. Exact traces keep their own Chrome (an event per call)
    /// and collapsed writers and become evented speedscope profiles; pprof and
    /// OTLP get their self time as samples.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let profiles = match &self.data {
            Data::Profiles(p) => p.as_slice(),
            Data::Trace(_, p) => std::slice::from_ref(p),
            Data::Jfr(bytes) => return out.write_all(bytes),
        };
        let p = &profiles[0];
        match (self.format, &self.data) {
            (Format::Chrome, Data::Trace(tree, _)) => tree.write_chrome(out),
            (Format::Collapsed, Data::Trace(tree, _)) => tree.write_collapsed(out),
            (Format::Speedscope, Data::Trace(tree, _)) => {
                speedscope::write(&speedscope::evented(tree, &self.name), out)
            }
            (Format::Pprof, _) => pprof::write(p, out),
            (Format::Otlp, _) => otlp::write(profiles, &self.resource, out),
            (Format::OtlpJson, _) => otlp::write_json(profiles, &self.resource, out),
            (Format::Speedscope, _) => speedscope::write(&speedscope::sampled(p, &self.name), out),
            (Format::Chrome, _) => chrome::write(p, out),
            (Format::Collapsed, _) => write_collapsed(&p.collapsed(), out),
            // `new` and `of_trace` give every JFR export its bytes (returned above).
            (Format::Jfr, _) => unreachable!("a JFR export holds its bytes"),
        }
    }
}

/// Writes the export of `rec` in `format` ([`Export::new`], then write).
pub fn export(
    rec: &Recording,
    req: &Request,
    format: Format,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    Export::new(rec, req, format)?.write(out)?;
    Ok(())
}

/// The call tree of a recording's traces, or why it has none.
fn trace_tree(rec: &Recording, req: &Request) -> Result<CallTree, ExportError> {
    let tree = CallTree::of(rec, &req.trace);
    if tree.events > 0 {
        return Ok(tree);
    }
    Err(no_traces(rec, &req.name))
}

fn no_traces(rec: &Recording, name: &str) -> ExportError {
    ExportError::NoData(if rec.call_aggregates.is_empty() {
        format!("{name} has no trace events (record with tracing on)")
    } else {
        format!(
            "{name} is an aggregate-mode recording: it has caller -> callee totals but no calls to export (use jscope stats)"
        )
    })
}

fn write_collapsed(stacks: &[(String, u64)], out: &mut dyn Write) -> io::Result<()> {
    for (path, n) in stacks {
        writeln!(out, "{path} {n}")?;
    }
    Ok(())
}

/// The OTLP resource of a recording's JVM.
pub fn resource_info(rec: &Recording) -> otlp::ResourceInfo {
    let h = &rec.header;
    otlp::ResourceInfo {
        service_name: h
            .extra("service.name")
            .map(str::to_string)
            .unwrap_or_else(|| otlp::service_name(&h.command_line)),
        host: h.host.clone(),
        pid: h.pid,
        command_line: h.command_line.clone(),
        runtime_name: h.vm_name.clone(),
        runtime_version: h.java_version.clone(),
    }
}
