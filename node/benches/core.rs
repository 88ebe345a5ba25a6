//! Cost of the node core's hot path: one slice issued and accounted
//! (`poll_slice` + `on_burned`), with 3 and 64 parts on the node. This is
//! the bookkeeping the actor thread does per slice, without the messaging.
//! The end-to-end figures (fidelity, overhead, idle nodes) are
//! `libratory-node bench`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use common::share::SpareRule;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use node::{EmulatedNodeSpec, NodeEngine, PartSpec, SliceConfig};

fn core_with(parts: u64) -> NodeEngine {
    let spec = EmulatedNodeSpec {
        id: 0,
        speed: 1.0,
        capacity: 1.0,
        memory_kb: 1024,
        disk_mb: 1,
    };
    let cfg = SliceConfig {
        spare_rule: SpareRule::Proportional,
        progress_ticks: 0,
        ..SliceConfig::default()
    };
    let mut core = NodeEngine::new(spec, cfg).expect("valid node");
    for k in 0..parts {
        let p = PartSpec {
            part_id: k,
            job_id: k,
            estimate: 1e9,
            actual: 1e9,
            deadline_abs: 1e12,
            memory_kb: 0,
            disk_mb: 0,
            ret: 0.0,
            hard: false,
        };
        core.place(p, 0.0).expect("fits");
    }
    core
}

fn slice_cycle(c: &mut Criterion) {
    let mut g = c.benchmark_group("slice_cycle");
    for parts in [3u64, 64] {
        g.bench_with_input(BenchmarkId::from_parameter(parts), &parts, |b, &parts| {
            let mut core = core_with(parts);
            let mut now = 0.0;
            b.iter(|| {
                // One slice at a time, burned exactly, time moving with it.
                let s = core.poll_slice(now).or_else(|| {
                    now = core.poll_timeout().unwrap_or(now).max(now);
                    core.handle_timeout(now);
                    core.poll_slice(now)
                });
                if let Some(s) = s {
                    now += s.ns as f64 * 1e-6; // time scale 1e-3
                    core.on_burned(s, s.ns, now);
                }
                while let Some(e) = core.poll_event() {
                    black_box(e);
                }
            });
        });
    }
    g.finish();
}

criterion_group!(benches, slice_cycle);
criterion_main!(benches);
