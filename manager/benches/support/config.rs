//! The configuration a live bench gives its serving manager. In a file of
//! its own so that the suite, which runs no bench, checks it as
//! `libratory config check` does (`manager/tests/bench_configs.rs`): a
//! bench whose manager refuses its configuration fails only when run.

use std::net::SocketAddr;

/// A node process the bench starts itself, declared as a host of one
/// process (a run's configuration declares its cluster, and the manager
/// waits for its nodes before the replay).
pub struct Proc<'a> {
    pub name: &'a str,
    pub nodes: usize,
    pub capacity: f64,
}

/// A `run --serve` configuration: the manager on `listen` with the
/// certificates in `certs` (relative to the file, or absolute), one job of
/// the `libra` preset under `policy` with `set` (inline TOML pairs, e.g.
/// `jobs = 1, placement = "best-fit"`), and the node processes `procs`.
pub fn serving(listen: SocketAddr, certs: &str, policy: &str, set: &str, procs: &[Proc]) -> String {
    let mut s = format!(
        "[manager]\nlisten = \"{listen}\"\ncerts = {}\ntime_scale = 1.0\nstart_timeout_s = 30\n\
         [workload]\npreset = \"libra\"\npolicy = \"{policy}\"\nset = {{ {set} }}\n",
        toml_string(certs)
    );
    for p in procs {
        s += &format!(
            "[[hosts]]\nname = \"{}\"\nnodes_per_process = {}\ncapacity = {}\n",
            p.name, p.nodes, p.capacity
        );
    }
    s
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
