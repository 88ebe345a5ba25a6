//! The cluster a live run uses: its configuration file and the launch plan
//! the scripts read from it.

pub mod config;
pub mod launch;

use std::path::Path;

use anyhow::Result;

use config::ClusterConfig;
use launch::{Format, LaunchPlan};

/// `libratory config check`: parse and check, print a one-line summary.
pub fn check(path: &Path) -> Result<()> {
    let cfg = ClusterConfig::load(path)?;
    // The fault scenario it names is read and expanded for this cluster
    // as a run would (errors name the scenario's file, line and key).
    if let Some(f) = &cfg.workload.faults {
        let sf = crate::faults::ScenarioFile::load(f)?;
        let (exp, wl) = crate::live::setup::experiment_of(&cfg)?;
        let mut log = crate::results::rundir::Log::new();
        crate::live::setup::fault_plan(&sf, &cfg, |_| Ok(()), &wl, exp.params.seed, &mut log)?;
    }
    println!("{}: ok: {}", path.display(), cfg.summary());
    Ok(())
}

/// `libratory config show`: print the resolved launch plan.
pub fn show(path: &Path, format: Format) -> Result<()> {
    let cfg = ClusterConfig::load(path)?;
    print!("{}", LaunchPlan::new(&cfg, path).render(format));
    Ok(())
}
