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

use std::collections::BTreeSet;

use crate::node_model::NodeState;
use crate::time::Time;

/// The busy nodes of a view and its idle nodes by speed, both by index.
#[derive(Debug, Clone, Default)]
pub struct BusyIndex {
    /// Nodes holding at least one part, ascending.
    busy: BTreeSet<usize>,
    /// Idle nodes, grouped by speed (groups in the order their speed was
    /// first seen), each group ascending.
    idle: Vec<(f64, BTreeSet<usize>)>,
    /// Per node: the instant its load was last computed and that load
    /// (NaN instant: not known). Not part of the index's identity.
    loads: Vec<(Time, f64)>,
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
        if !self.busy.remove(&k) {
            self.idle_group(node.spec.speed).remove(&k);
        }
    }

    /// Node `k` changed (gained or lost a part, possibly its last): files
    /// it by what it holds now and forgets its load.
    pub fn update(&mut self, k: usize, node: &NodeState) {
        self.forget_load(k);
        if node.parts.is_empty() {
            if self.busy.remove(&k) {
                self.idle_group(node.spec.speed).insert(k);
            }
        } else if self.busy.insert(k) {
            self.idle_group(node.spec.speed).remove(&k);
        }
    }

    /// Node `k`'s parts changed in place (a progress report): its load
    /// must be computed again.
    pub fn forget_load(&mut self, k: usize) {
        if let Some(l) = self.loads.get_mut(k) {
            l.0 = Time::NAN;
        }
    }

    /// Calls `renew` for every busy node whose load is not known at `now`;
    /// `renew` brings the node up to `now` and returns its
    /// [`NodeState::required_share`] there, which is remembered.
    pub fn renew_loads(&mut self, now: Time, mut renew: impl FnMut(usize) -> f64) {
        for &k in &self.busy {
            if k >= self.loads.len() {
                self.loads.resize(k + 1, (Time::NAN, 0.0));
            }
            let l = &mut self.loads[k];
            // NaN never equals: an unknown load is always renewed.
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

    fn idle_group(&mut self, speed: f64) -> &mut BTreeSet<usize> {
        // Compared bit for bit, as the filter compares speeds (`!=`); a
        // handful of distinct speeds at most, so a scan is cheapest.
        let at = match self
            .idle
            .iter()
            .position(|(s, _)| s.to_bits() == speed.to_bits())
        {
            Some(i) => i,
            None => {
                self.idle.push((speed, BTreeSet::new()));
                self.idle.len() - 1
            }
        };
        &mut self.idle[at].1
    }

    /// Busy nodes, ascending.
    pub fn busy(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.busy.iter().copied()
    }

    /// Idle nodes by speed: each speed with its idle nodes, ascending
    /// (groups may be empty).
    pub fn idle_by_speed(&self) -> impl Iterator<Item = (f64, &BTreeSet<usize>)> + '_ {
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
                .map(|(sp, s)| (sp.to_bits(), s.iter().copied().collect()))
                .collect();
            g.sort();
            g
        };
        self.busy == fresh.busy && groups(self) == groups(&fresh)
    }
}
