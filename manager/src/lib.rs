//! The Libratory manager as a library, in four parts around `common`'s pure
//! admission core. The `libratory` binary (`main.rs`) only parses arguments
//! and hands each subcommand to one of these modules.
//!
//! - [`live`]: a live run over QUIC (manager actors, server, client
//!   commands, load test, journal, live view, the run/demo/certs commands);
//! - [`cluster`]: cluster configurations and what the launch scripts need;
//! - [`lab`]: offline experiments in virtual time (simulate, sweep, figures,
//!   report, compare) and the metric table they share;
//! - [`results`]: the files a run leaves behind (run directory, result
//!   formats, charts);
//! - [`batsim`]: an external Batsim scheduler over ZeroMQ (the `batsim`
//!   policy's transport).
//!
//! [`environment`] holds the environment variables `main` reads once and
//! hands to the commands.

pub mod batsim;
pub mod cluster;
pub mod environment;
pub mod lab;
pub mod live;
pub mod results;
