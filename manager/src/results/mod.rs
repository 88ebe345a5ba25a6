//! What a run leaves behind: the run directory (manifest, log), the result
//! file formats, and the SVG charts drawn from them.

pub mod calibration;
pub mod histograms;
pub mod names;
pub mod num;
pub mod output;
pub mod plot;
pub mod rundir;
pub mod schedule;
