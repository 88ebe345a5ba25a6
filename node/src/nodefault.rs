//! Faults of the process's emulated nodes, made by the process itself
//! (`libratory run --faults`, docs/faults.md): a `slow` node runs at a
//! fraction of its capacity, a `hang`ing one is held still, a `crash`ed
//! one drops its parts. The manager's fault injector writes one command
//! line to the `--fault-control` file and sends SIGUSR1 (as for the link
//! faults of [`crate::linkfault`]):
//!
//! ```text
//! slow FACTOR SECONDS            every node of the process
//! node K slow FACTOR SECONDS     node K (local index) only
//! node K hang SECONDS
//! node K crash [SECONDS]
//! ```
//!
//! This is the plain state machine (commands and `now` in, each node's
//! [`NodeCondition`] out); `link::serve` applies the conditions to the
//! node actors and tells the link which nodes are silent. A held or
//! crashed node sends nothing: the link lists it in a `Silent` frame
//! before each heartbeat, so the manager hears nothing of it and gives it
//! up after its link timeout, as it would a real node (it tells the
//! process with `NodeLost`: [`NodeFaults::given_up`]). A hang ends by
//! itself after its time; its node goes on where it stopped (or idle, if
//! the manager gave it up meanwhile and its parts were dropped). A crashed
//! node comes back idle after its time, but not before the manager gave
//! it up (a node restarted before the manager noticed would otherwise
//! rejoin under an id the manager still holds parts on); without a time
//! it stays down.

use std::time::{Duration, Instant};

/// What a node is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Running (at its rate).
    Up,
    /// Held still (a hang): no work, nothing reported until released.
    Held,
    /// Crashed: its parts are dropped, nothing is placed or reported.
    Crashed,
}

/// A node's condition and the fraction of its capacity it runs at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeCondition {
    /// Up, held or crashed.
    pub condition: Condition,
    /// 1 at full speed, a `slow` fault's factor, 0 unless up.
    pub rate: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Faulted {
    /// A `slow` fault: (factor, until).
    slow: Option<(f64, Instant)>,
    down: Option<Down>,
}

#[derive(Debug, Clone, Copy)]
enum Down {
    Hung {
        until: Instant,
    },
    Crashed {
        /// When it may come back (none: never).
        back_after: Option<Instant>,
        /// The manager gave it up (`NodeLost`).
        given_up: bool,
    },
}

/// The faults of every node of the process (see the module docs).
#[derive(Debug, Clone)]
pub struct NodeFaults {
    nodes: Vec<Faulted>,
    /// When the first fault ends ([`Self::poll_timeout`]), kept: every
    /// change goes through [`Self::diff`]. The serve loop asks at every
    /// turn, and a scan of ~20,000 nodes there cost more than the rest of
    /// a dispatch's handling at Fugaku scale.
    next: Option<Instant>,
}

/// Nodes whose condition changed, with the new one.
pub type Changes = Vec<(u32, NodeCondition)>;

/// A command's effect on the faults, applied by [`NodeFaults::diff`].
type Change = Box<dyn FnOnce(&mut NodeFaults)>;

impl NodeFaults {
    /// `nodes` nodes, all up at full speed.
    pub fn new(nodes: usize) -> NodeFaults {
        NodeFaults {
            nodes: vec![Faulted::default(); nodes],
            next: None,
        }
    }

    /// Whether `line` is a node command (rather than a link one).
    pub fn is_node_command(line: &str) -> bool {
        matches!(line.split_whitespace().next(), Some("slow" | "node"))
    }

    /// Node `k`'s condition.
    pub fn condition(&self, k: u32) -> NodeCondition {
        let f = &self.nodes[k as usize];
        match f.down {
            Some(Down::Hung { .. }) => NodeCondition {
                condition: Condition::Held,
                rate: 0.0,
            },
            Some(Down::Crashed { .. }) => NodeCondition {
                condition: Condition::Crashed,
                rate: 0.0,
            },
            None => NodeCondition {
                condition: Condition::Up,
                rate: f.slow.map_or(1.0, |(factor, _)| factor),
            },
        }
    }

    /// Nodes that send nothing now (held or crashed), in order.
    pub fn silent(&self) -> Vec<u32> {
        (0..self.nodes.len() as u32)
            .filter(|&k| self.nodes[k as usize].down.is_some())
            .collect()
    }

    /// Runs `change` and returns the nodes whose condition it changed.
    fn diff(&mut self, change: impl FnOnce(&mut Self)) -> Changes {
        let before: Vec<NodeCondition> = (0..self.nodes.len() as u32)
            .map(|k| self.condition(k))
            .collect();
        change(self);
        self.next = self.first_end();
        (0..self.nodes.len() as u32)
            .filter_map(|k| {
                let c = self.condition(k);
                (c != before[k as usize]).then_some((k, c))
            })
            .collect()
    }

    /// Applies one command line (see the module docs) at `now`: what it
    /// does, for the log, and the nodes it changed.
    pub fn apply(&mut self, line: &str, now: Instant) -> Result<(String, Changes), String> {
        let w: Vec<&str> = line.split_whitespace().collect();
        let secs = |s: &str| -> Result<Duration, String> {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("{line:?}: {s:?} is not a number of seconds >= 0"))
        };
        let factor = |s: &str| -> Result<f64, String> {
            s.parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && *v <= 1.0)
                .ok_or_else(|| format!("{line:?}: factor {s:?} is not in (0, 1]"))
        };
        let n = self.nodes.len();
        let node = |s: &str| -> Result<usize, String> {
            s.parse::<usize>()
                .ok()
                .filter(|&k| k < n)
                .ok_or_else(|| format!("{line:?}: no node {s:?} in this process ({n} nodes)"))
        };
        let (what, change): (String, Change) = match w.as_slice() {
            ["slow", f, s] => {
                let (f, until) = (factor(f)?, now + secs(s)?);
                (
                    format!("every node at {f} of its capacity for {s} s"),
                    Box::new(move |me: &mut Self| {
                        me.nodes.iter_mut().for_each(|x| x.slow = Some((f, until)))
                    }),
                )
            }
            ["node", k, "slow", f, s] => {
                let (k, f, until) = (node(k)?, factor(f)?, now + secs(s)?);
                (
                    format!("node {k} at {f} of its capacity for {s} s"),
                    Box::new(move |me: &mut Self| me.nodes[k].slow = Some((f, until))),
                )
            }
            ["node", k, "hang", s] => {
                let (k, until) = (node(k)?, now + secs(s)?);
                (
                    format!("node {k} held still for {s} s"),
                    Box::new(move |me: &mut Self| {
                        if !matches!(me.nodes[k].down, Some(Down::Crashed { .. })) {
                            me.nodes[k].down = Some(Down::Hung { until });
                        }
                    }),
                )
            }
            ["node", k, "crash", rest @ ..] if rest.len() <= 1 => {
                let k = node(k)?;
                let back_after = rest.first().map(|s| secs(s)).transpose()?.map(|d| now + d);
                let what = match rest.first() {
                    Some(s) => format!("node {k} crashed, back after {s} s once given up"),
                    None => format!("node {k} crashed"),
                };
                (
                    what,
                    Box::new(move |me: &mut Self| {
                        me.nodes[k].down = Some(Down::Crashed {
                            back_after,
                            given_up: false,
                        })
                    }),
                )
            }
            _ => {
                return Err(format!(
                    "{line:?}: expected `slow FACTOR SECONDS`, `node K slow FACTOR SECONDS`, \
                     `node K hang SECONDS` or `node K crash [SECONDS]`"
                ))
            }
        };
        Ok((what, self.diff(change)))
    }

    /// The manager gave node `k` up (it was silent too long) at `now`: a
    /// crashed node whose time is over comes back.
    pub fn given_up(&mut self, k: u32, now: Instant) -> Changes {
        self.diff(|me| {
            if let Some(Some(Down::Crashed { given_up, .. })) =
                me.nodes.get_mut(k as usize).map(|f| f.down.as_mut())
            {
                *given_up = true;
            }
            me.expire(now);
        })
    }

    /// Ends what is over at `now`.
    pub fn handle_timeout(&mut self, now: Instant) -> Changes {
        // Nothing ends before the first end (the link's own timers wake
        // the loop far more often than faults end).
        match self.next {
            Some(t) if now >= t => self.diff(|me| me.expire(now)),
            _ => Changes::new(),
        }
    }

    fn expire(&mut self, now: Instant) {
        for f in &mut self.nodes {
            if f.slow.is_some_and(|(_, until)| now >= until) {
                f.slow = None;
            }
            match f.down {
                Some(Down::Hung { until }) if now >= until => f.down = None,
                Some(Down::Crashed {
                    back_after: Some(t),
                    given_up: true,
                }) if now >= t => f.down = None,
                _ => {}
            }
        }
    }

    /// When [`Self::handle_timeout`] has something to end.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    /// [`Self::poll_timeout`] worked out from every node.
    fn first_end(&self) -> Option<Instant> {
        self.nodes
            .iter()
            .flat_map(|f| {
                let down = match f.down {
                    Some(Down::Hung { until }) => Some(until),
                    Some(Down::Crashed {
                        back_after,
                        given_up: true,
                    }) => back_after,
                    _ => None,
                };
                [f.slow.map(|(_, until)| until), down]
            })
            .flatten()
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UP: NodeCondition = NodeCondition {
        condition: Condition::Up,
        rate: 1.0,
    };

    fn at(t0: Instant, s: f64) -> Instant {
        t0 + Duration::from_secs_f64(s)
    }

    /// The kept next end is the one worked out from every node, and a
    /// timeout before it changes nothing that expiring every node would
    /// change: 3,000 seeded random steps (commands, losses, timeouts at
    /// times moving forward) on 6 nodes, seed 20261128.
    #[test]
    fn the_kept_next_end_is_every_nodes_first_end() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261128);
        let t0 = Instant::now();
        let mut f = NodeFaults::new(6);
        let mut t = 0.0;
        for step in 0..3000 {
            t += rng.random_range(0.0..0.5);
            let now = at(t0, t);
            let k = rng.random_range(0..6);
            let secs = rng.random_range(0.0..3.0);
            match rng.random_range(0..7) {
                0 => drop(f.apply(&format!("slow 0.5 {secs}"), now)),
                1 => drop(f.apply(&format!("node {k} slow 0.25 {secs}"), now)),
                2 => drop(f.apply(&format!("node {k} hang {secs}"), now)),
                3 => drop(f.apply(&format!("node {k} crash {secs}"), now)),
                4 => drop(f.apply(&format!("node {k} crash"), now)),
                5 => drop(f.given_up(k, now)),
                _ => {
                    let mut every = f.clone();
                    let want = every.diff(|me| me.expire(now));
                    assert_eq!(f.handle_timeout(now), want, "step {step}");
                }
            }
            assert_eq!(f.poll_timeout(), f.first_end(), "step {step}");
        }
    }

    #[test]
    fn slow_lowers_the_rate_for_its_time_then_restores_it() {
        let t0 = Instant::now();
        let mut f = NodeFaults::new(3);
        let (_, ch) = f.apply("node 1 slow 0.25 2", t0).unwrap();
        assert_eq!(
            ch,
            vec![(
                1,
                NodeCondition {
                    condition: Condition::Up,
                    rate: 0.25
                }
            )]
        );
        assert!(f.silent().is_empty(), "a slow node still reports");
        assert_eq!(f.poll_timeout(), Some(at(t0, 2.0)));
        assert!(f.handle_timeout(at(t0, 1.9)).is_empty());
        assert_eq!(f.handle_timeout(at(t0, 2.0)), vec![(1, UP)]);
        assert_eq!(f.poll_timeout(), None);
        // The whole process.
        let (_, ch) = f.apply("slow 0.5 1", t0).unwrap();
        assert_eq!(ch.len(), 3);
        assert!(ch.iter().all(|(_, c)| c.rate == 0.5));
    }

    #[test]
    fn a_hang_is_silent_and_ends_by_itself() {
        let t0 = Instant::now();
        let mut f = NodeFaults::new(2);
        let (_, ch) = f.apply("node 0 hang 3", t0).unwrap();
        assert_eq!(ch[0].1.condition, Condition::Held);
        assert_eq!(ch[0].1.rate, 0.0);
        assert_eq!(f.silent(), vec![0]);
        // Given up or not, it wakes after its time.
        assert!(f.given_up(0, at(t0, 2.0)).is_empty());
        assert_eq!(f.handle_timeout(at(t0, 3.0)), vec![(0, UP)]);
        assert!(f.silent().is_empty());
    }

    #[test]
    fn a_crashed_node_comes_back_after_its_time_and_its_loss_only() {
        let t0 = Instant::now();
        let mut f = NodeFaults::new(2);
        let (_, ch) = f.apply("node 1 crash 1", t0).unwrap();
        assert_eq!(ch[0].1.condition, Condition::Crashed);
        assert_eq!(f.silent(), vec![1]);
        // Its time is over, but the manager still holds it: stays down.
        assert!(f.handle_timeout(at(t0, 2.0)).is_empty());
        assert_eq!(f.poll_timeout(), None);
        assert_eq!(f.given_up(1, at(t0, 5.0)), vec![(1, UP)]);
        // Given up before its time is over: back at the time.
        f.apply("node 0 crash 10", t0).unwrap();
        assert!(f.given_up(0, at(t0, 5.0)).is_empty());
        assert_eq!(f.poll_timeout(), Some(at(t0, 10.0)));
        assert_eq!(f.handle_timeout(at(t0, 10.0)), vec![(0, UP)]);
        // Without a time: never back.
        f.apply("node 0 crash", t0).unwrap();
        assert!(f.given_up(0, at(t0, 100.0)).is_empty());
        assert_eq!(f.silent(), vec![0]);
    }

    #[test]
    fn bad_commands_are_refused_naming_the_word() {
        let t0 = Instant::now();
        let mut f = NodeFaults::new(2);
        assert!(f
            .apply("node 2 hang 1", t0)
            .unwrap_err()
            .contains("no node \"2\""));
        assert!(f.apply("slow 1.5 1", t0).unwrap_err().contains("\"1.5\""));
        assert!(f.apply("node 0 explode", t0).is_err());
        assert!(NodeFaults::is_node_command("node 1 crash"));
        assert!(!NodeFaults::is_node_command("partition 2"));
    }
}
