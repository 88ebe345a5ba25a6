//! Cost of the node core's hot path: one slice issued and accounted
//! (`poll_slice` + `on_burned`), with 3 and 64 parts on the node; and a
//! short part's whole life (placed in a burst of 64, sliced, completed)
//! on a node holding 64 or 20,000 other parts, as under `live_latency`'s
//! flood with best fit, where a few nodes hold thousands of parts each.
//! This is the bookkeeping the actor thread does, without the messaging.
//! The end-to-end figures (fidelity, overhead, idle nodes) are
//! `libratory-node bench`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use common::share::SpareRule;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use node::{EmulatedNodeSpec, NodeEngine, PartSpec, SliceConfig};

fn long_part(k: u64) -> PartSpec {
    PartSpec {
        part_id: k,
        job_id: k,
        estimate: 1e9,
        actual: 1e9,
        deadline_abs: 1e12,
        memory_kb: 0,
        disk_mb: 0,
        ret: 0.0,
        hard: false,
    }
}

fn core_with(parts: u64) -> NodeEngine {
    core_holding((0..parts).map(long_part))
}

fn core_holding(parts: impl IntoIterator<Item = PartSpec>) -> NodeEngine {
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
        // As a live node process runs: the manager keeps its own view.
        share_events: false,
        ..SliceConfig::default()
    };
    let mut core = NodeEngine::new(spec, cfg).expect("valid node");
    core.place_batch(parts, 0.0, |_, r| {
        r.expect("fits");
    });
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

/// Parts of a burst in `short_parts`: what one dispatch frame of the
/// flood brings a node.
const BURST: u64 = 64;

/// A burst of short parts (1 ms of work each at deadline 100 s: share
/// 1e-5, as the flood's) placed at once on a node holding `held` long
/// parts, then sliced until every short one completed. The time is per
/// short part.
fn short_parts(c: &mut Criterion) {
    let mut g = c.benchmark_group("short_part_life");
    g.sample_size(10);
    for held in [64u64, 20_000] {
        g.bench_with_input(BenchmarkId::new("held", held), &held, |b, &held| {
            // Held parts that need next to nothing (1,000 s of work at a
            // deadline of 1e12 s), so that the short ones get the node.
            let mut core = core_holding((0..held).map(|k| PartSpec {
                estimate: 1e3,
                actual: 1e3,
                ..long_part(k)
            }));
            let mut now = 0.0;
            let mut next_id = held;
            b.iter_custom(|iters| {
                let t = std::time::Instant::now();
                for _ in 0..iters.div_ceil(BURST) {
                    let first = next_id;
                    next_id += BURST;
                    let burst = (first..next_id).map(|k| PartSpec {
                        estimate: 1e-3,
                        actual: 1e-3,
                        deadline_abs: now + 100.0,
                        ..long_part(k)
                    });
                    core.place_batch(burst, now, |_, r| {
                        r.expect("fits");
                    });
                    let mut done = 0;
                    while done < BURST {
                        let s = core.poll_slice(now).or_else(|| {
                            now = core.poll_timeout().unwrap_or(now).max(now);
                            core.handle_timeout(now);
                            core.poll_slice(now)
                        });
                        if let Some(s) = s {
                            now += s.ns as f64 * 1e-6;
                            core.on_burned(s, s.ns, now);
                        }
                        while let Some(e) = core.poll_event() {
                            if matches!(e, node::NodeEvent::Completed(ref p) if p.part_id >= first)
                            {
                                done += 1;
                            }
                        }
                    }
                }
                // Per short part: a burst's time over its parts.
                t.elapsed() * (iters as u32) / (iters.div_ceil(BURST) * BURST) as u32
            });
        });
    }
    g.finish();
}

criterion_group!(benches, slice_cycle, short_parts);
criterion_main!(benches);
