//! The Job Control share rule: which fraction of a node's processor each part
//! running on it receives.
//!
//! This is the one function that both the simulator's fluid node model and
//! the real emulated nodes call, so that a simulated node and a real node
//! given the same state hand out the same shares. It is pure: the caller
//! supplies the remaining estimated processor time and the remaining time to
//! the deadline of every part.
//!
//! The rule (seed 000 Algorithm 2, seed 003; readings in docs/policies.md):
//! a part is *on-track* when it still has estimated work left (`rem > 0`) and
//! its deadline has not passed (`rd > 0`); its required share is
//! `q = rem / rd`. Otherwise it is *overdue* (it ran past its estimate, or its
//! deadline passed) but still needs processor time to finish its real work.
//! With `Q` the sum of on-track `q`:
//! - no overdue part and `Q <= 1`: each part gets `q`, and the spare `1 - Q`
//!   is handed out by the [`SpareRule`];
//! - no overdue part and `Q > 1`: each part gets `q / Q`;
//! - some part overdue: the overdue parts split a pool of
//!   `max(1 - Q, OVERDUE_POOL_MIN)` equally; on-track parts get `q` if
//!   `Q <= 1 - pool`, else are scaled to fill `1 - pool`.
//!
//! Shares never sum above 1 and no part with work left starves.

use serde::{Deserialize, Serialize};

/// Smallest pool of the node's capacity that overdue parts share, so that an
/// overdue part always makes progress even on a node that is over-committed.
pub const OVERDUE_POOL_MIN: f64 = 0.05;

/// Below this much remaining estimated work or remaining deadline (trace
/// seconds) a part counts as overdue rather than on-track. It keeps a part
/// that is a rounding error away from its estimate from demanding an
/// enormous `q`.
pub const ON_TRACK_EPS: f64 = 1e-9;

/// What a node does with capacity that on-track parts do not need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SpareRule {
    /// Hand the spare out in proportion to `q`, so each part gets `q / Q`
    /// (work-conserving). The default everywhere: it matters a lot for every
    /// result, because it makes parts finish early and frees capacity.
    #[default]
    Proportional,
    /// Leave it idle: each part gets exactly `q`.
    Idle,
    /// Give all of it to the part with the highest return (LibraSLA).
    HighestReturn,
}

impl SpareRule {
    /// The stable name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SpareRule::Proportional => "proportional",
            SpareRule::Idle => "idle",
            SpareRule::HighestReturn => "highest-return",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<SpareRule> {
        match s {
            "proportional" => Some(SpareRule::Proportional),
            "idle" => Some(SpareRule::Idle),
            "highest-return" => Some(SpareRule::HighestReturn),
            _ => None,
        }
    }
}

/// What the share rule needs to know about one part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareInput {
    /// Remaining *estimated* processor time on this node (seconds of this
    /// node's processor): estimate / speed minus processor time done. May be
    /// zero or negative once the part has run past its estimate.
    pub rem: f64,
    /// Remaining time to the part's absolute deadline (`deadline - now`).
    /// Zero or negative once the deadline has passed.
    pub rd: f64,
    /// The part's return, used only by [`SpareRule::HighestReturn`].
    pub ret: f64,
}

impl ShareInput {
    /// Whether the part is on-track (has estimated work left and a deadline
    /// still ahead).
    pub fn on_track(&self) -> bool {
        self.rem > ON_TRACK_EPS && self.rd > ON_TRACK_EPS
    }

    /// The required share `rem / rd` of an on-track part; 0 for an overdue
    /// part (which is how Libra's admission test counts it).
    pub fn required(&self) -> f64 {
        if self.on_track() {
            self.rem / self.rd
        } else {
            0.0
        }
    }
}

/// Sum of the required shares of the on-track parts (`Q`).
pub fn total_required(parts: &[ShareInput]) -> f64 {
    parts.iter().map(ShareInput::required).sum()
}

/// Computes every part's share of the node's capacity into `out` (cleared
/// first, one entry per part, same order).
pub fn job_control_shares(parts: &[ShareInput], rule: SpareRule, out: &mut Vec<f64>) {
    out.clear();
    if parts.is_empty() {
        return;
    }
    let q_total = total_required(parts);
    let overdue = parts.iter().filter(|p| !p.on_track()).count();
    if overdue == 0 {
        if q_total > 1.0 {
            out.extend(parts.iter().map(|p| p.required() / q_total));
            return;
        }
        match rule {
            SpareRule::Proportional => {
                // q_total > 0 here: every part is on-track with rem > 0.
                out.extend(parts.iter().map(|p| p.required() / q_total));
            }
            SpareRule::Idle => out.extend(parts.iter().map(ShareInput::required)),
            SpareRule::HighestReturn => {
                out.extend(parts.iter().map(ShareInput::required));
                // Ties go to the earlier part so the rule is deterministic.
                let mut best = 0;
                for (k, p) in parts.iter().enumerate() {
                    if p.ret > parts[best].ret {
                        best = k;
                    }
                }
                out[best] += 1.0 - q_total;
            }
        }
        return;
    }
    let pool = (1.0 - q_total).max(OVERDUE_POOL_MIN);
    let each_overdue = pool / overdue as f64;
    let on_track_scale = if q_total <= 1.0 - pool {
        1.0
    } else {
        (1.0 - pool) / q_total
    };
    out.extend(parts.iter().map(|p| {
        if p.on_track() {
            p.required() * on_track_scale
        } else {
            each_overdue
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(rem: f64, rd: f64) -> ShareInput {
        ShareInput { rem, rd, ret: 0.0 }
    }

    fn shares(parts: &[ShareInput], rule: SpareRule) -> Vec<f64> {
        let mut out = Vec::new();
        job_control_shares(parts, rule, &mut out);
        out
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} != {b:?}");
        }
    }

    #[test]
    fn seed_003_example_two_hours_in_four() {
        // Seed 003: 2 CPU-hours left, 4 hours to the deadline -> 50%.
        let parts = [p(7200.0, 14400.0)];
        close(&shares(&parts, SpareRule::Idle), &[0.5]);
        // Alone, the proportional rule hands it the whole node.
        close(&shares(&parts, SpareRule::Proportional), &[1.0]);
    }

    #[test]
    fn proportional_spare_scales_to_one() {
        // q = 0.2 and 0.3: Q = 0.5, shares 0.4 and 0.6.
        let parts = [p(20.0, 100.0), p(30.0, 100.0)];
        close(&shares(&parts, SpareRule::Proportional), &[0.4, 0.6]);
        close(&shares(&parts, SpareRule::Idle), &[0.2, 0.3]);
    }

    #[test]
    fn highest_return_takes_spare() {
        let parts = [
            ShareInput {
                rem: 20.0,
                rd: 100.0,
                ret: 1.0,
            },
            ShareInput {
                rem: 30.0,
                rd: 100.0,
                ret: 5.0,
            },
        ];
        close(&shares(&parts, SpareRule::HighestReturn), &[0.2, 0.8]);
    }

    #[test]
    fn overloaded_node_scales_down() {
        // q = 0.8 and 0.6: Q = 1.4, shares 0.8/1.4 and 0.6/1.4.
        let parts = [p(80.0, 100.0), p(60.0, 100.0)];
        close(
            &shares(&parts, SpareRule::Proportional),
            &[0.8 / 1.4, 0.6 / 1.4],
        );
    }

    #[test]
    fn overdue_part_gets_the_rest() {
        // On-track q = 0.25; overdue part (past its estimate) gets 0.75.
        let parts = [p(25.0, 100.0), p(-3.0, 50.0)];
        close(&shares(&parts, SpareRule::Proportional), &[0.25, 0.75]);
    }

    #[test]
    fn overdue_pool_has_a_floor() {
        // On-track Q = 0.99: pool = 0.05, on-track scaled to fill 0.95; two
        // overdue parts (one past its deadline, one past its estimate) split
        // the pool.
        let parts = [p(99.0, 100.0), p(10.0, -1.0), p(0.0, 10.0)];
        close(
            &shares(&parts, SpareRule::Proportional),
            &[0.99 * 0.95 / 0.99, 0.025, 0.025],
        );
    }

    #[test]
    fn only_overdue_parts_split_the_node() {
        let parts = [p(0.0, 10.0), p(5.0, 0.0)];
        close(&shares(&parts, SpareRule::Idle), &[0.5, 0.5]);
    }

    #[test]
    fn empty_node_has_no_shares() {
        assert!(shares(&[], SpareRule::Proportional).is_empty());
    }
}
