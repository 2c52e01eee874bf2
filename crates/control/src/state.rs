//! The controller's state behind the protocol, without I/O: `tailbound_allocation::Controller`
//! plus what a service adds — enforcers and the flows they registered, reports merged until the
//! next step, the last allocation for enforcers that (re)register, staleness. Every call takes
//! `now` [ns]; the axum server ([`crate::server`]) reads the clock.

use crate::protocol::{
    flow_name, AllocationUpdate, DatacenterInfo, EnforcerStatus, FlowAllocation, FlowStats,
    FlowStatus, Register, Report, ResourceStatus, Status,
};
use std::collections::{BTreeMap, HashMap};
use tailbound_allocation::vdc::Datacenter;
use tailbound_allocation::{
    CapacityState, ControlOutput, Controller, ControllerConfig, FlowReport, FlowSample,
};

/// How the service runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlConfig {
    pub controller: ControllerConfig,
    /// sub-interval samples an enforcer takes per report
    pub samples_per_interval: u32,
    /// the smallest rate an enforcer gives a hop [tokens/s]
    pub min_rate: f64,
    /// unused tokens an enforcer keeps across an update [s]
    pub carry_s: f64,
    /// intervals without a report before an enforcer is flagged stale
    pub stale_after: u32,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            controller: ControllerConfig::default(),
            samples_per_interval: 10,
            min_rate: 1e5,
            carry_s: 0.1,
            stale_after: 3,
        }
    }
}

/// Why a request to the controller was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    #[error("invalid enforcer id {0:?}: use 1 to 64 characters from [A-Za-z0-9._-]")]
    BadId(String),
    #[error("enforcer {0:?} has not registered; POST /v1/enforcers/{0}/register first")]
    NotRegistered(String),
    #[error("unknown flow {flow:?}; known: {known}")]
    UnknownFlow { flow: String, known: String },
    #[error("flow {flow:?} is not registered by enforcer {id:?}")]
    NotOwner { flow: String, id: String },
    #[error("{0}")]
    Invalid(String),
    #[error("controller: {0}")]
    Controller(#[from] tailbound_allocation::AllocError),
}

impl ControlError {
    /// The HTTP status the server answers with.
    pub fn status(&self) -> u16 {
        match self {
            ControlError::BadId(_) => 400,
            ControlError::NotRegistered(_) => 404,
            ControlError::Controller(_) => 500,
            _ => 422,
        }
    }
}

/// The controller's durable state (see [`ControlState::snapshot`]), as JSON in a database.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// control steps run so far
    pub epoch: u64,
    pub enforcers: Vec<EnforcerSnapshot>,
    /// the last allocation per flow and hop [tokens/s]
    pub rates: Vec<Vec<f64>>,
    /// its guaranteed part [tokens/s]
    pub local_rates: Vec<Vec<f64>>,
    /// the demand estimates it was computed from [tokens/s]
    pub demand: Vec<Vec<f64>>,
    /// per physical resource, what its capacity estimator has learnt (`null` where none
    /// runs); absent in snapshots stored before it was kept
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<Option<CapacityState>>,
}

/// A registered enforcer in a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnforcerSnapshot {
    pub id: String,
    /// its flows, `tenant/flow`
    pub flows: Vec<String>,
    pub reports: u64,
}

/// Reports of one flow since the last step, merged.
#[derive(Debug, Clone)]
struct Merged {
    span_ns: u64,
    report: FlowReport,
}

impl Merged {
    fn new(span_ns: u64, r: FlowReport) -> Merged {
        let span = span_ns as f64;
        let mut report = r;
        // averages become time integrals until the step divides them again
        for v in [&mut report.queueing, &mut report.outstanding] {
            v.iter_mut().for_each(|x| *x *= span);
        }
        Merged { span_ns, report }
    }

    fn add(&mut self, span_ns: u64, r: FlowReport) {
        let span = span_ns as f64;
        let m = &mut self.report;
        let sum = |a: &mut Vec<f64>, b: &[f64], w: f64| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += w * y);
        };
        sum(&mut m.utilization, &r.utilization, 1.0);
        sum(&mut m.completed, &r.completed, 1.0);
        sum(&mut m.queueing, &r.queueing, span);
        sum(&mut m.outstanding, &r.outstanding, span);
        m.backlog = r.backlog;
        m.samples.extend(r.samples);
        self.span_ns += span_ns;
    }

    /// The merged report scaled to one interval of `interval_ns`.
    fn finish(self, interval_ns: u64) -> FlowReport {
        let span = self.span_ns.max(1) as f64;
        let scale = interval_ns as f64 / span;
        let mut r = self.report;
        for v in [&mut r.queueing, &mut r.outstanding] {
            v.iter_mut().for_each(|x| *x /= span);
        }
        let scaled = |v: &mut Vec<f64>| v.iter_mut().for_each(|x| *x *= scale);
        scaled(&mut r.utilization);
        scaled(&mut r.completed);
        for s in &mut r.samples {
            let FlowSample {
                utilization,
                completed,
                ..
            } = s;
            scaled(utilization);
            scaled(completed);
        }
        r
    }
}

#[derive(Debug, Clone)]
struct Enforcer {
    flows: Vec<usize>,
    /// last report, or registration [ns]
    heard_ns: u64,
    reports: u64,
    /// flagged stale (logged once per silence)
    stale: bool,
}

/// The controller service's state; see the module docs.
#[derive(Debug)]
pub struct ControlState {
    cfg: ControlConfig,
    controller: Controller,
    names: Vec<String>,
    index: HashMap<String, usize>,
    merged: Vec<Option<Merged>>,
    /// after [`ControlState::restore`]: the stored demand, as one interval's report, for the
    /// first step's flows that no enforcer reported (so their allocation holds)
    seed: Vec<Option<FlowReport>>,
    enforcers: BTreeMap<String, Enforcer>,
    owner: Vec<Option<String>>,
    last: ControlOutput,
    epoch: u64,
}

impl ControlState {
    /// A controller for `dc` whose first step runs at `now_ns` (every flow at its minimum
    /// until reports show demand).
    ///
    /// # Errors
    /// [`ControlError`] for invalid settings.
    pub fn new(
        dc: Datacenter,
        cfg: ControlConfig,
        now_ns: u64,
    ) -> Result<ControlState, ControlError> {
        if cfg.samples_per_interval == 0
            || u64::from(cfg.samples_per_interval) > cfg.controller.interval_ns
        {
            return Err(ControlError::Invalid(format!(
                "{} samples per interval of {} ns; use 1 to one per ns",
                cfg.samples_per_interval, cfg.controller.interval_ns
            )));
        }
        if !(cfg.min_rate.is_finite() && cfg.min_rate > 0.0) {
            return Err(ControlError::Invalid(format!(
                "minimum rate {} must be finite and > 0 [tokens/s]",
                cfg.min_rate
            )));
        }
        if !(cfg.carry_s.is_finite() && cfg.carry_s >= 0.0) {
            return Err(ControlError::Invalid(format!(
                "carry-over {} s must be finite and >= 0",
                cfg.carry_s
            )));
        }
        if cfg.stale_after == 0 {
            return Err(ControlError::Invalid(
                "stale-after must be at least 1 interval".into(),
            ));
        }
        let names: Vec<String> = (0..dc.flows.len()).map(|i| flow_name(&dc, i)).collect();
        let index = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let n = dc.flows.len();
        let mut controller = Controller::new(dc, cfg.controller.clone(), now_ns)?;
        let last = controller.poll(now_ns)?.ok_or_else(|| {
            ControlError::Invalid("the controller's first step did not run".into())
        })?;
        Ok(ControlState {
            cfg,
            controller,
            names,
            index,
            merged: vec![None; n],
            seed: vec![None; n],
            enforcers: BTreeMap::new(),
            owner: vec![None; n],
            last,
            epoch: 1,
        })
    }

    /// The datacenter.
    pub fn datacenter(&self) -> &Datacenter {
        self.controller.datacenter()
    }

    /// What enforcers fetch first.
    pub fn info(&self) -> DatacenterInfo {
        DatacenterInfo {
            interval_ns: self.cfg.controller.interval_ns,
            samples_per_interval: self.cfg.samples_per_interval,
            min_rate: self.cfg.min_rate,
            carry_s: self.cfg.carry_s,
            datacenter: self.datacenter().clone(),
        }
    }

    /// When the next step is due [ns].
    pub fn next_step_ns(&self) -> u64 {
        self.controller.next_run_ns()
    }

    /// Steps run so far.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    fn check_id(id: &str) -> Result<(), ControlError> {
        if crate::protocol::valid_id(id) {
            Ok(())
        } else {
            Err(ControlError::BadId(id.to_string()))
        }
    }

    fn flow(&self, name: &str) -> Result<usize, ControlError> {
        self.index.get(name).copied().ok_or_else(|| {
            let mut known: Vec<&str> = self.names.iter().take(8).map(String::as_str).collect();
            if self.names.len() > 8 {
                known.push("...");
            }
            ControlError::UnknownFlow {
                flow: name.to_string(),
                known: known.join(", "),
            }
        })
    }

    fn update(&self, flows: &[usize], now_ns: u64) -> AllocationUpdate {
        AllocationUpdate {
            epoch: self.epoch,
            interval_ns: self.cfg.controller.interval_ns,
            next_step_in_ns: self.next_step_ns().saturating_sub(now_ns),
            flows: flows
                .iter()
                .map(|&i| FlowAllocation {
                    flow: self.names[i].clone(),
                    rates: self.last.allocation.rates[i].clone(),
                })
                .collect(),
        }
    }

    /// Enforcer `id` enforces `reg.flows` from now on (a flow registered by another enforcer
    /// moves to this one); returns their current allocation.
    ///
    /// # Errors
    /// A bad id or an unknown flow; nothing changes.
    pub fn register(
        &mut self,
        id: &str,
        reg: &Register,
        now_ns: u64,
    ) -> Result<AllocationUpdate, ControlError> {
        Self::check_id(id)?;
        let flows = reg
            .flows
            .iter()
            .map(|f| self.flow(f))
            .collect::<Result<Vec<_>, _>>()?;
        for &f in &flows {
            if let Some(prev) = self.owner[f].replace(id.to_string()) {
                if prev != id {
                    tracing::info!(flow = %self.names[f], from = %prev, to = %id, "flow moved");
                    if let Some(e) = self.enforcers.get_mut(&prev) {
                        e.flows.retain(|&g| g != f);
                    }
                }
            }
        }
        let restart = self.enforcers.contains_key(id);
        tracing::info!(enforcer = %id, flows = flows.len(), restart, "registered");
        self.enforcers.insert(
            id.to_string(),
            Enforcer {
                flows: flows.clone(),
                heard_ns: now_ns,
                reports: 0,
                stale: false,
            },
        );
        Ok(self.update(&flows, now_ns))
    }

    /// One interval's report of enforcer `id`; returns its flows' latest allocation.
    ///
    /// # Errors
    /// An unregistered enforcer, a flow it did not register, vectors without one entry per hop
    /// or a zero span; nothing is recorded.
    pub fn report(
        &mut self,
        id: &str,
        report: Report,
        now_ns: u64,
    ) -> Result<AllocationUpdate, ControlError> {
        Self::check_id(id)?;
        let Some(e) = self.enforcers.get(id) else {
            return Err(ControlError::NotRegistered(id.to_string()));
        };
        if report.span_ns == 0 {
            return Err(ControlError::Invalid(
                "a report must cover a span_ns > 0".into(),
            ));
        }
        let mut checked = Vec::with_capacity(report.flows.len());
        for FlowStats { flow, report: r } in report.flows {
            let i = self.flow(&flow)?;
            if !e.flows.contains(&i) {
                return Err(ControlError::NotOwner {
                    flow,
                    id: id.to_string(),
                });
            }
            let hops = self.datacenter().flows[i].hops.len();
            let vectors = [
                ("utilization", &r.utilization),
                ("backlog", &r.backlog),
                ("queueing", &r.queueing),
                ("outstanding", &r.outstanding),
                ("completed", &r.completed),
            ];
            let samples = r.samples.iter().flat_map(|s| {
                [
                    ("sample utilization", &s.utilization),
                    ("sample outstanding", &s.outstanding),
                    ("sample completed", &s.completed),
                ]
            });
            for (what, v) in vectors.into_iter().chain(samples) {
                if v.len() != hops {
                    return Err(ControlError::Invalid(format!(
                        "flow {flow:?}: {what} has {} entries; its path has {hops} hops",
                        v.len()
                    )));
                }
            }
            checked.push((i, r));
        }
        for (i, r) in checked {
            match &mut self.merged[i] {
                Some(m) => m.add(report.span_ns, r),
                slot @ None => *slot = Some(Merged::new(report.span_ns, r)),
            }
        }
        let e = self
            .enforcers
            .get_mut(id)
            .ok_or_else(|| ControlError::NotRegistered(id.to_string()))?;
        e.heard_ns = now_ns;
        e.reports += 1;
        if e.stale {
            tracing::info!(enforcer = %id, "reporting again");
            e.stale = false;
        }
        let flows = e.flows.clone();
        Ok(self.update(&flows, now_ns))
    }

    /// Enforcer `id`'s current allocation.
    ///
    /// # Errors
    /// An unregistered enforcer.
    pub fn allocation(&self, id: &str, now_ns: u64) -> Result<AllocationUpdate, ControlError> {
        Self::check_id(id)?;
        let e = self
            .enforcers
            .get(id)
            .ok_or_else(|| ControlError::NotRegistered(id.to_string()))?;
        Ok(self.update(&e.flows, now_ns))
    }

    /// Runs a control step if one is due at `now_ns`: the merged reports go to the
    /// controller, which estimates and allocates; enforcers silent for too long are flagged.
    /// Returns whether a step ran.
    ///
    /// # Errors
    /// [`ControlError::Controller`] if the controller refuses (it validated the datacenter).
    pub fn step(&mut self, now_ns: u64) -> Result<bool, ControlError> {
        if now_ns < self.next_step_ns() {
            return Ok(false);
        }
        let interval = self.cfg.controller.interval_ns;
        for (i, m) in self.merged.iter_mut().enumerate() {
            let seed = self.seed[i].take();
            if let Some(m) = m.take() {
                self.controller.report(i, m.finish(interval))?;
            } else if let Some(r) = seed {
                self.controller.report(i, r)?;
            }
        }
        if let Some(out) = self.controller.poll(now_ns)? {
            self.last = out;
            self.epoch += 1;
        }
        let limit = interval.saturating_mul(u64::from(self.cfg.stale_after));
        for (id, e) in &mut self.enforcers {
            if !e.stale && now_ns.saturating_sub(e.heard_ns) > limit {
                e.stale = true;
                tracing::warn!(
                    enforcer = %id,
                    silent_s = now_ns.saturating_sub(e.heard_ns) as f64 * 1e-9,
                    "enforcer stopped reporting; its flows keep their last allocation"
                );
            }
        }
        Ok(true)
    }

    /// What must survive a restart of the service hosting this controller: the step count,
    /// which enforcer enforces which flows, the last allocation with the demand it was
    /// computed from, and what every capacity estimator has learnt (phase, estimate, probing
    /// window, stable point), so that a restart neither probes an appliance from its
    /// declared capacity again nor forgets an estimate below it. Reports not yet used by a
    /// step and the demand estimators' histories are not kept: after a restart the first
    /// report of a flow starts its demand estimate again.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            epoch: self.epoch,
            enforcers: self
                .enforcers
                .iter()
                .map(|(id, e)| EnforcerSnapshot {
                    id: id.clone(),
                    flows: e.flows.iter().map(|&i| self.names[i].clone()).collect(),
                    reports: e.reports,
                })
                .collect(),
            rates: self.last.allocation.rates.clone(),
            local_rates: self.last.allocation.local_rates.clone(),
            demand: self.last.demand.clone(),
            capacity: self.controller.capacity_states(),
        }
    }

    /// Takes back what [`ControlState::snapshot`] kept; the enforcers count as heard at
    /// `now_ns` (each has `stale_after` intervals to report again before it is flagged). The
    /// first step after it uses the stored demand of the flows no enforcer reported, so a
    /// silent enforcer's allocation holds across the restart as it does without one.
    ///
    /// # Errors
    /// [`ControlError`] when the snapshot does not fit this datacenter (vectors without one
    /// entry per flow and hop, non-finite rates, unknown flows, bad ids); nothing changes
    /// then.
    pub fn restore(&mut self, s: &Snapshot, now_ns: u64) -> Result<(), ControlError> {
        let dc = self.datacenter();
        let bad = |m: String| ControlError::Invalid(format!("stored controller state: {m}"));
        for (what, v) in [
            ("rates", &s.rates),
            ("local_rates", &s.local_rates),
            ("demand", &s.demand),
        ] {
            if v.len() != dc.flows.len() {
                return Err(bad(format!(
                    "{what} has {} flows; the datacenter has {}",
                    v.len(),
                    dc.flows.len()
                )));
            }
            for (i, r) in v.iter().enumerate() {
                if r.len() != dc.flows[i].hops.len() || !r.iter().all(|x| x.is_finite()) {
                    return Err(bad(format!(
                        "{what} of flow {:?} is not {} finite numbers",
                        self.names[i],
                        dc.flows[i].hops.len()
                    )));
                }
            }
        }
        let mut enforcers = BTreeMap::new();
        let mut owner = vec![None; self.names.len()];
        for e in &s.enforcers {
            Self::check_id(&e.id)?;
            let flows = e
                .flows
                .iter()
                .map(|f| self.flow(f))
                .collect::<Result<Vec<_>, _>>()?;
            for &f in &flows {
                owner[f] = Some(e.id.clone());
            }
            enforcers.insert(
                e.id.clone(),
                Enforcer {
                    flows,
                    heard_ns: now_ns,
                    reports: e.reports,
                    stale: false,
                },
            );
        }
        let interval_s = self.cfg.controller.interval_ns as f64 * 1e-9;
        self.seed = s
            .demand
            .iter()
            .map(|d| {
                let used: Vec<f64> = d.iter().map(|x| x * interval_s).collect();
                let zero = vec![0.0; d.len()];
                d.iter().any(|&x| x > 0.0).then(|| FlowReport {
                    utilization: used.clone(),
                    backlog: zero.clone(),
                    queueing: zero.clone(),
                    outstanding: zero,
                    completed: used,
                    samples: Vec::new(),
                })
            })
            .collect();
        if !s.capacity.is_empty() {
            self.controller
                .resume_capacity(&s.capacity)
                .map_err(|e| bad(e.to_string()))?;
            for (j, c) in s.capacity.iter().enumerate() {
                if let (Some(c), Some(used), Some(phase)) =
                    (c, self.last.capacity.get_mut(j), self.last.phase.get_mut(j))
                {
                    *used = c.estimate;
                    *phase = Some(c.phase);
                }
            }
        }
        self.enforcers = enforcers;
        self.owner = owner;
        self.epoch = s.epoch;
        self.last.allocation.rates.clone_from(&s.rates);
        self.last.allocation.local_rates.clone_from(&s.local_rates);
        self.last.demand.clone_from(&s.demand);
        Ok(())
    }

    /// Everything the status page shows.
    pub fn status(&self, now_ns: u64) -> Status {
        let dc = self.datacenter();
        let limit = self
            .cfg
            .controller
            .interval_ns
            .saturating_mul(u64::from(self.cfg.stale_after));
        Status {
            epoch: self.epoch,
            interval_ns: self.cfg.controller.interval_ns,
            enforcers: self
                .enforcers
                .iter()
                .map(|(id, e)| EnforcerStatus {
                    id: id.clone(),
                    flows: e.flows.iter().map(|&i| self.names[i].clone()).collect(),
                    silent_s: now_ns.saturating_sub(e.heard_ns) as f64 * 1e-9,
                    stale: e.stale || now_ns.saturating_sub(e.heard_ns) > limit,
                    reports: e.reports,
                })
                .collect(),
            flows: (0..dc.flows.len())
                .map(|i| {
                    let t = &dc.tenants[dc.flows[i].tenant];
                    FlowStatus {
                        flow: self.names[i].clone(),
                        enforcer: self.owner[i].clone(),
                        hops: dc.flows[i]
                            .hops
                            .iter()
                            .map(|h| {
                                let p = h.physical.map_or("-", |p| dc.resources[p].name.as_str());
                                let v = h
                                    .virtual_resource
                                    .map_or("-", |v| t.virtuals[v].name.as_str());
                                format!("{p}/{v}")
                            })
                            .collect(),
                        demand: self.last.demand[i].clone(),
                        rates: self.last.allocation.rates[i].clone(),
                        local_rates: self.last.allocation.local_rates[i].clone(),
                    }
                })
                .collect(),
            resources: dc
                .resources
                .iter()
                .enumerate()
                .map(|(j, r)| ResourceStatus {
                    name: r.name.clone(),
                    capacity: self.last.capacity[j],
                    phase: self.last.phase[j].map(|p| p.as_str().to_string()),
                })
                .collect(),
            violated: self
                .last
                .violated
                .iter()
                .enumerate()
                .filter(|(_, &v)| v)
                .map(|(t, _)| dc.tenants[t].name.clone())
                .collect(),
            overcommitted: self
                .last
                .allocation
                .overcommitted
                .iter()
                .map(|&j| dc.resources[j].name.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_allocation::VdcSpec;

    pub(crate) const SPEC: &str = r#"
header_bytes = 0
[[servers]]
name = "s0"
link = 1e9
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e6
estimate = false
[[tenants]]
name = "A"
vms = [{ name = "a", server = "s0", link = 1e9 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 4e5 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
[[tenants]]
name = "B"
vms = [{ name = "b", server = "s0", link = 1e9 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 4e5 }]
flows = [{ name = "b-kv", src = "b", dst = "kv" }]
"#;

    const S: u64 = 1_000_000_000;

    fn state() -> ControlState {
        let (_, dc) = VdcSpec::parse("t.toml", SPEC).unwrap();
        ControlState::new(dc, ControlConfig::default(), 0).unwrap()
    }

    /// A flow that used `u` tokens on every hop during `span_ns` and has `b` queued.
    fn stats(flow: &str, u: f64, b: f64) -> FlowStats {
        let v = |x: f64| vec![x; 3];
        FlowStats {
            flow: flow.into(),
            report: FlowReport {
                utilization: v(u),
                backlog: v(b),
                queueing: v(0.0),
                outstanding: v(0.0),
                completed: v(u),
                samples: Vec::new(),
            },
        }
    }

    #[test]
    fn demand_from_reports_drives_the_allocation() {
        let mut s = state();
        let reg = Register {
            flows: vec!["A/a-kv".into(), "B/b-kv".into()],
        };
        let u = s.register("e1", &reg, 0).unwrap();
        assert_eq!(u.epoch, 1);
        assert_eq!(u.flows[0].rates, vec![0.0; 3]);
        assert_eq!(u.next_step_in_ns, S);
        // A asks for 9e5 tokens/s at the appliance, B for 1e5: half a second's worth each,
        // in two half-interval reports that are merged and scaled to the interval
        for _ in 0..2 {
            let r = Report {
                span_ns: S / 2,
                flows: vec![stats("A/a-kv", 4.5e5, 0.0), stats("B/b-kv", 0.5e5, 0.0)],
            };
            s.report("e1", r, S / 2).unwrap();
        }
        assert!(!s.step(S - 1).unwrap());
        assert!(s.step(S).unwrap());
        let u = s.allocation("e1", S).unwrap();
        assert_eq!(u.epoch, 2);
        // the first report starts the moving average: A demands 9e5, B 1e5 [tokens/s]; B
        // gets its demand, A its guarantee (4e5) and the rest of the appliance's 1e6
        let a = u.flows[0].rates[1];
        let b = u.flows[1].rates[1];
        assert!((b - 1e5).abs() < 1.0, "B {b}");
        assert!((a - 9e5).abs() < 1.0, "A {a}");
    }

    #[test]
    fn reports_are_checked_before_anything_is_recorded() {
        let mut s = state();
        let reg = Register {
            flows: vec!["A/a-kv".into()],
        };
        assert!(matches!(
            s.register("bad id", &reg, 0),
            Err(ControlError::BadId(_))
        ));
        let e = s
            .register(
                "e1",
                &Register {
                    flows: vec!["A/nope".into()],
                },
                0,
            )
            .unwrap_err();
        assert_eq!(e.status(), 422);
        assert!(e.to_string().contains("A/a-kv, B/b-kv"), "{e}");
        let r = || Report {
            span_ns: S,
            flows: vec![stats("A/a-kv", 1.0, 0.0)],
        };
        assert_eq!(s.report("e1", r(), 0).unwrap_err().status(), 404);
        s.register("e1", &reg, 0).unwrap();
        let mut bad = r();
        bad.flows.push(stats("B/b-kv", 1.0, 0.0));
        assert!(matches!(
            s.report("e1", bad, 0),
            Err(ControlError::NotOwner { .. })
        ));
        let mut short = r();
        short.flows[0].report.backlog.pop();
        let e = s.report("e1", short, 0).unwrap_err();
        assert!(e.to_string().contains("backlog has 2 entries"), "{e}");
        assert!(s.merged.iter().all(Option::is_none));
    }

    #[test]
    fn silent_enforcers_are_flagged_and_keep_their_allocation() {
        let mut s = state();
        let reg = Register {
            flows: vec!["A/a-kv".into()],
        };
        s.register("e1", &reg, 0).unwrap();
        s.report(
            "e1",
            Report {
                span_ns: S,
                flows: vec![stats("A/a-kv", 3e5, 0.0)],
            },
            S - 1,
        )
        .unwrap();
        s.step(S).unwrap();
        let before = s.allocation("e1", S).unwrap().flows;
        for k in 2..=5 {
            s.step(k * S).unwrap();
        }
        let st = s.status(5 * S);
        assert!(st.enforcers[0].stale, "{st:?}");
        assert_eq!(s.allocation("e1", 5 * S).unwrap().flows, before);
        // reporting again clears the flag
        s.report(
            "e1",
            Report {
                span_ns: S,
                flows: vec![stats("A/a-kv", 3e5, 0.0)],
            },
            5 * S,
        )
        .unwrap();
        assert!(!s.status(5 * S).enforcers[0].stale);
    }

    #[test]
    fn a_snapshot_keeps_what_the_capacity_estimator_learnt() {
        let spec = SPEC.replace("estimate = false", "estimate = true\nmax_capacity = 4e6");
        let fresh = || {
            let (_, dc) = VdcSpec::parse("t.toml", &spec).unwrap();
            ControlState::new(dc, ControlConfig::default(), 0).unwrap()
        };
        let kv = |s: &ControlState, now| {
            let st = s.status(now);
            let r = st.resources.into_iter().find(|r| r.name == "kv").unwrap();
            (r.capacity, r.phase)
        };
        let mut s = fresh();
        let reg = Register {
            flows: vec!["A/a-kv".into()],
        };
        s.register("e1", &reg, 0).unwrap();
        // the appliance served its declared 1e6 tokens/s without queueing: the estimate
        // probes the middle of (1e6, 4e6)
        let r = Report {
            span_ns: S,
            flows: vec![stats("A/a-kv", 1e6, 0.0)],
        };
        s.report("e1", r, S - 1).unwrap();
        s.step(S).unwrap();
        let learnt = kv(&s, S);
        assert_eq!(learnt, (2.5e6, Some("increase".to_string())));
        let snap = s.snapshot();
        let json = serde_json::to_string(&snap).unwrap();
        assert!(json.contains(r#""min_w":1000000.0"#), "{json}");
        let mut t = fresh();
        assert_eq!(
            kv(&t, 0).0,
            1e6,
            "a new controller starts at the declared capacity"
        );
        t.restore(&serde_json::from_str(&json).unwrap(), 7).unwrap();
        assert_eq!(kv(&t, 7), learnt);
        assert_eq!(t.snapshot(), snap);
        // a snapshot stored before estimators were kept still loads, starting from scratch
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        old.as_object_mut().unwrap().remove("capacity");
        let mut u = fresh();
        u.restore(&serde_json::from_value(old).unwrap(), 7).unwrap();
        assert_eq!(kv(&u, 7).0, 1e6);
        // an estimate outside the window is refused, naming the resource; nothing changes
        let mut bad = snap;
        let j = bad.capacity.iter().position(Option::is_some).unwrap();
        if let Some(c) = bad.capacity[j].as_mut() {
            c.estimate = 9e6;
        }
        let e = u.restore(&bad, 7).unwrap_err();
        assert!(e.to_string().contains(r#"resource "kv""#), "{e}");
        assert!(e.to_string().contains("9000000"), "{e}");
        assert_eq!(kv(&u, 7).0, 1e6);
    }

    #[test]
    fn a_snapshot_restores_registrations_and_the_last_allocation() {
        let mut s = state();
        let reg = Register {
            flows: vec!["A/a-kv".into(), "B/b-kv".into()],
        };
        s.register("e1", &reg, 0).unwrap();
        let r = Report {
            span_ns: S,
            flows: vec![stats("A/a-kv", 9e5, 0.0), stats("B/b-kv", 1e5, 0.0)],
        };
        s.report("e1", r, S - 1).unwrap();
        s.step(S).unwrap();
        let before = s.allocation("e1", S).unwrap();
        let snap = s.snapshot();
        let json = serde_json::to_string(&snap).unwrap();
        // a new controller (the service restarted) at another time on a new clock
        let mut t = state();
        t.restore(&serde_json::from_str(&json).unwrap(), 7).unwrap();
        let after = t.allocation("e1", 7).unwrap();
        assert_eq!(after.epoch, before.epoch);
        assert_eq!(after.flows, before.flows);
        assert!(after.flows[0].rates[1] > 8e5, "{after:?}");
        assert_eq!(t.status(7).flows[1].enforcer.as_deref(), Some("e1"));
        // steps without reports keep it, as they do without a restart
        assert!(t.step(S).unwrap() && t.step(2 * S).unwrap());
        let held = t.allocation("e1", 2 * S).unwrap();
        assert_eq!(held.epoch, before.epoch + 2);
        for (h, b) in held.flows.iter().zip(&before.flows) {
            for (x, y) in h.rates.iter().zip(&b.rates) {
                assert!((x - y).abs() <= 1e-6 * y.max(1.0), "{held:?} {before:?}");
            }
        }
        // a snapshot of another datacenter is refused and changes nothing
        let mut wrong = snap;
        wrong.rates.pop();
        let e = t.restore(&wrong, 7).unwrap_err();
        assert!(e.to_string().contains("rates has 1 flows"), "{e}");
        assert_eq!(t.allocation("e1", 7).unwrap().flows, before.flows);
    }

    #[test]
    fn a_flow_registered_elsewhere_moves() {
        let mut s = state();
        let reg = Register {
            flows: vec!["A/a-kv".into()],
        };
        s.register("e1", &reg, 0).unwrap();
        s.register("e2", &reg, 0).unwrap();
        let st = s.status(0);
        assert_eq!(st.flows[0].enforcer.as_deref(), Some("e2"));
        assert!(st
            .enforcers
            .iter()
            .find(|e| e.id == "e1")
            .unwrap()
            .flows
            .is_empty());
    }
}
