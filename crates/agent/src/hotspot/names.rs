//! Names of the frames the walker leaves that are not Java methods, found on
//! the writer thread: stubs by the JVM's own names for its generated code
//! (JVMTI DynamicCodeGenerated: `jlong_disjoint_arraycopy`, `itable stub`),
//! else their code blob's name; receiver classes by their Klass's name.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::HotSpot;
use crate::frames::{Break, BREAK, RECEIVER, STUB_PC};

/// Code the JVM generated, by start address: (end, name). Filled by the
/// DynamicCodeGenerated callback, read by the writer.
#[derive(Debug, Default)]
pub struct GeneratedCode {
    by_start: Mutex<BTreeMap<usize, (usize, String)>>,
}

impl GeneratedCode {
    /// Notes code `name` at [start, start + len).
    pub fn add(&self, name: &str, start: usize, len: usize) {
        let mut map = self.by_start.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(start, (start + len, name.to_string()));
    }

    /// The name of the generated code holding `pc`.
    pub fn name_of(&self, pc: usize) -> Option<String> {
        let map = self.by_start.lock().unwrap_or_else(|e| e.into_inner());
        let (_, (end, name)) = map.range(..=pc).next_back()?;
        (pc < *end).then(|| name.clone())
    }
}

/// The writer's cache of names of stub, receiver and marker frames.
#[derive(Debug, Default)]
pub struct GeneratedNames {
    stubs: HashMap<usize, String>,
    classes: HashMap<usize, String>,
}

impl GeneratedNames {
    /// The name of the frame (`lineno`, `value`) of a walk; `shared` gives the
    /// generated code's names and the walker's structures.
    pub fn name(
        &mut self,
        source: Option<(&GeneratedCode, &HotSpot)>,
        lineno: i32,
        value: usize,
    ) -> String {
        match lineno {
            STUB_PC => self
                .stubs
                .entry(value)
                .or_insert_with(|| stub_name(source, value))
                .clone(),
            RECEIVER => self
                .classes
                .entry(value)
                .or_insert_with(|| {
                    source
                        .and_then(|(_, hs)| hs.class_name(value))
                        .unwrap_or_else(|| "[unknown_class]".into())
                })
                .clone(),
            BREAK => format!(
                "[{}]",
                Break::from_code(value).map_or("break_unknown", Break::name)
            ),
            _ => "[unknown]".into(),
        }
    }
}

/// A stub's name: the JVM's own for that code, else its blob's.
fn stub_name(source: Option<(&GeneratedCode, &HotSpot)>, pc: usize) -> String {
    let Some((code, hs)) = source else {
        return "[unknown_stub]".into();
    };
    if let Some(name) = code.name_of(pc) {
        return name;
    }
    hs.code
        .find_start(&hs.layout, pc)
        .and_then(|blob| super::code::name(&hs.layout, blob))
        .unwrap_or_else(|| "[unknown_stub]".into())
}
