//! What a push holds once parsed, whatever its format: stacks of named frames,
//! their samples, a JFR recording's events, who pushed; and why a push is refused.

use std::collections::HashMap;

use jscope_format::{FrameKind, Recording, SampleMode};
use jscope_store::StoreError;

/// Why a push was refused: the HTTP status and a one-line reason.
#[derive(Debug)]
pub struct PushError {
    pub status: u16,
    pub message: String,
}

impl PushError {
    pub fn bad(message: impl Into<String>) -> PushError {
        PushError {
            status: 400,
            message: format!("jscope: {}", message.into()),
        }
    }
}

impl From<StoreError> for PushError {
    fn from(e: StoreError) -> PushError {
        PushError {
            status: 500,
            message: format!("jscope: storing the push failed: {e}"),
        }
    }
}

/// One pushed frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PushedFrame {
    /// `com.acme.Foo`; empty when the name has no class part.
    pub class: String,
    pub method: String,
    pub line: u32,
    pub kind: FrameKind,
    /// Native or kernel code: `class` is its library (`libc.so.6`, `[kernel]`, or
    /// empty when unknown) and `method` its symbol, so the frame's label is the
    /// name as pushed (`start_thread [libc.so.6]`, `do_syscall_64_[k]`).
    pub native: bool,
}

impl PushedFrame {
    /// Splits `com.acme.Foo.bar` (or `com/acme/Foo.bar`) at its last separator; a
    /// trailing argument list is dropped. Names that say they are native, as
    /// jscope and async-profiler print them (`sym [lib]`, `sym_[k]`, C++'s
    /// `Class::method`), stay whole, as native frames.
    pub fn from_name(name: &str, line: u32, kind: FrameKind) -> PushedFrame {
        let name = name.trim();
        if let Some(f) = PushedFrame::native(name, line) {
            return f;
        }
        let name = match name.find('(') {
            Some(i) if i > 0 => &name[..i],
            _ => name,
        };
        let (class, method) = match (name.rfind("::"), name.rfind('.')) {
            (Some(i), _) => (&name[..i], &name[i + 2..]),
            (None, Some(i)) if i > 0 && i + 1 < name.len() => (&name[..i], &name[i + 1..]),
            _ => ("", name),
        };
        PushedFrame {
            class: class.replace('/', "."),
            method: method.to_string(),
            line,
            kind,
            native: false,
        }
    }

    /// A native or kernel frame's library and symbol, when `name` says it is one.
    fn native(name: &str, line: u32) -> Option<PushedFrame> {
        let (library, symbol, kind) = if let Some(symbol) = name.strip_suffix("_[k]") {
            ("[kernel]", symbol, FrameKind::Kernel)
        } else if let Some((symbol, library)) = name
            .strip_suffix(']')
            .and_then(|n| n.rsplit_once(" ["))
            .filter(|(s, l)| !s.is_empty() && !l.is_empty())
        {
            let kind = if library == "libjvm.so" {
                FrameKind::Vm
            } else {
                FrameKind::Native
            };
            (library, symbol, kind)
        } else if name.contains("::") {
            ("", name, FrameKind::Native)
        } else {
            return None;
        };
        Some(PushedFrame {
            class: library.to_string(),
            method: symbol.to_string(),
            line,
            kind,
            native: true,
        })
    }
}

/// Observations of one stack on one thread.
#[derive(Debug, Clone)]
pub struct PushedSample {
    /// Index into [`Pushed::stacks`].
    pub stack: usize,
    pub thread: String,
    pub mode: SampleMode,
    /// How many samples, spread evenly over `[from_ns, to_ns]` (epoch ns).
    pub count: u64,
    pub from_ns: u64,
    pub to_ns: u64,
    /// What each sample stands for.
    pub weight_ns: u64,
    /// JVMTI state bits; 0 when unknown.
    pub state: u32,
    /// The request the samples were taken in (an OTLP link): trace id, span id.
    pub link: Option<([u8; 16], u64)>,
}

/// A parsed push: stacks (top frame first) and their samples.
#[derive(Debug, Clone, Default)]
pub struct Pushed {
    pub stacks: Vec<Vec<PushedFrame>>,
    pub samples: Vec<PushedSample>,
    /// Profile types the push held that jscope does not store (alloc, lock, ...).
    pub skipped: Vec<String>,
    /// A pushed JFR recording, whose JVM events (allocations, monitors, parks, GC,
    /// thread starts and ends) are stored beside the samples.
    pub events_of: Option<Recording>,
}

impl Pushed {
    /// The index of a stack, added once.
    pub fn stack(
        &mut self,
        index: &mut HashMap<Vec<PushedFrame>, usize>,
        frames: Vec<PushedFrame>,
    ) -> usize {
        let stacks = &mut self.stacks;
        *index.entry(frames).or_insert_with_key(|f| {
            stacks.push(f.clone());
            stacks.len() - 1
        })
    }

    /// Samples, each folded line or pprof value counted as many.
    pub fn total(&self) -> u64 {
        self.samples
            .iter()
            .fold(0u64, |n, s| n.saturating_add(s.count))
    }

    /// JVM events of a pushed JFR recording.
    pub fn events(&self) -> usize {
        self.events_of.as_ref().map_or(0, |r| r.events.len())
    }
}

/// Who pushed: the stream's service, labels and where it came from.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub service: String,
    pub labels: Vec<(String, String)>,
    /// `pyroscope` or `otlp`.
    pub protocol: &'static str,
    /// The client, e.g. Pyroscope's `spyName`.
    pub client: String,
    pub host: String,
    pub pid: u32,
    pub command_line: String,
    pub interval_ns: u64,
}

impl Source {
    /// A stable stream id: the service's name and a hash of service and labels.
    pub fn stream_id(&self) -> String {
        let mut key = self.service.clone();
        let mut labels = self.labels.clone();
        labels.sort();
        for (k, v) in &labels {
            key.push('\0');
            key.push_str(k);
            key.push('=');
            key.push_str(v);
        }
        let name: String = self
            .service
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let name = name.trim_start_matches('.');
        let name = if name.is_empty() { "service" } else { name };
        format!("{name}-{:08x}", crc32c::crc32c(key.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_split_at_the_last_separator() {
        let f = |n| {
            let p = PushedFrame::from_name(n, 0, FrameKind::Java);
            (p.class, p.method)
        };
        assert_eq!(f("com.acme.Foo.bar"), ("com.acme.Foo".into(), "bar".into()));
        assert_eq!(
            f("com/acme/Foo.bar(I)V"),
            ("com.acme.Foo".into(), "bar".into())
        );
        assert_eq!(f("start_thread"), ("".into(), "start_thread".into()));
    }

    #[test]
    fn native_and_kernel_frame_names_stay_whole() {
        let f = |n| {
            let p = PushedFrame::from_name(n, 0, FrameKind::Java);
            (p.class, p.method, p.kind, p.native)
        };
        assert_eq!(
            f("start_thread [libc.so.6]"),
            (
                "libc.so.6".into(),
                "start_thread".into(),
                FrameKind::Native,
                true
            )
        );
        assert_eq!(
            f("JavaThread::run() [libjvm.so]"),
            (
                "libjvm.so".into(),
                "JavaThread::run()".into(),
                FrameKind::Vm,
                true
            )
        );
        assert_eq!(
            f("do_syscall_64_[k]"),
            (
                "[kernel]".into(),
                "do_syscall_64".into(),
                FrameKind::Kernel,
                true
            )
        );
        assert_eq!(
            f("std::vec::push"),
            ("".into(), "std::vec::push".into(), FrameKind::Native, true)
        );
        assert!(!f("[unknown_java]").3, "not a library suffix");
    }

    #[test]
    fn stream_ids_are_stable_and_valid() {
        let src = |labels: &[(&str, &str)]| Source {
            service: "my app/1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Source::default()
        };
        let a = src(&[("env", "prod"), ("region", "eu")]).stream_id();
        let b = src(&[("region", "eu"), ("env", "prod")]).stream_id();
        let c = src(&[("env", "dev")]).stream_id();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("my_app_1-"), "{a}");
        assert!(jscope_wire::valid_stream_id(&a));
    }
}
