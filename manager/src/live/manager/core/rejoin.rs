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

use common::admission::LinkId;
use common::protocol::{FinishedPart, HeldPart, ManagerMsg, PartId, Rejoin};

/// The most parts the manager holds for one link's rejoin in pieces
/// (160 MB of them): far beyond what a process holds (~190,000 at the
/// most under `live_latency`'s flood), so only a peer that misbehaves
/// reaches it. Parts past it are not held: the answer does not name
/// them, so the node drops them and nothing is counted twice.
const MAX_REJOIN_PARTS: usize = 4_000_000;

/// A link's rejoin pieces so far, in order.
#[derive(Default)]
pub(super) struct RejoinPieces {
    pub(super) running: Vec<HeldPart>,
    pub(super) finished: Vec<FinishedPart>,
    /// Parts not held (past [`MAX_REJOIN_PARTS`]).
    over: usize,
}

impl super::LiveCore {
    /// A leading piece of `link`'s rejoin: held until its `Rejoin`.
    pub(super) fn rejoin_piece(
        &mut self,
        link: LinkId,
        host: &str,
        running: Vec<HeldPart>,
        finished: Vec<FinishedPart>,
    ) {
        let p = self.rejoin_pieces.entry(link).or_default();
        let held = p.running.len() + p.finished.len();
        if held + running.len() + finished.len() > MAX_REJOIN_PARTS {
            if p.over == 0 {
                self.warnings.push(format!(
                    "{host} (link {link}) rejoins with more than {MAX_REJOIN_PARTS} parts: \
                     the ones past that are dropped (the node drops what the answer does not keep)"
                ));
            }
            p.over += running.len() + finished.len();
            return;
        }
        p.running.extend(running);
        p.finished.extend(finished);
    }
}

/// The answer to `r`, in the frames that carry it: the parts `known`
/// says the manager's books hold (kept) and the reason the others are
/// dropped.
pub(super) fn answer(host: &str, r: &Rejoin, known: impl Fn(PartId) -> bool) -> Vec<ManagerMsg> {
    let mut keep: Vec<PartId> = r
        .running
        .iter()
        .map(|p| p.part)
        .filter(|&p| known(p))
        .collect();
    let dropped_running = r.running.len() - keep.len();
    keep.extend(r.finished.iter().map(|p| p.part).filter(|&p| known(p)));
    let dropped_finished = r.finished.len() + r.running.len() - keep.len() - dropped_running;
    let reason = format!(
        "{host}: this manager does not hold {dropped_running} running and {dropped_finished} finished \
         of the parts you reported (your earlier link was recorded lost with its parts, or this \
         manager started after it): drop them; they are not counted; you serve as new nodes"
    );
    ManagerMsg::rejoin_answer(keep, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let [ManagerMsg::RejoinAnswer { keep, reason }] = &answer("a@h", &rejoin(), |_| false)[..]
        else {
            panic!("not a rejoin answer")
        };
        assert!(keep.is_empty());
        assert!(reason.contains("2 running and 1 finished"), "{reason}");
    }

    #[test]
    fn known_parts_are_kept_and_the_rest_counted() {
        let [ManagerMsg::RejoinAnswer { keep, reason }] =
            &answer("a@h", &rejoin(), |p| p.job != 2)[..]
        else {
            panic!("not a rejoin answer")
        };
        assert_eq!(keep.iter().map(|p| p.job).collect::<Vec<_>>(), vec![1, 3]);
        assert!(reason.contains("1 running and 0 finished"), "{reason}");
    }
}
