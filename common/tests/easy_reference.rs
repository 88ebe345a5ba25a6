//! FCFS-BF (EASY backfilling) against an independent, deliberately
//! straightforward classic EASY written here from the textbook rule
//! (Mu'alem & Feitelson 2001), on the last 5000 SDSC SP2 jobs minus those
//! that never ran, with estimates max(requested, run) and no deadline in
//! effect. Every job must start at the same time in both.
//!
//! The reference shares nothing with the production code but the meaning
//! of the SWF fields: it reads the trace itself, counts free processors
//! instead of allocating nodes, works in whole seconds, and finds the
//! shadow time by trying every running job's estimated end (O(n^2)).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use common::experiment::Experiment;
use common::workload;

const NODES: i64 = 128;
const WINDOW: usize = 5000;

fn sdsc() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(
        p.is_file(),
        "the SDSC SP2 trace is missing at {} (tests read ../shared/traces beside the project)",
        p.display()
    );
    p
}

#[derive(Debug, Clone)]
struct RefJob {
    id: u64,
    submit: i64,
    procs: i64,
    est: i64,
    run: i64,
}

/// The last `WINDOW` job lines of the trace, never-ran ones left out.
fn reference_jobs() -> Vec<RefJob> {
    let f = std::fs::File::open(sdsc()).unwrap();
    let lines: Vec<String> = BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .map(Result::unwrap)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with(';'))
        .collect();
    let mut jobs = Vec::new();
    for l in &lines[lines.len() - WINDOW..] {
        let v: Vec<i64> = l
            .split_whitespace()
            .map(|x| x.parse::<f64>().unwrap() as i64)
            .collect();
        let (id, submit, run, alloc, req_procs, req_time) = (v[0], v[1], v[3], v[4], v[7], v[8]);
        if run <= 0 {
            continue;
        }
        let procs = if req_procs > 0 {
            req_procs
        } else if alloc > 0 {
            alloc
        } else {
            1
        };
        jobs.push(RefJob {
            id: id as u64,
            submit,
            procs,
            est: req_time.max(run),
            run,
        });
    }
    // FCFS: by submit time, ties in trace order.
    jobs.sort_by_key(|j| j.submit);
    jobs
}

struct Running {
    end: i64,
    est_end: i64,
    procs: i64,
}

/// Classic EASY: at every instant with a completion or an arrival, after
/// both, start queue heads while they fit; then give the blocked head a
/// reservation at the shadow time (the earliest estimated end by which
/// enough processors are free, counting every job ending at or before it)
/// and backfill, in queue order, any job that fits now and either ends by
/// the shadow time or uses only the extra processors (free at the shadow
/// time beyond the head's). Returns each job's start time.
fn reference_easy(jobs: &[RefJob]) -> HashMap<u64, i64> {
    let mut start = HashMap::new();
    let mut running: Vec<Running> = Vec::new();
    let mut queue: Vec<usize> = Vec::new();
    let mut free = NODES;
    let mut next = 0;
    loop {
        let t_arr = jobs.get(next).map(|j| j.submit);
        let t_end = running.iter().map(|r| r.end).min();
        let now = match (t_arr, t_end) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(e)) => e,
            (Some(a), Some(e)) => a.min(e),
        };
        running.retain(|r| {
            if r.end <= now {
                free += r.procs;
                false
            } else {
                true
            }
        });
        while next < jobs.len() && jobs[next].submit <= now {
            if jobs[next].procs <= NODES {
                queue.push(next);
            }
            next += 1;
        }
        let mut launch = |k: usize, free: &mut i64, running: &mut Vec<Running>| {
            let j = &jobs[k];
            *free -= j.procs;
            running.push(Running {
                end: now + j.run,
                est_end: now + j.est,
                procs: j.procs,
            });
            start.insert(j.id, now);
        };
        while let Some(&h) = queue.first() {
            if jobs[h].procs > free {
                break;
            }
            queue.remove(0);
            launch(h, &mut free, &mut running);
        }
        let Some(&h) = queue.first() else {
            continue;
        };
        let need = jobs[h].procs;
        // Processors free at time t by the estimates.
        let free_at = |t: i64, running: &[Running], free: i64| {
            free + running
                .iter()
                .filter(|r| r.est_end.max(now) <= t)
                .map(|r| r.procs)
                .sum::<i64>()
        };
        let shadow = running
            .iter()
            .map(|r| r.est_end.max(now))
            .filter(|&t| free_at(t, &running, free) >= need)
            .min()
            .expect("a head that fits the machine gets a shadow time");
        let mut extra = free_at(shadow, &running, free) - need;
        let mut i = 1;
        while i < queue.len() {
            let k = queue[i];
            let j = &jobs[k];
            let ends_by_shadow = now + j.est <= shadow;
            if j.procs <= free && (ends_by_shadow || j.procs <= extra) {
                if !ends_by_shadow {
                    extra -= j.procs;
                }
                queue.remove(i);
                launch(k, &mut free, &mut running);
            } else {
                i += 1;
            }
        }
    }
    start
}

#[test]
fn fcfs_bf_starts_every_sdsc_job_when_classic_easy_does() {
    let ref_jobs = reference_jobs();
    assert_eq!(
        ref_jobs.len(),
        4531,
        "last 5000 SDSC jobs minus 469 never-ran"
    );
    let want = reference_easy(&ref_jobs);

    let mut e = Experiment::preset("libra-plus-dollar").unwrap();
    e.set_all([
        "drop_never_ran=true",
        "inaccuracy_form=toward-trace-at-least-actual",
        "inaccuracy=1",
        "arrival_delay_factor=1",
        // No deadline in effect: 1e9 x the estimate (>= 31 years).
        "deadline_basis=estimate",
        "deadline_estimate_factor=1e9",
    ])
    .unwrap();
    let wl = workload::build(&e.params, Some(&sdsc())).unwrap();
    assert_eq!(wl.jobs.len(), ref_jobs.len());
    let (outcome, _) = e.run_policy("fcfs-bf", &wl).unwrap();
    // Production times are relative to the window's first line.
    let origin = ref_jobs.iter().map(|j| j.submit).min().unwrap();
    let window_first = {
        let f = std::fs::File::open(sdsc()).unwrap();
        let lines: Vec<String> = BufReader::new(flate2::read::GzDecoder::new(f))
            .lines()
            .map(Result::unwrap)
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with(';'))
            .collect();
        lines[lines.len() - WINDOW]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    assert!(window_first <= origin);
    let mut differ = Vec::new();
    for r in &outcome.records {
        let got = r.start.map(|s| s + window_first as f64);
        let exp = want.get(&r.id).map(|&s| s as f64);
        if got != exp {
            differ.push((r.id, got, exp));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} jobs start at a different time than classic EASY (job, fcfs-bf, reference), first ones: {:?}",
        differ.len(),
        outcome.records.len(),
        &differ[..differ.len().min(10)]
    );
    assert_eq!(want.len(), outcome.records.len(), "every job ran");
}
