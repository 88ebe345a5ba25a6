//! The harness's scenario: everything a run is, drawn from its seed (the
//! policy, the workload, the fault schedule), and the journal header a
//! restarted manager reads its run's settings from.

use common::experiment::Experiment;
use common::time::Time;
use common::workload::{self, WorkloadJob};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cluster::config::ClusterConfig;
use crate::live::journal::{self, Header, JournalWorkload};

/// The policies a seed picks from: time-shared ones (shares on the
/// nodes) and a space-shared queue (exclusive parts, a scheduling pass).
const POLICIES: [&str; 4] = ["libra", "libra-plus-dollar", "libra-sla", "fcfs-bf"];

/// One run's setting, all drawn from `seed`.
#[derive(Debug, Clone)]
pub(in crate::live::manager) struct Scenario {
    pub(in crate::live::manager) seed: u64,
    pub(in crate::live::manager) policy: &'static str,
    pub(in crate::live::manager) jobs: usize,
    pub(in crate::live::manager) processes: usize,
    pub(in crate::live::manager) nodes_per_process: usize,
    /// Real seconds per trace second.
    pub(in crate::live::manager) time_scale: f64,
    /// The link timeout (real seconds): how long a dead peer goes unseen.
    pub(in crate::live::manager) link_timeout: f64,
    /// How long node processes keep their parts without a manager, and
    /// how long a restarted manager waits for them (`manager_grace_s`).
    pub(in crate::live::manager) grace: f64,
    pub(in crate::live::manager) faults: Vec<Fault>,
}

/// A fault of the schedule, at a trace time after the replay's start (a
/// negative one: that long after the harness starts, while the processes
/// register). A manager crash is always after the replay's start (before
/// it, `libratory resume` has nothing to take over); the manager is
/// down `down` trace seconds.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::live::manager) enum Fault {
    Crash { process: usize, at: Time },
    Reset { process: usize, at: Time },
    Partition { process: usize, at: Time, len: Time },
    ManagerCrash { at: Time, down: Time },
}

impl Fault {
    pub(super) fn at(&self) -> Time {
        match self {
            Fault::Crash { at, .. }
            | Fault::Reset { at, .. }
            | Fault::Partition { at, .. }
            | Fault::ManagerCrash { at, .. } => *at,
        }
    }
}

impl Scenario {
    /// The scenario of `seed`: `jobs` jobs on 3 node processes of 3 nodes.
    pub(in crate::live::manager) fn of(seed: u64, jobs: usize) -> Scenario {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5ce7a110);
        let policy = POLICIES[rng.random_range(0..POLICIES.len())];
        let processes = 3;
        let time_scale = 0.01;
        let link_timeout = 3.0;
        let grace = 30.0;
        let timeout_trace = link_timeout / time_scale;
        let n = rng.random_range(0..=4);
        let faults = (0..n)
            .map(|_| {
                let process = rng.random_range(0..processes);
                // One in six while the processes register (a negative time:
                // that many trace seconds after the harness starts).
                let at: Time = if rng.random_range(0..6) == 0 {
                    -rng.random_range(0.0..12.0)
                } else {
                    rng.random_range(0.0..1500.0)
                };
                match rng.random_range(0..5) {
                    // 0.5-10 s of real time down, well within the grace.
                    4 => Fault::ManagerCrash {
                        at: at.abs(),
                        down: rng.random_range(0.5..10.0) / time_scale,
                    },
                    0 => Fault::Crash { process, at },
                    1 => Fault::Reset { process, at },
                    2 => Fault::Partition {
                        process,
                        at,
                        len: rng.random_range(1.0..0.9 * timeout_trace),
                    },
                    _ => Fault::Partition {
                        process,
                        at,
                        len: rng.random_range(1.1 * timeout_trace..3.0 * timeout_trace),
                    },
                }
            })
            .collect();
        Scenario {
            seed,
            policy,
            jobs,
            processes,
            nodes_per_process: 3,
            time_scale,
            link_timeout,
            grace,
            faults,
        }
    }

    /// The workload: the Libra paper's synthetic batch of the seed, with
    /// 1 to 3 processors a job (so a lost job has parts elsewhere to
    /// cancel) and runtime estimates off by up to 20% either way.
    pub(in crate::live::manager) fn workload(&self) -> Vec<WorkloadJob> {
        let mut p = workload::Params::preset("libra").expect("the libra preset");
        p.seed = self.seed;
        p.jobs = self.jobs;
        let mut jobs = workload::synthetic_libra(&p).jobs;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x3019);
        for j in &mut jobs {
            j.spec.resources.processors = rng.random_range(1..=3);
            let e = j.spec.details.runtime_estimate * rng.random_range(0.8..1.2);
            j.spec.details.runtime_estimate = e.max(1.0);
        }
        jobs
    }

    /// The journal's header as `libratory run` writes it for this
    /// scenario: what `libratory resume` reads the run's settings from
    /// (the time scale, the grace); the rest is the run's description.
    pub(super) fn header(&self) -> Header {
        let cluster = ClusterConfig::parse(
            std::path::Path::new("<harness>"),
            &format!(
                "[manager]\nlisten = \"127.0.0.1:1\"\ncerts = \"certs\"\ntime_scale = {}\n\
                 link_timeout_s = {}\nmanager_grace_s = {}\n[workload]\npreset = \"libra\"\n\
                 policy = \"{}\"\n[[hosts]]\nname = \"p\"\nprocesses = {}\nnodes_per_process = {}\n\
                 capacity = 1.0\n",
                self.time_scale,
                self.link_timeout,
                self.grace,
                self.policy,
                self.processes,
                self.nodes_per_process
            ),
        )
        .expect("the harness's cluster configuration is valid");
        Header {
            format: journal::FORMAT.into(),
            command_line: vec!["libratory".into(), "harness".into()],
            working_dir: "/".into(),
            started_unix: 0,
            started_utc: "1970-01-01T00:00:00Z".into(),
            seed: self.seed,
            policy: self.policy.into(),
            time_scale: self.time_scale,
            cluster,
            experiment: Experiment::preset("libra").expect("the libra preset"),
            trace: None,
            workload: JournalWorkload {
                facts: crate::results::rundir::WorkloadFacts {
                    jobs: self.jobs,
                    nodes: self.processes * self.nodes_per_process,
                    first_arrival: 0.0,
                    last_arrival: 0.0,
                    odd_records: workload::OddRecords::default(),
                },
                duplicates: 0,
            },
            faults: None,
        }
    }
}
