//! A live run: real node processes over QUIC, and the commands that start,
//! feed, watch and load one.

pub mod calibrate;
pub mod client;
pub mod commands;
pub mod faultinject;
pub mod journal;
pub mod liveview;
pub mod loadtest;
pub mod manager;
pub mod probe;
pub mod procstat;
pub mod runcmd;
