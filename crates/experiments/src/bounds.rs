//! Latency bounds of identical tenants sharing two queues (snc-meister §4.1–4.2, §6.4):
//! * Fig. 7: bound vs number of tenants, for DNC, SNC hop-by-hop, SNC convolution and
//!   SNC-Meister;
//! * Fig. 8: bound vs fraction of tenants in one dependency group (7 tenants);
//! * Fig. 13: bound vs number of nines of the SLO percentile.
//!
//! Setting: every tenant sends its responses from one server to one client, crossing the
//! server's outgoing link and the client's incoming link (both `link` bytes/s). Tenants are
//! identical in distribution: each runs a synthetic bursty key-value workload (an MMPP of
//! Gets with [`TenantWorkload`]'s rates), generated with its own seed and characterized like
//! a real trace (MMPP fit for SNC, exact arrival curve for DNC). All tenants share one SLO, so
//! one priority level. The reported bound is tenant t0's (the first tenant is in the
//! dependency group of Fig. 8 from the first dependent tenant on).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tailbound_calculus::{bound, BoundOptions, CalculusError, Method, ThetaSearch};
use tailbound_curves::mmpp::{fit_mmpp, FitError, MmppFitOptions};
use tailbound_curves::rb::{sustained_arrival_curve, work_series, RbError};
use tailbound_curves::NetworkCost;
use tailbound_model::{
    FlowModels, Network, NetworkBuilder, NewTenant, Percentile, Slo, SloError, Stage,
};
use tailbound_trace::{generate, ArrivalModel, GenError, GenSpec, SizeDist, Vocabulary};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    #[error("cannot generate a tenant: {0}")]
    Generate(#[from] GenError),
    #[error("cannot characterize a tenant: {0}")]
    Fit(#[from] FitError),
    #[error("cannot characterize a tenant: {0}")]
    Curve(#[from] RbError),
    #[error(transparent)]
    Calculus(#[from] CalculusError),
    #[error(transparent)]
    Slo(#[from] SloError),
    #[error("{0}")]
    Config(String),
}

/// The synthetic workload of every tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantWorkload {
    /// MMPP state rates [requests/s]
    pub rates_per_s: Vec<f64>,
    /// mean time in each state [s]
    pub dwell_s: Vec<f64>,
    /// bytes per Get
    pub size_bytes: u64,
    /// length of the characterized trace [s]
    pub duration_s: f64,
}

impl Default for TenantWorkload {
    /// About 0.9 MB/s of responses on average and 4.5 MB/s in bursts: thirty such tenants
    /// load a 1 Gbit/s link to about a fifth on average, while their bursts can exceed it.
    fn default() -> TenantWorkload {
        TenantWorkload {
            rates_per_s: vec![100.0, 1000.0],
            dwell_s: vec![4.0, 0.5],
            size_bytes: 4096,
            duration_s: 300.0,
        }
    }
}

/// Generates and characterizes `count` tenants (seeds `seed`, `seed + 1`, ...).
pub fn tenants(
    workload: &TenantWorkload,
    count: usize,
    seed: u64,
) -> Result<Vec<FlowModels>, ExperimentError> {
    let spec = GenSpec {
        arrival: ArrivalModel::Mmpp {
            rates_per_s: workload.rates_per_s.clone(),
            mean_dwell_s: workload.dwell_s.clone(),
        },
        sizes: SizeDist::Fixed {
            bytes: workload.size_bytes,
        },
        read_fraction: 1.0,
        duration_s: workload.duration_s,
        vocabulary: Vocabulary::KeyValue,
    };
    let work = NetworkCost::RESPONSE_DIRECTION;
    (0..count)
        .map(|i| {
            let trace = generate(&spec, seed.wrapping_add(i as u64))?;
            Ok(FlowModels {
                mmpp: Some(fit_mmpp(
                    &trace.requests,
                    &work,
                    &MmppFitOptions::default(),
                )?),
                arrival: Some(sustained_arrival_curve(&work_series(
                    &trace.requests,
                    &work,
                )?)?),
            })
        })
        .collect()
}

/// `models.len()` tenants whose responses cross `server-out` → `client-in`; the first
/// `dependent` of them form one dependency group.
pub fn two_queue_network(
    models: &[FlowModels],
    link_bytes_per_s: f64,
    dependent: usize,
) -> Network {
    let slo = Slo::new(1.0, 99.9).expect("a valid SLO");
    let mut b = NetworkBuilder::new();
    let server = b.host("server", link_bytes_per_s, None);
    let client = b.host("client", link_bytes_per_s, None);
    for (i, m) in models.iter().enumerate() {
        let t = b.tenant(NewTenant {
            group: (i < dependent).then(|| "dependent".to_string()),
            ..NewTenant::new(format!("t{i}"), slo).between(client, server)
        });
        b.flow(t, Stage::NetOut, m.clone())
            .expect("both hosts exist");
    }
    b.build().expect("a valid network")
}

/// One x value and each method's bound there [s] (`None`: unbounded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub x: f64,
    pub bound_s: BTreeMap<String, Option<f64>>,
}

/// The data of one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundsExperiment {
    /// which figure: "tenants", "dependent" or "nines"
    pub experiment: String,
    pub x_label: String,
    pub methods: Vec<Method>,
    pub link_bytes_per_s: f64,
    pub workload: TenantWorkload,
    pub seed: u64,
    pub rows: Vec<Row>,
}

/// Tenant t0's bound under `method` [s], `None` if unbounded. The tenants are identical in
/// distribution, so one tenant tells the story; bounding all of them would cost N times more.
fn first_tenant(
    net: &Network,
    method: Method,
    opts: &BoundOptions,
) -> Result<Option<f64>, ExperimentError> {
    let bounds = bound(net, method, &[0], opts)?;
    Ok(bounds.first().and_then(|b| b.total.seconds()))
}

fn row(
    x: f64,
    net: &Network,
    methods: &[Method],
    opts: &BoundOptions,
) -> Result<Row, ExperimentError> {
    let mut bound_s = BTreeMap::new();
    for &m in methods {
        bound_s.insert(m.as_str().to_string(), first_tenant(net, m, opts)?);
    }
    Ok(Row { x, bound_s })
}

/// Common settings of the three experiments.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundsConfig {
    pub workload: TenantWorkload,
    pub link_bytes_per_s: f64,
    pub seed: u64,
    pub percentile: Percentile,
    pub methods: Vec<Method>,
    pub theta: ThetaSearch,
}

impl BoundsConfig {
    fn opts(&self, percentile: Percentile) -> BoundOptions {
        BoundOptions {
            theta: self.theta,
            percentile: Some(percentile),
        }
    }

    fn experiment(&self, name: &str, x_label: &str, rows: Vec<Row>) -> BoundsExperiment {
        BoundsExperiment {
            experiment: name.to_string(),
            x_label: x_label.to_string(),
            methods: self.methods.clone(),
            link_bytes_per_s: self.link_bytes_per_s,
            workload: self.workload.clone(),
            seed: self.seed,
            rows,
        }
    }
}

/// Fig. 7's default tenant counts: 1, then every `step` up to `max_tenants`.
pub fn tenant_counts(max_tenants: usize, step: usize) -> Vec<usize> {
    std::iter::once(1)
        .chain((step.max(1)..=max_tenants).step_by(step.max(1)))
        .filter(|&n| n <= max_tenants)
        .collect()
}

/// Fig. 7: the bound for 1..=`max_tenants` tenants (every `step`), calling `progress` after
/// each point.
pub fn vs_tenants(
    cfg: &BoundsConfig,
    counts: &[usize],
    mut progress: impl FnMut(),
) -> Result<BoundsExperiment, ExperimentError> {
    let max = counts.iter().copied().max().unwrap_or(0);
    if max == 0 {
        return Err(ExperimentError::Config(
            "give at least one tenant count > 0".into(),
        ));
    }
    let models = tenants(&cfg.workload, max, cfg.seed)?;
    let mut rows = Vec::with_capacity(counts.len());
    for &n in counts {
        let net = two_queue_network(&models[..n], cfg.link_bytes_per_s, 0);
        rows.push(row(
            n as f64,
            &net,
            &cfg.methods,
            &cfg.opts(cfg.percentile),
        )?);
        progress();
    }
    Ok(cfg.experiment("tenants", "tenants", rows))
}

/// Fig. 8: `tenant_count` tenants, 0..=`tenant_count` of them dependent; x is the fraction.
pub fn vs_dependent(
    cfg: &BoundsConfig,
    tenant_count: usize,
    mut progress: impl FnMut(),
) -> Result<BoundsExperiment, ExperimentError> {
    if tenant_count == 0 {
        return Err(ExperimentError::Config("--tenants must be > 0".into()));
    }
    let models = tenants(&cfg.workload, tenant_count, cfg.seed)?;
    let mut rows = Vec::with_capacity(tenant_count + 1);
    for k in 0..=tenant_count {
        let net = two_queue_network(&models, cfg.link_bytes_per_s, k);
        rows.push(row(
            k as f64 / tenant_count as f64,
            &net,
            &cfg.methods,
            &cfg.opts(cfg.percentile),
        )?);
        progress();
    }
    Ok(cfg.experiment("dependent", "fraction of dependent tenants", rows))
}

/// Fig. 13: `tenant_count` tenants, SLO percentile with 1..=`max_nines` nines.
pub fn vs_nines(
    cfg: &BoundsConfig,
    tenant_count: usize,
    nines: &[u32],
    mut progress: impl FnMut(),
) -> Result<BoundsExperiment, ExperimentError> {
    if tenant_count == 0 || nines.is_empty() {
        return Err(ExperimentError::Config(
            "give --tenants > 0 and at least one number of nines".into(),
        ));
    }
    let models = tenants(&cfg.workload, tenant_count, cfg.seed)?;
    let net = two_queue_network(&models, cfg.link_bytes_per_s, 0);
    let mut rows = Vec::with_capacity(nines.len());
    for &n in nines {
        let p = Percentile::from_nines(n)?;
        rows.push(row(n as f64, &net, &cfg.methods, &cfg.opts(p))?);
        progress();
    }
    Ok(cfg.experiment("nines", "nines in the SLO percentile", rows))
}
