//! What the launch scripts need from a cluster configuration, resolved and
//! printed by `libratory config show`: per host the ssh destination and
//! arguments, the work directory, the node binary and every node process's
//! label and arguments; for the manager its addresses and certificates;
//! for Slurm the sbatch options.
//!
//! The scripts never parse TOML: they `eval` the `shell` rendering (bash
//! assignments, every value single-quoted) or read the `json` one. Nothing
//! here touches a host; it only computes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::cluster::config::ClusterConfig;

/// Options every ssh call gets after the configured ones (ssh takes the
/// first value given for an option, so the configuration wins): never
/// prompt, and give up on a silent host.
const SSH_DEFAULTS: &[&str] = &["BatchMode=yes", "ServerAliveInterval=5"];

/// Everything a launcher needs, resolved from one configuration file.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchPlan {
    /// The configuration file (absolute).
    pub config: PathBuf,
    /// Its stem: names runs and state.
    pub name: String,
    /// First 12 hex digits of the SHA-256 of `config`'s absolute path: two
    /// configurations with the same stem keep separate local state.
    pub config_id: String,
    /// The manager.
    pub manager: ManagerPlan,
    /// Run directory when `--out` is not given.
    pub output_dir: PathBuf,
    /// Checks and timeouts of `[launch]`.
    pub max_clock_skew_ms: f64,
    /// Seconds a UDP probe may take.
    pub probe_timeout_s: f64,
    /// Seconds node processes get to leave after the manager.
    pub stop_grace_s: f64,
    /// Emulated nodes over all hosts.
    pub total_nodes: usize,
    /// The hosts, in configuration order.
    pub hosts: Vec<HostPlan>,
    /// sbatch options for a Slurm submission (one argument each).
    pub sbatch: Vec<String>,
    /// The fault scenario of `[workload] faults` (absolute), if any.
    pub faults: Option<PathBuf>,
}

/// The manager's side of a launch.
#[derive(Debug, Clone, Serialize)]
pub struct ManagerPlan {
    /// Where it listens (UDP).
    pub listen: String,
    /// Its port.
    pub port: u16,
    /// What hosts elsewhere dial; empty when the manager listens on every
    /// interface and no `advertise` is given (Slurm resolves it at run time).
    pub dial: String,
    /// What node processes dial under Slurm (`[slurm] advertise`, else
    /// `listen` when it is one address); empty when the batch script
    /// takes the batch host's address.
    pub slurm_dial: String,
    /// What node processes on the manager's machine dial.
    pub local_dial: String,
    /// The certificates directory (absolute).
    pub certs: PathBuf,
}

/// One host of a launch.
#[derive(Debug, Clone, Serialize)]
pub struct HostPlan {
    /// The `[[hosts]]` name (and certificate `node-NAME`).
    pub name: String,
    /// ssh destination; empty for this machine.
    pub target: String,
    /// ssh arguments before the destination (`-p`, `-o` ...); empty for
    /// this machine.
    pub ssh_args: Vec<String>,
    /// Work directory on the host.
    pub work_dir: String,
    /// The node binary on the host.
    pub node_binary: String,
    /// Whether the launcher copies its build to `node_binary`.
    pub copy_binary: bool,
    /// The certificate files the host needs, in the certificates directory
    /// (copied to `work_dir/certs`).
    pub cert_files: Vec<String>,
    /// One label per node process (`NAME-0`, `NAME-1`, ...).
    pub labels: Vec<String>,
    /// `libratory-node` arguments but `--manager`, `--certs`, `--label`.
    pub node_args: Vec<String>,
    /// Emulated nodes on this host.
    pub nodes: usize,
}

impl LaunchPlan {
    /// Resolves `cfg`, loaded from `config_path`.
    pub fn new(cfg: &ClusterConfig, config_path: &Path) -> LaunchPlan {
        let config = std::fs::canonicalize(config_path)
            .or_else(|_| std::path::absolute(config_path))
            .unwrap_or_else(|_| config_path.into());
        let name = config_path
            .file_stem()
            .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
        let digest = Sha256::digest(config.as_os_str().as_encoded_bytes());
        let config_id: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        let listen: std::net::SocketAddr = cfg.manager.listen.parse().expect("checked on load");
        let certs = std::path::absolute(&cfg.manager.certs).unwrap_or(cfg.manager.certs.clone());
        let manager = ManagerPlan {
            listen: cfg.manager.listen.clone(),
            port: listen.port(),
            dial: cfg
                .dial_address()
                .map_or_else(String::new, |a| a.to_string()),
            slurm_dial: cfg
                .slurm_dial_address()
                .map_or_else(String::new, |a| a.to_string()),
            local_dial: cfg.local_dial_address().to_string(),
            certs,
        };
        let hosts = cfg
            .hosts
            .iter()
            .map(|h| {
                // On this machine a relative path is the configuration's
                // directory's: the same whatever directory status.sh or
                // stop.sh run from. Over ssh it is the ssh user's home's.
                let here = |p: String| {
                    if h.is_local() && Path::new(&p).is_relative() {
                        config
                            .parent()
                            .unwrap_or(Path::new("/"))
                            .join(&p)
                            .to_string_lossy()
                            .into_owned()
                    } else {
                        p
                    }
                };
                let work_dir = here(
                    h.work_dir
                        .clone()
                        .unwrap_or_else(|| format!("{}/{}", cfg.launch.work_dir, h.name)),
                );
                let mut ssh_args = Vec::new();
                if !h.is_local() {
                    if let Some(p) = h.ssh_port {
                        ssh_args.extend(["-p".to_string(), p.to_string()]);
                    }
                    let timeout = format!("ConnectTimeout={}", cfg.launch.ssh_timeout_s);
                    for o in h
                        .ssh_options
                        .iter()
                        .chain(&cfg.launch.ssh_options)
                        .map(String::as_str)
                        .chain(SSH_DEFAULTS.iter().copied())
                        .chain([timeout.as_str()])
                    {
                        ssh_args.extend(["-o".to_string(), o.to_string()]);
                    }
                }
                HostPlan {
                    name: h.name.clone(),
                    target: h.ssh.clone().unwrap_or_default(),
                    ssh_args,
                    node_binary: h
                        .node_binary
                        .clone()
                        .map(here)
                        .unwrap_or_else(|| format!("{work_dir}/bin/libratory-node")),
                    copy_binary: h.node_binary.is_none(),
                    work_dir,
                    cert_files: vec![
                        "ca.pem".into(),
                        format!("node-{}.pem", h.name),
                        format!("node-{}.key", h.name),
                    ],
                    labels: (0..h.processes)
                        .map(|p| ClusterConfig::process_label(h, p))
                        .collect(),
                    node_args: cfg.node_args(h),
                    nodes: h.processes * h.nodes_per_process,
                }
            })
            .collect();
        let output_dir = cfg
            .output
            .dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("runs").join(&name));
        LaunchPlan {
            faults: cfg
                .workload
                .faults
                .as_ref()
                .map(|f| std::path::absolute(f).unwrap_or(f.clone())),
            sbatch: sbatch_options(cfg, &name),
            config,
            name,
            config_id,
            manager,
            output_dir,
            max_clock_skew_ms: cfg.launch.max_clock_skew_ms,
            probe_timeout_s: cfg.launch.probe_timeout_s,
            stop_grace_s: cfg.launch.stop_grace_s,
            total_nodes: cfg.total_nodes(),
            hosts,
        }
    }

    /// Bash assignments (`LBR_*` variables, arrays per host index) for
    /// `eval "$(libratory config show --format shell ...)"`.
    pub fn to_shell(&self) -> String {
        fn var(s: &mut String, name: &str, value: &str) {
            let _ = writeln!(s, "{name}={}", shell_quote(value));
        }
        fn arr(s: &mut String, name: &str, values: &[String]) {
            let quoted: Vec<String> = values.iter().map(|v| shell_quote(v)).collect();
            let _ = writeln!(s, "{name}=({})", quoted.join(" "));
        }
        let mut s = String::from("# libratory config show --format shell: eval in bash\n");
        var(&mut s, "LBR_CONFIG", &self.config.to_string_lossy());
        var(&mut s, "LBR_NAME", &self.name);
        var(&mut s, "LBR_CONFIG_ID", &self.config_id);
        var(&mut s, "LBR_LISTEN", &self.manager.listen);
        var(&mut s, "LBR_PORT", &self.manager.port.to_string());
        var(&mut s, "LBR_DIAL", &self.manager.dial);
        var(&mut s, "LBR_LOCAL_DIAL", &self.manager.local_dial);
        var(&mut s, "LBR_SLURM_DIAL", &self.manager.slurm_dial);
        var(&mut s, "LBR_CERTS", &self.manager.certs.to_string_lossy());
        var(&mut s, "LBR_OUTPUT_DIR", &self.output_dir.to_string_lossy());
        var(
            &mut s,
            "LBR_FAULTS",
            &self
                .faults
                .as_ref()
                .map_or(String::new(), |f| f.to_string_lossy().into_owned()),
        );
        var(
            &mut s,
            "LBR_MAX_SKEW_MS",
            &self.max_clock_skew_ms.to_string(),
        );
        var(
            &mut s,
            "LBR_PROBE_TIMEOUT_S",
            &self.probe_timeout_s.to_string(),
        );
        var(&mut s, "LBR_STOP_GRACE_S", &self.stop_grace_s.to_string());
        var(&mut s, "LBR_TOTAL_NODES", &self.total_nodes.to_string());
        var(&mut s, "LBR_NHOSTS", &self.hosts.len().to_string());
        let names: Vec<String> = self.hosts.iter().map(|h| h.name.clone()).collect();
        var(&mut s, "LBR_CERT_NAMES", &names.join(","));
        arr(&mut s, "LBR_HOSTS", &names);
        arr(&mut s, "LBR_SBATCH", &self.sbatch);
        for (i, h) in self.hosts.iter().enumerate() {
            arr(&mut s, &format!("LBR_SSH_ARGS_{i}"), &h.ssh_args);
            arr(&mut s, &format!("LBR_CERT_FILES_{i}"), &h.cert_files);
            arr(&mut s, &format!("LBR_LABELS_{i}"), &h.labels);
            arr(&mut s, &format!("LBR_NODE_ARGS_{i}"), &h.node_args);
            var(&mut s, &format!("LBR_TARGET_{i}"), &h.target);
            var(&mut s, &format!("LBR_WORK_{i}"), &h.work_dir);
            var(&mut s, &format!("LBR_NODE_BIN_{i}"), &h.node_binary);
            var(
                &mut s,
                &format!("LBR_COPY_BIN_{i}"),
                if h.copy_binary { "1" } else { "0" },
            );
            var(&mut s, &format!("LBR_NODES_{i}"), &h.nodes.to_string());
        }
        s
    }
}

/// Renderings of a plan (`libratory config show --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// bash assignments to `eval`.
    Shell,
    /// The plan as JSON.
    Json,
    /// sbatch options, one per line.
    Sbatch,
}

impl LaunchPlan {
    /// The plan in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Shell => self.to_shell(),
            Format::Json => serde_json::to_string_pretty(self).expect("a plan serialises") + "\n",
            Format::Sbatch => self.sbatch.iter().map(|o| format!("{o}\n")).collect(),
        }
    }
}

/// sbatch options for a Slurm run of `cfg`: one task per host, enough
/// CPUs for the busiest host's nodes.
fn sbatch_options(cfg: &ClusterConfig, name: &str) -> Vec<String> {
    let sl = &cfg.slurm;
    let cpus = sl.cpus_per_host.unwrap_or_else(|| {
        cfg.hosts
            .iter()
            .map(|h| (h.processes as f64 * h.nodes_per_process as f64 * h.capacity - 1e-9).ceil())
            .fold(1.0_f64, f64::max) as usize
    });
    let mut o = vec![
        format!("--job-name=libratory-{name}"),
        format!("--nodes={}", cfg.hosts.len().max(1)),
        "--ntasks-per-node=1".to_string(),
        format!("--cpus-per-task={cpus}"),
        format!("--time={}", sl.time_limit),
    ];
    if let Some(p) = &sl.partition {
        o.push(format!("--partition={p}"));
    }
    if let Some(a) = &sl.account {
        o.push(format!("--account={a}"));
    }
    o.extend(sl.sbatch_options.iter().cloned());
    o
}

/// `s` as one bash word: single quotes, with each `'` written `'\''`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAB: &str = r#"
[manager]
listen = "0.0.0.0:7878"
advertise = "10.0.0.1:7878"
certs = "certs"
time_scale = 0.01

[workload]
preset = "libra"
policy = "libra"

[launch]
ssh_options = ["StrictHostKeyChecking=accept-new"]

[slurm]
partition = "batch"

[[hosts]]
name = "a"
ssh = "me@a.lab"
ssh_port = 2222
ssh_options = ["IdentityFile=~/.ssh/it's mine"]
processes = 2
nodes_per_process = 4
capacity = 0.25

[[hosts]]
name = "b"
nodes_per_process = 2
capacity = 0.5
node_binary = "/opt/libratory/bin/libratory-node"
executors = 1
"#;

    fn plan() -> LaunchPlan {
        let cfg = ClusterConfig::parse(Path::new("/etc/lab/lab.toml"), LAB).unwrap();
        LaunchPlan::new(&cfg, Path::new("/etc/lab/lab.toml"))
    }

    #[test]
    fn hosts_are_resolved() {
        let p = plan();
        assert_eq!(p.name, "lab");
        assert_eq!(p.manager.dial, "10.0.0.1:7878");
        assert_eq!(p.total_nodes, 10);
        let a = &p.hosts[0];
        assert_eq!(a.work_dir, "/tmp/libratory/a");
        assert_eq!(a.node_binary, "/tmp/libratory/a/bin/libratory-node");
        assert!(a.copy_binary);
        assert_eq!(a.labels, ["a-0", "a-1"]);
        assert_eq!(&a.ssh_args[..2], ["-p", "2222"]);
        // The host's own options come first: ssh keeps the first value.
        assert_eq!(a.ssh_args[3], "IdentityFile=~/.ssh/it's mine");
        assert_eq!(a.ssh_args[5], "StrictHostKeyChecking=accept-new");
        assert!(a.ssh_args.contains(&"BatchMode=yes".to_string()));
        let b = &p.hosts[1];
        assert!(b.ssh_args.is_empty() && b.target.is_empty());
        assert!(!b.copy_binary);
        assert_eq!(b.node_args[b.node_args.len() - 2..], ["--executors", "1"]);
        assert_eq!(b.cert_files, ["ca.pem", "node-b.pem", "node-b.key"]);
    }

    /// A relative work directory is the ssh user's home's on a host with
    /// ssh (left relative: ssh starts there) and the configuration's
    /// directory's on this machine, wherever the scripts run from.
    #[test]
    fn relative_work_dirs_are_resolved_where_they_are_meant() {
        let text = LAB
            .replace(
                "capacity = 0.25\n",
                "capacity = 0.25\nwork_dir = \"lab/a\"\n",
            )
            .replace(
                "node_binary = \"/opt/libratory/bin/libratory-node\"",
                "work_dir = \"runs/b\"\nnode_binary = \"bin/libratory-node\"",
            );
        let cfg = ClusterConfig::parse(Path::new("/etc/lab/lab.toml"), &text).unwrap();
        let p = LaunchPlan::new(&cfg, Path::new("/etc/lab/lab.toml"));
        assert_eq!(p.hosts[0].work_dir, "lab/a");
        assert_eq!(p.hosts[0].node_binary, "lab/a/bin/libratory-node");
        assert_eq!(p.hosts[1].work_dir, "/etc/lab/runs/b");
        assert_eq!(p.hosts[1].node_binary, "/etc/lab/bin/libratory-node");
    }

    #[test]
    fn sbatch_options_come_from_the_config() {
        let p = plan();
        assert_eq!(
            p.sbatch,
            [
                "--job-name=libratory-lab",
                "--nodes=2",
                "--ntasks-per-node=1",
                "--cpus-per-task=2",
                "--time=00:30:00",
                "--partition=batch"
            ]
        );
    }

    #[test]
    fn shell_rendering_survives_bash() {
        let text = plan().to_shell();
        assert!(text.contains("LBR_TARGET_0='me@a.lab'\n"), "{text}");
        // Let bash itself read it back (bash is on every machine we run).
        let script = format!(
            "{text}\nprintf '%s|' \"${{LBR_SSH_ARGS_0[3]}}\" \"${{#LBR_LABELS_0[@]}}\" \"$LBR_TARGET_1\" \"${{LBR_HOSTS[1]}}\" \"$LBR_CERT_NAMES\""
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "IdentityFile=~/.ssh/it's mine|2||b|a,b|"
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("plain"), "'plain'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
