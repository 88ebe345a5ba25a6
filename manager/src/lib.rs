//! The Libratory manager as a library, in layers around `common`'s pure
//! admission core. The `libratory` binary (`main.rs`) only parses arguments
//! and hands each subcommand to one of these modules.
//!
//! - [`calibrate`]: live runs against the simulator (above `live` and
//!   `lab`: it uses both);
//! - [`replay`]: a live run's journal replayed in the simulator, its
//!   simulated twin (above `live` and `lab` for the same reason);
//! - [`live`]: a live run over QUIC (manager actors, server, client
//!   commands, load test, journal, live view, the run/demo/certs/recover
//!   commands);
//! - [`lab`]: offline experiments in virtual time (simulate, sweep, figures,
//!   report, compare) and the metric table they share;
//! - [`cluster`]: cluster configurations and what the launch scripts need;
//! - [`faults`]: fault scenario files, for `simulate` and live runs alike;
//! - [`results`]: the files a run leaves behind (run directory, result
//!   formats, histograms, the calibration file, charts);
//! - [`batsim`]: an external Batsim scheduler over ZeroMQ (the `batsim`
//!   policy's transport).
//!
//! [`environment`] holds the environment variables `main` reads once and
//! hands to the commands.
//!
//! `live` and `lab` never import each other, and no module imports one
//! above it: `tests/layers.rs` checks it (docs/architecture.md, "Layers").

pub mod batsim;
pub mod calibrate;
pub mod cluster;
pub mod environment;
pub mod faults;
pub mod lab;
pub mod live;
pub mod replay;
pub mod results;
