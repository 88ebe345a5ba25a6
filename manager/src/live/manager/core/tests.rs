//! The live core driven by event sequences, its actions checked against
//! what the run must do (worked out by hand from the Libra policy's rule:
//! a job of estimate E and deadline D takes a share E / D of a node, on the
//! fullest node it fits on).

use std::time::Duration;

use common::admission::{LinkId, ManagerCore};
use common::job::{JobId, JobSpec, Urgency};
use common::policy::{self, Decision, PolicyConfig, RejectReason};
use common::protocol::{ClientMsg, ClientReply, ManagerMsg, NodeInfo, NodeMsg, PartId, WireJob};
use common::workload::WorkloadJob;

use super::*;

fn info(local: u32) -> NodeInfo {
    NodeInfo {
        local,
        capacity: 1.0,
        speed: 1.0,
        memory_kb: 1 << 20,
        disk_mb: 1 << 10,
    }
}

fn job(id: JobId, submit: f64, re: f64, p: u32, d: f64) -> WorkloadJob {
    WorkloadJob {
        spec: JobSpec::new(id, submit, re, p, d, 1e9).with_urgency(Urgency::Low),
        actual_runtime: re,
    }
}

fn cfg(expect_nodes: usize) -> CoreConfig {
    CoreConfig {
        time_scale: 1.0,
        expect_nodes,
        serve: false,
        journal: true,
        start_timeout: Duration::from_secs(10),
        histogram_timeout: Duration::from_secs(5),
        report_ms: 100,
        heartbeat_ms: 100,
        histogram_ms: 1000,
        spare_rule: SpareRule::default(),
        rejoin_wait: Duration::from_secs(30),
    }
}

fn libra(expect_nodes: usize, jobs: Vec<WorkloadJob>) -> LiveCore {
    let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
    LiveCore::new(ManagerCore::new(p), cfg(expect_nodes), jobs)
}

fn at(t: f64) -> Now {
    Now {
        trace: t,
        wall: t,
        journal: t,
    }
}

fn actions(c: &mut LiveCore) -> Vec<Action> {
    std::iter::from_fn(|| c.poll_action()).collect()
}

/// (link, job, part index) of every dispatch.
fn dispatched(a: &[Action]) -> Vec<(LinkId, JobId, u32)> {
    let mut v = Vec::new();
    for x in a {
        if let Action::Send { link, msg } = x {
            match msg {
                ManagerMsg::Dispatch(d) => v.push((*link, d.part.job, d.part.index)),
                ManagerMsg::Dispatches(ds) => {
                    v.extend(ds.iter().map(|d| (*link, d.part.job, d.part.index)))
                }
                _ => {}
            }
        }
    }
    v
}

fn sent(a: &[Action], want: impl Fn(&ManagerMsg) -> bool) -> Vec<LinkId> {
    a.iter()
        .filter_map(|x| match x {
            Action::Send { link, msg } if want(msg) => Some(*link),
            _ => None,
        })
        .collect()
}

fn arms(a: &[Action], timer: Timer) -> Vec<When> {
    a.iter()
        .filter_map(|x| match x {
            Action::Arm { timer: t, when } if *t == timer => Some(*when),
            _ => None,
        })
        .collect()
}

fn journal(a: &[Action]) -> Vec<&Entry> {
    a.iter()
        .filter_map(|x| match x {
            Action::Journal(v) => Some(v.iter()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Node process `link` reports part `index` of `job` completed at `at`
/// after `cpu` seconds of processor time.
fn completed(link: LinkId, job: JobId, index: u32, at: f64, cpu: f64) -> Event {
    Event::FromNode {
        link,
        msgs: vec![NodeMsg::Completed {
            part: PartId { job, index },
            at,
            cpu_seconds: cpu,
        }],
    }
}

fn connect(c: &mut LiveCore, now: Now, link: LinkId, host: &str) -> Vec<Action> {
    c.handle(
        now,
        Event::Connected {
            link,
            host: host.into(),
            pid: 100 + link as u32,
            nodes: vec![info(0)],
        },
    );
    actions(c)
}

#[test]
fn a_run_with_a_node_process_lost() {
    // Two node processes of one node each; job 1 (E 60, D 100: share
    // 0.6) at 0, job 2 (0.6) at 5, job 3 (E 30, D 100, two parts of 0.3)
    // at 10.
    let mut c = libra(
        2,
        vec![
            job(1, 0.0, 60.0, 1, 100.0),
            job(2, 5.0, 60.0, 1, 100.0),
            job(3, 10.0, 30.0, 2, 100.0),
        ],
    );
    // The start timeout and the first tick are armed at once.
    let a = actions(&mut c);
    assert_eq!(
        arms(&a, Timer::StartTimeout),
        vec![When::After(Duration::from_secs(10))]
    );
    assert_eq!(arms(&a, Timer::Tick).len(), 1);

    // The first registration is welcomed and journaled; the replay waits
    // for the second node.
    let a = connect(&mut c, at(0.0), 1, "a");
    assert!(
        matches!(&a[0], Action::Send { link: 1, msg: ManagerMsg::Welcome(w) } if w.node_ids == vec![0])
    );
    assert!(matches!(journal(&a)[..], [Entry::Node { nodes: 1, .. }]));
    assert_eq!(c.phase(), Phase::Waiting);
    assert_eq!(c.next_due(), None);

    // The second starts it, 2 trace seconds after the clock started: the
    // jobs are due at 2 + their submit time.
    let a = connect(&mut c, at(2.0), 2, "b");
    assert_eq!(c.phase(), Phase::Replaying);
    assert!(a
        .iter()
        .any(|x| matches!(x, Action::ReplayStarted { offset } if *offset == 2.0)));
    assert!(
        matches!(journal(&a)[..], [Entry::Node { .. }, Entry::Replay { offset, .. }] if *offset == 2.0)
    );
    assert_eq!(arms(&a, Timer::Replay), vec![When::Trace(2.0)]);

    // Job 1 goes to the first empty node (link 1); job 2 does not fit
    // beside it (1.2) and goes to link 2; job 3's parts (0.3 each) fit
    // beside both.
    assert!(c.replay_due(2.0));
    c.handle(at(2.0), Event::Timer(Timer::Replay));
    let a = actions(&mut c);
    assert_eq!(dispatched(&a), vec![(1, 1, 0)]);
    assert_eq!(arms(&a, Timer::Replay), vec![When::Trace(7.0)]);
    assert!(
        matches!(journal(&a)[..], [Entry::Decided { record, .. }] if record.id == 1 && record.accepted && record.submit == 2.0)
    );
    c.handle(at(7.0), Event::Timer(Timer::Replay));
    assert_eq!(dispatched(&actions(&mut c)), vec![(2, 2, 0)]);
    c.handle(at(12.5), Event::Timer(Timer::Replay));
    let a = actions(&mut c);
    let mut d = dispatched(&a);
    d.sort_unstable();
    assert_eq!(d, vec![(1, 3, 0), (2, 3, 1)]);
    // No job left to replay, three open: the run goes on, no timer.
    assert!(arms(&a, Timer::Replay).is_empty());
    assert_eq!(c.counts(), (3, 3, 3, 0));

    // Job 1 completes at 21.5 (reported at 22).
    c.handle(at(22.0), completed(1, 1, 0, 21.5, 60.0));
    let a = actions(&mut c);
    assert!(
        matches!(journal(&a)[..], [Entry::Finished { id: Some(1), finish: Some(f), record: None, .. }] if *f == 21.5)
    );
    assert_eq!(c.counts(), (3, 3, 3, 1));

    // Link 2 is lost at 30: job 2 (all on it) and job 3 (one part on it)
    // are lost with the link's reason; job 3's part on link 1 is
    // cancelled. Nothing is open any more: the run ends, asking the only
    // live process for its histograms.
    c.handle(
        at(30.0),
        Event::LinkClosed {
            link: 2,
            reason: "silent for 3 s".into(),
        },
    );
    let a = actions(&mut c);
    let cancelled: Vec<_> = a
        .iter()
        .filter_map(|x| match x {
            Action::Send {
                link,
                msg: ManagerMsg::Cancel { part },
            } => Some((*link, part.job, part.index)),
            _ => None,
        })
        .collect();
    assert_eq!(cancelled, vec![(1, 3, 0)]);
    let lost: Vec<JobId> = journal(&a)
        .iter()
        .filter_map(|e| match e {
            Entry::Finished {
                record: Some(r), ..
            } if r.lost => Some(r.id),
            _ => None,
        })
        .collect();
    assert_eq!(lost, vec![2, 3]);
    assert_eq!(c.counts(), (3, 3, 3, 3));
    assert_eq!(c.phase(), Phase::Collecting { pending: 1 });
    assert_eq!(
        sent(&a, |m| matches!(m, ManagerMsg::SendHistograms)),
        vec![1]
    );
    assert_eq!(
        arms(&a, Timer::Histograms),
        vec![When::After(Duration::from_secs(5))]
    );

    // Its last histograms end the run: shutdown to it, then Finish.
    c.handle(
        at(31.0),
        Event::FromNode {
            link: 1,
            msgs: vec![NodeMsg::Histograms {
                last: true,
                histograms: vec![],
            }],
        },
    );
    let a = actions(&mut c);
    assert_eq!(
        sent(&a, |m| matches!(m, ManagerMsg::Shutdown { .. })),
        vec![1]
    );
    assert!(matches!(a.last(), Some(Action::Finish)));
    assert_eq!(c.phase(), Phase::Over);
    // The histogram timeout firing late changes nothing.
    c.handle(at(35.0), Event::Timer(Timer::Histograms));
    assert!(actions(&mut c).is_empty());

    // The outcome, on the workload's axis (offset 2 taken off).
    let o = c.outcome();
    assert_eq!(o.replay_offset, 2.0);
    assert_eq!(o.wall_seconds, 30.0 - 2.0);
    let ids: Vec<_> = o.records.iter().map(|r| (r.id, r.lost)).collect();
    assert_eq!(ids, vec![(1, false), (2, true), (3, true)]);
    assert_eq!(o.records[0].finish, Some(19.5));
    assert_eq!(o.records[1].submit, 5.0);
    for r in &o.records[1..] {
        assert!(
            r.detail
                .starts_with("lost at 30.000: node process b (link 2) gone: silent for 3 s"),
            "{}",
            r.detail
        );
    }
    assert_eq!(
        o.node_processes,
        vec![("a".to_string(), 1), ("b".to_string(), 1)]
    );
    assert!(o
        .warnings
        .contains(&"lost node process b (link 2): silent for 3 s".to_string()));
}

#[test]
fn the_start_timeout_starts_with_the_nodes_there_are() {
    let mut c = libra(4, vec![job(1, 0.0, 10.0, 1, 100.0)]);
    actions(&mut c);
    connect(&mut c, at(0.0), 1, "a");
    c.handle(at(10.0), Event::Timer(Timer::StartTimeout));
    let a = actions(&mut c);
    assert_eq!(c.phase(), Phase::Replaying);
    assert_eq!(c.nodes(), (1, 1));
    assert!(a
        .iter()
        .any(|x| matches!(x, Action::ReplayStarted { offset } if *offset == 10.0)));
    c.handle(at(10.0), Event::Timer(Timer::Replay));
    assert_eq!(dispatched(&actions(&mut c)), vec![(1, 1, 0)]);
    // A second timeout (it fires once, but a harness may repeat it) does
    // nothing now.
    c.handle(at(11.0), Event::Timer(Timer::StartTimeout));
    assert!(actions(&mut c).is_empty());
}

#[test]
fn no_node_at_all_ends_the_run_at_the_start_timeout() {
    let mut c = libra(1, vec![job(1, 0.0, 10.0, 1, 100.0)]);
    actions(&mut c);
    c.handle(at(0.0), Event::Timer(Timer::StartTimeout));
    let a = actions(&mut c);
    assert!(matches!(a.last(), Some(Action::Finish)));
    assert_eq!(c.phase(), Phase::Over);
    // A node process that comes later is refused, saying why.
    let a = connect(&mut c, at(1.0), 1, "late");
    assert!(matches!(&a[..], [Action::Refused { link: 1, reason }] if reason == "the run is over"));
    let o = c.outcome();
    assert!(o.records.is_empty());
    assert_eq!(
        o.warnings,
        vec!["no node registered within 10s".to_string()]
    );
}

fn wire(estimate: f64, processors: u32, deadline: f64) -> WireJob {
    WireJob::from(&JobSpec::new(7, 0.0, estimate, processors, deadline, 1e9))
}

#[test]
fn a_client_burst_is_answered_after_its_decisions() {
    let mut c = libra(1, vec![]);
    c.cfg.serve = true;
    actions(&mut c);
    connect(&mut c, at(0.0), 1, "a");
    assert_eq!(c.phase(), Phase::Replaying);
    // Two submissions in one burst: the first (share 0.5) is accepted,
    // the second (0.6) does not fit beside it and is rejected. Client
    // jobs are numbered from 2^40 + 1.
    for (token, e) in [(1, 50.0), (2, 60.0)] {
        c.handle(
            at(3.0),
            Event::Client {
                client: 9,
                msg: ClientMsg::Submit {
                    token,
                    job: wire(e, 1, 100.0),
                    actual: None,
                },
            },
        );
    }
    // Nothing leaves before the burst is over; the client waits.
    assert!(actions(&mut c).is_empty());
    assert!(c.waiting(9));
    c.handle(at(3.0), Event::ClientBurstEnd { client: 9 });
    let a = actions(&mut c);
    let first = CLIENT_JOBS + 1;
    let replies: Vec<_> = a
        .iter()
        .filter_map(|x| match x {
            Action::Reply {
                client: 9,
                reply:
                    ClientReply::Decided {
                        token,
                        job,
                        decision,
                        at,
                    },
            } => Some((
                *token,
                *job,
                matches!(decision, Decision::Accept { .. }),
                *at,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        replies,
        vec![(1, first, true, 3.0), (2, first + 1, false, 3.0)]
    );
    // The answers come before the dispatch.
    let k_reply = a
        .iter()
        .position(|x| matches!(x, Action::Reply { .. }))
        .unwrap();
    let k_send = a
        .iter()
        .position(|x| matches!(x, Action::Send { .. }))
        .unwrap();
    assert!(k_reply < k_send);
    assert_eq!(dispatched(&a), vec![(1, first, 0)]);
    // One journal line each: the accepted job's decision, the rejected
    // one's end (which carries its decision).
    let j = journal(&a);
    assert!(
        matches!(j[..], [Entry::Decided { record: r1, .. }, Entry::Finished { record: Some(r2), .. }]
        if r1.id == first && r2.id == first + 1 && !r2.accepted)
    );
    assert_eq!(c.counts(), (2, 2, 2, 1));
    // Both answered: it waits for nothing more.
    assert!(!c.waiting(9));
    // A serving run does not end when its jobs are over; an abort ends it
    // and loses what is open with the abort's reason.
    c.handle(
        at(4.0),
        Event::Abort {
            reason: "interrupted".into(),
        },
    );
    let a = actions(&mut c);
    assert_eq!(c.phase(), Phase::Collecting { pending: 1 });
    assert_eq!(
        sent(&a, |m| matches!(m, ManagerMsg::SendHistograms)),
        vec![1]
    );
    // The process never hands its histograms over: the timeout ends the
    // run and says so.
    c.handle(at(9.0), Event::Timer(Timer::Histograms));
    assert!(matches!(actions(&mut c).last(), Some(Action::Finish)));
    let o = c.outcome();
    assert!(o.records[0].lost && o.records[0].detail.contains("interrupted"));
    assert!(o
        .warnings
        .iter()
        .any(|w| w.starts_with("1 node process(es) did not hand over")));
    // A submission after the end is refused.
    c.handle(
        at(5.0),
        Event::Client {
            client: 9,
            msg: ClientMsg::Submit {
                token: 3,
                job: wire(1.0, 1, 100.0),
                actual: None,
            },
        },
    );
    assert!(
        matches!(&actions(&mut c)[..], [Action::Reply { reply: ClientReply::Error { token: 3, message }, .. }] if message == "the run is over")
    );
}

#[test]
fn ticks_ping_live_links_and_round_trips_are_measured() {
    let mut c = libra(2, vec![job(1, 100.0, 10.0, 1, 100.0)]);
    actions(&mut c);
    connect(&mut c, at(0.0), 1, "a");
    connect(&mut c, at(0.0), 2, "b");
    actions(&mut c);
    c.handle(at(0.5), Event::Timer(Timer::Tick));
    let a = actions(&mut c);
    assert_eq!(
        arms(&a, Timer::Tick),
        vec![When::After(Duration::from_millis(100))]
    );
    let pings: Vec<(LinkId, u64)> = a
        .iter()
        .filter_map(|x| match x {
            Action::Send {
                link,
                msg: ManagerMsg::Ping { nonce },
            } => Some((*link, *nonce)),
            _ => None,
        })
        .collect();
    assert_eq!(pings.len(), 2);
    // The link's id is in the nonce's upper half.
    assert_eq!(pings[0].1 >> 32, pings[0].0);
    // Link 1 answers 2 ms later (wall): a 2,000 us round trip.
    let now = Now {
        trace: 0.502,
        wall: 0.502,
        journal: 0.502,
    };
    c.handle(
        now,
        Event::FromNode {
            link: 1,
            msgs: vec![NodeMsg::Pong { nonce: pings[0].1 }],
        },
    );
    let h = &c.hists["quic_rtt_us"];
    assert_eq!(h.len(), 1);
    assert!((h.max() as i64 - 2000).abs() <= 2, "{}", h.max());
    // A lost link is pinged no more.
    c.handle(
        at(1.0),
        Event::LinkClosed {
            link: 2,
            reason: "gone".into(),
        },
    );
    actions(&mut c);
    c.handle(at(1.1), Event::Timer(Timer::Tick));
    assert_eq!(
        sent(&actions(&mut c), |m| matches!(m, ManagerMsg::Ping { .. })),
        vec![1]
    );
}

/// The requests the core asks to send to the external scheduler, decoded.
fn requests(a: &[Action]) -> Vec<serde_json::Value> {
    a.iter()
        .filter_map(|x| match x {
            Action::SchedulerRequest(r) => Some(serde_json::from_str(r).unwrap()),
            _ => None,
        })
        .collect()
}

fn event_types(request: &serde_json::Value) -> Vec<&str> {
    request["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect()
}

/// With an external scheduler, time runs while it thinks: one request is
/// out at a time, what happens meanwhile goes in the next, its decisions
/// take effect when its reply comes, and a CALL_ME_LATER arms a timer.
#[test]
fn a_batsim_scheduler_is_asked_one_request_at_a_time() {
    let mailbox = common::batsim::Mailbox::default();
    let q = common::batsim::BatsimQueue::new(Box::new(common::batsim::NoScheduler), 0, 3, "w", 0.0)
        .live(100.0, mailbox.clone());
    let jobs = vec![
        job(1, 0.0, 50.0, 1, 100.0),
        job(2, 1.0, 50.0, 1, 100.0),
        job(3, 2.0, 50.0, 1, 100.0),
    ];
    let mut c = LiveCore::new(
        ManagerCore::new(common::policy::Policy::Queue(Box::new(q))),
        cfg(1),
        jobs,
    )
    .with_scheduler(mailbox);
    connect(&mut c, at(0.0), 1, "h1");
    // Job 1 arrives: the scheduler is first told the simulation begins.
    c.handle(at(0.0), Event::Timer(Timer::Replay));
    let a = actions(&mut c);
    let r = requests(&a);
    assert_eq!(r.len(), 1);
    assert_eq!(event_types(&r[0]), ["SIMULATION_BEGINS"]);
    // Jobs 2 and 3 arrive while it thinks: nothing is sent.
    c.handle(at(1.0), Event::Timer(Timer::Replay));
    c.handle(at(2.0), Event::Timer(Timer::Replay));
    assert!(requests(&actions(&mut c)).is_empty());
    // Its reply at 2.5 (after 2.5 s): the three arrivals in one request,
    // at now 2.5 + 1 (Batsim time is Libratory's + 1).
    c.handle(
        at(2.5),
        Event::SchedulerReplied {
            reply: Ok(r#"{"now": 1, "events": []}"#.into()),
            waited: Duration::from_millis(2500),
        },
    );
    let r = requests(&actions(&mut c));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["now"], 3.5);
    assert_eq!(
        event_types(&r[0]),
        ["JOB_SUBMITTED", "JOB_SUBMITTED", "JOB_SUBMITTED", "NOTIFY"]
    );
    let h = &c.hists["scheduler_reply_us"];
    assert_eq!(h.len(), 1);
    assert!(h.equivalent(h.max(), 2_500_000), "{}", h.max());
    // It starts job 1 on node 0 and asks to be called at Batsim 10: job 1
    // is dispatched when the reply comes (3), a timer is armed for 9.
    c.handle(
        at(3.0),
        Event::SchedulerReplied {
            reply: Ok(r#"{"now": 3.5, "events": [
                {"timestamp": 3.5, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}},
                {"timestamp": 3.5, "type": "CALL_ME_LATER", "data": {"timestamp": 10}}]}"#
                .into()),
            waited: Duration::from_millis(500),
        },
    );
    let a = actions(&mut c);
    assert_eq!(dispatched(&a), [(1, 1, 0)]);
    assert_eq!(arms(&a, Timer::Queue), [When::Trace(9.0)]);
    assert_eq!(c.core.record(1).unwrap().start, Some(3.0));
    // Nothing new to say (the keepalive is 100 s): no request.
    assert!(requests(&a).is_empty());
    c.handle(at(9.0), Event::Timer(Timer::Queue));
    let r = requests(&actions(&mut c));
    assert_eq!(r.len(), 1);
    assert_eq!(event_types(&r[0]), ["REQUESTED_CALL"]);
    assert_eq!(r[0]["now"], 10.0);
}

/// A part's end is journaled while its job goes on (`ended`), so a
/// manager resuming the run knows it over; the last part's end is the
/// job's `finished` line alone. The `node` lines carry the pids. Job 3
/// (E 30, two parts) runs on both single-node processes; the part on
/// one link completes at 30.5, the other at 31.
#[test]
fn a_part_over_while_its_job_goes_on_is_journaled() {
    let mut c = libra(2, vec![job(3, 0.0, 30.0, 2, 100.0)]);
    actions(&mut c);
    let a = connect(&mut c, at(0.0), 1, "a");
    assert!(matches!(
        journal(&a)[..],
        [Entry::Node { pid: Some(101), .. }]
    ));
    connect(&mut c, at(0.0), 2, "b");
    c.handle(at(0.0), Event::Timer(Timer::Replay));
    let mut d = dispatched(&actions(&mut c));
    d.sort_unstable();
    assert_eq!(d.len(), 2);
    let done = |c: &mut LiveCore, (link, job, index): (LinkId, JobId, u32), t: f64| {
        c.handle(at(t), completed(link, job, index, t, 30.0));
        actions(c)
    };
    let a = done(&mut c, d[0], 30.5);
    assert!(
        matches!(journal(&a)[..], [Entry::Ended { id: 3, part, finish, .. }] if *part == d[0].2 && *finish == 30.5),
        "{:?}",
        journal(&a)
    );
    let a = done(&mut c, d[1], 31.0);
    assert!(
        matches!(journal(&a)[..], [Entry::Finished { id: Some(3), finish: Some(f), .. }] if *f == 31.0),
        "{:?}",
        journal(&a)
    );
}

/// (job, local node) of every dispatch.
fn on_nodes(a: &[Action]) -> Vec<(JobId, u32)> {
    let mut v = Vec::new();
    for x in a {
        if let Action::Send { msg, .. } = x {
            match msg {
                ManagerMsg::Dispatch(d) => v.push((d.part.job, d.node)),
                ManagerMsg::Dispatches(ds) => v.extend(ds.iter().map(|d| (d.part.job, d.node))),
                _ => {}
            }
        }
    }
    v
}

/// One node of a process goes silent (a crash of that node alone): its
/// heartbeats list it in a `Silent` frame, and once nothing vouched for it
/// for the link timeout (5 s here) it is lost alone, with the fault named:
/// the jobs with a part on it are lost, their other parts cancelled, the
/// job only on the other node goes on. A heartbeat that vouches for it
/// again brings it back, idle, under its id.
#[test]
fn a_single_silent_node_is_lost_alone_and_comes_back_idle() {
    // Job 1 (share 0.6) at 0 to node 0, job 2 (0.6) at 5 to node 1 (1.2
    // beside job 1 does not fit), job 3 (two parts of 0.3) at 10 on both;
    // job 4 (0.6) at 20.
    let mut c = libra(
        2,
        vec![
            job(1, 0.0, 60.0, 1, 100.0),
            job(2, 5.0, 60.0, 1, 100.0),
            job(3, 10.0, 30.0, 2, 100.0),
            job(4, 20.0, 60.0, 1, 100.0),
        ],
    )
    .with_node_watch(Duration::from_secs(5));
    actions(&mut c);
    // The injector reports the crash of node 1 of `a` (at 11).
    c.handle(
        at(11.0),
        Event::Client {
            client: 9,
            msg: ClientMsg::FaultApplied {
                token: 1,
                fault: "fault 1 (crash of node 1 at +11 s, line 3)".into(),
                kind: "crash".into(),
                process: "a".into(),
                act: common::protocol::FaultAct::Kill,
                what: "node 1 crashed".into(),
                node: Some(1),
                factor: None,
                age_s: 0.0,
            },
        },
    );
    actions(&mut c);
    c.handle(
        at(0.0),
        Event::Connected {
            link: 1,
            host: "a".into(),
            pid: 7,
            nodes: vec![info(0), info(1)],
        },
    );
    actions(&mut c);
    assert_eq!(c.phase(), Phase::Replaying);
    let mut placed = Vec::new();
    for t in [0.0, 5.0, 10.0] {
        c.handle(at(t), Event::Timer(Timer::Replay));
        placed.extend(on_nodes(&actions(&mut c)));
    }
    placed.sort_unstable();
    assert_eq!(placed, vec![(1, 0), (2, 1), (3, 0), (3, 1)]);
    let beat = |c: &mut LiveCore, t: f64, silent: Vec<u32>| {
        let mut msgs = Vec::new();
        if !silent.is_empty() {
            msgs.push(NodeMsg::Silent { nodes: silent });
        }
        msgs.push(NodeMsg::Heartbeat { seq: t as u64 });
        c.handle(at(t), Event::FromNode { link: 1, msgs });
        actions(c)
    };
    beat(&mut c, 11.0, vec![]);
    for t in [12.0, 14.0] {
        beat(&mut c, t, vec![1]);
    }
    // 3 s of heartbeats without node 1: nothing lost yet; nor while no
    // heartbeat comes at all (the whole process silent is its link's
    // loss, not its nodes').
    for t in [15.0, 16.4] {
        c.handle(at(t), Event::Timer(Timer::Tick));
        let a = actions(&mut c);
        assert!(sent(&a, |m| matches!(m, ManagerMsg::NodeLost { .. })).is_empty());
    }
    assert_eq!(c.core.live_nodes(), 2);
    // 5.5 s of heartbeats without it: lost, alone.
    beat(&mut c, 16.5, vec![1]);
    c.handle(at(16.5), Event::Timer(Timer::Tick));
    let a = actions(&mut c);
    assert_eq!(
        sent(&a, |m| matches!(m, ManagerMsg::NodeLost { node: 1, .. })),
        vec![1]
    );
    assert_eq!(
        sent(
            &a,
            |m| matches!(m, ManagerMsg::Cancel { part } if *part == PartId { job: 3, index: 0 })
        ),
        vec![1],
        "job 3's part on the surviving node is cancelled"
    );
    assert_eq!(c.core.live_nodes(), 1);
    let lost_warning = warnings(&a);
    for j in [2, 3] {
        let r = c.core.record(j).unwrap();
        assert!(r.lost, "job {j}");
        assert_eq!(
            r.detail,
            "lost at 16.500: node 1 of node process a (link 1) gone: silent for more than 5s \
             (no heartbeat vouched for it), after fault 1 (crash of node 1 at +11 s, line 3)"
        );
    }
    assert!(!c.core.record(1).unwrap().lost && !c.core.job_over(1));
    // Vouched for again: back, idle; job 4 goes there (node 0 holds 0.6).
    beat(&mut c, 17.0, vec![]);
    assert_eq!(c.core.live_nodes(), 2);
    c.handle(at(20.0), Event::Timer(Timer::Replay));
    assert_eq!(on_nodes(&actions(&mut c)), vec![(4, 1)]);
    // The warnings say both, with their times, for `replay`.
    // (The loss is journaled by the tick that found it.)
    assert!(
        matches!(&lost_warning[..], [t] if t.starts_with("lost node 1 of node process a (link 1) at 16.500: silent")),
        "{lost_warning:?}"
    );
    c.handle(at(21.0), Event::Timer(Timer::Tick));
    assert_eq!(
        warnings(&actions(&mut c)),
        vec!["node 1 of node process a (link 1) back at 17.000, idle"]
    );
}

fn warnings(a: &[Action]) -> Vec<String> {
    journal(a)
        .iter()
        .filter_map(|e| match e {
            Entry::Warning { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// FIFO on two node processes, `a` and `b`, of one node each: job 1 (1
/// processor, RE `re`) goes to link 1's node at 2 (replay offset 2), job
/// 2 (2 processors, RE 10) at 7 waits for both, and link 2 is lost at 10.
fn fifo_with_process_b_lost(re: f64) -> LiveCore {
    let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
    let mut c = LiveCore::new(
        ManagerCore::new(p),
        cfg(2),
        vec![job(1, 0.0, re, 1, 1000.0), job(2, 5.0, 10.0, 2, 1000.0)],
    );
    actions(&mut c);
    connect(&mut c, at(0.0), 1, "a");
    connect(&mut c, at(2.0), 2, "b");
    c.handle(at(2.0), Event::Timer(Timer::Replay));
    assert_eq!(dispatched(&actions(&mut c)), vec![(1, 1, 0)]);
    c.handle(at(7.0), Event::Timer(Timer::Replay));
    assert!(dispatched(&actions(&mut c)).is_empty());
    c.handle(
        at(10.0),
        Event::LinkClosed {
            link: 2,
            reason: "silent for 3 s".into(),
        },
    );
    actions(&mut c);
    // (total, submitted, decided, finished): job 2 waits.
    assert_eq!(c.counts(), (2, 2, 1, 0));
    c
}

/// [`fifo_with_process_b_lost`] with job 1 of RE 60: link 2's node left
/// the pool at 10. Job 1 completes at 61.5 (reported at 62, past the 30
/// s the run waits after a loss, `rejoin_wait`): every job is replayed
/// and nothing runs, so job 2, needing 2 nodes of the 1 left, is dropped
/// then (rejected for resources, naming why) and the run ends; without
/// the drop it would wait for good.
#[test]
fn a_queued_job_wider_than_the_nodes_left_ends_the_run_rejected() {
    let mut c = fifo_with_process_b_lost(60.0);
    c.handle(at(62.0), completed(1, 1, 0, 61.5, 60.0));
    let a = actions(&mut c);
    assert!(dispatched(&a).is_empty());
    let dropped: Vec<&JobRecord> = journal(&a)
        .into_iter()
        .filter_map(|e| match e {
            Entry::Finished {
                record: Some(r), ..
            } => Some(&**r),
            _ => None,
        })
        .collect();
    assert_eq!(dropped.len(), 1, "{a:?}");
    let r = dropped[0];
    assert_eq!(
        (r.id, r.accepted, r.reason),
        (2, false, Some(RejectReason::Resources))
    );
    assert_eq!(
        r.detail,
        "never started: needs 2 processors, and only 1 nodes were left usable (the others \
         lost for good) when nothing else could free one"
    );
    assert_eq!(c.counts(), (2, 2, 2, 2));
    assert_eq!(c.phase(), Phase::Collecting { pending: 1 });
}

/// The FIFO run of [`fifo_with_process_b_lost`] with job 1 ending at
/// 19.5 (RE 17.5 from 2,
/// reported at 20): a node process was lost at 10, and the run waits
/// `rejoin_wait` (30 s) after the loss before it drops job 2, asking
/// again at each tick. With no process back, the tick at 39.9 leaves job
/// 2 queued and the one at 40.1 drops it (rejected for resources) and
/// ends the run. With process `b` registering again at 25 (a new link,
/// its one node new to the pool), job 2 starts at once, on link 1's
/// node and link 3's, and nothing is dropped.
#[test]
fn a_queued_job_too_wide_waits_for_a_lost_process_to_come_back() {
    for comes_back in [false, true] {
        let mut c = fifo_with_process_b_lost(17.5);
        c.handle(at(20.0), completed(1, 1, 0, 19.5, 17.5));
        let a = actions(&mut c);
        assert!(dispatched(&a).is_empty());
        // (total, submitted, decided, finished): job 2 still waits.
        assert_eq!(c.counts(), (2, 2, 1, 1), "{a:?}");
        if comes_back {
            let a = connect(&mut c, at(25.0), 3, "b");
            let mut d = dispatched(&a);
            d.sort_unstable();
            assert_eq!(d, vec![(1, 2, 0), (3, 2, 1)], "{a:?}");
            c.handle(at(41.0), Event::Timer(Timer::Tick));
            assert_eq!(c.counts(), (2, 2, 2, 1));
            assert_eq!(c.phase(), Phase::Replaying);
            continue;
        }
        c.handle(at(39.9), Event::Timer(Timer::Tick));
        let a = actions(&mut c);
        assert_eq!(c.counts(), (2, 2, 1, 1), "{a:?}");
        assert_eq!(c.phase(), Phase::Replaying);
        c.handle(at(40.1), Event::Timer(Timer::Tick));
        let a = actions(&mut c);
        let dropped: Vec<(JobId, bool, Option<RejectReason>)> = journal(&a)
            .into_iter()
            .filter_map(|e| match e {
                Entry::Finished {
                    record: Some(r), ..
                } => Some((r.id, r.accepted, r.reason)),
                _ => None,
            })
            .collect();
        assert_eq!(dropped, vec![(2, false, Some(RejectReason::Resources))]);
        assert_eq!(c.phase(), Phase::Collecting { pending: 1 });
    }
}

/// A queue policy's wake-up arms the queue timer live too, not only an
/// external scheduler's: QoPS on four single-node processes with the jobs
/// of `qops::tests::a_reservation_between_events_is_a_time_to_be_called`
/// (replay offset 2: trace times are submit + 2). Job 1 (RE 50) holds
/// node 0 past its estimate (no completion comes); at 62 job 11 is
/// reserved at 82, when nothing arrives or completes. The timer armed for
/// 82 makes the pass that dispatches it to link 4's node, the free one.
#[test]
fn a_qops_reservation_between_events_is_dispatched_at_its_time() {
    let p = policy::build("qops", &PolicyConfig::default(), &[]).unwrap();
    let mut c = LiveCore::new(
        ManagerCore::new(p),
        cfg(4),
        vec![
            job(1, 0.0, 50.0, 1, 150.0),
            job(4, 10.0, 150.0, 1, 300.0),
            job(6, 20.0, 100.0, 1, 150.0),
            job(9, 40.0, 20.0, 2, 75.0),
            job(11, 60.0, 35.0, 1, 105.0),
        ],
    );
    actions(&mut c);
    for (link, host) in [(1, "a"), (2, "b"), (3, "c")] {
        connect(&mut c, at(0.0), link, host);
    }
    connect(&mut c, at(2.0), 4, "d");
    let mut all = Vec::new();
    for t in [2.0, 12.0, 22.0, 42.0] {
        c.handle(at(t), Event::Timer(Timer::Replay));
        all.extend(actions(&mut c));
    }
    assert_eq!(dispatched(&all), [(1, 1, 0), (2, 4, 0), (3, 6, 0)]);
    // Job 9 waits for node 0 (its reservation at 52 passes with job 1
    // still there).
    c.handle(at(52.0), Event::Timer(Timer::Queue));
    assert!(dispatched(&actions(&mut c)).is_empty());
    c.handle(at(62.0), Event::Timer(Timer::Replay));
    let a = actions(&mut c);
    assert!(dispatched(&a).is_empty());
    assert_eq!(arms(&a, Timer::Queue), [When::Trace(82.0)]);
    c.handle(at(82.0), Event::Timer(Timer::Queue));
    assert_eq!(dispatched(&actions(&mut c)), [(4, 11, 0)]);
}
