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
//! lives elsewhere: the types ([`Network`], [`tailbound_model::Mmpp`], ...) in
//! `tailbound-model`; reading and generating traces in `tailbound-trace`; the fits in
//! `tailbound-curves`; bounds in `tailbound-calculus`; replaying the held-out half in the
//! simulator, which uses [`TenantSource`] to find it.
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

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tailbound_curves::{stage_work, StorageProfile, WorkFunction};
use tailbound_model::Stage;
use tailbound_trace::{GenSpec, Trace};

/// A network ready for the calculus, with where each tenant's traffic came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub network: Network,
    /// one per tenant, in the order of [`Network::tenants`]
    pub tenants: Vec<TenantSource>,
    /// one per tenant: its client and server hosts, when the format names them
    pub hosts: Vec<Option<TenantHosts>>,
    /// one per flow, in the order of [`Network::flows`]: how its requests became work
    /// (`None` for a model config, whose flows came without requests)
    pub flows: Vec<Option<FlowSource>>,
}

/// The hosts a tenant's flows run between (queues `<client>-out`, `<server>-in`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantHosts {
    pub client: String,
    pub server: String,
}

/// How one flow's requests became work, so that a replay loads the queues exactly as
/// characterization did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowSource {
    pub stage: Stage,
    /// the device profile of a [`Stage::Storage`] flow
    #[serde(skip)]
    pub profile: Option<StorageProfile>,
}

impl FlowSource {
    /// A network flow (bytes by [`stage_work`]).
    pub fn network(stage: Stage) -> FlowSource {
        FlowSource {
            stage,
            profile: None,
        }
    }

    /// The work function of this flow's stage; a storage flow without a profile uses the
    /// bundled Intel 710 SSD profile, as characterization does.
    pub fn work(&self) -> &dyn WorkFunction {
        static DEFAULT: std::sync::OnceLock<StorageProfile> = std::sync::OnceLock::new();
        let profile = self
            .profile
            .as_ref()
            .unwrap_or_else(|| DEFAULT.get_or_init(StorageProfile::intel710_ssd));
        stage_work(self.stage, profile)
    }
}

/// Which part of a trace characterizes a tenant; the rest is what a replay should check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// the first half by time (`tailbound_trace::split` at 0.5); the second half is replayed
    /// (both papers' methodology)
    #[default]
    FirstHalf,
    /// the whole trace; a replay then re-uses the characterized requests (optimistic, but what
    /// SNC-Meister's own tools do with the file they are given)
    Whole,
}

impl Part {
    /// The characterized part and the part to replay (rebased to start near 0 for
    /// [`Part::FirstHalf`], the whole trace for [`Part::Whole`]).
    pub fn split(self, trace: &Trace) -> Result<(Trace, Trace), tailbound_trace::SplitError> {
        match self {
            Part::FirstHalf => tailbound_trace::split(trace, 0.5),
            Part::Whole => Ok((trace.clone(), trace.clone())),
        }
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
    /// (see [`Part::split`]); `None` for a model config, which has no requests.
    pub fn replay_trace(&self) -> Result<Option<Trace>, ScenarioError> {
        let part = match self {
            TenantSource::Trace { part, .. } | TenantSource::Generated { part, .. } => *part,
            TenantSource::ModelConfig { .. } => return Ok(None),
        };
        self.replay_part(part)
    }

    /// The requests a replay of `part`'s complement would use: the second half for
    /// [`Part::FirstHalf`] (rebased, see [`Part::split`]), everything for [`Part::Whole`];
    /// `None` for a model config.
    pub fn replay_part(&self, part: Part) -> Result<Option<Trace>, ScenarioError> {
        let Some((trace, origin)) = self.full_trace()? else {
            return Ok(None);
        };
        let (_, replay) = part.split(&trace).map_err(|e| ScenarioError::Trace {
            path: origin.clone(),
            at: "replay".into(),
            trace: origin,
            message: e.to_string(),
        })?;
        Ok(Some(replay))
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

/// Reads a scenario in any of the three formats (see [`detect`]); SNC-Meister topologies with
/// default [`snc_meister::Options`].
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let kind = detect(path)?;
    tracing::debug!(file = %path.display(), ?kind, "loading scenario");
    match kind {
        FileKind::Own => own::read(path),
        FileKind::SncTopology => snc_meister::read_topology(path, &snc_meister::Options::default()),
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
