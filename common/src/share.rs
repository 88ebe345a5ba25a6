//! The Job Control share rule: which fraction of a node's processor each part
//! running on it receives.
//!
//! This is the one function that both the simulator's fluid node model and
//! the real emulated nodes call, so that a simulated node and a real node
//! given the same state hand out the same shares. It is pure: the caller
//! supplies the remaining estimated processor time and the remaining time to
//! the deadline of every part.
//!
//! The rule (the Libra+$ paper Algorithm 2, the Libra paper; readings in docs/policies.md):
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
//! [`SpareRule::Sla`] (the LibraSLA paper) changes only what happens when
//! the on-track parts need more than they can get: instead of scaling every
//! part down, the hard-deadline parts and the highest-return part keep `q`
//! and the other (soft-deadline) parts share what is left.
//!
//! Shares never sum above 1. No part with work left starves, except a
//! soft-deadline part under [`SpareRule::Sla`] while protected parts need
//! the whole node: it waits until one of them finishes its estimate or
//! reaches its deadline (both bounded).

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
    /// Give all of it to the part with the highest return.
    HighestReturn,
    /// LibraSLA (its paper's Algorithm 2): spare as [`SpareRule::HighestReturn`];
    /// on a short node (on-track parts need more than they can get), the
    /// hard-deadline parts and the highest-return part keep their `q` and
    /// the other parts (soft deadlines) share what is left in proportion
    /// to `q`, so only they are delayed.
    Sla,
}

impl SpareRule {
    /// The stable name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SpareRule::Proportional => "proportional",
            SpareRule::Idle => "idle",
            SpareRule::HighestReturn => "highest-return",
            SpareRule::Sla => "sla",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<SpareRule> {
        match s {
            "proportional" => Some(SpareRule::Proportional),
            "idle" => Some(SpareRule::Idle),
            "highest-return" => Some(SpareRule::HighestReturn),
            "sla" => Some(SpareRule::Sla),
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
    /// The part's return, used only by [`SpareRule::HighestReturn`] and
    /// [`SpareRule::Sla`].
    pub ret: f64,
    /// Whether the part's job has a hard deadline; used only by
    /// [`SpareRule::Sla`], which never delays such a part to make room.
    pub hard: bool,
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
    // One pass for `q`, `Q` and the overdue count (the sum in the same
    // order as [`total_required`]), then the shares from `q` in place:
    // a node holding thousands of parts recomputes at every event.
    let mut q_total = 0.0;
    let mut overdue = 0usize;
    out.extend(parts.iter().map(|p| {
        let q = p.required();
        q_total += q;
        overdue += usize::from(!p.on_track());
        q
    }));
    if overdue == 0 {
        if q_total > 1.0 {
            if rule == SpareRule::Sla {
                out.clear();
                sla_shortfall(parts, q_total, 1.0, 0.0, out);
            } else {
                out.iter_mut().for_each(|q| *q /= q_total);
            }
            return;
        }
        match rule {
            SpareRule::Proportional => {
                // q_total > 0 here: every part is on-track with rem > 0.
                out.iter_mut().for_each(|q| *q /= q_total);
            }
            SpareRule::Idle => {}
            SpareRule::HighestReturn | SpareRule::Sla => {
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
    if rule == SpareRule::Sla && q_total > 1.0 - pool {
        out.clear();
        sla_shortfall(parts, q_total, 1.0 - pool, each_overdue, out);
        return;
    }
    let on_track_scale = if q_total <= 1.0 - pool {
        1.0
    } else {
        (1.0 - pool) / q_total
    };
    for (q, p) in out.iter_mut().zip(parts) {
        *q = if p.on_track() {
            *q * on_track_scale
        } else {
            each_overdue
        };
    }
}

/// LibraSLA's short node: the on-track parts need `q_total` but only `cap`
/// is theirs. The hard-deadline parts and the highest-return on-track part
/// (ties to the earlier part) keep `q`; the other on-track parts share
/// `cap` less that, in proportion to `q` ("share the shortfall
/// proportionally", the LibraSLA paper). If the protected parts alone need more than
/// `cap`, they are scaled to fill it and the others wait. Overdue parts get
/// `overdue_share` each.
fn sla_shortfall(
    parts: &[ShareInput],
    q_total: f64,
    cap: f64,
    overdue_share: f64,
    out: &mut Vec<f64>,
) {
    let mut best: Option<usize> = None;
    for (k, p) in parts.iter().enumerate() {
        if p.on_track() && best.is_none_or(|b| p.ret > parts[b].ret) {
            best = Some(k);
        }
    }
    let protected = |k: usize, p: &ShareInput| p.on_track() && (p.hard || Some(k) == best);
    let q_protected: f64 = parts
        .iter()
        .enumerate()
        .filter(|(k, p)| protected(*k, p))
        .map(|(_, p)| p.required())
        .sum();
    let q_others = q_total - q_protected;
    // q_protected > 0: the highest-return on-track part has q > 0.
    let (scale_protected, scale_others) = if q_protected >= cap || q_others <= 0.0 {
        (cap / q_protected, 0.0)
    } else {
        (1.0, (cap - q_protected) / q_others)
    };
    out.extend(parts.iter().enumerate().map(|(k, p)| {
        if !p.on_track() {
            overdue_share
        } else if protected(k, p) {
            p.required() * scale_protected
        } else {
            p.required() * scale_others
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(rem: f64, rd: f64) -> ShareInput {
        ShareInput {
            rem,
            rd,
            ret: 0.0,
            hard: false,
        }
    }

    fn shares(parts: &[ShareInput], rule: SpareRule) -> Vec<f64> {
        let mut out = Vec::new();
        job_control_shares(parts, rule, &mut out);
        out
    }

    /// Spare capacity under the highest-return rule goes to the earlier
    /// of two parts of equal return (q 0.25 each, spare 0.5); on a short
    /// node LibraSLA's rule protects the earlier one (q 0.6 each: it
    /// keeps 0.6, the other gets the 0.4 left).
    #[test]
    fn highest_return_ties_go_to_the_earlier_part() {
        let r = |rem| ShareInput {
            ret: 1.0,
            ..p(rem, 100.0)
        };
        assert_eq!(
            shares(&[r(25.0), r(25.0)], SpareRule::HighestReturn),
            [0.75, 0.25]
        );
        let got = shares(&[r(60.0), r(60.0)], SpareRule::Sla);
        assert!(
            (got[0] - 0.6).abs() < 1e-12 && (got[1] - 0.4).abs() < 1e-12,
            "{got:?}"
        );
    }

    /// With a part overdue, by hand. Proportional: A needs 0.5, the
    /// overdue C gets the pool 1 - 0.5. LibraSLA's rule: A (q 0.6,
    /// return 2) and B (q 0.38, return 1) need 0.98, the overdue C gets
    /// the pool's floor, 0.05, and the short on-track parts share 0.95:
    /// A, the highest return, keeps 0.6, B gets the 0.35 left.
    #[test]
    fn overdue_parts_share_the_pool_and_sla_protects_the_highest_return() {
        let overdue = p(0.0, 10.0);
        assert_eq!(
            shares(&[p(50.0, 100.0), overdue], SpareRule::Proportional),
            [0.5, 0.5]
        );
        let a = ShareInput {
            ret: 2.0,
            ..p(60.0, 100.0)
        };
        let b = ShareInput {
            ret: 1.0,
            ..p(38.0, 100.0)
        };
        let got = shares(&[a, b, overdue], SpareRule::Sla);
        for (g, want) in got.iter().zip([0.6, 0.35, OVERDUE_POOL_MIN]) {
            assert!((g - want).abs() < 1e-12, "{got:?}");
        }
    }

    /// Every rule parses from the name it prints as (configs and the
    /// command line name them so); anything else is no rule.
    #[test]
    fn each_spare_rule_parses_from_its_name() {
        for rule in [
            SpareRule::Proportional,
            SpareRule::Idle,
            SpareRule::HighestReturn,
            SpareRule::Sla,
        ] {
            assert_eq!(SpareRule::parse(rule.name()), Some(rule));
        }
        assert_eq!(SpareRule::parse("Idle"), None);
        assert_eq!(SpareRule::parse(""), None);
    }

    /// A part is on track only with more than ON_TRACK_EPS of work and of
    /// time left: exactly that much of either is not (its required share
    /// counts 0), a little more is (1e-9 / 2e-9 = 0.5).
    #[test]
    fn on_track_needs_more_than_its_tolerance_of_work_and_time() {
        assert!(!p(ON_TRACK_EPS, 10.0).on_track());
        assert!(!p(10.0, ON_TRACK_EPS).on_track());
        assert_eq!(p(ON_TRACK_EPS, 10.0).required(), 0.0);
        assert!(p(2.0 * ON_TRACK_EPS, 4.0 * ON_TRACK_EPS).on_track());
        assert_eq!(p(2.0 * ON_TRACK_EPS, 4.0 * ON_TRACK_EPS).required(), 0.5);
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} != {b:?}");
        }
    }

    #[test]
    fn libra_paper_example_two_hours_in_four() {
        // The Libra paper: 2 CPU-hours left, 4 hours to the deadline -> 50%.
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
                hard: false,
            },
            ShareInput {
                rem: 30.0,
                rd: 100.0,
                ret: 5.0,
                hard: false,
            },
        ];
        close(&shares(&parts, SpareRule::HighestReturn), &[0.2, 0.8]);
    }

    fn sla(rem: f64, rd: f64, ret: f64, hard: bool) -> ShareInput {
        ShareInput { rem, rd, ret, hard }
    }

    #[test]
    fn sla_hands_spare_to_the_highest_return_like_highest_return() {
        // Not short (Q = 0.5): q each, the spare 0.5 to the part with
        // return 5, exactly as HighestReturn.
        let parts = [sla(20.0, 100.0, 1.0, false), sla(30.0, 100.0, 5.0, true)];
        close(&shares(&parts, SpareRule::Sla), &[0.2, 0.8]);
        close(
            &shares(&parts, SpareRule::Sla),
            &shares(&parts, SpareRule::HighestReturn),
        );
    }

    #[test]
    fn sla_short_node_delays_only_the_other_soft_parts() {
        // A soft, q = 50/100 = 0.5, return 0.015; N soft, q = 150/200 =
        // 0.75, return 0.02 (the highest). Q = 1.25: N keeps 0.75 and A
        // takes the rest, 0.25 (the whole shortfall of 0.25 is A's).
        let parts = [
            sla(50.0, 100.0, 0.015, false),
            sla(150.0, 200.0, 0.02, false),
        ];
        close(&shares(&parts, SpareRule::Sla), &[0.25, 0.75]);
        // The other rules scale both: 0.5/1.25 = 0.4 and 0.75/1.25 = 0.6.
        close(&shares(&parts, SpareRule::Proportional), &[0.4, 0.6]);
    }

    #[test]
    fn sla_hard_parts_keep_q_and_soft_parts_share_in_proportion() {
        // H hard q 0.4 (return 1), S1 soft q 0.4 (return 3, the highest),
        // S2 soft q 0.4 (return 2), S3 soft q 0.2 (return 0). Q = 1.4.
        // Protected: H and S1, 0.8. S2 and S3 need 0.6 and share 0.2 in
        // proportion: S2 0.4 x 0.2/0.6 = 0.1333.., S3 0.2 x 0.2/0.6.
        let parts = [
            sla(40.0, 100.0, 1.0, true),
            sla(40.0, 100.0, 3.0, false),
            sla(40.0, 100.0, 2.0, false),
            sla(20.0, 100.0, 0.0, false),
        ];
        close(
            &shares(&parts, SpareRule::Sla),
            &[0.4, 0.4, 0.4 * 0.2 / 0.6, 0.2 * 0.2 / 0.6],
        );
    }

    #[test]
    fn sla_protected_parts_over_the_node_are_scaled_and_the_rest_wait() {
        // Two hard parts need 0.7 + 0.6 = 1.3 on their own: scaled to
        // 0.7/1.3 and 0.6/1.3; the soft part (lowest return) gets 0.
        let parts = [
            sla(70.0, 100.0, 1.0, true),
            sla(60.0, 100.0, 2.0, true),
            sla(20.0, 100.0, 0.5, false),
        ];
        close(
            &shares(&parts, SpareRule::Sla),
            &[0.7 / 1.3, 0.6 / 1.3, 0.0],
        );
    }

    #[test]
    fn sla_short_node_with_an_overdue_part() {
        // On-track H hard q 0.6 (return 1), S soft q 0.5 (return 0), and
        // an overdue part O. Q = 1.1: O's pool is the floor 0.05, leaving
        // 0.95 to the on-track parts. H is protected (hard, and the
        // highest return): 0.6; S gets 0.95 - 0.6 = 0.35; O 0.05.
        let parts = [
            sla(60.0, 100.0, 1.0, true),
            sla(50.0, 100.0, 0.0, false),
            sla(0.0, 100.0, 9.0, false),
        ];
        close(&shares(&parts, SpareRule::Sla), &[0.6, 0.35, 0.05]);
        // Proportional scales both on-track parts to fill 0.95.
        close(
            &shares(&parts, SpareRule::Proportional),
            &[0.6 * 0.95 / 1.1, 0.5 * 0.95 / 1.1, 0.05],
        );
    }

    #[test]
    fn sla_names_round_trip() {
        assert_eq!(SpareRule::parse("sla"), Some(SpareRule::Sla));
        assert_eq!(SpareRule::Sla.name(), "sla");
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
