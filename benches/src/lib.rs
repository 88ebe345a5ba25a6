//! Helpers shared by the benchmarks: robust timing on a noisy, shared
//! machine (median of repeated samples), the trace location, and reading a
//! knob from the environment (each bench reads its knobs once, in `main`;
//! docs/cli.md lists them).

use std::path::PathBuf;
use std::time::Instant;

/// Median wall time (seconds) of `samples` runs of `f`, after one warm-up.
pub fn median_secs(samples: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..samples)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The environment variable `key` parsed as a `T`, else `default` when it
/// is not set. A value that does not parse stops the bench, naming it.
pub fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    match std::env::var(key) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{key}={v}: not a valid value")),
        Err(_) => default,
    }
}

/// The SDSC SP2 trace beside the project (`../shared/traces`).
pub fn sdsc_trace() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(p.is_file(), "trace missing at {}", p.display());
    p
}
