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
    /// How the launch scripts reach the hosts and check them.
    #[serde(default)]
    pub launch: LaunchSection,
    /// Batch parameters when the hosts come from a Slurm allocation.
    #[serde(default)]
    pub slurm: SlurmSection,
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
    /// Seconds a node process keeps running its parts after losing the
    /// manager, while it reconnects (`libratory-node --manager-grace-s`).
    #[serde(default = "default_manager_grace")]
    pub manager_grace_s: f64,
    /// Progress report period of the nodes (real ms).
    #[serde(default = "default_report_ms")]
    pub report_ms: u32,
    /// Heartbeat period of the nodes (real ms).
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u32,
    /// Node processes hand their histograms over this often (real ms).
    #[serde(default = "default_histogram_ms")]
    pub histogram_ms: u32,
}

fn default_start_timeout() -> f64 {
    30.0
}
fn default_link_timeout() -> f64 {
    5.0
}
fn default_manager_grace() -> f64 {
    60.0
}
fn default_report_ms() -> u32 {
    100
}
fn default_histogram_ms() -> u32 {
    10_000
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
    /// A fault scenario (docs/faults.md), relative to the config file,
    /// executed by `libratory run` unless `--faults` gives another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<PathBuf>,
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
    /// ssh port (default: ssh's own, usually 22).
    #[serde(default)]
    pub ssh_port: Option<u16>,
    /// ssh options for this host only (`-o` values such as
    /// `"IdentityFile=~/.ssh/lab"`); they win over `[launch] ssh_options`.
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// Directory on the host for the binary, certificates, logs and pid
    /// files (default: `[launch] work_dir` / NAME). Relative paths are
    /// relative to the ssh user's home, or for a host without ssh to the
    /// configuration file's directory.
    #[serde(default)]
    pub work_dir: Option<String>,
    /// A `libratory-node` already installed on the host: launch runs it
    /// instead of copying the one it built.
    #[serde(default)]
    pub node_binary: Option<String>,
    /// Executor threads per node process (default: one per host core).
    #[serde(default)]
    pub executors: Option<usize>,
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

impl HostSection {
    /// Whether the host is this machine (no ssh destination).
    pub fn is_local(&self) -> bool {
        !matches!(self.ssh.as_deref(), Some(s) if !s.is_empty())
    }
}

/// `-o` values: `Key=Value` or `Key Value`, never a flag of their own.
fn check_ssh_options(opts: &[String]) -> Result<(), String> {
    for o in opts {
        let key_value = o.split_once(['=', ' ']).is_some_and(|(k, v)| {
            !k.is_empty() && !v.trim().is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric())
        });
        if !key_value {
            return Err(format!(
                "{o:?}: each entry is one ssh -o option, Key=Value (e.g. \"IdentityFile=~/.ssh/lab\")"
            ));
        }
    }
    Ok(())
}

fn check_path_text(p: &str) -> Result<(), String> {
    if p.is_empty() || p.contains(['\n', '\r', '\0']) {
        return Err("must be a non-empty path on one line".into());
    }
    Ok(())
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

/// `[launch]`: how `scripts/launch.sh` and friends reach and check hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSection {
    /// ssh options for every host (`-o` values, e.g.
    /// `"StrictHostKeyChecking=accept-new"`).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// ssh connect timeout (seconds).
    #[serde(default = "default_ssh_timeout")]
    pub ssh_timeout_s: u32,
    /// Parent of each host's default work directory.
    #[serde(default = "default_work_dir")]
    pub work_dir: String,
    /// Pre-flight refuses a host whose clock differs from this machine's
    /// by more than this (ms). Runs do not need agreeing clocks (the trace
    /// clock comes from the manager's welcome); logs are easier to read
    /// side by side when they roughly agree.
    #[serde(default = "default_skew")]
    pub max_clock_skew_ms: f64,
    /// Seconds a host's UDP probe of the manager's port may take.
    #[serde(default = "default_probe_timeout")]
    pub probe_timeout_s: f64,
    /// Seconds node processes get to leave after the manager ends before
    /// they are stopped.
    #[serde(default = "default_stop_grace")]
    pub stop_grace_s: f64,
}

impl Default for LaunchSection {
    fn default() -> Self {
        LaunchSection {
            ssh_options: Vec::new(),
            ssh_timeout_s: default_ssh_timeout(),
            work_dir: default_work_dir(),
            max_clock_skew_ms: default_skew(),
            probe_timeout_s: default_probe_timeout(),
            stop_grace_s: default_stop_grace(),
        }
    }
}

fn default_ssh_timeout() -> u32 {
    10
}
fn default_work_dir() -> String {
    "/tmp/libratory".into()
}
fn default_skew() -> f64 {
    1000.0
}
fn default_probe_timeout() -> f64 {
    5.0
}
fn default_stop_grace() -> f64 {
    10.0
}

/// `[slurm]`: batch parameters for `scripts/slurm/submit.sh`. Under Slurm
/// the hosts come from the allocation: allocated host k plays `[[hosts]]`
/// entry k (its processes, nodes, capacity and certificate); `ssh*`,
/// `work_dir` and `node_binary` are not used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmSection {
    /// Partition (`--partition`; default: the cluster's default).
    #[serde(default)]
    pub partition: Option<String>,
    /// Account (`--account`).
    #[serde(default)]
    pub account: Option<String>,
    /// Time limit (`--time`, e.g. `"00:30:00"`).
    #[serde(default = "default_time_limit")]
    pub time_limit: String,
    /// CPUs per allocated host (default: enough for the host's nodes,
    /// rounded up, at least 1).
    #[serde(default)]
    pub cpus_per_host: Option<usize>,
    /// Further sbatch options, passed as they are (e.g. `"--qos=short"`).
    #[serde(default)]
    pub sbatch_options: Vec<String>,
    /// What node processes dial under Slurm (ip:port). `[manager]
    /// advertise` names the machine that runs `scripts/launch.sh`, which
    /// is not where a batch job's manager runs, so it is not used there.
    /// Default: `[manager] listen` when it is one address, else the batch
    /// host's first IPv4 address at the listening port.
    #[serde(default)]
    pub advertise: Option<String>,
}

impl Default for SlurmSection {
    fn default() -> Self {
        SlurmSection {
            partition: None,
            account: None,
            time_limit: default_time_limit(),
            cpus_per_host: None,
            sbatch_options: Vec::new(),
            advertise: None,
        }
    }
}

fn default_time_limit() -> String {
    "00:30:00".into()
}

/// The 1-based line of `key = ...` in table `[section]` of TOML `text`.
fn line_of(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (k, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            current = h.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        } else if current == section
            && l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        {
            return Some(k + 1);
        }
    }
    None
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
        // Files it names, relative to it, that are not there are the
        // configuration's mistake: said where it names them, now rather
        // than when the run reaches them.
        let resolve = |f: &Path, key: &str, what: &str| -> Result<PathBuf, ConfigError> {
            let resolved = if f.is_relative() {
                base.join(f)
            } else {
                f.to_path_buf()
            };
            if resolved.is_file() {
                return Ok(resolved);
            }
            let line = line_of(&text, "workload", key).map_or(String::new(), |n| format!(":{n}"));
            Err(ConfigError::Invalid {
                path: PathBuf::from(format!("{}{line}", path.display())),
                key: format!("workload.{key}"),
                why: format!(
                    "no {what} {} (relative paths are relative to the configuration file)",
                    resolved.display()
                ),
            })
        };
        if let Some(t) = c.workload.trace.clone() {
            c.workload.trace = Some(resolve(&t, "trace", "trace")?);
        }
        if let Some(f) = c.workload.faults.clone() {
            c.workload.faults = Some(resolve(&f, "faults", "fault scenario")?);
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
        let listen: std::net::SocketAddr = self.manager.listen.parse().expect("checked above");
        if listen.port() == 0 {
            return Err(bad(
                "manager.listen".into(),
                "give a fixed port: node processes on other hosts must know it",
            ));
        }
        if self.manager.advertise.is_none()
            && listen.ip().is_unspecified()
            && self.hosts.iter().any(|h| !h.is_local())
        {
            return Err(bad(
                "manager.advertise".into(),
                &format!(
                    "the manager listens on {listen} (every interface): give the address the \
                     hosts dial, e.g. advertise = \"10.0.0.1:{}\"",
                    listen.port()
                ),
            ));
        }
        for (key, v) in [
            ("manager.start_timeout_s", self.manager.start_timeout_s),
            ("manager.link_timeout_s", self.manager.link_timeout_s),
            ("manager.manager_grace_s", self.manager.manager_grace_s),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(bad(key.into(), "must be a finite number > 0 (seconds)"));
            }
        }
        if !(self.manager.time_scale > 0.0 && self.manager.time_scale.is_finite()) {
            return Err(bad(
                "manager.time_scale".into(),
                "must be a finite number > 0 (real seconds per trace second)",
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
        // The workload as `run` will build it: the preset, every override,
        // the trace (checked here, not when the run reaches it).
        let pairs = self.set_pairs();
        if let Err(e) = common::experiment::Experiment::configured(
            &self.workload.preset,
            self.workload.seed,
            pairs.iter().map(String::as_str),
            "[workload] set",
        ) {
            use common::experiment::ConfigureError;
            let (key, why) = match &e {
                ConfigureError::Preset(w) => ("workload.preset", w.to_string()),
                ConfigureError::Set { source, .. } => ("workload.set", source.to_string()),
            };
            return Err(bad(key.into(), &why));
        }
        if self.hosts.is_empty() {
            return Err(bad(
                "hosts".into(),
                "no [[hosts]]: a cluster needs at least one (name = \"local\" runs on this machine)",
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
                return Err(bad(key("speed"), "must be a finite number > 0"));
            }
            if h.ssh_port == Some(0) {
                return Err(bad(key("ssh_port"), "must be within 1..=65535"));
            }
            check_ssh_options(&h.ssh_options).map_err(|why| bad(key("ssh_options"), &why))?;
            for (field, v) in [("work_dir", &h.work_dir), ("node_binary", &h.node_binary)] {
                if let Some(v) = v {
                    check_path_text(v).map_err(|why| bad(key(field), &why))?;
                }
            }
            if let Some(e) = h.executors {
                let need = h.nodes_per_process as f64 * h.capacity;
                if e == 0 {
                    return Err(bad(key("executors"), "must be >= 1"));
                }
                if need > e as f64 + 1e-9 {
                    return Err(bad(
                        key("executors"),
                        &format!(
                            "{e} executor(s) cannot serve nodes_per_process x capacity = {need} cores"
                        ),
                    ));
                }
            }
        }
        let l = &self.launch;
        check_ssh_options(&l.ssh_options).map_err(|why| bad("launch.ssh_options".into(), &why))?;
        check_path_text(&l.work_dir).map_err(|why| bad("launch.work_dir".into(), &why))?;
        if l.ssh_timeout_s == 0 {
            return Err(bad("launch.ssh_timeout_s".into(), "must be >= 1 (seconds)"));
        }
        if !(l.max_clock_skew_ms >= 0.0 && l.max_clock_skew_ms.is_finite()) {
            return Err(bad("launch.max_clock_skew_ms".into(), "must be >= 0 (ms)"));
        }
        if !(l.probe_timeout_s > 0.0 && l.probe_timeout_s.is_finite()) {
            return Err(bad(
                "launch.probe_timeout_s".into(),
                "must be a finite number > 0 (seconds)",
            ));
        }
        if !(l.stop_grace_s >= 0.0 && l.stop_grace_s.is_finite()) {
            return Err(bad("launch.stop_grace_s".into(), "must be >= 0 (seconds)"));
        }
        let sl = &self.slurm;
        let t = sl.time_limit.as_str();
        if t.is_empty()
            || !(t
                .chars()
                .all(|c| c.is_ascii_digit() || c == ':' || c == '-')
                || t.eq_ignore_ascii_case("infinite")
                || t.eq_ignore_ascii_case("unlimited"))
        {
            return Err(bad(
                "slurm.time_limit".into(),
                "expected a Slurm time such as \"30\", \"00:30:00\" or \"1-00:00:00\"",
            ));
        }
        if sl.cpus_per_host == Some(0) {
            return Err(bad("slurm.cpus_per_host".into(), "must be >= 1"));
        }
        if let Some(a) = &sl.advertise {
            let a: std::net::SocketAddr = a
                .parse()
                .map_err(|_| bad("slurm.advertise".into(), "expected ip:port"))?;
            if a.ip().is_unspecified() || a.port() == 0 {
                return Err(bad(
                    "slurm.advertise".into(),
                    "give the address and port node processes dial, not 0.0.0.0 or port 0",
                ));
            }
        }
        for (field, v) in [
            ("slurm.partition", &sl.partition),
            ("slurm.account", &sl.account),
        ] {
            if v.as_deref()
                .is_some_and(|v| v.is_empty() || v.contains(char::is_whitespace))
            {
                return Err(bad(field.into(), "must be one word"));
            }
        }
        if let Some(o) = sl.sbatch_options.iter().find(|o| !o.starts_with('-')) {
            return Err(bad(
                "slurm.sbatch_options".into(),
                &format!("{o:?}: each entry is one sbatch option such as \"--qos=short\""),
            ));
        }
        Ok(())
    }

    /// The address node processes on other hosts dial: `advertise`, else
    /// `listen` unless that is every interface (0.0.0.0 or ::).
    pub fn dial_address(&self) -> Option<std::net::SocketAddr> {
        if let Some(a) = &self.manager.advertise {
            return a.parse().ok();
        }
        let l: std::net::SocketAddr = self.manager.listen.parse().ok()?;
        (!l.ip().is_unspecified()).then_some(l)
    }

    /// The address node processes dial under Slurm: `[slurm] advertise`,
    /// else `listen` unless that is every interface (then the batch
    /// script takes the batch host's address). `[manager] advertise` is
    /// the launching machine's, not the batch host's.
    pub fn slurm_dial_address(&self) -> Option<std::net::SocketAddr> {
        if let Some(a) = &self.slurm.advertise {
            return a.parse().ok();
        }
        let l: std::net::SocketAddr = self.manager.listen.parse().ok()?;
        (!l.ip().is_unspecified()).then_some(l)
    }

    /// The address node processes on the manager's own machine dial:
    /// [`ClusterConfig::dial_address`], else loopback at the listening port.
    pub fn local_dial_address(&self) -> std::net::SocketAddr {
        self.dial_address().unwrap_or_else(|| {
            let l: std::net::SocketAddr = self.manager.listen.parse().expect("checked on load");
            let ip: std::net::IpAddr = if l.is_ipv4() {
                std::net::Ipv4Addr::LOCALHOST.into()
            } else {
                std::net::Ipv6Addr::LOCALHOST.into()
            };
            std::net::SocketAddr::new(ip, l.port())
        })
    }

    /// The `libratory-node` arguments of one of `host`'s processes, but for
    /// `--manager`, `--certs` and `--label` (which depend on where and how
    /// it runs). Every launcher (local, ssh, Slurm) uses this one list.
    pub fn node_args(&self, host: &HostSection) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--name".into(),
            host.name.clone(),
            "--nodes".into(),
            host.nodes_per_process.to_string(),
            "--capacity".into(),
            host.capacity.to_string(),
            "--speed".into(),
            host.speed.to_string(),
            "--memory-mb".into(),
            host.memory_mb.to_string(),
            "--disk-mb".into(),
            host.disk_mb.to_string(),
            "--link-timeout-s".into(),
            self.manager.link_timeout_s.to_string(),
            "--manager-grace-s".into(),
            self.manager.manager_grace_s.to_string(),
        ];
        if let Some(e) = host.executors {
            a.extend(["--executors".into(), e.to_string()]);
        }
        a
    }

    /// One line about the configuration, for `libratory config check`.
    pub fn summary(&self) -> String {
        let remote = self.hosts.iter().filter(|h| !h.is_local()).count();
        format!(
            "{} host(s) ({remote} over ssh), {} node processes, {} emulated nodes, policy {}, preset {}, time scale {}",
            self.hosts.len(),
            self.hosts.iter().map(|h| h.processes).sum::<usize>(),
            self.total_nodes(),
            self.workload.policy,
            self.workload.preset,
            self.manager.time_scale
        )
    }

    /// The label of process `p` of `host` (logs, pid files, results).
    pub fn process_label(host: &HostSection, p: usize) -> String {
        format!("{}-{p}", host.name)
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

    /// What `run` would refuse only on reaching it is refused by the
    /// check: an unknown preset, a setting's typo or range, no hosts, a
    /// trace that is not there.
    #[test]
    fn the_workload_and_the_hosts_are_checked_as_run_builds_them() {
        for (from, to, said) in [
            (
                "preset = \"libra\"",
                "preset = \"libr\"",
                "workload.preset: unknown preset 'libr'",
            ),
            (
                "jobs = 20",
                "jbos = 20",
                "workload.set: unknown parameter 'jbos'",
            ),
            (
                "jobs = 20",
                "jobs = 0",
                "workload.set: parameter 'jobs': must be at least 1",
            ),
            (
                "arrival_delay_factor = 0.5",
                "gamma = -1",
                "workload.set: parameter 'gamma'",
            ),
        ] {
            let e = ClusterConfig::parse(Path::new("lab.toml"), &GOOD.replace(from, to))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("lab.toml: ") && e.contains(said),
                "{said}: {e}"
            );
        }
        let no_hosts = &GOOD[..GOOD.find("[[hosts]]").unwrap()];
        let e = ClusterConfig::parse(Path::new("lab.toml"), no_hosts)
            .unwrap_err()
            .to_string();
        assert!(e.contains("hosts: no [[hosts]]"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lab.toml");
        let text = GOOD.replace(
            "policy = \"libra\"",
            "policy = \"libra\"\ntrace = \"gone.swf\"",
        );
        std::fs::write(&path, text).unwrap();
        let e = ClusterConfig::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("lab.toml:10: workload.trace: no trace") && e.contains("gone.swf"),
            "{e}"
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

    /// A scenario the configuration names must exist, relative to the
    /// configuration: else the error names the file, the line and the key.
    #[test]
    fn a_missing_fault_scenario_names_file_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("lab.toml");
        let text = GOOD.replace(
            "policy = \"libra\"\n",
            "policy = \"libra\"\nfaults = \"f/crash.toml\"\n",
        );
        std::fs::write(&cfg, &text).unwrap();
        let e = ClusterConfig::load(&cfg).unwrap_err().to_string();
        let want = format!(
            "{}:10: workload.faults: no fault scenario {}",
            cfg.display(),
            dir.path().join("f/crash.toml").display()
        );
        assert!(e.starts_with(&want), "{e}\nwanted {want}");
        std::fs::create_dir(dir.path().join("f")).unwrap();
        std::fs::write(dir.path().join("f/crash.toml"), "").unwrap();
        let c = ClusterConfig::load(&cfg).unwrap();
        assert_eq!(c.workload.faults, Some(dir.path().join("f/crash.toml")));
    }

    fn err(text: &str) -> String {
        ClusterConfig::parse(Path::new("lab.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn launch_fields_are_checked_naming_the_key() {
        let remote = GOOD.replace("name = \"local\"", "name = \"h1\"\nssh = \"me@h1\"");
        // A manager on every interface needs the address hosts dial.
        let e = err(&remote.replace("127.0.0.1:7878", "0.0.0.0:7878"));
        assert!(e.contains("lab.toml: manager.advertise"), "{e}");
        let ok = remote.replace(
            "listen = \"127.0.0.1:7878\"",
            "listen = \"0.0.0.0:7878\"\nadvertise = \"10.0.0.1:7878\"",
        );
        let c = ClusterConfig::parse(Path::new("lab.toml"), &ok).unwrap();
        assert_eq!(c.dial_address().unwrap().to_string(), "10.0.0.1:7878");
        let e = err(&GOOD.replace("127.0.0.1:7878", "127.0.0.1:0"));
        assert!(
            e.contains("manager.listen") && e.contains("fixed port"),
            "{e}"
        );
        let e = err(&format!("{remote}ssh_options = [\"-v\"]\n"));
        assert!(e.contains("hosts[0] (h1).ssh_options"), "{e}");
        let e = err(&format!("{remote}ssh_port = 0\n"));
        assert!(e.contains("hosts[0] (h1).ssh_port"), "{e}");
        let e = err(&format!("{GOOD}executors = 0\n"));
        assert!(e.contains("hosts[0] (local).executors"), "{e}");
        let e = err(&format!("{}executors = 1\n", GOOD.replace("0.25", "0.5")));
        assert!(e.contains("executors") && e.contains("2 cores"), "{e}");
        let e = err(&format!("{GOOD}\n[launch]\nmax_clock_skew_ms = -1\n"));
        assert!(e.contains("launch.max_clock_skew_ms"), "{e}");
        let e = err(&format!("{GOOD}\n[launch]\nprobe_timeout = 3\n"));
        assert!(e.contains("probe_timeout") && e.contains("line"), "{e}");
        let e = err(&format!("{GOOD}\n[slurm]\ntime_limit = \"half an hour\"\n"));
        assert!(e.contains("slurm.time_limit"), "{e}");
        let e = err(&format!(
            "{GOOD}\n[slurm]\nsbatch_options = [\"qos=short\"]\n"
        ));
        assert!(e.contains("slurm.sbatch_options"), "{e}");
    }

    #[test]
    fn local_hosts_dial_loopback_when_the_manager_listens_everywhere() {
        let c = ClusterConfig::parse(
            Path::new("x.toml"),
            &GOOD.replace("127.0.0.1:7878", "0.0.0.0:7999"),
        )
        .unwrap();
        assert_eq!(c.dial_address(), None);
        assert_eq!(c.local_dial_address().to_string(), "127.0.0.1:7999");
    }

    /// Under Slurm the manager runs on the batch host, not on the machine
    /// `[manager] advertise` names (the launcher's): node processes dial
    /// `[slurm] advertise`, else a one-address `listen`, else (empty) the
    /// batch host's address, found by the batch script.
    #[test]
    fn under_slurm_nodes_dial_the_batch_host_not_the_launchers_address() {
        let lab = GOOD
            .replace("name = \"local\"", "name = \"h1\"\nssh = \"me@h1\"")
            .replace(
                "listen = \"127.0.0.1:7878\"",
                "listen = \"0.0.0.0:7878\"\nadvertise = \"192.0.2.10:7878\"",
            );
        let c = ClusterConfig::parse(Path::new("lab.toml"), &lab).unwrap();
        assert_eq!(c.dial_address().unwrap().to_string(), "192.0.2.10:7878");
        assert_eq!(c.slurm_dial_address(), None);
        let with = format!("{lab}\n[slurm]\nadvertise = \"10.1.0.7:7878\"\n");
        let c = ClusterConfig::parse(Path::new("lab.toml"), &with).unwrap();
        assert_eq!(c.slurm_dial_address().unwrap().to_string(), "10.1.0.7:7878");
        let one = ClusterConfig::parse(Path::new("x.toml"), GOOD).unwrap();
        assert_eq!(
            one.slurm_dial_address().unwrap().to_string(),
            "127.0.0.1:7878"
        );
        for (bad, why) in [
            ("h1:7878", "expected ip:port"),
            ("0.0.0.0:7878", "not 0.0.0.0 or port 0"),
            ("10.1.0.7:0", "not 0.0.0.0 or port 0"),
        ] {
            let e = err(&format!("{lab}\n[slurm]\nadvertise = \"{bad}\"\n"));
            assert!(
                e.contains("slurm.advertise") && e.contains(why),
                "{bad}: {e}"
            );
        }
    }

    /// Every example in cluster-configs/ parses, checks, and names files
    /// that exist (traces); so examples never rot.
    #[test]
    fn every_file_in_cluster_configs_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cluster-configs");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let c = ClusterConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
                assert!(!c.hosts.is_empty(), "{}: no [[hosts]]", path.display());
                if let Some(t) = &c.workload.trace {
                    assert!(
                        t.is_file(),
                        "{}: trace {} missing",
                        path.display(),
                        t.display()
                    );
                }
                // The preset and every override are known.
                let mut exp = common::experiment::Experiment::preset(&c.workload.preset)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let pairs = c.set_pairs();
                exp.set_all(pairs.iter().map(String::as_str))
                    .unwrap_or_else(|e| panic!("{}: [workload] set: {e}", path.display()));
                let plan = crate::cluster::launch::LaunchPlan::new(&c, &path);
                assert_eq!(plan.total_nodes, c.total_nodes());
                seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
        seen.sort();
        for must in ["lab4.toml", "local.toml", "sdsc-128.toml"] {
            assert!(
                seen.iter().any(|s| s == must),
                "{must} missing from {seen:?}"
            );
        }
    }
}
