//! The view of the nodes: registration, progress reports and how the
//! snapshot is kept (dead reckoning live, the fluid model simulated).

use crate::busy_index::{LoadBound, LoadLine, PartFn};
use crate::node_model::{
    fluid_advance, FluidExtra, FluidScratch, NodeSpec, NodeState, PartFinished,
};
use crate::policy::Policy;
use crate::protocol::{NodeInfo, PartProgress};
use crate::share::SpareRule;
use crate::time::Time;

use super::*;

/// What the core knows of a part from the last report.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reported {
    pub(super) cpu_done: f64,
    pub(super) share: f64,
    pub(super) at: Time,
}

/// Where the live core's dead reckoning puts `p`'s processor time done at
/// `t` (its last report carried forward at the reported share).
#[cfg(test)]
pub(super) fn reckoned_done(p: &crate::node_model::PartView, r: Option<&Reported>, t: Time) -> f64 {
    match r {
        Some(r) => r.cpu_done + r.share * (t - r.at).max(0.0),
        None => p.cpu_done,
    }
}

/// Bounds on a node's load over `[from, to]` as the live core
/// dead-reckons it (its [`NodeState::required_share`] once the refresh
/// brought it to an instant of the window), with its parts' [`PartFn`]s
/// appended to `fns`. Between reports a
/// part's done time grows linearly (or stays, before the report's
/// instant), so while it is on track its required share
/// `(est - done(t)) / (deadline - t)` is a ratio of two linear functions
/// of `t` with its pole at the deadline, monotone on either side of the
/// report's instant: its extremes over the window are at the window's
/// ends and that instant. Remaining work and time both only shrink, so a
/// part on track at `to` was on track over the whole window; one that may
/// leave the track inside it (it counts 0 then) gets 0 below and nothing
/// above (its share may grow without bound as its deadline nears). Each
/// term gets room for the rounding of the subtraction `est - done` (the
/// largest error, relative to `est + done`, divided by the time left) and
/// of the sum.
pub(super) fn load_bound(
    node: &NodeState,
    reports: &[Option<Reported>],
    from: Time,
    to: Time,
    fns: &mut Vec<PartFn>,
) -> LoadBound {
    fns.extend(node.parts.iter().zip(reports).map(|(p, r)| match r {
        Some(r) => PartFn {
            est_cpu: p.est_cpu,
            cpu_done: r.cpu_done,
            share: r.share,
            at: r.at,
            deadline: p.deadline,
            hard: p.hard,
        },
        None => PartFn::standing(p),
    }));
    // Well above the few ulps the arithmetic can be off by.
    const ROUND: f64 = 1e-12;
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    let first = fns.len() - node.parts.len();
    // The line runs from the latest report instant in the window on:
    // before a report's instant its part's done time stands still, after
    // it grows (a kink), and a line must follow one piece.
    let a = fns[first..]
        .iter()
        .map(|f| f.at)
        .filter(|t| !t.is_nan())
        .fold(from, f64::max);
    let mut line = (a < to - 1e-3).then_some((0.0f64, 0.0f64, 0.0f64));
    // The remaining time at both ends of the line, rounding included.
    let (mut rem_a, mut rem_to) = (0.0f64, 0.0f64);
    for f in &fns[first..] {
        let (qa, qb) = (f.required(from), f.required(to));
        let (mut l, mut h) = (qa.min(qb), qa.max(qb));
        if f.at > from && f.at < to {
            let q = f.required(f.at);
            l = l.min(q);
            h = h.max(q);
        }
        // Off track (0) exactly when not on track: an on-track share is
        // a positive ratio.
        if qb == 0.0 {
            if qa == 0.0 {
                // Off track from the start: 0 throughout.
                continue;
            }
            l = 0.0;
            h = f64::INFINITY;
        }
        if h.is_infinite() {
            hi = f64::INFINITY;
            continue;
        }
        // On track at `to`: more than TIME_EPS of time left there. The
        // instants enter the subtractions too (`t - at`, `deadline - t`).
        let scale = 1.0 + f.est_cpu.abs() + f.cpu_done_at(to).abs() + to.abs() + f.deadline.abs();
        let room = ROUND * scale / (f.deadline - to) + ROUND * h;
        lo += l - room;
        hi += h + room;
        if let Some((v0, slope, err)) = &mut line {
            // On [a, to] the share is (R - s t) / (D - t) with R, s, D
            // fixed: its derivative is (q - s) / (D - t) and its second
            // 2 (q - s) / (D - t)^2, of one sign (q - s keeps its sign),
            // so the share stays on one side of its chord, within a
            // quarter of the window times the change of the derivative
            // (where the tangents at the ends meet). Both ends' floats
            // are within `room` of the real shares, and so is the exact
            // load's float of each part at any instant.
            let qa = f.required(a);
            let s = if f.at.is_nan() { 0.0 } else { f.share };
            let (da, db) = ((qa - s) / (f.deadline - a), (qb - s) / (f.deadline - to));
            *v0 += qa;
            *slope += (qb - qa) / (to - a);
            *err += 0.25 * (to - a) * (db - da).abs() * (1.0 + 1e-9) + 2.0 * room;
            // `est - done` is off by the rounding of its operands, the
            // instants included (`scale`).
            rem_a += (f.est_cpu - f.cpu_done_at(a)).max(0.0) + ROUND * scale;
            rem_to += (f.est_cpu - f.cpu_done_at(to)).max(0.0) + ROUND * scale;
        }
    }
    let n = node.parts.len() as f64;
    if hi.is_infinite() {
        return LoadBound {
            lo: lo.max(0.0),
            hi,
            line: LoadLine::NONE,
        };
    }
    let sum_room = ROUND * n * hi;
    LoadBound {
        lo: (lo - sum_room).max(0.0),
        hi: hi + sum_room,
        line: match line {
            Some((v0, slope, err)) => LoadLine {
                t0: a,
                v0,
                slope,
                // The sums' rounding, and the line's own evaluation.
                err: err + sum_room + ROUND * (1.0 + v0.abs() + slope.abs() * (to - a)),
                // Libra+$ adds its own room for the evaluation's rounding.
                rem0: rem_a,
                rem_slope: ((rem_to - rem_a) / (to - a)).min(0.0),
            },
            None => LoadLine::NONE,
        },
    }
}

/// How the core keeps its snapshot of the nodes (see the module docs).
#[derive(Debug)]
pub(super) enum Tracking {
    /// Live: progress reports and dead reckoning. Parallel to the view,
    /// and within a node to its parts (same order): the last report of
    /// each part, `None` until one came. Kept beside the parts rather than
    /// in a map so that bringing the snapshot up to date is a walk over
    /// contiguous memory with no hashing: it runs before every decision,
    /// over every node.
    Reported(Vec<Vec<Option<Reported>>>),
    /// Simulated: the exact fluid model, one execution side per node
    /// (parallel to the view).
    Simulated {
        extras: Vec<FluidExtra>,
        scratch: FluidScratch,
        rule: SpareRule,
        finished: Vec<PartFinished>,
        /// The latest instant the nodes were brought to. Only the busy
        /// nodes are advanced (an idle node's advance only moves its
        /// clock); an idle node is brought here when a part is placed on
        /// it, by the same [`fluid_advance`], so every step is the one
        /// the walk over every node took.
        synced: Time,
        /// Busy nodes whose parts changed in an advance (scratch).
        changed: Vec<usize>,
    },
}

/// Debug builds check the simulated core's busy index against its nodes
/// at every advance up to this many nodes (the check builds an index).
const DEBUG_AGREE_UP_TO: usize = 1024;

impl ManagerCore {
    pub(super) fn add_node(&mut self, link: LinkId, local: u32, host: &str, spec: NodeSpec) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(LiveNode {
            link,
            local,
            alive: true,
            host: host.to_string(),
        });
        self.view_index.push(Some(self.view.len()));
        self.view_ids.push(id);
        self.view.push(NodeState::new(spec));
        if let Tracking::Reported(reports) = &mut self.tracking {
            reports.push(Vec::new());
        }
        let v = self.view.len() - 1;
        self.busy.add(v, &self.view[v]);
        id
    }

    /// Registers the nodes of a link; returns their global ids. A node with
    /// impossible numbers (speed or capacity not finite and positive, a
    /// capacity beyond [`MAX_NODE_CAPACITY`] cores) refuses the whole
    /// registration: policies would divide by its speed.
    pub fn register(
        &mut self,
        link: LinkId,
        host: &str,
        infos: &[NodeInfo],
    ) -> Result<Vec<u32>, CoreError> {
        for info in infos {
            let bad = |field, want, value| CoreError::BadNode {
                host: host.to_string(),
                local: info.local,
                field,
                want,
                value,
            };
            if !(info.speed.is_finite() && info.speed > 0.0) {
                return Err(bad("speed", "finite and > 0", info.speed));
            }
            if !(info.capacity.is_finite()
                && info.capacity > 0.0
                && info.capacity <= MAX_NODE_CAPACITY)
            {
                return Err(bad("capacity", "> 0 and <= 1024 (cores)", info.capacity));
            }
        }
        let mut ids = Vec::with_capacity(infos.len());
        for info in infos {
            let spec = NodeSpec {
                id: self.nodes.len(),
                speed: info.speed,
                memory_kb: info.memory_kb,
                disk_mb: info.disk_mb,
            };
            let id = self.add_node(link, info.local, host, spec);
            if let Policy::Queue(q) = &mut self.policy {
                q.set_node_available(id as usize, true);
            }
            ids.push(id);
        }
        Ok(ids)
    }

    /// Brings the snapshot up to `now`: dead reckoning from the reports
    /// (live), or the exact fluid model, whose completions up to `now` are
    /// booked here, before anything that happens at `now` (simulated).
    pub(super) fn refresh(&mut self, now: Time) {
        match &mut self.tracking {
            Tracking::Reported(reports) => {
                // Only the nodes holding parts (most of a large cluster may
                // be idle), and of those only the ones that changed since
                // they were last brought up to `now`: a burst of decisions
                // at one instant renews only the node the previous job
                // went to. Their loads are remembered for Libra's walk.
                let view = &mut self.view;
                self.busy.renew_loads(now, |v| {
                    let st = &mut view[v];
                    for (p, r) in st.parts.iter_mut().zip(&reports[v]) {
                        if let Some(r) = r {
                            p.cpu_done = r.cpu_done + r.share * (now - r.at).max(0.0);
                        }
                    }
                    st.required_share(now)
                });
            }
            Tracking::Simulated {
                extras,
                scratch,
                rule,
                finished,
                synced,
                changed,
            } => {
                // The busy nodes only, in view order as the walk over
                // every node met them (so the completions come in its
                // order); idle nodes catch up when a part is placed.
                *synced = synced.max(now);
                changed.clear();
                let every = walks_every_node().then_some(0..self.view.len());
                let busy = every.is_none().then(|| self.busy.busy());
                for k in every
                    .into_iter()
                    .flatten()
                    .chain(busy.into_iter().flatten())
                {
                    let st = &mut self.view[k];
                    let before = st.parts.len();
                    fluid_advance(st, &mut extras[k], now, *rule, scratch, finished);
                    if st.parts.len() != before {
                        changed.push(k);
                    }
                }
                for &k in changed.iter() {
                    self.busy.update(k, &self.view[k]);
                }
                // Debug builds check the index against the nodes, where
                // that is cheap.
                debug_assert!(
                    self.view.len() > DEBUG_AGREE_UP_TO || self.busy.agrees_with(&self.view),
                    "at {now}: the busy index of the simulated nodes is out of step with them"
                );
                let mut done = std::mem::take(finished);
                for f in done.drain(..) {
                    let k = self.index.at(f.job);
                    let index = self.job_parts(k).iter().position(|p| p.node == f.node);
                    let index = index.expect("a simulated part runs on one of its job's nodes");
                    self.book_part_finished(now, k, index, f.at);
                }
                if let Tracking::Simulated { finished, .. } = &mut self.tracking {
                    *finished = done;
                }
            }
        }
    }

    /// Lets every simulated part run to its end (the simulator's last
    /// step). Nothing happens for a live core, whose nodes report.
    pub fn run_to_end(&mut self) {
        if matches!(self.tracking, Tracking::Simulated { .. }) {
            self.refresh(Time::INFINITY);
        }
    }

    /// Processor time simulated nodes gave to parts (node-seconds); 0 for
    /// a live core.
    pub fn busy_time(&self) -> f64 {
        match &self.tracking {
            Tracking::Simulated { extras, .. } => {
                let s: f64 = extras.iter().map(FluidExtra::busy_time).sum();
                // Only when a fault retired a node: `s + 0.0` could turn a
                // -0.0 into 0.0, and fault-free results must not change.
                if self.retired_busy != 0.0 {
                    s + self.retired_busy
                } else {
                    s
                }
            }
            Tracking::Reported(_) => 0.0,
        }
    }

    /// A progress report from `link` at node time `at`.
    pub fn progress(
        &mut self,
        link: LinkId,
        at: Time,
        parts: &[PartProgress],
    ) -> Result<(), CoreError> {
        // Check the whole report before taking any of it.
        let bad = |what: String, field, want, value| CoreError::BadReport {
            host: self.link_host(link).to_string(),
            link,
            what,
            field,
            want,
            value,
        };
        if !at.is_finite() {
            return Err(bad("report".into(), "at", "finite", at));
        }
        for p in parts {
            self.global_of(link, p.part)?;
            let what = || format!("part {}/{}", p.part.job, p.part.index);
            if !(p.work_done.is_finite() && p.work_done >= 0.0) {
                return Err(bad(what(), "work_done", "finite and >= 0", p.work_done));
            }
            if !(0.0..=1.0).contains(&p.share) {
                return Err(bad(what(), "share", "in [0, 1]", p.share));
            }
        }
        for p in parts {
            let g = self.global_of(link, p.part)?;
            // A part no longer in the view (completed, or its node gone)
            // has nothing left to dead-reckon: the report is dropped.
            let Some(v) = self.view_index[g as usize] else {
                continue;
            };
            let node = &self.view[v];
            let Some(i) = node.find_part(p.part.job) else {
                continue;
            };
            let speed = node.spec.speed;
            if let Tracking::Reported(reports) = &mut self.tracking {
                reports[v][i] = Some(Reported {
                    cpu_done: p.work_done / speed,
                    share: p.share,
                    at,
                });
                self.busy.forget_load(v);
            }
        }
        if let Tracking::Reported(reports) = &self.tracking {
            let view = &self.view;
            self.busy.settle(at, |v, from, to, fns| {
                load_bound(&view[v], &reports[v], from, to, fns)
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{busy, nodes};

    /// A node of two parts over the window [5, 15], by hand. Part A: 60 s
    /// estimated, reported at 0 with nothing done at share 0.5, deadline
    /// 100: it needs (60 - 0.5 t) / (100 - t), 57.5 / 95 at 5 and 52.5 /
    /// 85 at 15 (its report's instant, 0, lies before the window and does
    /// not count). Part B: 30 s estimated, 10 done, never reported,
    /// deadline 50: 20 / (50 - t), 20 / 45 and 20 / 35. Both grow, so the
    /// bound is their sum at 5 and at 15; the line runs from 5 through
    /// both ends, its band a quarter of the window times the change of
    /// each part's slope ((q - s) / (deadline - t) at both ends); the
    /// remaining time is 57.5 + 20 at 5, falling by 0.5 a second. Every
    /// bound holds the exact load at every tenth of a second of the
    /// window, and is within 1e-9 of these values (its room for rounding
    /// is ~1e-12).
    #[test]
    fn a_nodes_load_bound_and_line_by_hand() {
        let mut n = nodes(1);
        busy(&mut n[0], 1, 60.0, 100.0);
        busy(&mut n[0], 2, 30.0, 50.0);
        n[0].parts[1].cpu_done = 10.0;
        let reports = [
            Some(Reported {
                cpu_done: 0.0,
                share: 0.5,
                at: 0.0,
            }),
            None,
        ];
        let mut fns = Vec::new();
        let b = load_bound(&n[0], &reports, 5.0, 15.0, &mut fns);
        let (qa5, qa15) = (57.5 / 95.0, 52.5 / 85.0);
        let (qb5, qb15) = (20.0 / 45.0, 20.0 / 35.0);
        let close = |got: f64, want: f64, what: &str| {
            assert!((got - want).abs() <= 1e-9, "{what}: {got} against {want}");
        };
        close(b.lo, qa5 + qb5, "lo");
        close(b.hi, qa15 + qb15, "hi");
        let l = b.line;
        assert_eq!(l.t0, 5.0);
        close(l.v0, qa5 + qb5, "v0");
        close(l.slope, (qa15 + qb15 - qa5 - qb5) / 10.0, "slope");
        let bend_a = ((qa15 - 0.5) / 85.0 - (qa5 - 0.5) / 95.0).abs();
        let bend_b = (qb15 / 35.0 - qb5 / 45.0).abs();
        close(l.err, 0.25 * 10.0 * (bend_a + bend_b), "err");
        close(l.rem0, 77.5, "rem0");
        close(l.rem_slope, -0.5, "rem_slope");
        for i in 0..=100 {
            let t = 5.0 + f64::from(i) * 0.1;
            let exact: f64 = fns.iter().map(|f| f.required(t)).sum();
            assert!(
                b.lo <= exact && exact <= b.hi,
                "at {t}: {exact} outside the bound {b:?}"
            );
            let (lo, hi) = l.band(t).unwrap();
            assert!(
                lo <= exact && exact <= hi,
                "at {t}: {exact} outside the line's band"
            );
            let rem: f64 = fns.iter().map(|f| f.est_cpu - f.cpu_done_at(t)).sum();
            assert!(
                rem <= l.rem_bound(t),
                "at {t}: remaining {rem} above its bound"
            );
        }
    }

    /// The same node at trace timestamps of 1e8 s (an ulp there is
    /// ~1.5e-8 s): the bounds, the line's band and the remaining-time
    /// bound still hold the exact load at 1,000 instants of the window.
    #[test]
    fn a_nodes_load_bound_holds_at_trace_timestamps() {
        let base = 1e8;
        let mut n = nodes(1);
        busy(&mut n[0], 1, 60.0, base + 100.0);
        busy(&mut n[0], 2, 30.0, base + 50.0);
        n[0].parts[1].cpu_done = 10.0;
        let reports = [
            Some(Reported {
                cpu_done: 0.0,
                share: 0.5,
                at: base,
            }),
            None,
        ];
        let mut fns = Vec::new();
        let (from, to) = (base + 5.0, base + 15.0);
        let b = load_bound(&n[0], &reports, from, to, &mut fns);
        for i in 0..=1000 {
            let t = from + f64::from(i) * 0.01;
            let exact: f64 = fns.iter().map(|f| f.required(t)).sum();
            assert!(
                b.lo <= exact && exact <= b.hi,
                "at {t}: {exact} outside the bound {b:?}"
            );
            let (lo, hi) = b.line.band(t).unwrap();
            assert!(
                lo <= exact && exact <= hi,
                "at {t}: {exact} outside the line's band {lo}..{hi}"
            );
            let rem: f64 = fns.iter().map(|f| f.est_cpu - f.cpu_done_at(t)).sum();
            assert!(
                rem <= b.line.rem_bound(t),
                "at {t}: remaining {rem} above its bound"
            );
        }
    }

    /// Instants of `[from, to]`: a grid of 2,000 steps, and the 2,000
    /// floats next to each end (the last ones before the end of a window
    /// are where a deadline just after it divides the rounding most).
    fn instants(from: Time, to: Time) -> Vec<Time> {
        let mut ts: Vec<Time> = (0..=2000)
            .map(|i| from + (to - from) * f64::from(i) / 2000.0)
            .collect();
        let (mut up, mut down) = (from, to);
        for _ in 0..2000 {
            up = up.next_up();
            down = down.next_down();
            ts.extend([up, down]);
        }
        ts
    }

    /// Checks that `b` holds the exact load at every instant of `ts`: the
    /// float sum of the parts' required shares, bit for bit what the
    /// decision computes once the refresh brought the view to the instant
    /// (checked too); that the line exists over the whole window and its
    /// band holds that load; and that the remaining processor time is
    /// within its bound.
    fn assert_holds(
        node: &NodeState,
        reports: &[Option<Reported>],
        fns: &[PartFn],
        b: &LoadBound,
        ts: &[Time],
    ) {
        let mut view = node.clone();
        for &t in ts {
            for (p, r) in view.parts.iter_mut().zip(reports) {
                if let Some(r) = r {
                    p.cpu_done = r.cpu_done + r.share * (t - r.at).max(0.0);
                }
            }
            let exact: f64 = fns.iter().map(|f| f.required(t)).sum();
            assert_eq!(exact.to_bits(), view.required_share(t).to_bits(), "at {t}");
            assert!(
                b.lo <= exact && exact <= b.hi,
                "at {t}: {exact} outside the bound {b:?}"
            );
            let (lo, hi) = b.line.band(t).expect("a line over the window");
            assert!(
                lo <= exact && exact <= hi,
                "at {t}: {exact} outside the line's band {lo}..{hi}"
            );
            let rem: f64 = fns.iter().map(|f| f.est_cpu - f.cpu_done_at(t)).sum();
            let bound = b.line.rem_bound(t);
            assert!(
                rem <= bound,
                "at {t}: remaining {rem} above its bound {bound}"
            );
        }
    }

    /// A part a million seconds into its run that ends exactly at its
    /// deadline, 1e-5 s after the window's end, at its reported share
    /// 0.3: reported at 1.1e6 (the window's start, to 1.1e6 + 10) with
    /// 1.05e6 - 0.3 x (10 + 1e-5) of 1.05e6 done, so in real arithmetic
    /// 0.3 x (D - t) is left at every instant and the share required is
    /// 0.3 throughout. In floats the done time (~1.05e6, above 2^20: an
    /// ulp of 2^-32, 2.33e-10) rounds by up to 1.16e-10 s, which
    /// `est - done` carries (the subtraction itself is exact, the two
    /// within a factor of 2): the computed share strays from 0.3 by up to
    /// 1.16e-10 / (D - t), ~1.2e-11 at the window's start and ~1.2e-5 at
    /// its end, far beyond 1e-12 x the share. The bounds, the line's band (0.3 at the start, flat) and
    /// the remaining-time bound hold every one of those floats.
    #[test]
    fn a_long_parts_rounding_near_its_deadline_stays_in_the_room() {
        let (from, to) = (1.1e6, 1.1e6 + 10.0);
        let deadline = to + 1e-5;
        let mut n = nodes(1);
        busy(&mut n[0], 1, 1.05e6, deadline);
        let reports = [Some(Reported {
            cpu_done: 1.05e6 - 0.3 * (deadline - from),
            share: 0.3,
            at: from,
        })];
        let mut fns = Vec::new();
        let b = load_bound(&n[0], &reports, from, to, &mut fns);
        assert!(b.hi < 1.0, "{b:?}");
        assert_eq!(b.line.t0, from);
        assert!((b.line.v0 - 0.3).abs() <= 1e-9, "{:?}", b.line);
        assert!(b.line.slope.abs() <= 1e-6, "{:?}", b.line);
        assert_holds(&n[0], &reports, &fns, &b, &instants(from, to));
    }

    /// The core takes a report's work done at face value (it checks only
    /// that it is finite and not negative), so the bound must hold when
    /// it exceeds what the clock shows: 1e9 s of processor time done at trace time 100. The part
    /// ends exactly at its deadline, 20 s after the window [100, 110],
    /// at its share 0.3 (1e9 estimated, 1e9 - 0.3 x 30 done at 100): 0.3
    /// required throughout in real arithmetic, while the floats of the
    /// done time (an ulp of 1.2e-7 s) make the computed share stray by up
    /// to 6e-8 / 20 = 3e-9. The rounding is of the done time, not of the
    /// instants (~100): the room must scale with the part's own numbers.
    #[test]
    fn a_report_of_more_work_than_the_clock_shows_keeps_the_bound() {
        let (from, to) = (100.0, 110.0);
        let deadline = to + 20.0;
        let mut n = nodes(1);
        busy(&mut n[0], 1, 1e9, deadline);
        let reports = [Some(Reported {
            cpu_done: 1e9 - 0.3 * (deadline - from),
            share: 0.3,
            at: from,
        })];
        let mut fns = Vec::new();
        let b = load_bound(&n[0], &reports, from, to, &mut fns);
        // Within 1e-3 of 0.3 both: room of ~1e-12 x 2e9 / 20 = 1e-4.
        assert!(
            (b.lo - 0.3).abs() <= 1e-3 && (b.hi - 0.3).abs() <= 1e-3,
            "{b:?}"
        );
        assert_eq!(b.line.t0, from);
        assert_holds(&n[0], &reports, &fns, &b, &instants(from, to));
    }

    /// A node sixteen times overcommitted from the trace's start: 16
    /// parts of 1e7 s estimated, nothing done, deadline 1e7, reported at
    /// 0 at a sixteenth of the node each. Each needs (1e7 - t / 16) /
    /// (1e7 - t): 1 at 0 and (1e7 - 0.625) / (1e7 - 10) at 10, so the load
    /// runs from 16 to 16 (1e7 - 0.625) / (1e7 - 10) over [0, 10], and
    /// the bounds are within 1e-9 of those. The sum of 16 shares near 1
    /// rounds by ulps of 16 (3.6e-15), and the rooms (each part's and the
    /// sum's) keep the bound, the line's band (from 0, the trace's start)
    /// and the remaining-time bound on the right side of it.
    #[test]
    fn an_overcommitted_nodes_sum_stays_in_its_bounds() {
        let (from, to) = (0.0, 10.0);
        let mut n = nodes(1);
        let mut reports = Vec::new();
        for j in 1..=16 {
            busy(&mut n[0], j, 1e7, 1e7);
            reports.push(Some(Reported {
                cpu_done: 0.0,
                share: 1.0 / 16.0,
                at: 0.0,
            }));
        }
        let mut fns = Vec::new();
        let b = load_bound(&n[0], &reports, from, to, &mut fns);
        let end = 16.0 * (1e7 - 0.625) / (1e7 - 10.0);
        assert!((b.lo - 16.0).abs() <= 1e-9, "{b:?}");
        assert!((b.hi - end).abs() <= 1e-9, "{b:?}");
        assert_eq!(b.line.t0, from);
        assert_holds(&n[0], &reports, &fns, &b, &instants(from, to));
    }
}
