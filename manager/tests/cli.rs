//! The `libratory` binary as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
}
