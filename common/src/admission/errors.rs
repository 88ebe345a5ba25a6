//! Errors from peers doing something impossible.

use crate::job::JobId;

use super::LinkId;

/// Errors that come from peers doing something impossible; the caller logs
/// them (naming the link) and carries on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoreError {
    /// A message about a part the core never dispatched to that link.
    #[error("node process {host} (link {link}): unknown part {job}/{index}")]
    UnknownPart {
        /// The node process's label.
        host: String,
        /// The link.
        link: LinkId,
        /// The job.
        job: JobId,
        /// The part index.
        index: u32,
    },
    /// A second completion of a part already completed: ignored.
    #[error(
        "node process {host} (link {link}): duplicate completion of part {job}/{index} ignored"
    )]
    DuplicateCompletion {
        /// The node process's label.
        host: String,
        /// The link.
        link: LinkId,
        /// The job.
        job: JobId,
        /// The part index.
        index: u32,
    },
    /// A node process offered a node with impossible numbers; none of its
    /// nodes is registered.
    #[error("node process {host}: node {local}: {field} must be {want}, got {value}")]
    BadNode {
        /// The node process's label.
        host: String,
        /// The node's index within its process.
        local: u32,
        /// The field.
        field: &'static str,
        /// What it must be.
        want: &'static str,
        /// What it was.
        value: f64,
    },
    /// A node process reported a value that cannot be (NaN, negative
    /// work, a share outside [0, 1]); the message is ignored.
    #[error("node process {host} (link {link}): {what} {field} must be {want}, got {value}")]
    BadReport {
        /// The node process's label.
        host: String,
        /// The link.
        link: LinkId,
        /// What the value belongs to (`part 3/0`, `report`).
        what: String,
        /// The field.
        field: &'static str,
        /// What it must be.
        want: &'static str,
        /// What it was.
        value: f64,
    },
    /// A job submitted twice.
    #[error("job {0} was already submitted")]
    Duplicate(JobId),
    /// A submitted job failed validation.
    #[error("{0}")]
    Invalid(String),
}
