//! The `libratory` binary as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The configuration the live benches give their manager.
#[path = "../benches/support/config.rs"]
mod bench_config;

fn libratory(args: &[&str], cwd: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_libratory"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run libratory");
    // Dump everything on failure, so a red test explains itself.
    if !out.status.success() {
        eprintln!(
            "libratory {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

fn sdsc() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(p.is_file(), "trace missing at {}", p.display());
    p
}

#[test]
fn simulate_without_arguments_shows_results_and_writes_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = libratory(&["simulate"], dir.path());
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("seed 20061995"), "{stdout}");
    // How the allocator is set up is no news to a user.
    assert!(!stdout.contains("heap:"), "{stdout}");
    assert!(
        stdout.contains("libra ") && stdout.contains("fifo "),
        "{stdout}"
    );
    let run = dir.path().join("runs/libra-seed20061995");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["seed"], 20061995);
    let policies = summary["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 2);
    for p in policies {
        for key in [
            "submitted",
            "accepted",
            "deadlines_met",
            "qos_satisfaction",
            "profitability",
            "pct_deadlines_met",
            "avg_slowdown",
            "utility",
            "rejected_by_reason",
            "per_class",
        ] {
            assert!(p.get(key).is_some(), "summary lacks {key}: {p}");
        }
        assert_eq!(p["submitted"], 100);
    }
    for name in ["libra", "fifo"] {
        let csv = std::fs::read_to_string(run.join(format!("jobs-{name}.csv"))).unwrap();
        assert_eq!(csv.lines().count(), 101, "header + one row per job");
        assert!(csv.starts_with("job_id,class,submit,estimate,actual,processors,deadline"));
    }
}

#[test]
fn same_seed_same_files_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sdsc();
    let t = trace.to_str().unwrap();
    for out in ["a", "b"] {
        let o = libratory(
            &[
                "simulate",
                "--trace",
                t,
                "--preset",
                "libra-plus-dollar",
                "--policies",
                "libra,libra-plus-dollar,fcfs-bf",
                "--set",
                "jobs=800",
                "--set",
                "beta=0.3",
                "--seed",
                "7",
                "--out",
                out,
            ],
            dir.path(),
        );
        assert!(o.status.success());
    }
    for f in [
        "summary.json",
        "jobs-libra.csv",
        "jobs-libra-plus-dollar.csv",
        "jobs-fcfs-bf.csv",
    ] {
        let a = std::fs::read(dir.path().join("a").join(f)).unwrap();
        let b = std::fs::read(dir.path().join("b").join(f)).unwrap();
        assert!(a == b, "{f} differs between two runs with the same seed");
    }
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("a/summary.json")).unwrap()).unwrap();
    assert_eq!(s["seed"], 7);
    assert_eq!(s["experiment"]["policy"]["beta"], 0.3);
    assert_eq!(s["workload"]["jobs"], 800);
}

#[test]
fn outputs_chooses_the_files_and_changes_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["simulate", "--preset", "libra", "--policies", "libra,fifo"];
    let all = libratory(&[&base[..], &["--out", "all"]].concat(), dir.path());
    assert!(all.status.success());
    let some = libratory(
        &[&base[..], &["--outputs", "swf,jobs-csv", "--out", "some"]].concat(),
        dir.path(),
    );
    assert!(some.status.success());
    let mut files: Vec<String> = std::fs::read_dir(dir.path().join("some"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "jobs-fifo.csv",
            "jobs-libra.csv",
            "log.txt",
            "manifest.json",
            "schedule-fifo.swf",
            "schedule-libra.swf"
        ]
    );
    let m = json(&dir.path().join("some/manifest.json"));
    assert_eq!(
        m["files"],
        serde_json::json!([
            "jobs-libra.csv",
            "schedule-libra.swf",
            "jobs-fifo.csv",
            "schedule-fifo.swf",
            "manifest.json",
            "log.txt"
        ])
    );
    for f in files
        .iter()
        .filter(|f| f.starts_with("jobs") || f.starts_with("sched"))
    {
        assert!(
            read(&dir.path().join("all").join(f)) == read(&dir.path().join("some").join(f)),
            "{f} differs from the one written with every output"
        );
    }
    let bad = libratory(&["simulate", "--outputs", "pdf"], dir.path());
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("pdf"),
        "the error names the bad value"
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = libratory(&["simulate", "--set", "betta=0.5"], dir.path());
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("unknown parameter 'betta'") && e.contains("beta"),
        "{e}"
    );

    let o = libratory(&["simulate", "--policies", "libra,nope"], dir.path());
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("unknown policy 'nope'") && e.contains("libra-risk"),
        "{e}"
    );

    // A malformed trace line names the file, the line and the field.
    let bad = dir.path().join("bad.swf");
    let mut text = String::from("; MaxNodes: 4\n");
    text.push_str("1 0 0 10 1 -1 -1 1 20 -1 1 1 1 1 1 1 -1 -1\n");
    text.push_str("2 5 0 1O 1 -1 -1 1 20 -1 1 1 1 1 1 1 -1 -1\n");
    std::fs::write(&bad, text).unwrap();
    let o = libratory(
        &[
            "simulate",
            "--preset",
            "libra-risk",
            "--trace",
            bad.to_str().unwrap(),
            "--set",
            "nodes=4",
        ],
        dir.path(),
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bad.swf:3") && e.contains("field 4"), "{e}");

    // A trace of no job line, two workloads at once, and a job number
    // used twice (which panicked the simulator) are refused by name.
    let empty = dir.path().join("empty.swf");
    std::fs::write(
        &empty,
        "; MaxNodes: 4
",
    )
    .unwrap();
    let twice = dir.path().join("twice.swf");
    std::fs::write(
        &twice,
        "1 0 0 10 1 -1 -1 1 20 -1 1 1 1 1 1 1 -1 -1
1 5 0 10 1 -1 -1 1 20 -1 1 1 1 1 1 1 -1 -1
",
    )
    .unwrap();
    let json = dir.path().join("w.json");
    std::fs::write(&json, r#"{"nb_res": 4, "jobs": [], "profiles": {}}"#).unwrap();
    for (args, said) in [
        (
            vec!["--trace", "empty.swf"],
            "empty.swf: no job lines: nothing to run",
        ),
        (
            vec!["--trace", "twice.swf"],
            "twice.swf:2: job number 1 is already line 1's",
        ),
        (
            vec!["--workload", "w.json", "--trace", "empty.swf"],
            "give --workload (w.json) or --trace (empty.swf), not both",
        ),
        (
            vec!["--set", "synthetic_budget_base=-1000"],
            "parameter 'synthetic_budget_base'",
        ),
    ] {
        let mut all = vec!["simulate", "--preset", "libra-risk", "--set", "nodes=4"];
        all.extend(args);
        let o = libratory(&all, dir.path());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.code() == Some(1) && e.contains(said),
            "{said}: {e}"
        );
    }

    // A duration Duration::from_secs_f64 would panic on is an error naming
    // the option, found before any connection is tried.
    for v in ["-1", "NaN", "inf"] {
        let o = libratory(
            &[
                "loadtest",
                "--manager",
                "127.0.0.1:9",
                "--certs",
                "nonexistent",
                &format!("--answer-timeout={v}"),
            ],
            dir.path(),
        );
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{v}: {e}");
        assert!(e.contains("--answer-timeout must be"), "{v}: {e}");
    }

    // A sweep's seeds are its own axis: a `seed` set would run one seed
    // under the labels of several.
    let o = libratory(
        &[
            "sweep", "--param", "beta", "--values", "0.1", "--set", "seed=5", "--seeds", "2",
        ],
        dir.path(),
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("seed is the sweep's own axis"),
        "{e}"
    );

    // `replay` of a directory with no journal (a simulated run's) names
    // the file it needs; a journal with a bad header names its line.
    let o = libratory(&["replay", "nothing-here"], dir.path());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("nothing-here/journal.jsonl"),
        "{e}"
    );
    let run = dir.path().join("early");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("journal.jsonl"), "{\"e\":\"header\"}\n").unwrap();
    let o = libratory(&["replay", "early"], dir.path());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("early/journal.jsonl, line 1"),
        "{e}"
    );
}

/// SHA-256 of the SDSC SP2 trace file (shared/traces/README.md).
const SDSC_SHA256: &str = "e03fe48be50c4ab04d6bb2285296d9c3399e9c1f27ee79b754ad32a14abd9bac";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn run_directory_has_every_file_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sdsc();
    let o = libratory(
        &[
            "simulate",
            "--trace",
            trace.to_str().unwrap(),
            "--preset",
            "libra-plus-dollar",
            "--policies",
            "libra-plus-dollar,fcfs-bf",
            "--set",
            "jobs=300",
            "--set",
            "arrival_delay_factor=0.1",
            "--out",
            "run",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let run = dir.path().join("run");
    let policies = ["libra-plus-dollar", "fcfs-bf"];
    let mut expected = vec![
        "summary.json".to_string(),
        "manifest.json".into(),
        "log.txt".into(),
    ];
    for p in policies {
        for f in [
            "jobs-{}.csv",
            "jobs-{}.jsonl",
            "out_jobs-{}.csv",
            "schedule-{}.swf",
        ] {
            expected.push(f.replace("{}", p));
        }
    }
    for f in &expected {
        assert!(run.join(f).is_file(), "{f} missing");
    }

    // The log is what was printed.
    assert_eq!(
        read(&run.join("log.txt")),
        String::from_utf8_lossy(&o.stdout)
    );

    // The manifest says what ran, on what, with which binary, where.
    let m = json(&run.join("manifest.json"));
    assert_eq!(m["kind"], "simulate");
    assert_eq!(m["mode"], "simulated");
    assert_eq!(m["seed"], 20061995);
    assert_eq!(m["config"]["params"]["jobs"], 300);
    assert_eq!(m["config"]["policies"][1], "fcfs-bf");
    assert_eq!(m["trace"]["file_name"], "SDSC-SP2-1998-4.2-cln.swf.gz");
    assert_eq!(m["trace"]["sha256"], SDSC_SHA256);
    assert!(m["binary"]["version"].is_string());
    assert!(m["host"]["cores"].as_u64().unwrap() >= 1);
    assert!(m["host"]["os"].is_string());
    assert!(m["command_line"][1] == "simulate");
    let listed: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in &expected {
        assert!(listed.contains(&f.as_str()), "manifest does not list {f}");
    }

    let summary = json(&run.join("summary.json"));
    for (k, p) in policies.iter().enumerate() {
        let s = &summary["policies"][k];
        assert_eq!(s["policy"], *p);

        // Per-job CSV and JSON lines: one per job.
        let jobs = read(&run.join(format!("jobs-{p}.csv")));
        assert_eq!(jobs.lines().count(), 301);
        let jsonl = read(&run.join(format!("jobs-{p}.jsonl")));
        assert_eq!(jsonl.lines().count(), 300);
        let accepted: std::collections::HashMap<String, bool> = jsonl
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert!(v.get("met").is_some() && v.get("slowdown").is_some());
                (v["id"].to_string(), v["accepted"].as_bool().unwrap())
            })
            .collect();

        // Batsim CSV: the exact header, one row per job, consistent times.
        let path = run.join(format!("out_jobs-{p}.csv"));
        let mut rd = csv::Reader::from_path(&path).unwrap();
        let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(
            header.join(","),
            "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata"
        );
        let mut rows = 0;
        let mut rejected = 0;
        for row in rd.records() {
            let row = row.unwrap();
            rows += 1;
            let f = |i: usize| row[i].parse::<f64>().unwrap();
            let state = &row[7];
            assert_eq!(
                accepted[&row[0].to_string()],
                state != "REJECTED",
                "{row:?}"
            );
            match state {
                "COMPLETED_SUCCESSFULLY" => {
                    assert_eq!(&row[6], "1");
                    let (submit, start, exec, finish) = (f(3), f(8), f(9), f(10));
                    assert!(close(f(11), start - submit), "waiting_time {row:?}");
                    assert!(close(f(12), finish - submit), "turnaround_time {row:?}");
                    assert!(close(exec, finish - start), "execution_time {row:?}");
                    assert!(close(f(13), f(12) / exec), "stretch {row:?}");
                    assert!(!row[14].is_empty(), "allocated_resources {row:?}");
                    let n: usize = row[14]
                        .split(' ')
                        .map(|r| match r.split_once('-') {
                            Some((a, b)) => {
                                b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1
                            }
                            None => 1,
                        })
                        .sum();
                    assert_eq!(n, row[4].parse::<usize>().unwrap(), "{row:?}");
                }
                "REJECTED" => {
                    rejected += 1;
                    assert_eq!(&row[6], "0");
                    for i in 8..=15 {
                        assert!(row[i].is_empty(), "column {i} of a rejected job: {row:?}");
                    }
                    assert!(row[16].contains("reason="), "{row:?}");
                }
                other => panic!("unexpected final_state {other}"),
            }
        }
        assert_eq!(rows, 300);
        assert_eq!(rejected, s["rejected"].as_u64().unwrap());
        assert!(rejected > 0, "f = 0.1 should reject some jobs");

        // The executed schedule parses back with the project's SWF reader.
        let path = run.join(format!("schedule-{p}.swf"));
        let reader = common::swf::SwfReader::open(&path).unwrap();
        assert_eq!(reader.header().max_nodes(), Some(128));
        let records: Vec<_> = reader.map(|r| r.unwrap()).collect();
        assert_eq!(records.len(), 300);
        let mut cancelled = 0;
        for r in &records {
            match r.status {
                1 => assert!(r.wait_time >= 0 && r.run_time >= 0 && r.allocated_procs > 0),
                5 => {
                    cancelled += 1;
                    assert_eq!((r.run_time, r.allocated_procs), (-1, -1));
                }
                s => panic!("status {s}"),
            }
        }
        assert_eq!(cancelled, rejected);
        for line in read(&path).lines().filter(|l| !l.starts_with(';')) {
            assert_eq!(line.split_whitespace().count(), 18, "{line}");
        }
    }
}

fn sweep_args<'a>(trace: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "sweep",
        "--trace",
        trace,
        "--preset",
        "libra-plus-dollar",
        "--set",
        "jobs=200",
        "--param",
        "beta",
        "--values",
        "0.1,0.5",
        "--policies",
        "libra-plus-dollar,libra",
        "--seeds",
        "2",
        "--out",
        out,
    ]
}

#[test]
fn a_small_sweep_writes_a_tidy_csv_and_plots_and_repeats_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sdsc();
    for out in ["a", "b"] {
        let o = libratory(&sweep_args(trace.to_str().unwrap(), out), dir.path());
        assert!(o.status.success());
    }
    let a = dir.path().join("a");
    let csv_a = read(&a.join("sweep.csv"));
    // Header + 2 values x 2 policies x 2 seeds.
    assert_eq!(csv_a.lines().count(), 9, "{csv_a}");
    assert!(csv_a.starts_with("param,value,x,series,policy,seed,qos_satisfaction,profitability"));
    let first = csv_a.lines().nth(1).unwrap();
    assert!(
        first.starts_with("beta,0.1,0.1,libra-plus-dollar,libra-plus-dollar,20061995,"),
        "{first}"
    );
    assert_eq!(
        csv_a,
        read(&dir.path().join("b/sweep.csv")),
        "same seed, different sweep.csv"
    );
    assert_eq!(
        read(&a.join("aggregate.csv")),
        read(&dir.path().join("b/aggregate.csv"))
    );
    for m in [
        "qos_satisfaction",
        "profitability",
        "pct_deadlines_met",
        "avg_slowdown",
        "utility",
    ] {
        let svg = read(&a.join(format!("{m}.svg")));
        assert!(
            svg.starts_with("<svg") && svg.contains("libra-plus-dollar"),
            "{m}.svg"
        );
    }
    let m = json(&a.join("manifest.json"));
    assert_eq!(m["kind"], "sweep");
    assert_eq!(m["config"]["seeds"][1], 20061996);
    assert_eq!(m["trace"]["sha256"], SDSC_SHA256);

    // A bad value names the parameter and the value.
    let mut args = sweep_args(trace.to_str().unwrap(), "c");
    args[10] = "0.1,lots";
    let o = libratory(&args, dir.path());
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("beta=lots") && e.contains("'beta'"), "{e}");
}

#[test]
fn figures_run_as_data_and_refuse_unregistered_policies() {
    let dir = tempfile::tempdir().unwrap();
    // Every figure's policies are registered now; an unregistered one is
    // refused, named, before anything runs (here through a sweep, which
    // figures are made of).
    let trace = sdsc();
    let mut args = sweep_args(trace.to_str().unwrap(), "f");
    args[12] = "libra,no-such-policy";
    let o = libratory(&args, dir.path());
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no-such-policy"), "{e}");
    assert!(
        !dir.path().join("f").exists(),
        "nothing may run before the check"
    );
    let o = libratory(&["figures", "--list"], dir.path());
    assert!(o.status.success());
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(
        list.contains("libra-sla-fig2") && list.contains("vqops-table1"),
        "{list}"
    );

    let o = libratory(
        &["figures", "libra", "--seeds", "2", "--out", "f"],
        dir.path(),
    );
    assert!(o.status.success());
    let f = dir.path().join("f");
    let index = read(&f.join("index.md"));
    assert!(
        index.contains("Table 1") && index.contains("| 200 jobs, 20 nodes |"),
        "{index}"
    );
    assert!(read(&f.join("libra-table1/deadlines_met.svg")).contains("PBS FIFO"));
    // Header + 4 cases x 2 policies x 2 seeds.
    assert_eq!(read(&f.join("libra-table1/sweep.csv")).lines().count(), 17);
    assert!(f.join("manifest.json").is_file() && f.join("log.txt").is_file());
}

#[test]
fn report_puts_run_directories_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    for (out, seed) in [("one", "1"), ("two", "2")] {
        assert!(
            libratory(&["simulate", "--seed", seed, "--out", out], dir.path())
                .status
                .success()
        );
    }
    let o = libratory(&["report", "one", "two", "--out", "rep"], dir.path());
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("| one | simulated | libra | 1 | libra |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| two | simulated | libra | 2 | fifo |"),
        "{stdout}"
    );
    let rep = dir.path().join("rep");
    assert_eq!(read(&rep.join("report.csv")).lines().count(), 5);
    assert!(read(&rep.join("qos_satisfaction.svg")).contains("two (simulated, seed 2)"));

    let o = libratory(&["report", "nowhere"], dir.path());
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("nowhere"));
}

/// Decision per job id from a jobs CSV, read independently of the
/// compare code: (accepted, reason, sorted nodes).
fn decisions(path: &Path) -> std::collections::BTreeMap<u64, (String, String, Vec<u64>)> {
    let text = read(path);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (id, acc, reason, nodes) = (col("job_id"), col("accepted"), col("reason"), col("nodes"));
    lines
        .map(|l| {
            // The detail column (last) may hold commas; the others do not.
            let f: Vec<&str> = l.split(',').collect();
            let mut n: Vec<u64> = f[nodes]
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            n.sort_unstable();
            (
                f[id].parse().unwrap(),
                (f[acc].to_string(), f[reason].to_string(), n),
            )
        })
        .collect()
}

#[test]
fn compare_counts_identical_decisions_and_lists_the_jobs_that_differ() {
    let dir = tempfile::tempdir().unwrap();
    // One small workload, two policies (Libra and EDF), and the same
    // workload with Libra again under another seed's run directory name.
    let set = [
        "--set",
        "jobs=40",
        "--set",
        "nodes=4",
        "--set",
        "synthetic_arrival_max=30",
    ];
    let mut args = vec!["simulate", "--policies", "libra,edf", "--out", "two"];
    args.extend(set);
    assert!(libratory(&args, dir.path()).status.success());
    let a = decisions(&dir.path().join("two/jobs-libra.csv"));
    let b = decisions(&dir.path().join("two/jobs-edf.csv"));
    let same = a.iter().filter(|(k, v)| b.get(*k) == Some(*v)).count();
    let differ: Vec<u64> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| *k)
        .collect();
    assert!(
        !differ.is_empty() && same > 0,
        "pick a workload where they differ"
    );
    let o = libratory(
        &[
            "compare",
            "two",
            "two",
            "--policy-a",
            "libra",
            "--policy-b",
            "edf",
            "--json",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["common_jobs"], 40);
    assert_eq!(c["identical_decisions"], same as u64);
    assert!(close(
        c["identical_share"].as_f64().unwrap(),
        same as f64 / 40.0
    ));
    let mut listed: Vec<u64> = c["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| {
            let d = j["difference"].as_str().unwrap();
            !d.starts_with("met_only") && d != "lost"
        })
        .map(|j| j["id"].as_u64().unwrap())
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, differ);
    for j in c["jobs"].as_array().unwrap() {
        assert!(!j["why"].as_str().unwrap().is_empty(), "{j}");
    }
    let qos = |p: &str| {
        json(&dir.path().join("two/summary.json"))["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["policy"] == p)
            .unwrap()["qos_satisfaction"]
            .as_f64()
            .unwrap()
    };
    assert!(close(
        c["qos_satisfaction_diff_pp"].as_f64().unwrap(),
        100.0 * (qos("edf") - qos("libra"))
    ));
    // The table: the share in words and the first differing job.
    let o = libratory(
        &[
            "compare",
            "two",
            "two",
            "--policy-a",
            "libra",
            "--policy-b",
            "edf",
        ],
        dir.path(),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("{same} of 40 common jobs")),
        "{text}"
    );
    // Every differing job of the JSON, in its order, up to the default
    // --limit of 30, each with its arrival; the header counts them.
    let jobs = c["jobs"].as_array().unwrap();
    let shown = jobs.len().min(30);
    assert!(
        text.contains(&format!("jobs that differ ({shown} of {};", jobs.len())),
        "{text}"
    );
    let mut from = 0;
    for j in &jobs[..shown] {
        let head = format!(
            "\njob {} (arrived {:.2}): ",
            j["id"],
            j["submit"].as_f64().unwrap()
        );
        let at = text[from..]
            .find(&head)
            .unwrap_or_else(|| panic!("{head:?} missing or out of order in\n{text}"));
        from += at + head.len();
    }
    assert_eq!(text.matches("\njob ").count(), shown, "{text}");
    // A run with several policies and none chosen: a clear error.
    let o = libratory(&["compare", "two", "two"], dir.path());
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("libra, edf"));
    // The CSV is read when there is no JSON lines file.
    std::fs::remove_file(dir.path().join("two/jobs-edf.jsonl")).unwrap();
    let o = libratory(
        &[
            "compare",
            "two",
            "two",
            "--policy-a",
            "libra",
            "--policy-b",
            "edf",
            "--json",
        ],
        dir.path(),
    );
    let c2: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c2["identical_decisions"], c["identical_decisions"]);
    assert_eq!(
        c2["jobs"].as_array().unwrap().len(),
        c["jobs"].as_array().unwrap().len()
    );
}

fn configs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cluster-configs")
}

#[test]
fn config_check_and_show_print_what_the_launchers_read() {
    let dir = tempfile::tempdir().unwrap();
    let lab = configs_dir().join("lab4.toml");
    let lab = lab.to_str().unwrap();
    let out = libratory(&["config", "check", "--config", lab], dir.path());
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok: 4 host(s) (4 over ssh), 4 node processes, 32 emulated nodes"),
        "{stdout}"
    );
    let out = libratory(
        &["config", "show", "--config", lab, "--format", "shell"],
        dir.path(),
    );
    assert!(out.status.success());
    let shell = String::from_utf8_lossy(&out.stdout);
    for line in [
        "LBR_DIAL='192.0.2.10:7878'",
        "LBR_TARGET_3='libratory@lab4.example.org'",
        "LBR_WORK_0='/tmp/libratory/lab1'",
        "LBR_LABELS_1=('lab2-0')",
    ] {
        assert!(shell.lines().any(|l| l == line), "{line} not in:\n{shell}");
    }
    assert!(shell.contains("LBR_SSH_ARGS_3=('-p' '2222' '-o' 'IdentityFile=~/.ssh/lab4'"));
    let out = libratory(
        &["config", "show", "--config", lab, "--format", "json"],
        dir.path(),
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["total_nodes"], 32);
    assert_eq!(plan["hosts"][0]["node_args"][1], "lab1");
    let out = libratory(
        &["config", "show", "--config", lab, "--format", "sbatch"],
        dir.path(),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("--job-name=libratory-lab4\n--nodes=4\n")
    );
}

#[test]
fn config_errors_name_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(configs_dir().join("lab4.toml"))
        .unwrap()
        .replace("advertise = \"192.0.2.10:7878\"", "");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, text).unwrap();
    let out = libratory(&["config", "check", "--config", "bad.toml"], dir.path());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml: manager.advertise: the manager listens on 0.0.0.0:7878"),
        "{stderr}"
    );
}

/// `--trace` with every preset: a trace preset reads the file given (its
/// jobs, its name and size in the manifest), a missing file is an error
/// naming it, and a preset that generates its workload refuses a trace
/// rather than ignoring it.
#[test]
fn trace_is_used_or_refused_by_every_preset() {
    let dir = tempfile::tempdir().unwrap();
    // Twelve jobs with estimates 110..=220 s: distinct from every job of
    // the default SDSC SP2 trace's tail and from the synthetic batch.
    let small = dir.path().join("small.swf");
    let mut text = String::from("; MaxNodes: 4\n");
    for i in 1..=12 {
        text.push_str(&format!(
            "{i} {} 0 {} 1 -1 -1 1 {} -1 1 1 1 1 1 1 -1 -1\n",
            i * 30,
            100 + i * 10,
            100 + i * 10
        ));
    }
    std::fs::write(&small, &text).unwrap();
    let small_s = small.to_str().unwrap();
    let presets = libratory(&["presets"], dir.path());
    let listed: Vec<String> = String::from_utf8_lossy(&presets.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    // A new preset has to be added here (and to what it must do with a
    // trace) for this test to pass.
    assert_eq!(
        listed,
        [
            "libra",
            "libra-plus-dollar",
            "libra-risk",
            "libra-sla",
            "vqops"
        ]
    );
    let cache = dir.path().join("cache");
    let sim = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_libratory"))
            .arg("simulate")
            .args(args)
            .current_dir(dir.path())
            .env("LIBRATORY_CACHE_DIR", &cache)
            .output()
            .unwrap()
    };
    for preset in &listed {
        let missing = dir.path().join("missing.swf");
        let o = sim(&["--preset", preset, "--trace", missing.to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{preset}: {e}");
        assert!(e.contains("missing.swf"), "{preset}: {e}");
        if preset == "libra" {
            // Generated workload: the trace would be ignored, so refused,
            // naming the presets that do read one.
            assert!(
                e.contains("reads no trace") && e.contains("libra-risk"),
                "{e}"
            );
            let o = sim(&["--preset", preset, "--trace", small_s]);
            let e = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{e}");
            assert!(
                e.contains("small.swf") && e.contains("reads no trace"),
                "{e}"
            );
            continue;
        }
        assert!(e.contains("no such file"), "{preset}: {e}");
        let out = format!("o-{preset}");
        let o = sim(&[
            "--preset", preset, "--trace", small_s, "--set", "jobs=10", "--set", "nodes=4",
            "--out", &out,
        ]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{preset}: {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            stdout.contains(&format!("last 10 jobs of {small_s} ")),
            "{preset}: {stdout}"
        );
        let run = dir.path().join(&out);
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(m["trace"]["file_name"], "small.swf", "{preset}");
        assert_eq!(m["trace"]["bytes"], text.len(), "{preset}");
        // Every policy ran the file's last ten jobs (ids 3..=12) with the
        // file's estimates (exact estimates for these presets' inaccuracy
        // settings: an estimate is the requested time, 100 + 10 id).
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
        for p in s["policies"].as_array().unwrap() {
            let name = p["policy"].as_str().unwrap();
            assert_eq!(p["submitted"], 10, "{preset} {name}");
            let jobs = std::fs::read_to_string(run.join(format!("jobs-{name}.jsonl"))).unwrap();
            let mut ids = Vec::new();
            for l in jobs.lines() {
                let j: serde_json::Value = serde_json::from_str(l).unwrap();
                let id = j["id"].as_u64().unwrap();
                assert_eq!(
                    j["estimate"],
                    (100 + 10 * id) as f64,
                    "{preset} {name}: {j}"
                );
                ids.push(id);
            }
            ids.sort_unstable();
            assert_eq!(ids, (3..=12).collect::<Vec<_>>(), "{preset} {name}");
        }
    }
}

/// The suite runs no bench, so a configuration a live bench writes for its
/// manager is checked here as `libratory config check` checks it (a bench
/// whose manager refused its file failed only when someone ran it): those
/// of `live_latency` at 128 and 158,976 nodes and of `batsim_live`.
#[test]
fn the_live_benches_configurations_pass_config_check() {
    use bench_config::{serving, Proc};
    let dir = tempfile::tempdir().unwrap();
    let addr = "127.0.0.1:7000".parse().unwrap();
    let procs = |n: usize, per: usize| -> Vec<(String, usize)> {
        (0..n)
            .map(|k| (((b'a' + k as u8) as char).to_string(), per))
            .collect()
    };
    let cases = [
        ("live-128", "libra", "jobs = 1", procs(2, 64)),
        (
            "live-158976",
            "libra",
            "jobs = 1, placement = \"best-fit\"",
            procs(8, 19_872),
        ),
        ("batsim-live", "batsim", "jobs = 1", procs(1, 64)),
        ("batsim-live-fcfs", "fcfs-bf", "jobs = 1", procs(1, 64)),
    ];
    for (name, policy, set, ps) in cases {
        let total: usize = ps.iter().map(|p| p.1).sum();
        let ps: Vec<Proc> = ps
            .iter()
            .map(|(n, per)| Proc {
                name: n,
                nodes: *per,
                capacity: 0.5 / total as f64,
            })
            .collect();
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, serving(addr, "certs", policy, set, &ps)).unwrap();
        let out = libratory(
            &["config", "check", "--config", path.to_str().unwrap()],
            dir.path(),
        );
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains(": ok:"), "{name}: {said}");
        assert!(
            said.contains(&total.to_string()),
            "{name}: {total} nodes in {said}"
        );
    }
}
