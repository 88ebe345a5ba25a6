//! The cluster a live run uses: its configuration file and the launch plan
//! the scripts read from it.

pub mod config;
pub mod launch;
