//! Batsim JSON workloads (`nb_res`, `jobs`, `profiles`) as trace records,
//! which the preset then annotates with QoS like any SWF trace. Pure: the
//! caller reads the file.
//!
//! A job's run time comes from its profile: `delay` profiles give it in
//! seconds, `parallel_homogeneous` ones as `cpu` flops per node, turned
//! into seconds at `flops` per second (the reference node's speed). Times
//! are rounded to whole seconds (run times up, at least 1 s), as SWF has
//! them. Anything else is refused with the job or profile named.

use serde_json::Value;
use thiserror::Error;

use crate::swf::SwfRecord;

/// What is wrong with a Batsim workload.
#[derive(Debug, Error)]
pub enum BatsimWorkloadError {
    /// Not JSON.
    #[error("{file}: not JSON: {error}")]
    Json {
        /// The file.
        file: String,
        /// serde_json's word.
        error: serde_json::Error,
    },
    /// A field missing or wrong.
    #[error("{file}: {what}: {problem}")]
    Bad {
        /// The file.
        file: String,
        /// `job 'ID'`, `profile 'NAME'` or the top-level field.
        what: String,
        /// What is wrong.
        problem: String,
    },
}

/// A Batsim workload: its `nb_res` and its jobs as trace records, in
/// submission order.
#[derive(Debug, Clone)]
pub struct BatsimWorkload {
    /// Resources the workload was written for.
    pub nb_res: usize,
    /// One record per job.
    pub records: Vec<SwfRecord>,
}

/// The longest time a workload may state (as the SWF reader's bound).
const MAX_SECONDS: f64 = 1e10;

/// Parses the text of Batsim workload `file` (named in errors).
pub fn parse(file: &str, text: &str, flops: f64) -> Result<BatsimWorkload, BatsimWorkloadError> {
    let bad = |what: String, problem: String| BatsimWorkloadError::Bad {
        file: file.to_string(),
        what,
        problem,
    };
    let v: Value = serde_json::from_str(text).map_err(|error| BatsimWorkloadError::Json {
        file: file.to_string(),
        error,
    })?;
    let nb_res = v
        .get("nb_res")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .ok_or_else(|| bad("nb_res".into(), "missing or not a positive integer".into()))?
        as usize;
    let profiles = v
        .get("profiles")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("profiles".into(), "missing or not an object".into()))?;
    let jobs = v
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("jobs".into(), "missing or not a list".into()))?;
    if jobs.is_empty() {
        return Err(bad("jobs".into(), "is empty: nothing to run".into()));
    }
    let mut records = Vec::with_capacity(jobs.len());
    for (k, j) in jobs.iter().enumerate() {
        let id = match j.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad(format!("job {k}"), "no 'id'".into())),
        };
        let what = || format!("job '{id}'");
        let num = |field: &str| -> Result<f64, BatsimWorkloadError> {
            j.get(field)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| bad(what(), format!("'{field}' missing or not a number >= 0")))
        };
        let subtime = num("subtime")?;
        let res = num("res")?;
        if res < 1.0 || res.fract() != 0.0 {
            return Err(bad(
                what(),
                format!("'res' {res} is not a whole number >= 1"),
            ));
        }
        // Batsim's "no walltime" is -1 (or the key left out).
        let walltime = match j.get("walltime") {
            None => -1,
            Some(w) if w.as_f64() == Some(-1.0) => -1,
            Some(_) => {
                let w = num("walltime")?;
                if w > MAX_SECONDS {
                    return Err(bad(what(), format!("'walltime' {w} is beyond 10^10 s")));
                }
                w.ceil() as i64
            }
        };
        let pname = j
            .get("profile")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(what(), "'profile' missing or not a string".into()))?;
        let p = profiles
            .get(pname)
            .ok_or_else(|| bad(what(), format!("profile '{pname}' is not in 'profiles'")))?;
        let pwhat = || format!("profile '{pname}' (job '{id}')");
        let seconds = match p.get("type").and_then(Value::as_str) {
            Some("delay") => p
                .get("delay")
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| bad(pwhat(), "'delay' missing or not a number >= 0".into()))?,
            Some("parallel_homogeneous") => {
                let cpu = p
                    .get("cpu")
                    .and_then(Value::as_f64)
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| bad(pwhat(), "'cpu' missing or not a number >= 0".into()))?;
                cpu / flops
            }
            Some(other) => {
                return Err(bad(
                    pwhat(),
                    format!("type '{other}' is not supported (delay and parallel_homogeneous are)"),
                ))
            }
            None => return Err(bad(pwhat(), "no 'type'".into())),
        };
        if seconds > MAX_SECONDS || subtime > MAX_SECONDS {
            return Err(bad(
                what(),
                format!(
                    "{:e} s is beyond 10^10 s (317 years), as a trace's times may not be",
                    seconds.max(subtime)
                ),
            ));
        }
        let number = id
            .rsplit('!')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(k as u64 + 1);
        records.push(SwfRecord {
            line: k as u64 + 1,
            job_number: number,
            submit_time: subtime.round() as i64,
            wait_time: -1,
            run_time: (seconds.ceil() as i64).max(1),
            allocated_procs: res as i64,
            avg_cpu_time: -1.0,
            used_memory: -1.0,
            requested_procs: res as i64,
            requested_time: walltime,
            requested_memory: -1,
            status: 1,
            user_id: -1,
            group_id: -1,
            executable: -1,
            queue: -1,
            partition: -1,
            preceding_job: -1,
            think_time: -1,
        });
    }
    // Batsim does not require the jobs in order; the engine does.
    records.sort_by_key(|r| (r.submit_time, r.line));
    let mut seen = std::collections::HashSet::new();
    for r in &records {
        if !seen.insert(r.job_number) {
            return Err(bad(
                format!("job number {}", r.job_number),
                "appears twice (ids must be unique)".into(),
            ));
        }
    }
    Ok(BatsimWorkload { nb_res, records })
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &str = r#"{
        "nb_res": 4,
        "jobs": [
            {"id": "2", "subtime": 10, "res": 2, "walltime": 100, "profile": "p"},
            {"id": 1, "subtime": 0, "res": 1, "walltime": 50.5, "profile": "f"}
        ],
        "profiles": {
            "p": {"type": "delay", "delay": 20.2},
            "f": {"type": "parallel_homogeneous", "cpu": 3e10, "com": 0}
        }
    }"#;

    #[test]
    fn delay_and_parallel_homogeneous_profiles_become_run_times() {
        let w = parse("w.json", W, 1e9).unwrap();
        assert_eq!(w.nb_res, 4);
        // Sorted by submission; 3e10 flops at 1e9 flop/s = 30 s; 20.2 s
        // rounds up to 21; walltime 50.5 up to 51.
        let r: Vec<_> = w
            .records
            .iter()
            .map(|r| {
                (
                    r.job_number,
                    r.submit_time,
                    r.run_time,
                    r.requested_procs,
                    r.requested_time,
                )
            })
            .collect();
        assert_eq!(r, vec![(1, 0, 30, 1, 51), (2, 10, 21, 2, 100)]);
    }

    #[test]
    fn unsupported_profiles_and_bad_jobs_are_named() {
        let e = parse(
            "w.json",
            &W.replace("\"parallel_homogeneous\"", "\"smpi\""),
            1e9,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("w.json") && e.contains("profile 'f'") && e.contains("smpi"),
            "{e}"
        );
        let e = parse("w.json", &W.replace("\"res\": 2", "\"res\": 0"), 1e9)
            .unwrap_err()
            .to_string();
        assert!(e.contains("job '2'") && e.contains("res"), "{e}");
        let e = parse(
            "w.json",
            &W.replace("\"profile\": \"p\"", "\"profile\": \"q\""),
            1e9,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("profile 'q' is not in"), "{e}");
        let one = |job: &str, delay: &str| {
            format!(
                r#"{{"nb_res": 4, "jobs": [{job}], "profiles": {{"p": {{"type": "delay", "delay": {delay}}}}}}}"#
            )
        };
        // Nothing to run.
        let e = parse(
            "w.json",
            r#"{"nb_res": 4, "jobs": [], "profiles": {}}"#,
            1e9,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "w.json: jobs: is empty: nothing to run");
        // Times past any trace's.
        let e = parse(
            "w.json",
            &one(
                r#"{"id": 1, "subtime": 0, "res": 1, "profile": "p"}"#,
                "1e300",
            ),
            1e9,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("job '1': 1e300 s is beyond 10^10 s"), "{e}");
        // Batsim's "no walltime", -1, is no walltime.
        let w = parse(
            "w.json",
            &one(
                r#"{"id": 1, "subtime": 0, "res": 1, "walltime": -1, "profile": "p"}"#,
                "10",
            ),
            1e9,
        )
        .unwrap();
        assert_eq!(w.records[0].requested_time, -1);
    }
}
