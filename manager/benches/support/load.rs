//! The live_latency bench's load: the echo baseline, the paced steps
//! (echoes and submissions taking turns), the counted and sustained
//! floods, and the status queries that wait for the manager to drain.
//! `live_latency.rs` sequences the steps and prints the verdicts.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::job::JobSpec;
use common::policy::Decision;
use common::protocol::{ClientMsg, ClientReply, PageQuery, StatusQuery, StatusSummary};
use hdrhistogram::Histogram;

use crate::procs::cpu_ns;
use crate::support::client;
use crate::{FLOOD_BATCH, FLOOD_JOB_S, GAP_S, SLOT_S, STEP_S, WINDOWS};

pub(crate) fn job(k: u64, estimate: f64, deadline: f64) -> JobSpec {
    JobSpec::new(k, 0.0, estimate, 1, deadline, f64::INFINITY)
}

/// The baseline: QUIC echo round trips with the manager process itself,
/// `n` of them, one at a time: the same client, connection, TLS, framing
/// and processes as a submission, answered by the manager's connection
/// task without going through its actors or the policy.
pub(crate) async fn echo_baseline(addr: SocketAddr, certs: &Path, n: usize) -> Histogram<u64> {
    let (_ep, _c, mut s) = client(addr, certs).await;
    let mut h = Histogram::<u64>::new(3).unwrap();
    for k in 0..n as u64 {
        let t = Instant::now();
        s.send(&ClientMsg::Echo { token: k }).await.unwrap();
        let _: ClientReply = s.recv("reply").await.unwrap().unwrap();
        let _ = h.record(t.elapsed().as_micros() as u64);
    }
    h
}

/// Submissions one at a time, each sent when the previous one's decision
/// came back: the decision's round trip without any queueing, to set
/// against the echo's.
pub(crate) async fn sequential_submits(
    addr: SocketAddr,
    certs: &Path,
    n: usize,
    processors: u32,
) -> Histogram<u64> {
    let (_ep, _c, mut s) = client(addr, certs).await;
    let mut h = Histogram::<u64>::new(3).unwrap();
    for k in 0..n as u64 {
        let t = Instant::now();
        let mut j = job(k, 0.001, 100.0);
        j.resources.processors = processors;
        s.send(&ClientMsg::Submit {
            token: k,
            job: (&j).into(),
            actual: Some(0.001),
        })
        .await
        .unwrap();
        let _: ClientReply = s.recv("reply").await.unwrap().unwrap();
        let _ = h.record(t.elapsed().as_micros() as u64);
    }
    h
}

/// What a load step sends.
#[derive(Clone, Copy)]
pub(crate) enum Send {
    /// Jobs of this estimate and deadline (trace seconds).
    Submit { estimate: f64, deadline: f64 },
    /// Echoes: the network's own round trip at the step's rate, through
    /// the same client, connection, pacing and reader as the submissions.
    Echo,
    /// Jobs of more processors than the cluster has: decided (rejected)
    /// and answered, nothing reaches a node.
    Oversized { processors: u32 },
}

impl Send {
    /// Whether its submissions are meant to be rejected (so a step of
    /// them accepting nothing is no failure to report).
    fn rejected_by_design(&self) -> bool {
        matches!(self, Send::Oversized { .. })
    }
}

/// A paced step: echoes and `what` at `rate`, [`STEP_S`] of each, taking
/// turns in slots of [`SLOT_S`] on two connections held open for the step.
pub(crate) struct Paired {
    /// Echo round trips (us).
    pub(crate) echo: Histogram<u64>,
    /// Request-to-answer latency of `what` (us).
    pub(crate) sub: Histogram<u64>,
    /// The same, by window ([`WINDOWS`] of them, in time order).
    pub(crate) echo_w: Vec<Histogram<u64>>,
    pub(crate) sub_w: Vec<Histogram<u64>>,
    /// Answers to `what` received.
    pub(crate) got: u64,
    /// Seconds the `what` slots took (gaps not counted).
    pub(crate) secs: f64,
    /// The manager's CPU seconds over the `what` slots and the gaps after
    /// them (their aftermath): the load of `rate` alone, echoes apart.
    pub(crate) cpu: f64,
}

/// Which window a request of one kind falls in, by its token (the kind's
/// own count): requests per slot are fixed, so the token names its slot.
pub(crate) fn window_of(token: u64, per_slot: u64, slots: u64) -> usize {
    ((token / per_slot) * WINDOWS as u64 / slots).min(WINDOWS as u64 - 1) as usize
}

/// Runs a paced step (see [`Paired`]): echo slots first, then `what`,
/// in turn, each slot's requests due at `rate` from its start, one per
/// write.
pub(crate) async fn paired(
    addr: SocketAddr,
    certs: &Path,
    mpid: u32,
    rate: f64,
    what: Send,
) -> Paired {
    let slots = (STEP_S / SLOT_S).round() as u64;
    let per_slot = ((rate * SLOT_S) as u64).max(1);
    let total = slots * per_slot;
    let (_ee, _ec, es) = client(addr, certs).await;
    let (_se, _sc, ss) = client(addr, certs).await;
    let (mut etx, erx) = es.split();
    let (mut stx, srx) = ss.split();
    let esent = std::sync::Arc::new(std::sync::Mutex::new(vec![None; total as usize]));
    let ssent = std::sync::Arc::new(std::sync::Mutex::new(vec![None; total as usize]));
    let sent_at = |sent: &std::sync::Arc<std::sync::Mutex<Vec<Option<Instant>>>>| {
        let sent = sent.clone();
        move |token: u64| sent.lock().unwrap().get(token as usize).copied().flatten()
    };
    let window = move |token| window_of(token, per_slot, slots);
    let wanted = what.rejected_by_design();
    let er = answers(erx, false, total, sent_at(&esent), window, WINDOWS);
    let sr = answers(srx, wanted, total, sent_at(&ssent), window, WINDOWS);
    let (mut secs, mut cpu) = (0.0f64, 0.0f64);
    for slot in 0..2 * slots {
        let echo = slot % 2 == 0;
        let first = slot / 2 * per_slot;
        let cpu0 = cpu_ns(mpid);
        let t0 = Instant::now();
        for j in 0..per_slot {
            let due = t0 + Duration::from_secs_f64(j as f64 / rate);
            let now = Instant::now();
            if due > now {
                tokio::time::sleep(due - now).await;
            }
            let k = first + j;
            let msg = if echo {
                ClientMsg::Echo { token: k }
            } else {
                request(k, what)
            };
            let (sent, tx) = if echo {
                (&esent, &mut etx)
            } else {
                (&ssent, &mut stx)
            };
            sent.lock().unwrap()[k as usize] = Some(Instant::now());
            tx.send_all(std::slice::from_ref(&msg)).await.unwrap();
        }
        // The slot's own length: its last request went out one interval
        // before the next would have.
        let slot_s = t0.elapsed().as_secs_f64() + 1.0 / rate;
        tokio::time::sleep(Duration::from_secs_f64(GAP_S)).await;
        if !echo {
            secs += slot_s;
            cpu += (cpu_ns(mpid) - cpu0) as f64 / 1e9;
        }
    }
    let (echo_w, _, _) = er.await.unwrap();
    let (sub_w, got, _) = sr.await.unwrap();
    let merge = |hs: &[Histogram<u64>]| {
        let mut m = Histogram::<u64>::new(3).unwrap();
        for h in hs {
            m.add(h).unwrap();
        }
        m
    };
    Paired {
        echo: merge(&echo_w),
        sub: merge(&sub_w),
        echo_w,
        sub_w,
        got,
        secs,
        cpu,
    }
}

/// Request `k` of a step.
pub(crate) fn request(k: u64, what: Send) -> ClientMsg {
    match what {
        Send::Submit { estimate, deadline } => ClientMsg::Submit {
            token: k,
            job: (&job(k, estimate, deadline)).into(),
            actual: Some(estimate),
        },
        Send::Echo => ClientMsg::Echo { token: k },
        Send::Oversized { processors } => {
            let mut j = job(k, 1.0, 100.0);
            j.resources.processors = processors;
            ClientMsg::Submit {
                token: k,
                job: (&j).into(),
                actual: Some(1.0),
            }
        }
    }
}

/// Sends `total` at `rate` per second (0 rate: as fast as possible);
/// returns latency (us), answers received, and elapsed seconds.
pub(crate) async fn load(
    addr: SocketAddr,
    certs: &Path,
    rate: f64,
    total: u64,
    what: Send,
) -> (Histogram<u64>, u64, f64) {
    let (h, got, secs, _) = load_counted(addr, certs, rate, total, what).await;
    (h, got, secs)
}

/// Reads answers until `total` came (or 20 s pass without one): each
/// one's latency from `since(token)` (us) in the histogram of its
/// `window(token)` (of `windows`), the answers, and the accepted decisions
/// among them.
pub(crate) fn answers(
    mut rx: net::FrameReceiver,
    rejects_wanted: bool,
    total: u64,
    since: impl Fn(u64) -> Option<Instant> + std::marker::Send + 'static,
    window: impl Fn(u64) -> usize + std::marker::Send + 'static,
    windows: usize,
) -> tokio::task::JoinHandle<(Vec<Histogram<u64>>, u64, u64)> {
    tokio::spawn(async move {
        let mut hs = vec![Histogram::<u64>::new(3).unwrap(); windows];
        let (mut got, mut accepted) = (0u64, 0u64);
        // The first rejection, told when nothing was accepted: a step
        // that accepts nothing says why.
        let mut first_reject = None;
        while got < total {
            let token = match tokio::time::timeout(
                Duration::from_secs(20),
                rx.recv::<ClientReply>("reply"),
            )
            .await
            {
                Ok(Ok(Some(ClientReply::Decided {
                    token, decision, ..
                }))) => {
                    match decision {
                        Decision::Accept(_) => accepted += 1,
                        Decision::Reject(r) => {
                            first_reject
                                .get_or_insert_with(|| format!("{:?}: {}", r.reason, r.detail));
                        }
                    }
                    Some(token)
                }
                Ok(Ok(Some(ClientReply::Queued { token, .. })))
                | Ok(Ok(Some(ClientReply::Echo { token }))) => Some(token),
                Ok(Ok(Some(_))) => None,
                _ => break,
            };
            got += 1;
            if let Some(token) = token {
                if let Some(t) = since(token) {
                    let _ = hs[window(token)].record(t.elapsed().as_micros() as u64);
                }
            }
        }
        // (Not for a step of jobs sent to be rejected.)
        if accepted == 0 && !rejects_wanted {
            if let Some(r) = first_reject {
                println!("  none of {got} answers accepted; the first rejection: {r}");
            }
        }
        (hs, got, accepted)
    })
}

/// [`load`] of `total` requests, also counting the accepted decisions
/// among the answers.
pub(crate) async fn load_counted(
    addr: SocketAddr,
    certs: &Path,
    rate: f64,
    total: u64,
    what: Send,
) -> (Histogram<u64>, u64, f64, u64) {
    let (_ep, _c, s) = client(addr, certs).await;
    let (mut tx, rx) = s.split();
    let sent: std::sync::Arc<std::sync::Mutex<Vec<Option<Instant>>>> =
        std::sync::Arc::new(std::sync::Mutex::new(vec![None; total as usize]));
    let sent2 = sent.clone();
    let reader = answers(
        rx,
        what.rejected_by_design(),
        total,
        move |token| sent2.lock().unwrap().get(token as usize).copied().flatten(),
        |_| 0,
        1,
    );
    let t0 = Instant::now();
    // As fast as possible, requests go out 64 to a write, as a client
    // submitting in bulk would send them: one write per request cost this
    // client ~7-13 us per job, on the cores the manager and nodes use.
    let mut batch: Vec<ClientMsg> = Vec::with_capacity(FLOOD_BATCH);
    for k in 0..total {
        if rate > 0.0 {
            let due = t0 + Duration::from_secs_f64(k as f64 / rate);
            let now = Instant::now();
            if due > now {
                tokio::time::sleep(due - now).await;
            }
        }
        batch.push(request(k, what));
        if rate > 0.0 || batch.len() == FLOOD_BATCH || k + 1 == total {
            let now = Instant::now();
            {
                let mut sent = sent.lock().unwrap();
                for j in k + 1 - batch.len() as u64..=k {
                    sent[j as usize] = Some(now);
                }
            }
            tx.send_all(&batch).await.unwrap();
            batch.clear();
        }
    }
    let (mut hs, got, accepted) = reader.await.unwrap();
    (hs.remove(0), got, t0.elapsed().as_secs_f64(), accepted)
}

/// Submissions of `FLOOD_JOB_S` jobs offered at `rate` for `secs`, as a
/// busy client would send them: every request due by now goes out in
/// writes of up to [`FLOOD_BATCH`], the client waking each time the next
/// one is due (every ms or so: tokio's timer). Latency counts from each
/// request's due time, not from when it went out, so a client or manager
/// that falls behind shows it. Returns latency (us), answers, seconds from
/// the first due time to the last answer, and accepted answers.
pub(crate) async fn load_sustained(
    addr: SocketAddr,
    certs: &Path,
    rate: f64,
    secs: f64,
) -> (Histogram<u64>, u64, f64, u64) {
    let total = (rate * secs) as u64;
    let (_ep, _c, s) = client(addr, certs).await;
    let (mut tx, rx) = s.split();
    let t0 = Instant::now() + Duration::from_millis(5);
    let due = move |k: u64| t0 + Duration::from_secs_f64(k as f64 / rate);
    let reader = answers(rx, false, total, move |token| Some(due(token)), |_| 0, 1);
    // A manager that falls behind for longer than the connection's idle
    // timeout loses the connection: say so rather than unwrap.
    let lost = |k: u64, e: net::NetError| -> ! {
        panic!(
            "the sustained step at {rate:.0}/s: the connection to the manager was lost after {k} of {total} submissions ({e}): the manager stopped answering"
        )
    };
    let mut batch: Vec<ClientMsg> = Vec::with_capacity(FLOOD_BATCH);
    let mut k = 0u64;
    while k < total {
        let next = due(k);
        let now = Instant::now();
        if next > now {
            tokio::time::sleep(next - now).await;
        }
        let now = Instant::now();
        while k < total && due(k) <= now {
            batch.push(request(
                k,
                Send::Submit {
                    estimate: FLOOD_JOB_S,
                    deadline: 100.0,
                },
            ));
            k += 1;
            if batch.len() == FLOOD_BATCH {
                tx.send_all(&batch).await.unwrap_or_else(|e| lost(k, e));
                batch.clear();
            }
        }
        if !batch.is_empty() {
            tx.send_all(&batch).await.unwrap_or_else(|e| lost(k, e));
            batch.clear();
        }
    }
    let (mut hs, got, accepted) = reader.await.unwrap();
    (hs.remove(0), got, t0.elapsed().as_secs_f64(), accepted)
}

/// The manager's status: its summary, and the first `busy` nodes holding
/// parts (none for 0). A page the manager refuses (nodes holding so many
/// parts that it would not fit a frame: best fit piles tens of thousands
/// on one node) gives the summary alone, with no nodes.
pub(crate) async fn status(
    addr: SocketAddr,
    certs: &Path,
    busy: usize,
) -> (StatusSummary, Vec<common::protocol::NodeStatus>) {
    let (_ep, _c, mut s) = client(addr, certs).await;
    for per in [busy, 0] {
        let query = StatusQuery {
            nodes: (per > 0).then_some(PageQuery {
                page: 0,
                per,
                busy: true,
            }),
        };
        s.send(&ClientMsg::Status { token: 0, query })
            .await
            .unwrap();
        match s.recv("reply").await.unwrap() {
            Some(ClientReply::Status { summary, nodes, .. }) => return (*summary, nodes),
            Some(ClientReply::Error { message, .. }) if per > 0 && message.contains("frame") => {
                continue
            }
            other => panic!("expected the manager's status, got {other:?}"),
        }
    }
    unreachable!("the summary alone is always answered")
}

/// Parts in the manager's view now (dispatched, not yet reported done),
/// and the first few nodes holding them.
pub(crate) async fn parts_in_flight(
    addr: SocketAddr,
    certs: &Path,
) -> (usize, Vec<common::protocol::NodeStatus>) {
    let (summary, nodes) = status(addr, certs, 8).await;
    (summary.nodes.parts, nodes)
}

/// Waits until the manager's view holds no part (at most `limit`), printing
/// how the parts in flight drained: a flood's aftermath, and a clean start
/// for the next step.
pub(crate) async fn drain(addr: SocketAddr, certs: &Path, what: &str, limit: Duration) {
    let t0 = Instant::now();
    let mut seen = Vec::new();
    // The same count for a second: say which nodes hold the parts (once),
    // so that a stalled node names itself.
    let (mut last, mut since, mut told) = (usize::MAX, Instant::now(), false);
    loop {
        let (n, nodes) = parts_in_flight(addr, certs).await;
        if seen.len() < 12 {
            seen.push(format!("{:.1} s: {n}", t0.elapsed().as_secs_f64()));
        }
        if n != last {
            (last, since) = (n, Instant::now());
        } else if n > 0 && !told && since.elapsed() > Duration::from_secs(1) {
            told = true;
            println!(
                "  {n} parts unchanged for 1 s after {what}; the first nodes holding them: {}",
                nodes
                    .iter()
                    .take(8)
                    .map(|v| format!(
                        "node {} of {} ({} parts, load {:.4}; first: job {} {:.3e} of {:.3e} cpu s done, deadline {:.1})",
                        v.id,
                        v.host,
                        v.parts.len(),
                        v.load,
                        v.parts[0].job,
                        v.parts[0].cpu_done,
                        v.parts[0].est_cpu,
                        v.parts[0].deadline
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        if n == 0 || t0.elapsed() > limit {
            println!(
                "  after {what}: parts in the manager's view {} (drained in {:.1} s)",
                seen.join(", "),
                t0.elapsed().as_secs_f64()
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The manager's latency histograms now (`ClientMsg::Latency`), by name.
pub(crate) async fn manager_hists(
    addr: SocketAddr,
    certs: &Path,
) -> std::collections::HashMap<String, Histogram<u64>> {
    let (_ep, _c, mut s) = client(addr, certs).await;
    s.send(&ClientMsg::Latency { token: 0 }).await.unwrap();
    match s.recv("reply").await.unwrap() {
        Some(ClientReply::Latency { histograms, .. }) => histograms
            .into_iter()
            .map(|(name, bytes)| {
                let h = hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut std::io::Cursor::new(&bytes))
                    .unwrap();
                (name, h)
            })
            .collect(),
        other => panic!("expected the manager's histograms, got {other:?}"),
    }
}

/// The end of an as-fast-as-possible step: a pause for its last frames,
/// then the step's own policy compute and dispatch-to-start distributions
/// from the manager's histograms.
pub(crate) async fn step_end(
    addr: SocketAddr,
    certs: &Path,
    before: &std::collections::HashMap<String, Histogram<u64>>,
) -> (Histogram<u64>, Histogram<u64>) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = manager_hists(addr, certs).await;
    (
        step_hist(before, &after, "policy_compute_us"),
        step_hist(before, &after, "dispatch_to_start_us"),
    )
}

/// A flood step's latencies, as printed.
pub(crate) fn flood_latencies(
    h: &Histogram<u64>,
    policy: &Histogram<u64>,
    d2s: &Histogram<u64>,
) -> String {
    format!(
        "p50 {} us, p99 {} us; policy compute p50 {} us p99 {} us; dispatch to start p50 {} us p99 {} us",
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99),
        policy.value_at_quantile(0.5),
        policy.value_at_quantile(0.99),
        d2s.value_at_quantile(0.5),
        d2s.value_at_quantile(0.99)
    )
}

/// `after - before` of one named histogram: a step's own distribution.
pub(crate) fn step_hist(
    before: &std::collections::HashMap<String, Histogram<u64>>,
    after: &std::collections::HashMap<String, Histogram<u64>>,
    name: &str,
) -> Histogram<u64> {
    let mut h = after[name].clone();
    h.subtract(&before[name]).unwrap();
    h
}
