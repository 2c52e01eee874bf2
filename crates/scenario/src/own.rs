//! tailbound's own scenario format, in TOML or JSON (chosen by [`crate::load`]: `.toml` is
//! TOML, JSON with a `hosts` key is this format).
//!
//! SNC-Meister's formats live in [`crate::snc_meister`]; the fits used to characterize
//! tenants live in `tailbound-curves`; trace reading and synthetic generators in
//! `tailbound-trace`.
//!
//! # Format
//!
//! ```toml
//! # How traces become models (optional table; these are the defaults).
//! [characterize]
//! part = "first-half"    # "first-half" (replay the second half) | "whole"
//! sizes = "exponential"  # MMPP size model per state: "exponential" | "empirical"
//!
//! [[hosts]]
//! name = "client1"
//! link = "1Gbit"         # NIC rate, each direction; default "1Gbit"
//!
//! [[hosts]]
//! name = "server1"
//! link = "10Gbit"
//! storage = true         # the host has a storage device tenants may use; default false
//! profile = "ssd.json"   # its profile (WorkloadCompactor's profileSSD.txt format), relative
//!                        # to this file; default the bundled Intel 710 SSD
//!
//! [[tenants]]
//! name = "web"
//! client = "client1"     # host names from [[hosts]]
//! server = "server1"
//! slo = "20ms"           # duration with unit (ns, us, ms, s, min), or a number of seconds
//! percentile = 99.9      # strictly between 0 and 100; default 99.9
//! trace = "traces/web.csv"   # relative to this file
//! group = "lb"           # optional: tenants in a group may burst together (snc-meister §4.2)
//! priority = 0           # optional explicit priority, 0 highest; default from the SLO
//! storage = true         # optional: requests also cross the server's storage; default false
//!
//! [[tenants]]
//! name = "batch"
//! client = "client1"
//! server = "server1"
//! slo = "100ms"
//! percentile = 99
//! seed = 7               # generator seed; default 0 (only with `model`)
//! model = { arrival = { model = "poisson", rate_per_s = 50 }, sizes = { model = "exponential", mean_bytes = 4096 }, read_fraction = 0.9, duration_s = 120, vocabulary = "key_value" }
//! ```
//!
//! The same structure in JSON: `{"characterize": {...}, "hosts": [...], "tenants": [...]}`.
//! Unknown keys are errors (typos should not pass silently). `model` is a
//! `tailbound_trace::GenSpec`: `arrival` (`model` = `poisson` {rate_per_s} | `mmpp`
//! {rates_per_s, mean_dwell_s} | `on_off` {on_rate_per_s, mean_on_s, mean_off_s} | `pareto`
//! {rate_per_s, shape}), `sizes` (`model` = `fixed` {bytes} | `exponential` {mean_bytes} |
//! `pareto` {min_bytes, shape} | `choice` {sizes}), `read_fraction`, `duration_s`, `vocabulary`
//! (`disk` | `key_value`). Each tenant gives exactly one of `trace` and `model`.
//!
//! # What it builds
//!
//! * Queues, per host in file order: `<host>-out` and `<host>-in` at the link rate [bytes/s],
//!   and `<host>-storage` at rate 1 [busy-s/s] if the host has storage.
//! * Per tenant, flows in this order (its [`tailbound_model::TenantSpec::flows`]):
//!   `<tenant>-req` (`<client>-out` → `<server>-in`, [`Stage::NetIn`] work),
//!   `<tenant>-storage` (`<server>-storage`, [`Stage::Storage`] work, only with `storage`),
//!   `<tenant>-resp` (`<server>-out` → `<client>-in`, [`Stage::NetOut`] work).
//! * Every flow gets both models from the characterized part of the tenant's trace (read, or
//!   generated from `model` and `seed`): `mmpp` by `fit_mmpp` (default options, sizes from
//!   `[characterize]`) and `arrival`, the exact arrival curve of the stage's work series.
//!
//! Errors name the file, the tenant or host, the field and the bad value, and say what is
//! accepted: unknown hosts, duplicate names, an SLO of 0, percentile 100, a missing trace
//! file, `trace` and `model` both or neither, bad units (`link = "fast"`), `storage` on a
//! tenant whose server has none.

use crate::characterize::characterize_for;
use crate::error::ScenarioError;
use crate::snc_meister::{network_error, parse_json, read_text};
use crate::{relative_to, Models, Part, Scenario, TenantSource};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use tailbound_curves::mmpp::SizeKind;
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::units::{parse_duration_s, parse_rate_bytes_per_s};
use tailbound_model::{NetworkBuilder, NewTenant, Slo, Stage, TenantHosts};
use tailbound_trace::{GenSpec, Trace};

/// Default link rate of a host: 1 Gbit/s [bytes/s].
pub const DEFAULT_LINK_BYTES_PER_S: f64 = 125e6;
/// Default percentile of a tenant's SLO (SNC-Meister's).
pub const DEFAULT_PERCENTILE: f64 = 99.9;

/// A quantity written with a unit (`"20ms"`, `"1Gbit"`) or as a bare number in base units.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(untagged))]
enum Quantity {
    Number(f64),
    Text(String),
}

/// By hand rather than `#[serde(untagged)]`, whose error names the Rust type ("untagged enum
/// Quantity") instead of what the file may say.
impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Quantity, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or a quantity with its unit, e.g. \"20ms\" or \"1Gbit\"")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
                Ok(Quantity::Number(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity::Number(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity::Number(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                Ok(Quantity::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl Quantity {
    fn parse(
        &self,
        parser: fn(&str) -> Result<f64, tailbound_model::units::UnitError>,
    ) -> Result<f64, String> {
        match self {
            Quantity::Number(v) => Ok(*v),
            Quantity::Text(s) => parser(s).map_err(|e| e.to_string()),
        }
    }

    fn quoted(&self) -> String {
        match self {
            Quantity::Number(v) => v.to_string(),
            Quantity::Text(s) => format!("{s:?}"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Scenario"))]
struct OwnFile {
    hosts: Vec<RawHost>,
    #[serde(default)]
    tenants: Vec<RawTenant>,
    #[serde(default)]
    characterize: Characterize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RawHost {
    name: String,
    link: Option<Quantity>,
    #[serde(default)]
    storage: bool,
    profile: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RawTenant {
    name: String,
    client: String,
    server: String,
    slo: Quantity,
    percentile: Option<f64>,
    trace: Option<PathBuf>,
    model: Option<GenSpec>,
    seed: Option<u64>,
    group: Option<String>,
    priority: Option<u32>,
    #[serde(default)]
    storage: bool,
}

/// The `[characterize]` table.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Characterize {
    /// which part of each trace characterizes the tenant
    #[serde(default)]
    pub part: Part,
    /// MMPP state size model
    #[serde(default)]
    pub sizes: SizeKind,
    /// MMPP counting interval, e.g. "1s" (SNC-Meister's, the default) or "100ms" (sees
    /// sub-second bursts)
    #[serde(default)]
    pub interval: Option<FitInterval>,
    /// requests closer than this to the previous one form one MMPP arrival event (a batch),
    /// e.g. "1ms"; default none (every request is an event, as SNC-Meister fits)
    #[serde(default)]
    pub batch_gap: Option<FitInterval>,
}

/// An MMPP fit duration (counting interval, batch gap) written as "1s", "250ms" [s].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FitInterval(#[cfg_attr(feature = "schema", schemars(with = "String"))] pub f64);

impl<'de> Deserialize<'de> for FitInterval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FitInterval, D::Error> {
        let text = String::deserialize(d)?;
        let s = parse_duration_s(&text).map_err(serde::de::Error::custom)?;
        if s >= 0.0 {
            Ok(FitInterval(s))
        } else {
            Err(serde::de::Error::custom(format!(
                "duration {text:?} is not allowed; expected a duration >= 0, e.g. \"1s\""
            )))
        }
    }
}

/// The JSON Schema of a scenario in tailbound's own format (TOML files validate as the JSON
/// value of their TOML), for editors and `tailbound schema scenario`.
#[cfg(feature = "schema")]
pub fn schema() -> schemars::schema::RootSchema {
    schemars::schema_for!(OwnFile)
}

/// Reads a scenario in tailbound's own format: TOML if the extension is `.toml`, JSON
/// otherwise.
pub fn read(path: &Path) -> Result<Scenario, ScenarioError> {
    read_with(path, Models::Fitted)
}

/// As [`read`], fitting `models`.
pub fn read_with(path: &Path, models: Models) -> Result<Scenario, ScenarioError> {
    read_characterized(path, models, None)
}

/// As [`read_with`], characterizing every tenant on `part` of its trace instead of the file's
/// `[characterize] part` when `part` is given (a command's `--characterize`).
pub fn read_characterized(
    path: &Path,
    models: Models,
    part: Option<Part>,
) -> Result<Scenario, ScenarioError> {
    let text = read_text(path)?;
    let mut file = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
    {
        toml_file(path, &text)?
    } else {
        parse_json(path, &text)?
    };
    if let Some(part) = part {
        file.characterize.part = part;
    }
    build(path, file, models)
}

/// Parses a scenario in tailbound's own TOML format from text; `path` names it in errors and
/// anchors relative trace and profile paths (used for scenarios embedded in the binary).
pub fn parse_toml(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    build(path, toml_file(path, text)?, Models::Fitted)
}

fn toml_file(path: &Path, text: &str) -> Result<OwnFile, ScenarioError> {
    toml::from_str(text).map_err(|e| ScenarioError::Syntax {
        path: path.to_path_buf(),
        message: format!("invalid scenario TOML: {}", e.to_string().trim_end()),
    })
}

fn build(path: &Path, file: OwnFile, fit: Models) -> Result<Scenario, ScenarioError> {
    let bad =
        |at: String, field: &str, problem: String| ScenarioError::invalid(path, at, field, problem);
    let mut b = NetworkBuilder::new();
    let mut hosts: HashMap<&str, usize> = HashMap::new();
    let mut profiles = Vec::with_capacity(file.hosts.len());
    for h in &file.hosts {
        let at = format!("host {:?}", h.name);
        if h.name.trim().is_empty() {
            return Err(bad(at, "name", "is empty; expected a host name".into()));
        }
        if hosts.contains_key(h.name.as_str()) {
            return Err(bad(
                at,
                "name",
                format!("host {:?} appears twice; host names must be unique", h.name),
            ));
        }
        let rate = match &h.link {
            None => DEFAULT_LINK_BYTES_PER_S,
            Some(q) => {
                let r = q.parse(parse_rate_bytes_per_s).map_err(|e| {
                    bad(
                        at.clone(),
                        "link",
                        format!("{} is not a rate: {e}", q.quoted()),
                    )
                })?;
                if !(r.is_finite() && r > 0.0) {
                    return Err(bad(
                        at,
                        "link",
                        format!("{} is not a positive rate; e.g. \"1Gbit\"", q.quoted()),
                    ));
                }
                r
            }
        };
        if h.profile.is_some() && !h.storage {
            return Err(bad(
                at,
                "profile",
                "is given but the host has no storage; add `storage = true`".into(),
            ));
        }
        let profile = match &h.profile {
            Some(p) if h.storage => Some(
                StorageProfile::load(&relative_to(path, p))
                    .map_err(|e| bad(at.clone(), "profile", e.to_string()))?,
            ),
            _ => None,
        };
        hosts.insert(&h.name, b.host(&h.name, rate, h.storage.then_some(1.0)));
        profiles.push(profile);
    }
    let host_names = || {
        file.hosts
            .iter()
            .map(|h| format!("{:?}", h.name))
            .collect::<Vec<_>>()
            .join(", ")
    };

    let opts = file.characterize;
    let default_profile = StorageProfile::intel710_ssd();
    let mut seen = HashSet::new();
    let mut sources = Vec::with_capacity(file.tenants.len());
    for t in &file.tenants {
        let at = format!("tenant {:?}", t.name);
        if t.name.trim().is_empty() {
            return Err(bad(at, "name", "is empty; expected a tenant name".into()));
        }
        if !seen.insert(t.name.as_str()) {
            return Err(bad(
                at,
                "name",
                format!(
                    "tenant {:?} appears twice; tenant names must be unique",
                    t.name
                ),
            ));
        }
        let host = |field: &str, name: &str| {
            hosts.get(name).copied().ok_or_else(|| {
                bad(
                    at.clone(),
                    field,
                    format!("unknown host {name:?}; the hosts are {}", host_names()),
                )
            })
        };
        let client = host("client", &t.client)?;
        let server = host("server", &t.server)?;
        let slo_s = t.slo.parse(parse_duration_s).map_err(|e| {
            bad(
                at.clone(),
                "slo",
                format!("{} is not a duration: {e}", t.slo.quoted()),
            )
        })?;
        let percentile = t.percentile.unwrap_or(DEFAULT_PERCENTILE);
        let slo = Slo::new(slo_s, percentile).map_err(|e| match e {
            tailbound_model::SloError::Percentile(_) => {
                bad(at.clone(), "percentile", format!("{percentile}: {e}"))
            }
            _ => bad(at.clone(), "slo", format!("{}: {e}", t.slo.quoted())),
        })?;
        if let Some(g) = &t.group {
            if g.trim().is_empty() {
                return Err(bad(
                    at,
                    "group",
                    "is empty; omit it or name the group".into(),
                ));
            }
        }
        if t.storage && b.network().hosts[server].storage.is_none() {
            return Err(bad(
                at,
                "storage",
                format!(
                    "is true but server host {:?} has no storage; add `storage = true` to \
                     that host or remove it from the tenant",
                    t.server
                ),
            ));
        }

        // the requests that characterize the tenant
        let (trace, source) = match (&t.trace, &t.model) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    at,
                    "trace",
                    "both `trace` and `model` are given; give exactly one: a trace file or a \
                     generator spec"
                        .into(),
                ))
            }
            (None, None) => {
                return Err(bad(
                    at,
                    "trace",
                    "neither `trace` nor `model` is given; give exactly one: trace = \"path\" \
                     or model = { arrival = ..., sizes = ..., ... }"
                        .into(),
                ))
            }
            (Some(rel), None) => {
                if t.seed.is_some() {
                    return Err(bad(
                        at,
                        "seed",
                        "is given with `trace`; a seed only applies to a `model`".into(),
                    ));
                }
                let p = relative_to(path, rel);
                let trace = read_trace_at(path, &at, &p)?;
                (
                    trace,
                    TenantSource::Trace {
                        path: p,
                        part: opts.part,
                    },
                )
            }
            (None, Some(spec)) => {
                let seed = t.seed.unwrap_or(0);
                let trace = tailbound_trace::generate(spec, seed).map_err(|e| {
                    bad(at.clone(), "model", format!("cannot generate a trace: {e}"))
                })?;
                (
                    trace,
                    TenantSource::Generated {
                        spec: spec.clone(),
                        seed,
                        part: opts.part,
                    },
                )
            }
        };
        let trace_name = PathBuf::from(&trace.name);
        let part = opts.part.of(&trace).map_err(|e| ScenarioError::Trace {
            path: path.to_path_buf(),
            at: at.clone(),
            trace: trace_name.clone(),
            message: e.to_string(),
        })?;

        let profile = profiles[server].as_ref().unwrap_or(&default_profile);
        let ti = b.tenant(NewTenant {
            name: t.name.clone(),
            slo,
            group: t.group.clone(),
            priority: t.priority,
            hosts: Some(TenantHosts { client, server }),
        });
        let stages: &[Stage] = if t.storage {
            &[Stage::NetIn, Stage::Storage, Stage::NetOut]
        } else {
            &[Stage::NetIn, Stage::NetOut]
        };
        for &stage in stages {
            let models = characterize_for(
                fit,
                &part.requests,
                stage_work(stage, profile),
                opts.sizes,
                opts.interval.map_or(1.0, |i| i.0),
                opts.batch_gap.map_or(0.0, |g| g.0),
            )
            .map_err(|m| ScenarioError::Trace {
                path: path.to_path_buf(),
                at: at.clone(),
                trace: trace_name.clone(),
                message: format!("{stage} work: {m}"),
            })?;
            b.flow(ti, stage, models)
                .map_err(|e| network_error(path, e))?;
        }
        sources.push(source);
    }
    let net = b.build().map_err(|e| network_error(path, e))?;
    tracing::debug!(
        file = %path.display(),
        queues = net.queues.len(),
        flows = net.flows.len(),
        tenants = net.tenants.len(),
        "read tailbound scenario"
    );
    Ok(Scenario {
        network: net,
        sources,
        profiles,
    })
}

/// Reads the trace `trace` named at `at` in scenario file `path`; a missing file is an error
/// saying how relative paths resolve.
pub(crate) fn read_trace_at(path: &Path, at: &str, trace: &Path) -> Result<Trace, ScenarioError> {
    let err = |message: String| ScenarioError::Trace {
        path: path.to_path_buf(),
        at: at.to_string(),
        trace: trace.to_path_buf(),
        message,
    };
    tailbound_trace::read_trace(trace).map_err(|e| {
        err(match &e.kind {
            tailbound_trace::TraceErrorKind::Io(io)
                if e.line == 0 && io.kind() == std::io::ErrorKind::NotFound =>
            {
                "trace file not found; trace paths are relative to the scenario file's folder"
                    .into()
            }
            _ if e.line > 0 => format!("line {}: {}", e.line, e.kind),
            _ => e.kind.to_string(),
        })
    })
}
