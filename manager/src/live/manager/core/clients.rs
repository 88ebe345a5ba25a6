//! The live core's dealings with clients: their requests, and which of
//! them wait for a decision.

use common::job::{JobId, JobSpec};
use common::protocol::{ClientMsg, ClientReply, ProcessUsage};
use common::workload::WorkloadJob;

use super::{Action, ClientId, LiveCore, Now, MANAGER_HISTOGRAMS, SCHEDULER_HISTOGRAM};

impl LiveCore {
    /// Whether `client` waits for a decision (its connection must be
    /// kept until it has it).
    pub(in crate::live::manager) fn waiting(&self, client: ClientId) -> bool {
        self.waiting.contains_key(&client)
    }

    pub(super) fn wait_for(&mut self, job: JobId, client: ClientId, token: u64) {
        self.pending.insert(job, (client, token));
        *self.waiting.entry(client).or_default() += 1;
    }

    pub(super) fn answered(&mut self, job: JobId) -> Option<(ClientId, u64)> {
        let (client, token) = self.pending.remove(&job)?;
        if let Some(n) = self.waiting.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                self.waiting.remove(&client);
            }
        }
        Some((client, token))
    }

    /// One client request (not a status: see [`Event::Status`]).
    pub(super) fn client(&mut self, now: Now, client: ClientId, msg: ClientMsg) {
        let reply = |s: &mut Self, reply| s.actions.push_back(Action::Reply { client, reply });
        match msg {
            ClientMsg::Submit { token, job, actual } => {
                let mut job: JobSpec = job.into();
                if self.ending() {
                    return reply(
                        self,
                        ClientReply::Error {
                            token,
                            message: "the run is over".into(),
                        },
                    );
                }
                self.next_client_job += 1;
                let id = self.next_client_job;
                job.id = id;
                job.details.submit_time = now.trace;
                let actual = actual.unwrap_or(job.details.runtime_estimate);
                self.wait_for(id, client, token);
                // Journaled if the policy queues it (an admission policy
                // decides at once): a resumed manager decides it then.
                let spec = (self.core.queues() && self.cfg.journal).then(|| Box::new(job.clone()));
                let mark = self.out.len();
                let r = self.submit(
                    now.trace,
                    WorkloadJob {
                        spec: job,
                        actual_runtime: actual,
                    },
                );
                self.total_jobs += 1;
                self.submitted += 1;
                if let Err(e) = r {
                    self.answered(id);
                    return reply(
                        self,
                        ClientReply::Error {
                            token,
                            message: e.to_string(),
                        },
                    );
                }
                self.journal_submitted(id, mark, now, spec);
                self.burst.push((id, token));
            }
            ClientMsg::Quote { token, job } => {
                let mut job: JobSpec = job.into();
                if let Err(e) = job.validate() {
                    return reply(
                        self,
                        ClientReply::Error {
                            token,
                            message: e.to_string(),
                        },
                    );
                }
                job.details.submit_time = now.trace;
                let (quotes, answer) = self.core.quote(now.trace, &job);
                let policy = self.core.policy_name().to_string();
                reply(
                    self,
                    ClientReply::Quoted {
                        token,
                        policy,
                        quotes,
                        answer,
                    },
                );
            }
            ClientMsg::Echo { token } => reply(self, ClientReply::Echo { token }),
            ClientMsg::FaultApplied {
                token,
                fault,
                kind,
                process,
                act,
                what,
                node,
                factor,
                age_s,
            } => self.fault_applied(
                now,
                client,
                super::FaultReport {
                    token,
                    key: super::FaultKey {
                        fault,
                        act,
                        process,
                        node,
                    },
                    kind,
                    what,
                    factor,
                    age_s,
                },
            ),
            ClientMsg::Latency { token } => {
                let mut ser = hdrhistogram::serialization::V2Serializer::new();
                let mut histograms = Vec::new();
                // The scheduler's, when the run has one.
                for name in MANAGER_HISTOGRAMS.iter().chain(&[SCHEDULER_HISTOGRAM]) {
                    let mut bytes = Vec::new();
                    if let Some(h) = self.hists.get(*name) {
                        if hdrhistogram::serialization::Serializer::serialize(
                            &mut ser, h, &mut bytes,
                        )
                        .is_ok()
                        {
                            histograms.push((name.to_string(), bytes));
                        }
                    }
                }
                reply(self, ClientReply::Latency { token, histograms });
            }
            ClientMsg::Status { token, query } => {
                // The caller turns these into Event::Status (it reads the
                // process's usage); without one, the usage is left out.
                let manager = ProcessUsage {
                    pid: 0,
                    hostname: String::new(),
                    cpu_seconds: 0.0,
                    rss_kb: 0,
                    peak_rss_kb: 0,
                };
                let r = self.status(now.trace, token, query, manager);
                reply(self, r);
            }
        }
    }
}
