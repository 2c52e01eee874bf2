//! The inputs and output of one multi-resource allocation, `A ← MRA(D, W, C)` (pulsar §4.1,
//! eq. 1), stored sparsely: a flow's demand bundle lists only the resources on its path, so
//! 24K flows × 4200 resources cost ~100K entries, not 100M.
//!
//! * `D`: per flow, `(resource, demand [tokens/s])` pairs (zero entries are dropped).
//! * `W`: a weight per flow and per tenant (Pulsar's `W` has one entry per flow and resource;
//!   the three mechanisms here use one weight per flow, as DRF does, and H-DRF adds one per
//!   tenant).
//! * `C`: a capacity per resource [tokens/s].
//!
//! Every mechanism here allocates a fraction `x_i ∈ [0, 1]` of each flow's demand bundle:
//! `A_ij = x_i·D_ij` (DRF's "tasks" are the bundles). [`Allocation`] stores the fractions.

use crate::error::AllocError;

/// Smallest nonzero capacity or demand `tailbound alloc`'s input accepts [tokens/s]. With
/// [`MAX_QUANTITY`] and the weight range, this is where the mechanisms are checked at their
/// extremes (`tests/integration/extremes.rs`); beyond it (1e-320, weights of 1e-100 or 1e308)
/// float arithmetic gave out more than a capacity or starved every other flow, so the reader
/// refuses such values naming the range. Zero stays allowed (a resource out of service, no
/// demand). [`Problem`] itself takes any finite value (its callers compute them).
pub const MIN_QUANTITY: f64 = 1e-3;
/// Largest capacity or demand `tailbound alloc`'s input accepts [tokens/s] (a 1 Tbit/s link
/// counted in bytes is 1.25e11).
pub const MAX_QUANTITY: f64 = 1e12;
/// Smallest weight of a flow or tenant `tailbound alloc`'s input accepts.
pub const MIN_WEIGHT: f64 = 1e-3;
/// Largest weight of a flow or tenant `tailbound alloc`'s input accepts.
pub const MAX_WEIGHT: f64 = 1e3;

/// Whether `v` is 0 or within `[MIN_QUANTITY, MAX_QUANTITY]`.
pub(crate) fn quantity_ok(v: f64) -> bool {
    v == 0.0 || (MIN_QUANTITY..=MAX_QUANTITY).contains(&v)
}

/// Whether `w` is within `[MIN_WEIGHT, MAX_WEIGHT]`.
pub(crate) fn weight_ok(w: f64) -> bool {
    (MIN_WEIGHT..=MAX_WEIGHT).contains(&w)
}

/// Index of a tenant in a [`Problem`].
pub type TenantId = usize;

/// `D`, `W` and `C` of one allocation; see the module docs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Problem {
    /// capacity per resource [tokens/s]
    capacity: Vec<f64>,
    /// CSR offsets: flow `i`'s entries are `offsets[i]..offsets[i + 1]`
    offsets: Vec<usize>,
    /// resource of each entry
    res: Vec<u32>,
    /// demand of each entry [tokens/s], > 0
    demand: Vec<f64>,
    /// weight per flow, > 0
    weight: Vec<f64>,
    /// tenant per flow
    tenant: Vec<u32>,
    /// weight per tenant, > 0
    tenant_weight: Vec<f64>,
}

impl Problem {
    /// A problem over resources of the given capacities [tokens/s] and no flows.
    ///
    /// # Errors
    /// [`AllocError::Capacity`] for a capacity that is negative or not finite.
    pub fn new(capacity: Vec<f64>) -> Result<Problem, AllocError> {
        if let Some((j, &c)) = capacity
            .iter()
            .enumerate()
            .find(|(_, c)| !(c.is_finite() && **c >= 0.0))
        {
            return Err(AllocError::Capacity {
                resource: format!("#{j}"),
                value: c,
            });
        }
        Ok(Problem {
            capacity,
            offsets: vec![0],
            ..Problem::default()
        })
    }

    /// Adds a tenant of weight `weight` (> 0) and returns its id.
    ///
    /// # Errors
    /// [`AllocError::Weight`].
    pub fn add_tenant(&mut self, weight: f64) -> Result<TenantId, AllocError> {
        if !(weight.is_finite() && weight > 0.0) {
            return Err(AllocError::Weight {
                what: "tenant",
                name: format!("#{}", self.tenant_weight.len()),
                value: weight,
            });
        }
        self.tenant_weight.push(weight);
        Ok(self.tenant_weight.len() - 1)
    }

    /// Adds a flow of `tenant` with weight `weight` and demand bundle `demand`
    /// (`(resource, tokens/s)`); returns its index. Zero demands are dropped.
    ///
    /// # Errors
    /// [`AllocError::Weight`], [`AllocError::Demand`], [`AllocError::Unknown`] for a resource
    /// or tenant out of range, [`AllocError::DuplicateDemand`].
    pub fn add_flow(
        &mut self,
        tenant: TenantId,
        weight: f64,
        demand: &[(usize, f64)],
    ) -> Result<usize, AllocError> {
        let i = self.weight.len();
        let name = || format!("#{i}");
        if tenant >= self.tenant_weight.len() {
            return Err(AllocError::Unknown {
                what: "flow",
                name: name(),
                kind: "tenant",
                reference: format!("#{tenant}"),
                known: format!("#0..#{}", self.tenant_weight.len()),
            });
        }
        if !(weight.is_finite() && weight > 0.0) {
            return Err(AllocError::Weight {
                what: "flow",
                name: name(),
                value: weight,
            });
        }
        let start = self.res.len();
        for &(j, d) in demand {
            if j >= self.capacity.len() {
                self.res.truncate(start);
                self.demand.truncate(start);
                return Err(AllocError::Unknown {
                    what: "flow",
                    name: name(),
                    kind: "resource",
                    reference: format!("#{j}"),
                    known: format!("#0..#{}", self.capacity.len()),
                });
            }
            if !(d.is_finite() && d >= 0.0) {
                self.res.truncate(start);
                self.demand.truncate(start);
                return Err(AllocError::Demand {
                    flow: name(),
                    resource: format!("#{j}"),
                    value: d,
                });
            }
            if self.res[start..].contains(&(j as u32)) {
                self.res.truncate(start);
                self.demand.truncate(start);
                return Err(AllocError::DuplicateDemand {
                    flow: name(),
                    resource: format!("#{j}"),
                });
            }
            if d > 0.0 {
                self.res.push(j as u32);
                self.demand.push(d);
            }
        }
        self.offsets.push(self.res.len());
        self.weight.push(weight);
        self.tenant.push(tenant as u32);
        Ok(i)
    }

    /// Number of flows (rows of `D`).
    pub fn flows(&self) -> usize {
        self.weight.len()
    }

    /// Number of resources (columns of `D`).
    pub fn resources(&self) -> usize {
        self.capacity.len()
    }

    /// Number of tenants.
    pub fn tenants(&self) -> usize {
        self.tenant_weight.len()
    }

    /// Non-zero demand entries in all.
    pub fn entries(&self) -> usize {
        self.res.len()
    }

    /// Capacities `C` [tokens/s].
    pub fn capacity(&self) -> &[f64] {
        &self.capacity
    }

    /// Flow `i`'s demand bundle: `(resource, demand [tokens/s])`.
    pub fn demand(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let r = self.offsets[i]..self.offsets[i + 1];
        self.res[r.clone()]
            .iter()
            .zip(&self.demand[r])
            .map(|(&j, &d)| (j as usize, d))
    }

    /// Flow `i`'s weight.
    pub fn weight(&self, i: usize) -> f64 {
        self.weight[i]
    }

    /// Flow `i`'s tenant.
    pub fn tenant(&self, i: usize) -> TenantId {
        self.tenant[i] as usize
    }

    /// Tenant `t`'s weight.
    pub fn tenant_weight(&self, t: TenantId) -> f64 {
        self.tenant_weight[t]
    }

    pub(crate) fn raw(&self) -> (&[usize], &[u32], &[f64]) {
        (&self.offsets, &self.res, &self.demand)
    }

    /// Flow `i`'s dominant demand share `δ_i = max_j D_ij / C_j` (over its bundle): the share
    /// of its most-demanded resource it would take at `x_i = 1`. `None` when it demands a
    /// resource of capacity 0 (it can get nothing); 0 for an empty bundle.
    pub fn dominant_demand(&self, i: usize) -> Option<f64> {
        let mut delta: f64 = 0.0;
        for (j, d) in self.demand(i) {
            let c = self.capacity[j];
            if c <= 0.0 {
                return None;
            }
            delta = delta.max(d / c);
        }
        Some(delta)
    }

    /// For each resource, the flows demanding it (transposed `D`), as CSR
    /// `(offsets, (flow, demand))`.
    pub(crate) fn transpose(&self) -> (Vec<usize>, Vec<(u32, f64)>) {
        let n = self.capacity.len();
        let mut count = vec![0usize; n + 1];
        for &j in &self.res {
            count[j as usize + 1] += 1;
        }
        for j in 0..n {
            count[j + 1] += count[j];
        }
        let mut fill = count.clone();
        let mut out = vec![(0u32, 0.0); self.res.len()];
        for i in 0..self.flows() {
            for k in self.offsets[i]..self.offsets[i + 1] {
                let j = self.res[k] as usize;
                out[fill[j]] = (i as u32, self.demand[k]);
                fill[j] += 1;
            }
        }
        (count, out)
    }
}

/// The result of an MRA: the fraction `x_i ∈ [0, 1]` of each flow's demand bundle it may use,
/// so `A_ij = x_i·D_ij` [tokens/s].
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// fraction of each flow's demand bundle, in `[0, 1]`
    pub fraction: Vec<f64>,
}

impl Allocation {
    /// `A_ij` for flow `i`: `(resource, allocation [tokens/s])`.
    pub fn flow<'a>(&'a self, p: &'a Problem, i: usize) -> impl Iterator<Item = (usize, f64)> + 'a {
        let x = self.fraction[i];
        p.demand(i).map(move |(j, d)| (j, x * d))
    }

    /// Total allocation per resource, `Σ_i A_ij` [tokens/s].
    pub fn usage(&self, p: &Problem) -> Vec<f64> {
        let mut u = vec![0.0; p.resources()];
        for (i, &x) in self.fraction.iter().enumerate() {
            for (j, d) in p.demand(i) {
                u[j] += x * d;
            }
        }
        u
    }

    /// Resources whose allocation reaches their capacity within relative tolerance `tol`.
    pub fn saturated(&self, p: &Problem, tol: f64) -> Vec<bool> {
        self.usage(p)
            .iter()
            .zip(p.capacity())
            .map(|(&u, &c)| u >= c * (1.0 - tol))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_inputs_are_rejected_without_changing_the_problem() {
        assert!(matches!(
            Problem::new(vec![1.0, f64::NAN]),
            Err(AllocError::Capacity { .. })
        ));
        let mut p = Problem::new(vec![1.0, 2.0]).unwrap();
        let t = p.add_tenant(1.0).unwrap();
        assert!(p.add_tenant(0.0).is_err());
        assert!(matches!(
            p.add_flow(t, 1.0, &[(0, 1.0), (5, 1.0)]),
            Err(AllocError::Unknown { .. })
        ));
        assert!(matches!(
            p.add_flow(t, 1.0, &[(0, 1.0), (0, 1.0)]),
            Err(AllocError::DuplicateDemand { .. })
        ));
        assert!(matches!(
            p.add_flow(t, 1.0, &[(0, -1.0)]),
            Err(AllocError::Demand { .. })
        ));
        assert!(p.add_flow(t, f64::INFINITY, &[]).is_err());
        assert_eq!((p.flows(), p.entries()), (0, 0));
        p.add_flow(t, 1.0, &[(1, 4.0), (0, 0.0)]).unwrap();
        assert_eq!(p.entries(), 1);
        assert_eq!(p.dominant_demand(0), Some(2.0));
        let (off, col) = p.transpose();
        assert_eq!(off, vec![0, 0, 1]);
        assert_eq!(col, vec![(0, 4.0)]);
    }
}
