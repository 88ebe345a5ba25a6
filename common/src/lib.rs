//! Libratory core: everything that decides, and nothing that waits.
//!
//! This crate holds the job model, the Standard Workload Format reader, the
//! QoS annotation of traces, the Job Control share rule, the admission
//! policies and the virtual-time simulator. It does no network I/O and reads
//! no clock: time is always an argument (`now`), so the live manager, the
//! emulated nodes and the simulator call exactly the same functions.
//! (File I/O exists only in [`swf`], which reads traces.)

#![forbid(unsafe_code)]

pub mod admission;
pub mod batsim;
pub mod busy_index;
pub mod errors;
pub mod experiment;
pub mod faults;
pub mod job;
pub(crate) mod job_index;
pub mod metrics;
pub mod node_model;
pub mod policy;
pub mod protocol;
pub mod share;
pub mod sim;
pub mod sim_faults;
pub mod swf;
pub mod time;
pub mod workload;

pub use job::{JobId, JobSpec};
pub use time::Time;
