//! The flat JSON that `tailbound alloc INPUT` reads and prints: named resources and flows,
//! no topology.
//!
//! ```json
//! {"resources": [{"name": "link", "capacity": 100}, {"name": "kv", "capacity": 60}],
//!  "tenants":   [{"name": "a", "weight": 2}],
//!  "flows": [{"name": "f1", "tenant": "a", "weight": 1, "demand": {"link": 80, "kv": 10}},
//!            {"name": "f2", "tenant": "b", "demand": {"link": 20, "kv": 50}}]}
//! ```
//!
//! Capacities and demands in tokens/s. `weight` defaults to 1; `tenant` defaults to the flow's
//! own name; `tenants` is optional (H-DRF's tenant weights, default 1); without it, tenants
//! named by flows are added with weight 1, with it, a flow naming a tenant it does not list is
//! an error. Capacities and demands are 0 or 1e-3 to 1e12, weights 1e-3 to 1e3
//! ([`crate::problem::MIN_QUANTITY`]...). Unknown keys are errors. The output is
//! `{"allocations": [{"flow", "alloc": {resource: tokens/s}}]}` in flow order.

use crate::error::{known_list, AllocError};
use crate::mra::Mra;
use crate::problem::Problem;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// `tailbound alloc`'s input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocInput {
    pub resources: Vec<ResourceInput>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantInput>,
    pub flows: Vec<FlowInput>,
}

/// A resource and its capacity [tokens/s].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceInput {
    pub name: String,
    /// [tokens/s]
    pub capacity: f64,
}

/// A tenant's weight (H-DRF's first level).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantInput {
    pub name: String,
    #[serde(default = "one")]
    pub weight: f64,
}

/// A flow: its tenant, weight and demand per resource [tokens/s].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowInput {
    pub name: String,
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default = "one")]
    pub weight: f64,
    /// demand per resource name [tokens/s]
    pub demand: BTreeMap<String, f64>,
}

fn one() -> f64 {
    1.0
}

/// `tailbound alloc`'s output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocOutput {
    pub allocations: Vec<FlowAllocation>,
}

/// One flow's allocation vector [tokens/s] per resource it demands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowAllocation {
    pub flow: String,
    pub alloc: BTreeMap<String, f64>,
}

impl AllocInput {
    /// Parses JSON; `file` names the input in errors (serde's line and column included).
    ///
    /// # Errors
    /// [`AllocError::Parse`].
    pub fn from_json(file: &str, text: &str) -> Result<AllocInput, AllocError> {
        serde_json::from_str(text).map_err(|e| AllocError::Parse {
            file: file.to_string(),
            message: format!(
                "{e}; expected {{\"resources\": [{{\"name\", \"capacity\"}}], \"flows\": \
                 [{{\"name\", \"tenant\", \"weight\", \"demand\": {{resource: tokens/s}}}}]}}"
            ),
        })
    }

    /// The [`Problem`] this input describes, validated with names in every error.
    ///
    /// # Errors
    /// [`AllocError`] naming the resource, tenant or flow and the bad value.
    pub fn problem(&self) -> Result<Problem, AllocError> {
        let mut res_index = HashMap::new();
        for (j, r) in self.resources.iter().enumerate() {
            if res_index.insert(r.name.as_str(), j).is_some() {
                return Err(AllocError::Duplicate {
                    kind: "resource",
                    name: r.name.clone(),
                });
            }
            if !crate::problem::quantity_ok(r.capacity) {
                return Err(AllocError::Capacity {
                    resource: r.name.clone(),
                    value: r.capacity,
                });
            }
        }
        let mut p = Problem::new(self.resources.iter().map(|r| r.capacity).collect())?;
        let mut tenant_index: HashMap<&str, usize> = HashMap::new();
        for t in &self.tenants {
            if tenant_index.contains_key(t.name.as_str()) {
                return Err(AllocError::Duplicate {
                    kind: "tenant",
                    name: t.name.clone(),
                });
            }
            let bad_weight = || AllocError::Weight {
                what: "tenant",
                name: t.name.clone(),
                value: t.weight,
            };
            if !crate::problem::weight_ok(t.weight) {
                return Err(bad_weight());
            }
            let id = p.add_tenant(t.weight).map_err(|_| bad_weight())?;
            tenant_index.insert(&t.name, id);
        }
        let mut names = HashMap::new();
        for f in &self.flows {
            if names.insert(f.name.as_str(), ()).is_some() {
                return Err(AllocError::Duplicate {
                    kind: "flow",
                    name: f.name.clone(),
                });
            }
            let tname = f.tenant.as_deref().unwrap_or(&f.name);
            let t = match tenant_index.get(tname) {
                Some(&t) => t,
                // with a `tenants` list, a flow names one of them (a typo must not create a
                // tenant of its own)
                None if !self.tenants.is_empty() => {
                    return Err(AllocError::Unknown {
                        what: "flow",
                        name: f.name.clone(),
                        kind: "tenant",
                        reference: tname.to_string(),
                        known: known_list(self.tenants.iter().map(|t| t.name.as_str())),
                    });
                }
                None => {
                    let t = p.add_tenant(1.0)?;
                    tenant_index.insert(tname, t);
                    t
                }
            };
            let mut demand = Vec::with_capacity(f.demand.len());
            for (r, &d) in &f.demand {
                let Some(&j) = res_index.get(r.as_str()) else {
                    return Err(AllocError::Unknown {
                        what: "flow",
                        name: f.name.clone(),
                        kind: "resource",
                        reference: r.clone(),
                        known: known_list(self.resources.iter().map(|r| r.name.as_str())),
                    });
                };
                if !crate::problem::quantity_ok(d) {
                    return Err(AllocError::Demand {
                        flow: f.name.clone(),
                        resource: r.clone(),
                        value: d,
                    });
                }
                demand.push((j, d));
            }
            if !crate::problem::weight_ok(f.weight) {
                return Err(AllocError::Weight {
                    what: "flow",
                    name: f.name.clone(),
                    value: f.weight,
                });
            }
            p.add_flow(t, f.weight, &demand)?;
        }
        Ok(p)
    }

    /// Allocates with `mra` and names the result.
    ///
    /// # Errors
    /// As [`AllocInput::problem`].
    pub fn allocate(&self, mra: &dyn Mra) -> Result<AllocOutput, AllocError> {
        let p = self.problem()?;
        let a = mra.allocate(&p);
        let allocations = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowAllocation {
                flow: f.name.clone(),
                alloc: f
                    .demand
                    .iter()
                    .map(|(r, &d)| (r.clone(), a.fraction[i] * d))
                    .collect(),
            })
            .collect();
        Ok(AllocOutput { allocations })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mechanism;

    #[test]
    fn named_allocation_and_errors() {
        let text = r#"{"resources": [{"name": "link", "capacity": 10}],
            "flows": [{"name": "a", "demand": {"link": 20}},
                      {"name": "b", "weight": 3, "demand": {"link": 20}}]}"#;
        let input = AllocInput::from_json("in.json", text).unwrap();
        let out = input.allocate(&Mechanism::Drf).unwrap();
        assert_eq!(out.allocations[0].flow, "a");
        assert!((out.allocations[0].alloc["link"] - 2.5).abs() < 1e-9);
        assert!((out.allocations[1].alloc["link"] - 7.5).abs() < 1e-9);
        let bad = text.replace("\"link\": 20}}]", "\"disk\": 20}}]");
        let e = AllocInput::from_json("in.json", &bad)
            .unwrap()
            .problem()
            .unwrap_err();
        assert!(
            e.to_string().contains("\"disk\"") && e.to_string().contains("link"),
            "{e}"
        );
        let e = AllocInput::from_json("in.json", "{\"resources\": 3}").unwrap_err();
        assert!(e.to_string().starts_with("in.json: "), "{e}");
    }
}
