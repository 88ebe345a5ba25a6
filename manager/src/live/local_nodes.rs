//! The node processes a live run starts on this machine (`--spawn-local`,
//! `demo`, `calibrate`): started beside the manager (or by the run's
//! supervisor, when a fault scenario crashes the manager), logged to
//! `logs/`, killed on drop, and started again by the fault injector after
//! a crash.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::cluster::config::{ClusterConfig, HostSection};

/// Local node processes started for a run; killed if still alive on drop.
/// Shared with the fault injector (`--faults`), which signals and
/// restarts them by their position in launch order.
pub struct LocalNodes {
    /// (label, child) in launch order, shared with the fault injector's
    /// executor (`inject::exec::Children::of`).
    pub(crate) children: std::sync::Arc<std::sync::Mutex<Vec<(String, Child)>>>,
    /// How each was started (program, arguments, log file), to start it
    /// again after a crash fault.
    pub(crate) commands: Vec<(PathBuf, Vec<std::ffi::OsString>, PathBuf)>,
}

impl LocalNodes {
    /// Starts one `libratory-node` per process of every host in `hosts`
    /// on this machine, logging to `logs/`.
    pub fn spawn(
        cfg: &ClusterConfig,
        hosts: &[&HostSection],
        manager: SocketAddr,
        logs: &Path,
        fault_control: bool,
    ) -> Result<LocalNodes> {
        let exe = node_binary()?;
        fs::create_dir_all(logs).with_context(|| format!("creating {}", logs.display()))?;
        let mut children = Vec::new();
        let mut commands = Vec::new();
        for h in hosts {
            for p in 0..h.processes {
                let label = ClusterConfig::process_label(h, p);
                let log = logs.join(format!("node-{label}.log"));
                fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
                let mut args: Vec<std::ffi::OsString> = vec![
                    "--manager".into(),
                    manager.to_string().into(),
                    "--certs".into(),
                    cfg.manager.certs.clone().into(),
                    "--label".into(),
                    label.clone().into(),
                ];
                args.extend(cfg.node_args(h).into_iter().map(Into::into));
                if fault_control {
                    // (faults) Where the injector writes link faults.
                    args.push("--fault-control".into());
                    args.push(logs.join(format!("fault-control-{label}")).into());
                }
                let child = start_node(&exe, &args, &log)?;
                children.push((label, child));
                commands.push((exe.clone(), args, log));
            }
        }
        Ok(LocalNodes {
            children: std::sync::Arc::new(std::sync::Mutex::new(children)),
            commands,
        })
    }

    /// Waits up to `grace` for the processes to leave, then kills the rest.
    /// Returns (label, exit status text) per process.
    pub fn finish(self, grace: Duration) -> Vec<(String, String)> {
        let deadline = std::time::Instant::now() + grace;
        let mut out = Vec::new();
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        for (label, child) in children.iter_mut() {
            loop {
                match child.try_wait() {
                    Ok(Some(st)) => {
                        out.push((label.clone(), st.to_string()));
                        break;
                    }
                    Ok(None) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        out.push((label.clone(), "killed after the grace period".into()));
                        break;
                    }
                }
            }
        }
        children.clear();
        out
    }
}

/// Starts one node process, appending to its log (a process started again
/// after a crash fault keeps the first one's lines).
pub fn start_node(exe: &Path, args: &[std::ffi::OsString], log: &Path) -> Result<Child> {
    let file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))
}

impl Drop for LocalNodes {
    fn drop(&mut self) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        for (_, c) in children.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The `libratory-node` binary beside this one.
pub fn node_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("locating the libratory binary")?;
    let exe = me.with_file_name("libratory-node");
    if !exe.is_file() {
        bail!(
            "{} not found: build it with `cargo build --release` (it is installed beside libratory)",
            exe.display()
        );
    }
    Ok(exe)
}
