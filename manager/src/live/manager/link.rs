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
                a.close(format!(
                    "silent for more than {:?} (heartbeat timeout)",
                    a.timeout
                ));
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

/// Writes one link's frames in order. The dispatches queued when it runs
/// go out as one `Dispatches` frame: a burst of admissions to one node
/// process costs one frame, not one per part.
pub(super) async fn writer(mut tx: FrameSender, mut rx: mpsc::UnboundedReceiver<ManagerMsg>) {
    let mut next = None;
    loop {
        let m = match next.take() {
            Some(m) => m,
            None => match rx.recv().await {
                Some(m) => m,
                None => break,
            },
        };
        let m = match m {
            ManagerMsg::Dispatch(d) => {
                let mut batch = vec![d];
                loop {
                    match rx.try_recv() {
                        Ok(ManagerMsg::Dispatch(d)) => batch.push(d),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                ManagerMsg::Dispatches(batch)
            }
            m => m,
        };
        let last = matches!(m, ManagerMsg::Shutdown { .. } | ManagerMsg::Reject { .. });
        if tx.send(&m).await.is_err() {
            break;
        }
        if last {
            tx.finish();
            break;
        }
    }
}
