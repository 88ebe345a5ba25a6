//! Statistics of a window of SWF records ([`WindowStats`]), with the
//! conventions of `shared/traces/README.md`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::swf::SwfRecord;

/// Summary of a window of job lines, with the conventions of
/// `shared/traces/README.md` (so the published figures can be reproduced):
/// every line counts as a job (cancelled ones included), and each statistic
/// says which lines it uses. `None` means the statistic has no lines to use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowStats {
    /// Number of job lines.
    pub jobs: usize,
    /// Job number of the first line of the window.
    pub first_job: Option<u64>,
    /// Job number of the last line of the window.
    pub last_job: Option<u64>,
    /// (last submit − first submit) / (jobs − 1), in file order: the mean of
    /// the gaps between consecutive submits.
    pub mean_inter_arrival: Option<f64>,
    /// Mean of field 4 over all lines, `-1` values included as `-1` (the
    /// convention under which the papers' figures match).
    pub mean_run_raw: Option<f64>,
    /// Lines with field 4 ≥ 0.
    pub run_valid: usize,
    /// Mean of field 4 over the `run_valid` lines.
    pub mean_run_valid: Option<f64>,
    /// Median of field 4 over the `run_valid` lines; for an even count, the
    /// mean of the two middle values.
    pub median_run_valid: Option<f64>,
    /// Lines with field 5 (allocated processors) > 0.
    pub alloc_procs_count: usize,
    /// Mean of field 5 over those lines.
    pub mean_alloc_procs: Option<f64>,
    /// Lines with field 8 (requested processors) > 0.
    pub req_procs_count: usize,
    /// Mean of field 8 over those lines.
    pub mean_req_procs: Option<f64>,
    /// Lines with field 9 (requested time) present, i.e. not `-1`.
    pub req_time_present: usize,
    /// Lines with both field 9 and field 4 > 0: the ones the ratios use.
    pub ratio_jobs: usize,
    /// Mean of requested time / run time per job.
    pub ratio_mean: Option<f64>,
    /// Median of requested time / run time per job (even count: mean of the
    /// two middle values).
    pub ratio_median: Option<f64>,
    /// Σ requested time / Σ run time over the ratio lines.
    pub ratio_sum: Option<f64>,
    /// Lines whose run time (≥ 0) exceeds the requested time (present).
    pub overrun: usize,
    /// Number of lines for each field 11 (status) value.
    pub status_counts: BTreeMap<i64, usize>,
    /// Largest field 8 over lines where it is > 0.
    pub max_req_procs: Option<i64>,
    /// Largest field 9 over lines where it is > 0.
    pub max_req_time: Option<i64>,
}

fn mean_of(sum: i128, count: usize) -> Option<f64> {
    (count > 0).then(|| sum as f64 / count as f64)
}

/// Median of unsorted values; even count: mean of the two middle values.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

impl WindowStats {
    /// Computes the statistics of `records`, taken in the given (file) order.
    pub fn compute(records: &[SwfRecord]) -> Self {
        let jobs = records.len();
        // Sums are exact integers (i128 cannot overflow on any trace) and
        // divided once, so results do not depend on summation order.
        let mut run_raw_sum: i128 = 0;
        let mut run_valid_sum: i128 = 0;
        let mut valid_runs = Vec::with_capacity(jobs);
        let mut alloc_sum: i128 = 0;
        let mut alloc_procs_count = 0;
        let mut req_procs_sum: i128 = 0;
        let mut req_procs_count = 0;
        let mut req_time_present = 0;
        let mut ratios = Vec::with_capacity(jobs);
        let mut ratio_req_sum: i128 = 0;
        let mut ratio_run_sum: i128 = 0;
        let mut overrun = 0;
        let mut status_counts = BTreeMap::new();
        let mut max_req_procs = None;
        let mut max_req_time = None;

        for r in records {
            run_raw_sum += i128::from(r.run_time);
            if r.run_time >= 0 {
                run_valid_sum += i128::from(r.run_time);
                valid_runs.push(r.run_time as f64);
            }
            if r.allocated_procs > 0 {
                alloc_sum += i128::from(r.allocated_procs);
                alloc_procs_count += 1;
            }
            if r.requested_procs > 0 {
                req_procs_sum += i128::from(r.requested_procs);
                req_procs_count += 1;
                max_req_procs = max_req_procs.max(Some(r.requested_procs));
            }
            if r.requested_time != -1 {
                req_time_present += 1;
                if r.run_time >= 0 && r.run_time > r.requested_time {
                    overrun += 1;
                }
            }
            if r.requested_time > 0 {
                max_req_time = max_req_time.max(Some(r.requested_time));
                if r.run_time > 0 {
                    ratios.push(r.requested_time as f64 / r.run_time as f64);
                    ratio_req_sum += i128::from(r.requested_time);
                    ratio_run_sum += i128::from(r.run_time);
                }
            }
            *status_counts.entry(r.status).or_insert(0) += 1;
        }

        let mean_inter_arrival = match records {
            [first, .., last] => {
                Some((last.submit_time - first.submit_time) as f64 / (jobs - 1) as f64)
            }
            _ => None,
        };
        let ratio_jobs = ratios.len();
        WindowStats {
            jobs,
            first_job: records.first().map(|r| r.job_number),
            last_job: records.last().map(|r| r.job_number),
            mean_inter_arrival,
            mean_run_raw: mean_of(run_raw_sum, jobs),
            run_valid: valid_runs.len(),
            mean_run_valid: mean_of(run_valid_sum, valid_runs.len()),
            median_run_valid: median(&mut valid_runs),
            alloc_procs_count,
            mean_alloc_procs: mean_of(alloc_sum, alloc_procs_count),
            req_procs_count,
            mean_req_procs: mean_of(req_procs_sum, req_procs_count),
            req_time_present,
            ratio_jobs,
            ratio_mean: (ratio_jobs > 0).then(|| ratios.iter().sum::<f64>() / ratio_jobs as f64),
            ratio_median: median(&mut ratios),
            ratio_sum: (ratio_run_sum > 0).then(|| ratio_req_sum as f64 / ratio_run_sum as f64),
            overrun,
            status_counts,
            max_req_procs,
            max_req_time,
        }
    }
}

/// Formats an optional statistic with `decimals` places, or `n/a`.
struct Opt<T>(Option<T>, usize);

impl<T: fmt::Display> fmt::Display for Opt<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => write!(f, "{:.*}", self.1, v),
            None => f.write_str("n/a"),
        }
    }
}

impl fmt::Display for WindowStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self;
        write!(f, "{:<28}{}", "jobs", s.jobs)?;
        if let (Some(a), Some(b)) = (s.first_job, s.last_job) {
            write!(f, " (job ids {a}..{b})")?;
        }
        writeln!(f)?;
        let rows: [(&str, String); 11] = [
            (
                "mean inter-arrival (s)",
                Opt(s.mean_inter_arrival, 1).to_string(),
            ),
            ("mean run raw (s)", Opt(s.mean_run_raw, 1).to_string()),
            (
                "mean run valid (s) [n]",
                format!("{} [{}]", Opt(s.mean_run_valid, 1), s.run_valid),
            ),
            (
                "median run valid (s)",
                Opt(s.median_run_valid, 1).to_string(),
            ),
            (
                "mean alloc procs f5 [n]",
                format!("{} [{}]", Opt(s.mean_alloc_procs, 2), s.alloc_procs_count),
            ),
            (
                "mean req procs f8 [n]",
                format!("{} [{}]", Opt(s.mean_req_procs, 2), s.req_procs_count),
            ),
            ("req time present", s.req_time_present.to_string()),
            (
                "req/actual mean/median/sum",
                format!(
                    "{} / {} / {} [{}]",
                    Opt(s.ratio_mean, 2),
                    Opt(s.ratio_median, 2),
                    Opt(s.ratio_sum, 2),
                    s.ratio_jobs
                ),
            ),
            ("overrun", s.overrun.to_string()),
            (
                "status counts",
                s.status_counts
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            (
                "max req procs / time (s)",
                format!("{} / {}", Opt(s.max_req_procs, 0), Opt(s.max_req_time, 0)),
            ),
        ];
        for (label, value) in rows {
            writeln!(f, "{label:<28}{value}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io;

    use super::*;
    use crate::swf::SwfReader;

    /// One job line from the fields the statistics use.
    fn job(
        id: u64,
        submit: i64,
        run: i64,
        alloc: i64,
        req_procs: i64,
        req_time: i64,
        status: i64,
    ) -> SwfRecord {
        let mut fields = vec!["1".to_string(); crate::swf::SWF_FIELD_COUNT];
        fields[0] = id.to_string();
        let line = fields.join(" ");
        let mut r = SwfReader::from_reader("trace.swf", io::Cursor::new(line.into_bytes()))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        r.submit_time = submit;
        r.run_time = run;
        r.allocated_procs = alloc;
        r.requested_procs = req_procs;
        r.requested_time = req_time;
        r.status = status;
        r
    }

    #[test]
    fn window_stats_by_hand() {
        let recs = [
            job(1, 0, 10, 1, 1, 20, 1),
            job(2, 100, 30, 2, 2, 30, 1),
            job(3, 150, -1, -1, 4, 60, 5),
            job(4, 400, 20, 1, 1, 10, 1),
            job(5, 600, 50, 3, -1, -1, 0),
        ];
        let s = WindowStats::compute(&recs);
        assert_eq!(s.jobs, 5);
        assert_eq!((s.first_job, s.last_job), (Some(1), Some(5)));
        // (600 - 0) / 4
        assert_eq!(s.mean_inter_arrival, Some(150.0));
        // (10 + 30 - 1 + 20 + 50) / 5 = 109 / 5
        assert_eq!(s.mean_run_raw, Some(21.8));
        // valid 10 30 20 50: mean 110 / 4, median of 10 [20 30] 50 = 25
        assert_eq!(s.run_valid, 4);
        assert_eq!(s.mean_run_valid, Some(27.5));
        assert_eq!(s.median_run_valid, Some(25.0));
        // alloc 1 2 1 3 = 7 / 4; requested 1 2 4 1 = 8 / 4
        assert_eq!((s.alloc_procs_count, s.mean_alloc_procs), (4, Some(1.75)));
        assert_eq!((s.req_procs_count, s.mean_req_procs), (4, Some(2.0)));
        assert_eq!(s.req_time_present, 4);
        // ratios on jobs 1, 2, 4: 20/10 = 2, 30/30 = 1, 10/20 = 0.5;
        // mean 3.5 / 3, median 1, Σ 60 / 60
        assert_eq!(s.ratio_jobs, 3);
        assert_eq!(s.ratio_mean, Some(3.5 / 3.0));
        assert_eq!(s.ratio_median, Some(1.0));
        assert_eq!(s.ratio_sum, Some(1.0));
        // job 4: 20 > 10 (job 5 has no request, job 3 never ran)
        assert_eq!(s.overrun, 1);
        assert_eq!(s.status_counts, BTreeMap::from([(0, 1), (1, 3), (5, 1)]));
        assert_eq!((s.max_req_procs, s.max_req_time), (Some(4), Some(60)));

        let table = s.to_string();
        assert!(table.contains("(job ids 1..5)"), "{table}");
        assert!(table.contains("27.5 [4]"), "{table}");
        assert!(table.contains("1.17 / 1.00 / 1.00 [3]"), "{table}");
        assert!(table.contains("0: 1, 1: 3, 5: 1"), "{table}");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["overrun"], 1);
        assert_eq!(json["status_counts"]["5"], 1);
    }

    #[test]
    fn window_stats_of_nothing_and_of_one_job() {
        let s = WindowStats::compute(&[]);
        assert_eq!(s.jobs, 0);
        assert_eq!(s.mean_inter_arrival, None);
        assert_eq!(s.mean_run_raw, None);
        assert_eq!(s.median_run_valid, None);
        assert_eq!(s.ratio_sum, None);
        assert!(s.to_string().contains("n/a"));

        let s = WindowStats::compute(&[job(7, 5, -1, -1, -1, -1, 5)]);
        assert_eq!(s.mean_inter_arrival, None, "no gap in a single job");
        assert_eq!(s.mean_run_raw, Some(-1.0));
        assert_eq!((s.run_valid, s.mean_run_valid), (0, None));
        assert_eq!((s.req_time_present, s.overrun), (0, 0));
        assert_eq!((s.max_req_procs, s.max_req_time), (None, None));
    }
}
