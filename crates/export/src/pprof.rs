//! pprof: a gzipped `perftools.profiles.Profile` (github.com/google/pprof,
//! proto/profile.proto), as `go tool pprof` reads it. The messages are written
//! by hand for prost (no protoc here); only the fields jscope fills are declared,
//! with the schema's field numbers.

use std::collections::HashMap;
use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use crate::model::{Kind, Profile as Source};

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// The string table, index 0 the empty string as the schema requires.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The profile message of a source profile: one location per distinct run of
/// (function, line) frames (a frame and those inlined into it), samples merged per (stack, thread, state, class) with their count and
/// weight summed, thread and state as labels.
pub fn profile(src: &Source) -> Profile {
    let mut strings = Strings::new();
    let kind = src.kind();
    let mut value_type = |(t, u): (&str, &str)| ValueType {
        r#type: strings.get(t),
        unit: strings.get(u),
    };
    let sample_type: Vec<ValueType> = kind
        .value_types()
        .into_iter()
        .map(&mut value_type)
        .collect();
    let period_type = value_type(kind.value_types()[1]);
    let function = src
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| Function {
            id: i as u64 + 1,
            name: strings.get(&f.name),
            system_name: strings.get(&f.system_name),
            filename: strings.get(&f.file),
            start_line: 0,
        })
        .collect();
    // Mapping 1 is the JVM's Java code; each native library gets its own.
    let mut mapping = vec![Mapping {
        id: 1,
        filename: strings.get("jvm"),
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        has_inline_frames: true,
        ..Mapping::default()
    }];
    let mut mapping_of_lib: HashMap<&str, u64> = HashMap::new();
    let function_mapping: Vec<u64> = src
        .functions
        .iter()
        .map(|f| {
            if f.lib.is_empty() {
                return 1;
            }
            *mapping_of_lib.entry(&f.lib).or_insert_with(|| {
                let id = mapping.len() as u64 + 1;
                mapping.push(Mapping {
                    id,
                    filename: strings.get(&f.lib),
                    has_functions: true,
                    ..Mapping::default()
                });
                id
            })
        })
        .collect();
    let mut locations: HashMap<&[crate::Frame], u64> = HashMap::new();
    let mut location = Vec::new();
    let location_ids: Vec<Vec<u64>> = (0..src.stacks.len() as u32)
        .map(|stack| {
            src.locations(stack)
                .into_iter()
                .map(|frames| {
                    *locations.entry(frames).or_insert_with(|| {
                        let id = location.len() as u64 + 1;
                        location.push(Location {
                            id,
                            mapping_id: frames
                                .first()
                                .map_or(1, |f| function_mapping[f.function as usize]),
                            address: 0,
                            line: frames
                                .iter()
                                .map(|f| Line {
                                    function_id: f.function as u64 + 1,
                                    line: f.line.into(),
                                })
                                .collect(),
                        });
                        id
                    })
                })
                .collect()
        })
        .collect();
    let sample = merged_samples(src, &location_ids, &mut strings);
    let comment = vec![strings.get(&format!(
        "jscope {} profile of pid {}: {}",
        kind, src.pid, src.command_line
    ))];
    Profile {
        default_sample_type: sample_type[1].r#type,
        sample_type,
        sample,
        mapping,
        location,
        function,
        string_table: strings.table,
        time_nanos: src.start_wall_ns as i64,
        duration_nanos: src.duration_ns as i64,
        period_type: Some(period_type),
        period: period_of(kind, src.period_ns),
        comment,
    }
}

fn period_of(kind: Kind, period_ns: u64) -> i64 {
    match kind {
        Kind::Cpu | Kind::Wall | Kind::Snapshot => period_ns as i64,
        _ => 1,
    }
}

/// What makes samples one pprof sample: stack, thread, state, class and request.
type SampleKey<'a> = (
    u32,
    u32,
    Option<&'a str>,
    Option<&'a str>,
    Option<crate::model::Link>,
);

fn merged_samples(src: &Source, location_ids: &[Vec<u64>], strings: &mut Strings) -> Vec<Sample> {
    let thread_key = strings.get("thread");
    let state_key = strings.get("thread state");
    let class_key = strings.get(match src.kind() {
        Kind::Alloc => "allocated class",
        Kind::NativeMem | Kind::Leak => "allocating function",
        _ => "lock class",
    });
    let mut index: HashMap<SampleKey, usize> = HashMap::new();
    let mut out: Vec<Sample> = Vec::new();
    for s in &src.samples {
        let key = (s.stack, s.thread, s.state, s.class.as_deref(), s.link);
        let i = *index.entry(key).or_insert_with(|| {
            let mut label = vec![Label {
                key: thread_key,
                str: strings.get(&src.thread_name(s.thread)),
                ..Label::default()
            }];
            if let Some(state) = s.state {
                label.push(Label {
                    key: state_key,
                    str: strings.get(state),
                    ..Label::default()
                });
            }
            if let Some(class) = &s.class {
                label.push(Label {
                    key: class_key,
                    str: strings.get(class),
                    ..Label::default()
                });
            }
            if let Some((trace, span)) = s.link {
                let trace: String = trace.iter().map(|b| format!("{b:02x}")).collect();
                for (key, value) in [("trace_id", trace), ("span_id", format!("{span:016x}"))] {
                    label.push(Label {
                        key: strings.get(key),
                        str: strings.get(&value),
                        ..Label::default()
                    });
                }
            }
            out.push(Sample {
                location_id: location_ids[s.stack as usize].clone(),
                value: vec![0, 0],
                label,
            });
            out.len() - 1
        });
        out[i].value[0] += 1;
        out[i].value[1] += s.weight as i64;
    }
    out
}

/// Writes the gzipped profile.
pub fn write(src: &Source, out: &mut dyn Write) -> io::Result<()> {
    let bytes = profile(src).encode_to_vec();
    let mut gz = GzEncoder::new(out, Compression::fast());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}
