//! The process environment the `libratory` commands read, read once in
//! `main` ([`Environment::from_process`]) and handed down to the commands
//! that use it, so that no library function reads the environment behind
//! its caller's back and a test can give any values it likes. docs/cli.md,
//! "Environment variables", lists every variable.

use std::ffi::OsString;
use std::path::PathBuf;

/// The variables read, and why.
pub const VARS: &[&str] = &[
    // Where `simulate` keeps parsed trace windows (lab::trace_cache).
    "LIBRATORY_CACHE_DIR",
    "XDG_CACHE_HOME",
    // The cache's and the calibration file's default places.
    "HOME",
    // The host-level calibration file (`calibrate`, `run`).
    "LIBRATORY_CALIBRATION",
    // How a live manager spreads its work over threads.
    "LIBRATORY_MANAGER_THREADS",
];

/// The values of [`VARS`] (empty values count as unset where the reader
/// says so).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: Vec<(&'static str, OsString)>,
}

impl Environment {
    /// Reads [`VARS`] from this process's environment. Call once, in `main`.
    pub fn from_process() -> Environment {
        Environment {
            vars: VARS
                .iter()
                .filter_map(|&k| std::env::var_os(k).map(|v| (k, v)))
                .collect(),
        }
    }

    /// These values, nothing else set (for tests and benches).
    pub fn from_pairs(pairs: &[(&'static str, &str)]) -> Environment {
        Environment {
            vars: pairs.iter().map(|&(k, v)| (k, OsString::from(v))).collect(),
        }
    }

    /// The value of `key`, one of [`VARS`].
    pub fn var(&self, key: &str) -> Option<OsString> {
        debug_assert!(VARS.contains(&key), "{key} is not in environment::VARS");
        self.vars
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
    }

    /// The host-level calibration file: `LIBRATORY_CALIBRATION`, else
    /// `$HOME/.config/libratory/calibration.json`, else none.
    pub fn calibration_file(&self) -> Option<PathBuf> {
        if let Some(p) = self.var("LIBRATORY_CALIBRATION") {
            return Some(PathBuf::from(p));
        }
        self.var("HOME")
            .map(|h| PathBuf::from(h).join(".config/libratory/calibration.json"))
    }

    /// `LIBRATORY_MANAGER_THREADS` as text (`None` when unset or not
    /// UTF-8, which the manager then refuses).
    pub fn manager_threads(&self) -> Option<String> {
        self.var("LIBRATORY_MANAGER_THREADS")
            .map(|v| v.to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_file_is_the_variable_else_under_home() {
        let e = Environment::from_pairs(&[("HOME", "/h"), ("LIBRATORY_CALIBRATION", "/c.json")]);
        assert_eq!(e.calibration_file(), Some(PathBuf::from("/c.json")));
        let e = Environment::from_pairs(&[("HOME", "/h")]);
        assert_eq!(
            e.calibration_file(),
            Some(PathBuf::from("/h/.config/libratory/calibration.json"))
        );
        assert_eq!(Environment::default().calibration_file(), None);
    }
}
