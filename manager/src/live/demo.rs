//! `libratory demo`: certificates made once, the built-in configuration,
//! local node processes, one live run.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Result;

use crate::batsim::BatsimArgs;
use crate::cluster::config::ClusterConfig;
use crate::environment::Environment;
use crate::live::progress::Progress;
use crate::live::run::{self, RunExtras};

/// `libratory demo`: certificates in `out/certs` (made once), the built-in
/// configuration, local node processes.
// The demo's options one by one, as `main` parses them.
#[allow(clippy::too_many_arguments)]
pub fn demo(
    processes: usize,
    nodes: usize,
    jobs: usize,
    port: u16,
    out: &Path,
    http: Option<crate::live::liveview::ViewAddr>,
    faults: Option<&Path>,
    policy: &str,
    batsim: &BatsimArgs,
    env: &Environment,
) -> Result<()> {
    let certs = out.join("certs");
    if !certs.join("ca.key").exists() {
        crate::live::certs::certs(&certs, &["local".to_string()], &[], false)?;
    } else if !certs.join(format!("{}.pem", net::OPERATOR_NAME)).exists() {
        // Made before the operator identity: the fault injector needs it.
        net::add_node_certs(&certs, &[])?;
    }
    let mut cfg = demo_config(
        &std::fs::canonicalize(&certs)?,
        port,
        processes,
        nodes,
        jobs,
    );
    common::policy::entry(policy)?;
    cfg.workload.policy = policy.to_string();
    let progress = Progress::choose(None, std::io::stderr().is_terminal())?;
    let extras = RunExtras {
        http,
        faults,
        batsim: batsim.clone(),
    };
    run::run(&cfg, out, true, progress, false, extras, env).map(drop)
}

/// The built-in demo configuration: one host, `processes` node processes
/// of `per_process` nodes each, the Libra paper's batch scaled to a short run.
pub fn demo_config(
    certs: &Path,
    port: u16,
    processes: usize,
    per_process: usize,
    jobs: usize,
) -> ClusterConfig {
    let capacity = (num_cpus_f64() / (processes * per_process) as f64).min(1.0);
    // Port 0 means any free port; the node processes need to know which,
    // so take one now (bound and released; a race with another process
    // taking it in between only fails the run with a clear bind error).
    let port = if port == 0 {
        net::free_udp_port().unwrap_or(0)
    } else {
        port
    };
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "{certs}"
time_scale = 0.05
start_timeout_s = 20
link_timeout_s = 5

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = {jobs}, nodes = {nodes}, synthetic_arrival_max = {arrival} }}

[[hosts]]
name = "local"
processes = {processes}
nodes_per_process = {per_process}
capacity = {capacity}
"#,
        certs = certs.display(),
        nodes = processes * per_process,
        arrival = (jobs as f64 * 1.02).max(2.0),
    );
    ClusterConfig::parse(Path::new("<demo>"), &text).expect("the demo configuration is valid")
}

fn num_cpus_f64() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_configuration_is_one_local_host_of_the_asked_shape() {
        let c = demo_config(Path::new("/tmp/certs"), 7000, 2, 3, 12);
        assert_eq!(c.manager.listen, "127.0.0.1:7000");
        assert_eq!(c.hosts.len(), 1);
        assert!(c.hosts[0].is_local());
        assert_eq!((c.hosts[0].processes, c.hosts[0].nodes_per_process), (2, 3));
        assert_eq!(c.total_nodes(), 6);
        // Six nodes share the host's cores, at most one core each.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!((c.hosts[0].capacity - (cores / 6.0).min(1.0)).abs() < 1e-12);
        assert_eq!(c.workload.preset, "libra");
    }
}
