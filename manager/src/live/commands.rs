//! The bodies of `libratory run`, `demo` and `probe-server` once their
//! arguments are parsed: where the results go, which progress display,
//! the demo's certificates and configuration. `main.rs` only dispatches
//! here; the work itself is in [`runcmd`] and [`probe`].

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::batsim::BatsimArgs;
use crate::cluster::config::ClusterConfig;
use crate::environment::Environment;
use crate::live::{probe, runcmd};

/// `libratory run`: the results go to `out`, else the configuration's
/// `[output] dir`, else `runs/<config file stem>`.
// The command's options one by one, as `main` parses them.
#[allow(clippy::too_many_arguments)]
pub fn run(
    config: &Path,
    spawn_local: bool,
    out: Option<PathBuf>,
    serve: bool,
    progress_every: Option<f64>,
    http: Option<crate::live::liveview::ViewAddr>,
    faults: Option<&Path>,
    batsim: &BatsimArgs,
    env: &Environment,
) -> Result<()> {
    let cfg = ClusterConfig::load(config)?;
    let out = out.or_else(|| cfg.output.dir.clone()).unwrap_or_else(|| {
        let stem = config
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().to_string());
        PathBuf::from("runs").join(stem)
    });
    let progress = runcmd::Progress::choose(progress_every, std::io::stderr().is_terminal())?;
    // `--faults` wins over the configuration's `[workload] faults`.
    let faults = faults.or(cfg.workload.faults.as_deref());
    let extras = runcmd::RunExtras {
        http,
        faults,
        batsim: batsim.clone(),
    };
    runcmd::run(&cfg, &out, spawn_local, progress, serve, extras, env)
}

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
        runcmd::certs(&certs, &["local".to_string()], &[], false)?;
    }
    let mut cfg = runcmd::demo_config(
        &std::fs::canonicalize(&certs)?,
        port,
        processes,
        nodes,
        jobs,
    );
    common::policy::entry(policy)?;
    cfg.workload.policy = policy.to_string();
    let progress = runcmd::Progress::choose(None, std::io::stderr().is_terminal())?;
    let extras = runcmd::RunExtras {
        http,
        faults,
        batsim: batsim.clone(),
    };
    runcmd::run(&cfg, out, true, progress, false, extras, env)
}

/// `libratory probe-server`: answer probes on the configuration's manager
/// address, print how many were answered.
pub fn probe_server(config: &Path, for_s: f64, expect: usize) -> Result<()> {
    let cfg = ClusterConfig::load(config)?;
    let ok = probe::run(&cfg, runcmd::seconds("--for-s", for_s)?, expect)?;
    println!("probe server: {ok} probe(s) answered");
    Ok(())
}
