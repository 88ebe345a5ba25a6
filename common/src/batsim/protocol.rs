//! The Batsim 3.1-4.x JSON protocol, Batsim's side, as pybatsim 3.2.1
//! speaks it: one message is `{"now": t, "events": [{"timestamp", "type",
//! "data"}]}`. This module only encodes and decodes text; the transport
//! (ZeroMQ REQ) lives in the manager.
//!
//! Every message the scheduler may send is either understood
//! ([`Decision`]) or refused with an error naming it (see docs/batsim.md).

use serde::Serialize;
use serde_json::{json, Value};
use thiserror::Error;

use crate::job::JobId;
use crate::time::Time;

/// The one workload's name: job `N` is `w0!N` to the scheduler.
pub const WORKLOAD: &str = "w0";

/// The one profile every job names. The scheduler is not told the jobs'
/// actual runtimes (no Libratory policy is), only their walltimes.
pub const PROFILE: &str = "libratory";

/// Batsim's name of job `id`.
pub fn job_name(id: JobId) -> String {
    format!("{WORKLOAD}!{id}")
}

/// The job a Batsim job name denotes (`w0!N`), if any.
pub fn parse_job_name(name: &str) -> Option<JobId> {
    name.strip_prefix(WORKLOAD)?.strip_prefix('!')?.parse().ok()
}

/// A protocol error in what the scheduler sent.
#[derive(Debug, Error)]
pub enum ProtocolError {
    /// Not JSON, or not a message.
    #[error("malformed message from the scheduler: {error} (message starts: {start:?})")]
    Malformed {
        /// serde_json's word.
        error: serde_json::Error,
        /// The first characters received.
        start: String,
    },
    /// An event type Libratory does not carry out.
    #[error(
        "event {index} ({kind}) is not supported by Libratory's Batsim side (see docs/batsim.md)"
    )]
    Refused {
        /// Position in the message.
        index: usize,
        /// Its type.
        kind: String,
    },
    /// A field missing or of the wrong form.
    #[error("event {index} ({kind}): field '{field}' {problem}")]
    BadField {
        /// Position in the message.
        index: usize,
        /// Its type.
        kind: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// `now` went backwards or an event is dated before the request.
    #[error("{what} {value} is before the request's now {now}")]
    Backwards {
        /// Which time.
        what: String,
        /// Its value.
        value: f64,
        /// The request's now.
        now: f64,
    },
}

/// One event Libratory sends.
#[derive(Debug, Clone, Serialize)]
pub struct OutEvent {
    /// When it happened.
    pub timestamp: Time,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Its data.
    pub data: Value,
}

/// A message to the scheduler as text.
pub fn encode(now: Time, events: &[OutEvent]) -> String {
    #[derive(Serialize)]
    struct Msg<'a> {
        now: Time,
        events: &'a [OutEvent],
    }
    serde_json::to_string(&Msg { now, events }).expect("plain JSON values serialize")
}

/// What the simulation offers the scheduler: `nodes` compute resources,
/// ids 0..nodes-1, no storage, no sharing, no dynamic jobs. Every field
/// pybatsim 3.2.1 reads is present.
pub fn simulation_begins(now: Time, nodes: usize, workload: &str) -> OutEvent {
    let compute: Vec<Value> = (0..nodes)
        .map(|id| {
            json!({
                "id": id,
                "name": format!("node{id}"),
                "state": "idle",
                "properties": {},
                "zone_properties": {},
            })
        })
        .collect();
    OutEvent {
        timestamp: now,
        kind: "SIMULATION_BEGINS",
        data: json!({
            "nb_resources": nodes,
            "nb_compute_resources": nodes,
            "nb_storage_resources": 0,
            "allow_compute_sharing": false,
            "allow_storage_sharing": false,
            "config": {
                "redis-enabled": false,
                "redis-hostname": "127.0.0.1",
                "redis-port": 6379,
                "redis-prefix": "default",
                "profiles-forwarded-on-submission": false,
                "dynamic-jobs-enabled": false,
                "dynamic-jobs-acknowledged": false,
                "profile-reuse-enabled": false,
                "forward-unknown-events": false,
            },
            "compute_resources": compute,
            "storage_resources": [],
            "workloads": { WORKLOAD: workload },
            "profiles": { WORKLOAD: { PROFILE: {
                "type": "delay",
                "delay": 0,
                "libratory": "the actual runtime is hidden from schedulers; jobs run it",
            } } },
        }),
    }
}

/// A job arrives.
pub fn job_submitted(now: Time, id: JobId, res: usize, walltime: Time, subtime: Time) -> OutEvent {
    let name = job_name(id);
    OutEvent {
        timestamp: now,
        kind: "JOB_SUBMITTED",
        data: json!({
            "job_id": name,
            "job": {
                "id": name,
                "subtime": subtime,
                "res": res,
                "walltime": walltime,
                "profile": PROFILE,
            },
        }),
    }
}

/// How a job ended, as JOB_COMPLETED says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran to its end.
    Success,
    /// A KILL_JOB ended it.
    Killed,
    /// It was lost with a node (a fault).
    Failed,
}

/// A started job ended, as `outcome` says (a lost job fails with return
/// code 1).
pub fn job_completed(now: Time, id: JobId, alloc: &[usize], outcome: Outcome) -> OutEvent {
    let (state, code) = match outcome {
        Outcome::Success => ("COMPLETED_SUCCESSFULLY", 0),
        Outcome::Killed => ("COMPLETED_KILLED", 0),
        Outcome::Failed => ("COMPLETED_FAILED", 1),
    };
    OutEvent {
        timestamp: now,
        kind: "JOB_COMPLETED",
        data: json!({
            "job_id": job_name(id),
            "job_state": state,
            "return_code": code,
            "alloc": procset(alloc),
        }),
    }
}

/// The answer to a KILL_JOB naming `ids`: `killed` are the jobs it
/// actually ended, with their progress in ]0, 1[.
pub fn job_killed(now: Time, ids: &[String], killed: &[(JobId, f64)]) -> OutEvent {
    let progress: serde_json::Map<String, Value> = killed
        .iter()
        .map(|&(j, p)| (job_name(j), json!({ "profile": PROFILE, "progress": p })))
        .collect();
    OutEvent {
        timestamp: now,
        kind: "JOB_KILLED",
        data: json!({ "job_ids": ids, "job_progress": progress }),
    }
}

/// A CALL_ME_LATER came due.
pub fn requested_call(now: Time) -> OutEvent {
    OutEvent {
        timestamp: now,
        kind: "REQUESTED_CALL",
        data: json!({}),
    }
}

/// A NOTIFY of `kind` (`no_more_static_job_to_submit`, ...).
pub fn notify(now: Time, kind: &str) -> OutEvent {
    OutEvent {
        timestamp: now,
        kind: "NOTIFY",
        data: json!({ "type": kind }),
    }
}

/// A NOTIFY of `kind` about `resources` (`event_machine_unavailable`,
/// `event_machine_available`).
pub fn notify_resources(now: Time, kind: &str, resources: &[usize]) -> OutEvent {
    OutEvent {
        timestamp: now,
        kind: "NOTIFY",
        data: json!({ "type": kind, "resources": procset(resources) }),
    }
}

/// The end.
pub fn simulation_ends(now: Time) -> OutEvent {
    OutEvent {
        timestamp: now,
        kind: "SIMULATION_ENDS",
        data: json!({}),
    }
}

/// Node ids as a ProcSet string ("0-3 7"), as Batsim writes allocations.
pub fn procset(nodes: &[usize]) -> String {
    let mut sorted = nodes.to_vec();
    sorted.sort_unstable();
    let mut out = String::new();
    let mut k = 0;
    while k < sorted.len() {
        let lo = sorted[k];
        let mut hi = lo;
        while k + 1 < sorted.len() && sorted[k + 1] == hi + 1 {
            k += 1;
            hi = sorted[k];
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if lo == hi {
            out.push_str(&lo.to_string());
        } else {
            out.push_str(&format!("{lo}-{hi}"));
        }
        k += 1;
    }
    out
}

/// Parses a ProcSet string ("0-3 7", "0-3,7" also accepted) into its set
/// of ids, ascending: intervals may overlap ("1-2 1-3" is {1, 2, 3}, as
/// Batsim's interval sets read). An id at or beyond `resources` is an
/// error, found before any interval is expanded.
pub fn parse_procset(s: &str, resources: usize) -> Result<Vec<usize>, String> {
    let mut out = std::collections::BTreeSet::new();
    for part in s.split([' ', ',']).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let lo: usize = lo
            .parse()
            .map_err(|_| format!("'{part}' is not an interval"))?;
        let hi: usize = hi
            .parse()
            .map_err(|_| format!("'{part}' is not an interval"))?;
        if hi < lo {
            return Err(format!("'{part}' is an empty interval"));
        }
        if hi >= resources {
            // The first id of it beyond the platform.
            return Err(format!(
                "'{part}' names resource {}; there are {resources} (ids 0-{})",
                lo.max(resources),
                resources.saturating_sub(1)
            ));
        }
        out.extend(lo..=hi);
    }
    if out.is_empty() {
        return Err(format!("'{s}' names no resource"));
    }
    Ok(out.into_iter().collect())
}

/// One decision of the scheduler.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// EXECUTE_JOB: start `job` on these resources.
    Execute {
        /// Batsim job name.
        job: String,
        /// Resource ids.
        alloc: Vec<usize>,
    },
    /// REJECT_JOB.
    Reject {
        /// Batsim job name.
        job: String,
    },
    /// CALL_ME_LATER at this time.
    CallMeLater {
        /// When.
        at: Time,
    },
    /// KILL_JOB.
    Kill {
        /// Batsim job names.
        jobs: Vec<String>,
    },
    /// NOTIFY registration_finished / continue_registration: nothing to do
    /// (dynamic jobs are disabled), accepted so schedulers that always
    /// send them run.
    Notify {
        /// The NOTIFY type.
        kind: String,
    },
}

/// A reply: the scheduler's now and its decisions, each with its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The scheduler's now (>= the request's).
    pub now: Time,
    /// Decisions in message order, with their timestamps.
    pub decisions: Vec<(Time, Decision)>,
}

/// Decodes a reply to a request made at `request_now`.
pub fn decode_reply(
    text: &str,
    request_now: Time,
    resources: usize,
) -> Result<Reply, ProtocolError> {
    #[derive(serde::Deserialize)]
    struct RawEvent {
        timestamp: f64,
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        data: Value,
    }
    #[derive(serde::Deserialize)]
    struct RawMessage {
        now: f64,
        events: Vec<RawEvent>,
    }
    let raw: RawMessage = serde_json::from_str(text).map_err(|error| ProtocolError::Malformed {
        error,
        start: text.chars().take(80).collect(),
    })?;
    if raw.now.is_nan() || raw.now < request_now {
        return Err(ProtocolError::Backwards {
            what: "the reply's now".into(),
            value: raw.now,
            now: request_now,
        });
    }
    let mut decisions = Vec::with_capacity(raw.events.len());
    let mut last_timestamp = request_now;
    for (index, e) in raw.events.into_iter().enumerate() {
        let bad = |field: &'static str, problem: String| ProtocolError::BadField {
            index,
            kind: e.kind.clone(),
            field,
            problem,
        };
        if !e.timestamp.is_finite() || e.timestamp < request_now {
            return Err(ProtocolError::Backwards {
                what: format!("event {index} ({}) timestamp", e.kind),
                value: e.timestamp,
                now: request_now,
            });
        }
        // Batsim's rules: no event after the message's `now`, and events
        // in (non-strictly) ascending time.
        if e.timestamp > raw.now {
            return Err(bad(
                "timestamp",
                format!("{} is after the message's now ({})", e.timestamp, raw.now),
            ));
        }
        if e.timestamp < last_timestamp {
            return Err(bad(
                "timestamp",
                format!(
                    "{} is before the event before it ({last_timestamp}): events go in time order",
                    e.timestamp
                ),
            ));
        }
        last_timestamp = e.timestamp;
        let string = |field: &'static str| -> Result<String, ProtocolError> {
            e.data
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(field, "missing or not a string".into()))
        };
        let d = match e.kind.as_str() {
            "EXECUTE_JOB" => {
                let job = string("job_id")?;
                let alloc =
                    parse_procset(&string("alloc")?, resources).map_err(|p| bad("alloc", p))?;
                if e.data.get("mapping").is_some() {
                    return Err(bad(
                        "mapping",
                        "is not supported (one part per resource)".into(),
                    ));
                }
                if e.data.get("additional_io_job").is_some() {
                    return Err(bad("additional_io_job", "is not supported".into()));
                }
                Decision::Execute { job, alloc }
            }
            "REJECT_JOB" => Decision::Reject {
                job: string("job_id")?,
            },
            "CALL_ME_LATER" => {
                let at = e
                    .data
                    .get("timestamp")
                    .and_then(Value::as_f64)
                    .filter(|t| t.is_finite())
                    .ok_or_else(|| bad("timestamp", "missing or not a finite number".into()))?;
                Decision::CallMeLater { at }
            }
            "KILL_JOB" => {
                let ids = e
                    .data
                    .get("job_ids")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("job_ids", "missing or not a list".into()))?;
                let jobs = ids
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("job_ids", "holds a non-string".into()))?;
                Decision::Kill { jobs }
            }
            "NOTIFY" => {
                let kind = string("type")?;
                match kind.as_str() {
                    "registration_finished" | "continue_registration" => Decision::Notify { kind },
                    _ => {
                        return Err(bad(
                            "type",
                            format!("'{kind}' is not a NOTIFY Libratory carries out"),
                        ))
                    }
                }
            }
            _ => {
                return Err(ProtocolError::Refused {
                    index,
                    kind: e.kind,
                })
            }
        };
        decisions.push((e.timestamp, d));
    }
    Ok(Reply {
        now: raw.now,
        decisions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procsets_round_trip() {
        assert_eq!(procset(&[7, 0, 1, 2, 3, 9, 10]), "0-3 7 9-10");
        assert_eq!(
            parse_procset("0-3 7 9-10", 11).unwrap(),
            vec![0, 1, 2, 3, 7, 9, 10]
        );
        assert_eq!(parse_procset("2", 3).unwrap(), vec![2]);
        assert!(parse_procset("3-1", 4).is_err());
        assert!(parse_procset("", 4).is_err());
        assert!(parse_procset("a-b", 4).is_err());
        // A set: overlapping intervals and repeats name each id once, as
        // Batsim's interval sets read ("1-2 1-3 5 7").
        assert_eq!(
            parse_procset("1-2 1-3 5 7", 8).unwrap(),
            vec![1, 2, 3, 5, 7]
        );
        assert_eq!(parse_procset("0 0", 2).unwrap(), vec![0]);
        // Ids beyond the platform are refused before any interval is
        // expanded (this one would be 2^64 ids).
        assert_eq!(
            parse_procset("0-18446744073709551615", 4).unwrap_err(),
            "'0-18446744073709551615' names resource 4; there are 4 (ids 0-3)"
        );
    }

    #[test]
    fn job_names() {
        assert_eq!(job_name(12), "w0!12");
        assert_eq!(parse_job_name("w0!12"), Some(12));
        assert_eq!(parse_job_name("w1!12"), None);
        assert_eq!(parse_job_name("w0!x"), None);
    }

    #[test]
    fn a_pybatsim_reply_decodes() {
        // As pybatsim 3.2.1's fillerSched answers one submission.
        let text = r#"{"now": 10.005, "events": [{"timestamp": 10.005, "type": "EXECUTE_JOB", "data": {"job_id": "w0!3", "alloc": "0-1"}}, {"timestamp": 10.005, "type": "REJECT_JOB", "data": {"job_id": "w0!4"}}, {"timestamp": 10.005, "type": "CALL_ME_LATER", "data": {"timestamp": 20}}, {"timestamp": 10.005, "type": "KILL_JOB", "data": {"job_ids": ["w0!1"]}}]}"#;
        let r = decode_reply(text, 10.0, 4).unwrap();
        assert_eq!(r.now, 10.005);
        assert_eq!(
            r.decisions,
            vec![
                (
                    10.005,
                    Decision::Execute {
                        job: "w0!3".into(),
                        alloc: vec![0, 1]
                    }
                ),
                (10.005, Decision::Reject { job: "w0!4".into() }),
                (10.005, Decision::CallMeLater { at: 20.0 }),
                (
                    10.005,
                    Decision::Kill {
                        jobs: vec!["w0!1".into()]
                    }
                ),
            ]
        );
    }

    #[test]
    fn refused_and_malformed_messages_say_what() {
        let e = decode_reply("{\"now\": 1, \"events\": [", 0.0, 4).unwrap_err();
        assert!(e.to_string().contains("malformed"), "{e}");
        let e = decode_reply(
            r#"{"now": 1, "events": [{"timestamp": 1, "type": "REGISTER_JOB", "data": {}}]}"#,
            0.0,
            4,
        )
        .unwrap_err();
        assert!(e.to_string().contains("REGISTER_JOB"), "{e}");
        let e = decode_reply(r#"{"now": 1, "events": []}"#, 2.0, 4).unwrap_err();
        assert!(e.to_string().contains("before"), "{e}");
        let e = decode_reply(
            r#"{"now": 1, "events": [{"timestamp": 1, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1"}}]}"#,
            0.0,
            4,
        )
        .unwrap_err();
        assert!(e.to_string().contains("'alloc'"), "{e}");
        // Batsim's order rules: no event after the message's now, events
        // in ascending time.
        let e = decode_reply(
            r#"{"now": 1, "events": [{"timestamp": 5, "type": "REJECT_JOB", "data": {"job_id": "w0!1"}}]}"#,
            0.0,
            4,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("5 is after the message's now (1)"),
            "{e}"
        );
        let e = decode_reply(
            r#"{"now": 5, "events": [{"timestamp": 4, "type": "REJECT_JOB", "data": {"job_id": "w0!1"}}, {"timestamp": 2, "type": "REJECT_JOB", "data": {"job_id": "w0!2"}}]}"#,
            0.0,
            4,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("2 is before the event before it (4)"),
            "{e}"
        );
    }

    #[test]
    fn simulation_begins_has_what_pybatsim_reads() {
        let e = simulation_begins(0.0, 4, "sdsc");
        let d = &e.data;
        for k in [
            "nb_resources",
            "nb_compute_resources",
            "nb_storage_resources",
            "compute_resources",
            "storage_resources",
            "config",
            "allow_compute_sharing",
            "allow_storage_sharing",
            "profiles",
            "workloads",
        ] {
            assert!(d.get(k).is_some(), "{k}");
        }
        for k in [
            "profiles-forwarded-on-submission",
            "dynamic-jobs-enabled",
            "dynamic-jobs-acknowledged",
            "forward-unknown-events",
        ] {
            assert!(d["config"].get(k).is_some(), "{k}");
        }
        assert_eq!(d["compute_resources"][3]["id"], 3);
    }
}
