//! What the live benches share: a serving manager's configuration and a
//! client connection to it.

pub mod config;

use std::net::SocketAddr;
use std::path::Path;

use common::protocol::{Hello, Role};
use net::{FramedStream, Timeouts};

/// A client endpoint, its connection to the manager at `addr` (with the
/// client certificate in `certs`) and one handshaken stream.
pub async fn client(
    addr: SocketAddr,
    certs: &Path,
) -> (quinn::Endpoint, quinn::Connection, FramedStream) {
    let ep = net::client_endpoint(
        "127.0.0.1:0".parse().unwrap(),
        certs,
        net::CLIENT_NAME,
        Timeouts::default(),
    )
    .unwrap();
    let c = net::connect(&ep, addr).await.unwrap();
    let mut s = FramedStream::open(&c).await.unwrap();
    s.handshake(&Hello::new(Role::Client, "bench"))
        .await
        .unwrap();
    (ep, c, s)
}
