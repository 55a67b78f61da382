//! What one frame slot of a raw sample holds ([`CallFrame`]: a 32-bit tag in
//! `lineno`, a word in `method`), as the signal handler's walkers write it and
//! the writer reads it back. AsyncGetCallTrace writes Java frames as
//! (bytecode index, jmethodID); everything else is told by a tag no bytecode
//! index can take.

pub use crate::ring::CallFrame;

/// A native frame: `method` holds its program counter.
pub const NATIVE_PC: i32 = i32::MIN;
/// A kernel frame: `method` holds its address.
pub const KERNEL_PC: i32 = i32::MIN + 1;
/// A native frame found between Java frames by the AsyncGetCallTrace walk's
/// stack search (see `native::walk::walk_mixed`): `method` holds its program
/// counter. Such frames come after the top native frames, before the Java
/// frames, in segments each followed by a [`SEGMENT_END`] frame; the writer
/// places each segment above the Java native method it belongs to.
pub const BETWEEN_PC: i32 = i32::MIN + 2;
/// The frame closing a segment of [`BETWEEN_PC`] frames.
pub const SEGMENT_END: i32 = i32::MIN + 3;
/// Code the JVM generated that is not a Java method (a stub, an adapter, a
/// runtime stub): `method` holds its program counter; the writer names it.
pub const STUB_PC: i32 = i32::MIN + 4;
/// The class of the receiver of a megamorphic call, above its vtable or
/// itable stub: `method` holds the Klass*.
pub const RECEIVER: i32 = i32::MIN + 5;
/// Why a walk stopped before the bottom of the stack: `method` holds a
/// [`Break`] code.
pub const BREAK: i32 = i32::MIN + 6;

/// Java frames the VM structure walker found carry their type:
/// `lineno = TYPED + (type << 24) + (bci + BCI_BIAS)`.
const TYPED: i32 = 0x4000_0000;
const BCI_BIAS: i32 = 16;

/// How a Java frame ran, as the VM structure walker saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum JavaType {
    Interpreted = 0,
    C1 = 1,
    /// Compiled by C2 (or a tier the walker does not tell apart).
    C2 = 2,
    /// Inlined into the compiled frame below it.
    Inlined = 3,
    /// A Java `native` method.
    Native = 4,
    /// The method a compiler thread is compiling.
    CompileTask = 5,
}

impl JavaType {
    fn from_u8(v: u8) -> Option<JavaType> {
        Some(match v {
            0 => JavaType::Interpreted,
            1 => JavaType::C1,
            2 => JavaType::C2,
            3 => JavaType::Inlined,
            4 => JavaType::Native,
            5 => JavaType::CompileTask,
            _ => return None,
        })
    }
}

/// The `lineno` of a typed Java frame at bytecode index `bci` (-3..=65535).
pub const fn typed(kind: JavaType, bci: i32) -> i32 {
    TYPED + ((kind as i32) << 24) + (bci + BCI_BIAS)
}

/// The type and bytecode index of a typed Java frame's `lineno`; None for
/// any other slot (an AsyncGetCallTrace frame, a tag).
pub fn untyped(lineno: i32) -> Option<(JavaType, i32)> {
    if lineno < TYPED {
        return None;
    }
    let v = lineno - TYPED;
    Some((
        JavaType::from_u8((v >> 24) as u8)?,
        (v & 0xFF_FFFF) - BCI_BIAS,
    ))
}

/// Why a walk stopped before the bottom of the stack: the marker frame
/// `[name]` it leaves, and the counter `walk.break.name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Break {
    /// A frame's registers led outside the thread's stack, or did not move up.
    StackRange = 0,
    /// A program counter in the code cache that no code blob holds.
    UnknownNmethod = 1,
    /// A compiled frame that could not be unwound (in its prologue or epilogue
    /// in a way not recognised, or its frame size is not known).
    Compiled = 2,
    /// An interpreted frame without a valid Method* or bytecode pointer.
    Interpreted = 3,
    /// A frame being deoptimized.
    Deopt = 4,
    /// An entry frame whose JavaCallWrapper could not be read.
    EntryFrame = 5,
    /// A stub or adapter the walker cannot step over.
    UnknownStub = 6,
    /// Native code between the signal and the Java frames that could not be
    /// unwound, with no last Java frame recorded to go on from.
    Native = 7,
    /// A Java thread running Java code whose frames could not be found.
    NoJavaFrame = 8,
    /// Memory the walk needed could not be read.
    NotWalkable = 9,
}

impl Break {
    /// Every reason, in code order.
    pub const ALL: [Break; 10] = [
        Break::StackRange,
        Break::UnknownNmethod,
        Break::Compiled,
        Break::Interpreted,
        Break::Deopt,
        Break::EntryFrame,
        Break::UnknownStub,
        Break::Native,
        Break::NoJavaFrame,
        Break::NotWalkable,
    ];

    /// The marker frame's name, without brackets.
    pub fn name(self) -> &'static str {
        match self {
            Break::StackRange => "break_stack_range",
            Break::UnknownNmethod => "unknown_nmethod",
            Break::Compiled => "break_compiled",
            Break::Interpreted => "break_interpreted",
            Break::Deopt => "break_deopt",
            Break::EntryFrame => "break_entry_frame",
            Break::UnknownStub => "unknown_stub",
            Break::Native => "break_native",
            Break::NoJavaFrame => "no_java_frame",
            Break::NotWalkable => "break_not_walkable",
        }
    }

    pub fn from_code(code: usize) -> Option<Break> {
        Break::ALL.get(code).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_frames_round_trip_and_stay_clear_of_the_tags() {
        for kind in [
            JavaType::Interpreted,
            JavaType::C1,
            JavaType::C2,
            JavaType::Inlined,
            JavaType::Native,
            JavaType::CompileTask,
        ] {
            for bci in [-3, -1, 0, 17, 65535] {
                let lineno = typed(kind, bci);
                assert!(lineno > 65535, "not a bytecode index");
                assert_eq!(untyped(lineno), Some((kind, bci)));
            }
        }
        assert_eq!(untyped(12), None);
        assert_eq!(untyped(-3), None);
        assert_eq!(untyped(NATIVE_PC), None);
        assert_eq!(untyped(BREAK), None);
    }
}
