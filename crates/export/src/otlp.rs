//! OTLP profiles: an `ExportProfilesServiceRequest` of the current
//! opentelemetry-proto profiles schema (v1development), with the types of the
//! `opentelemetry-proto` crate. One resource (the JVM), one scope (jscope), one
//! profile per sample type; functions, locations, stacks and attributes in the
//! request's shared dictionary, whose entry 0 is the zero value in every table.

use std::collections::HashMap;
use std::io::{self, Write};

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development as otlp;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use crate::model::Profile as Source;

/// What the resource says about the JVM.
#[derive(Debug, Clone, Default)]
pub struct ResourceInfo {
    pub service_name: String,
    pub host: String,
    pub pid: u32,
    pub command_line: String,
    pub runtime_name: String,
    pub runtime_version: String,
}

/// The service name of a JVM: its main class (or its jar's or module's name) from
/// the command line, with or without the java launcher and its options in front.
pub fn service_name(command_line: &str) -> String {
    let mut words = command_line.split_whitespace().peekable();
    if words
        .peek()
        .is_some_and(|w| w.rsplit('/').next() == Some("java"))
    {
        words.next();
    }
    while let Some(w) = words.next() {
        match w {
            "-jar" => {
                let jar = words.next().unwrap_or("java");
                let file = jar.rsplit('/').next().unwrap_or(jar);
                return file.trim_end_matches(".jar").to_string();
            }
            "-m" | "--module" => {
                let m = words.next().unwrap_or("java");
                return m.rsplit('/').next().unwrap_or(m).to_string();
            }
            "-cp" | "-classpath" | "--class-path" | "-p" | "--module-path" | "--add-modules"
            | "--add-opens" | "--add-exports" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            main => return main.to_string(),
        }
    }
    "java".to_string()
}

/// The shared dictionary being filled.
struct Dictionary {
    dict: otlp::ProfilesDictionary,
    strings: HashMap<String, i32>,
    locations: HashMap<Vec<otlp::Line>, i32>,
    stacks: HashMap<Vec<i32>, i32>,
    attributes: HashMap<(i32, String), i32>,
    links: HashMap<crate::model::Link, i32>,
    /// Mapping index of each native library; Java code uses mapping 0.
    mappings: HashMap<String, i32>,
}

impl Dictionary {
    fn new() -> Dictionary {
        let mut d = Dictionary {
            dict: otlp::ProfilesDictionary {
                mapping_table: vec![otlp::Mapping::default()],
                location_table: vec![otlp::Location::default()],
                function_table: vec![otlp::Function::default()],
                link_table: vec![otlp::Link::default()],
                string_table: vec![],
                attribute_table: vec![otlp::KeyValueAndUnit::default()],
                stack_table: vec![otlp::Stack::default()],
            },
            strings: HashMap::new(),
            locations: HashMap::new(),
            stacks: HashMap::new(),
            attributes: HashMap::new(),
            links: HashMap::new(),
            mappings: HashMap::new(),
        };
        d.string("");
        d
    }

    fn string(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.dict.string_table.len() as i32;
        self.dict.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn value_type(&mut self, (t, u): (&str, &str)) -> otlp::ValueType {
        otlp::ValueType {
            type_strindex: self.string(t),
            unit_strindex: self.string(u),
        }
    }

    /// Adds the functions of `src`; returns the dictionary index of each.
    fn functions(&mut self, src: &Source) -> Vec<i32> {
        src.functions
            .iter()
            .map(|f| {
                let function = otlp::Function {
                    name_strindex: self.string(&f.name),
                    system_name_strindex: self.string(&f.system_name),
                    filename_strindex: self.string(&f.file),
                    start_line: 0,
                };
                self.dict.function_table.push(function);
                self.dict.function_table.len() as i32 - 1
            })
            .collect()
    }

    /// The mapping of a native library (`libc.so.6`), named by its file; 0 (the
    /// table's zero entry) for Java code.
    fn mapping(&mut self, lib: &str) -> i32 {
        if lib.is_empty() {
            return 0;
        }
        if let Some(&i) = self.mappings.get(lib) {
            return i;
        }
        let filename_strindex = self.string(lib);
        self.dict.mapping_table.push(otlp::Mapping {
            filename_strindex,
            ..otlp::Mapping::default()
        });
        let i = self.dict.mapping_table.len() as i32 - 1;
        self.mappings.insert(lib.to_string(), i);
        i
    }

    /// The location of a frame and the frames inlined into it (innermost first), in
    /// the mapping of its code.
    fn location(&mut self, lines: Vec<otlp::Line>, mapping_index: i32) -> i32 {
        let table = &mut self.dict.location_table;
        *self.locations.entry(lines).or_insert_with_key(|lines| {
            table.push(otlp::Location {
                lines: lines.clone(),
                mapping_index,
                ..otlp::Location::default()
            });
            table.len() as i32 - 1
        })
    }

    fn stack(&mut self, locations: Vec<i32>) -> i32 {
        let table = &mut self.dict.stack_table;
        *self.stacks.entry(locations).or_insert_with_key(|l| {
            table.push(otlp::Stack {
                location_indices: l.clone(),
            });
            table.len() as i32 - 1
        })
    }

    /// The link table's index of a request (trace id, span id); 0 for none.
    fn link(&mut self, link: Option<crate::model::Link>) -> i32 {
        let Some(link) = link else {
            return 0;
        };
        let table = &mut self.dict.link_table;
        *self.links.entry(link).or_insert_with(|| {
            table.push(otlp::Link {
                trace_id: link.0.to_vec(),
                span_id: link.1.to_be_bytes().to_vec(),
            });
            table.len() as i32 - 1
        })
    }

    fn attribute(&mut self, key: &str, value: &str) -> i32 {
        let key = self.string(key);
        let table = &mut self.dict.attribute_table;
        *self
            .attributes
            .entry((key, value.to_string()))
            .or_insert_with_key(|(_, v)| {
                table.push(otlp::KeyValueAndUnit {
                    key_strindex: key,
                    value: Some(string_value(v)),
                    unit_strindex: 0,
                });
                table.len() as i32 - 1
            })
    }
}

fn string_value(s: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(s.to_string())),
    }
}

fn key_value(key: &str, value: AnyValue) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(value),
        ..KeyValue::default()
    }
}

/// The request holding one profile per source (each one kind of measurement).
pub fn request(sources: &[Source], info: &ResourceInfo) -> ExportProfilesServiceRequest {
    let mut d = Dictionary::new();
    let profiles = sources.iter().map(|src| profile(src, &mut d)).collect();
    let int = |v: i64| AnyValue {
        value: Some(any_value::Value::IntValue(v)),
    };
    let resource = Resource {
        attributes: vec![
            key_value("service.name", string_value(&info.service_name)),
            key_value("host.name", string_value(&info.host)),
            key_value("process.pid", int(info.pid.into())),
            key_value("process.command_line", string_value(&info.command_line)),
            key_value("process.runtime.name", string_value(&info.runtime_name)),
            key_value(
                "process.runtime.version",
                string_value(&info.runtime_version),
            ),
        ],
        ..Resource::default()
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![otlp::ResourceProfiles {
            resource: Some(resource),
            scope_profiles: vec![otlp::ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "jscope".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                profiles,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(d.dict),
    }
}

/// One profile of the source's weight type: a sample per distinct stack,
/// attribute set (thread name, thread state, class) and link (the request the
/// thread served: trace and span id), with every observation's timestamp and
/// weight.
fn profile(src: &Source, d: &mut Dictionary) -> otlp::Profile {
    let kind = src.kind();
    let functions = d.functions(src);
    let mappings: Vec<i32> = src.functions.iter().map(|f| d.mapping(&f.lib)).collect();
    let stacks: Vec<i32> = (0..src.stacks.len() as u32)
        .map(|stack| {
            let locations = src
                .locations(stack)
                .into_iter()
                .map(|frames| {
                    let lines = frames
                        .iter()
                        .map(|f| otlp::Line {
                            function_index: functions[f.function as usize],
                            line: f.line.into(),
                            column: 0,
                        })
                        .collect();
                    let mapping = frames.first().map_or(0, |f| mappings[f.function as usize]);
                    d.location(lines, mapping)
                })
                .collect();
            d.stack(locations)
        })
        .collect();
    let class_key = match kind {
        crate::Kind::Alloc => "jvm.allocated_class",
        crate::Kind::NativeMem | crate::Kind::Leak => "native.allocating_function",
        _ => "jvm.lock_class",
    };
    let mut index: HashMap<(i32, Vec<i32>, i32), usize> = HashMap::new();
    let mut samples: Vec<otlp::Sample> = Vec::new();
    for s in &src.samples {
        let mut attributes = vec![d.attribute("thread.name", &src.thread_name(s.thread))];
        if let Some(state) = s.state {
            attributes.push(d.attribute("thread.state", state));
        }
        if let Some(class) = &s.class {
            attributes.push(d.attribute(class_key, class));
        }
        let stack = stacks[s.stack as usize];
        let link = d.link(s.link);
        let i = *index
            .entry((stack, attributes, link))
            .or_insert_with_key(|(_, a, _)| {
                samples.push(otlp::Sample {
                    stack_index: stack,
                    attribute_indices: a.clone(),
                    link_index: link,
                    ..otlp::Sample::default()
                });
                samples.len() - 1
            });
        samples[i].values.push(s.weight as i64);
        samples[i].timestamps_unix_nano.push(src.wall_ns(s));
    }
    let types = kind.value_types();
    otlp::Profile {
        sample_type: Some(d.value_type(types[1])),
        samples,
        time_unix_nano: src.start_wall_ns,
        duration_nano: src.duration_ns,
        period_type: Some(d.value_type(types[1])),
        period: match kind {
            crate::Kind::Cpu | crate::Kind::Wall | crate::Kind::Snapshot => src.period_ns as i64,
            _ => 0,
        },
        profile_id: profile_id(src),
        ..otlp::Profile::default()
    }
}

/// A 16-byte id, different for each JVM, start and kind (never all zeroes).
fn profile_id(src: &Source) -> Vec<u8> {
    let mut id = Vec::with_capacity(16);
    id.extend_from_slice(&src.start_wall_ns.to_be_bytes());
    id.extend_from_slice(&src.pid.to_be_bytes());
    id.extend_from_slice(&(src.kind() as u32 + 1).to_be_bytes());
    id
}

/// Writes the request as protobuf binary.
pub fn write(sources: &[Source], info: &ResourceInfo, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(&request(sources, info).encode_to_vec())
}

/// Writes the request as OTLP/JSON: the protobuf JSON mapping (camelCase names,
/// 64-bit integers as decimal strings, bytes as base64, unset fields left out),
/// from the crate's serde form, which keeps some 64-bit numbers as JSON numbers,
/// empty bytes as arrays and unset messages as nulls.
pub fn write_json(sources: &[Source], info: &ResourceInfo, out: &mut dyn Write) -> io::Result<()> {
    let mut json = serde_json::to_value(request(sources, info))?;
    to_proto_json(&mut json);
    serde_json::to_writer(&mut *out, &json)?;
    out.write_all(b"\n")
}

/// The 64-bit integer fields of the profiles messages (int32 fields stay numbers).
const INT64_FIELDS: &[&str] = &[
    "timeUnixNano",
    "durationNano",
    "period",
    "values",
    "line",
    "column",
    "startLine",
    "address",
    "memoryStart",
    "memoryLimit",
    "fileOffset",
    "intValue",
];

fn to_proto_json(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            map.retain(|k, v| !(v.is_null() || (k == "originalPayload" && is_empty_array(v))));
            for (k, v) in map.iter_mut() {
                if INT64_FIELDS.contains(&k.as_str()) {
                    stringify_numbers(v);
                } else {
                    to_proto_json(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_proto_json),
        _ => {}
    }
}

fn is_empty_array(v: &serde_json::Value) -> bool {
    v.as_array().is_some_and(Vec::is_empty)
}

fn stringify_numbers(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) => *v = serde_json::Value::String(n.to_string()),
        serde_json::Value::Array(items) => items.iter_mut().for_each(stringify_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::service_name;

    #[test]
    fn the_service_is_the_main_class_jar_or_module() {
        assert_eq!(service_name("com.acme.Main --port 80"), "com.acme.Main");
        assert_eq!(
            service_name("/usr/bin/java -agentpath:/a.so=x -cp /tmp:/b CpuSplit 2"),
            "CpuSplit"
        );
        assert_eq!(service_name("java -Xmx1g -jar /opt/shop.jar"), "shop");
        assert_eq!(service_name("java -m app/com.acme.App"), "com.acme.App");
        assert_eq!(service_name(""), "java");
    }

    #[test]
    fn otlp_json_follows_the_protobuf_json_mapping() {
        let mut v = serde_json::json!({
            "timeUnixNano": 1795487517788208051u64,
            "samples": [{"values": [5000000, 7], "stackIndex": 3}],
            "originalPayload": [],
            "value": null,
            "lines": [{"line": 12, "functionIndex": 2}],
        });
        super::to_proto_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "timeUnixNano": "1795487517788208051",
                "samples": [{"values": ["5000000", "7"], "stackIndex": 3}],
                "lines": [{"line": "12", "functionIndex": 2}],
            })
        );
    }
}
