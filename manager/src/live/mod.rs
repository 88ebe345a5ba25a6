//! A live run: real node processes over QUIC, and the commands that start,
//! feed, watch and load one.

pub mod certs;
pub mod client;
pub mod demo;
pub mod inject;
pub mod journal;
pub mod liveview;
pub mod loadtest;
pub mod local_nodes;
pub mod manager;
pub mod nodepage;
pub mod probe;
pub mod procstat;
pub mod progress;
pub mod recover;
pub mod resume;
pub mod resume_state;
pub mod run;
pub mod run_files;
pub mod setup;
pub mod supervise;
