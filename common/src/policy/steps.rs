//! The small steps policies are built from (in the spirit of a scheduler
//! framework's Filter / Score / Permit plug-ins): each paper's algorithm is a
//! particular chain of these.

use crate::job::JobSpec;
use crate::node_model::NodeState;
use crate::time::{Time, KEY_TIE_EPS};

/// Share sums may exceed 1 by this much and still fit: a share sum is a
/// sum of ratios, and an admission that is exactly full must not be refused
/// for the last bit of rounding.
pub const SHARE_SUM_EPS: f64 = 1e-9;

/// Filter: indices of the nodes with the memory and disk one part needs.
pub fn with_resources(nodes: &[NodeState], job: &JobSpec, out: &mut Vec<usize>) {
    out.clear();
    out.extend(
        nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.has_resources(job))
            .map(|(k, _)| k),
    );
}

/// Filter (Libra's share test): the node's load after accepting one part
/// of `job` (sum of on-track required shares plus RE / speed / D), if it
/// is at most 1.
pub fn load_if_fits(node: &NodeState, job: &JobSpec, now: Time) -> Option<f64> {
    let load = node.required_share(now) + node.est_cpu(job) / job.qos.deadline;
    (load <= 1.0 + SHARE_SUM_EPS).then_some(load)
}

/// Which end of a key is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Higher keys first.
    Higher,
    /// Lower keys first.
    Lower,
}

/// Score: keeps the `k` best `(node, key)` candidates in rank order. Keys
/// within [`KEY_TIE_EPS`] of the first key of their group are a tie, broken
/// by the lower node index, so float rounding cannot flip decisions between
/// two correct implementations. Runs in O(n + m log m), m the number of
/// candidates near the k-th key, so decisions grow linearly with nodes.
pub fn top_k(cands: &mut Vec<(usize, f64)>, k: usize, better: Better) {
    if k == 0 {
        cands.clear();
        return;
    }
    let sign = match better {
        Better::Higher => 1.0,
        Better::Lower => -1.0,
    };
    // Internally: descending by s = sign * key, then by index.
    let exact = |a: &(usize, f64), b: &(usize, f64)| {
        (sign * b.1).total_cmp(&(sign * a.1)).then(a.0.cmp(&b.0))
    };
    if cands.len() > k {
        cands.select_nth_unstable_by(k - 1, exact);
        let kth = sign * cands[k - 1].1;
        // Anything within the tie tolerance of the k-th may still belong to
        // its tie group; everything further down cannot be ranked above it.
        cands.retain(|c| sign * c.1 >= kth - KEY_TIE_EPS);
    }
    cands.sort_by(exact);
    // Re-rank tie groups by node index.
    let mut start = 0;
    while start < cands.len() {
        let head = sign * cands[start].1;
        let mut end = start + 1;
        while end < cands.len() && head - sign * cands[end].1 <= KEY_TIE_EPS {
            end += 1;
        }
        cands[start..end].sort_by_key(|c| c.0);
        start = end;
    }
    cands.truncate(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_breaks_near_ties_by_index() {
        // Keys 0.5 and 0.5 + 1e-12 are a tie: the lower index (3) wins even
        // though its key is the smaller.
        let mut c = vec![(5, 0.5 + 1e-12), (3, 0.5), (1, 0.2), (0, 0.9)];
        top_k(&mut c, 2, Better::Higher);
        assert_eq!(c, vec![(0, 0.9), (3, 0.5)]);
        let mut c = vec![(5, 0.5 + 1e-12), (3, 0.5), (1, 0.2), (0, 0.9)];
        top_k(&mut c, 3, Better::Lower);
        assert_eq!(c.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3, 5]);
    }

    #[test]
    fn top_k_agrees_with_a_full_sort() {
        // Against a plain stable sort on (key desc, index) with keys that
        // are far apart, for every k.
        let keys = [0.3, 0.7, 0.1, 0.9, 0.5, 0.7, 0.2, 0.8];
        for k in 0..=keys.len() {
            let mut c: Vec<(usize, f64)> = keys.iter().copied().enumerate().collect();
            top_k(&mut c, k, Better::Higher);
            let mut want: Vec<(usize, f64)> = keys.iter().copied().enumerate().collect();
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            want.truncate(k);
            assert_eq!(c, want, "k = {k}");
        }
    }
}
