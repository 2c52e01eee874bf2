//! What a policy decided, in the form the enforcers and the simulator take it: which tenants
//! run, at which priority, on which server, behind which token buckets.
//!
//! Every decision command (`tailbound admit`, `tailbound place`, ...) emits a [`Decisions`]
//! (JSON); `tailbound simulate --decisions FILE` replays a scenario under it. Rate limits are
//! per flow of the [`Network`](crate::Network) (`<tenant>-req`, `<tenant>-storage`,
//! `<tenant>-resp` in scenario networks), with the flow's [`Stage`] (so that an enforcer knows
//! the direction without the network: `net-in` leaves the client toward the server, `net-out`
//! the server toward the client), in the unit of the flow's queues: bytes on links,
//! busy-seconds on storage.
//!
//! ```json
//! {"policy": "snc-meister",
//!  "tenants": [{"name": "t0", "admitted": true, "priority": 0,
//!               "limits": [{"flow": "t0-req", "stage": "net-in", "rate": 1.2e6, "burst": 64000}]}]}
//! ```

use crate::{Bucket, Stage};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The decisions of one policy over a set of tenants.
///
/// A decisions file the CLI wrote opens with `"format": "tailbound.decisions/1"` and
/// `"tool": "tailbound 0.x.y"`; reading accepts a file with or without them, and refuses
/// another format or a newer version.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "RawDecisions")]
pub struct Decisions {
    /// the policy that decided (`snc-meister`, `compactor`, ...)
    #[serde(default)]
    pub policy: String,
    /// one entry per tenant the policy saw, in arrival order
    pub tenants: Vec<TenantDecision>,
    /// what every shaper does with requests beyond its buckets
    #[serde(default)]
    pub excess: Excess,
}

/// The format a decisions file names in `"format"` (the CLI's `tailbound.decisions/1`).
pub const DECISIONS_FORMAT: &str = "tailbound.decisions/1";

/// A decisions file as written, with the optional format and tool fields of the CLI's JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Decisions"))]
struct RawDecisions {
    #[serde(default)]
    format: Option<String>,
    /// the tool that wrote the file; informative only
    #[serde(default)]
    #[allow(dead_code)]
    tool: Option<String>,
    #[serde(default)]
    policy: String,
    tenants: Vec<TenantDecision>,
    #[serde(default)]
    excess: Excess,
}

impl TryFrom<RawDecisions> for Decisions {
    type Error = String;

    fn try_from(r: RawDecisions) -> Result<Decisions, String> {
        if let Some(format) = r.format.as_deref() {
            if format != DECISIONS_FORMAT {
                return Err(format!(
                    "format {format:?} is not allowed; this tailbound reads decisions in format {DECISIONS_FORMAT:?}"
                ));
            }
        }
        Ok(Decisions {
            policy: r.policy,
            tenants: r.tenants,
            excess: r.excess,
        })
    }
}

/// What a shaper does with a request its buckets cannot pass now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Excess {
    /// it waits, FIFO, until every bucket allows it (a strict rate limiter)
    #[default]
    Wait,
    /// it goes on at once at a best-effort level below every tenant's, and keeps its place
    /// in the shaper's FIFO: when the tokens for it come it is charged and what is left of
    /// it moves up to the tenant's level (HTB: a class over its rate borrows spare capacity,
    /// and its queue is served at its own priority again once it is back within its rate).
    /// Excess that finishes at best effort first takes no tokens. Traffic at a tenant's
    /// level never exceeds what its buckets let through, so every tenant's guarantees hold;
    /// the excess gets what is left, and reaches its tenant's level no later than a strict
    /// limiter would have let it through
    BestEffort,
}

crate::names!(Excess, "excess policy", { Wait => "wait", BestEffort => "best-effort" });

/// One tenant's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TenantDecision {
    pub name: String,
    /// runs with its guarantees (false: rejected, best effort; a replay leaves it out)
    pub admitted: bool,
    /// priority level, 0 highest; `None`: derived from the SLO
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// the server (host) the tenant was placed on; `None`: the scenario's own
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// token buckets in front of the tenant's flows; a flow listed several times passes a
    /// request when every one of its buckets allows it (several points of an r-b curve, as
    /// PriorityMeister enforces); flows not listed are not shaped
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<RateLimit>,
}

/// A token bucket in front of one flow. In JSON its bucket's fields sit beside the flow's:
/// `{"flow": "t0-req", "stage": "net-in", "rate": 1.2e6, "burst": 64000}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawLimit", into = "RawLimit")]
pub struct RateLimit {
    /// the flow's name in the network
    pub flow: String,
    /// the flow's stage
    pub stage: Stage,
    /// [work/s, work] in the unit of the flow's queues
    pub bucket: Bucket,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RateLimit"))]
struct RawLimit {
    flow: String,
    stage: Stage,
    rate: f64,
    burst: f64,
}

/// The schemas of the types read through a raw form are the raw form's.
#[cfg(feature = "schema")]
mod schema {
    use super::*;
    use schemars::gen::SchemaGenerator;
    use schemars::schema::Schema;
    use schemars::JsonSchema;

    impl JsonSchema for Decisions {
        fn schema_name() -> String {
            RawDecisions::schema_name()
        }
        fn json_schema(g: &mut SchemaGenerator) -> Schema {
            RawDecisions::json_schema(g)
        }
    }

    impl JsonSchema for RateLimit {
        fn schema_name() -> String {
            RawLimit::schema_name()
        }
        fn json_schema(g: &mut SchemaGenerator) -> Schema {
            RawLimit::json_schema(g)
        }
    }
}

impl From<RawLimit> for RateLimit {
    fn from(r: RawLimit) -> RateLimit {
        RateLimit {
            flow: r.flow,
            stage: r.stage,
            bucket: Bucket::new(r.rate, r.burst),
        }
    }
}

impl From<RateLimit> for RawLimit {
    fn from(l: RateLimit) -> RawLimit {
        RawLimit {
            flow: l.flow,
            stage: l.stage,
            rate: l.bucket.rate,
            burst: l.bucket.burst,
        }
    }
}

/// A decisions file that cannot be right.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionsError {
    #[error("tenant {0:?} appears twice in the decisions")]
    DuplicateTenant(String),
    #[error(
        "tenant {tenant:?}, flow {flow:?}: rate {rate} is not allowed; expected a finite rate > 0 [work/s]"
    )]
    Rate {
        tenant: String,
        flow: String,
        rate: f64,
    },
    #[error(
        "tenant {tenant:?}, flow {flow:?}: burst {burst} is not allowed; expected a finite burst >= 0 [work]"
    )]
    Burst {
        tenant: String,
        flow: String,
        burst: f64,
    },
}

impl Decisions {
    /// Checks that tenants are unique and that every bucket is finite and positive. Whether the names exist in a network is for the caller to check.
    pub fn validate(&self) -> Result<(), DecisionsError> {
        let mut names = HashSet::new();
        for t in &self.tenants {
            if !names.insert(t.name.as_str()) {
                return Err(DecisionsError::DuplicateTenant(t.name.clone()));
            }
            for l in &t.limits {
                let Bucket { rate, burst } = l.bucket;
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(DecisionsError::Rate {
                        tenant: t.name.clone(),
                        flow: l.flow.clone(),
                        rate,
                    });
                }
                if !(burst.is_finite() && burst >= 0.0) {
                    return Err(DecisionsError::Burst {
                        tenant: t.name.clone(),
                        flow: l.flow.clone(),
                        burst,
                    });
                }
            }
        }
        Ok(())
    }

    /// The decision for `name`, if any.
    pub fn tenant(&self, name: &str) -> Option<&TenantDecision> {
        self.tenants.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(rate: f64, burst: f64) -> Decisions {
        Decisions {
            policy: "p".into(),
            excess: Excess::Wait,
            tenants: vec![TenantDecision {
                name: "t0".into(),
                admitted: true,
                priority: Some(1),
                server: None,
                limits: vec![RateLimit {
                    flow: "t0-req".into(),
                    stage: Stage::NetIn,
                    bucket: Bucket::new(rate, burst),
                }],
            }],
        }
    }

    #[test]
    fn the_format_and_tool_fields_are_optional_and_a_foreign_format_is_refused() {
        let bare = r#"{"policy": "p", "tenants": [{"name": "t0", "admitted": true}]}"#;
        let stamped = r#"{"format": "tailbound.decisions/1", "tool": "tailbound 0.1.0",
            "policy": "p", "tenants": [{"name": "t0", "admitted": true}]}"#;
        let a: Decisions = serde_json::from_str(bare).unwrap();
        let b: Decisions = serde_json::from_str(stamped).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.tenants[0].name, "t0");
        let newer = stamped.replace("decisions/1", "decisions/2");
        let e = serde_json::from_str::<Decisions>(&newer).unwrap_err();
        assert!(e.to_string().contains("tailbound.decisions/2"), "{e}");
        let unknown = bare.replace("\"policy\"", "\"polcy\"");
        assert!(serde_json::from_str::<Decisions>(&unknown).is_err());
    }

    #[test]
    fn round_trips_through_json() {
        let d = one(1e6, 1500.0);
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<Decisions>(&text).unwrap(), d);
        assert!(!text.contains("server"), "{text}");
        assert!(
            text.contains(r#"{"flow":"t0-req","stage":"net-in","rate":1000000.0,"burst":1500.0}"#),
            "{text}"
        );
    }

    #[test]
    fn rejects_bad_buckets_and_duplicate_tenants() {
        assert!(one(1e6, 0.0).validate().is_ok());
        for (r, b) in [
            (0.0, 1.0),
            (-1.0, 1.0),
            (f64::NAN, 1.0),
            (1.0, -1.0),
            (1.0, f64::INFINITY),
        ] {
            assert!(one(r, b).validate().is_err(), "rate {r} burst {b}");
        }
        let mut d = one(1.0, 1.0);
        d.tenants.push(d.tenants[0].clone());
        assert_eq!(
            d.validate(),
            Err(DecisionsError::DuplicateTenant("t0".into()))
        );
        // several buckets on one flow are one concave arrival curve
        let mut d = one(1.0, 1.0);
        let mut l = d.tenants[0].limits[0].clone();
        l.bucket.rate = 2.0;
        d.tenants[0].limits.push(l);
        assert!(d.validate().is_ok());
    }

    #[test]
    fn a_limit_without_its_stage_or_with_a_typo_is_an_error() {
        let e = serde_json::from_str::<Decisions>(
            r#"{"tenants":[{"name":"a","admitted":true,"limits":[{"flow":"a-req","rate":1,"burst":1}]}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("stage"), "{e}");
        let e = serde_json::from_str::<Decisions>(
            r#"{"tenants":[{"name":"a","admitted":true,"limits":[{"flow":"a-req","stage":"net-in","rate":1,"brust":1}]}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("brust"), "{e}");
    }

    #[test]
    fn unknown_fields_are_errors() {
        let e = serde_json::from_str::<Decisions>(
            r#"{"tenants":[{"name":"a","admitted":true,"prio":1}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("prio"), "{e}");
    }
}
