//! The SWF reader against real traces and the hand-made sample.
//!
//! The expected numbers come from `shared/traces/README.md`, computed
//! independently of this code; they are never adjusted to match its output.
//! Each expected value is written as printed there, and the tolerance is half
//! its last printed digit. The traces live outside the project
//! (`../shared/traces/` from the project root); a missing trace is a failure,
//! not a skip.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::swf::{read_last, SwfReader, SwfRecord, WindowStats};

const SDSC: &str = "SDSC-SP2-1998-4.2-cln.swf.gz";
const CTC: &str = "CTC-SP2-1996-3.1-cln.swf.gz";

fn trace(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces")
        .join(name);
    assert!(
        path.is_file(),
        "trace {name} not found at {}: the tests need the shared traces \
         (../shared/traces/ relative to the project root)",
        path.display()
    );
    path
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.swf")
}

/// Asserts `actual` equals `expected` (as printed, e.g. "1968.9") to within
/// half of its last printed digit.
#[track_caller]
fn approx(what: &str, actual: Option<f64>, expected: &str) {
    let actual = actual.unwrap_or_else(|| panic!("{what}: no value, expected {expected}"));
    let decimals = expected.split_once('.').map_or(0, |(_, d)| d.len());
    let tol = 0.5 * 10f64.powi(-(decimals as i32));
    let want: f64 = expected.parse().unwrap();
    assert!(
        (actual - want).abs() <= tol + 1e-9,
        "{what}: got {actual}, expected {expected} (±{tol})"
    );
}

fn status(pairs: &[(i64, usize)]) -> BTreeMap<i64, usize> {
    pairs.iter().copied().collect()
}

/// One row of a README statistics table.
struct Row {
    jobs: usize,
    inter_arrival: &'static str,
    run_raw: &'static str,
    run_valid: &'static str,
    run_valid_n: usize,
    median_run: &'static str,
    alloc: &'static str,
    req_procs: Option<&'static str>,
    req_time_present: usize,
    ratio: [&'static str; 3],
    overrun: usize,
    status: &'static [(i64, usize)],
}

#[track_caller]
fn check(window: &str, s: &WindowStats, row: &Row) {
    let w = |what: &str| format!("{window}: {what}");
    assert_eq!(s.jobs, row.jobs, "{}", w("jobs"));
    approx(&w("inter-arrival"), s.mean_inter_arrival, row.inter_arrival);
    approx(&w("mean run raw"), s.mean_run_raw, row.run_raw);
    approx(&w("mean run valid"), s.mean_run_valid, row.run_valid);
    assert_eq!(s.run_valid, row.run_valid_n, "{}", w("valid run count"));
    approx(&w("median run"), s.median_run_valid, row.median_run);
    approx(&w("mean alloc procs"), s.mean_alloc_procs, row.alloc);
    match row.req_procs {
        Some(expected) => approx(&w("mean req procs"), s.mean_req_procs, expected),
        None => assert_eq!(s.mean_req_procs, None, "{}", w("mean req procs")),
    }
    assert_eq!(
        s.req_time_present,
        row.req_time_present,
        "{}",
        w("req time present")
    );
    approx(&w("req/actual mean"), s.ratio_mean, row.ratio[0]);
    approx(&w("req/actual median"), s.ratio_median, row.ratio[1]);
    approx(&w("req/actual sum"), s.ratio_sum, row.ratio[2]);
    assert_eq!(s.overrun, row.overrun, "{}", w("overrun"));
    assert_eq!(
        s.status_counts,
        status(row.status),
        "{}",
        w("status counts")
    );
}

fn last(records: &[SwfRecord], n: usize) -> &[SwfRecord] {
    &records[records.len() - n..]
}

#[test]
fn sdsc_whole_file() {
    let mut reader = SwfReader::open(trace(SDSC)).unwrap();
    assert!(reader.is_compressed());
    // The header is complete before the first record is read.
    let h = reader.header().clone();
    assert_eq!(h.max_nodes(), Some(128));
    assert_eq!(h.max_procs(), Some(128));
    assert_eq!(h.max_records(), Some(59_715));
    assert_eq!(h.unix_start_time(), Some(893_466_664));
    assert_eq!(h.get("MaxJobs"), Some("73496"));
    assert_eq!(h.get("TimeZoneString"), Some("US/Pacific"));
    assert_eq!(h.fields.iter().filter(|(k, _)| k == "Queue").count(), 7);
    assert_eq!(h.comments.len(), 48);

    let records: Vec<SwfRecord> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(records.len(), 59_715);
    assert_eq!(records[0].job_number, 11);
    assert_eq!(records[0].line, 49);
    assert_eq!(records.last().unwrap().job_number, 73_496);
    assert!(records
        .windows(2)
        .all(|w| w[0].submit_time <= w[1].submit_time));
    assert_eq!(reader.header(), &h, "no comments after the header");

    check(
        "SDSC all",
        &WindowStats::compute(&records),
        &Row {
            jobs: 59_715,
            inter_arrival: "1055.3",
            run_raw: "6687.4",
            run_valid: "7389.2",
            run_valid_n: 54_044,
            median_run: "358",
            alloc: "12.29",
            req_procs: Some("13.75"),
            req_time_present: 59_649,
            ratio: ["76.5", "6.38", "2.26"],
            overrun: 4_134,
            status: &[(1, 43_117), (5, 16_598)],
        },
    );
    assert_eq!(WindowStats::compute(&records).alloc_procs_count, 54_046);
}

#[test]
fn sdsc_last_windows() {
    let (header, w5000) = read_last(trace(SDSC), 5000).unwrap();
    assert_eq!(header.max_records(), Some(59_715));
    assert_eq!(w5000.len(), 5000);
    assert_eq!(w5000[0].job_number, 68_497);
    assert_eq!(w5000[4999].job_number, 73_496);
    assert_eq!(w5000[0].submit_time, 53_739_882);
    assert_eq!(w5000[4999].submit_time, 63_582_293);
    assert_eq!(last(&w5000, 3000)[0].job_number, 70_497);
    assert_eq!(last(&w5000, 1000)[0].job_number, 72_497);

    // A shorter window read on its own is the tail of the longer one.
    let (_, w1000) = read_last(trace(SDSC), 1000).unwrap();
    assert_eq!(w1000, last(&w5000, 1000));

    let rows = [
        (
            5000,
            Row {
                jobs: 5000,
                inter_arrival: "1968.9",
                run_raw: "8670.9",
                run_valid: "9562.2",
                run_valid_n: 4534,
                median_run: "630.5",
                alloc: "16.46",
                req_procs: Some("16.91"),
                req_time_present: 5000,
                ratio: ["63.6", "4.19", "2.19"],
                overrun: 396,
                status: &[(1, 3519), (5, 1481)],
            },
        ),
        (
            3000,
            Row {
                jobs: 3000,
                inter_arrival: "2131.1",
                run_raw: "8880.1",
                run_valid: "9776.4",
                run_valid_n: 2725,
                median_run: "766",
                alloc: "17.04",
                req_procs: Some("17.49"),
                req_time_present: 3000,
                ratio: ["71.2", "3.54", "2.07"],
                overrun: 242,
                status: &[(1, 2030), (5, 970)],
            },
        ),
        (
            1000,
            Row {
                jobs: 1000,
                inter_arrival: "2276.3",
                run_raw: "10609.8",
                run_valid: "11815.0",
                run_valid_n: 898,
                median_run: "2928.5",
                alloc: "17.53",
                req_procs: Some("18.33"),
                req_time_present: 1000,
                ratio: ["89.0", "2.58", "2.05"],
                overrun: 89,
                status: &[(1, 649), (5, 351)],
            },
        ),
    ];
    // (largest requested procs, largest requested time, never started)
    let extra = [(128, 360_000, 466), (128, 360_000, 275), (118, 64_800, 102)];
    for ((n, row), (procs, time, never_started)) in rows.iter().zip(extra) {
        let s = WindowStats::compute(last(&w5000, *n));
        let name = format!("SDSC last {n}");
        check(&name, &s, row);
        assert_eq!(s.max_req_procs, Some(procs), "{name}: max requested procs");
        assert_eq!(s.max_req_time, Some(time), "{name}: max requested time");
        // Cancelled before they started: run time and allocation both -1.
        let window = last(&w5000, *n);
        let never = window
            .iter()
            .filter(|r| r.run_time == -1 && r.allocated_procs == -1)
            .count();
        assert_eq!(never, never_started, "{name}: never started");
        assert!(window
            .iter()
            .filter(|r| r.run_time == -1)
            .all(|r| r.status == 5 && r.requested_procs > 0 && r.requested_time > 0));
    }
}

#[test]
fn sdsc_completed_jobs_only() {
    let (_, w5000) = read_last(trace(SDSC), 5000).unwrap();
    let expected = [
        (5000, 3519, "8407", "4.62", "2.23"),
        (3000, 2030, "9170", "3.70", "1.91"),
        (1000, 649, "12328", "2.45", "1.82"),
    ];
    for (n, jobs, run, median, sum) in expected {
        let done: Vec<SwfRecord> = last(&w5000, n)
            .iter()
            .filter(|r| r.status == 1)
            .cloned()
            .collect();
        let s = WindowStats::compute(&done);
        assert_eq!(s.jobs, jobs, "last {n}, status 1: jobs");
        approx(
            &format!("last {n}, status 1: mean run"),
            s.mean_run_raw,
            run,
        );
        approx(
            &format!("last {n}, status 1: ratio median"),
            s.ratio_median,
            median,
        );
        approx(&format!("last {n}, status 1: ratio sum"), s.ratio_sum, sum);
    }
}

#[test]
fn ctc_trace() {
    let (header, w5000) = read_last(trace(CTC), 5000).unwrap();
    assert_eq!(header.max_procs(), Some(338));
    assert_eq!(header.unix_start_time(), Some(835_823_160));

    let mut lines = 0usize;
    for rec in SwfReader::open(trace(CTC)).unwrap() {
        let rec = rec.unwrap();
        assert_eq!(rec.requested_procs, -1, "line {}: field 8", rec.line);
        assert!(rec.run_time >= 0, "line {}: run time", rec.line);
        lines += 1;
    }
    assert_eq!(lines, 77_222);

    let s = WindowStats::compute(&w5000);
    check(
        "CTC last 5000",
        &s,
        &Row {
            jobs: 5000,
            inter_arrival: "437.4",
            run_raw: "12455.1",
            run_valid: "12455.1",
            run_valid_n: 5000,
            median_run: "2329.5",
            alloc: "13.37",
            req_procs: None,
            req_time_present: 5000,
            ratio: ["452.0", "2.62", "2.18"],
            overrun: 503,
            status: &[(0, 1411), (1, 3589)],
        },
    );
    assert_eq!(s.req_procs_count, 0);
    assert_eq!(s.max_req_procs, None);
}

/// The hand-made sample; expected values worked out by hand from the file:
/// runs 100 300 50 -1 600 10 700 0 200 400 120 1000.
#[test]
fn sample_file() {
    let reader = SwfReader::open(sample()).unwrap();
    assert!(!reader.is_compressed());
    assert_eq!(reader.header().max_nodes(), Some(8));
    assert_eq!(reader.header().max_procs(), Some(16));
    assert_eq!(reader.header().max_records(), Some(12));
    assert_eq!(reader.header().unix_start_time(), Some(1_000_000_000));
    let records: Vec<SwfRecord> = reader.map(Result::unwrap).collect();
    assert_eq!(records.len(), 12);
    assert_eq!(records[0].line, 12);
    assert_eq!(records[0].avg_cpu_time, 95.5);
    assert_eq!(records[5].avg_cpu_time, 9.25);

    let s = WindowStats::compute(&records);
    assert_eq!(s.jobs, 12);
    assert_eq!((s.first_job, s.last_job), (Some(1), Some(12)));
    // (1320 - 0) / 11
    assert_eq!(s.mean_inter_arrival, Some(120.0));
    // sum 3479 over 12 lines, the -1 included
    assert_eq!(s.mean_run_raw, Some(3479.0 / 12.0));
    // 11 valid, sum 3480; sorted 0 10 50 100 120 [200] 300 400 600 700 1000
    assert_eq!(s.run_valid, 11);
    assert_eq!(s.mean_run_valid, Some(3480.0 / 11.0));
    assert_eq!(s.median_run_valid, Some(200.0));
    // field 5 > 0 on all but job 4: 49 / 11; field 8 on all 12: 57 / 12
    assert_eq!(s.alloc_procs_count, 11);
    assert_eq!(s.mean_alloc_procs, Some(49.0 / 11.0));
    assert_eq!(s.req_procs_count, 12);
    assert_eq!(s.mean_req_procs, Some(4.75));
    assert_eq!(s.req_time_present, 11);
    // Ratios on jobs 1 2 3 5 6 7 10 11 12 (not 4: run -1, 8: run 0, 9: req -1):
    // 4 2 2 1.5 6 5/7 4 2 2; sorted median 2; Σreq 6400 / Σrun 3280
    assert_eq!(s.ratio_jobs, 9);
    let mean = (4.0 + 2.0 + 2.0 + 1.5 + 6.0 + 500.0 / 700.0 + 4.0 + 2.0 + 2.0) / 9.0;
    assert!((s.ratio_mean.unwrap() - mean).abs() < 1e-12);
    assert_eq!(s.ratio_median, Some(2.0));
    assert_eq!(s.ratio_sum, Some(6400.0 / 3280.0));
    // job 7: 700 > 500
    assert_eq!(s.overrun, 1);
    assert_eq!(s.status_counts, status(&[(0, 1), (1, 9), (5, 2)]));
    assert_eq!(s.max_req_procs, Some(16));
    assert_eq!(s.max_req_time, Some(2000));

    let (_, tail) = read_last(sample(), 3).unwrap();
    let ids: Vec<u64> = tail.iter().map(|r| r.job_number).collect();
    assert_eq!(ids, [10, 11, 12]);
}
