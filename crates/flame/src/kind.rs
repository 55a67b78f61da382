//! What kind of code a frame name denotes, and the colour it is drawn in.
//!
//! The rule (also in the README):
//! 1. An annotation suffix `_[j]` (JIT), `_[i]` (inlined), `_[0]` (interpreted),
//!    `_[1]` (C1) or `_[c]` (compiled) is stripped first; `_[k]` means kernel,
//!    `_[n]` native, `_[s]` a stub (code the JVM generated that is not a Java
//!    method: `jlong_disjoint_arraycopy`, `itable stub`) and `_[t]` a class shown
//!    as a frame (the receiver above a vtable or itable stub, an allocated class).
//! 2. Names ending in ` [libjvm.so]` (jscope's label of a native frame in the JVM's
//!    own library) are VM code, async-profiler's "C++" frames.
//! 3. Names starting with `[` (`[unknown]`, `[GC]`, `[vm]`) are VM/internal.
//! 4. Names containing `[native]`, `::` (C++), a shared-object segment such as
//!    `libc.so.6`, or with no `.`/`/` separator at all (plain C symbols) are native.
//! 5. Remaining `package.Class.method` names are Java: `java.`, `javax.`, `jdk.`,
//!    `sun.` and `com.sun.` packages are JDK, everything else application code.
//!
//! Each kind has its own hue band, as async-profiler's: Java greens, JDK blues, native
//! red, VM yellow, kernel orange; stubs lavender and classes pink. Within the Java bands the hue comes from a stable
//! hash of the package so that one package keeps one colour across graphs, and the
//! lightness varies by the full name so neighbours stay apart. The annotation shades
//! a Java frame by how it ran: interpreted pale, C1 lighter, inlined towards aqua,
//! JIT-compiled as it is. The suffix itself is not shown ([`display_name`]).

/// The kind of code a frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// Application (non-JDK) Java code.
    Java,
    /// Java code in the JDK's own packages.
    Jdk,
    /// Native (C/C++) code, including JNI libraries and the JVM itself.
    Native,
    /// Operating-system kernel code.
    Kernel,
    /// Native code of the JVM itself (`libjvm.so`): compilers, GC, runtime.
    Vm,
    /// Bracketed pseudo-frames the VM or profiler reports, such as `[unknown]`.
    Internal,
    /// Code the JVM generated that is not a Java method: a stub, an adapter.
    Stub,
    /// A class shown as a frame: a call's receiver, an allocated class.
    Class,
    /// Frames this crate adds: the root and boxes standing for merged narrow frames.
    Synthetic,
}

/// Suffixes that annotate how a Java frame was executed; they do not change its kind.
const JAVA_SUFFIXES: [&str; 5] = ["_[j]", "_[i]", "_[0]", "_[1]", "_[c]"];

const JDK_PACKAGES: [&str; 5] = ["java.", "javax.", "jdk.", "sun.", "com.sun."];

/// Classifies a frame name by the rule in the module documentation.
pub fn classify(name: &str) -> FrameKind {
    if name.ends_with("_[k]") {
        return FrameKind::Kernel;
    }
    if name.ends_with("_[n]") || name.contains("[native]") {
        return FrameKind::Native;
    }
    if name.ends_with(" [libjvm.so]") {
        return FrameKind::Vm;
    }
    if name.ends_with("_[s]") {
        return FrameKind::Stub;
    }
    if name.ends_with("_[t]") {
        return FrameKind::Class;
    }
    let bare = strip_java_suffix(name);
    if bare.starts_with('[') {
        return FrameKind::Internal;
    }
    match java_package(bare) {
        None => FrameKind::Native,
        Some(package) if is_jdk(&package) => FrameKind::Jdk,
        Some(_) => FrameKind::Java,
    }
}

/// The fill colour of a frame, as `#rrggbb`.
pub fn colour(name: &str, kind: FrameKind) -> String {
    let bare = strip_java_suffix(name);
    let vary = (fnv1a(bare) % 1000) as f64 / 1000.0;
    let (hue, saturation, lightness) = match kind {
        FrameKind::Java | FrameKind::Jdk => {
            let (h, s, l) = java_hsl(bare, kind, vary);
            match tier(name) {
                Some(Tier::Interpreted) => (h, s * 0.55, l + 0.16),
                Some(Tier::C1) => (h, s * 0.8, l + 0.06),
                Some(Tier::Inlined) => (h + 18.0, s, l + 0.08),
                _ => (h, s, l),
            }
        }
        FrameKind::Native => (2.0 + 14.0 * vary, 0.70, 0.64),
        FrameKind::Kernel => (28.0 + 10.0 * vary, 0.85, 0.58),
        FrameKind::Vm => (60.0 + 8.0 * vary, 0.58, 0.50),
        FrameKind::Internal => (52.0 + 6.0 * vary, 0.75, 0.55),
        FrameKind::Stub => (272.0 + 8.0 * vary, 0.50, 0.74),
        FrameKind::Class => (328.0 + 10.0 * vary, 0.60, 0.74),
        FrameKind::Synthetic => (0.0, 0.0, 0.78),
    };
    hsl_to_hex(hue, saturation, lightness.min(0.9))
}

/// How an annotated Java frame ran.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tier {
    Interpreted,
    C1,
    Compiled,
    Inlined,
}

fn tier(name: &str) -> Option<Tier> {
    let suffix = name.get(name.len().checked_sub(4)?..)?;
    Some(match suffix {
        "_[0]" => Tier::Interpreted,
        "_[1]" => Tier::C1,
        "_[j]" | "_[c]" => Tier::Compiled,
        "_[i]" => Tier::Inlined,
        _ => return None,
    })
}

/// The name as a frame box shows it: without a Java tier annotation (`_[j]`, `_[i]`,
/// `_[0]`, `_[1]`, `_[c]`) or a stub's or class's (`_[s]`, `_[t]`), which its
/// colour shows instead. Kernel `_[k]` stays.
pub fn display_name(name: &str) -> &str {
    let name = strip_java_suffix(name);
    name.strip_suffix("_[s]")
        .or_else(|| name.strip_suffix("_[t]"))
        .unwrap_or(name)
}

/// Java hues: application packages spread over greens, JDK packages over blues.
fn java_hsl(bare: &str, kind: FrameKind, vary: f64) -> (f64, f64, f64) {
    let package = java_package(bare).unwrap_or_default();
    let spread = (fnv1a(&package) % 1000) as f64 / 1000.0;
    let lightness = 0.50 + 0.14 * vary;
    match kind {
        FrameKind::Jdk => (188.0 + 34.0 * spread, 0.60, lightness + 0.06),
        _ => (75.0 + 85.0 * spread, 0.55, lightness),
    }
}

fn strip_java_suffix(name: &str) -> &str {
    JAVA_SUFFIXES
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

fn is_jdk(package: &str) -> bool {
    let dotted = format!("{package}.");
    JDK_PACKAGES.iter().any(|p| dotted.starts_with(p))
}

/// The package of a Java `package.Class.method` name (empty for the default
/// package), or `None` when the name does not look like Java.
///
/// Slashes count as dots because some profilers print internal class names;
/// the package is the run of leading lowercase segments, which also keeps
/// hidden-class suffixes such as `Foo$$Lambda$14/0x0000000800c0b448` out of it.
fn java_package(name: &str) -> Option<String> {
    let name = name.split('(').next().unwrap_or(name).trim_end();
    if name.contains("::") || !name.contains(['.', '/']) {
        return None;
    }
    let segments: Vec<&str> = name.split(['.', '/']).collect();
    if segments[0].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if !segments.iter().all(|s| is_java_segment(s))
        || segments.iter().any(|s| is_library_segment(s))
    {
        return None;
    }
    let package: Vec<&str> = segments[..segments.len() - 1]
        .iter()
        .take_while(|s| s.starts_with(|c: char| c.is_lowercase()))
        .copied()
        .collect();
    Some(package.join("."))
}

fn is_java_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let ident = |c: char| c.is_alphanumeric() || matches!(c, '_' | '$' | '<' | '>');
    ident(first) && chars.all(ident)
}

/// Shared-object names like `libjvm.so` or `libc.so.6` would otherwise pass as Java.
fn is_library_segment(segment: &str) -> bool {
    matches!(segment, "so" | "dll" | "dylib")
}

/// FNV-1a: a hash that is stable across runs and platforms, unlike `DefaultHasher`.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Converts HSL (hue in degrees, saturation and lightness in 0..=1) to `#rrggbb`.
fn hsl_to_hex(hue: f64, saturation: f64, lightness: f64) -> String {
    let chroma = (1.0 - (2.0 * lightness - 1.0).abs()) * saturation;
    let sector = (hue / 60.0) % 6.0;
    let x = chroma * (1.0 - (sector % 2.0 - 1.0).abs());
    let (r, g, b) = match sector as u32 {
        0 => (chroma, x, 0.0),
        1 => (x, chroma, 0.0),
        2 => (0.0, chroma, x),
        3 => (0.0, x, chroma),
        4 => (x, 0.0, chroma),
        _ => (chroma, 0.0, x),
    };
    let m = lightness - chroma / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hsl_primaries_convert_exactly() {
        assert_eq!(hsl_to_hex(0.0, 1.0, 0.5), "#ff0000");
        assert_eq!(hsl_to_hex(120.0, 1.0, 0.5), "#00ff00");
        assert_eq!(hsl_to_hex(240.0, 1.0, 0.5), "#0000ff");
        assert_eq!(hsl_to_hex(0.0, 0.0, 1.0), "#ffffff");
    }

    #[test]
    fn package_is_the_leading_lowercase_segments() {
        assert_eq!(
            java_package("com.example.Foo.bar").as_deref(),
            Some("com.example")
        );
        assert_eq!(
            java_package("java/lang/String.indexOf").as_deref(),
            Some("java.lang")
        );
        assert_eq!(
            java_package("com.x.Bar$$Lambda$14/0x0000000800c0b448.run").as_deref(),
            Some("com.x")
        );
        assert_eq!(java_package("Main.main").as_deref(), Some(""));
        assert_eq!(java_package("libjvm.so"), None);
    }
}
