//! The bodies pushes carry, parsed into [`Pushed`]: Pyroscope's folded lines, pprof
//! and JFR (raw, gzipped, or in a multipart form as pyroscope-java and the Go SDK
//! send them), and OTLP `ExportProfilesServiceRequest`s.

use std::collections::HashMap;
use std::io::Read;

use flate2::read::GzDecoder;
use jscope_export::pprof;
use jscope_format::{FrameKind, Recording, SampleMode, StackId, ThreadId};
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
use prost::Message;

use super::pushed::{PushError, Pushed, PushedFrame, PushedSample, Source};
use crate::http::Request;

/// A decompressed body may be this large.
const MAX_INFLATED: u64 = 512 << 20;
/// Pyroscope's default rate when a push does not say.
const DEFAULT_RATE_HZ: u64 = 100;

fn bad(message: impl Into<String>) -> PushError {
    PushError::bad(message)
}

/// Gunzips `bytes` when they start as gzip does.
fn inflate(bytes: &[u8], what: &str) -> Result<Vec<u8>, PushError> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(format!("{what}: bad gzip: {e}")))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(bad(format!("{what}: inflates past {MAX_INFLATED} bytes")));
    }
    Ok(out)
}

/// The parts of a `multipart/form-data` body by name, or `None` when the body is
/// not one.
fn multipart(req: &Request) -> Result<Option<HashMap<String, &[u8]>>, PushError> {
    let Some(ct) = req.content_type.as_deref() else {
        return Ok(None);
    };
    if !ct.to_ascii_lowercase().starts_with("multipart/form-data") {
        return Ok(None);
    }
    let boundary = ct
        .split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim_matches('"'))
        .ok_or_else(|| bad("multipart body without a boundary"))?;
    let delimiter = format!("--{boundary}");
    let body = &req.body[..];
    let mut parts = HashMap::new();
    let mut at = find(body, delimiter.as_bytes(), 0)
        .ok_or_else(|| bad("multipart body without its first boundary"))?;
    loop {
        at += delimiter.len();
        if body[at..].starts_with(b"--") {
            break;
        }
        let head_end = find(body, b"\r\n\r\n", at)
            .ok_or_else(|| bad("multipart part without the end of its headers"))?;
        let head = String::from_utf8_lossy(&body[at..head_end]);
        let content = head_end + 4;
        let next = find(body, format!("\r\n{delimiter}").as_bytes(), content)
            .ok_or_else(|| bad("multipart body is truncated (no closing boundary)"))?;
        let name = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))
            .and_then(|l| {
                l.split(';')
                    .filter_map(|p| p.trim().split_once('='))
                    .find(|(k, _)| *k == "name")
                    .map(|(_, v)| v.trim_matches('"').to_string())
            })
            .ok_or_else(|| bad("multipart part without a name"))?;
        parts.insert(name, &body[content..next]);
        at = next + 2;
    }
    Ok(Some(parts))
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// A push's name: service, profile type, labels.
pub type Name = (String, String, Vec<(String, String)>);

/// `app.cpu{env=prod,region=eu}`: the service, the profile type (`cpu` when the
/// name has no known suffix) and the labels; Pyroscope's reserved `__x__` labels
/// are left out.
pub fn parse_name(name: &str) -> Result<Name, PushError> {
    const TYPES: [&str; 16] = [
        "cpu",
        "itimer",
        "wall",
        "alloc_objects",
        "alloc_space",
        "alloc_in_new_tlab_objects",
        "alloc_in_new_tlab_bytes",
        "inuse_objects",
        "inuse_space",
        "lock_count",
        "lock_duration",
        "goroutines",
        "mutex_count",
        "mutex_duration",
        "block_count",
        "block_duration",
    ];
    let (base, labels) = match name.find('{') {
        Some(i) => {
            let rest = name[i + 1..]
                .strip_suffix('}')
                .ok_or_else(|| bad(format!("name {name:?}: labels do not end with }}")))?;
            (&name[..i], rest)
        }
        None => (name, ""),
    };
    let mut out = Vec::new();
    for pair in labels.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("name {name:?}: label {pair:?} is not key=value")))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(bad(format!("name {name:?}: a label has no key")));
        }
        if !(k.starts_with("__") && k.ends_with("__")) {
            out.push((k.to_string(), v.trim().to_string()));
        }
    }
    let (service, kind) = match base.rsplit_once('.') {
        Some((s, t)) if TYPES.contains(&t) && !s.is_empty() => (s, t),
        _ => (base, "cpu"),
    };
    if service.trim().is_empty() {
        return Err(bad(
            "the push has no application name (name=APP.cpu{labels})",
        ));
    }
    Ok((service.to_string(), kind.to_string(), out))
}

fn mode_of(kind: &str) -> Option<SampleMode> {
    match kind {
        "cpu" | "itimer" | "samples" => Some(SampleMode::Cpu),
        "wall" => Some(SampleMode::Wall),
        _ => None,
    }
}

fn number(req: &Request, name: &str) -> Result<Option<u64>, PushError> {
    req.param(name)
        .map(|v| {
            v.parse::<u64>()
                .map_err(|_| bad(format!("{name}={v:?} is not a number")))
        })
        .transpose()
}

/// Pyroscope's `from`/`until` are epoch seconds (or ms, us, ns when that large).
fn epoch_ns(v: u64) -> u64 {
    match v {
        0..=99_999_999_999 => v.saturating_mul(1_000_000_000),
        100_000_000_000..=99_999_999_999_999 => v.saturating_mul(1_000_000),
        100_000_000_000_000..=99_999_999_999_999_999 => v.saturating_mul(1_000),
        _ => v,
    }
}

/// A Pyroscope `/ingest` request: its source and its samples.
pub fn pyroscope(req: &Request) -> Result<(Source, Pushed), PushError> {
    let name = req
        .param("name")
        .ok_or_else(|| bad("the push has no name (name=APP.cpu{labels})"))?;
    let (service, kind, labels) = parse_name(name)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let until = number(req, "until")?.map_or(now, epoch_ns);
    let from = number(req, "from")?.map_or(until.saturating_sub(10_000_000_000), epoch_ns);
    if from > until {
        return Err(bad("from is after until"));
    }
    let rate = number(req, "sampleRate")?
        .filter(|&r| r > 0)
        .unwrap_or(DEFAULT_RATE_HZ);
    let interval_ns = 1_000_000_000 / rate.min(1_000_000_000);
    let host = labels
        .iter()
        .find(|(k, _)| k == "hostname" || k == "host")
        .map_or(String::new(), |(_, v)| v.clone());
    let src = Source {
        service,
        labels,
        protocol: "pyroscope",
        client: req.param("spyName").unwrap_or("").to_string(),
        host,
        interval_ns,
        ..Source::default()
    };
    let format = req.param("format").unwrap_or("folded");
    let parts = multipart(req)?;
    let part = |names: &[&str]| -> Result<Vec<u8>, PushError> {
        let raw = match &parts {
            Some(p) => *names
                .iter()
                .find_map(|n| p.get(*n))
                .ok_or_else(|| bad(format!("the multipart body has no {:?} part", names[0])))?,
            None => &req.body[..],
        };
        let gz = req
            .content_encoding
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case("gzip"));
        let raw = if gz && parts.is_none() {
            inflate_forced(raw)?
        } else {
            raw.to_vec()
        };
        inflate(&raw, format)
    };
    let mode = mode_of(&kind);
    let span = (from, until);
    let pushed = match format {
        "folded" | "lines" | "collapsed" => {
            let body = part(&["profile"])?;
            let mut p = Pushed::default();
            match mode {
                Some(mode) => folded(&body, format == "lines", mode, span, interval_ns, &mut p)?,
                None => p.skipped.push(kind.clone()),
            }
            p
        }
        "pprof" => pprof_body(&part(&["profile"])?, mode, &kind, span, interval_ns)?,
        "jfr" => jfr_body(&part(&["jfr"])?)?,
        other => {
            return Err(bad(format!(
                "format {other:?} is not accepted (folded, lines, pprof, jfr)"
            )))
        }
    };
    Ok((src, pushed))
}

fn inflate_forced(raw: &[u8]) -> Result<Vec<u8>, PushError> {
    if raw.starts_with(&[0x1f, 0x8b]) {
        inflate(raw, "body")
    } else {
        Err(bad("Content-Encoding says gzip but the body is not gzip"))
    }
}

/// Folded lines `a;b;c N` (root first); with `lines`, each line is one sample.
fn folded(
    body: &[u8],
    lines: bool,
    mode: SampleMode,
    (from, to): (u64, u64),
    interval_ns: u64,
    p: &mut Pushed,
) -> Result<(), PushError> {
    let text = std::str::from_utf8(body).map_err(|_| bad("folded body is not UTF-8 text"))?;
    let mut index = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let (stack, count) = if lines {
            (line, 1)
        } else {
            let (stack, count) = line
                .rsplit_once(' ')
                .ok_or_else(|| bad(format!("folded line {} has no count", n + 1)))?;
            let count = count
                .parse::<u64>()
                .map_err(|_| bad(format!("folded line {}: {count:?} is not a count", n + 1)))?;
            (stack, count)
        };
        if count == 0 {
            continue;
        }
        let frames: Vec<PushedFrame> = stack
            .split(';')
            .rev()
            .filter(|f| !f.is_empty())
            .map(|f| PushedFrame::from_name(f, 0, FrameKind::Java))
            .collect();
        if frames.is_empty() {
            return Err(bad(format!("folded line {} has no frames", n + 1)));
        }
        let stack = p.stack(&mut index, frames);
        p.samples.push(PushedSample {
            stack,
            thread: "all threads".into(),
            mode,
            count,
            from_ns: from,
            to_ns: to,
            weight_ns: interval_ns,
            state: 0,
            link: None,
        });
    }
    if p.samples.is_empty() {
        return Err(bad("folded body holds no samples"));
    }
    Ok(())
}

/// A pprof profile (gzipped or not): cpu or wall samples, counted by a `samples`
/// count value when there is one, else by the nanoseconds over the period.
fn pprof_body(
    body: &[u8],
    mode: Option<SampleMode>,
    kind: &str,
    (from, to): (u64, u64),
    interval_ns: u64,
) -> Result<Pushed, PushError> {
    let prof = pprof::Profile::decode(body).map_err(|e| bad(format!("pprof body: {e}")))?;
    let s = |i: i64| -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| prof.string_table.get(i))
            .map_or("", String::as_str)
    };
    let types: Vec<(&str, &str)> = prof
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    let mut p = Pushed::default();
    let ns = types
        .iter()
        .position(|&(t, u)| u == "nanoseconds" && mode_of(t).is_some());
    let count = types
        .iter()
        .position(|&(t, u)| (t == "samples" || t == "cpu" || t == "wall") && u == "count");
    let mode = ns
        .and_then(|i| mode_of(types[i].0))
        .filter(|_| mode.is_some())
        .or(mode);
    let Some(mode) = mode.filter(|_| ns.is_some() || count.is_some()) else {
        p.skipped.push(format!(
            "{kind} ({})",
            types.iter().map(|t| t.0).collect::<Vec<_>>().join(",")
        ));
        return Ok(p);
    };
    let period = match prof.period_type.map(|t| s(t.unit)) {
        Some("nanoseconds") if prof.period > 0 => prof.period as u64,
        _ => interval_ns.max(1),
    };
    let (from, to) = if prof.time_nanos > 0 {
        let t = prof.time_nanos as u64;
        (t, t.saturating_add(prof.duration_nanos.max(0) as u64))
    } else {
        (from, to)
    };
    let functions: HashMap<u64, &pprof::Function> =
        prof.function.iter().map(|f| (f.id, f)).collect();
    let locations: HashMap<u64, &pprof::Location> =
        prof.location.iter().map(|l| (l.id, l)).collect();
    let mut index = HashMap::new();
    for sample in &prof.sample {
        let value = |i: Option<usize>| i.and_then(|i| sample.value.get(i).copied());
        let (n, weight) = match (value(count), value(ns)) {
            (Some(c), Some(w)) if c > 0 => (c as u64, w.max(0) as u64 / c as u64),
            (Some(c), _) => (c.max(0) as u64, period),
            (None, Some(w)) => ((w.max(0) as u64).div_ceil(period), period),
            (None, None) => (0, period),
        };
        if n == 0 {
            continue;
        }
        let mut frames = Vec::new();
        for id in &sample.location_id {
            let loc = locations.get(id).ok_or_else(|| {
                bad(format!(
                    "pprof body: sample names location {id}, not in the profile"
                ))
            })?;
            for (i, line) in loc.line.iter().enumerate() {
                let name = functions.get(&line.function_id).map_or("", |f| s(f.name));
                let kind = if i + 1 < loc.line.len() {
                    FrameKind::Inlined
                } else {
                    FrameKind::Java
                };
                frames.push(PushedFrame::from_name(name, line.line.max(0) as u32, kind));
            }
        }
        if frames.is_empty() {
            continue;
        }
        let thread = sample
            .label
            .iter()
            .find(|l| matches!(s(l.key), "thread" | "thread_name" | "thread.name"))
            .map_or("all threads", |l| s(l.str));
        let stack = p.stack(&mut index, frames);
        p.samples.push(PushedSample {
            stack,
            thread: thread.to_string(),
            mode,
            count: n,
            from_ns: from,
            to_ns: to,
            weight_ns: weight,
            state: 0,
            link: None,
        });
    }
    Ok(p)
}

/// A JFR recording: its cpu and wall samples, with their threads, times and states.
fn jfr_body(body: &[u8]) -> Result<Pushed, PushError> {
    let rec = jscope_jfr::read_bytes(body).map_err(|e| bad(format!("jfr body: {e}")))?;
    if let Some(d) = &rec.damage {
        return Err(bad(format!(
            "jfr body is damaged at byte {}: {}",
            d.offset, d.reason
        )));
    }
    Ok(from_recording(rec))
}

/// The frames of a recording's stack, by name.
pub(crate) fn frames_of(rec: &Recording, stack: StackId) -> Vec<PushedFrame> {
    rec.stack(stack)
        .iter()
        .map(|f| pushed_frame(rec, f))
        .collect()
}

/// A frame of a recording as pushed frames name it: class and method by name.
pub(crate) fn pushed_frame(rec: &Recording, f: &jscope_format::Frame) -> PushedFrame {
    let (class, method) = match rec.method(f.method) {
        Some(m) => (
            rec.class(m.class)
                .map_or("", |c| rec.string(c.name))
                .to_string(),
            rec.string(m.name).to_string(),
        ),
        None => (String::new(), "[unknown]".to_string()),
    };
    PushedFrame {
        class,
        method,
        line: f.line,
        kind: f.kind,
        native: rec.native_library(f.method).is_some(),
    }
}

pub(crate) fn thread_name(rec: &Recording, id: ThreadId) -> String {
    rec.thread(id)
        .map_or_else(|| format!("thread {}", id.0), |t| t.name.clone())
}

fn from_recording(rec: Recording) -> Pushed {
    let mut p = Pushed::default();
    let mut stacks: HashMap<u32, usize> = HashMap::new();
    let mut index = HashMap::new();
    for s in &rec.samples {
        let stack = match stacks.get(&s.stack.0) {
            Some(&i) => i,
            None => {
                let i = p.stack(&mut index, frames_of(&rec, s.stack));
                stacks.insert(s.stack.0, i);
                i
            }
        };
        let wall = rec
            .header
            .start_wall_ns
            .saturating_add(rec.ticks_to_ns(s.ticks));
        p.samples.push(PushedSample {
            stack,
            thread: thread_name(&rec, s.thread),
            mode: s.mode,
            count: 1,
            from_ns: wall,
            to_ns: wall,
            weight_ns: s.weight_ns,
            state: s.state,
            link: None,
        });
    }
    p.events_of = Some(rec);
    p
}

fn any_string(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        _ => String::new(),
    }
}

/// An OTLP request: one source per resource, its cpu and wall profiles' samples.
pub fn otlp(req: &Request) -> Result<Vec<(Source, Pushed)>, PushError> {
    let ct = req
        .content_type
        .as_deref()
        .unwrap_or("application/x-protobuf");
    if ct.to_ascii_lowercase().starts_with("application/json") {
        return Err(PushError {
            status: 415,
            message: "jscope: OTLP/JSON is not accepted; send application/x-protobuf".into(),
        });
    }
    let gz = req
        .content_encoding
        .as_deref()
        .is_some_and(|e| e.eq_ignore_ascii_case("gzip"));
    let body = if gz {
        inflate_forced(&req.body)?
    } else {
        req.body.clone()
    };
    let msg = ExportProfilesServiceRequest::decode(&body[..])
        .map_err(|e| bad(format!("OTLP body: {e}")))?;
    let dict = msg.dictionary.unwrap_or_default();
    let s = |i: i32| -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| dict.string_table.get(i))
            .map_or("", String::as_str)
    };
    let get = |what: &str, len: usize, i: i32| -> Result<usize, PushError> {
        usize::try_from(i)
            .ok()
            .filter(|&i| i < len)
            .ok_or_else(|| bad(format!("OTLP body: {what} index {i} is outside its table")))
    };
    let mut out = Vec::new();
    for rp in &msg.resource_profiles {
        let mut src = Source {
            protocol: "otlp",
            service: "unknown_service".into(),
            ..Source::default()
        };
        for kv in rp.resource.iter().flat_map(|r| &r.attributes) {
            let v = kv.value.as_ref().map(any_string).unwrap_or_default();
            match kv.key.as_str() {
                "service.name" => src.service = v,
                "process.command_line" => src.command_line = v,
                k => {
                    match k {
                        "host.name" => src.host = v.clone(),
                        "process.pid" => src.pid = v.parse().unwrap_or(0),
                        _ => {}
                    }
                    src.labels.push((k.to_string(), v));
                }
            }
        }
        let mut p = Pushed::default();
        let mut index = HashMap::new();
        for sp in &rp.scope_profiles {
            if src.client.is_empty() {
                src.client = sp.scope.as_ref().map_or(String::new(), |s| s.name.clone());
            }
            for prof in &sp.profiles {
                let (ty, unit) = prof
                    .sample_type
                    .as_ref()
                    .map_or(("", ""), |t| (s(t.type_strindex), s(t.unit_strindex)));
                let Some(mode) = mode_of(ty) else {
                    p.skipped.push(format!("{ty} ({unit})"));
                    continue;
                };
                let period = (prof.period > 0).then_some(prof.period as u64);
                src.interval_ns = src.interval_ns.max(period.unwrap_or(0));
                let period = period.unwrap_or(10_000_000);
                for sample in &prof.samples {
                    let st = get("stack", dict.stack_table.len(), sample.stack_index)?;
                    let mut frames = Vec::new();
                    for &li in &dict.stack_table[st].location_indices {
                        let loc =
                            &dict.location_table[get("location", dict.location_table.len(), li)?];
                        for (i, line) in loc.lines.iter().enumerate() {
                            let f =
                                get("function", dict.function_table.len(), line.function_index)?;
                            let name = s(dict.function_table[f].name_strindex);
                            let kind = if i + 1 < loc.lines.len() {
                                FrameKind::Inlined
                            } else {
                                FrameKind::Java
                            };
                            frames.push(PushedFrame::from_name(
                                name,
                                line.line.max(0) as u32,
                                kind,
                            ));
                        }
                    }
                    if frames.is_empty() {
                        continue;
                    }
                    let mut thread = "all threads".to_string();
                    for &ai in &sample.attribute_indices {
                        let a = &dict.attribute_table
                            [get("attribute", dict.attribute_table.len(), ai)?];
                        if s(a.key_strindex) == "thread.name" {
                            thread = a.value.as_ref().map(any_string).unwrap_or_default();
                        }
                    }
                    let stack = p.stack(&mut index, frames);
                    let link = link_of(&dict.link_table, sample.link_index);
                    let times = &sample.timestamps_unix_nano;
                    let n = times.len().max(sample.values.len());
                    for i in 0..n {
                        let at = times.get(i).copied().unwrap_or(prof.time_unix_nano);
                        let value = sample.values.get(i).copied();
                        let (count, weight) = match (unit, value) {
                            ("nanoseconds", Some(v)) => (1, v.max(0) as u64),
                            (_, Some(v)) => (v.max(0) as u64, period),
                            (_, None) => (1, period),
                        };
                        if count == 0 {
                            continue;
                        }
                        p.samples.push(PushedSample {
                            stack,
                            thread: thread.clone(),
                            mode,
                            count,
                            from_ns: at,
                            to_ns: at,
                            weight_ns: weight,
                            state: 0,
                            link,
                        });
                    }
                }
            }
        }
        out.push((src, p));
    }
    Ok(out)
}

/// A sample's link (0: none) as (trace id, span id); None when absent or
/// malformed.
fn link_of(
    table: &[opentelemetry_proto::tonic::profiles::v1development::Link],
    index: i32,
) -> Option<([u8; 16], u64)> {
    let link = table.get(usize::try_from(index).ok().filter(|&i| i > 0)?)?;
    let trace: [u8; 16] = link.trace_id.as_slice().try_into().ok()?;
    let span: [u8; 8] = link.span_id.as_slice().try_into().ok()?;
    (trace != [0; 16]).then_some((trace, u64::from_be_bytes(span)))
}

/// An empty `ExportProfilesServiceResponse` (everything accepted).
pub fn otlp_response() -> Vec<u8> {
    ExportProfilesServiceResponse::default().encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_service_type_and_labels() {
        let (s, t, l) = parse_name("shop.cpu{env=prod,region=eu,__session_id__=x}").unwrap();
        assert_eq!((s.as_str(), t.as_str()), ("shop", "cpu"));
        assert_eq!(
            l,
            [
                ("env".into(), "prod".into()),
                ("region".into(), "eu".into())
            ]
        );
        let (s, t, l) = parse_name("com.acme.shop").unwrap();
        assert_eq!((s.as_str(), t.as_str()), ("com.acme.shop", "cpu"));
        assert!(l.is_empty());
        let (s, t, _) = parse_name("shop.alloc_objects{}").unwrap();
        assert_eq!((s.as_str(), t.as_str()), ("shop", "alloc_objects"));
        assert!(parse_name("shop{env").is_err());
        assert!(parse_name("shop{env}").is_err());
        assert!(parse_name("{env=prod}").is_err());
    }

    fn ingest(format: &str, body: &[u8]) -> Request {
        let mut req = crate::http::parse_target(&format!(
            "/ingest?name=app.cpu&from=1700000000&until=1700000001&format={format}"
        ));
        req.body = body.to_vec();
        req
    }

    fn small_pprof() -> Vec<u8> {
        use pprof::{Function, Line, Location, Profile, Sample, ValueType};
        let strings = [
            "",
            "samples",
            "count",
            "cpu",
            "nanoseconds",
            "a.B.c",
            "a.B.d",
        ];
        Profile {
            sample_type: vec![
                ValueType { r#type: 1, unit: 2 },
                ValueType { r#type: 3, unit: 4 },
            ],
            sample: vec![Sample {
                location_id: vec![2, 1],
                value: vec![3, 30_000_000],
                label: vec![],
            }],
            location: (1..=2)
                .map(|id| Location {
                    id,
                    line: vec![Line {
                        function_id: id,
                        line: 7,
                    }],
                    ..Location::default()
                })
                .collect(),
            function: (1..=2)
                .map(|id| Function {
                    id,
                    name: 4 + id as i64,
                    ..Function::default()
                })
                .collect(),
            string_table: strings.iter().map(|s| s.to_string()).collect(),
            ..Profile::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn a_pprof_body_counts_its_samples() {
        let (src, p) = pyroscope(&ingest("pprof", &small_pprof())).unwrap();
        assert_eq!(src.service, "app");
        assert_eq!(p.samples.len(), 1);
        let s = &p.samples[0];
        assert_eq!(
            (s.count, s.weight_ns, s.mode),
            (3, 10_000_000, SampleMode::Cpu)
        );
        let names: Vec<&str> = p.stacks[s.stack]
            .iter()
            .map(|f| f.method.as_str())
            .collect();
        assert_eq!(names, ["d", "c"]);
    }

    /// Every cut and many corruptions of real bodies are refused or read, never a panic.
    #[test]
    fn cut_and_corrupt_bodies_never_panic() {
        let jfr = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../jfr/tests/data/async-profiler.jfr"),
        )
        .unwrap();
        let bodies = [
            ("pprof", small_pprof()),
            ("jfr", jfr),
            ("folded", b"a;b 3\nc 1\n".to_vec()),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for (format, body) in &bodies {
            let step = (body.len() / 100).max(1);
            for cut in (0..body.len()).step_by(step) {
                let _ = pyroscope(&ingest(format, &body[..cut]));
            }
            for _ in 0..100 {
                let mut b = body.clone();
                for _ in 0..4 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let i = (seed % b.len() as u64) as usize;
                    b[i] = (seed >> 32) as u8;
                }
                let _ = pyroscope(&ingest(format, &b));
            }
        }
        let otlp = ExportProfilesServiceRequest::default().encode_to_vec();
        for cut in 0..otlp.len() {
            let req = Request {
                body: otlp[..cut].to_vec(),
                ..Request::default()
            };
            let _ = super::otlp(&req);
        }
    }

    #[test]
    fn otlp_links_are_read_as_trace_and_span_ids() {
        use opentelemetry_proto::tonic::profiles::v1development::Link;
        let trace: Vec<u8> = (1..=16).collect();
        let table = vec![
            Link::default(),
            Link {
                trace_id: trace.clone(),
                span_id: vec![0, 0, 0, 0, 0, 0, 1, 2],
            },
            Link {
                trace_id: vec![1, 2],
                span_id: vec![1; 8],
            },
        ];
        let want: [u8; 16] = trace.try_into().unwrap();
        assert_eq!(link_of(&table, 1), Some((want, 0x102)));
        assert_eq!(link_of(&table, 0), None, "index 0 is no link");
        assert_eq!(link_of(&table, 2), None, "a short trace id");
        assert_eq!(link_of(&table, 9), None);
        assert_eq!(link_of(&table, -1), None);
    }

    #[test]
    fn multipart_parts_are_found_by_name() {
        let body = b"--XX\r\nContent-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n\r\nFLR\0data\r\n--XX\r\nContent-Disposition: form-data; name=\"labels\"\r\n\r\nL\r\n--XX--\r\n";
        let req = Request {
            content_type: Some("multipart/form-data; boundary=XX".into()),
            body: body.to_vec(),
            ..Request::default()
        };
        let parts = multipart(&req).unwrap().unwrap();
        assert_eq!(parts["jfr"], b"FLR\0data");
        assert_eq!(parts["labels"], b"L");
        let cut = Request {
            body: body[..60].to_vec(),
            ..req
        };
        assert!(multipart(&cut).is_err());
    }
}
