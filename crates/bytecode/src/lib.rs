//! Class-file parsing, relocation and probe insertion (in progress).
