//! `libratory inject --config C --faults F --run RUN`: the fault injector
//! as its own process, for the node processes the launch scripts start
//! (`scripts/launch.sh --faults F` runs it beside the manager). It expands
//! the scenario for the configuration's processes as `run` does, waits
//! for the run's replay to start (`RUN/journal.jsonl`), executes each
//! node fault through the host's agent (over ssh, or on this machine for
//! a host without ssh: [`super::exec::Agent`]) and reports it to the
//! manager with the `operator` identity.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context, Result};
use common::faults::FaultKind;

use super::exec::{Agent, AgentProcess};
use super::report::Reporter;
use super::Setup;
use crate::cluster::config::ClusterConfig;
use crate::cluster::launch::LaunchPlan;
use crate::faults::ScenarioFile;
use crate::live::journal::JOURNAL;
use crate::live::setup;
use crate::results::rundir::Log;

/// The agent executor of a configuration's node processes, in launch
/// order.
pub fn agent_of(cfg: &ClusterConfig, config_path: &Path) -> Agent {
    let plan = LaunchPlan::new(cfg, config_path);
    let mut processes = Vec::new();
    for h in &plan.hosts {
        let ssh = if h.target.is_empty() {
            Vec::new()
        } else {
            let mut v = vec!["ssh".to_string()];
            v.extend(h.ssh_args.iter().cloned());
            v.push(h.target.clone());
            v
        };
        for label in &h.labels {
            processes.push(AgentProcess {
                label: label.clone(),
                host: h.name.clone(),
                ssh: ssh.clone(),
                work: h.work_dir.clone(),
            });
        }
    }
    Agent { processes }
}

/// `libratory inject` (see the module header). Ends when every node fault
/// is done.
pub fn inject(config: &Path, faults: Option<&Path>, run: &Path) -> Result<()> {
    let cfg = ClusterConfig::load(config)?;
    let faults = faults.or(cfg.workload.faults.as_deref()).context(
        "no fault scenario: give --faults FILE or [workload] faults in the configuration",
    )?;
    let sf = ScenarioFile::load(faults)?;
    let (exp, wl) = setup::experiment_of(&cfg)?;
    let mut log = Log::new();
    let (plan, _) = setup::fault_plan(&sf, &cfg, |_| Ok(()), &wl, exp.params.seed, &mut log)?;
    for f in plan
        .faults
        .iter()
        .filter(|f| f.kind == FaultKind::ManagerCrash)
    {
        log.say(format_args!(
            "inject: {f}: not mine: the supervisor of `libratory run --faults` (the manager) executes it"
        ));
    }
    let certs = &cfg.manager.certs;
    check_operator(certs)?;
    let mut agent = agent_of(&cfg, config);
    let first_submit = wl.jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let journal = run.join(JOURNAL);
    log.say(format_args!(
        "inject: {} node fault act(s) on {} node process(es), timed from the replay's start in {}; reports to the manager at {} as `operator`",
        super::steps(&plan).len(),
        agent.processes.len(),
        journal.display(),
        cfg.local_dial_address()
    ));
    let reporter = Reporter::start(cfg.local_dial_address(), certs.clone());
    let stop = AtomicBool::new(false);
    super::run(
        Setup {
            plan: &plan,
            time_scale: cfg.manager.time_scale,
            first_submit,
            journal: &journal,
        },
        &mut agent,
        &reporter,
        &stop,
    );
    reporter.finish(&stop);
    log.say(format_args!("inject: every node fault is done"));
    Ok(())
}

/// The operator identity must be in `certs` before faults run: without it
/// the manager is never told, and losses would not name their faults.
pub fn check_operator(certs: &Path) -> Result<()> {
    let (pem, _) = net::CertPaths::new(certs).identity(net::OPERATOR_NAME);
    if !pem.exists() {
        bail!(
            "{}: no operator certificate (the fault injector's identity, with which it reports \
             the faults it applies to the manager): add it with `libratory certs --out {} --add`",
            pem.display(),
            certs.display()
        );
    }
    Ok(())
}
