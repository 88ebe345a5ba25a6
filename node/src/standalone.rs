//! Standalone mode: run one or more nodes against a local list of parts,
//! without a manager, and report the shares each part received. Meant for a
//! user checking a machine before a run, and for tests.
//!
//! A part is given as `estimate`, `actual` and `deadline` in trace seconds;
//! `deadline` is relative to the part's arrival `at` (default 0, the start
//! of the run), like a job's relative deadline D. The same list runs on
//! every node.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use actix::prelude::*;
use common::{JobId, Time};
use serde::Deserialize;
use thiserror::Error;

use crate::actor::{report_channel, GetTelemetry, NodeActor, PlacePart};
use crate::clock::process_cpu_ns;
use crate::core::{NodeEvent, PartCompletion};
use crate::host::{HostError, NodeHost};
use crate::spec::{EmulatedNodeSpec, PartSpec, SliceConfig};
use crate::telemetry::NodeTelemetry;
use net::TraceClock;

/// One part of a standalone run, as written in a parts file or `--part`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartEntry {
    /// Runtime estimate (reference seconds).
    pub estimate: Time,
    /// Actual runtime (reference seconds).
    pub actual: Time,
    /// Deadline relative to the arrival (trace seconds).
    pub deadline: Time,
    /// Arrival, trace seconds after the start of the run.
    #[serde(default)]
    pub at: Time,
    /// Job id (default: the part's position, from 1).
    #[serde(default)]
    pub job: Option<JobId>,
    /// Memory (MB).
    #[serde(default)]
    pub memory_mb: u64,
    /// Disk (MB).
    #[serde(default)]
    pub disk_mb: u64,
    /// Return (for the highest-return spare rule).
    #[serde(default)]
    pub ret: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartsFile {
    part: Vec<PartEntry>,
}

/// Why a standalone run could not be set up or did not finish.
#[derive(Debug, Error)]
pub enum StandaloneError {
    /// A `--part` argument is malformed.
    #[error("--part {arg:?}: {reason}")]
    PartArg {
        /// The argument.
        arg: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The parts file could not be read or parsed.
    #[error("{path}: {reason}")]
    PartsFile {
        /// The file.
        path: String,
        /// What went wrong (with line and column for syntax errors).
        reason: String,
    },
    /// The host or a node could not be set up.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A node refused a part. (The refusal names the part already; it is
    /// not made the error's source, so a printed chain says it once.)
    #[error("{cause}")]
    Place {
        /// The part's position (from 1).
        index: usize,
        /// The node's refusal.
        cause: crate::core::PlaceError,
    },
    /// The run took longer than the limit.
    #[error("run did not finish within {0:?} ({1} of {2} parts done)")]
    Timeout(Duration, usize, usize),
    /// No parts were given.
    #[error("no parts given (use --parts FILE.toml or --part ...)")]
    NoParts,
}

impl PartEntry {
    /// Parses `estimate=..,actual=..,deadline=..[,at=..][,job=..]
    /// [,memory_mb=..][,disk_mb=..][,ret=..]`.
    pub fn parse(arg: &str) -> Result<Self, StandaloneError> {
        let err = |reason: String| StandaloneError::PartArg {
            arg: arg.to_string(),
            reason,
        };
        let mut toml = String::new();
        for kv in arg.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| err(format!("{kv:?} is not key=value")))?;
            let (k, v) = (k.trim(), v.trim());
            v.parse::<f64>()
                .map_err(|_| err(format!("{k}: {v:?} is not a number")))?;
            // TOML wants floats written as floats and integers as integers.
            let v = if matches!(k, "job" | "memory_mb" | "disk_mb") || v.contains(['.', 'e', 'E']) {
                v.to_string()
            } else {
                format!("{v}.0")
            };
            toml.push_str(&format!("{k} = {v}\n"));
        }
        toml::from_str(&toml).map_err(|e| err(e.message().to_string()))
    }

    /// Reads a TOML file with one `[[part]]` table per part.
    pub fn load(path: &Path) -> Result<Vec<Self>, StandaloneError> {
        let err = |reason: String| StandaloneError::PartsFile {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let file: PartsFile = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
        Ok(file.part)
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct StandaloneConfig {
    /// The node (copied to every node; ids 0..nodes).
    pub node: EmulatedNodeSpec,
    /// How many identical nodes.
    pub nodes: usize,
    /// Slicer settings (time scale, period, tick, spare rule).
    pub slice: SliceConfig,
    /// Executor threads (0: one per host core).
    pub executors: usize,
    /// The parts, run on every node.
    pub parts: Vec<PartEntry>,
    /// Give up after this much wall time.
    pub limit: Duration,
}

/// How one part fared.
#[derive(Debug, Clone)]
pub struct PartOutcome {
    /// What was asked.
    pub entry: PartEntry,
    /// What the node reported.
    pub completion: PartCompletion,
    /// Mean assigned share over the part's life.
    pub assigned_share: f64,
    /// Delivered share: processor time burned / (capacity x the part's
    /// real lifetime).
    pub delivered_share: f64,
}

/// The result of a standalone run.
#[derive(Debug)]
pub struct StandaloneReport {
    /// Node capacity (copied from the config).
    pub capacity: f64,
    /// One outcome per node and part (node-major).
    pub outcomes: Vec<PartOutcome>,
    /// Each node's telemetry at the end.
    pub telemetry: Vec<NodeTelemetry>,
    /// Wall time of the run.
    pub wall: Duration,
    /// Processor time of the whole process during the run (ns).
    pub process_cpu_ns: u64,
    /// Processor time burned as job work (ns).
    pub burned_ns: u64,
}

impl StandaloneReport {
    /// Processor time spent on anything but job work, as a fraction of the
    /// work (includes actix, timers, dispatch, clock reads outside burns).
    pub fn overhead(&self) -> f64 {
        self.process_cpu_ns.saturating_sub(self.burned_ns) as f64 / self.burned_ns.max(1) as f64
    }

    /// Mean |delivered - assigned| over parts (lifetime shares).
    pub fn mean_abs_error(&self) -> f64 {
        let n = self.outcomes.len().max(1) as f64;
        self.outcomes
            .iter()
            .map(|o| (o.delivered_share - o.assigned_share).abs())
            .sum::<f64>()
            / n
    }

    /// Prints a per-part table and a summary.
    pub fn print(&self, mut w: impl Write) -> std::io::Result<()> {
        writeln!(
            w,
            "{:>4} {:>5} {:>9} {:>9} {:>9} {:>10} {:>4} {:>8} {:>9} {:>7}",
            "node",
            "part",
            "estimate",
            "actual",
            "deadline",
            "finished",
            "met",
            "assigned",
            "delivered",
            "error"
        )?;
        for o in &self.outcomes {
            let c = &o.completion;
            writeln!(
                w,
                "{:>4} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>10.2} {:>4} {:>8.4} {:>9.4} {:>7.4}",
                c.node_id,
                c.part_id,
                o.entry.estimate,
                o.entry.actual,
                c.deadline_abs,
                c.finished_at,
                if c.met_deadline { "yes" } else { "no" },
                o.assigned_share,
                o.delivered_share,
                (o.delivered_share - o.assigned_share).abs(),
            )?;
        }
        let met = self
            .outcomes
            .iter()
            .filter(|o| o.completion.met_deadline)
            .count();
        let jitter_p99 = self
            .telemetry
            .iter()
            .map(|t| t.tick_jitter_ns.value_at_quantile(0.99))
            .max()
            .unwrap_or(0);
        let overrun_p99 = self
            .telemetry
            .iter()
            .map(|t| t.slice_overrun_ns.value_at_quantile(0.99))
            .max()
            .unwrap_or(0);
        writeln!(
            w,
            "summary: {} parts on {} nodes, {} met their deadline; mean |delivered - assigned| share {:.4}; \
             wall {:.3} s; CPU burned {:.3} s; overhead {:.2}% of work; slice overrun p99 {} us; tick jitter p99 {} us",
            self.outcomes.len(),
            self.telemetry.len(),
            met,
            self.mean_abs_error(),
            self.wall.as_secs_f64(),
            self.burned_ns as f64 * 1e-9,
            self.overhead() * 100.0,
            overrun_p99 / 1000,
            jitter_p99 / 1000,
        )
    }
}

/// Runs the parts on the nodes until every part has finished.
pub fn run_standalone(cfg: StandaloneConfig) -> Result<StandaloneReport, StandaloneError> {
    if cfg.parts.is_empty() {
        return Err(StandaloneError::NoParts);
    }
    actix::System::new().block_on(run(cfg))
}

async fn run(cfg: StandaloneConfig) -> Result<StandaloneReport, StandaloneError> {
    crate::host::batch_dispatch_or_warn();
    let clock = TraceClock::new(0.0, cfg.slice.time_scale);
    // Only completions are read here (the shares come from them): share
    // events, a copy of every part's share at each recompute, would pile
    // up unread while the parts are placed (16,000 parts: 7 GB).
    let mut slice = cfg.slice;
    slice.share_events = false;
    let mut host = NodeHost::new(cfg.executors, slice, clock)?;
    let (sink, mut rx) = report_channel();
    let mut nodes: Vec<Addr<NodeActor>> = Vec::new();
    for id in 0..cfg.nodes {
        let spec = EmulatedNodeSpec {
            id: id as u32,
            ..cfg.node
        };
        nodes.push(host.spawn_node(spec, Some(sink.clone()))?);
    }
    let specs: Vec<PartSpec> = cfg
        .parts
        .iter()
        .enumerate()
        .map(|(k, e)| PartSpec {
            part_id: k as u64 + 1,
            job_id: e.job.unwrap_or(k as u64 + 1),
            estimate: e.estimate,
            actual: e.actual,
            deadline_abs: e.at + e.deadline,
            memory_kb: e.memory_mb.saturating_mul(1024),
            disk_mb: e.disk_mb,
            ret: e.ret,
            hard: false,
        })
        .collect();
    let wall0 = Instant::now();
    let cpu0 = process_cpu_ns();
    let burned0 = host.pool().burned_ns();
    // Parts arrive in time order; place each on every node. A part due
    // after the limit is never placed: the wait ends with the limit.
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by(|&a, &b| cfg.parts[a].at.total_cmp(&cfg.parts[b].at));
    for &k in &order {
        let left = (wall0 + cfg.limit).saturating_duration_since(Instant::now());
        let wait = clock.until(cfg.parts[k].at);
        if wait > left {
            actix_rt::time::sleep(left).await;
            break;
        }
        if !wait.is_zero() {
            actix_rt::time::sleep(wait).await;
        }
        for n in &nodes {
            let r = n.send(PlacePart(specs[k].clone())).await;
            r.expect("node actor alive")
                .map_err(|cause| StandaloneError::Place {
                    index: k + 1,
                    cause,
                })?;
        }
    }
    let total = specs.len() * nodes.len();
    let mut done: Vec<PartCompletion> = Vec::new();
    let deadline = wall0 + cfg.limit;
    while done.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        match actix_rt::time::timeout(left, rx.recv()).await {
            Ok(Some(r)) => {
                if let NodeEvent::Completed(c) = r.event {
                    done.push(c);
                }
            }
            _ => return Err(StandaloneError::Timeout(cfg.limit, done.len(), total)),
        }
    }
    let wall = wall0.elapsed();
    let process_cpu_ns = process_cpu_ns() - cpu0;
    let burned_ns = host.pool().burned_ns() - burned0;
    let mut telemetry = Vec::new();
    for n in &nodes {
        telemetry.push(
            n.send(GetTelemetry { reset: false })
                .await
                .expect("node actor alive"),
        );
    }
    done.sort_by_key(|c| (c.node_id, c.part_id));
    let cap = cfg.node.capacity;
    let outcomes = done
        .into_iter()
        .map(|c| {
            let life_ns = (c.finished_at - c.placed_at) * cfg.slice.time_scale * 1e9 * cap;
            PartOutcome {
                entry: cfg.parts[(c.part_id - 1) as usize].clone(),
                assigned_share: c.assigned_ns / life_ns,
                delivered_share: c.burned_ns as f64 / life_ns,
                completion: c,
            }
        })
        .collect();
    drop(nodes);
    drop(host);
    System::current().stop();
    Ok(StandaloneReport {
        capacity: cap,
        outcomes,
        telemetry,
        wall,
        process_cpu_ns,
        burned_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_args_parse() {
        let p = PartEntry::parse("estimate=10, actual=12.5,deadline=40,job=7,at=2").unwrap();
        assert_eq!(
            (p.estimate, p.actual, p.deadline, p.at, p.job),
            (10.0, 12.5, 40.0, 2.0, Some(7))
        );
        let e = PartEntry::parse("estimate=10,actual=x,deadline=1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("actual: \"x\" is not a number"), "{e}");
        let e = PartEntry::parse("estimate=10,actual=1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("deadline"), "{e}");
        let e = PartEntry::parse("estimate=10,actual=1,deadline=3,speed=2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("speed"), "{e}");
    }
}
