//! Pulsar's two allocation steps (§4.1): each tenant's flows share its VDC by the tenant's
//! local MRA (eq. 2), then the spare physical capacity goes to flows of tenants with minimum
//! guarantees and unmet demand by the provider's global MRA (eq. 3).
//!
//! * **Local.** Tenant `t`'s problem has one resource per virtual resource of its VDC (VM
//!   link directions, virtual appliances) with capacity = guarantee, its flows' demands on
//!   the hops that use them, and the flows' weights: `x^L_i`.
//! * **Global.** Over every physical resource, capacity = estimate − what local allocations
//!   use (never below 0); flows of minimum-guarantee tenants demand the rest of their bundle,
//!   `(1 − x^L_i)·D_i`; a virtual resource with a maximum adds a resource of capacity
//!   `max − local use` so the sum stays within the maximum. Tenant weights from the VDCs,
//!   flow weights within them: `x^G_i`. Fixed-guarantee tenants are left out (footnote 3).
//! * **Result.** `f_i = x^L_i + (1 − x^L_i)·x^G_i` of flow `i`'s demand on every hop.
//!
//! When the local allocations alone exceed a physical resource (guarantees that admission
//! should not have let in, or an appliance whose estimate fell below them), the resource is
//! reported in [`VdcAllocation::overcommitted`] and gets no spare capacity.

use crate::error::AllocError;
use crate::mra::{Mechanism, Mra};
use crate::problem::Problem;
use crate::vdc::{Datacenter, GuaranteeKind};

/// The outcome of both steps.
#[derive(Debug, Clone, PartialEq)]
pub struct VdcAllocation {
    /// `x^L_i`: fraction of each flow's demand from its tenant's VDC
    pub local: Vec<f64>,
    /// `f_i`: total fraction of each flow's demand
    pub fraction: Vec<f64>,
    /// per flow, per hop: the allocation [tokens/s]
    pub rates: Vec<Vec<f64>>,
    /// per flow, per hop: the local (guaranteed) part [tokens/s]
    pub local_rates: Vec<Vec<f64>>,
    /// physical resources whose local allocations exceed their capacity
    pub overcommitted: Vec<usize>,
}

/// Runs both steps. `demand[i][h]` is flow `i`'s demand at hop `h` [tokens/s]; `capacity` the
/// current capacity of every physical resource [tokens/s] (estimates for appliances).
///
/// # Errors
/// [`AllocError::Length`] when the vectors do not match the datacenter;
/// [`AllocError::Demand`]/[`AllocError::Capacity`] for negative or non-finite values.
pub fn allocate_vdc(
    dc: &Datacenter,
    demand: &[Vec<f64>],
    capacity: &[f64],
    global: Mechanism,
) -> Result<VdcAllocation, AllocError> {
    if demand.len() != dc.flows.len() {
        return Err(AllocError::Length {
            what: "demand vectors (one per flow)".into(),
            got: demand.len(),
            expected: dc.flows.len(),
        });
    }
    if capacity.len() != dc.resources.len() {
        return Err(AllocError::Length {
            what: "capacities (one per physical resource)".into(),
            got: capacity.len(),
            expected: dc.resources.len(),
        });
    }
    for (r, &c) in dc.resources.iter().zip(capacity) {
        if !(c.is_finite() && c >= 0.0) {
            return Err(AllocError::Capacity {
                resource: r.name.clone(),
                value: c,
            });
        }
    }
    for (f, d) in dc.flows.iter().zip(demand) {
        if d.len() != f.hops.len() {
            return Err(AllocError::Length {
                what: format!("demand of flow {:?} (one per hop)", f.name),
                got: d.len(),
                expected: f.hops.len(),
            });
        }
        if let Some(&v) = d.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err(AllocError::Demand {
                flow: f.name.clone(),
                resource: "a hop".into(),
                value: v,
            });
        }
    }
    let m = dc.flows.len();
    // local step, per tenant over its VDC (eq. 2)
    let mut local = vec![0.0; m];
    for t in &dc.tenants {
        let mut p = Problem::new(t.virtuals.iter().map(|v| v.guarantee).collect())?;
        let tid = p.add_tenant(1.0)?;
        for &i in &t.flows {
            let bundle = virtual_bundle(dc, i, demand);
            p.add_flow(tid, dc.flows[i].weight, &bundle)?;
        }
        let a = t.mra.allocate(&p);
        for (k, &i) in t.flows.iter().enumerate() {
            local[i] = a.fraction[k];
        }
    }
    // spare physical capacity
    let n = dc.resources.len();
    let mut spare = capacity.to_vec();
    for (i, f) in dc.flows.iter().enumerate() {
        for (h, hop) in f.hops.iter().enumerate() {
            if let Some(j) = hop.physical {
                spare[j] -= local[i] * demand[i][h];
            }
        }
    }
    let overcommitted: Vec<usize> = (0..n)
        .filter(|&j| spare[j] < -1e-9 * capacity[j].max(1.0))
        .collect();
    for s in &mut spare {
        *s = s.max(0.0);
    }
    // maxima of minimum-guarantee tenants' virtual resources become extra resources
    let mut extra_index = Vec::new();
    for (ti, t) in dc.tenants.iter().enumerate() {
        if t.guarantee != GuaranteeKind::Minimum {
            continue;
        }
        for (v, vr) in t.virtuals.iter().enumerate() {
            if let Some(max) = vr.max {
                let used: f64 = t
                    .flows
                    .iter()
                    .map(|&i| {
                        dc.flows[i]
                            .hops
                            .iter()
                            .enumerate()
                            .filter(|(_, h)| h.virtual_resource == Some(v))
                            .map(|(h, _)| local[i] * demand[i][h])
                            .sum::<f64>()
                    })
                    .sum();
                extra_index.push(((ti, v), spare.len()));
                spare.push((max - used).max(0.0));
            }
        }
    }
    // global step over minimum-guarantee tenants (eq. 3)
    let mut gp = Problem::new(spare)?;
    let mut gflows = Vec::new();
    for t in &dc.tenants {
        if t.guarantee != GuaranteeKind::Minimum {
            continue;
        }
        let tid = gp.add_tenant(t.weight)?;
        let ti = dc.tenant(&t.name).unwrap_or(0);
        for &i in &t.flows {
            let rest = 1.0 - local[i];
            if rest <= 0.0 {
                continue;
            }
            let f = &dc.flows[i];
            let mut bundle: Vec<(usize, f64)> = Vec::new();
            for (h, hop) in f.hops.iter().enumerate() {
                let d = rest * demand[i][h];
                if let Some(j) = hop.physical {
                    push_merged(&mut bundle, j, d);
                }
                if let Some(v) = hop.virtual_resource {
                    if let Some(&(_, j)) = extra_index.iter().find(|(k, _)| *k == (ti, v)) {
                        push_merged(&mut bundle, j, d);
                    }
                }
            }
            let w = match global {
                Mechanism::Hdrf => f.weight,
                Mechanism::Drf | Mechanism::FirstFit => f.weight * t.weight,
            };
            gp.add_flow(tid, w, &bundle)?;
            gflows.push(i);
        }
    }
    let ga = global.allocate(&gp);
    let mut fraction = local.clone();
    for (k, &i) in gflows.iter().enumerate() {
        fraction[i] = (local[i] + (1.0 - local[i]) * ga.fraction[k]).min(1.0);
    }
    let scale = |x: &[f64]| -> Vec<Vec<f64>> {
        demand
            .iter()
            .zip(x)
            .map(|(d, &xi)| d.iter().map(|v| xi * v).collect())
            .collect()
    };
    Ok(VdcAllocation {
        rates: scale(&fraction),
        local_rates: scale(&local),
        local,
        fraction,
        overcommitted,
    })
}

/// Every flow backlogged: its demand at every hop is the largest capacity or guarantee on its
/// path [tokens/s], more than it can be given anywhere, so the allocation shows what each flow
/// would get if all wanted as much as they could (the same amount on every hop: the request
/// mix is unknown without reports).
pub fn backlogged_demand(dc: &Datacenter) -> Vec<Vec<f64>> {
    dc.flows
        .iter()
        .map(|f| {
            let t = &dc.tenants[f.tenant];
            let most = f
                .hops
                .iter()
                .flat_map(|h| {
                    let p = h.physical.map(|j| dc.resources[j].max_capacity);
                    let v = h.virtual_resource.map(|v| t.virtuals[v].guarantee);
                    [p, v]
                })
                .flatten()
                .fold(0.0f64, f64::max);
            vec![most; f.hops.len()]
        })
        .collect()
}

/// Adds `d` to resource `j`'s entry (a flow can cross a resource on two hops, e.g. a
/// server's uplink for the request and for the response of a co-located appliance).
fn push_merged(bundle: &mut Vec<(usize, f64)>, j: usize, d: f64) {
    match bundle.iter_mut().find(|(r, _)| *r == j) {
        Some(e) => e.1 += d,
        None => bundle.push((j, d)),
    }
}

/// Flow `i`'s demand on its tenant's virtual resources.
fn virtual_bundle(dc: &Datacenter, i: usize, demand: &[Vec<f64>]) -> Vec<(usize, f64)> {
    let mut b = Vec::new();
    for (h, hop) in dc.flows[i].hops.iter().enumerate() {
        if let Some(v) = hop.virtual_resource {
            push_merged(&mut b, v, demand[i][h]);
        }
    }
    b
}
