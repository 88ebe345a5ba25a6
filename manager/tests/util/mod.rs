//! What the live integration tests share: the real binaries, a free
//! loopback port, a cluster CA, and the guard that kills the processes a
//! test starts when it lets go of them.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// The `libratory` binary under test.
pub fn libratory() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_libratory"))
}

/// `libratory run --spawn-local --config CFG --out OUT`, to add to (an
/// environment variable, pipes) and run.
pub fn run_local(cfg: &std::path::Path, out: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(libratory());
    c.args(["run", "--spawn-local", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(out);
    c
}

/// The `libratory-node` binary beside it (another crate's binary: built by
/// `cargo build --workspace --bins`, which scripts/test.sh runs first).
pub fn node_bin() -> PathBuf {
    let p = libratory().with_file_name("libratory-node");
    assert!(
        p.is_file(),
        "{} is missing: build the workspace binaries first (scripts/test.sh does: cargo build --workspace --bins)",
        p.display()
    );
    p
}

/// A free UDP port on loopback (bound and released; the race with another
/// process taking it in between is harmless on a test machine).
pub fn free_port() -> u16 {
    net::free_udp_port().expect("a free UDP port on loopback")
}

/// A cluster CA, the manager's certificate and node certificates `nodes`
/// (comma-separated names) in `dir`.
pub fn certs(dir: &Path, nodes: &str) {
    let o = Command::new(libratory())
        .args(["certs", "--out"])
        .arg(dir)
        .args(["--nodes", nodes])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A `libratory` or `libratory-node` process that is killed, with every
/// process of its group (the node processes a `--spawn-local` run starts,
/// a Batsim scheduler), when the test lets go of it: a failed assertion
/// must leave nothing burning CPU behind it (a serving manager never ends
/// on its own, and orphaned node processes only after their link times
/// out). [`Guard::spawn`] makes the child lead its own process group.
pub struct Guard(Option<Child>);

impl Guard {
    /// Spawns `cmd` as the leader of a new process group.
    pub fn spawn(cmd: &mut Command) -> Guard {
        use std::os::unix::process::CommandExt;
        let child = cmd
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
        Guard(Some(child))
    }

    /// Waits for the process to end and collects its output, as
    /// [`Child::wait_with_output`] does; what is left of its group is
    /// killed afterwards.
    pub fn wait_with_output(mut self) -> std::io::Result<Output> {
        let child = self.0.take().expect("a guarded child");
        let pid = child.id();
        let o = child.wait_with_output();
        kill_group(pid);
        o
    }
}

/// Runs `cmd` (in a process group of its own) and collects its output,
/// as [`Command::output`] does, but for at most `limit`: a process still
/// running then gets SIGTERM (a run writes what it has), its group SIGKILL
/// 15 s later, and the test fails with what it printed. A wedged run fails
/// the suite instead of hanging it.
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let child = Guard::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
        .0
        .take()
        .expect("a guarded child");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(o) => {
            kill_group(pid);
            o.expect("wait for the child")
        }
        Err(_) => {
            // SAFETY: kill(2) on our child, which the waiter has not
            // reaped (it is still running).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            let o = rx.recv_timeout(std::time::Duration::from_secs(15));
            kill_group(pid);
            let o = o
                .or_else(|_| rx.recv())
                .expect("the waiter reports")
                .expect("wait for the child");
            panic!(
                "{:?} did not end within {limit:?} (stopped with SIGTERM)\nstdout:\n{}\nstderr:\n{}",
                cmd.get_program(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

/// SIGKILL to the process group `pid` leads (ESRCH, nobody left, is fine).
fn kill_group(pid: u32) {
    // SAFETY: kill(2) on a group this test's child leads; no memory is
    // passed.
    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
}

impl std::ops::Deref for Guard {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().expect("a guarded child")
    }
}

impl std::ops::DerefMut for Guard {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("a guarded child")
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            kill_group(c.id());
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
