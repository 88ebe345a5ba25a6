//! What the live integration tests share: the real binaries, a free
//! loopback port, a cluster CA.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `libratory` binary under test.
pub fn libratory() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_libratory"))
}

/// `libratory run --spawn-local --config CFG --out OUT`, to add to (an
/// environment variable, pipes) and run.
pub fn run_local(cfg: &std::path::Path, out: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(libratory());
    c.args(["run", "--spawn-local", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(out);
    c
}

/// The `libratory-node` binary beside it (another crate's binary: built by
/// `cargo build --workspace --bins`, which scripts/test.sh runs first).
pub fn node_bin() -> PathBuf {
    let p = libratory().with_file_name("libratory-node");
    assert!(
        p.is_file(),
        "{} is missing: build the workspace binaries first (scripts/test.sh does: cargo build --workspace --bins)",
        p.display()
    );
    p
}

/// A free UDP port on loopback (bound and released; the race with another
/// process taking it in between is harmless on a test machine).
pub fn free_port() -> u16 {
    net::free_udp_port().expect("a free UDP port on loopback")
}

/// A cluster CA, the manager's certificate and node certificates `nodes`
/// (comma-separated names) in `dir`.
pub fn certs(dir: &Path, nodes: &str) {
    let o = Command::new(libratory())
        .args(["certs", "--out"])
        .arg(dir)
        .args(["--nodes", nodes])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
