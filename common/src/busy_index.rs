//! Which nodes of the live view hold parts.
//!
//! A decision over a large, mostly idle cluster need not look at every
//! node: an idle node's load is zero, so every idle node of one speed
//! gives the same answer, and Libra ranks equal loads by node index. The
//! live core keeps this index as parts come and go, and Libra decides on
//! the busy nodes plus the first few idle nodes of each speed
//! ([`crate::policy::steps::resource_deadline_filter_indexed`]): the same
//! decision as a walk over every node, at a cost that follows the busy
//! nodes, not the cluster's size (10,000 emulated nodes per host).
//!
//! The index also remembers each busy node's load (Libra's required
//! share) at the instant the live core last brought the node up to date:
//! the decisions of one burst of submissions, taken at one instant, then
//! add up the parts of a node only when it changed since the previous
//! decision (the node the previous job went to), not every part of every
//! busy node for every decision. A remembered load is the very value
//! [`NodeState::required_share`] gives at that instant (the same sum in
//! the same order); any change to the node forgets it.
//!
//! Indices are the view's (`ManagerCore`'s snapshot), not global node ids.

use fixedbitset::FixedBitSet;

use crate::node_model::NodeState;
use crate::time::Time;

/// A set of node indices, walked in ascending order: a bit per node of the
/// view. Libra's walk goes over the busy nodes for every decision; under a
/// flood that is every node, and a tree's walk (a B-tree set before) cost
/// several times a bit scan's.
#[derive(Debug, Clone, Default)]
pub struct NodeSet {
    bits: FixedBitSet,
    len: usize,
}

/// The same nodes, however far each set's bits have grown.
impl PartialEq for NodeSet {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl NodeSet {
    /// Adds `k`; false if it was there.
    fn insert(&mut self, k: usize) -> bool {
        if k >= self.bits.len() {
            self.bits.grow(k + 1);
        }
        let had = self.bits.put(k);
        self.len += usize::from(!had);
        !had
    }

    /// Takes `k` out; false if it was not there.
    fn remove(&mut self, k: usize) -> bool {
        let had = self.contains(k);
        if had {
            self.bits.set(k, false);
            self.len -= 1;
        }
        had
    }

    /// Whether `k` is in the set.
    pub fn contains(&self, k: usize) -> bool {
        self.bits.contains(k)
    }

    /// How many nodes the set holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lowest node index in the set.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The nodes, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.ones()
    }
}

/// The busy nodes of a view and its idle nodes by speed, both by index.
#[derive(Debug, Clone)]
pub struct BusyIndex {
    /// Nodes holding at least one part, ascending.
    busy: NodeSet,
    /// Idle nodes, grouped by speed (groups in the order their speed was
    /// first seen), each group ascending.
    idle: Vec<(f64, NodeSet)>,
    /// Per node: the instant its load was last computed and that load
    /// (NaN instant: not known). Not part of the index's identity.
    loads: Vec<(Time, f64)>,
    /// The instant [`Self::renew_loads`] last brought every busy node up
    /// to (NaN: none since a change it could not follow).
    renewed_at: Time,
    /// Nodes whose load was forgotten since then: at that same instant
    /// again, only these need renewing (a burst's decisions change one
    /// node each), not a walk over every busy node.
    stale: Vec<usize>,
}

impl Default for BusyIndex {
    fn default() -> Self {
        BusyIndex {
            busy: NodeSet::default(),
            idle: Vec::new(),
            loads: Vec::new(),
            renewed_at: Time::NAN,
            stale: Vec::new(),
        }
    }
}

impl PartialEq for BusyIndex {
    fn eq(&self, other: &Self) -> bool {
        self.busy == other.busy && self.idle == other.idle
    }
}

impl BusyIndex {
    /// The index of `view` as it stands.
    pub fn of(view: &[NodeState]) -> BusyIndex {
        let mut ix = BusyIndex::default();
        for (k, n) in view.iter().enumerate() {
            ix.add(k, n);
        }
        ix
    }

    /// Takes node `k` (new, or after [`Self::remove`]) into the index.
    pub fn add(&mut self, k: usize, node: &NodeState) {
        // The index may have held another node at `k` before.
        self.forget_load(k);
        if node.parts.is_empty() {
            self.idle_group(node.spec.speed).insert(k);
        } else {
            self.busy.insert(k);
        }
    }

    /// Takes node `k` out of the index.
    pub fn remove(&mut self, k: usize, node: &NodeState) {
        if !self.busy.remove(k) {
            self.idle_group(node.spec.speed).remove(k);
        }
    }

    /// Node `k` changed (gained or lost a part, possibly its last): files
    /// it by what it holds now and forgets its load.
    pub fn update(&mut self, k: usize, node: &NodeState) {
        self.forget_load(k);
        if node.parts.is_empty() {
            if self.busy.remove(k) {
                self.idle_group(node.spec.speed).insert(k);
            }
        } else if self.busy.insert(k) {
            self.idle_group(node.spec.speed).remove(k);
        }
    }

    /// Node `k`'s parts changed in place (a progress report): its load
    /// must be computed again.
    pub fn forget_load(&mut self, k: usize) {
        if let Some(l) = self.loads.get_mut(k) {
            l.0 = Time::NAN;
        }
        if self.stale.len() < self.busy.len() {
            self.stale.push(k);
        } else {
            // More changes than busy nodes (or loads never renewed, as in
            // the simulator): the next renewal walks them all anyway.
            self.renewed_at = Time::NAN;
            self.stale.clear();
        }
    }

    /// Calls `renew` for every busy node whose load is not known at `now`;
    /// `renew` brings the node up to `now` and returns its
    /// [`NodeState::required_share`] there, which is remembered.
    pub fn renew_loads(&mut self, now: Time, mut renew: impl FnMut(usize) -> f64) {
        // NaN never equals: an unknown load is always renewed.
        if now == self.renewed_at {
            // Every busy node was known at `now`; since then only these
            // changed (busy ones among them: an idle node's load is not
            // remembered).
            for k in self.stale.drain(..) {
                if !self.busy.contains(k) {
                    continue;
                }
                if k >= self.loads.len() {
                    self.loads.resize(k + 1, (Time::NAN, 0.0));
                }
                if self.loads[k].0 != now {
                    self.loads[k] = (now, renew(k));
                }
            }
            return;
        }
        self.stale.clear();
        self.renewed_at = now;
        for k in self.busy.iter() {
            if k >= self.loads.len() {
                self.loads.resize(k + 1, (Time::NAN, 0.0));
            }
            let l = &mut self.loads[k];
            if l.0 != now {
                *l = (now, renew(k));
            }
        }
    }

    /// Node `k`'s load at `now`: remembered if known at `now`, else added
    /// up.
    pub fn load(&self, k: usize, node: &NodeState, now: Time) -> f64 {
        match self.loads.get(k) {
            Some(&(at, load)) if at == now => {
                debug_assert_eq!(
                    load.to_bits(),
                    node.required_share(now).to_bits(),
                    "node {k}: a remembered load was not forgotten when the node changed"
                );
                load
            }
            _ => node.required_share(now),
        }
    }

    fn idle_group(&mut self, speed: f64) -> &mut NodeSet {
        // Compared bit for bit, as the filter compares speeds (`!=`); a
        // handful of distinct speeds at most, so a scan is cheapest.
        let at = match self
            .idle
            .iter()
            .position(|(s, _)| s.to_bits() == speed.to_bits())
        {
            Some(i) => i,
            None => {
                self.idle.push((speed, NodeSet::default()));
                self.idle.len() - 1
            }
        };
        &mut self.idle[at].1
    }

    /// Busy nodes, ascending.
    pub fn busy(&self) -> impl Iterator<Item = usize> + '_ {
        self.busy.iter()
    }

    /// Idle nodes by speed: each speed with its idle nodes, ascending
    /// (groups may be empty).
    pub fn idle_by_speed(&self) -> impl Iterator<Item = (f64, &NodeSet)> + '_ {
        self.idle.iter().map(|(s, g)| (*s, g))
    }

    /// Distinct speeds seen among idle nodes (empty groups included).
    pub fn speeds(&self) -> usize {
        self.idle.len()
    }

    /// The same nodes in the same places as [`Self::of`] would give
    /// (empty speed groups aside): for tests and debug checks.
    pub fn agrees_with(&self, view: &[NodeState]) -> bool {
        let fresh = BusyIndex::of(view);
        let groups = |ix: &BusyIndex| {
            let mut g: Vec<(u64, Vec<usize>)> = ix
                .idle
                .iter()
                .filter(|(_, s)| !s.is_empty())
                .map(|(sp, s)| (sp.to_bits(), s.iter().collect()))
                .collect();
            g.sort();
            g
        };
        self.busy == fresh.busy && groups(self) == groups(&fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{busy, nodes};

    /// Renews at `now`, returning the nodes renewed, in order.
    fn renewed(ix: &mut BusyIndex, view: &[NodeState], now: Time) -> Vec<usize> {
        let mut seen = Vec::new();
        ix.renew_loads(now, |k| {
            seen.push(k);
            view[k].required_share(now)
        });
        seen
    }

    #[test]
    fn at_one_instant_only_changed_busy_nodes_are_renewed() {
        // Nodes 1, 2 and 4 busy (required shares 0.5, 0.25, 0.1 at 0).
        let mut view = nodes(5);
        busy(&mut view[1], 10, 50.0, 100.0);
        busy(&mut view[2], 11, 25.0, 100.0);
        busy(&mut view[4], 12, 10.0, 100.0);
        let mut ix = BusyIndex::of(&view);
        assert_eq!(renewed(&mut ix, &view, 0.0), [1, 2, 4]);
        assert_eq!(renewed(&mut ix, &view, 0.0), [] as [usize; 0]);
        assert_eq!(ix.load(2, &view[2], 0.0), 0.25);
        // Node 2 gains a part (0.25 + 30/100), idle node 3 becomes busy:
        // at the same instant only these two are added up again.
        busy(&mut view[2], 13, 30.0, 100.0);
        ix.update(2, &view[2]);
        busy(&mut view[3], 14, 20.0, 100.0);
        ix.update(3, &view[3]);
        assert_eq!(renewed(&mut ix, &view, 0.0), [2, 3]);
        assert_eq!(ix.load(2, &view[2], 0.0), 0.25 + 0.3);
        assert_eq!(ix.load(3, &view[3], 0.0), 0.2);
        // Node 1 empties: it leaves the busy nodes and is not renewed.
        view[1].parts.clear();
        ix.update(1, &view[1]);
        assert_eq!(renewed(&mut ix, &view, 0.0), [] as [usize; 0]);
        // A new instant renews every busy node.
        assert_eq!(renewed(&mut ix, &view, 10.0), [2, 3, 4]);
        // A progress report on node 4 at that instant.
        ix.forget_load(4);
        assert_eq!(renewed(&mut ix, &view, 10.0), [4]);
    }

    #[test]
    fn a_node_set_counts_walks_in_order_and_compares_by_members() {
        let mut a = NodeSet::default();
        assert!(a.is_empty() && a.first().is_none());
        for k in [70, 3, 129, 3] {
            a.insert(k);
        }
        assert_eq!(a.len(), 3);
        assert_eq!(a.iter().collect::<Vec<_>>(), [3, 70, 129]);
        assert_eq!(a.first(), Some(3));
        assert!(a.remove(129) && !a.remove(129) && !a.contains(129));
        assert_eq!(a.len(), 2);
        // Grown to 130 bits, against one grown to 71: the same members.
        let mut b = NodeSet::default();
        b.insert(70);
        b.insert(3);
        assert_eq!(a, b);
        b.remove(3);
        assert_ne!(a, b);
    }

    #[test]
    fn more_changes_than_busy_nodes_fall_back_to_the_walk() {
        let mut view = nodes(3);
        busy(&mut view[0], 10, 50.0, 100.0);
        busy(&mut view[2], 11, 25.0, 100.0);
        let mut ix = BusyIndex::of(&view);
        assert_eq!(renewed(&mut ix, &view, 0.0), [0, 2]);
        for _ in 0..3 {
            ix.forget_load(0);
        }
        // The third change overflowed the list: node 2's load is still
        // known at 0, node 0's is not, so the walk renews node 0 alone.
        assert_eq!(renewed(&mut ix, &view, 0.0), [0]);
        assert_eq!(ix.load(0, &view[0], 0.0), 0.5);
    }
}
