//! `libratory submit`, `quote` and `status`: talk to a running manager as
//! Libra's front end did. A submission is answered at once: accepted (which
//! nodes, the cost) or rejected with the reason, so the user can relax the
//! deadline or raise the budget and try again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use common::job::{
    DeadlineType, JobDetails, JobSpec, Objective, QosConstraints, QosOptimization,
    ResourceRequirements,
};
use common::policy::Decision;
use common::protocol::{
    ClientMsg, ClientReply, Hello, PageQuery, PageWindow, QuoteAnswer, Role, StatusQuery,
    MAX_PER_PAGE,
};
use net::{self, FramedStream, Timeouts};
use serde::Deserialize;

/// Where the manager is and who we are.
#[derive(Args, Clone)]
pub struct ConnArgs {
    /// The manager's address (ip:port, UDP).
    #[arg(long)]
    pub manager: SocketAddr,
    /// Certificates directory (ca.pem and the identity's .pem/.key).
    #[arg(long)]
    pub certs: PathBuf,
    /// Identity to present (`client` unless given).
    #[arg(long, default_value = net::CLIENT_NAME)]
    pub identity: String,
}

/// A job, from flags or a specification file.
#[derive(Args, Clone)]
pub struct JobArgs {
    /// Job specification file (TOML with the segments of the submission
    /// specification: [JobDetails], [ResourceRequirements],
    /// [QoSConstraints], [QoSOptimization]).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Runtime estimate RE (trace seconds on the reference node).
    #[arg(long)]
    estimate: Option<f64>,
    /// Relative deadline D (trace seconds).
    #[arg(long)]
    deadline: Option<f64>,
    /// Budget B (default: unlimited).
    #[arg(long)]
    budget: Option<f64>,
    /// Processors P.
    #[arg(long, default_value_t = 1)]
    processors: u32,
    /// Work the synthetic job really does (default: its estimate).
    #[arg(long)]
    actual: Option<f64>,
    /// Soft deadline (default hard).
    #[arg(long)]
    soft: bool,
    /// Penalty per second of delay.
    #[arg(long, default_value_t = 0.0)]
    penalty_rate: f64,
}

/// The submission specification file (the Libra+$ paper's segments).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    #[serde(rename = "JobDetails")]
    details: SpecDetails,
    #[serde(rename = "ResourceRequirements", default)]
    resources: Option<SpecResources>,
    #[serde(rename = "QoSConstraints")]
    qos: SpecQos,
    #[serde(rename = "QoSOptimization", default)]
    optimization: Option<SpecOpt>,
    /// Further segments are kept as they are (the specification is
    /// extensible).
    #[serde(flatten)]
    extra: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecDetails {
    runtime_estimate: f64,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    actual_runtime: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecResources {
    #[serde(default = "one")]
    processors: u32,
    #[serde(default)]
    memory_kb: u64,
    #[serde(default)]
    disk_mb: u64,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecQos {
    deadline: f64,
    #[serde(default)]
    budget: Option<f64>,
    #[serde(default)]
    deadline_type: Option<DeadlineType>,
    #[serde(default)]
    penalty_rate: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecOpt {
    #[serde(default)]
    objective: Option<Objective>,
}

fn load_spec(path: &Path) -> Result<(JobSpec, Option<f64>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let f: SpecFile = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    let mut extra = BTreeMap::new();
    for (seg, v) in f.extra {
        let toml::Value::Table(t) = v else {
            bail!("{}: segment {seg} must be a table", path.display());
        };
        extra.insert(
            seg,
            t.into_iter().map(|(k, v)| (k, v.to_string())).collect(),
        );
    }
    let r = f.resources.unwrap_or(SpecResources {
        processors: 1,
        memory_kb: 0,
        disk_mb: 0,
    });
    let job = JobSpec {
        id: 0,
        details: JobDetails {
            runtime_estimate: f.details.runtime_estimate,
            submit_time: 0.0,
            name: f.details.name,
        },
        resources: ResourceRequirements {
            processors: r.processors,
            memory_kb: r.memory_kb,
            disk_mb: r.disk_mb,
        },
        qos: QosConstraints {
            deadline: f.qos.deadline,
            budget: f.qos.budget.unwrap_or(f64::INFINITY),
            deadline_type: f.qos.deadline_type.unwrap_or_default(),
            penalty_rate: f.qos.penalty_rate,
        },
        optimization: QosOptimization {
            objective: f.optimization.and_then(|o| o.objective),
        },
        urgency: None,
        extra_segments: extra,
    };
    Ok((job, f.details.actual_runtime))
}

impl JobArgs {
    /// The job the arguments describe, validated, and its actual work.
    pub fn job(&self) -> Result<(JobSpec, Option<f64>)> {
        let (job, actual) = match &self.spec {
            Some(p) => load_spec(p)?,
            None => {
                let (Some(estimate), Some(deadline)) = (self.estimate, self.deadline) else {
                    bail!("give --spec FILE, or at least --estimate and --deadline");
                };
                let t = if self.soft {
                    DeadlineType::Soft
                } else {
                    DeadlineType::Hard
                };
                (
                    JobSpec::new(
                        0,
                        0.0,
                        estimate,
                        self.processors,
                        deadline,
                        self.budget.unwrap_or(f64::INFINITY),
                    )
                    .with_deadline_type(t, self.penalty_rate),
                    self.actual,
                )
            }
        };
        // Refuse bad input here, naming the field, before the network.
        job.validate()?;
        if job.qos.deadline < job.details.runtime_estimate {
            eprintln!(
                "note: the deadline ({} s) is shorter than the runtime estimate ({} s): expect a deadline rejection",
                job.qos.deadline, job.details.runtime_estimate
            );
        }
        Ok((job, actual.or(self.actual)))
    }
}

/// An open client connection to a manager: the endpoint and connection
/// (kept alive while it is used) and the framed stream, after the hello.
pub struct Connection {
    /// The local endpoint.
    pub endpoint: quinn::Endpoint,
    /// The QUIC connection.
    pub conn: quinn::Connection,
    /// Requests out, replies in.
    pub stream: FramedStream,
}

/// Connects to the manager as a client and exchanges hellos.
pub async fn connect(conn: &ConnArgs) -> Result<Connection> {
    let bind = if conn.manager.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let ep = net::client_endpoint(
        bind.parse().expect("valid"),
        &conn.certs,
        &conn.identity,
        Timeouts::default(),
    )?;
    let c = net::connect(&ep, conn.manager).await?;
    let mut s = FramedStream::open(&c).await?;
    s.handshake(&Hello::new(
        Role::Client,
        format!("libratory {}", env!("CARGO_PKG_VERSION")),
    ))
    .await?;
    Ok(Connection {
        endpoint: ep,
        conn: c,
        stream: s,
    })
}

/// Sends one request and waits for its reply.
pub async fn request(conn: &ConnArgs, msg: ClientMsg) -> Result<ClientReply> {
    let Connection {
        endpoint: ep,
        conn: c,
        stream: mut s,
    } = connect(conn).await?;
    s.send(&msg).await?;
    let got = tokio::time::timeout(
        Duration::from_secs(30),
        s.recv::<ClientReply>("client reply"),
    )
    .await;
    // A request the manager refuses (this identity's role may not make
    // it) is closed with the refusal code and why: said as such, not as
    // a lost connection.
    if let Some(quinn::ConnectionError::ApplicationClosed(a)) = c.close_reason() {
        if a.error_code == quinn::VarInt::from_u32(common::protocol::CLOSE_REFUSED) {
            bail!(
                "the manager at {} refused the request: {}",
                conn.manager,
                String::from_utf8_lossy(&a.reason)
            );
        }
    }
    let reply = got
        .with_context(|| format!("no answer from {} within 30 s", conn.manager))??
        .with_context(|| format!("{} closed the connection without answering", conn.manager))?;
    // The same refusal read as the answer that comes before the close.
    if let ClientReply::Error { message, .. } = &reply {
        bail!(
            "the manager at {} refused the request: {message}",
            conn.manager
        );
    }
    c.close(0u32.into(), b"done");
    ep.wait_idle().await;
    Ok(reply)
}

fn rt() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn print_decision(decision: &Decision, what: &str) -> ExitCode {
    match decision {
        Decision::Accept(a) => {
            let nodes: Vec<String> = a.nodes.iter().map(|n| n.to_string()).collect();
            println!("{what} on nodes {} at cost {:.4}", nodes.join(", "), a.cost);
            ExitCode::SUCCESS
        }
        Decision::Reject(r) => {
            println!("rejected ({}): {}", r.reason, r.detail);
            let hint = match r.reason {
                common::policy::RejectReason::Deadline => "relax the deadline or try later",
                common::policy::RejectReason::Budget => "raise the budget or relax the deadline",
                common::policy::RejectReason::Resources => {
                    "ask for fewer processors or less memory"
                }
                common::policy::RejectReason::Risk => "relax the deadline or try later",
                common::policy::RejectReason::Return => "raise the budget or relax the deadline",
                common::policy::RejectReason::Expired => "submit earlier or relax the deadline",
                common::policy::RejectReason::Scheduler => {
                    "the external scheduler refused it or failed (see the manager's log)"
                }
            };
            println!("hint: {hint}");
            ExitCode::from(3)
        }
    }
}

/// `libratory submit`: exit 0 when accepted (or queued), 3 when rejected.
pub fn submit(conn: &ConnArgs, job: &JobArgs, json: bool) -> Result<ExitCode> {
    let (spec, actual) = job.job()?;
    let reply = rt()?.block_on(request(
        conn,
        ClientMsg::Submit {
            token: 1,
            job: (&spec).into(),
            actual,
        },
    ))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&reply)?);
    }
    match reply {
        ClientReply::Decided { job, decision, .. } => {
            if json {
                return Ok(if matches!(decision, Decision::Accept(_)) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(3)
                });
            }
            Ok(print_decision(&decision, &format!("accepted: job {job}")))
        }
        ClientReply::Queued { job, .. } => {
            if !json {
                println!("queued: job {job} waits for processors (space-shared policy)");
            }
            Ok(ExitCode::SUCCESS)
        }
        ClientReply::Error { message, .. } => bail!("the manager refused the request: {message}"),
        other => bail!("unexpected answer: {other:?}"),
    }
}

/// `libratory quote`: what the running policy would answer the job now
/// (and the per-node prices of a policy that prices, Libra+$).
pub fn quote(conn: &ConnArgs, job: &JobArgs, json: bool) -> Result<ExitCode> {
    let (spec, _) = job.job()?;
    let reply = rt()?.block_on(request(
        conn,
        ClientMsg::Quote {
            token: 1,
            job: (&spec).into(),
        },
    ))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&reply)?);
        return Ok(ExitCode::SUCCESS);
    }
    match reply {
        ClientReply::Quoted {
            policy,
            quotes,
            answer,
            ..
        } => {
            println!("policy {policy}:");
            if !quotes.is_empty() {
                println!(
                    "{:>6} {:>12} {:>8} {:>8} {:>12}",
                    "node", "RESFree (s)", "PUtil", "price/s", "cost"
                );
                for q in &quotes {
                    println!(
                        "{:>6} {:>12.1} {:>8.4} {:>8.4} {:>12.4}",
                        q.node, q.res_free, q.putil, q.price, q.cost
                    );
                }
            }
            match answer {
                QuoteAnswer::Decided(decision) => {
                    Ok(print_decision(&decision, "would be accepted"))
                }
                QuoteAnswer::Queued {
                    waiting,
                    free_nodes,
                } => {
                    println!(
                        "would be queued behind {waiting} waiting job(s) ({free_nodes} node(s) free now); the policy starts or drops it later"
                    );
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        ClientReply::Error { message, .. } => bail!("the manager refused the request: {message}"),
        other => bail!("unexpected answer: {other:?}"),
    }
}

/// Which nodes `libratory status` lists: the manager sends the summary
/// and one page of nodes, so the answer fits a frame at any cluster size.
#[derive(Args, Clone, Debug)]
pub struct StatusArgs {
    /// List this page of nodes (1-based; each of `--per` nodes). Without
    /// it the first page is listed, with how many pages there are.
    #[arg(long = "nodes", value_name = "PAGE", conflicts_with = "summary")]
    pub page: Option<usize>,
    /// Nodes per page.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=MAX_PER_PAGE as u64))]
    pub per: u64,
    /// Only nodes holding parts (in the list and the page count).
    #[arg(long)]
    pub busy: bool,
    /// The summary alone: counts of node processes, nodes, busy nodes,
    /// parts and jobs, no node listed.
    #[arg(long)]
    pub summary: bool,
}

impl StatusArgs {
    /// What to ask the manager for.
    pub fn query(&self) -> Result<StatusQuery> {
        if self.summary {
            return Ok(StatusQuery { nodes: None });
        }
        let page = match self.page {
            Some(0) => bail!("--nodes 0: pages are numbered from 1"),
            Some(p) => p - 1,
            None => 0,
        };
        Ok(StatusQuery {
            nodes: Some(PageQuery {
                page,
                per: self.per as usize,
                busy: self.busy,
            }),
        })
    }
}

/// The manager answers a page past the end with the last page; asked for
/// by number (`--nodes PAGE`), that is an error naming the pages there
/// are.
pub fn check_page(asked: Option<usize>, w: &PageWindow) -> Result<()> {
    match asked {
        Some(p) if p != w.page + 1 => bail!(
            "--nodes {p}: pages run from 1 to {} ({} nodes{}, {} a page)",
            w.pages,
            w.matching,
            if w.busy { " with parts" } else { "" },
            w.per
        ),
        _ => Ok(()),
    }
}

/// `libratory status`: a summary of the nodes and jobs, a page of nodes
/// with their parts and shares, recent decisions.
pub fn status(conn: &ConnArgs, view: &StatusArgs, json: bool) -> Result<ExitCode> {
    let query = view.query()?;
    let reply = rt()?.block_on(request(conn, ClientMsg::Status { token: 1, query }))?;
    if let ClientReply::Status { page: Some(w), .. } = &reply {
        check_page(view.page, w)?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reply)?);
        return Ok(ExitCode::SUCCESS);
    }
    match reply {
        ClientReply::Status {
            at,
            policy,
            summary: s,
            page,
            nodes,
            recent,
            ..
        } => {
            let n = &s.nodes;
            println!(
                "policy {policy} at trace time {at:.1}: {} nodes in {} node processes ({} of {} registered), \
                 jobs: {} submitted, {} decided, {} finished, {} open, {} queued",
                n.total, s.processes, s.registered, s.expected, s.submitted, s.decided, s.finished, s.open, s.queued
            );
            println!(
                "nodes: {} of {} hold {} parts, largest load {:.3}; by load: {} idle, {} to 0.25, {} to 0.5, {} to 0.75, {} to 1, {} above 1",
                n.busy, n.total, n.parts, n.max_load, n.loads[0], n.loads[1], n.loads[2], n.loads[3], n.loads[4], n.loads[5]
            );
            if let Some(w) = page {
                let of = if w.busy {
                    " nodes with parts"
                } else {
                    " nodes"
                };
                if w.pages > 1 {
                    println!(
                        "page {} of {} ({}{of}, {} a page; others with --nodes PAGE, --per N, --busy):",
                        w.page + 1,
                        w.pages,
                        w.matching,
                        w.per
                    );
                } else if w.busy {
                    println!("{}{of}:", w.matching);
                }
            }
            for n in &nodes {
                println!("node {:>4} ({}) load {:.3}", n.id, n.host, n.load);
                for p in &n.parts {
                    println!(
                        "    job {:>14} done {:>10.1} of {:>10.1} s, deadline {:>10.1}, needs share {:.3}",
                        p.job, p.cpu_done, p.est_cpu, p.deadline, p.required
                    );
                }
            }
            if !recent.is_empty() {
                println!("recent decisions:");
                for d in &recent {
                    match &d.decision {
                        Decision::Accept(a) => println!(
                            "  {:>10.1} job {} accepted on {:?} cost {:.3}",
                            d.at, d.job, a.nodes, a.cost
                        ),
                        Decision::Reject(r) => println!(
                            "  {:>10.1} job {} rejected ({}): {}",
                            d.at, d.job, r.reason, r.detail
                        ),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ClientReply::Error { message, .. } => bail!("the manager refused the request: {message}"),
        other => bail!("unexpected answer: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(page: Option<usize>, per: u64, busy: bool, summary: bool) -> StatusArgs {
        StatusArgs {
            page,
            per,
            busy,
            summary,
        }
    }

    #[test]
    fn status_asks_for_a_page_or_the_summary_and_names_the_pages_when_asked_past_them() {
        // The default: the first page of 50.
        let q = args(None, 50, false, false).query().unwrap();
        assert_eq!(
            q.nodes,
            Some(PageQuery {
                page: 0,
                per: 50,
                busy: false
            })
        );
        assert_eq!(
            args(Some(3), 20, true, false)
                .query()
                .unwrap()
                .nodes
                .unwrap()
                .page,
            2
        );
        assert_eq!(args(None, 50, false, true).query().unwrap().nodes, None);
        assert!(args(Some(0), 50, false, false).query().is_err());
        // 158,976 nodes by 50: 3,180 pages. The manager shows the last for
        // page 3,181; asked by number, that is an error naming the range.
        let past = PageQuery {
            page: 3180,
            per: 50,
            busy: false,
        }
        .window(158_976);
        let e = check_page(Some(3181), &past).unwrap_err().to_string();
        assert!(e.contains("1 to 3180") && e.contains("158976 nodes"), "{e}");
        check_page(Some(3180), &past).unwrap();
        // Not asked by number: whatever page came is fine.
        check_page(None, &past).unwrap();
    }
}
