//! The cluster a live run uses: its configuration file and the launch plan
//! the scripts read from it.

pub mod config;
pub mod launch;

use std::path::Path;

use anyhow::Result;

use config::ClusterConfig;
use launch::{Format, LaunchPlan};

/// `libratory config show`: print the resolved launch plan.
pub fn show(path: &Path, format: Format) -> Result<()> {
    let cfg = ClusterConfig::load(path)?;
    print!("{}", LaunchPlan::new(&cfg, path).render(format));
    Ok(())
}
