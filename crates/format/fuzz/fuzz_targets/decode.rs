//! Feeds arbitrary bytes to the recording reader, both as a whole file and as a
//! chunk stream: it must never panic, hang or allocate without bound.
#![no_main]

use jscope_format::{decode_payload, split_chunk, Recording, Split};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Recording::from_bytes(data);
    if let Ok(Split::Chunk(c)) = split_chunk(data, 0) {
        let _ = decode_payload(&c.payload);
    }
    let _ = decode_payload(data);
});
