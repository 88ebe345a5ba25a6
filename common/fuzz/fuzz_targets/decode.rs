//! Fuzz target: whatever bytes a peer sends, the frame decoder and every
//! message decoder return a value or an error, never panic, and never
//! allocate beyond the frame limit. Run with
//! `cd common/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run decode`.
#![no_main]

use common::protocol::{decode_hello, decode_payload, ClientMsg, ClientReply, Decoder, ManagerMsg, NodeMsg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // As a stream of frames, fed in two pieces.
    let mut d = Decoder::new();
    let cut = data.first().map_or(0, |b| *b as usize % (data.len() + 1));
    d.feed(&data[..cut]);
    while let Ok(Some(_)) = d.next::<NodeMsg>("node message") {}
    d.feed(&data[cut..]);
    while let Ok(Some(_)) = d.next::<ManagerMsg>("manager message") {}
    let _ = d.finish();
    // As a single payload of every kind.
    let _ = decode_hello(data);
    let _ = decode_payload::<NodeMsg>("node message", data);
    let _ = decode_payload::<ManagerMsg>("manager message", data);
    let _ = decode_payload::<ClientMsg>("client message", data);
    let _ = decode_payload::<ClientReply>("client reply", data);
});
