//! Frame labels as the views print them.

use jscope_format::{Frame, FrameKind, Recording};

/// Labels frames `pkg.Class.method`, optionally with `:line`.
#[derive(Clone, Copy)]
pub(crate) struct Labeler<'r> {
    pub rec: &'r Recording,
    pub lines: bool,
}

impl Labeler<'_> {
    pub fn frame(&self, f: &Frame) -> String {
        if self.lines {
            self.rec.frame_label(f)
        } else {
            self.rec.method_label(f.method)
        }
    }

    /// Labels of a stack, root first.
    pub fn root_first(&self, stack: u32) -> Vec<String> {
        self.rec
            .stack(stack)
            .iter()
            .rev()
            .map(|f| self.frame(f))
            .collect()
    }
}

/// The source position in Java's stack-trace notation: `Foo.java:12`,
/// `Native Method`, or `Unknown Source`.
pub(crate) fn source_position(rec: &Recording, f: &Frame) -> String {
    if f.kind == FrameKind::Native {
        return "Native Method".to_string();
    }
    let file = source_file(rec, f.method);
    match (file, f.line) {
        (Some(file), 0) => file.to_string(),
        (Some(file), line) => format!("{file}:{line}"),
        (None, 0) => "Unknown Source".to_string(),
        (None, line) => format!("Unknown Source:{line}"),
    }
}

/// The class's source file name, if the class was defined with one.
pub(crate) fn source_file(rec: &Recording, method: u32) -> Option<&str> {
    let c = rec.class(rec.method(method)?.class)?;
    let name = rec.string(c.source_file);
    (c.source_file != 0 && !name.is_empty()).then_some(name)
}
