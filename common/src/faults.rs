//! Fault scenarios: what goes wrong, when, and to what, as an experiment
//! input (docs/faults.md is the user's reference; keep the two in step).
//!
//! What it is for: parsing a scenario file's text (TOML) strictly, with
//! errors naming the file, the line and the key; checking every value;
//! and expanding the scenario (fixed faults plus seeded random ones) into
//! one numbered list of [`Fault`]s for a cluster of a given shape. The
//! simulator ([`crate::sim::simulate_with_faults`]) and the live manager
//! both take that list, so a scenario means the same faults in both.
//!
//! What it is not: it reads no file (the caller hands the text in) and
//! executes nothing. Times are trace seconds after the run's first
//! arrival; link delays are real milliseconds, since they are a property
//! of the network and not of the trace.

use std::fmt;
use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use thiserror::Error;

/// Default seconds (trace) of silence after which the simulator treats a
/// node process as lost; the live manager uses its own `link_timeout_s`.
pub const DEFAULT_LINK_TIMEOUT: f64 = 5.0;

/// Default emulated nodes per node process in the simulator (the demo's).
pub const DEFAULT_NODES_PER_PROCESS: usize = 4;

/// A fault scenario file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seed of the random entries (default: the caller's, the workload's).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Trace seconds of silence after which the simulator treats a node
    /// process (or node) that crashed, hung or is cut off as lost.
    #[serde(default)]
    pub link_timeout: Option<toml::Spanned<f64>>,
    /// How the simulator groups nodes into node processes.
    #[serde(default)]
    pub nodes_per_process: Option<toml::Spanned<usize>>,
    /// Faults at fixed times.
    #[serde(default)]
    pub fault: Vec<FaultEntry>,
    /// Seeded random faults.
    #[serde(default)]
    pub random: Vec<RandomEntry>,
}

/// `[[fault]]`: one fault at a fixed time.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultEntry {
    /// Trace seconds after the first arrival.
    pub at: toml::Spanned<f64>,
    /// What happens.
    pub kind: toml::Spanned<String>,
    /// A node process (0-based, launch order).
    #[serde(default)]
    pub process: Option<toml::Spanned<usize>>,
    /// One emulated node (0-based, counted over processes in launch order).
    #[serde(default)]
    pub node: Option<toml::Spanned<usize>>,
    /// How long (trace seconds); see [`FaultKind`] for each kind.
    #[serde(default)]
    pub duration: Option<toml::Spanned<f64>>,
    /// `slow`: capacity times this.
    #[serde(default)]
    pub factor: Option<toml::Spanned<f64>>,
    /// `delay`: added to every frame (real ms).
    #[serde(default)]
    pub delay_ms: Option<toml::Spanned<f64>>,
    /// `delay`: plus a uniform draw in [0, jitter_ms] per frame.
    #[serde(default)]
    pub jitter_ms: Option<toml::Spanned<f64>>,
}

/// `[[random]]`: faults drawn from the scenario's seed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomEntry {
    /// What happens.
    pub kind: toml::Spanned<String>,
    /// `"processes"` (default) or `"nodes"`; ignored for `manager-crash`.
    #[serde(default)]
    pub targets: Option<toml::Spanned<String>>,
    /// Probability per target and trace hour (`manager-crash`: per hour).
    pub per_hour: toml::Spanned<f64>,
    /// Window start (trace seconds after the first arrival; default 0).
    #[serde(default)]
    pub from: Option<toml::Spanned<f64>>,
    /// Window end (default: the workload's last arrival).
    #[serde(default)]
    pub until: Option<toml::Spanned<f64>>,
    /// As in `[[fault]]`.
    #[serde(default)]
    pub duration: Option<toml::Spanned<f64>>,
    /// As in `[[fault]]`.
    #[serde(default)]
    pub factor: Option<toml::Spanned<f64>>,
    /// As in `[[fault]]`.
    #[serde(default)]
    pub delay_ms: Option<toml::Spanned<f64>>,
    /// As in `[[fault]]`.
    #[serde(default)]
    pub jitter_ms: Option<toml::Spanned<f64>>,
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultKind {
    /// The process (or node) dies; back after `duration` if given, as new.
    Crash,
    /// Stops answering and computing for `duration`, then resumes.
    Hang,
    /// Capacity times `factor` for `duration`.
    Slow {
        /// The capacity factor, in (0, 1].
        factor: f64,
    },
    /// The process's link drops all traffic for `duration`.
    Partition,
    /// The process's link delays every frame for `duration`.
    Delay {
        /// Fixed delay per frame (real ms).
        delay_ms: f64,
        /// Uniform extra delay per frame, up to this (real ms).
        jitter_ms: f64,
    },
    /// The manager is killed and restarted after `duration`.
    ManagerCrash,
}

impl FaultKind {
    /// The name used in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Hang => "hang",
            FaultKind::Slow { .. } => "slow",
            FaultKind::Partition => "partition",
            FaultKind::Delay { .. } => "delay",
            FaultKind::ManagerCrash => "manager-crash",
        }
    }
}

/// The kind names, as scenario files spell them.
pub const KINDS: [&str; 6] = [
    "crash",
    "hang",
    "slow",
    "partition",
    "delay",
    "manager-crash",
];

/// What a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A node process (0-based, launch order).
    Process(usize),
    /// One emulated node (0-based over processes in launch order).
    Node(usize),
    /// The manager.
    Manager,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Process(p) => write!(f, "node process {p}"),
            Target::Node(n) => write!(f, "node {n}"),
            Target::Manager => f.write_str("the manager"),
        }
    }
}

/// Where a fault came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A `[[fault]]` entry at this line.
    Line(usize),
    /// A draw of the `[[random]]` entry at this line.
    Random(usize),
}

/// One fault of an expanded scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// 1-based, in time order: the name used in lost jobs' reasons.
    pub id: usize,
    /// Trace seconds after the first arrival.
    pub at: f64,
    /// What happens.
    pub kind: FaultKind,
    /// To what.
    pub target: Target,
    /// How long (trace seconds); `None` only for a crash that stays down.
    pub duration: Option<f64>,
    /// Where it came from.
    pub origin: Origin,
}

impl Fault {
    /// When it ends (relative, trace seconds), if it does.
    pub fn end(&self) -> Option<f64> {
        self.duration.map(|d| self.at + d)
    }

    /// Until when (relative) its target is in its hands: its end, or for
    /// a crash the target's return (`at + max(d, L)`, when it registers
    /// again), never for a crash that stays down.
    fn holds_until(&self, link_timeout: f64) -> f64 {
        match (self.kind, self.duration) {
            (FaultKind::Crash, None) => f64::INFINITY,
            (FaultKind::Crash, Some(d)) => self.at + d.max(link_timeout),
            (_, Some(d)) => self.at + d,
            (_, None) => self.at,
        }
    }

    /// Whether it and `other` act on a node in common at a common time:
    /// two faults of one target at once have no single meaning (does a
    /// hang's end resume a crashed process? which of two slowdowns holds?)
    /// that the simulator and the node processes would agree on, so a
    /// scenario may not hold them.
    fn overlaps(&self, other: &Fault, shape: &ClusterShape, link_timeout: f64) -> bool {
        if self.target == Target::Manager || other.target == Target::Manager {
            return false;
        }
        let (a, b) = (shape.nodes_of(self.target), shape.nodes_of(other.target));
        a.start < b.end
            && b.start < a.end
            && self.at < other.holds_until(link_timeout)
            && other.at < self.holds_until(link_timeout)
    }

    /// `crash of node process 1 at +30 s (line 12)`, before ids are given.
    fn about(&self, link_timeout: f64) -> String {
        let until = self.holds_until(link_timeout);
        let held = if until.is_finite() {
            format!("to +{} s", short(until))
        } else {
            "for good".into()
        };
        let from = match self.origin {
            Origin::Line(l) => format!("line {l}"),
            Origin::Random(l) => format!("drawn by the [[random]] at line {l}"),
        };
        format!(
            "{} of {} at +{} s, {held} ({from})",
            self.kind.name(),
            self.target,
            short(self.at)
        )
    }
}

impl fmt::Display for Fault {
    /// `fault 3 (crash of node process 1 at +30 s, line 12)`: the name
    /// lost jobs' reasons and the journal use.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fault {} ({} of {} at +{} s",
            self.id,
            self.kind.name(),
            self.target,
            short(self.at)
        )?;
        match self.origin {
            Origin::Line(l) => write!(f, ", line {l})"),
            Origin::Random(l) => write!(f, ", drawn by the [[random]] at line {l})"),
        }
    }
}

/// Seconds with at most three decimals and no trailing zeros (`30`,
/// `11.772`): drawn times are long otherwise.
fn short(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The shape of the cluster faults are expanded for.
#[derive(Debug, Clone)]
pub struct ClusterShape {
    /// The node range (global ids) of each node process, in launch order.
    pub processes: Vec<Range<usize>>,
}

impl ClusterShape {
    /// `nodes` nodes in processes of `per_process` each (the last may be
    /// smaller).
    pub fn uniform(nodes: usize, per_process: usize) -> ClusterShape {
        let per = per_process.max(1);
        ClusterShape {
            processes: (0..nodes.div_ceil(per))
                .map(|p| p * per..((p + 1) * per).min(nodes))
                .collect(),
        }
    }

    /// Every node.
    pub fn nodes(&self) -> usize {
        self.processes.last().map_or(0, |r| r.end)
    }

    /// The process holding node `n`.
    pub fn process_of(&self, n: usize) -> Option<usize> {
        self.processes.iter().position(|r| r.contains(&n))
    }

    /// The nodes a target covers.
    pub fn nodes_of(&self, t: Target) -> Range<usize> {
        match t {
            Target::Process(p) => self.processes[p].clone(),
            Target::Node(n) => n..n + 1,
            Target::Manager => 0..0,
        }
    }
}

/// A scenario expanded for one cluster: every fault, in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The seed the random entries drew from (printed and stored).
    pub seed: u64,
    /// Trace seconds of silence before the simulator declares a loss.
    pub link_timeout: f64,
    /// Every fault, ordered by time (ties: file order).
    pub faults: Vec<Fault>,
    /// The node range (global ids) of each node process the plan was
    /// expanded for (empty when checked without a cluster): where a live
    /// run finds a single node's process and its local index.
    pub processes: Vec<Range<usize>>,
    /// Random draws left out because they would overlap a fault already
    /// on their target (see [`Fault`]'s overlap rule).
    pub left_out: usize,
}

/// A scenario problem, naming the file and, when known, the line and key.
#[derive(Debug, Error, PartialEq)]
pub enum ScenarioError {
    /// TOML syntax or schema (unknown or missing key, wrong type); toml's
    /// message has the line, column and key.
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// What toml said.
        message: String,
    },
    /// A value that parses but makes no sense.
    #[error("{file}:{line}: {key}: {why}")]
    Invalid {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The key (`fault[2].duration`).
        key: String,
        /// Why.
        why: String,
    },
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

struct Checker<'a> {
    file: &'a str,
    text: &'a str,
}

impl Checker<'_> {
    fn bad<T>(
        &self,
        span: Range<usize>,
        key: String,
        why: impl Into<String>,
    ) -> Result<T, ScenarioError> {
        Err(ScenarioError::Invalid {
            file: self.file.to_string(),
            line: line_of(self.text, span.start),
            key,
            why: why.into(),
        })
    }

    /// Parses the kind and the parameters it needs, refusing the ones it
    /// does not take.
    #[allow(clippy::too_many_arguments)]
    fn kind(
        &self,
        key: &str,
        kind: &toml::Spanned<String>,
        duration: &Option<toml::Spanned<f64>>,
        factor: &Option<toml::Spanned<f64>>,
        delay_ms: &Option<toml::Spanned<f64>>,
        jitter_ms: &Option<toml::Spanned<f64>>,
    ) -> Result<(FaultKind, Option<f64>), ScenarioError> {
        let name = kind.get_ref().as_str();
        let k = match name {
            "crash" => FaultKind::Crash,
            "hang" => FaultKind::Hang,
            "slow" => {
                let Some(f) = factor else {
                    return self.bad(
                        kind.span(),
                        format!("{key}.factor"),
                        "slow needs factor, in (0, 1]",
                    );
                };
                let v = *f.get_ref();
                if !(v > 0.0 && v <= 1.0) {
                    return self.bad(
                        f.span(),
                        format!("{key}.factor"),
                        format!("must be in (0, 1], got {v}"),
                    );
                }
                FaultKind::Slow { factor: v }
            }
            "partition" => FaultKind::Partition,
            "delay" => {
                let Some(d) = delay_ms else {
                    return self.bad(
                        kind.span(),
                        format!("{key}.delay_ms"),
                        "delay needs delay_ms (real milliseconds)",
                    );
                };
                let dv = *d.get_ref();
                if !(dv >= 0.0 && dv.is_finite()) {
                    return self.bad(
                        d.span(),
                        format!("{key}.delay_ms"),
                        format!("must be >= 0, got {dv}"),
                    );
                }
                let jv = jitter_ms.as_ref().map_or(0.0, |j| *j.get_ref());
                if !(jv >= 0.0 && jv.is_finite()) {
                    let span = jitter_ms.as_ref().expect("set when not 0").span();
                    return self.bad(
                        span,
                        format!("{key}.jitter_ms"),
                        format!("must be >= 0, got {jv}"),
                    );
                }
                FaultKind::Delay {
                    delay_ms: dv,
                    jitter_ms: jv,
                }
            }
            "manager-crash" => FaultKind::ManagerCrash,
            other => {
                return self.bad(
                    kind.span(),
                    format!("{key}.kind"),
                    format!("unknown kind {other:?}; known: {}", KINDS.join(", ")),
                )
            }
        };
        // Parameters of other kinds are refused: a typo'd scenario should
        // not run as something else.
        for (field, v) in [
            ("factor", factor),
            ("delay_ms", delay_ms),
            ("jitter_ms", jitter_ms),
        ] {
            let wanted = matches!(
                (field, k),
                ("factor", FaultKind::Slow { .. })
                    | ("delay_ms" | "jitter_ms", FaultKind::Delay { .. })
            );
            if let (Some(v), false) = (v, wanted) {
                return self.bad(
                    v.span(),
                    format!("{key}.{field}"),
                    format!("{name} takes no {field}"),
                );
            }
        }
        let duration = match duration {
            Some(d) => {
                let v = *d.get_ref();
                if !(v > 0.0 && v.is_finite()) {
                    return self.bad(
                        d.span(),
                        format!("{key}.duration"),
                        format!("must be a finite number > 0 (trace seconds), got {v}"),
                    );
                }
                Some(v)
            }
            None if k == FaultKind::Crash => None,
            None => {
                return self.bad(
                    kind.span(),
                    format!("{key}.duration"),
                    format!("{name} needs a duration (trace seconds)"),
                )
            }
        };
        Ok((k, duration))
    }

    fn time(&self, key: String, t: &toml::Spanned<f64>) -> Result<f64, ScenarioError> {
        let v = *t.get_ref();
        if !(v >= 0.0 && v.is_finite()) {
            return self.bad(
                t.span(),
                key,
                format!("must be >= 0 (trace seconds after the first arrival), got {v}"),
            );
        }
        Ok(v)
    }
}

/// Which kinds may hit what: a link fault is a whole process's.
fn check_target(kind: FaultKind, target: Target) -> Result<(), String> {
    match (kind, target) {
        (FaultKind::ManagerCrash, Target::Manager) => Ok(()),
        (FaultKind::ManagerCrash, _) => Err("manager-crash takes no process or node".into()),
        (_, Target::Manager) => Err(format!("{} needs process = P or node = N", kind.name())),
        (FaultKind::Partition | FaultKind::Delay { .. }, Target::Node(_)) => Err(format!(
            "{} acts on a node process's link: give process = P, not node",
            kind.name()
        )),
        _ => Ok(()),
    }
}

impl Scenario {
    /// Parses scenario text (`file` is only used in messages).
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            file: file.to_string(),
            message: e.to_string().trim_end().replace('\n', "\n  "),
        })?;
        // Check what does not depend on the cluster now, so a bad file is
        // refused before anything runs.
        s.expand_checked(file, text, None, 0.0, 0)?;
        Ok(s)
    }

    /// Expands the scenario for `shape`; random entries draw over
    /// `[from, until)` (default until: `horizon`, trace seconds after the
    /// first arrival) from `seed` (the file's, else `default_seed`).
    pub fn expand(
        &self,
        file: &str,
        text: &str,
        shape: &ClusterShape,
        horizon: f64,
        default_seed: u64,
    ) -> Result<Plan, ScenarioError> {
        self.expand_checked(file, text, Some(shape), horizon, default_seed)
    }

    /// The simulator's grouping of nodes into processes.
    pub fn nodes_per_process(&self) -> usize {
        self.nodes_per_process
            .as_ref()
            .map_or(DEFAULT_NODES_PER_PROCESS, |n| *n.get_ref())
    }

    fn expand_checked(
        &self,
        file: &str,
        text: &str,
        shape: Option<&ClusterShape>,
        horizon: f64,
        default_seed: u64,
    ) -> Result<Plan, ScenarioError> {
        let c = Checker { file, text };
        let link_timeout = match &self.link_timeout {
            Some(t) => {
                let v = *t.get_ref();
                if !(v > 0.0 && v.is_finite()) {
                    return c.bad(
                        t.span(),
                        "link_timeout".into(),
                        format!("must be a finite number > 0 (trace seconds), got {v}"),
                    );
                }
                v
            }
            None => DEFAULT_LINK_TIMEOUT,
        };
        if let Some(n) = &self.nodes_per_process {
            if *n.get_ref() == 0 {
                return c.bad(n.span(), "nodes_per_process".into(), "must be >= 1");
            }
        }
        let in_range =
            |key: String, span: Range<usize>, target: Target| -> Result<(), ScenarioError> {
                let Some(shape) = shape else { return Ok(()) };
                let (n, what) = match target {
                    Target::Process(p) => (p, shape.processes.len()),
                    Target::Node(n) => (n, shape.nodes()),
                    Target::Manager => return Ok(()),
                };
                if n >= what {
                    return c.bad(
                        span,
                        key,
                        format!("{target} does not exist: the cluster has {what} (0..{what})"),
                    );
                }
                Ok(())
            };
        let mut faults = Vec::new();
        for (i, e) in self.fault.iter().enumerate() {
            let key = format!("fault[{i}]");
            let at = c.time(format!("{key}.at"), &e.at)?;
            let (kind, duration) = c.kind(
                &key,
                &e.kind,
                &e.duration,
                &e.factor,
                &e.delay_ms,
                &e.jitter_ms,
            )?;
            let (target, span) = match (&e.process, &e.node) {
                (Some(_), Some(n)) => {
                    return c.bad(
                        n.span(),
                        format!("{key}.node"),
                        "give process or node, not both",
                    )
                }
                (Some(p), None) => (Target::Process(*p.get_ref()), p.span()),
                (None, Some(n)) => (Target::Node(*n.get_ref()), n.span()),
                (None, None) => (Target::Manager, e.kind.span()),
            };
            if let Err(why) = check_target(kind, target) {
                return c.bad(span, key, why);
            }
            in_range(
                format!(
                    "{key}.{}",
                    if e.node.is_some() { "node" } else { "process" }
                ),
                span,
                target,
            )?;
            faults.push(Fault {
                id: 0,
                at,
                kind,
                target,
                duration,
                origin: Origin::Line(line_of(text, e.kind.span().start)),
            });
        }
        // The fixed faults may not overlap on a target (the later is
        // named, with the one it meets).
        if let Some(shape) = shape {
            let mut fixed: Vec<(usize, &Fault)> = faults.iter().enumerate().collect();
            fixed.sort_by(|a, b| a.1.at.total_cmp(&b.1.at));
            for (k, &(i, f)) in fixed.iter().enumerate() {
                if let Some((_, g)) = fixed[..k]
                    .iter()
                    .find(|(_, g)| g.overlaps(f, shape, link_timeout))
                {
                    let Origin::Line(line) = f.origin else {
                        unreachable!("fixed")
                    };
                    return Err(ScenarioError::Invalid {
                        file: file.to_string(),
                        line,
                        key: format!("fault[{i}]"),
                        why: format!(
                            "{} overlaps {}: faults on one node process or node may not overlap in time (a crash without a duration ends its target's faults)",
                            f.about(link_timeout),
                            g.about(link_timeout)
                        ),
                    });
                }
            }
        }
        let mut left_out = 0;
        let seed = self.seed.unwrap_or(default_seed);
        for (i, e) in self.random.iter().enumerate() {
            let key = format!("random[{i}]");
            let (kind, duration) = c.kind(
                &key,
                &e.kind,
                &e.duration,
                &e.factor,
                &e.delay_ms,
                &e.jitter_ms,
            )?;
            let p = *e.per_hour.get_ref();
            if !(0.0..=1.0).contains(&p) {
                return c.bad(
                    e.per_hour.span(),
                    format!("{key}.per_hour"),
                    format!("must be a probability in [0, 1], got {p}"),
                );
            }
            let nodes = match &e.targets {
                None => false,
                Some(t) => match t.get_ref().as_str() {
                    "processes" => false,
                    "nodes" => true,
                    other => {
                        return c.bad(
                            t.span(),
                            format!("{key}.targets"),
                            format!("{other:?}: expected \"processes\" or \"nodes\""),
                        )
                    }
                },
            };
            if let (FaultKind::ManagerCrash, Some(t)) = (kind, &e.targets) {
                let span = t.span();
                return c.bad(
                    span,
                    format!("{key}.targets"),
                    "manager-crash has no targets",
                );
            }
            if nodes && matches!(kind, FaultKind::Partition | FaultKind::Delay { .. }) {
                let span = e.targets.as_ref().expect("checked").span();
                return c.bad(
                    span,
                    format!("{key}.targets"),
                    format!("{} acts on node processes' links", kind.name()),
                );
            }
            let from = e
                .from
                .as_ref()
                .map(|t| c.time(format!("{key}.from"), t))
                .transpose()?
                .unwrap_or(0.0);
            let until = e
                .until
                .as_ref()
                .map(|t| c.time(format!("{key}.until"), t))
                .transpose()?;
            if let (Some(u), Some(t)) = (until, &e.until) {
                if u <= from {
                    return c.bad(
                        t.span(),
                        format!("{key}.until"),
                        format!("must be after from ({from})"),
                    );
                }
            }
            let Some(shape) = shape else { continue };
            let until = until.unwrap_or(horizon);
            let line = line_of(text, e.kind.span().start);
            let targets: Vec<Target> = if kind == FaultKind::ManagerCrash {
                vec![Target::Manager]
            } else if nodes {
                (0..shape.nodes()).map(Target::Node).collect()
            } else {
                (0..shape.processes.len()).map(Target::Process).collect()
            };
            // One stream per entry, so adding an entry leaves the draws of
            // the others as they were.
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(i as u64 + 1);
            let mut hour = from;
            while hour < until {
                let end = (hour + 3600.0).min(until);
                for &target in &targets {
                    // Draw the time whether or not the fault happens: the
                    // stream stays aligned when per_hour changes.
                    let hit = rng.random::<f64>() < p;
                    let at = hour + rng.random::<f64>() * (end - hour);
                    if hit {
                        let f = Fault {
                            id: 0,
                            at,
                            kind,
                            target,
                            duration,
                            origin: Origin::Random(line),
                        };
                        // A draw meeting a fault already on its target is
                        // left out (counted, printed with the plan).
                        if faults.iter().any(|g| g.overlaps(&f, shape, link_timeout)) {
                            left_out += 1;
                        } else {
                            faults.push(f);
                        }
                    }
                }
                hour = end;
            }
        }
        // Stable: ties keep file order, fixed entries first.
        faults.sort_by(|a, b| a.at.total_cmp(&b.at));
        for (k, f) in faults.iter_mut().enumerate() {
            f.id = k + 1;
        }
        Ok(Plan {
            seed,
            link_timeout,
            faults,
            processes: shape.map_or_else(Vec::new, |s| s.processes.clone()),
            left_out,
        })
    }
}

impl Plan {
    /// The node process a fault acts on and, for a fault of one node, the
    /// node's local index in it; `None` for the manager (or a node the
    /// plan's cluster does not have).
    pub fn process_and_node(&self, f: &Fault) -> Option<(usize, Option<u32>)> {
        match f.target {
            Target::Process(p) => Some((p, None)),
            Target::Node(n) => {
                let p = self.processes.iter().position(|r| r.contains(&n))?;
                Some((p, Some((n - self.processes[p].start) as u32)))
            }
            Target::Manager => None,
        }
    }

    /// Whether any fault needs the simulator's process grouping or a live
    /// run's processes (anything but manager crashes).
    pub fn has_node_faults(&self) -> bool {
        self.faults.iter().any(|f| f.target != Target::Manager)
    }
}
