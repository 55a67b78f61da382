//! The metadata event: every type a chunk uses, with its fields in the order their
//! values are written. Events, constant pool entries and nested structs are all
//! read by walking these descriptions.

use std::collections::HashMap;

use crate::cursor::{Cursor, JString};
use crate::JfrError;

/// How a numeric field's value is to be read as time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Unit {
    #[default]
    None,
    Ticks,
    Nanos,
    Millis,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Field {
    pub name: String,
    pub type_id: i64,
    /// The value is a key into the constant pool of `type_id`.
    pub cpool: bool,
    pub array: bool,
    pub unit: Unit,
}

/// How a value of a type is written, decided once from the type's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Layout {
    Boolean,
    Byte,
    /// `short` and `char`.
    Short,
    Int,
    Long,
    Float,
    Double,
    String,
    /// Its fields, in order.
    #[default]
    Struct,
}

impl Layout {
    fn of(name: &str) -> Layout {
        match name {
            "boolean" => Layout::Boolean,
            "byte" => Layout::Byte,
            "short" | "char" => Layout::Short,
            "int" => Layout::Int,
            "long" => Layout::Long,
            "float" => Layout::Float,
            "double" => Layout::Double,
            "java.lang.String" => Layout::String,
            _ => Layout::Struct,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Class {
    pub name: String,
    /// Its `jdk.jfr.Label` (a user event's name as it was registered).
    pub label: Option<String>,
    pub layout: Layout,
    pub fields: Vec<Field>,
}

impl Class {
    pub(crate) fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// The types of one chunk, by id.
#[derive(Debug, Default)]
pub(crate) struct Metadata {
    pub classes: IdMap<Class>,
}

impl Metadata {
    pub(crate) fn id_of(&self, name: &str) -> Option<i64> {
        self.classes
            .iter()
            .find(|(_, c)| c.name == name)
            .map(|(&id, _)| id)
    }
}

/// One element of the metadata tree (`class`, `field`, `annotation`, ...).
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the body of a metadata event (after its size and type id).
pub(crate) fn read_metadata(c: &mut Cursor) -> Result<Metadata, JfrError> {
    let _start = c.long()?;
    let _duration = c.long()?;
    let _id = c.long()?;
    let n = c.count()?;
    let mut strings = Vec::with_capacity(n);
    for _ in 0..n {
        strings.push(match c.string()? {
            JString::Inline(s) => s,
            _ => String::new(),
        });
    }
    let root = read_element(c, &strings, 0)?;
    let mut meta = Metadata::default();
    let all: Vec<&Element> = root
        .children
        .iter()
        .filter(|e| e.name == "metadata")
        .flat_map(|m| m.children.iter())
        .filter(|e| e.name == "class")
        .collect();
    let names: HashMap<i64, &str> = all
        .iter()
        .filter_map(|e| Some((e.attr("id")?.parse().ok()?, e.attr("name")?)))
        .collect();
    for e in all {
        if let Some(id) = e.attr("id").and_then(|v| v.parse().ok()) {
            meta.classes.insert(id, class_of(e, &names));
        }
    }
    Ok(meta)
}

fn read_element(c: &mut Cursor, strings: &[String], depth: u32) -> Result<Element, JfrError> {
    if depth > 16 {
        return Err(JfrError::Malformed("metadata nests too deep".into()));
    }
    let name = s_at(c, strings)?;
    let n = c.count()?;
    let mut attributes = Vec::with_capacity(n);
    for _ in 0..n {
        let k = s_at(c, strings)?;
        let v = s_at(c, strings)?;
        attributes.push((k, v));
    }
    let n = c.count()?;
    let mut children = Vec::with_capacity(n);
    for _ in 0..n {
        children.push(read_element(c, strings, depth + 1)?);
    }
    Ok(Element {
        name,
        attributes,
        children,
    })
}

fn s_at(c: &mut Cursor, strings: &[String]) -> Result<String, JfrError> {
    let i = c.int()?;
    usize::try_from(i)
        .ok()
        .and_then(|i| strings.get(i))
        .cloned()
        .ok_or_else(|| JfrError::Malformed(format!("metadata string {i} out of range")))
}

fn class_of(e: &Element, names: &HashMap<i64, &str>) -> Class {
    let fields = e
        .children
        .iter()
        .filter(|f| f.name == "field")
        .map(|f| Field {
            name: f.attr("name").unwrap_or_default().to_string(),
            type_id: f.attr("class").and_then(|v| v.parse().ok()).unwrap_or(-1),
            cpool: f.attr("constantPool") == Some("true"),
            array: f.attr("dimension") == Some("1"),
            unit: unit_of(f, names),
        })
        .collect();
    let name = e.attr("name").unwrap_or_default().to_string();
    Class {
        layout: Layout::of(&name),
        name,
        label: label_of(e, names),
        fields,
    }
}

/// The value of an element's `jdk.jfr.Label` annotation.
fn label_of(e: &Element, names: &HashMap<i64, &str>) -> Option<String> {
    e.children
        .iter()
        .filter(|a| a.name == "annotation")
        .find(|a| annotation_class(a, names) == Some("jdk.jfr.Label"))
        .and_then(|a| a.attr("value"))
        .map(str::to_string)
}

fn annotation_class<'n>(a: &Element, names: &HashMap<i64, &'n str>) -> Option<&'n str> {
    a.attr("class")
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|id| names.get(&id).copied())
}

/// The time unit a field's `@Timespan` or `@Timestamp` annotation names.
fn unit_of(field: &Element, names: &HashMap<i64, &str>) -> Unit {
    for a in field.children.iter().filter(|a| a.name == "annotation") {
        let class = annotation_class(a, names);
        if !matches!(class, Some("jdk.jfr.Timespan" | "jdk.jfr.Timestamp")) {
            continue;
        }
        return match a.attr("value") {
            Some("TICKS") => Unit::Ticks,
            Some("NANOSECONDS") => Unit::Nanos,
            Some("MILLISECONDS" | "MILLISECONDS_SINCE_EPOCH") => Unit::Millis,
            _ => Unit::None,
        };
    }
    Unit::None
}

/// Hashes an integer key by one multiplication: pool keys and type ids are
/// trusted-enough small integers, and SipHash was the reader's largest cost.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_i64(&mut self, v: i64) {
        self.0 = (self.0 ^ v as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

/// A map keyed by type id or pool key.
pub(crate) type IdMap<V> =
    std::collections::HashMap<i64, V, std::hash::BuildHasherDefault<IdHasher>>;
