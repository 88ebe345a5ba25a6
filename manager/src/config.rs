//! Cluster configurations (`cluster-configs/*.toml`): where the manager
//! listens, which hosts run how many emulated nodes of which capacity and
//! speed, the certificates, the time scale, the workload and the policy.
//!
//! Parsing is strict: an unknown key, a missing one or a value of the wrong
//! type is an error naming the file, the line and the key. The schema is
//! documented in docs/cluster-configs.md; keep the two in step.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A cluster configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// The manager.
    pub manager: ManagerSection,
    /// The workload and the policy.
    pub workload: WorkloadSection,
    /// The hosts that run node processes.
    #[serde(default, rename = "hosts")]
    pub hosts: Vec<HostSection>,
    /// Where results go.
    #[serde(default)]
    pub output: OutputSection,
}

/// `[manager]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerSection {
    /// Address (ip:port) the manager listens on (UDP, QUIC).
    pub listen: String,
    /// Address node processes dial (default: `listen`; set it when the
    /// manager listens on 0.0.0.0).
    #[serde(default)]
    pub advertise: Option<String>,
    /// Certificates directory, relative to the config file.
    pub certs: PathBuf,
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// Seconds to wait for every node to register.
    #[serde(default = "default_start_timeout")]
    pub start_timeout_s: f64,
    /// Seconds of silence after which a node process is lost.
    #[serde(default = "default_link_timeout")]
    pub link_timeout_s: f64,
    /// Progress report period of the nodes (real ms).
    #[serde(default = "default_report_ms")]
    pub report_ms: u32,
    /// Heartbeat period of the nodes (real ms).
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u32,
}

fn default_start_timeout() -> f64 {
    30.0
}
fn default_link_timeout() -> f64 {
    5.0
}
fn default_report_ms() -> u32 {
    100
}
fn default_heartbeat_ms() -> u32 {
    250
}

/// `[workload]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    /// Preset name (`libratory presets`).
    pub preset: String,
    /// SWF trace, relative to the config file (trace presets).
    #[serde(default)]
    pub trace: Option<PathBuf>,
    /// Seed (default: the preset's).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The policy to run (one per live run).
    pub policy: String,
    /// Parameter overrides, as `--set` takes them.
    #[serde(default)]
    pub set: toml::Table,
}

/// `[[hosts]]`: one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSection {
    /// A name for logs, certificates (`node-NAME`) and results.
    pub name: String,
    /// ssh destination (`user@host`); empty or absent: this machine.
    #[serde(default)]
    pub ssh: Option<String>,
    /// Node processes on this host.
    #[serde(default = "one")]
    pub processes: usize,
    /// Emulated nodes per process.
    pub nodes_per_process: usize,
    /// Fraction of one core per emulated node.
    pub capacity: f64,
    /// Speed of each emulated node.
    #[serde(default = "one_f")]
    pub speed: f64,
    /// Memory per node (MB).
    #[serde(default = "default_mem")]
    pub memory_mb: u64,
    /// Disk per node (MB).
    #[serde(default = "default_disk")]
    pub disk_mb: u64,
}

fn one() -> usize {
    1
}
fn one_f() -> f64 {
    1.0
}
fn default_mem() -> u64 {
    1024
}
fn default_disk() -> u64 {
    4096
}

/// `[output]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Run directory, relative to the current directory (default
    /// `runs/<config name>`).
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

/// A configuration problem, naming the file (and line/key when known).
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax or schema error (the message has the line and key).
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What toml said, with line, column and key.
        message: String,
    },
    /// A value that parses but makes no sense.
    #[error("{path}: {key}: {why}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// Why.
        why: String,
    },
}

impl ClusterConfig {
    /// Reads and checks a configuration file. Relative paths in it become
    /// relative to the file's directory.
    pub fn load(path: &Path) -> Result<ClusterConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut c = ClusterConfig::parse(path, &text)?;
        let base = path.parent().unwrap_or(Path::new("."));
        if c.manager.certs.is_relative() {
            c.manager.certs = base.join(&c.manager.certs);
        }
        if let Some(t) = &c.workload.trace {
            if t.is_relative() {
                c.workload.trace = Some(base.join(t));
            }
        }
        Ok(c)
    }

    /// Parses configuration text (`path` is only used in messages).
    pub fn parse(path: &Path, text: &str) -> Result<ClusterConfig, ConfigError> {
        let c: ClusterConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().replace('\n', "\n  "),
        })?;
        c.check(path)?;
        Ok(c)
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key: String, why: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            key,
            why: why.to_string(),
        };
        self.manager
            .listen
            .parse::<std::net::SocketAddr>()
            .map_err(|_| {
                bad(
                    "manager.listen".into(),
                    "expected ip:port, e.g. 0.0.0.0:7878",
                )
            })?;
        if let Some(a) = &self.manager.advertise {
            a.parse::<std::net::SocketAddr>()
                .map_err(|_| bad("manager.advertise".into(), "expected ip:port"))?;
        }
        if !(self.manager.time_scale > 0.0 && self.manager.time_scale.is_finite()) {
            return Err(bad(
                "manager.time_scale".into(),
                "must be > 0 (real seconds per trace second)",
            ));
        }
        if common::policy::entry(&self.workload.policy).is_err() {
            let known: Vec<&str> = common::policy::REGISTRY.iter().map(|e| e.name).collect();
            return Err(bad(
                "workload.policy".into(),
                &format!(
                    "unknown policy '{}'; known: {}",
                    self.workload.policy,
                    known.join(", ")
                ),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (k, h) in self.hosts.iter().enumerate() {
            let key = |f: &str| format!("hosts[{k}] ({}).{f}", h.name);
            if !names.insert(h.name.clone()) {
                return Err(bad(key("name"), "duplicate host name"));
            }
            if h.name.is_empty()
                || !h
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(bad(key("name"), "letters, digits, '-', '_' or '.' only"));
            }
            if h.processes == 0 || h.nodes_per_process == 0 {
                return Err(bad(
                    key("nodes_per_process"),
                    "processes and nodes_per_process must be >= 1",
                ));
            }
            if !(h.capacity > 0.0 && h.capacity <= 1.0) {
                return Err(bad(
                    key("capacity"),
                    "must be within (0, 1] (a fraction of one core)",
                ));
            }
            if !(h.speed > 0.0 && h.speed.is_finite()) {
                return Err(bad(key("speed"), "must be > 0"));
            }
        }
        Ok(())
    }

    /// Emulated nodes across all hosts.
    pub fn total_nodes(&self) -> usize {
        self.hosts
            .iter()
            .map(|h| h.processes * h.nodes_per_process)
            .sum()
    }

    /// `key=value` strings of the workload overrides, for
    /// `Experiment::set_all`.
    pub fn set_pairs(&self) -> Vec<String> {
        self.workload
            .set
            .iter()
            .map(|(k, v)| match v {
                toml::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[manager]
listen = "127.0.0.1:7878"
certs = "certs"
time_scale = 0.001

[workload]
preset = "libra"
policy = "libra"
set = { jobs = 20, arrival_delay_factor = 0.5, placement = "best-fit" }

[[hosts]]
name = "local"
processes = 2
nodes_per_process = 4
capacity = 0.25
"#;

    #[test]
    fn parses_a_good_config() {
        let c = ClusterConfig::parse(Path::new("x.toml"), GOOD).unwrap();
        assert_eq!(c.total_nodes(), 8);
        assert_eq!(c.manager.report_ms, 100);
        let mut pairs = c.set_pairs();
        pairs.sort();
        assert_eq!(
            pairs,
            vec!["arrival_delay_factor=0.5", "jobs=20", "placement=best-fit"]
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let typo = GOOD.replace("time_scale", "time_scael");
        let e = ClusterConfig::parse(Path::new("lab.toml"), &typo)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("lab.toml:") && e.contains("time_scael") && e.contains("line 5"),
            "{e}"
        );
        let e = ClusterConfig::parse(Path::new("lab.toml"), &GOOD.replace("0.25", "2.5"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hosts[0] (local).capacity"), "{e}");
        let e = ClusterConfig::parse(
            Path::new("lab.toml"),
            &GOOD.replace("policy = \"libra\"", "policy = \"libar\""),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workload.policy") && e.contains("libra-risk"),
            "{e}"
        );
        let e = ClusterConfig::parse(
            Path::new("lab.toml"),
            &GOOD.replace("127.0.0.1:7878", "localhost"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("manager.listen"), "{e}");
    }
}
