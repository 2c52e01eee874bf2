//! The pipeline on a bundled synthetic tenant set, no files needed (`tailbound demo`).
//!
//! The tenant set is a scenario in tailbound's own format ([`DEMO_SCENARIO`], `demo.toml`,
//! embedded in the binary): it is generated from seeds, characterized on the first half of
//! each trace (exact arrival curves, MMPP fits, effective bandwidths per flow) and every
//! tenant's latency is bounded with SNC-Meister's analysis and with DNC. Then every admission
//! policy decides the tenants in file order and the second halves are replayed under its
//! decisions: a small snc-meister Fig. 10. [`run`] returns the report; printing it is the
//! CLI's.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use tailbound_admission::{Admission, AdmissionError, Policy};
use tailbound_calculus::{bound_all, BoundOptions, CalculusError, Method};
use tailbound_curves::effbw::{effective_bandwidth, EffBwError};
use tailbound_model::SLO_WINDOW_S;
use tailbound_scenario::{ScenarioError, TenantSource};
use tailbound_sim::{Plan, Replay, ReplayError, Transmission};

/// The embedded tenant set.
pub const DEMO_SCENARIO: &str = include_str!("demo.toml");

/// The methods the demo compares.
pub const METHODS: [Method; 2] = [Method::SncMeister, Method::Dnc];

/// Why the demo could not run (each a bug in the bundled scenario or the pipeline).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    #[error("the embedded demo scenario: {0}")]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Calculus(#[from] CalculusError),
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("effective bandwidth: {0}")]
    EffBw(#[from] EffBwError),
    #[error("demo flow {0:?} has no arrival curve")]
    NoArrival(String),
}

/// `tailbound demo --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoReport {
    pub tenants: Vec<DemoTenant>,
    /// every admission policy over the tenants in file order, with the replay of the second
    /// halves under its decisions (a small snc-meister Fig. 10)
    #[serde(default)]
    pub admission: Vec<DemoPolicy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoPolicy {
    pub policy: String,
    /// the admitted tenants
    pub admitted: Vec<String>,
    /// bytes they transfer in the replayed halves [bytes]
    pub bytes: u64,
    /// admitted tenants whose replayed windowed SLO percentile exceeds their SLO
    pub violations: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoTenant {
    pub name: String,
    /// the generator model, as a readable description
    pub model: String,
    /// latency target [s]
    pub slo_s: f64,
    pub percentile: f64,
    pub group: Option<String>,
    pub flows: Vec<DemoFlow>,
    /// the tenant's bound per method [s]; null when unbounded
    pub bound_s: BTreeMap<String, Option<f64>>,
    pub meets_slo: BTreeMap<String, bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoFlow {
    pub name: String,
    pub stage: tailbound_model::Stage,
    /// queues crossed
    pub path: Vec<String>,
    /// mean work rate [work/s]
    pub mean_rate: Option<f64>,
    /// the largest work arriving at one instant, α(0) [work]
    pub burst: f64,
    /// effective bandwidth for the tenant's SLO [work/s]
    pub effective_bw: f64,
    /// exact r-b curve `[rate, burst]`
    pub rb: Vec<[f64; 2]>,
    pub mmpp_states: usize,
}

/// Runs the whole pipeline on the embedded scenario.
pub fn run() -> Result<DemoReport, DemoError> {
    let name = Path::new("<embedded demo.toml>");
    let scenario = tailbound_scenario::own::parse_toml(name, DEMO_SCENARIO)?;
    let net = &scenario.network;
    let mut bounds = BTreeMap::new();
    for m in METHODS {
        bounds.insert(m, bound_all(net, m, &BoundOptions::default())?);
    }
    let mut tenants = Vec::with_capacity(net.tenants.len());
    for (i, t) in net.tenants.iter().enumerate() {
        let mut flows = Vec::with_capacity(t.flows.len());
        for &f in &t.flows {
            let flow = &net.flows[f];
            let arrival = flow
                .arrival
                .as_ref()
                .ok_or_else(|| DemoError::NoArrival(flow.name.clone()))?;
            // scenario curves continue at the characterized part's mean rate
            let mean = arrival.tail_rate();
            flows.push(DemoFlow {
                name: flow.name.clone(),
                stage: flow.stage,
                path: flow
                    .path
                    .iter()
                    .map(|&q| net.queues[q].name.clone())
                    .collect(),
                mean_rate: (mean > 0.0).then_some(mean),
                burst: arrival.burst(),
                effective_bw: effective_bandwidth(&arrival.to_rb(), t.slo.latency_s)?,
                rb: arrival.to_rb().vertices().to_vec(),
                mmpp_states: flow.mmpp.as_ref().map_or(0, |m| m.states.len()),
            });
        }
        let model = match &scenario.sources[i] {
            TenantSource::Generated { spec, .. } => spec.arrival.describe(),
            other => format!("{other:?}"),
        };
        tenants.push(DemoTenant {
            name: t.name.clone(),
            model,
            slo_s: t.slo.latency_s,
            percentile: t.slo.percentile.value(),
            group: t.group.clone(),
            flows,
            bound_s: METHODS
                .iter()
                .map(|m| (m.as_str().to_string(), bounds[m][i].total.seconds()))
                .collect(),
            meets_slo: METHODS
                .iter()
                .map(|m| (m.as_str().to_string(), bounds[m][i].meets_slo))
                .collect(),
        });
    }
    let replay = Replay::new(net, scenario.replay_requests()?, scenario.works())?;
    let mut admission = Vec::new();
    for policy in Policy::ALL {
        let mut engine = Admission::new(net, policy)?;
        for t in 0..net.tenants.len() {
            engine.arrive(t)?;
        }
        let plan = Plan::from_decisions(net, &engine.decisions())?;
        let result = replay.run(&plan, Transmission::default(), SLO_WINDOW_S)?;
        admission.push(DemoPolicy {
            policy: policy.as_str().to_string(),
            admitted: result.tenants.iter().map(|t| t.name.clone()).collect(),
            bytes: result.tenants.iter().map(|t| t.bytes).sum(),
            violations: result
                .tenants
                .iter()
                .filter(|t| !t.meets_slo)
                .map(|t| t.name.clone())
                .collect(),
        });
    }
    Ok(DemoReport { tenants, admission })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_demo_runs_every_policy_over_every_tenant() {
        let r = super::run().unwrap();
        assert_eq!(r.admission.len(), super::Policy::ALL.len());
        assert!(r.tenants.len() >= 6);
        for p in &r.admission {
            assert!(!p.admitted.is_empty(), "{}", p.policy);
        }
    }
}
