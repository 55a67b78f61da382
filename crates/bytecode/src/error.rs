//! The error type for class files that cannot be read at all.

/// Why a class file could not be parsed (or written back). A method the rewriter
/// cannot handle is not an error: it is reported as [`crate::Reason`] and left as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassError {
    #[error("class file ends early at byte {0}")]
    Truncated(usize),
    #[error("bad magic {0:#010x}")]
    BadMagic(u32),
    #[error("unsupported class file version {major}.{minor}")]
    UnsupportedVersion { major: u16, minor: u16 },
    #[error("unknown constant pool tag {tag} at entry {index}")]
    UnknownConstantTag { tag: u8, index: u16 },
    #[error("constant pool entry {0} is missing or of the wrong kind")]
    BadConstantIndex(u16),
    #[error("{0} trailing bytes after the class file")]
    TrailingBytes(usize),
    #[error("attribute {name} is malformed")]
    BadAttribute { name: String },
    #[error("the constant pool is full")]
    ConstantPoolFull,
    #[error("a table has too many entries to be written")]
    TooLarge,
}
