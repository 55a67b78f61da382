//! A writer-side dictionary: declares strings, classes and methods into a
//! [`ChunkWriter`] once each, keyed by name, numbering each kind from 1. For tools
//! and tests that build recordings from names (the agent keeps its own, keyed by
//! JVM ids).

use std::collections::HashMap;

use crate::{ChunkWriter, ClassDef, ClassId, MethodDef, MethodId, StringId};

/// `public`, the modifiers of methods declared by label.
const ACC_PUBLIC: u32 = 0x0001;

#[derive(Debug, Default, Clone)]
pub struct Dictionary {
    strings: HashMap<String, StringId>,
    classes: HashMap<String, ClassId>,
    methods: HashMap<(ClassId, StringId, StringId), MethodId>,
    labels: HashMap<String, MethodId>,
}

impl Dictionary {
    pub fn new() -> Dictionary {
        Dictionary::default()
    }

    /// The id of `s`, declared on first use.
    pub fn string(&mut self, w: &mut ChunkWriter, s: &str) -> StringId {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = StringId(self.strings.len() as u32 + 1);
        w.string(id, s);
        self.strings.insert(s.to_owned(), id);
        id
    }

    /// The id of class `name` (dotted, e.g. `com.acme.Shop$Cart`), declared on first
    /// use with `source_file` (or none).
    pub fn class(&mut self, w: &mut ChunkWriter, name: &str, source_file: Option<&str>) -> ClassId {
        if let Some(&id) = self.classes.get(name) {
            return id;
        }
        let id = ClassId(self.classes.len() as u32 + 1);
        let name_id = self.string(w, name);
        let source_file = source_file.map_or(StringId::NONE, |f| self.string(w, f));
        w.class(&ClassDef {
            id,
            name: name_id,
            source_file,
        });
        self.classes.insert(name.to_owned(), id);
        id
    }

    /// The id of method `name` with JVM `signature` in class `class` (an id of
    /// [`Dictionary::class`]), declared public on first use.
    pub fn method(
        &mut self,
        w: &mut ChunkWriter,
        class: ClassId,
        name: &str,
        signature: &str,
    ) -> MethodId {
        let key = (class, self.string(w, name), self.string(w, signature));
        if let Some(&id) = self.methods.get(&key) {
            return id;
        }
        let id = MethodId(self.methods.len() as u32 + 1);
        w.method(&MethodDef {
            id,
            class,
            name: key.1,
            signature: key.2,
            modifiers: ACC_PUBLIC,
        });
        self.methods.insert(key, id);
        id
    }

    /// The id of the method `label` names: `pkg.Class.method`, signature `()V`,
    /// its class without a source file.
    pub fn method_label(&mut self, w: &mut ChunkWriter, label: &str) -> MethodId {
        self.method_label_with(w, label, |_| None)
    }

    /// As [`Dictionary::method_label`], the class's source file given by `file`
    /// from the class name.
    pub fn method_label_with(
        &mut self,
        w: &mut ChunkWriter,
        label: &str,
        file: impl FnOnce(&str) -> Option<String>,
    ) -> MethodId {
        if let Some(&id) = self.labels.get(label) {
            return id;
        }
        let (class, name) = label.rsplit_once('.').unwrap_or(("", label));
        let source = file(class);
        let class = self.class(w, class, source.as_deref());
        let id = self.method(w, class, name, "()V");
        self.labels.insert(label.to_owned(), id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recording;

    #[test]
    fn names_are_declared_once_and_read_back() {
        let mut w = ChunkWriter::new();
        let mut d = Dictionary::new();
        let main = d.method_label(&mut w, "com.acme.Shop.main");
        assert_eq!(d.method_label(&mut w, "com.acme.Shop.main"), main);
        let pay = d.method_label_with(&mut w, "com.acme.Shop$Cart.pay", |c| {
            Some(format!("{}.java", c.rsplit('.').next().unwrap()))
        });
        let cart = d.class(&mut w, "com.acme.Shop$Cart", None);
        let other = d.method(&mut w, cart, "pay", "(I)V");
        assert_eq!((main.0, pay.0, other.0), (1, 2, 3));
        assert_eq!(d.string(&mut w, "pay"), d.string(&mut w, "pay"));
        let mut file = crate::encode_file_start(&crate::Header::default());
        file.extend(w.finish());
        let r = Recording::from_bytes(&file).unwrap();
        assert_eq!(r.method_label(main), "com.acme.Shop.main");
        assert_eq!(r.method_label(other), "com.acme.Shop$Cart.pay");
        assert_eq!(r.methods.iter().flatten().count(), 3);
        assert_eq!(r.classes.iter().flatten().count(), 2);
    }
}
