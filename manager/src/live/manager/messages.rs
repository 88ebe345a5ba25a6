//! The actix messages between the link actors, the client tasks and the
//! manager actor.

use actix::prelude::*;
use anyhow::Result;
use common::protocol::{ClientMsg, ClientReply, ManagerMsg, NodeInfo, NodeMsg};
use tokio::sync::mpsc;

use common::admission::LinkId;

/// A node process connected and registered; answer with its welcome.
#[derive(Message)]
#[rtype(result = "Result<(), String>")]
pub(super) struct Connected {
    pub(super) link: LinkId,
    pub(super) host: String,
    pub(super) pid: u32,
    pub(super) nodes: Vec<NodeInfo>,
    /// The link's writer queue: the manager actor sends its frames there
    /// directly (the welcome first), not through the link actor's thread.
    pub(super) tx: mpsc::UnboundedSender<ManagerMsg>,
}

/// Messages from a node process, in the order received: every frame that
/// arrived in one read (one actor message, one wake-up of the admission
/// thread, for a burst).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct FromNode {
    pub(super) link: LinkId,
    pub(super) msgs: Vec<NodeMsg>,
}

/// A link ended.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct LinkClosed {
    pub(super) link: LinkId,
    pub(super) reason: String,
}

/// Send this to the node.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct ToNode(pub(super) ManagerMsg);

/// Requests from a client connection, in order: every frame that arrived
/// in one read.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct FromClient {
    /// The connection (its link id: unique among connections).
    pub(super) client: u64,
    pub(super) reply: mpsc::UnboundedSender<ClientReply>,
    pub(super) msgs: Vec<ClientMsg>,
}

/// Stop the run now.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Abort(pub String);
