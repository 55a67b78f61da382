//! Probe ids: each instrumented method gets a dense index the first time a class
//! declaring it is instrumented, kept for the life of the process (retransformed
//! code keeps its ids), with the names the writer needs for its MethodDef.

use std::collections::HashMap;

use crate::jvm::MethodNames;

/// What the writer needs to name a probe id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeMethod {
    /// Internal class name (`java/util/ArrayList`).
    pub class: String,
    pub name: String,
    pub descriptor: String,
    pub access: u16,
    pub source_file: Option<String>,
}

impl ProbeMethod {
    pub fn names(&self) -> MethodNames {
        MethodNames {
            name: self.name.clone(),
            signature: self.descriptor.clone(),
            modifiers: self.access.into(),
            native: false,
            class_signature: format!("L{};", self.class),
            source_file: self.source_file.clone(),
            lines: Vec::new(),
        }
    }
}

/// Probe indexes of the process (instrumented code keeps its indexes across
/// sessions); kept in the trace engine's state, `super::TRACING`.
#[derive(Default)]
pub(super) struct Registry {
    ids: HashMap<(String, String, String), u32>,
    /// Index i holds probe index i + 1.
    methods: Vec<ProbeMethod>,
}

fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut guard = super::TRACING
        .registry
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Registry::default))
}

/// The probe index of a method, assigned on first use (from 1).
pub fn index_of(method: ProbeMethod) -> u32 {
    with(|r| {
        let key = (
            method.class.clone(),
            method.name.clone(),
            method.descriptor.clone(),
        );
        if let Some(&id) = r.ids.get(&key) {
            return id;
        }
        r.methods.push(method);
        let id = r.methods.len() as u32;
        r.ids.insert(key, id);
        id
    })
}

/// The method behind a probe index.
pub fn method(index: u32) -> Option<ProbeMethod> {
    with(|r| r.methods.get((index as usize).checked_sub(1)?).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(class: &str, name: &str) -> ProbeMethod {
        ProbeMethod {
            class: class.into(),
            name: name.into(),
            descriptor: "()V".into(),
            access: 1,
            source_file: Some("X.java".into()),
        }
    }

    #[test]
    fn indexes_are_stable_and_name_their_method() {
        let a = index_of(m("test/RegA", "run"));
        let b = index_of(m("test/RegA", "stop"));
        assert_ne!(a, b);
        assert_eq!(index_of(m("test/RegA", "run")), a);
        let names = method(b).unwrap().names();
        assert_eq!(names.class_signature, "Ltest/RegA;");
        assert_eq!(names.name, "stop");
        assert!(method(0).is_none());
    }
}
