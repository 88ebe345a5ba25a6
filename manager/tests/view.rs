//! Seeing a run: `libratory report` draws each run's schedule (Gantt,
//! utilisation, queue) and writes one self-contained HTML page.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn libratory(args: &[&str], cwd: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_libratory"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run libratory");
    assert!(
        out.status.success(),
        "libratory {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Reads `jobs-<policy>.jsonl`: (id, started, nodes).
fn jobs(path: &Path) -> Vec<(u64, bool, usize)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_u64().unwrap(),
                !v["start"].is_null(),
                v["nodes"].as_array().unwrap().len(),
            )
        })
        .collect()
}

#[test]
fn report_draws_one_element_per_job_and_a_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The Libra paper's batch: Libra (time-shared, some rejections) and FIFO
    // (space-shared, everything runs).
    libratory(&["simulate", "--out", "run"], d);
    libratory(&["report", "run", "--out", "rep"], d);
    for policy in ["libra", "fifo"] {
        let expected = jobs(&d.join(format!("run/jobs-{policy}.jsonl")));
        assert_eq!(expected.len(), 100);
        let svg =
            std::fs::read_to_string(d.join(format!("rep/run1-run/gantt-{policy}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("the Gantt SVG is well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let groups: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("job"))
            .collect();
        assert_eq!(
            groups.len(),
            expected.len(),
            "{policy}: one element per job"
        );
        let ids: BTreeSet<u64> = groups
            .iter()
            .map(|g| g.attribute("data-job").unwrap().parse().unwrap())
            .collect();
        let want: BTreeSet<u64> = expected.iter().map(|j| j.0).collect();
        assert_eq!(ids, want, "{policy}: the job ids");
        let mut rejected = 0;
        for (g, (id, started, nodes)) in groups.iter().zip(&expected) {
            assert_eq!(g.attribute("id"), Some(format!("job-{id}").as_str()));
            let outcome = g.attribute("data-outcome").unwrap();
            let rects = g.children().filter(|n| n.has_tag_name("rect")).count();
            assert!(rects >= 1, "job {id} has no rectangle");
            if *started {
                assert!(["met", "missed"].contains(&outcome), "job {id}: {outcome}");
                // At most one rectangle per node it ran on.
                assert!(
                    rects <= *nodes,
                    "job {id}: {rects} rectangles, {nodes} nodes"
                );
            } else {
                assert_eq!(outcome, "rejected", "job {id}");
                rejected += 1;
            }
            assert!(g.children().any(|n| n.has_tag_name("title")));
        }
        if policy == "fifo" {
            assert_eq!(rejected, 0, "FIFO runs everything");
        }
        for chart in ["utilisation", "queue"] {
            let p = d.join(format!("rep/run1-run/{chart}-{policy}.svg"));
            let t = std::fs::read_to_string(&p).unwrap();
            roxmltree::Document::parse(&t).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
    // The simulator's parts: one per node of each started job, starting
    // with it; the last to finish ends with it; a space-shared part holds
    // its node (mean share 1).
    for policy in ["libra", "fifo"] {
        let recs: Vec<serde_json::Value> =
            std::fs::read_to_string(d.join(format!("run/jobs-{policy}.jsonl")))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let parts = std::fs::read_to_string(d.join(format!("run/parts-{policy}.csv"))).unwrap();
        let mut lines = parts.lines();
        assert_eq!(
            lines.next(),
            Some("job_id,node,start,finish,cpu,mean_share")
        );
        let rows: Vec<Vec<f64>> = lines
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        for r in &recs {
            let id = r["id"].as_f64().unwrap();
            let mine: Vec<&Vec<f64>> = rows.iter().filter(|p| p[0] == id).collect();
            let nodes: Vec<f64> = r["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_f64().unwrap())
                .collect();
            assert_eq!(mine.len(), nodes.len(), "{policy} job {id}: parts");
            if nodes.is_empty() {
                continue;
            }
            let start = r["start"].as_f64().unwrap();
            let finish = r["finish"].as_f64().unwrap();
            for p in &mine {
                assert!(nodes.contains(&p[1]), "{policy} job {id}: node {}", p[1]);
                // serde_json parses floats to within an ulp, not exactly.
                assert!((p[2] - start).abs() < 1e-9, "{policy} job {id}: part start");
                assert!(
                    p[3] <= finish + 1e-9,
                    "{policy} job {id}: part ends after the job"
                );
                assert!(
                    p[5] > 0.0 && p[5] <= 1.0 + 1e-9,
                    "{policy} job {id}: share {}",
                    p[5]
                );
                if policy == "fifo" {
                    assert!((p[5] - 1.0).abs() < 1e-9);
                }
            }
            let last = mine.iter().map(|p| p[3]).fold(f64::MIN, f64::max);
            assert!(
                (last - finish).abs() < 1e-9,
                "{policy} job {id}: the last part ends the job"
            );
        }
    }
    let html = std::fs::read_to_string(d.join("rep/report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<table id=\"summary\">"));
    // Every chart is inline (2 policies x 3 charts + 8 metric charts) and
    // the page refers to no other file.
    assert_eq!(html.matches("<svg").count(), 2 * 3 + 8);
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "self-contained"
    );
    // Ids stay unique on the page.
    let ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    let unique: BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate ids in report.html");
    assert_eq!(html.matches("class=\"job\"").count(), 200);
}
