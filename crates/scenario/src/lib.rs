//! Scenario files: which tenants share which hosts, with which SLOs and which traffic, built
//! into a [`Network`] of queues, flows and tenants with their traffic models.
//!
//! Three formats, one entry point [`load`] that tells them apart:
//! * tailbound's own scenario, TOML or JSON ([`own`]): hosts with links (and optional
//!   storage), tenants with an SLO and a trace or a synthetic generator spec;
//! * SNC-Meister's topology JSON ([`snc_meister::read_topology`]): clients with traces on
//!   client/server hosts;
//! * SNC-Meister's generated model config JSON ([`snc_meister::read_config`]): the MMPPs
//!   already fitted.
//!
//! Traces and own-format tenants are characterized here, once, with `tailbound-curves`:
//! every flow gets an MMPP (for SNC) and the exact arrival curve of its work (for DNC). What
//! lives elsewhere: the types ([`Network`], [`tailbound_model::Mmpp`], ...) and the one
//! network builder ([`tailbound_model::NetworkBuilder`]) in `tailbound-model`; reading and
//! generating traces in `tailbound-trace`; the fits in `tailbound-curves`; bounds in
//! `tailbound-calculus`; replaying in the simulator, which takes the network, the held-out
//! requests ([`Scenario::replay_requests`]) and the work functions ([`Scenario::works`]).
//!
//! Errors are one [`ScenarioError`], naming the file and, inside it, the tenant/client/flow and
//! the field.

pub mod error;
pub mod own;
pub mod snc_meister;

mod characterize;

pub use characterize::characterize;

pub use error::ScenarioError;
pub use tailbound_model::Network;
pub use tailbound_trace::Part;

use serde::Serialize;
use std::path::{Path, PathBuf};
use tailbound_curves::{stage_work, StorageProfile, WorkFunction};
use tailbound_model::Request;
use tailbound_trace::{GenSpec, Trace};

/// A network ready for the calculus, with where each tenant's traffic came from and how each
/// host's storage turns requests into work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub network: Network,
    /// one per tenant, in the order of [`Network::tenants`]
    pub sources: Vec<TenantSource>,
    /// one per host, in the order of [`Network::hosts`]: its storage device's profile (`None`:
    /// no storage, or the bundled Intel 710 SSD)
    #[serde(skip)]
    pub profiles: Vec<Option<StorageProfile>>,
}

impl Scenario {
    /// The work function of flow `flow`: the network estimators on links, the profile of the
    /// storage device it crosses on storage (the bundled Intel 710 SSD when none is given), as
    /// characterization used.
    pub fn work(&self, flow: usize) -> &dyn WorkFunction {
        static DEFAULT: std::sync::OnceLock<StorageProfile> = std::sync::OnceLock::new();
        let f = &self.network.flows[flow];
        let profile = f
            .path
            .first()
            .and_then(|&q| self.network.queues[q].site)
            .and_then(|site| self.profiles.get(site.host))
            .and_then(Option::as_ref)
            .unwrap_or_else(|| DEFAULT.get_or_init(StorageProfile::intel710_ssd));
        stage_work(f.stage, profile)
    }

    /// Every flow's work function, in the order of [`Network::flows`].
    pub fn works(&self) -> Vec<&dyn WorkFunction> {
        (0..self.network.flows.len())
            .map(|f| self.work(f))
            .collect()
    }

    /// Every tenant's held-out requests: the part of its trace that did not characterize it
    /// ([`Part::held_out`]). A model config has no requests: an error naming the tenant.
    pub fn replay_requests(&self) -> Result<Vec<Vec<Request>>, ScenarioError> {
        self.collect_requests(TenantSource::replay_trace)
    }

    /// Every tenant's `part` of its trace (whatever part characterized it).
    pub fn requests(&self, part: Part) -> Result<Vec<Vec<Request>>, ScenarioError> {
        self.collect_requests(|s| s.trace_part(part))
    }

    fn collect_requests(
        &self,
        part: impl Fn(&TenantSource) -> Result<Option<Trace>, ScenarioError>,
    ) -> Result<Vec<Vec<Request>>, ScenarioError> {
        self.sources
            .iter()
            .zip(&self.network.tenants)
            .map(|(source, t)| match part(source)? {
                Some(trace) => Ok(trace.requests),
                None => Err(ScenarioError::NoRequests(t.name.clone())),
            })
            .collect()
    }
}

/// Where one tenant's traffic came from, so that a simulator can replay what was not used to
/// characterize it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "source", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TenantSource {
    /// a trace file, characterized on `part`
    Trace { path: PathBuf, part: Part },
    /// a synthetic trace, `tailbound_trace::generate(&spec, seed)`, characterized on `part`
    Generated {
        spec: GenSpec,
        seed: u64,
        part: Part,
    },
    /// an SNC-Meister model config: the MMPPs were given, no requests are at hand; `trace` is
    /// the client's `trace` field as written (resolved against the config's folder), which may
    /// not exist on this machine
    ModelConfig {
        config: PathBuf,
        trace: Option<PathBuf>,
    },
}

impl TenantSource {
    /// The requests to replay: the part of the trace that did not characterize the tenant
    /// ([`Part::held_out`]); `None` for a model config, which has no requests.
    pub fn replay_trace(&self) -> Result<Option<Trace>, ScenarioError> {
        match self {
            TenantSource::Trace { part, .. } | TenantSource::Generated { part, .. } => {
                self.trace_part(part.held_out())
            }
            TenantSource::ModelConfig { .. } => Ok(None),
        }
    }

    /// `part` of the tenant's trace; `None` for a model config.
    pub fn trace_part(&self, part: Part) -> Result<Option<Trace>, ScenarioError> {
        let Some((trace, origin)) = self.full_trace()? else {
            return Ok(None);
        };
        let trace = part.of(&trace).map_err(|e| ScenarioError::Trace {
            path: origin.clone(),
            at: "replay".into(),
            trace: origin,
            message: e.to_string(),
        })?;
        Ok(Some(trace))
    }

    /// The whole trace and where it came from; `None` for a model config.
    fn full_trace(&self) -> Result<Option<(Trace, PathBuf)>, ScenarioError> {
        match self {
            TenantSource::Trace { path, .. } => {
                let t = tailbound_trace::read_trace(path).map_err(|e| ScenarioError::Trace {
                    path: path.clone(),
                    at: "replay".into(),
                    trace: path.clone(),
                    message: e.kind.to_string(),
                })?;
                Ok(Some((t, path.clone())))
            }
            TenantSource::Generated { spec, seed, .. } => {
                let t =
                    tailbound_trace::generate(spec, *seed).map_err(|e| ScenarioError::Format {
                        path: PathBuf::from(format!("<generator seed {seed}>")),
                        message: e.to_string(),
                    })?;
                let name = PathBuf::from(t.name.clone());
                Ok(Some((t, name)))
            }
            TenantSource::ModelConfig { .. } => Ok(None),
        }
    }
}

/// What [`load`] found a file to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// tailbound's own scenario (TOML by extension, or JSON with `hosts`)
    Own,
    /// SNC-Meister topology: JSON `clients` with `trace`/`clientHost`
    SncTopology,
    /// SNC-Meister model config: JSON `clients` with `flows`
    SncConfig,
}

/// Tells the formats apart: `.toml` is tailbound's own; otherwise the file must be JSON (any
/// extension: SNC-Meister's samples are `.txt`) and is tailbound's own if it has `hosts`, an
/// SNC-Meister topology if its `clients` have `trace` or `clientHost`, an SNC-Meister model
/// config if its `clients` have `flows`.
pub fn detect(path: &Path) -> Result<FileKind, ScenarioError> {
    if has_extension(path, "toml") {
        return Ok(FileKind::Own);
    }
    let text = snc_meister::read_text(path)?;
    detect_json(path, &text)
}

fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

fn detect_json(path: &Path, text: &str) -> Result<FileKind, ScenarioError> {
    let unknown = |why: &str| ScenarioError::Format {
        path: path.to_path_buf(),
        message: format!(
            "{why}; expected a tailbound scenario (.toml, or JSON with `hosts`), an SNC-Meister \
             topology (JSON `clients` with `trace` and `clientHost`) or an SNC-Meister model \
             config (JSON `clients` with `flows`)"
        ),
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if has_extension(path, "json") {
            ScenarioError::Syntax {
                path: path.to_path_buf(),
                message: format!("invalid JSON: {e}"),
            }
        } else {
            unknown(&format!("not a .toml file and not JSON ({e})"))
        }
    })?;
    let Some(obj) = value.as_object() else {
        return Err(unknown("the JSON is not an object"));
    };
    if obj.contains_key("hosts") {
        return Ok(FileKind::Own);
    }
    let Some(clients) = obj.get("clients").and_then(|c| c.as_array()) else {
        return Err(unknown("it has neither `hosts` nor a `clients` list"));
    };
    let has = |key: &str| clients.iter().any(|c| c.get(key).is_some());
    match (has("flows"), has("trace") || has("clientHost")) {
        (true, _) => Ok(FileKind::SncConfig),
        (false, true) => Ok(FileKind::SncTopology),
        (false, false) => Err(unknown(
            "its `clients` have neither `flows` nor `trace`/`clientHost`",
        )),
    }
}

/// Which traffic models loading fits to each flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Models {
    /// an MMPP and the arrival curve of every flow (what the calculus and the policies need)
    #[default]
    Fitted,
    /// the MMPP of every flow only: what the SNC analyses read (the exact arrival curve, which
    /// only DNC reads, costs more than the fit)
    Mmpp,
    /// none: the network, the sources and the work functions only, for a replay, which
    /// needs the requests and not their models (so that a fit it does not use cannot fail it)
    None,
}

/// Reads a scenario in any of the three formats (see [`detect`]); SNC-Meister topologies with
/// default [`snc_meister::Options`].
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_with(path, Models::Fitted)
}

/// As [`load`], fitting `models` (a model config JSON carries its MMPPs whatever `models`
/// says).
pub fn load_with(path: &Path, models: Models) -> Result<Scenario, ScenarioError> {
    load_part(path, models, None)
}

/// As [`load_with`], with the part of each trace that characterizes its tenant chosen by the
/// caller (an operator's `--characterize`): `Some(part)` for every format that reads traces;
/// `None` keeps each format's default (an own scenario's `[characterize] part`, the first half
/// for an SNC-Meister topology, as the papers' experiments do). A model config has no traces.
pub fn load_part(
    path: &Path,
    models: Models,
    part: Option<Part>,
) -> Result<Scenario, ScenarioError> {
    let kind = detect(path)?;
    tracing::debug!(file = %path.display(), ?kind, ?part, "loading scenario");
    match kind {
        FileKind::Own => own::read_characterized(path, models, part),
        FileKind::SncTopology => {
            let defaults = snc_meister::Options::default();
            snc_meister::read_topology(
                path,
                &snc_meister::Options {
                    models,
                    part: part.unwrap_or(defaults.part),
                    ..defaults
                },
            )
        }
        FileKind::SncConfig => snc_meister::read_config_scenario(path),
    }
}

/// `rel` resolved against the folder holding `file`.
pub(crate) fn relative_to(file: &Path, rel: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) => dir.join(rel),
        None => rel.to_path_buf(),
    }
}
