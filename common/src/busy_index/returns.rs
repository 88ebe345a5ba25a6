//! LibraSLA's order of the busy nodes: by the sum of their parts' returns.
//!
//! A node's return with a new part is the sum over its parts of `ret -
//! delay x ret_penalty`, plus the new part's, with every delay and penalty
//! rate `>= 0`; so it is at most the sum of the parts' `ret` plus the new
//! part's `ret` (float addition is monotone, so the projection's own sum
//! is at most that one). The sum does not change with time, only when a
//! part is placed, completes, is lost or cancelled (progress reports
//! leave it as it is), so it is kept in an order (a B-tree) updated where
//! the index learns that a node changed, and LibraSLA walks the busy
//! nodes from the highest sum down, stopping once no node left can reach
//! the `P` best new returns found (see
//! [`crate::policy::LibraSla`]'s `decide_by_returns`).
//!
//! Kept only while a policy reads it ([`BusyIndex::keep_returns`]): its
//! upkeep is a B-tree update per change of a node.

use std::collections::BTreeSet;

use super::{order_key, BusyIndex};
use crate::node_model::NodeState;

/// The order of the busy nodes by their parts' returns.
#[derive(Debug, Clone, Default)]
pub(super) struct Returns {
    /// Whether the order is kept.
    on: bool,
    /// Per node: its sum of returns and its key in the order (NaN: not
    /// in the order).
    of: Vec<(f64, f64)>,
    /// `(order key of the key, node)` for every busy node.
    order: BTreeSet<(u64, usize)>,
}

impl Returns {
    /// The sum of `node`'s parts' returns, bit for bit the one LibraSLA's
    /// shortcut adds up (the same sum in the same order), and its key: the
    /// sum itself when it bounds the node's return from above, else
    /// `+inf` (walked first, never a reason to stop): a penalty rate that
    /// is not `>= 0` (a part taken over from a node process may carry
    /// anything) would let a delay raise the return, and a NaN sum has no
    /// place in an order.
    fn sum_and_key(node: &NodeState) -> (f64, f64) {
        let sum: f64 = node.parts.iter().map(|p| p.ret).sum();
        let bounded = !sum.is_nan() && node.parts.iter().all(|p| p.ret_penalty >= 0.0);
        (sum, if bounded { sum } else { f64::INFINITY })
    }

    /// Files node `k` by what it holds now (out of the order when empty).
    pub(super) fn note(&mut self, k: usize, node: &NodeState) {
        if !self.on {
            return;
        }
        self.take_out(k);
        if !node.parts.is_empty() {
            let (sum, key) = Returns::sum_and_key(node);
            self.of[k] = (sum, key);
            self.order.insert((order_key(key), k));
        }
    }

    /// Takes node `k` out of the order.
    pub(super) fn take_out(&mut self, k: usize) {
        if !self.on {
            return;
        }
        if k >= self.of.len() {
            self.of.resize(k + 1, (f64::NAN, f64::NAN));
        }
        let key = self.of[k].1;
        if !key.is_nan() {
            self.order.remove(&(order_key(key), k));
            self.of[k] = (f64::NAN, f64::NAN);
        }
    }
}

impl BusyIndex {
    /// Whether the order of the busy nodes by their parts' returns is kept
    /// (LibraSLA reads it): switching it on files every busy node of
    /// `view`, from then on the index's hooks ([`Self::add`],
    /// [`Self::update`], [`Self::remove`]) keep it.
    pub fn keep_returns(&mut self, on: bool, view: &[NodeState]) {
        if self.returns.on == on {
            return;
        }
        self.returns = Returns {
            on,
            ..Returns::default()
        };
        if on {
            self.returns.of.resize(view.len(), (f64::NAN, f64::NAN));
            for k in self.busy.iter() {
                self.returns.note(k, &view[k]);
            }
        }
    }

    /// Whether [`Self::keep_returns`] is on.
    pub fn returns_kept(&self) -> bool {
        self.returns.on
    }

    /// The busy nodes by their key, highest first: `(key, node, sum)`,
    /// where `sum` is the sum of the node's parts' returns (bit for bit
    /// LibraSLA's shortcut's) and `key` is `sum` or, when a part's penalty
    /// rate is not `>= 0`, `+inf`. The node's return with any new part of
    /// return `r` is at most `key + r` (in floats).
    pub fn by_return_desc(&self) -> impl Iterator<Item = (f64, usize, f64)> + Clone + '_ {
        self.returns.order.iter().rev().map(|&(_, k)| {
            let (sum, key) = self.returns.of[k];
            (key, k, sum)
        })
    }

    /// How many nodes the order holds (every busy node while it is kept).
    pub fn returns_len(&self) -> usize {
        self.returns.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_model::PartView;
    use crate::policy::test_util::nodes;

    fn part(job: u64, ret: f64, ret_penalty: f64) -> PartView {
        PartView {
            job,
            est_cpu: 10.0,
            cpu_done: 0.0,
            deadline: 100.0,
            memory_kb: 0,
            disk_mb: 0,
            ret,
            ret_penalty,
            hard: false,
        }
    }

    fn order(ix: &BusyIndex) -> Vec<(f64, usize)> {
        ix.by_return_desc().map(|(key, k, _)| (key, k)).collect()
    }

    #[test]
    fn busy_nodes_are_ordered_by_their_sum_of_returns_as_they_change() {
        // Node 0 holds returns 0.25 + 0.5, node 2 holds 1.0, node 1 is
        // idle: 2 (1.0) before 0 (0.75).
        let mut view = nodes(4);
        view[0].parts.push(part(1, 0.25, 0.0));
        view[0].parts.push(part(2, 0.5, 1.0));
        view[2].parts.push(part(3, 1.0, 0.0));
        let mut ix = BusyIndex::of(&view);
        assert!(!ix.returns_kept());
        ix.keep_returns(true, &view);
        assert_eq!(order(&ix), [(1.0, 2), (0.75, 0)]);
        // Node 1 gains a part of return 2; node 2's completes.
        view[1].parts.push(part(4, 2.0, 0.0));
        ix.update(1, &view[1]);
        view[2].parts.clear();
        ix.update(2, &view[2]);
        assert_eq!(order(&ix), [(2.0, 1), (0.75, 0)]);
        // A negative penalty rate (a delay would raise the return): the
        // sum no longer bounds it, node 3 goes first, with its sum kept.
        view[3].parts.push(part(5, 0.1, -1.0));
        ix.update(3, &view[3]);
        let first = ix.by_return_desc().next().unwrap();
        assert_eq!(first, (f64::INFINITY, 3, 0.1));
        // Node 0 is lost.
        ix.remove(0, &view[0]);
        assert_eq!(order(&ix), [(f64::INFINITY, 3), (2.0, 1)]);
        assert_eq!(ix.returns_len(), ix.busy_len());
        // Switched off and on again: filed from the view afresh.
        ix.keep_returns(false, &view);
        assert_eq!(ix.returns_len(), 0);
        view[0].parts.clear();
        ix.keep_returns(true, &view);
        assert_eq!(order(&ix), [(f64::INFINITY, 3), (2.0, 1)]);
    }
}
