//! The collector (in progress).
