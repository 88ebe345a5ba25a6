//! The Libratory manager as a library: the pure manager core (admission,
//! cluster view, dispatch, records) and, around it, the actors and the
//! QUIC server of a live run. The `libratory` binary is a thin shell over
//! this crate and `common`.

pub mod compare;
pub mod config;
pub mod journal;
pub mod launch;
pub mod live;
pub mod liveview;
pub mod metric_table;
pub mod probe;
pub mod procstat;
