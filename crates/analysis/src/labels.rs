//! Frame labels as the views print them.

use jscope_format::{Frame, FrameKind, MethodId, Recording, StackId, StringId};

/// How frame names carry the kind of their frame. Kernel frames always end in
/// `_[k]` and native frames name their library (`write [libc.so.6]`), whatever
/// the annotation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Annotation {
    /// Plain names: a method run at two tiers is one frame (diffs, sandwich views).
    #[default]
    None,
    /// async-profiler's suffixes, as its collapsed stacks with `--annotate`
    /// write them: `_[0]` interpreted, `_[1]` C1-compiled, `_[j]` compiled (C2,
    /// or a tier not known), `_[i]` inlined, and `_[i]` on class frames (the
    /// receiver above a vtable or itable stub, an allocated class), as
    /// async-profiler's own class frames read. One method run at two tiers is
    /// two frames.
    Tiers,
    /// [`Annotation::Tiers`] with stubs (`_[s]`) and class frames (`_[t]`) told
    /// apart from the rest, as jscope-flame colours them.
    Kinds,
}

impl Annotation {
    /// The suffix a frame of `kind` gets; empty where the label says it already
    /// or the kind has none.
    pub fn suffix(self, kind: FrameKind) -> &'static str {
        match (self, kind) {
            (Annotation::None, _) => "",
            (Annotation::Kinds, FrameKind::Stub) => "_[s]",
            (Annotation::Kinds, FrameKind::Class) => "_[t]",
            (_, kind) => kind_suffix(kind),
        }
    }
}

/// async-profiler's annotation of a frame's kind in collapsed stacks
/// ([`Annotation::Tiers`]); empty where the label says it already (kernel
/// `_[k]`, native `symbol [lib]`), for stubs and markers, and where the tier is
/// unknown.
pub fn kind_suffix(kind: FrameKind) -> &'static str {
    match kind {
        FrameKind::Interpreted => "_[0]",
        FrameKind::C1 => "_[1]",
        FrameKind::Compiled => "_[j]",
        FrameKind::Inlined | FrameKind::Class => "_[i]",
        _ => "",
    }
}

/// Labels frames `pkg.Class.method`, optionally with `:line`.
#[derive(Clone, Copy)]
pub(crate) struct Labeler<'r> {
    pub rec: &'r Recording,
    pub lines: bool,
}

impl Labeler<'_> {
    pub fn frame(&self, f: &Frame) -> String {
        let method = method_label(self.rec, f.method);
        if self.lines && f.line > 0 {
            format!("{method}:{}", f.line)
        } else {
            method
        }
    }

    /// Labels of a stack, root first; a stack without any frame is the one
    /// frame [`NO_STACK`], so its samples are seen rather than left out.
    pub fn root_first(&self, stack: u32) -> Vec<String> {
        self.annotated(stack, Annotation::None)
    }

    /// [`Labeler::root_first`], each frame named with `annotation`'s suffix for
    /// its kind.
    pub fn annotated(&self, stack: u32, annotation: Annotation) -> Vec<String> {
        let frames = self.rec.stack(StackId(stack));
        if frames.is_empty() {
            return vec![NO_STACK.to_string()];
        }
        frames
            .iter()
            .rev()
            .map(|f| self.frame(f) + annotation.suffix(f.kind))
            .collect()
    }
}

/// The frame that stands for a sample whose stack has no frame at all (the
/// walk found none): a profile shows it rather than leaving the sample out.
pub const NO_STACK: &str = "[no_stack]";

/// `pkg.Class.method`, with the run-specific address dropped from lambda
/// classes (`Main$$Lambda$14.0x0000000800c03000` → `Main$$Lambda$14`, JDK 21+
/// `Main$$Lambda/0x…` → `Main$$Lambda`), so the same code has the same label in
/// every recording.
pub fn method_label(rec: &Recording, method: MethodId) -> String {
    let label = rec.method_label(method);
    match hidden_class_suffix(&label) {
        Some(range) => format!("{}{}", &label[..range.start], &label[range.end..]),
        None => label,
    }
}

/// The byte range of a `.0x<hex>` or `/0x<hex>` suffix that follows `$$Lambda`.
fn hidden_class_suffix(label: &str) -> Option<std::ops::Range<usize>> {
    let lambda = label.find("$$Lambda")? + "$$Lambda".len();
    let rest = &label[lambda..];
    let digits = rest
        .bytes()
        .take_while(|b| *b == b'$' || b.is_ascii_digit())
        .count();
    let start = lambda + digits;
    let tail = &label[start..];
    if !(tail.starts_with(".0x") || tail.starts_with("/0x") || tail.starts_with("+0x")) {
        return None;
    }
    let hex = tail[3..].bytes().take_while(u8::is_ascii_hexdigit).count();
    let mut end = start + 3 + hex;
    // JFR names a hidden class `Main$$Lambda$14+0x<address>/<id>` (the `/`
    // becomes `.` as every package separator does): the id is run-specific too.
    if tail.starts_with('+') {
        let rest = &label[end..];
        let id = rest
            .strip_prefix(['.', '/'])
            .map_or(0, |r| r.bytes().take_while(u8::is_ascii_digit).count());
        if id > 0 && label[end + 1 + id..].starts_with('.') {
            end += 1 + id;
        }
    }
    Some(start..end)
}

/// The source position in Java's stack-trace notation: `Foo.java:12`,
/// `Native Method`, or `Unknown Source`.
pub(crate) fn source_position(rec: &Recording, f: &Frame) -> String {
    if f.kind.is_native() {
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
pub fn source_file(rec: &Recording, method: MethodId) -> Option<&str> {
    let c = rec.class(rec.method(method)?.class)?;
    let name = rec.string(c.source_file);
    (c.source_file != StringId::NONE && !name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::hidden_class_suffix;

    fn strip(label: &str) -> String {
        match hidden_class_suffix(label) {
            Some(r) => format!("{}{}", &label[..r.start], &label[r.end..]),
            None => label.to_string(),
        }
    }

    #[test]
    fn lambda_addresses_are_dropped() {
        assert_eq!(
            strip("Main$$Lambda$14.0x0000000800c03000.run"),
            "Main$$Lambda$14.run"
        );
        assert_eq!(
            strip("a.Main$$Lambda/0x00007f047c000a08.run"),
            "a.Main$$Lambda.run"
        );
        assert_eq!(strip("a.Main$$Lambda$3.run"), "a.Main$$Lambda$3.run");
        // JFR's hidden class names, JDK 17 and 21+: address and id both go.
        assert_eq!(
            strip("demo.Shop$$Lambda$88+0x00007fe5d0009800.433287555.run"),
            "demo.Shop$$Lambda$88.run"
        );
        assert_eq!(
            strip("demo.Shop$$Lambda+0x00007fe5d0009800.1234.accept"),
            "demo.Shop$$Lambda.accept"
        );
        assert_eq!(
            strip("demo.Shop$$Lambda$88+0x00007fe5d0009800.run"),
            "demo.Shop$$Lambda$88.run"
        );
        assert_eq!(strip("a.Main.run"), "a.Main.run");
    }
}
