//! Pulsar's controller loop (§4, §5) as a sans-IO state machine: enforcers' interval reports
//! in, per-flow allocation vectors out, every control interval (default 1 s).
//!
//! ```text
//!  report(flow, FlowReport) ...  ──►  poll(now) ──► demand estimates (eq. 6, EWMA)
//!                                              ├──► appliance capacity estimates (§4.3)
//!                                              └──► local + global allocation (eqs. 2–3)
//!                                                   ──► ControlOutput { rates per flow, hop }
//! ```
//!
//! The controller never reads a clock: [`Controller::poll`] runs one control step when `now`
//! has reached [`Controller::next_run_ns`], using the reports received since the last step.
//! The appliance signals are derived from the reports as pulsar §4.3 describes, one reading
//! per sub-interval sample when the reports carry [`FlowSample`]s (the estimator counts its
//! three consistent readings over them), else one per interval: throughput is what flows saw
//! completed at the appliance, the outstanding tokens `O` the sum of the flows' outstanding
//! entries for it (footnote 6), and a tenant *falls short* when it completed less than
//! `(1 − tolerance)` of `min(G, (u + o)/T)` there: its guarantee `G` on the virtual appliance,
//! or what it could have completed in the sample of length `T` — what it sent plus what it
//! had outstanding — if that is less. The estimator counts a shortfall as a VDC violation
//! only while the appliance queues (see `tailbound_shaping::estimate`).
//!
//! Network links are allocated up to `1 − link_headroom` of their rate (pulsar §5 keeps
//! 2–5%): a link allocated in full queues the windows of closed-loop flows, and its FIFO then
//! shares it by window size.
use crate::error::AllocError;
use crate::mra::Mechanism;
use crate::steps::{allocate_vdc, VdcAllocation};
use crate::vdc::{Charge, Datacenter, ResourceKind};
use tailbound_shaping::estimate::{
    ApplianceReading, CapacityConfig, CapacityEstimator, CapacityState, DemandEstimator,
    DemandReport, Phase,
};

/// How the controller runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerConfig {
    /// control interval [ns] (pulsar: 1 s)
    pub interval_ns: u64,
    /// the provider's global MRA (pulsar's experiments: H-DRF)
    pub global: Mechanism,
    /// EWMA weight of the newest interval's demand, in (0, 1]
    pub demand_gain: f64,
    /// estimate the capacities of appliances marked `estimate`; otherwise use their
    /// configured capacity
    pub estimate_capacity: bool,
    /// settings of the capacity estimators (the window comes from each appliance's
    /// `capacity` and `max_capacity`)
    pub capacity: CapacityConfig,
    /// relative shortfall below the guarantee that counts as a VDC violation
    pub violation_tolerance: f64,
    /// fraction of every network link's rate kept out of the allocations (pulsar §5: 2–5%),
    /// so that a link allocated in full does not queue the windows of closed-loop flows
    pub link_headroom: f64,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            interval_ns: 1_000_000_000,
            global: Mechanism::Hdrf,
            demand_gain: 0.5,
            estimate_capacity: true,
            capacity: CapacityConfig::new(1.0, 2.0),
            violation_tolerance: 0.1,
            link_headroom: 0.05,
        }
    }
}

/// One interval's statistics of a flow from its enforcer, per hop of its path [tokens].
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowReport {
    /// tokens its requests consumed (let through by the enforcer)
    pub utilization: Vec<f64>,
    /// tokens of requests queued at the enforcer at the end of the interval
    pub backlog: Vec<f64>,
    /// average tokens queued at the enforcer
    pub queueing: Vec<f64>,
    /// average tokens outstanding beyond the enforcer
    pub outstanding: Vec<f64>,
    /// tokens of requests that completed (response received) during the interval
    pub completed: Vec<f64>,
    /// the interval cut into equal sub-interval samples, in order (pulsar §5: the enforcer's
    /// timer); empty: the interval is one sample. The capacity estimators count their
    /// "consistent readings" over these.
    #[serde(default)]
    pub samples: Vec<FlowSample>,
}

/// One sub-interval of a flow's report, per hop [tokens].
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSample {
    /// tokens let through by the enforcer during the sample
    pub utilization: Vec<f64>,
    /// average tokens outstanding beyond the enforcer during the sample
    pub outstanding: Vec<f64>,
    /// tokens of requests that completed during the sample
    pub completed: Vec<f64>,
}

/// What an enforcer measures of one flow, per hop of its path [tokens]: the counters and time
/// integrals behind each interval's [`FlowReport`] and its sub-interval [`FlowSample`]s. The
/// real enforcer proxy and the VDC simulator keep one each per flow; every level change takes
/// `now` and first brings the integrals up to it (no clock is read).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowMeter {
    /// tokens let through by the enforcer since the interval began
    utilization: Vec<f64>,
    /// tokens of requests completed since the interval began
    completed: Vec<f64>,
    /// tokens queued at the enforcer now
    queued: Vec<f64>,
    /// tokens let through and not completed now
    outstanding: Vec<f64>,
    /// time integrals of `queued` and `outstanding` since the interval began [tokens·ns]
    queued_sum: Vec<f64>,
    outstanding_sum: Vec<f64>,
    /// when the integrals were last brought up to date, and when the interval began [ns]
    since_ns: u64,
    interval_from_ns: u64,
    /// `utilization`, `completed`, `outstanding_sum` when the current sample began, and when
    mark_utilization: Vec<f64>,
    mark_completed: Vec<f64>,
    mark_outstanding: Vec<f64>,
    mark_ns: u64,
    /// the interval's closed samples
    samples: Vec<FlowSample>,
}

impl FlowMeter {
    /// A meter for a flow of `hops` hops whose first interval begins at `now_ns`.
    pub fn new(hops: usize, now_ns: u64) -> FlowMeter {
        let z = vec![0.0; hops];
        FlowMeter {
            utilization: z.clone(),
            completed: z.clone(),
            queued: z.clone(),
            outstanding: z.clone(),
            queued_sum: z.clone(),
            outstanding_sum: z.clone(),
            since_ns: now_ns,
            interval_from_ns: now_ns,
            mark_utilization: z.clone(),
            mark_completed: z.clone(),
            mark_outstanding: z,
            mark_ns: now_ns,
            samples: Vec::new(),
        }
    }

    /// Adds the current levels × the time since the last change to the integrals.
    fn advance(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.since_ns) as f64;
        if dt > 0.0 {
            for h in 0..self.queued_sum.len() {
                self.queued_sum[h] += self.queued[h].max(0.0) * dt;
                self.outstanding_sum[h] += self.outstanding[h].max(0.0) * dt;
            }
        }
        self.since_ns = self.since_ns.max(now_ns);
    }

    /// `sign` × `costs` join (1) or leave (−1) the enforcer's queue at `now_ns`.
    pub fn queue(&mut self, now_ns: u64, costs: &[f64], sign: f64) {
        self.advance(now_ns);
        add(&mut self.queued, costs, sign);
    }

    /// `sign` × `costs` go out to the appliances (1) or come back (−1) at `now_ns`.
    pub fn go_out(&mut self, now_ns: u64, costs: &[f64], sign: f64) {
        self.advance(now_ns);
        add(&mut self.outstanding, costs, sign);
    }

    /// `costs` (a correction may be negative) are let through by the enforcer.
    pub fn let_through(&mut self, costs: &[f64]) {
        add(&mut self.utilization, costs, 1.0);
    }

    /// `cost` tokens complete at hop `hop`.
    pub fn complete(&mut self, hop: usize, cost: f64) {
        if let Some(c) = self.completed.get_mut(hop) {
            *c += cost;
        }
    }

    /// A request of `costs` completes at every hop of the path at once.
    pub fn complete_path(&mut self, costs: &[f64]) {
        add(&mut self.completed, costs, 1.0);
    }

    /// Tokens queued at the enforcer now, per hop.
    pub fn queued(&self) -> &[f64] {
        &self.queued
    }

    /// Closes the sample that began at the last mark and starts the next at `now_ns`.
    pub fn close_sample(&mut self, now_ns: u64) {
        self.advance(now_ns);
        let span = now_ns.saturating_sub(self.mark_ns).max(1) as f64;
        let diff = |a: &[f64], b: &[f64]| -> Vec<f64> {
            a.iter().zip(b).map(|(x, y)| (x - y).max(0.0)).collect()
        };
        self.samples.push(FlowSample {
            utilization: diff(&self.utilization, &self.mark_utilization),
            outstanding: diff(&self.outstanding_sum, &self.mark_outstanding)
                .into_iter()
                .map(|v| v / span)
                .collect(),
            completed: diff(&self.completed, &self.mark_completed),
        });
        self.mark_utilization.clone_from(&self.utilization);
        self.mark_completed.clone_from(&self.completed);
        self.mark_outstanding.clone_from(&self.outstanding_sum);
        self.mark_ns = now_ns;
    }

    /// Closes the interval at `now_ns` (and its last sample), returns its report and begins
    /// the next interval; queued and outstanding requests stay.
    pub fn report(&mut self, now_ns: u64) -> FlowReport {
        self.close_sample(now_ns);
        let span = now_ns.saturating_sub(self.interval_from_ns).max(1) as f64;
        let pos = |v: &[f64]| v.iter().map(|x| x.max(0.0)).collect::<Vec<_>>();
        let mean = |v: &[f64]| v.iter().map(|x| (x / span).max(0.0)).collect::<Vec<_>>();
        let report = FlowReport {
            utilization: pos(&self.utilization),
            backlog: pos(&self.queued),
            queueing: mean(&self.queued_sum),
            outstanding: mean(&self.outstanding_sum),
            completed: pos(&self.completed),
            samples: std::mem::take(&mut self.samples),
        };
        for v in [
            &mut self.utilization,
            &mut self.completed,
            &mut self.queued_sum,
            &mut self.outstanding_sum,
            &mut self.mark_utilization,
            &mut self.mark_completed,
            &mut self.mark_outstanding,
        ] {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
        self.interval_from_ns = self.interval_from_ns.max(now_ns);
        report
    }
}

fn add(v: &mut [f64], c: &[f64], sign: f64) {
    for (x, y) in v.iter_mut().zip(c) {
        *x += sign * y;
    }
}

/// What one control step decided.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlOutput {
    /// when the step ran [ns]
    pub at_ns: u64,
    /// both allocation steps, per flow and hop [tokens/s]
    pub allocation: VdcAllocation,
    /// the demand estimates used, per flow and hop [tokens/s]
    pub demand: Vec<Vec<f64>>,
    /// the capacity used for every physical resource [tokens/s]
    pub capacity: Vec<f64>,
    /// per physical resource: the estimator's phase (appliances being estimated)
    pub phase: Vec<Option<Phase>>,
    /// per tenant: its guarantee was violated at some appliance during the last interval
    pub violated: Vec<bool>,
}

/// The controller; see the module docs.
#[derive(Debug, Clone)]
pub struct Controller {
    dc: Datacenter,
    cfg: ControllerConfig,
    demand: Vec<DemandEstimator>,
    reports: Vec<Option<FlowReport>>,
    estimators: Vec<Option<CapacityEstimator>>,
    capacity: Vec<f64>,
    last: Option<VdcAllocation>,
    next_ns: u64,
}

impl Controller {
    /// A controller for `dc` whose first step runs at `now_ns`.
    ///
    /// # Errors
    /// [`AllocError::Invalid`] for a zero interval or invalid estimator settings.
    pub fn new(
        dc: Datacenter,
        cfg: ControllerConfig,
        now_ns: u64,
    ) -> Result<Controller, AllocError> {
        let invalid = |message: String| AllocError::Invalid {
            context: "controller".into(),
            message,
        };
        if cfg.interval_ns == 0 {
            return Err(invalid("the control interval must be > 0 ns".into()));
        }
        if !(cfg.violation_tolerance.is_finite() && (0.0..1.0).contains(&cfg.violation_tolerance)) {
            return Err(invalid(format!(
                "violation tolerance {} must be within [0, 1)",
                cfg.violation_tolerance
            )));
        }
        if !(cfg.link_headroom.is_finite() && (0.0..1.0).contains(&cfg.link_headroom)) {
            return Err(invalid(format!(
                "link headroom {} must be within [0, 1)",
                cfg.link_headroom
            )));
        }
        let demand = (0..dc.flows.len())
            .map(|_| DemandEstimator::new(cfg.demand_gain))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(e.to_string()))?;
        let mut estimators = Vec::with_capacity(dc.resources.len());
        for r in &dc.resources {
            let e = if cfg.estimate_capacity
                && r.estimate
                && matches!(r.kind, ResourceKind::Appliance { .. })
            {
                let c = CapacityConfig {
                    min_w: r.capacity,
                    max_w: r.max_capacity,
                    ..cfg.capacity
                };
                Some(
                    CapacityEstimator::new(c)
                        .map_err(|e| invalid(format!("appliance {:?}: {e}", r.name)))?,
                )
            } else {
                None
            };
            estimators.push(e);
        }
        Ok(Controller {
            capacity: dc.resources.iter().map(|r| r.capacity).collect(),
            reports: vec![None; dc.flows.len()],
            dc,
            cfg,
            demand,
            estimators,
            last: None,
            next_ns: now_ns,
        })
    }

    /// The datacenter it controls.
    pub fn datacenter(&self) -> &Datacenter {
        &self.dc
    }

    /// When the next control step is due [ns].
    pub fn next_run_ns(&self) -> u64 {
        self.next_ns
    }

    /// What every physical resource's capacity estimator has learnt (`None` where none runs),
    /// for [`Controller::resume_capacity`] after a restart.
    pub fn capacity_states(&self) -> Vec<Option<CapacityState>> {
        self.estimators
            .iter()
            .map(|e| e.as_ref().map(CapacityEstimator::state))
            .collect()
    }

    /// Continues every capacity estimator from `states` (one entry per physical resource, as
    /// [`Controller::capacity_states`] gave them; a `None` leaves that estimator as it is); the
    /// capacities used from the next step are the stored estimates.
    ///
    /// # Errors
    /// [`AllocError::Invalid`] naming the resource, when `states` has another length, a state
    /// is given for a resource whose capacity is not estimated, or a state does not fit its
    /// estimator's window; nothing changes then.
    pub fn resume_capacity(&mut self, states: &[Option<CapacityState>]) -> Result<(), AllocError> {
        let invalid = |context: String, message: String| AllocError::Invalid { context, message };
        if states.len() != self.estimators.len() {
            return Err(invalid(
                "stored capacity estimates".into(),
                format!(
                    "{} entries; the datacenter has {} resources",
                    states.len(),
                    self.estimators.len()
                ),
            ));
        }
        let mut next = self.estimators.clone();
        for (j, (s, e)) in states.iter().zip(&mut next).enumerate() {
            let name = || format!("resource {:?}", self.dc.resources[j].name);
            match (s, e) {
                (None, _) => {}
                (Some(_), None) => {
                    return Err(invalid(name(), "its capacity is not estimated".into()));
                }
                (Some(s), Some(e)) => e
                    .resume(s)
                    .map_err(|err| invalid(name(), err.to_string()))?,
            }
        }
        for (j, e) in next.iter().enumerate() {
            if let (Some(_), Some(e)) = (&states[j], e) {
                self.capacity[j] = e.estimate();
            }
        }
        self.estimators = next;
        Ok(())
    }

    /// Records flow `flow`'s statistics for the current interval (a later report for the same
    /// flow replaces it).
    ///
    /// # Errors
    /// [`AllocError::Length`] for an unknown flow or vectors without one entry per hop.
    pub fn report(&mut self, flow: usize, r: FlowReport) -> Result<(), AllocError> {
        let Some(f) = self.dc.flows.get(flow) else {
            return Err(AllocError::Length {
                what: format!("flow index {flow}"),
                got: flow,
                expected: self.dc.flows.len(),
            });
        };
        // one entry per hop in every vector, named in the error
        let per_hop = |what: &dyn Fn() -> String, got: usize| {
            if got == f.hops.len() {
                Ok(())
            } else {
                Err(AllocError::Length {
                    what: what(),
                    got,
                    expected: f.hops.len(),
                })
            }
        };
        for (what, v) in [
            ("utilization", &r.utilization),
            ("backlog", &r.backlog),
            ("queueing", &r.queueing),
            ("outstanding", &r.outstanding),
            ("completed", &r.completed),
        ] {
            per_hop(&|| format!("{what} of flow {:?}", f.name), v.len())?;
        }
        for (k, smp) in r.samples.iter().enumerate() {
            for (what, v) in [
                ("utilization", &smp.utilization),
                ("outstanding", &smp.outstanding),
                ("completed", &smp.completed),
            ] {
                per_hop(
                    &|| format!("{what} of sample {k} of flow {:?}", f.name),
                    v.len(),
                )?;
            }
        }
        self.reports[flow] = Some(r);
        Ok(())
    }

    /// Runs a control step if one is due at `now_ns`.
    ///
    /// # Errors
    /// Only if the datacenter is inconsistent (it was validated when compiled).
    pub fn poll(&mut self, now_ns: u64) -> Result<Option<ControlOutput>, AllocError> {
        if now_ns < self.next_ns {
            return Ok(None);
        }
        let interval_s = self.cfg.interval_ns as f64 * 1e-9;
        let reports = std::mem::replace(&mut self.reports, vec![None; self.dc.flows.len()]);
        // demands (eq. 6, smoothed)
        let mut demand = Vec::with_capacity(self.dc.flows.len());
        for (i, f) in self.dc.flows.iter().enumerate() {
            let d = match &reports[i] {
                Some(r) => self.demand[i]
                    .observe(
                        &DemandReport {
                            utilization: &r.utilization,
                            backlog: &r.backlog,
                            queueing: &r.queueing,
                            outstanding: &r.outstanding,
                        },
                        interval_s,
                    )
                    .map_err(|e| AllocError::Invalid {
                        context: format!("flow {:?}", f.name),
                        message: e.to_string(),
                    })?
                    .to_vec(),
                None => self.demand[i]
                    .demand()
                    .map_or_else(|| vec![0.0; f.hops.len()], <[f64]>::to_vec),
            };
            demand.push(d);
        }
        // appliance capacities (§4.3), one reading per sub-interval sample
        let views = sample_views(&reports, interval_s);
        let mut violated = vec![false; self.dc.tenants.len()];
        for (j, r) in self.dc.resources.iter().enumerate() {
            let ResourceKind::Appliance { appliance } = r.kind else {
                continue;
            };
            if self.estimators[j].is_none() {
                continue;
            }
            let mut readings = Vec::with_capacity(views.len());
            let mut any = false;
            for view in &views {
                let mut reading = ApplianceReading {
                    throughput: 0.0,
                    offered: 0.0,
                    outstanding: 0.0,
                    vdc_violated: false,
                    workload: vec![0.0; self.dc.tenants.len()],
                };
                for (i, f) in self.dc.flows.iter().enumerate() {
                    let Some(s) = view.flows[i] else { continue };
                    for (h, hop) in f.hops.iter().enumerate() {
                        if hop.charge == Charge::Appliance(appliance) {
                            any = true;
                            reading.throughput += s.completed[h] / view.span_s;
                            reading.offered += s.utilization[h] / view.span_s;
                            reading.outstanding += s.outstanding[h];
                            reading.workload[f.tenant] += s.completed[h];
                        }
                    }
                }
                for t in self.violations(view, appliance) {
                    reading.vdc_violated = true;
                    violated[t] = true;
                }
                readings.push(reading);
            }
            if let (true, Some(est)) = (any, self.estimators[j].as_mut()) {
                self.capacity[j] = est.observe_interval(&readings);
            }
        }
        let usable: Vec<f64> = self
            .dc
            .resources
            .iter()
            .zip(&self.capacity)
            .map(|(r, &c)| match r.kind {
                ResourceKind::Appliance { .. } => c,
                ResourceKind::Uplink { .. } | ResourceKind::Downlink { .. } => {
                    c * (1.0 - self.cfg.link_headroom)
                }
            })
            .collect();
        let allocation = allocate_vdc(&self.dc, &demand, &usable, self.cfg.global)?;
        self.last = Some(allocation.clone());
        while self.next_ns <= now_ns {
            self.next_ns += self.cfg.interval_ns;
        }
        let phase = self
            .estimators
            .iter()
            .map(|e| e.as_ref().map(CapacityEstimator::phase))
            .collect();
        Ok(Some(ControlOutput {
            at_ns: now_ns,
            allocation,
            demand,
            capacity: self.capacity.clone(),
            phase,
            violated,
        }))
    }

    /// The tenants that completed less at appliance `a` during one sample than they were
    /// guaranteed there and could have used (see the module docs).
    fn violations(&self, view: &SampleView<'_>, a: usize) -> Vec<usize> {
        let mut out = Vec::new();
        if self.last.is_none() {
            return out;
        }
        for (t, tenant) in self.dc.tenants.iter().enumerate() {
            let mut could = 0.0;
            let mut done = 0.0;
            for &i in &tenant.flows {
                let Some(s) = view.flows[i] else { continue };
                for (h, hop) in self.dc.flows[i].hops.iter().enumerate() {
                    if hop.charge == Charge::Appliance(a) {
                        could += (s.utilization[h] + s.outstanding[h]) / view.span_s;
                        done += s.completed[h] / view.span_s;
                    }
                }
            }
            let guarantee: f64 = tenant
                .virtuals
                .iter()
                .filter(|v| v.appliance == Some(a))
                .map(|v| v.guarantee)
                .sum();
            let expect = guarantee.min(could);
            if expect > 0.0 && done < (1.0 - self.cfg.violation_tolerance) * expect {
                out.push(t);
            }
        }
        out
    }
}

/// One sample's statistics of every flow (borrowed from the reports).
struct SampleView<'a> {
    /// length of the sample [s]
    span_s: f64,
    flows: Vec<Option<SampleRef<'a>>>,
}

#[derive(Clone, Copy)]
struct SampleRef<'a> {
    utilization: &'a [f64],
    outstanding: &'a [f64],
    completed: &'a [f64],
}

/// The interval's samples: the reports' sub-interval samples when every report has the same
/// number of them, otherwise the whole interval as one sample.
fn sample_views(reports: &[Option<FlowReport>], interval_s: f64) -> Vec<SampleView<'_>> {
    let mut counts = reports.iter().flatten().map(|r| r.samples.len());
    let k = counts.next().unwrap_or(0);
    if k > 0 && counts.all(|c| c == k) {
        let span_s = interval_s / k as f64;
        (0..k)
            .map(|m| SampleView {
                span_s,
                flows: reports
                    .iter()
                    .map(|r| {
                        r.as_ref().map(|r| SampleRef {
                            utilization: &r.samples[m].utilization,
                            outstanding: &r.samples[m].outstanding,
                            completed: &r.samples[m].completed,
                        })
                    })
                    .collect(),
            })
            .collect()
    } else {
        vec![SampleView {
            span_s: interval_s,
            flows: reports
                .iter()
                .map(|r| {
                    r.as_ref().map(|r| SampleRef {
                        utilization: &r.utilization,
                        outstanding: &r.outstanding,
                        completed: &r.completed,
                    })
                })
                .collect(),
        }]
    }
}
