//! The wire protocol between the manager and the nodes: every message type,
//! versioned ([`messages`]; the status answer's paging and summary in
//! [`status`]), and the frame codec ([`codec`]), the only
//! module that knows the byte encoding (bincode 2.0.1, pinned: 3.0.0 is an
//! empty tombstone release and the crate is unmaintained, so nothing else
//! may depend on it directly). Both are re-exported here: callers name
//! `common::protocol::X` whichever half `X` lives in.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of
//! bincode (standard config, variable-length integers). A frame longer than
//! [`MAX_FRAME`] is refused before anything is allocated. The first frame
//! on every connection, in each direction, is a [`Hello`] whose layout
//! never changes (magic, version, role, software), so that peers of any
//! version can tell each other apart; after it, messages are
//! [`NodeMsg`] (node to manager) and [`ManagerMsg`] (manager to node).
//!
//! Decoding works on plain bytes ([`Decoder`] is fed whatever arrived and
//! yields whole frames), apart from any socket, and never panics on
//! malformed input: it returns a [`ProtocolError`] and the caller closes
//! the connection.
//!
//! Times on the wire are *trace seconds* on the manager's trace clock (the
//! node keeps the mapping it was given in [`Welcome`]) except where a field
//! says otherwise.

pub mod codec;
pub mod messages;
pub mod status;

pub use codec::*;
pub use messages::*;
pub use status::*;
