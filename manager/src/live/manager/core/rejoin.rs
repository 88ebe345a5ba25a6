//! A node process that lost its manager and registered again reports what
//! it ran and finished meanwhile ([`NodeMsg::Rejoin`]); this answers it.
//!
//! This manager's books never hold a part of a process's earlier link when
//! it comes back: the link was recorded lost with its parts (their jobs
//! lost with the reason), or this manager started after it (a new run on
//! the same address). So every reported part is dropped: the node withdraws
//! the running ones and forgets the finished ones, and nothing is counted
//! twice. A manager rebuilt from its journal decides per part with
//! [`answer`] and its own books.
//!
//! [`NodeMsg::Rejoin`]: common::protocol::NodeMsg::Rejoin

use common::admission::LinkId;
use common::protocol::{ManagerMsg, PartId, Rejoin};

use super::{Action, LiveCore};

/// The answer to `r`: the parts `known` says the manager's books hold
/// (kept) and the reason the others are dropped.
pub(super) fn answer(host: &str, r: &Rejoin, known: impl Fn(PartId) -> bool) -> ManagerMsg {
    let keep: Vec<PartId> = r
        .running
        .iter()
        .map(|p| p.part)
        .chain(r.finished.iter().map(|p| p.part))
        .filter(|&p| known(p))
        .collect();
    let dropped_running = r.running.iter().filter(|p| !keep.contains(&p.part)).count();
    let dropped_finished = r.finished.len() + r.running.len() - keep.len() - dropped_running;
    let reason = format!(
        "{host}: this manager does not hold {dropped_running} running and {dropped_finished} finished \
         of the parts you reported (your earlier link was recorded lost with its parts, or this \
         manager started after it): drop them; they are not counted; you serve as new nodes"
    );
    ManagerMsg::RejoinAnswer { keep, reason }
}

impl LiveCore {
    /// Answers a rejoining process on `link` (see the module header).
    pub(super) fn rejoin(&mut self, link: LinkId, host: &str, r: Rejoin) {
        let msg = answer(host, &r, |_| false);
        let note = format!(
            "{host} rejoined after {:.1} s without a manager ({}; was node(s) {:?}): \
             {} running and {} finished parts it reported are unknown here and were dropped",
            r.away_s,
            r.why,
            r.was,
            r.running.len(),
            r.finished.len()
        );
        tracing::info!("{note}");
        self.warnings.push(note);
        self.actions.push_back(Action::Send { link, msg });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::protocol::{FinishedPart, HeldPart};

    fn rejoin() -> Rejoin {
        let p = |job| PartId { job, index: 0 };
        Rejoin {
            was: vec![0, 1],
            away_s: 3.0,
            why: "link lost".into(),
            running: vec![
                HeldPart {
                    part: p(1),
                    node: 0,
                    work_done: 1.0,
                    share: 0.5,
                    started_at: 0.0,
                },
                HeldPart {
                    part: p(2),
                    node: 1,
                    work_done: 2.0,
                    share: 0.5,
                    started_at: 0.0,
                },
            ],
            finished: vec![FinishedPart {
                part: p(3),
                node: 0,
                at: 5.0,
                cpu_seconds: 0.01,
            }],
        }
    }

    #[test]
    fn unknown_parts_are_all_dropped_with_counts_in_the_reason() {
        let ManagerMsg::RejoinAnswer { keep, reason } = answer("a@h", &rejoin(), |_| false) else {
            panic!("not a rejoin answer")
        };
        assert!(keep.is_empty());
        assert!(reason.contains("2 running and 1 finished"), "{reason}");
    }

    #[test]
    fn known_parts_are_kept_and_the_rest_counted() {
        let ManagerMsg::RejoinAnswer { keep, reason } = answer("a@h", &rejoin(), |p| p.job != 2)
        else {
            panic!("not a rejoin answer")
        };
        assert_eq!(keep.iter().map(|p| p.job).collect::<Vec<_>>(), vec![1, 3]);
        assert!(reason.contains("1 running and 0 finished"), "{reason}");
    }
}
