//! General server graphs: a network given as **servers** (a service curve — a rate-latency
//! curve, a constant rate, or the maximum of several rate-latency curves — and a scheduling
//! policy: FIFO, static priority or arbitrary multiplexing) and **flows** (token-bucket or
//! piecewise-linear concave arrival curves, MMPP parameters) along arbitrary feed-forward
//! paths of servers. [`analysis`] bounds every flow's delay and backlog by each method that
//! applies (total flow analysis, separated flow analysis, SNC); [`saihu`] reads and writes
//! Saihu's JSON network description so the same network can be given to DNC, Panco and xTFA.
//!
//! Work is in bytes, time in seconds, rates in bytes per second (field names carry the unit).
//! The crate does no I/O: it parses text it is given and returns structures; the CLI reads
//! files and characterizes traces into the flows' arrival curves and MMPPs.

pub mod analysis;
pub mod saihu;

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use tailbound_model::Mmpp;

pub use analysis::{
    analyze, FlowReport, GraphMethod, GraphReport, MethodBound, Outcome, ServerReport,
};

/// One rate-latency curve R·(t − T)⁺ of a server's service curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLatencySpec {
    /// R [bytes/s], finite > 0
    pub rate_bytes_per_s: f64,
    /// T [s], finite ≥ 0; 0 makes a constant-rate server
    #[serde(default)]
    pub latency_s: f64,
}

/// One token bucket b + r·t of a flow's arrival curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenBucketSpec {
    /// r [bytes/s], finite ≥ 0
    pub rate_bytes_per_s: f64,
    /// b [bytes], finite ≥ 0
    pub burst_bytes: f64,
}

/// How a server shares its service between the flows crossing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduling {
    /// first in, first out across all flows
    #[default]
    Fifo,
    /// static priority between the flows' levels (0 highest), FIFO within a level,
    /// non-preemptive: a packet of a lower level in service delays a higher one
    StaticPriority,
    /// arbitrary (blind) multiplexing: no assumption on the order of service
    Arbitrary,
}

tailbound_model::names!(Scheduling, "scheduling", {
    Fifo => "fifo",
    StaticPriority => "static-priority",
    Arbitrary => "arbitrary",
});

/// A server: a service curve and a scheduling policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub name: String,
    /// the service curve is the maximum of these rate-latency curves (one curve: rate-latency;
    /// latency 0: constant rate). Every server is assumed to offer it as a strict service curve
    /// (needed by the arbitrary and static-priority leftovers).
    pub service: Vec<RateLatencySpec>,
    #[serde(default)]
    pub scheduling: Scheduling,
}

/// A flow: its arrivals at the source and the servers it crosses in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphFlow {
    pub name: String,
    /// server names in the order crossed; a path visits a server at most once
    pub path: Vec<String>,
    /// the arrival curve is the minimum of these token buckets (one: a token bucket; several:
    /// a piecewise-linear concave curve, e.g. an r-b curve); needed by the DNC methods
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrival: Vec<TokenBucketSpec>,
    /// priority level at static-priority servers, 0 highest
    #[serde(default)]
    pub priority: u32,
    /// largest packet [bytes]: at a static-priority server, a packet of a lower level already
    /// in service delays higher levels by up to this much work
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_packet_bytes: Option<f64>,
    /// stochastic model of the arrivals (needed by the SNC method)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmpp: Option<Mmpp>,
    /// a trace file (relative to the network file) the CLI characterizes into `arrival` and
    /// `mmpp` where those are not given
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// the percentile the SNC bound holds at (default 99.9)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
}

/// A network of servers and flows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph {
    #[serde(default)]
    pub name: String,
    pub servers: Vec<Server>,
    pub flows: Vec<GraphFlow>,
}

/// Why a graph cannot be read or analyzed. Messages name the server or flow, the field and
/// the value, and say what is accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    #[error("{format} syntax: {message}")]
    Syntax {
        format: &'static str,
        message: String,
    },
    #[error("{what} {name:?}: field {field} = {value}: {expected}")]
    Field {
        what: &'static str,
        name: String,
        field: &'static str,
        value: String,
        expected: String,
    },
    #[error("the paths form a cycle {}; only feed-forward networks are analyzed (break the cycle or split a server)", .0.join(" -> "))]
    Cycle(Vec<String>),
    #[error("{0}")]
    Invalid(String),
}

fn field_err(
    what: &'static str,
    name: &str,
    field: &'static str,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> GraphError {
    GraphError::Field {
        what,
        name: name.to_string(),
        field,
        value: value.to_string(),
        expected: expected.into(),
    }
}

impl Graph {
    /// Reads our own TOML network file (see `examples/graphs/`) and validates it.
    pub fn from_toml(text: &str) -> Result<Graph, GraphError> {
        let g: Graph = toml::from_str(text).map_err(|e| GraphError::Syntax {
            format: "TOML",
            message: e.to_string(),
        })?;
        g.validate()?;
        Ok(g)
    }

    /// Reads our own network file in JSON (the same fields as TOML) and validates it.
    pub fn from_json(text: &str) -> Result<Graph, GraphError> {
        let g: Graph = serde_json::from_str(text).map_err(|e| GraphError::Syntax {
            format: "JSON",
            message: e.to_string(),
        })?;
        g.validate()?;
        Ok(g)
    }

    /// Our own file in TOML.
    pub fn to_toml(&self) -> Result<String, GraphError> {
        toml::to_string_pretty(self).map_err(|e| GraphError::Invalid(format!("writing TOML: {e}")))
    }

    /// Index of the server named `name`.
    pub fn server_index(&self, name: &str) -> Option<usize> {
        self.servers.iter().position(|s| s.name == name)
    }

    /// Checks names, numbers and paths, and that the network is feed-forward
    /// ([`GraphError::Cycle`] names a cycle otherwise).
    pub fn validate(&self) -> Result<(), GraphError> {
        let finite_nonneg = |x: f64| x.is_finite() && x >= 0.0;
        let mut names = HashSet::new();
        for s in &self.servers {
            if s.name.trim().is_empty() {
                return Err(GraphError::Invalid("a server has an empty name".into()));
            }
            if !names.insert(s.name.as_str()) {
                return Err(field_err(
                    "server",
                    &s.name,
                    "name",
                    &s.name,
                    "server names must be unique",
                ));
            }
            if s.service.is_empty() {
                return Err(field_err(
                    "server",
                    &s.name,
                    "service",
                    "[]",
                    "give at least one rate-latency curve",
                ));
            }
            for c in &s.service {
                if !(c.rate_bytes_per_s.is_finite() && c.rate_bytes_per_s > 0.0) {
                    return Err(field_err(
                        "server",
                        &s.name,
                        "service.rate_bytes_per_s",
                        c.rate_bytes_per_s,
                        "a finite rate > 0",
                    ));
                }
                if !finite_nonneg(c.latency_s) {
                    return Err(field_err(
                        "server",
                        &s.name,
                        "service.latency_s",
                        c.latency_s,
                        "a finite latency >= 0",
                    ));
                }
            }
        }
        let mut flow_names = HashSet::new();
        for f in &self.flows {
            if f.name.trim().is_empty() {
                return Err(GraphError::Invalid("a flow has an empty name".into()));
            }
            if !flow_names.insert(f.name.as_str()) {
                return Err(field_err(
                    "flow",
                    &f.name,
                    "name",
                    &f.name,
                    "flow names must be unique",
                ));
            }
            if f.path.is_empty() {
                return Err(field_err(
                    "flow",
                    &f.name,
                    "path",
                    "[]",
                    "a path of at least one server",
                ));
            }
            let mut seen = HashSet::new();
            for hop in &f.path {
                if self.server_index(hop).is_none() {
                    return Err(field_err(
                        "flow",
                        &f.name,
                        "path",
                        hop,
                        format!(
                            "a server name; servers are {}",
                            self.servers
                                .iter()
                                .map(|s| s.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                if !seen.insert(hop.as_str()) {
                    return Err(field_err(
                        "flow",
                        &f.name,
                        "path",
                        hop,
                        "each server at most once on a path",
                    ));
                }
            }
            for b in &f.arrival {
                if !finite_nonneg(b.rate_bytes_per_s) {
                    return Err(field_err(
                        "flow",
                        &f.name,
                        "arrival.rate_bytes_per_s",
                        b.rate_bytes_per_s,
                        "a finite rate >= 0",
                    ));
                }
                if !finite_nonneg(b.burst_bytes) {
                    return Err(field_err(
                        "flow",
                        &f.name,
                        "arrival.burst_bytes",
                        b.burst_bytes,
                        "a finite burst >= 0",
                    ));
                }
            }
            if let Some(l) = f.max_packet_bytes {
                if !finite_nonneg(l) {
                    return Err(field_err(
                        "flow",
                        &f.name,
                        "max_packet_bytes",
                        l,
                        "a finite size >= 0",
                    ));
                }
            }
            if let Some(p) = f.percentile {
                if !(p.is_finite() && p > 0.0 && p < 100.0) {
                    return Err(field_err(
                        "flow",
                        &f.name,
                        "percentile",
                        p,
                        "a percentile in (0, 100), e.g. 99.9",
                    ));
                }
            }
            if let Some(m) = &f.mmpp {
                m.validate()
                    .map_err(|e| field_err("flow", &f.name, "mmpp", "…", e.to_string()))?;
            }
        }
        self.topological_order().map(|_| ())
    }

    /// Server indices in an order where every server comes after the servers that feed it
    /// (along any flow's path); [`GraphError::Cycle`] naming one cycle when there is none.
    pub fn topological_order(&self) -> Result<Vec<usize>, GraphError> {
        let index: HashMap<&str, usize> = self
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        let n = self.servers.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for f in &self.flows {
            for w in f.path.windows(2) {
                if let (Some(&a), Some(&b)) = (index.get(w[0].as_str()), index.get(w[1].as_str())) {
                    if !next[a].contains(&b) {
                        next[a].push(b);
                    }
                }
            }
        }
        // depth-first search: 0 unvisited, 1 on the stack, 2 done
        let mut state = vec![0u8; n];
        let mut order = Vec::with_capacity(n);
        for root in 0..n {
            if state[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some(&mut (v, ref mut i)) = stack.last_mut() {
                if let Some(&w) = next[v].get(*i) {
                    *i += 1;
                    match state[w] {
                        0 => {
                            state[w] = 1;
                            stack.push((w, 0));
                        }
                        1 => {
                            let from = stack.iter().position(|&(u, _)| u == w).unwrap_or(0);
                            let mut cycle: Vec<String> = stack[from..]
                                .iter()
                                .map(|&(u, _)| self.servers[u].name.clone())
                                .collect();
                            cycle.push(self.servers[w].name.clone());
                            return Err(GraphError::Cycle(cycle));
                        }
                        _ => {}
                    }
                } else {
                    state[v] = 2;
                    order.push(v);
                    stack.pop();
                }
            }
        }
        order.reverse();
        Ok(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> Server {
        Server {
            name: name.into(),
            service: vec![RateLatencySpec {
                rate_bytes_per_s: 1e6,
                latency_s: 0.0,
            }],
            scheduling: Scheduling::Fifo,
        }
    }

    fn flow(name: &str, path: &[&str]) -> GraphFlow {
        GraphFlow {
            name: name.into(),
            path: path.iter().map(|s| s.to_string()).collect(),
            arrival: vec![TokenBucketSpec {
                rate_bytes_per_s: 1.0,
                burst_bytes: 1.0,
            }],
            priority: 0,
            max_packet_bytes: None,
            mmpp: None,
            trace: None,
            percentile: None,
        }
    }

    #[test]
    fn a_cycle_is_named() {
        let g = Graph {
            name: "ring".into(),
            servers: vec![server("a"), server("b"), server("c")],
            flows: vec![
                flow("f", &["a", "b"]),
                flow("g", &["b", "c"]),
                flow("h", &["c", "a"]),
            ],
        };
        let e = g.validate().unwrap_err();
        assert_eq!(
            e,
            GraphError::Cycle(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        assert!(e.to_string().contains("a -> b -> c -> a"), "{e}");
    }

    #[test]
    fn order_puts_feeders_first() {
        let g = Graph {
            name: String::new(),
            servers: vec![server("c"), server("b"), server("a")],
            flows: vec![flow("f", &["a", "b", "c"]), flow("g", &["b", "c"])],
        };
        let order = g.topological_order().unwrap();
        let pos = |n: &str| order.iter().position(|&i| g.servers[i].name == n).unwrap();
        assert!(pos("a") < pos("b") && pos("b") < pos("c"), "{order:?}");
    }

    #[test]
    fn bad_fields_are_named() {
        let mut g = Graph {
            name: String::new(),
            servers: vec![server("a")],
            flows: vec![flow("f", &["a", "z"])],
        };
        let e = g.validate().unwrap_err().to_string();
        assert!(e.contains("flow \"f\"") && e.contains("path = z"), "{e}");
        g.flows[0].path = vec!["a".into()];
        g.servers[0].service[0].rate_bytes_per_s = f64::NAN;
        let e = g.validate().unwrap_err().to_string();
        assert!(e.contains("service.rate_bytes_per_s = NaN"), "{e}");
    }

    #[test]
    fn toml_errors_name_the_line() {
        let e = Graph::from_toml("name = \"x\"\n[[servers]]\nname = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("TOML syntax") && e.contains("line 3"), "{e}");
    }
}
