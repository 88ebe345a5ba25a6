//! Why a node process's link ends other than by the manager's shutdown
//! (returned by [`super::machine::LinkMachine`] in its `Exit` action).

use std::time::Duration;

use thiserror::Error;

/// Why the link ended other than by the manager's shutdown.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LinkError {
    /// Stopped by a signal (SIGTERM, SIGINT): the manager was told.
    #[error(
        "stopped by {signal}: {running} running part(s) stopped; the manager was told (Goodbye) and records them lost at once"
    )]
    Stopped {
        /// The signal's name.
        signal: &'static str,
        /// Parts that were running.
        running: usize,
    },
    /// No manager took the process back within the grace period.
    #[error(
        "no manager at {manager} for {grace:?} (the grace period, --manager-grace-s) since the link \
         was lost ({why}); {attempts} reconnection attempt(s) failed, the last: {last}; \
         stopping {running} running part(s)"
    )]
    GraceOver {
        /// The manager's address.
        manager: String,
        /// The grace period.
        grace: Duration,
        /// Why the link was lost.
        why: String,
        /// Connection attempts made.
        attempts: u32,
        /// The last attempt's failure.
        last: String,
        /// Parts still on the nodes.
        running: usize,
    },
    /// A later manager runs its trace clock at another speed: the parts'
    /// progress cannot be carried over.
    #[error(
        "the manager at {manager} now runs at time scale {theirs}, this process at {ours}: \
         a node process keeps the time scale it was first given"
    )]
    TimeScale {
        /// The manager's address.
        manager: String,
        /// The new welcome's.
        theirs: f64,
        /// The first welcome's.
        ours: f64,
    },
    /// The manager closed the link refusing this process (a revoked
    /// identity): not a lost manager, so not retried.
    #[error("the manager at {manager} closed the link refusing this process: {reason}")]
    Refused {
        /// The manager's address.
        manager: String,
        /// Its close reason.
        reason: String,
    },
    /// The manager still holds an earlier registration under this
    /// process's label live (a process before this one that died, not yet
    /// given up): worth trying again.
    #[error(
        "the manager at {manager} still holds an earlier registration under this label: {reason}"
    )]
    StillRegistered {
        /// The manager's address.
        manager: String,
        /// Its close reason.
        reason: String,
    },
    /// A welcome on a link that already had one.
    #[error("the manager at {0} sent a second welcome on one link")]
    SecondWelcome(String),
}
