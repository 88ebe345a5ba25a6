//! The simulator against an independent reference implementation:
//! `tests/reference/ref.py`, written from the policies' specification
//! without reading the Rust code, replays the workload of each run and
//! must take every decision the simulator took (accept or reject, the
//! reason, the nodes, the start and the finish; the cost and every part's
//! start and finish for the Libra family) for Libra (best fit and least
//! loaded), Libra+$, LibraRisk, LibraSLA, EDF, PBS FIFO and QoPS. The
//! workloads are small hand-made SWF files (ties in best fit, exact
//! fills, estimates wrong both ways, multi-node jobs, EDF's edges, a node
//! priced out at RESFree 0, identical delays) and windows of the real
//! SDSC SP2 trace (`../shared/traces`), one with under-estimates, where
//! QoPS must start a job at a reservation that falls between events.
//!
//! Needs python3 (standard library only); fails, never skips, without it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn libratory() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_libratory"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sdsc() -> String {
    let p = root().join("../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(
        p.is_file(),
        "{} is missing (the shared traces)",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// One simulated run checked against the reference.
struct Case {
    name: &'static str,
    preset: &'static str,
    /// A hand-made workload in tests/reference/workloads, or None for the
    /// SDSC SP2 trace.
    workload: Option<&'static str>,
    nodes: usize,
    jobs: usize,
    sets: &'static [&'static str],
}

/// Spread 0, one class, one deadline factor: deadlines exact multiples of
/// the runtime, so that ties and exact fills happen.
const FIX: &[&str] = &[
    "spread=0",
    "high_urgency_fraction=0",
    "deadline_high_low_ratio=1",
];

fn sets(extra: &[&'static str], fixed: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = if fixed { FIX.to_vec() } else { Vec::new() };
    v.extend_from_slice(extra);
    v
}

/// One `simulate` run of `policies` and the reference's verdict on each.
struct Run<'a> {
    name: String,
    preset: &'a str,
    /// A hand-made workload in tests/reference/workloads, or None for the
    /// SDSC SP2 trace.
    workload: Option<&'a str>,
    nodes: usize,
    jobs: usize,
    sets: Vec<&'a str>,
    policies: &'a [&'a str],
    /// The knobs given to the simulator, as the reference takes them.
    ref_args: Vec<&'a str>,
    /// Every part's start and finish compared too (the Libra family).
    parts: bool,
}

fn check(r: &Run, dir: &Path) {
    let trace = match r.workload {
        Some(w) => root()
            .join("tests/reference/workloads")
            .join(w)
            .to_string_lossy()
            .into_owned(),
        None => sdsc(),
    };
    let out = dir.join(&r.name);
    let mut cmd = Command::new(libratory());
    cmd.args(["simulate", "--preset", r.preset, "--trace", &trace])
        .args(["--set", &format!("jobs={}", r.jobs)])
        .args(["--set", &format!("nodes={}", r.nodes)]);
    for s in &r.sets {
        cmd.args(["--set", s]);
    }
    let outputs = if r.parts {
        "jobs-csv,parts"
    } else {
        "jobs-csv"
    };
    let o = cmd
        .args(["--policies", &r.policies.join(",")])
        .args(["--outputs", outputs, "--out"])
        .arg(&out)
        .output()
        .expect("run libratory");
    assert!(
        o.status.success(),
        "{}: simulate failed: {}",
        r.name,
        String::from_utf8_lossy(&o.stderr)
    );
    for p in r.policies {
        let jobs = out.join(format!("jobs-{p}.csv"));
        let mut py = Command::new("python3");
        py.arg(root().join("tests/reference/ref.py"))
            .arg(p)
            .arg(&jobs)
            .arg(r.nodes.to_string())
            .arg("--compare")
            .arg(&jobs)
            .args(&r.ref_args);
        if r.parts {
            py.arg("--parts").arg(out.join(format!("parts-{p}.csv")));
        }
        if r.workload.is_none() {
            // Memory per processor (SWF field 10) for the resource filter.
            py.args(["--swf", &trace]);
        }
        let o = py
            .output()
            .unwrap_or_else(|e| panic!("python3 is needed for the reference implementation: {e}"));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{} {p}: ref.py failed: {}{text}",
            r.name,
            String::from_utf8_lossy(&o.stderr)
        );
        let want = format!("all {0}/{0}", r.jobs);
        let jobs_match = text
            .lines()
            .any(|l| l.starts_with("jobs ") && l.ends_with(&want));
        let parts_match = !r.parts
            || text.lines().any(|l| {
                l.strip_prefix("parts ").is_some_and(|rest| {
                    // "N (ref N): start+finish match N/N"
                    let n = rest.split(' ').next().unwrap_or("?");
                    rest.ends_with(&format!("match {n}/{n}"))
                        && rest.contains(&format!("(ref {n})"))
                })
            });
        assert!(
            jobs_match && parts_match,
            "{} {p}: the reference and the simulator differ:\n{text}",
            r.name
        );
    }
}

/// Libra, EDF, PBS FIFO and QoPS on `c`, then Libra least loaded.
fn run_case(c: &Case, sets: &[&'static str], dir: &Path) {
    check(
        &Run {
            name: format!("{}-best-fit", c.name),
            preset: c.preset,
            workload: c.workload,
            nodes: c.nodes,
            jobs: c.jobs,
            sets: sets.to_vec(),
            policies: &["libra", "edf", "fifo", "qops"],
            ref_args: vec!["--placement", "best-fit"],
            parts: false,
        },
        dir,
    );
    let mut least = sets.to_vec();
    least.push("placement=least-loaded");
    check(
        &Run {
            name: format!("{}-least-loaded", c.name),
            preset: c.preset,
            workload: c.workload,
            nodes: c.nodes,
            jobs: c.jobs,
            sets: least,
            policies: &["libra"],
            ref_args: vec!["--placement", "least-loaded"],
            parts: false,
        },
        dir,
    );
}

/// A run of the Libra family checked against the reference: every job
/// (with its cost) and every part.
struct Family {
    case: Case,
    policies: &'static [&'static str],
    /// The knobs given to the simulator, as the reference takes them.
    ref_args: &'static [&'static str],
}

fn run_family(c: &Family, dir: &Path) {
    check(
        &Run {
            name: c.case.name.to_string(),
            preset: c.case.preset,
            workload: c.case.workload,
            nodes: c.case.nodes,
            jobs: c.case.jobs,
            sets: c.case.sets.to_vec(),
            policies: c.policies,
            ref_args: c.ref_args.to_vec(),
            parts: true,
        },
        dir,
    );
}

/// Libra+$ (its prices and costs), LibraRisk (node order, with and
/// without the shortcut) and LibraSLA against the reference.
#[test]
fn the_libra_family_takes_the_independent_references_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let both = &["libra-plus-dollar", "libra-risk"][..];
    let mut cases = Vec::new();
    for (w, nodes, jobs, sets) in [
        (
            "w1.swf",
            4,
            15,
            &["deadline_low_mean=2", "inaccuracy=0"][..],
        ),
        ("w2.swf", 4, 20, &["deadline_low_mean=1.5"][..]),
        ("w3.swf", 8, 30, &["deadline_low_mean=2"][..]),
        ("w4.swf", 16, 30, &["deadline_low_mean=1.5"][..]),
        (
            "w5.swf",
            4,
            25,
            &[
                "deadline_low_mean=2",
                "inaccuracy_form=under",
                "inaccuracy=0.2",
            ][..],
        ),
    ] {
        cases.push(Family {
            case: Case {
                name: w,
                preset: "libra-plus-dollar",
                workload: Some(w),
                nodes,
                jobs,
                sets,
            },
            policies: both,
            ref_args: &[],
        });
    }
    // w7: exact fills, a node priced out at RESFree 0, three identical
    // parts delayed alike (LibraRisk takes them: zero deviation).
    cases.push(Family {
        case: Case {
            name: "w7",
            preset: "libra-plus-dollar",
            workload: Some("w7.swf"),
            nodes: 2,
            jobs: 9,
            sets: &[
                "spread=0",
                "high_urgency_fraction=0",
                "deadline_high_low_ratio=1",
                "deadline_low_mean=2",
                "arrival_delay_factor=1",
                "inaccuracy=0",
                "budget_low_mean=3",
            ],
        },
        policies: both,
        ref_args: &[],
    });
    cases.push(Family {
        case: Case {
            name: "w3-sla",
            preset: "libra-sla",
            workload: Some("w3.swf"),
            nodes: 8,
            jobs: 30,
            sets: &[
                "deadline_low_mean=2",
                "high_deadline_type=hard",
                "low_deadline_type=soft",
            ],
        },
        policies: &["libra-sla"],
        ref_args: &[],
    });
    // The SDSC SP2 trace's last 400 jobs, 30% under-estimated.
    cases.push(Family {
        case: Case {
            name: "sdsc-lpd400-under",
            preset: "libra-plus-dollar",
            workload: None,
            nodes: 128,
            jobs: 400,
            sets: &["inaccuracy=0.3"],
        },
        policies: both,
        ref_args: &[],
    });
    // Nodes of speed 2, Libra's cost factors and a lower beta.
    cases.push(Family {
        case: Case {
            name: "sdsc-lpd400-speed2",
            preset: "libra-plus-dollar",
            workload: None,
            nodes: 128,
            jobs: 400,
            sets: &[
                "node_speed=2",
                "gamma=0.5",
                "delta=3",
                "beta=0.3",
                "arrival_delay_factor=0.2",
            ],
        },
        policies: both,
        ref_args: &[
            "--speed", "2", "--gamma", "0.5", "--delta", "3", "--beta", "0.3",
        ],
    });
    // LibraRisk on the trace's own estimates (jobs whose estimate exceeds
    // their deadline among them), at a tolerance and without the shortcut.
    cases.push(Family {
        case: Case {
            name: "sdsc-risk400-tol",
            preset: "libra-risk",
            workload: None,
            nodes: 128,
            jobs: 400,
            sets: &["risk_tolerance=0.05", "arrival_delay_factor=0.3"],
        },
        policies: &["libra-risk"],
        ref_args: &["--tol", "0.05"],
    });
    cases.push(Family {
        case: Case {
            name: "sdsc-risk400-noshort",
            preset: "libra-risk",
            workload: None,
            nodes: 128,
            jobs: 400,
            sets: &["risk_shortcut=false", "arrival_delay_factor=0.3"],
        },
        policies: &["libra-risk"],
        ref_args: &["--no-shortcut"],
    });
    // LibraSLA, 30% under-estimated (late parts in the projections).
    cases.push(Family {
        case: Case {
            name: "sdsc-sla300-under",
            preset: "libra-sla",
            workload: None,
            nodes: 128,
            jobs: 300,
            sets: &["inaccuracy=0.3", "arrival_delay_factor=0.005"],
        },
        policies: &["libra-sla"],
        ref_args: &[],
    });
    for c in &cases {
        run_family(c, dir.path());
    }
}

#[test]
fn the_simulator_takes_the_independent_references_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // Ties and exact fills (D = 2R), accurate estimates.
        (
            Case {
                name: "w1",
                preset: "libra-risk",
                workload: Some("w1.swf"),
                nodes: 4,
                jobs: 15,
                sets: &["deadline_low_mean=2", "inaccuracy=0"],
            },
            true,
        ),
        // The same with budgets just above the cost.
        (
            Case {
                name: "w1b",
                preset: "libra-risk",
                workload: Some("w1.swf"),
                nodes: 4,
                jobs: 15,
                sets: &[
                    "deadline_low_mean=1.05",
                    "inaccuracy=0",
                    "budgets=true",
                    "budget_low_mean=1.01",
                ],
            },
            true,
        ),
        // Estimates wrong both ways, tight deadlines, multi-node jobs:
        // QoPS starts job 11 at its reservation, 80, between events.
        (
            Case {
                name: "w2",
                preset: "libra-risk",
                workload: Some("w2.swf"),
                nodes: 4,
                jobs: 20,
                sets: &["deadline_low_mean=1.5"],
            },
            true,
        ),
        (
            Case {
                name: "w3",
                preset: "libra-risk",
                workload: Some("w3.swf"),
                nodes: 8,
                jobs: 30,
                sets: &["deadline_low_mean=2", "budgets=true"],
            },
            false,
        ),
        (
            Case {
                name: "w4",
                preset: "libra-risk",
                workload: Some("w4.swf"),
                nodes: 16,
                jobs: 30,
                sets: &["deadline_low_mean=1.5"],
            },
            false,
        ),
        // Every estimate 20% under the runtime.
        (
            Case {
                name: "w5",
                preset: "libra-risk",
                workload: Some("w5.swf"),
                nodes: 4,
                jobs: 25,
                sets: &[
                    "deadline_low_mean=2",
                    "inaccuracy_form=under",
                    "inaccuracy=0.2",
                ],
            },
            true,
        ),
        // EDF's edges on 2 nodes: a deadline at the very instant a node
        // frees, now + RE equal to the deadline, a job wider than the
        // cluster, a head that waits past its deadline.
        (
            Case {
                name: "w6",
                preset: "libra-risk",
                workload: Some("w6.swf"),
                nodes: 2,
                jobs: 9,
                sets: &["deadline_low_mean=2", "inaccuracy=0"],
            },
            true,
        ),
        // The SDSC SP2 trace: the last 300 jobs with their own estimates
        // at a tenth of the arrival gaps.
        (
            Case {
                name: "sdsc300",
                preset: "libra-risk",
                workload: None,
                nodes: 128,
                jobs: 300,
                sets: &["arrival_delay_factor=0.1"],
            },
            false,
        ),
        // The Libra+$ set-up's last 400 jobs, 30% of them under-estimated.
        (
            Case {
                name: "lpd400",
                preset: "libra-plus-dollar",
                workload: None,
                nodes: 128,
                jobs: 400,
                sets: &["inaccuracy=0.3"],
            },
            false,
        ),
    ];
    for (c, fixed) in &cases {
        run_case(c, &sets(c.sets, *fixed), dir.path());
    }
}
