//! Where a fault's [`Action`] is carried out: on the node processes this
//! process started ([`Children`]: signals to the children it holds, a
//! restart with the same command, the control file written here), or on
//! the processes the launch scripts started on each host ([`Agent`]: the
//! same through the host's agent, `libratory-host WORK fault LABEL ...`,
//! run over ssh, or by bash on this machine for a host without ssh). The
//! agent keeps each node process's pid in `WORK/run/LABEL.pid`, its
//! command line in `WORK/run/LABEL.cmd` and its control file at
//! `WORK/run/LABEL.fault`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::{Action, Sig};
use crate::live::local_nodes::start_node;

/// Carries out actions on a run's node processes, known by their
/// position in launch order.
pub trait Executor {
    /// The label of process `p`.
    fn label(&self, p: usize) -> String;
    /// Carries out `action` on process `p`; says what was done.
    fn apply(&mut self, p: usize, action: &Action) -> Result<String>;
    /// Process `p`'s exit status if it has exited with an error.
    fn failed(&mut self, p: usize) -> Option<String>;
    /// How often [`Executor::failed`] may be asked.
    fn poll_every(&self) -> Duration;
}

/// How a local node process was started: program, arguments, log file.
pub type NodeCommand = (PathBuf, Vec<OsString>, PathBuf);

/// The node processes this process started, as children.
pub struct Children {
    /// (label, child) in launch order, shared with `LocalNodes`.
    pub children: Arc<Mutex<Vec<(String, Child)>>>,
    /// How each was started.
    pub commands: Vec<NodeCommand>,
}

impl Children {
    /// The executor on the node processes `nodes` started.
    pub fn of(nodes: &crate::live::local_nodes::LocalNodes) -> Children {
        Children {
            children: nodes.children.clone(),
            commands: nodes.commands.clone(),
        }
    }
}

impl Executor for Children {
    fn label(&self, p: usize) -> String {
        let c = self.children.lock().unwrap_or_else(|e| e.into_inner());
        c.get(p).map_or_else(|| format!("#{p}"), |(l, _)| l.clone())
    }

    fn apply(&mut self, p: usize, action: &Action) -> Result<String> {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let Some((label, child)) = children.get_mut(p) else {
            bail!("no node process {p} was started here");
        };
        let pid = child.id();
        Ok(match action {
            Action::Signal(Sig::Kill) => {
                let _ = child.kill();
                let _ = child.wait();
                format!("SIGKILL to node process {label} (pid {pid})")
            }
            Action::Signal(s) => {
                signal(pid, s.number());
                format!("SIG{} to node process {label} (pid {pid})", s.name())
            }
            Action::Restart => {
                if let Ok(None) = child.try_wait() {
                    bail!("node process {label} still runs (pid {pid}): not started twice");
                }
                // The control file is the old process's: the new one
                // reads it from its first line.
                if let Some(file) = control_file(&self.commands[p].1) {
                    let _ = std::fs::write(&file, "");
                }
                let c = start_node(
                    &self.commands[p].0,
                    &self.commands[p].1,
                    &self.commands[p].2,
                )
                .with_context(|| format!("node process {label} could not be started again"))?;
                let new = c.id();
                *child = c;
                format!("node process {label} started again (pid {new})")
            }
            Action::Control(line) => {
                let file = control_file(&self.commands[p].1)
                    .with_context(|| format!("node process {label} has no --fault-control file"))?;
                // Appended: two faults of one process at an instant (on
                // two of its nodes) may meet one signal.
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&file)
                    .and_then(|mut f| {
                        std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes())
                    })
                    .with_context(|| {
                        format!("writing the link fault of {label} to {}", file.display())
                    })?;
                signal(pid, libc::SIGUSR1);
                format!("`{line}` (real seconds) to node process {label}'s link (pid {pid})")
            }
            Action::Nothing => format!("node process {label}'s link fault is over"),
        })
    }

    fn failed(&mut self, p: usize) -> Option<String> {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let (_, child) = children.get_mut(p)?;
        // Exit 0 is the manager's shutdown at the run's end.
        match child.try_wait() {
            Ok(Some(st)) if !st.success() => Some(st.to_string()),
            _ => None,
        }
    }

    fn poll_every(&self) -> Duration {
        Duration::from_millis(10)
    }
}

/// The `--fault-control` file in a node command's arguments.
fn control_file(args: &[OsString]) -> Option<PathBuf> {
    let k = args.iter().position(|a| a == "--fault-control")?;
    args.get(k + 1).map(PathBuf::from)
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a child's pid we still hold (not yet reaped, so
    // the pid cannot have been reused); no memory is involved.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// One node process as the launch scripts' agent knows it.
#[derive(Debug, Clone)]
pub struct AgentProcess {
    /// Its label (`NAME-K`).
    pub label: String,
    /// Its host's name, for messages.
    pub host: String,
    /// ssh and its arguments up to the destination (`ssh -p 2201 -o ...
    /// root@10.77.0.11`); empty: the host is this machine.
    pub ssh: Vec<String>,
    /// The host's work directory (where the agent is, `WORK/bin`).
    pub work: String,
}

/// The node processes the launch scripts started, reached through each
/// host's agent.
pub struct Agent {
    /// In launch order.
    pub processes: Vec<AgentProcess>,
}

impl Agent {
    /// Runs `libratory-host WORK fault LABEL ARGS...` for process `p`;
    /// returns what it printed.
    fn agent(&self, p: usize, args: &[&str]) -> Result<String> {
        let ap = self
            .processes
            .get(p)
            .with_context(|| format!("no node process {p} in the launch plan"))?;
        let mut words = vec![
            "bash".to_string(),
            format!("{}/bin/libratory-host", ap.work),
            ap.work.clone(),
            "fault".into(),
            ap.label.clone(),
        ];
        words.extend(args.iter().map(|s| s.to_string()));
        let mut cmd = if ap.ssh.is_empty() {
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]);
            c
        } else {
            // ssh hands the remote shell one string: quote every word.
            let line = words
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" ");
            let mut c = Command::new(&ap.ssh[0]);
            c.args(&ap.ssh[1..]).arg(line);
            c
        };
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running the agent of host {}", ap.host))?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!(
                "host {} ({}): the agent's `fault {} {}` failed ({}): {}",
                ap.host,
                if ap.ssh.is_empty() {
                    "this machine"
                } else {
                    "over ssh"
                },
                ap.label,
                args.join(" "),
                out.status,
                err.trim()
            );
        }
        Ok(text)
    }
}

impl Executor for Agent {
    fn label(&self, p: usize) -> String {
        self.processes
            .get(p)
            .map_or_else(|| format!("#{p}"), |a| a.label.clone())
    }

    fn apply(&mut self, p: usize, action: &Action) -> Result<String> {
        let said = match action {
            Action::Signal(s) => self.agent(p, &["signal", s.name()])?,
            Action::Restart => self.agent(p, &["restart"])?,
            Action::Control(line) => self.agent(p, &["control", line])?,
            Action::Nothing => {
                return Ok(format!(
                    "node process {}'s link fault is over",
                    self.label(p)
                ))
            }
        };
        let ap = &self.processes[p];
        let how = if ap.ssh.is_empty() {
            "this machine".to_string()
        } else {
            format!("over ssh, {}", ap.ssh.last().map_or("", String::as_str))
        };
        Ok(format!("{said} (host {}, {how})", ap.host))
    }

    fn failed(&mut self, p: usize) -> Option<String> {
        let st = self.agent(p, &["exited"]).ok()?;
        // The agent prints the exit code of a process that ended, nothing
        // for one that runs; 0 is the manager's shutdown.
        match st.as_str() {
            "" | "0" => None,
            code => Some(format!("exit status: {code}")),
        }
    }

    fn poll_every(&self) -> Duration {
        // An ssh round trip each.
        Duration::from_millis(500)
    }
}

/// `s` as one POSIX shell word.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_survive_quoting() {
        assert_eq!(
            shell_quote("/w/bin/libratory-host"),
            "/w/bin/libratory-host"
        );
        assert_eq!(shell_quote("delay 150 10 0.1 3"), "'delay 150 10 0.1 3'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    /// The agent executor runs the real agent script on this machine (a
    /// host without ssh): a process it started is stopped, continued,
    /// signalled through its control file, killed, and started again with
    /// its command line; the pid file follows the restart.
    #[test]
    fn the_agent_executes_actions_on_a_process_it_started() {
        let work = tempfile::tempdir().unwrap();
        let w = work.path();
        std::fs::create_dir_all(w.join("bin")).unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::copy(
            root.join("scripts/libratory-host.sh"),
            w.join("bin/libratory-host"),
        )
        .unwrap();
        // A stand-in the agent accepts as a node process (its command
        // line holds `libratory-node`): a shell that records SIGUSR1.
        let fake = w.join("bin/libratory-node-fake");
        std::fs::write(
            &fake,
            "#!/bin/bash\ntrap 'cat \"$2\" >>\"$2.got\"' USR1\nwhile :; do sleep 0.05; done\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let ws = w.to_str().unwrap();
        let ctl = w.join("run/a-0.fault");
        let st = Command::new("bash")
            .args([
                &format!("{ws}/bin/libratory-host"),
                ws,
                "start",
                "a-0",
                fake.to_str().unwrap(),
                "--fault-control",
                ctl.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(st.status.success(), "{st:?}");
        let pid = |w: &std::path::Path| std::fs::read_to_string(w.join("run/a-0.pid")).unwrap();
        // A failed assertion must not leave the stand-in running.
        struct Reap(PathBuf);
        impl Drop for Reap {
            fn drop(&mut self) {
                if let Ok(p) = std::fs::read_to_string(self.0.join("run/a-0.pid")) {
                    if let Ok(p) = p.trim().parse::<u32>() {
                        signal(p, libc::SIGKILL);
                    }
                }
            }
        }
        let _reap = Reap(w.to_path_buf());
        let first = pid(w);
        let mut agent = Agent {
            processes: vec![AgentProcess {
                label: "a-0".into(),
                host: "a".into(),
                ssh: vec![],
                work: ws.into(),
            }],
        };
        let state = |p: &str| {
            std::fs::read_to_string(format!("/proc/{}/stat", p.trim()))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap()
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .to_string()
                })
                .unwrap_or_default()
        };
        // A signal is delivered asynchronously: wait for its effect.
        let until = |ok: &dyn Fn() -> bool| {
            let t = std::time::Instant::now();
            while !ok() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
            }
            ok()
        };
        let said = agent.apply(0, &Action::Signal(Sig::Stop)).unwrap();
        assert!(said.contains("SIGSTOP to node process a-0"), "{said}");
        assert!(until(&|| state(&first) == "T"));
        agent.apply(0, &Action::Signal(Sig::Cont)).unwrap();
        assert!(until(&|| state(&first) != "T"));
        agent
            .apply(0, &Action::Control("partition 2".into()))
            .unwrap();
        // The stand-in copies the control file when SIGUSR1 arrives (the
        // copy may be seen half written).
        let got = w.join("run/a-0.fault.got");
        let read = || std::fs::read_to_string(&got).unwrap_or_default();
        assert!(until(&|| read() == "partition 2\n"), "{:?}", read());
        let said = agent.apply(0, &Action::Signal(Sig::Kill)).unwrap();
        assert!(said.contains("SIGKILL to node process a-0"), "{said}");
        assert_eq!(agent.failed(0).as_deref(), Some("exit status: 137"));
        let said = agent.apply(0, &Action::Restart).unwrap();
        assert!(said.contains("started again"), "{said}");
        let second = pid(w);
        assert_ne!(first, second);
        assert_eq!(agent.failed(0), None);
        agent.apply(0, &Action::Signal(Sig::Kill)).unwrap();
    }
}
