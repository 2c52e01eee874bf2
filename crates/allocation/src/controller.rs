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
//! The appliance signals are derived from the reports as pulsar §4.3 describes: throughput is
//! what flows saw completed at the appliance, the outstanding tokens `O` the sum of the flows'
//! outstanding entries for it (footnote 6), and a *VDC violation* is a tenant that completed
//! less than `(1 − tolerance)` of `min(G, (u + o)/T)` there: its guarantee `G` on the virtual
//! appliance, or what it could have completed in the interval of length `T` — what it sent
//! plus what it had outstanding — if that is less. (A closed-loop tenant stuck behind an
//! overloaded appliance sends little and shows no queue at its enforcer; its outstanding
//! requests are what reveal that it wanted more.)

use crate::error::AllocError;
use crate::mra::Mechanism;
use crate::steps::{allocate_vdc, VdcAllocation};
use crate::vdc::{Charge, Datacenter, ResourceKind};
use tailbound_shaping::estimate::{
    ApplianceReading, CapacityConfig, CapacityEstimator, DemandEstimator, DemandReport, Phase,
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
        }
    }
}

/// One interval's statistics of a flow from its enforcer, per hop of its path [tokens].
#[derive(Debug, Clone, PartialEq, Default)]
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
        for (what, v) in [
            ("utilization", &r.utilization),
            ("backlog", &r.backlog),
            ("queueing", &r.queueing),
            ("outstanding", &r.outstanding),
            ("completed", &r.completed),
        ] {
            if v.len() != f.hops.len() {
                return Err(AllocError::Length {
                    what: format!("{what} of flow {:?}", f.name),
                    got: v.len(),
                    expected: f.hops.len(),
                });
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
        // appliance capacities (§4.3)
        let violated_at = self.violations(&reports, interval_s);
        let mut violated = vec![false; self.dc.tenants.len()];
        for (j, r) in self.dc.resources.iter().enumerate() {
            let ResourceKind::Appliance { appliance } = r.kind else {
                continue;
            };
            let Some(est) = self.estimators[j].as_mut() else {
                continue;
            };
            let mut reading = ApplianceReading {
                throughput: 0.0,
                offered: 0.0,
                outstanding: 0.0,
                vdc_violated: false,
                workload: vec![0.0; self.dc.tenants.len()],
            };
            let mut any = false;
            for (i, f) in self.dc.flows.iter().enumerate() {
                let Some(rep) = &reports[i] else { continue };
                for (h, hop) in f.hops.iter().enumerate() {
                    if hop.charge == Charge::Appliance(appliance) {
                        any = true;
                        reading.throughput += rep.completed[h] / interval_s;
                        reading.offered += rep.utilization[h] / interval_s;
                        reading.outstanding += rep.outstanding[h];
                        reading.workload[f.tenant] += rep.completed[h];
                    }
                }
            }
            for (t, v) in violated_at.iter().enumerate() {
                if v.contains(&appliance) {
                    reading.vdc_violated = true;
                    violated[t] = true;
                }
            }
            if any {
                self.capacity[j] = est.observe(&reading);
            }
        }
        let allocation = allocate_vdc(&self.dc, &demand, &self.capacity, self.cfg.global)?;
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

    /// Per tenant, the appliances at which it completed less than it was guaranteed and
    /// could have used (see the module docs).
    fn violations(&self, reports: &[Option<FlowReport>], interval_s: f64) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.dc.tenants.len()];
        if self.last.is_none() {
            return out;
        }
        let na = self.dc.appliance_resource.len();
        for (t, tenant) in self.dc.tenants.iter().enumerate() {
            let mut could = vec![0.0; na];
            let mut done = vec![0.0; na];
            for &i in &tenant.flows {
                let Some(rep) = &reports[i] else { continue };
                for (h, hop) in self.dc.flows[i].hops.iter().enumerate() {
                    if let Charge::Appliance(a) = hop.charge {
                        could[a] += (rep.utilization[h] + rep.outstanding[h]) / interval_s;
                        done[a] += rep.completed[h] / interval_s;
                    }
                }
            }
            for a in 0..na {
                let guarantee: f64 = tenant
                    .virtuals
                    .iter()
                    .filter(|v| v.appliance == Some(a))
                    .map(|v| v.guarantee)
                    .sum();
                let expect = guarantee.min(could[a]);
                if expect > 0.0 && done[a] < (1.0 - self.cfg.violation_tolerance) * expect {
                    out[t].push(a);
                }
            }
        }
        out
    }
}
