//! One actor per node connection: frames in as a stream, frames out
//! through a writer task (dispatches queued for the link go out as one
//! frame), and the silence watch that declares a link lost.

use std::time::{Duration, Instant};

use actix::prelude::*;
use anyhow::Result;
use common::protocol::{ManagerMsg, NodeMsg};
use net::{self, FrameReceiver, FrameSender, NetError};
use tokio::sync::mpsc;

use common::admission::LinkId;

use super::actor::*;
use super::messages::*;

/// One node connection: reads frames (as a stream), writes frames (through
/// a writer task), notices silence.
pub(super) struct LinkActor {
    pub(super) link: LinkId,
    pub(super) manager: Addr<ManagerActor>,
    pub(super) tx: mpsc::UnboundedSender<ManagerMsg>,
    pub(super) last_heard: Instant,
    pub(super) timeout: Duration,
    pub(super) closed: bool,
}

impl Actor for LinkActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let every = (self.timeout / 4).max(Duration::from_millis(10));
        ctx.run_interval(every, |a, ctx| {
            if a.last_heard.elapsed() > a.timeout {
                let reason = format!("silent for more than {:?} (heartbeat timeout)", a.timeout);
                // Tell the process, in case it is alive behind a partition
                // or wakes from a hang: it must not go on as if still
                // registered (its parts were recorded lost), so it leaves
                // and can register again as new. The writer sends this
                // last frame after the actor stops.
                let _ = a.tx.send(ManagerMsg::Reject {
                    reason: format!("this process was given up: {reason}"),
                });
                a.close(reason);
                ctx.stop();
            }
        });
    }
}

impl LinkActor {
    pub(super) fn close(&mut self, reason: String) {
        if !self.closed {
            self.closed = true;
            self.manager.do_send(LinkClosed {
                link: self.link,
                reason,
            });
        }
    }
}

impl StreamHandler<Result<Vec<NodeMsg>, NetError>> for LinkActor {
    fn handle(&mut self, item: Result<Vec<NodeMsg>, NetError>, ctx: &mut Self::Context) {
        match item {
            Ok(msgs) => {
                self.last_heard = Instant::now();
                self.manager.do_send(FromNode {
                    link: self.link,
                    msgs,
                });
            }
            Err(e) => {
                self.close(e.to_string());
                ctx.stop();
            }
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        self.close("the node closed the connection".into());
        ctx.stop();
    }
}

/// Closes the link with a reason of the manager's (a revoked identity):
/// the manager records the node process lost with it.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct CloseLink(pub(super) String);

impl Handler<CloseLink> for LinkActor {
    type Result = ();
    fn handle(&mut self, m: CloseLink, ctx: &mut Self::Context) {
        self.close(m.0);
        ctx.stop();
    }
}

impl Handler<ToNode> for LinkActor {
    type Result = ();
    fn handle(&mut self, m: ToNode, _: &mut Self::Context) {
        let _ = self.tx.send(m.0);
    }
}

/// The most node messages handed to the admission thread as one message.
const NODE_BATCH: usize = 1024;

/// A node link's frames, as bursts: every frame that came in one read.
pub(super) fn frame_stream(
    rx: FrameReceiver,
) -> impl futures_util::Stream<Item = Result<Vec<NodeMsg>, NetError>> {
    futures_util::stream::unfold(Some(rx), |state| async move {
        let mut rx = state?;
        match rx.recv_batch::<NodeMsg>("node message", NODE_BATCH).await {
            Ok(m) if m.is_empty() => None,
            Ok(m) => Some((Ok(m), Some(rx))),
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// At most this many dispatches in one `Dispatches` frame (~60 bytes
/// each: far below the frame limit).
const DISPATCHES_PER_FRAME: usize = 4096;

/// Writes one link's frames in order, everything queued when it runs in
/// one write; the dispatches among them go out as `Dispatches` frames (a
/// burst of admissions to one node process costs one frame, not one per
/// part). A shutdown or reject is the last frame.
pub(super) async fn writer(mut tx: FrameSender, mut rx: mpsc::UnboundedReceiver<ManagerMsg>) {
    let mut batch: Vec<ManagerMsg> = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut last = false;
        let mut next = Some(first);
        while let Some(m) = next.take() {
            last = matches!(m, ManagerMsg::Shutdown { .. } | ManagerMsg::Reject { .. });
            match (m, batch.last_mut()) {
                (ManagerMsg::Dispatch(d), Some(ManagerMsg::Dispatches(ds)))
                    if ds.len() < DISPATCHES_PER_FRAME =>
                {
                    ds.push(d)
                }
                (ManagerMsg::Dispatch(d), _) => batch.push(ManagerMsg::Dispatches(vec![d])),
                (m, _) => batch.push(m),
            }
            if last || batch.len() >= 256 {
                break;
            }
            next = rx.try_recv().ok();
        }
        if tx.send_all(&batch).await.is_err() {
            break;
        }
        batch.clear();
        if last {
            tx.finish();
            break;
        }
    }
}
