//! A node process that lost its manager and registered again reports what
//! it ran and finished meanwhile ([`NodeMsg::Rejoin`]); this answers it.
//!
//! A manager's books hold no part of a process's earlier link when it
//! comes back, unless the manager took the run over from its journal
//! (`libratory resume`): the link was recorded lost with its parts (their
//! jobs lost with the reason), or this manager started after it (a new
//! run on the same address). Then every reported part is dropped: the node
//! withdraws the running ones and forgets the finished ones, and nothing
//! is counted twice. A resumed manager keeps the parts of the jobs it
//! carries (`core/resumed.rs`), answering with [`answer`] and its books.
//!
//! [`NodeMsg::Rejoin`]: common::protocol::NodeMsg::Rejoin

use common::protocol::{ManagerMsg, PartId, Rejoin};

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
            down: Vec::new(),
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
