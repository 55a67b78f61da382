//! Values read by walking the metadata: primitives, strings, structs, arrays and
//! constant pool references, and the pools they refer to.

use std::cell::Cell;

use crate::cursor::{Cursor, JString};
use crate::metadata::{Field, IdMap, Layout, Metadata, Unit};
use crate::JfrError;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A key into the constant pool of the type `class`.
    Ref {
        class: i64,
        key: i64,
    },
    Object {
        class: i64,
        fields: Vec<Value>,
    },
    Array(Vec<Value>),
}

/// Structs nested deeper than this are corrupt metadata, not data.
const MAX_DEPTH: u32 = 32;

/// The id of `java.lang.String`, whose pool inline strings of kind 2 refer to.
pub(crate) struct Reader<'m> {
    pub meta: &'m Metadata,
    string_class: i64,
    /// Values still allowed in the current event. A struct without fields takes no
    /// bytes, so arrays of them nested in arrays could otherwise make a few corrupt
    /// bytes stand for billions of values.
    budget: Cell<usize>,
}

impl<'m> Reader<'m> {
    pub(crate) fn new(meta: &'m Metadata) -> Self {
        Reader {
            meta,
            string_class: meta.id_of("java.lang.String").unwrap_or(-1),
            budget: Cell::new(0),
        }
    }

    /// Starts an event of `bytes` bytes: it may hold a few values per byte.
    pub(crate) fn begin(&self, bytes: usize) {
        self.budget.set(bytes.saturating_mul(4).saturating_add(64));
    }

    /// A value of type `class` written in full (not as a pool key).
    pub(crate) fn value(&self, c: &mut Cursor, class: i64, depth: u32) -> Result<Value, JfrError> {
        if depth > MAX_DEPTH {
            return Err(JfrError::Malformed("values nest too deep".into()));
        }
        let left = self.budget.get();
        if left == 0 {
            return Err(JfrError::Malformed(
                "more values than its bytes can hold".into(),
            ));
        }
        self.budget.set(left - 1);
        let ty = self
            .meta
            .classes
            .get(&class)
            .ok_or_else(|| JfrError::Malformed(format!("unknown type id {class}")))?;
        Ok(match ty.layout {
            Layout::Boolean => Value::Bool(c.u8()? != 0),
            Layout::Byte => Value::Int(i64::from(c.u8()? as i8)),
            Layout::Short => Value::Int(c.short()?),
            Layout::Int => Value::Int(c.int()?),
            Layout::Long => Value::Int(c.long()?),
            Layout::Float => Value::Float(c.f32()?),
            Layout::Double => Value::Float(c.f64()?),
            Layout::String => match c.string()? {
                JString::Null => Value::Null,
                JString::Inline(s) => Value::Str(s),
                JString::Pool(key) => Value::Ref {
                    class: self.string_class,
                    key,
                },
            },
            Layout::Struct => {
                let mut fields = Vec::with_capacity(ty.fields.len());
                for f in &ty.fields {
                    fields.push(self.field(c, f, depth + 1)?);
                }
                Value::Object { class, fields }
            }
        })
    }

    fn field(&self, c: &mut Cursor, f: &Field, depth: u32) -> Result<Value, JfrError> {
        if !f.array {
            return self.single(c, f, depth);
        }
        let n = c.count()?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.single(c, f, depth)?);
        }
        Ok(Value::Array(items))
    }

    fn single(&self, c: &mut Cursor, f: &Field, depth: u32) -> Result<Value, JfrError> {
        if f.cpool {
            Ok(Value::Ref {
                class: f.type_id,
                key: c.long()?,
            })
        } else {
            self.value(c, f.type_id, depth)
        }
    }
}

/// The constant pools of one chunk: type id -> key -> value.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    pools: IdMap<IdMap<Value>>,
}

/// Reference chains longer than this are corrupt (a pool entry referring to itself).
const MAX_HOPS: u32 = 8;

impl Pools {
    pub(crate) fn insert(&mut self, class: i64, key: i64, v: Value) {
        self.pools.entry(class).or_default().insert(key, v);
    }

    /// Follows pool references to the value they stand for; `Null` when missing.
    pub(crate) fn resolve<'v>(&'v self, mut v: &'v Value) -> &'v Value {
        for _ in 0..MAX_HOPS {
            match v {
                Value::Ref { class, key } => match self.pools.get(class).and_then(|p| p.get(key)) {
                    Some(next) => v = next,
                    None => return &Value::Null,
                },
                _ => return v,
            }
        }
        &Value::Null
    }
}

/// A chunk's types and pools, for reading fields of decoded values by name.
pub(crate) struct View<'a> {
    pub meta: &'a Metadata,
    pub pools: &'a Pools,
    /// Converts chunk ticks to epoch nanoseconds and tick spans to nanoseconds.
    pub clock: Clock,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub start_nanos: i64,
    pub start_ticks: i64,
    pub ticks_per_second: i64,
}

impl Clock {
    pub(crate) fn span_ns(&self, ticks: i64) -> u64 {
        let tps = self.ticks_per_second.max(1) as i128;
        (i128::from(ticks) * 1_000_000_000 / tps).clamp(0, i128::from(i64::MAX)) as u64
    }

    pub(crate) fn epoch_ns(&self, ticks: i64) -> u64 {
        let tps = self.ticks_per_second.max(1) as i128;
        let rel = (i128::from(ticks) - i128::from(self.start_ticks)) * 1_000_000_000 / tps;
        (i128::from(self.start_nanos) + rel).clamp(0, i128::from(i64::MAX)) as u64
    }
}

impl<'a> View<'a> {
    /// Field `name` of a struct (after resolving `v`), itself resolved.
    pub(crate) fn get(&self, v: &'a Value, name: &str) -> &'a Value {
        self.get_with_unit(v, name).0
    }

    fn get_with_unit(&self, v: &'a Value, name: &str) -> (&'a Value, Unit) {
        let Value::Object { class, fields } = self.pools.resolve(v) else {
            return (&Value::Null, Unit::None);
        };
        let Some(ty) = self.meta.classes.get(class) else {
            return (&Value::Null, Unit::None);
        };
        match ty.field_index(name).and_then(|i| Some((fields.get(i)?, i))) {
            Some((f, i)) => (self.pools.resolve(f), ty.fields[i].unit),
            None => (&Value::Null, Unit::None),
        }
    }

    /// Field `name` of a struct as written: a pool reference stays a reference,
    /// so callers can remember what they made of its key.
    pub(crate) fn raw(&self, v: &'a Value, name: &str) -> &'a Value {
        let Value::Object { class, fields } = self.pools.resolve(v) else {
            return &Value::Null;
        };
        self.meta
            .classes
            .get(class)
            .and_then(|ty| ty.field_index(name))
            .and_then(|i| fields.get(i))
            .unwrap_or(&Value::Null)
    }

    pub(crate) fn int(&self, v: &'a Value, name: &str) -> Option<i64> {
        match self.get(v, name) {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            Value::Float(f) => Some(*f as i64),
            _ => None,
        }
    }

    pub(crate) fn bool(&self, v: &'a Value, name: &str) -> bool {
        self.int(v, name).is_some_and(|i| i != 0)
    }

    /// A string field; symbols and other one-field wrappers are unwrapped.
    pub(crate) fn string(&self, v: &'a Value, name: &str) -> Option<String> {
        self.as_string(self.get(v, name))
    }

    pub(crate) fn as_string(&self, v: &'a Value) -> Option<String> {
        match self.pools.resolve(v) {
            Value::Str(s) => Some(s.clone()),
            Value::Object { fields, .. } if fields.len() == 1 => self.as_string(&fields[0]),
            _ => None,
        }
    }

    /// A time span field in nanoseconds, by its annotation's unit (ticks when none).
    pub(crate) fn span_ns(&self, v: &'a Value, name: &str) -> Option<u64> {
        let (val, unit) = self.get_with_unit(v, name);
        let Value::Int(n) = *val else { return None };
        Some(match unit {
            Unit::Nanos => n.max(0) as u64,
            Unit::Millis => (n.max(0) as u64).saturating_mul(1_000_000),
            Unit::Ticks | Unit::None => self.clock.span_ns(n),
        })
    }

    /// A timestamp field in epoch nanoseconds.
    pub(crate) fn time_ns(&self, v: &'a Value, name: &str) -> Option<u64> {
        let (val, unit) = self.get_with_unit(v, name);
        let Value::Int(n) = *val else { return None };
        Some(match unit {
            Unit::Millis => (n.max(0) as u64).saturating_mul(1_000_000),
            Unit::Nanos => n.max(0) as u64,
            Unit::Ticks | Unit::None => self.clock.epoch_ns(n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{Class, Field};

    fn class(name: &str, fields: Vec<Field>) -> Class {
        Class {
            name: name.into(),
            fields,
            ..Default::default()
        }
    }

    fn array_of(type_id: i64) -> Field {
        Field {
            name: "items".into(),
            type_id,
            array: true,
            ..Default::default()
        }
    }

    #[test]
    fn arrays_of_empty_structs_cannot_make_more_values_than_bytes_allow() {
        let mut meta = Metadata::default();
        meta.classes.insert(10, class("Outer", vec![array_of(11)]));
        meta.classes.insert(11, class("Inner", vec![array_of(12)]));
        meta.classes.insert(12, class("Empty", vec![]));
        // 100 inner arrays of 99, 98, ... empty structs (each count fits in the
        // bytes left): 5,051 values from 101 bytes.
        let mut bytes = vec![100u8];
        bytes.extend((0..100u8).map(|i| 99 - i));
        let r = Reader::new(&meta);
        r.begin(bytes.len());
        let e = r.value(&mut Cursor::new(&bytes, true), 10, 0).unwrap_err();
        assert!(e.to_string().contains("more values than"), "{e}");
        // Within the budget, the same shape reads.
        let small = [3u8, 2, 1, 0];
        r.begin(small.len());
        let v = r.value(&mut Cursor::new(&small, true), 10, 0).unwrap();
        let Value::Object { fields, .. } = v else {
            panic!("{v:?}")
        };
        assert!(matches!(&fields[0], Value::Array(items) if items.len() == 3));
    }
}
