//! The manager's side of the harness's world: the live core's actions
//! carried out, its journal kept as the writer writes it, and its crash
//! and restart. A crash drops the core (frames in flight either way are
//! lost, every connection is reset: each node process notices at once or
//! after its idle timeout); after the downtime a new core takes the run
//! over the way `libratory resume` does: the journal's bytes are parsed
//! (`journal::parse`), read into a `ResumeState`, checked resumable, made
//! a `Takeover` by `resume::takeover`, and `LiveCore::resumed` built from
//! it.
//!
//! The fault injector's reports of the crashes and partitions go to the
//! manager running, else wait for the next one; each manager crash costs
//! the answer to the last report it took, so its successor gets that one
//! again (the injector's sending again after a lost answer).

use std::collections::VecDeque;
use std::time::Duration;

use common::admission::ManagerCore;
use common::policy::{self, PolicyConfig};
use common::protocol::{ClientMsg, FaultAct, ManagerMsg};
use common::share::SpareRule;
use common::time::Time;
use rand::Rng;

use super::scenario::Scenario;
use super::world::{Ev, World};
use crate::live::journal::{self, writer::write_entry, Entry};
use crate::live::manager::core::{Action, CoreConfig, Event, FaultKey, LiveCore, Now, Timer, When};
use crate::live::resume::takeover;
use crate::live::resume_state::{check_resumable, ResumeState};

/// The live core's configuration for `sc`.
pub(super) fn core_config(sc: &Scenario) -> CoreConfig {
    CoreConfig {
        time_scale: sc.time_scale,
        expect_nodes: sc.processes * sc.nodes_per_process,
        serve: false,
        journal: true,
        start_timeout: Duration::from_secs(30),
        histogram_timeout: Duration::from_secs(5),
        report_ms: 500,
        heartbeat_ms: 200,
        histogram_ms: 10_000,
        spare_rule: SpareRule::default(),
        rejoin_wait: Duration::from_secs_f64(sc.link_timeout),
    }
}

fn build_policy(sc: &Scenario) -> ManagerCore {
    ManagerCore::new(
        policy::build(sc.policy, &PolicyConfig::default(), &[]).expect("a registered policy"),
    )
}

/// The fault injector's reports (see the module docs): (what, its kind,
/// when applied).
#[derive(Default)]
pub(super) struct Reports {
    queue: VecDeque<(FaultKey, &'static str, Time)>,
    last: Option<(FaultKey, &'static str, Time)>,
}

/// The client id of the fault injector's connection.
const INJECTOR: u64 = u64::MAX;

impl World {
    /// The injector applied `act` of fault `fault` (of `kind`) to node
    /// process `process` now.
    pub(super) fn report(
        &mut self,
        fault: &str,
        act: FaultAct,
        kind: &'static str,
        process: String,
    ) {
        let key = FaultKey {
            fault: fault.to_string(),
            act,
            process,
            node: None,
        };
        self.reports.queue.push_back((key, kind, self.now));
        self.deliver_reports();
    }

    /// Delivers the waiting reports, if a manager runs.
    fn deliver_reports(&mut self) {
        while self.mgr.is_some() {
            let Some((key, kind, at)) = self.reports.queue.pop_front() else {
                return;
            };
            self.run.reported.insert(key.clone());
            self.reports.last = Some((key.clone(), kind, at));
            self.mgr(Event::Client {
                client: INJECTOR,
                msg: ClientMsg::FaultApplied {
                    token: 0,
                    fault: key.fault,
                    kind: kind.into(),
                    process: key.process,
                    act: key.act,
                    what: "applied".into(),
                    node: key.node,
                    factor: None,
                    age_s: (self.now - at) * self.sc.time_scale,
                },
            });
        }
    }

    /// The first manager starts.
    pub(super) fn start_manager(&mut self) {
        let core = LiveCore::new(build_policy(&self.sc), self.cfg.clone(), self.jobs.clone());
        self.mgr = Some(core);
        self.mgr_born = 0.0;
        self.actions();
    }

    /// Now on the manager's axes: the trace clock (it goes on across
    /// restarts), its own real seconds, and the journal's clock (real
    /// seconds since the first manager started).
    fn mgr_now(&self) -> Now {
        let wall = self.now * self.sc.time_scale;
        Now {
            trace: self.now,
            wall: wall - self.mgr_born,
            journal: wall,
        }
    }

    pub(super) fn mgr(&mut self, ev: Event) {
        let now = self.mgr_now();
        if let Some(m) = &mut self.mgr {
            m.handle(now, ev);
            self.actions();
        }
    }

    pub(super) fn mgr_timer(&mut self, timer: Timer) {
        if timer != Timer::Replay {
            return self.mgr(Event::Timer(timer));
        }
        // As the actor: the due jobs one event each.
        loop {
            self.mgr(Event::Timer(Timer::Replay));
            if !self.mgr.as_ref().is_some_and(|m| m.replay_due(self.now)) {
                break;
            }
        }
    }

    /// Carries out the manager core's actions.
    fn actions(&mut self) {
        let mut line = Vec::new();
        while let Some(a) = self.mgr.as_mut().and_then(LiveCore::poll_action) {
            match a {
                Action::Send { link, msg } => self.send_to_node(link, &msg),
                Action::Reply { .. } => {}
                Action::Refused { link, reason } => {
                    self.send_to_node(link, &ManagerMsg::Reject { reason });
                }
                Action::Journal(entries) | Action::Noted { entries, .. } => {
                    for e in &entries {
                        write_entry(&mut self.journal, &mut line, e).expect("writing to memory");
                        if let Entry::Fault {
                            act,
                            process,
                            fault,
                            node,
                            ..
                        } = e
                        {
                            let key = FaultKey {
                                fault: fault.clone(),
                                act: *act,
                                process: process.clone(),
                                node: *node,
                            };
                            *self.run.journal_faults.entry(key).or_default() += 1;
                        }
                        let id = match e {
                            Entry::Finished { id: Some(id), .. } => *id,
                            Entry::Finished {
                                record: Some(r), ..
                            } => r.id,
                            _ => continue,
                        };
                        *self.run.journal_finished.entry(id).or_default() += 1;
                    }
                }
                Action::Arm { timer, when } => {
                    let at = match when {
                        When::Trace(t) => t,
                        When::After(d) => self.now + d.as_secs_f64() / self.sc.time_scale,
                    };
                    let epoch = self.epoch;
                    self.at(at, Ev::Mgr { epoch, timer });
                }
                Action::ReplayStarted { offset } => {
                    // Once: a restarted manager goes on with the replay.
                    if !self.faults_armed {
                        self.faults_armed = true;
                        for k in 0..self.sc.faults.len() {
                            let at = self.sc.faults[k].at();
                            if at >= 0.0 {
                                self.at(offset + at, Ev::Fault(k));
                            }
                        }
                    }
                }
                Action::Finish => self.run.finished = true,
                // No harness scenario runs the external-scheduler policy.
                Action::SchedulerRequest(_) => self
                    .run
                    .codec_errors
                    .push("a scheduler request from a run without an external scheduler".into()),
            }
        }
    }

    /// Fault #k kills the manager process; it starts again `down` trace
    /// seconds later.
    pub(super) fn crash_manager(&mut self, k: usize, down: Time) {
        if self.mgr.is_none() || self.run.finished {
            return;
        }
        let name = format!("fault #{k}");
        self.run.happened.push(name.clone());
        self.run.manager_crashes.push((name.clone(), self.now));
        self.mgr = None;
        self.epoch += 1;
        // The answer to its last report died with it: sent again.
        if let Some(last) = self.reports.last.take() {
            self.reports.queue.push_front(last);
            self.run.resent += 1;
        }
        let timeout = self.timeout();
        let mut links: Vec<_> = self.links.keys().copied().collect();
        links.sort_unstable();
        for link in links {
            let l = self.links.get_mut(&link).expect("listed");
            if l.cut {
                continue;
            }
            l.cut = true;
            l.mgr_open = false;
            if !l.node_open {
                continue;
            }
            // A reset (the host answers for the dead process) or the idle
            // timeout, whichever this link meets.
            // (A reset comes after the frames on the wire before it.)
            let (at, how) = if self.rng.random_range(0..2) == 0 {
                let last = l.last_to_node;
                ((self.now + self.latency()).max(last), "connection reset")
            } else {
                (self.now + timeout, "idle timeout")
            };
            let reason = format!("{name}: the manager crashed ({how})");
            self.at(at, Ev::NodeLinkDown { link, reason });
        }
        self.at(self.now + down, Ev::MgrRestart(k));
    }

    /// The manager crashed by fault #k takes the run over from its
    /// journal, through `libratory resume`'s own steps.
    pub(super) fn restart_manager(&mut self, k: usize) {
        let name = format!("fault #{k}");
        let mut bytes = Vec::with_capacity(self.journal.len() + 4096);
        let header = Entry::Header(Box::new(self.sc.header()));
        write_entry(&mut bytes, &mut Vec::new(), &header).expect("writing to memory");
        bytes.extend_from_slice(&self.journal);
        let c = match journal::parse(std::path::Path::new("<harness journal>"), &bytes) {
            Ok(c) => c,
            Err(e) => return self.cannot_resume(format!("{name}: the journal: {e}")),
        };
        let s = ResumeState::from_journal(&c);
        if let Err(why) = check_resumable(&c, &s) {
            return self.cannot_resume(format!("{name}: not resumable: {why}"));
        }
        let wall = self.now * self.sc.time_scale;
        let (t, remaining) = takeover(&c, &s, &self.jobs, wall - s.last_t, Some(&name));
        // The clock rebuilt from the journal must be the run's own.
        if (t.trace_now - self.now).abs() > 1e-6 * self.now.max(1.0) {
            self.run.codec_errors.push(format!(
                "{name}: the resumed clock starts at trace {}, the run's is at {}",
                t.trace_now, self.now
            ));
        }
        let core = LiveCore::resumed(build_policy(&self.sc), self.cfg.clone(), remaining, t);
        self.mgr = Some(core);
        self.mgr_born = wall;
        self.actions();
        self.deliver_reports();
    }

    fn cannot_resume(&mut self, why: String) {
        self.run.codec_errors.push(why);
        // Nothing can go on: the run is over, unfinished.
        self.stopped = true;
    }
}
