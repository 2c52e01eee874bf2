//! Pulsar's VDCs hosted by the service (pulsar §3–§5): each submitted VDC file (a datacenter's
//! servers, appliances and tenants' virtual datacenters, `tailbound_allocation::vdc`) gets its
//! own controller, `tailbound_control::ControlState` — the same state machine `tailbound vdc
//! serve` runs (demand and capacity estimation, DRF/H-DRF local and global steps, enforcer
//! registration, staleness). No I/O and no clock here: the routes ([`crate::vdc_api`]) pass
//! `now`, and [`crate::store`] keeps the specs and each controller's
//! `tailbound_control::Snapshot`.

use crate::error::ServiceError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tailbound_allocation::{ControllerConfig, Mechanism, VdcSpec};
use tailbound_control::protocol::{valid_id, Status};
use tailbound_control::{ControlConfig, ControlError, ControlState, Snapshot};

/// `POST /v1/vdcs`: a VDC file, as JSON (`spec`) or as the text of a TOML file (`toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewVdc {
    /// 1 to 64 characters from `[A-Za-z0-9._-]`; enforcers reach it at `/v1/vdcs/NAME`
    pub name: String,
    /// the VDC file's structure as JSON (what `tailbound vdc check --json` reads)
    #[serde(default)]
    pub spec: Option<VdcSpec>,
    /// the text of a TOML VDC file
    #[serde(default)]
    pub toml: Option<String>,
    /// how its controller runs (the options of `tailbound vdc serve`)
    #[serde(default)]
    pub controller: VdcSettings,
}

/// A VDC's controller settings; every field has `tailbound vdc serve`'s default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VdcSettings {
    /// control interval [s], 0.001 to 3600 (pulsar: 1 s)
    pub interval_s: f64,
    /// the provider's global mechanism (eq. 3)
    pub global: Mechanism,
    /// estimate appliances' capacities at run time (§4.3); false: their configured capacity
    pub estimate: bool,
    /// weight of the newest interval in the demand's moving average, in (0, 1]
    pub demand_gain: f64,
    /// fraction of every link kept out of the allocations, in [0, 1)
    pub link_headroom: f64,
    /// sub-interval samples per report
    pub samples: u32,
    /// the smallest rate an enforcer gives a hop [tokens/s]
    pub min_rate: f64,
    /// unused tokens an enforcer keeps across an update [s]
    pub carry_s: f64,
    /// intervals without a report before an enforcer is flagged stale
    pub stale_after: u32,
}

impl Default for VdcSettings {
    fn default() -> VdcSettings {
        let c = ControlConfig::default();
        VdcSettings {
            interval_s: c.controller.interval_ns as f64 * 1e-9,
            global: c.controller.global,
            estimate: c.controller.estimate_capacity,
            demand_gain: c.controller.demand_gain,
            link_headroom: c.controller.link_headroom,
            samples: c.samples_per_interval,
            min_rate: c.min_rate,
            carry_s: c.carry_s,
            stale_after: c.stale_after,
        }
    }
}

impl VdcSettings {
    /// The controller's configuration.
    ///
    /// # Errors
    /// A 422 naming `controller.interval_s` when the interval is outside 1 ms to 1 h (the
    /// other settings are checked by the controller).
    pub fn config(&self) -> Result<ControlConfig, ServiceError> {
        let ns = self.interval_s * 1e9;
        if !(ns.is_finite() && (1e6..=3.6e12).contains(&ns)) {
            return Err(ServiceError::invalid(
                "controller.interval_s",
                format!(
                    "{} s is not allowed; expected 0.001 to 3600",
                    self.interval_s
                ),
            ));
        }
        Ok(ControlConfig {
            controller: ControllerConfig {
                interval_ns: ns.round() as u64,
                global: self.global,
                demand_gain: self.demand_gain,
                estimate_capacity: self.estimate,
                link_headroom: self.link_headroom,
                ..ControllerConfig::default()
            },
            samples_per_interval: self.samples,
            min_rate: self.min_rate,
            carry_s: self.carry_s,
            stale_after: self.stale_after,
        })
    }
}

/// A hosted VDC as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VdcView {
    pub name: String,
    pub controller: VdcSettings,
    pub tenants: Vec<String>,
    pub flows: usize,
    /// control steps run so far
    pub epoch: u64,
    /// registered enforcers
    pub enforcers: usize,
    /// of those, how many stopped reporting (they keep their last allocation)
    pub stale: usize,
    /// the VDC file (`GET /v1/vdcs/{vdc}` and the answers to `POST` and `DELETE`)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<VdcSpec>,
}

/// One hosted VDC: its file, settings and controller.
#[derive(Debug)]
pub struct Hosted {
    pub name: String,
    pub spec: VdcSpec,
    pub settings: VdcSettings,
    pub state: ControlState,
}

impl Hosted {
    /// A VDC from a submitted body, its controller's first step at `now_ns`: the errors of
    /// `tailbound vdc check` for the file, naming the body's field.
    ///
    /// # Errors
    /// 422 for a bad name, a file that does not validate or bad controller settings; 400 for
    /// TOML that does not parse, or neither or both of `spec` and `toml`.
    pub fn prepare(req: NewVdc, now_ns: u64) -> Result<Hosted, ServiceError> {
        if !valid_id(&req.name) {
            return Err(ServiceError::invalid(
                "name",
                format!(
                    "VDC name {:?} is not allowed; use 1 to 64 characters from [A-Za-z0-9._-]",
                    req.name
                ),
            ));
        }
        let file = format!("VDC {}", req.name);
        let (spec, dc, field) = match (req.spec, req.toml) {
            (Some(spec), None) => {
                let dc = spec
                    .compile()
                    .map_err(|e| ServiceError::invalid("spec", format!("{file}: {e}")))?;
                (spec, dc, "spec")
            }
            (None, Some(text)) => {
                let (spec, dc) =
                    VdcSpec::parse(&format!("{file}.toml"), &text).map_err(|e| match e {
                        tailbound_allocation::AllocError::Parse { message, .. } => {
                            ServiceError::Malformed {
                                field: Some("toml".into()),
                                message: format!("field toml: {file}: {message}"),
                            }
                        }
                        e => ServiceError::invalid("toml", e.to_string()),
                    })?;
                (spec, dc, "toml")
            }
            (None, None) => {
                return Err(ServiceError::Malformed {
                    field: Some("spec".into()),
                    message: "give the VDC file as spec (JSON) or toml (the text of a TOML file)"
                        .into(),
                })
            }
            (Some(_), Some(_)) => {
                return Err(ServiceError::Malformed {
                    field: Some("toml".into()),
                    message: "give spec or toml, not both".into(),
                })
            }
        };
        if dc.flows.is_empty() {
            return Err(ServiceError::invalid(
                field,
                format!("{file} has no flows: there is nothing to allocate"),
            ));
        }
        let state = ControlState::new(dc, req.controller.config()?, now_ns)
            .map_err(|e| ServiceError::invalid("controller", e.to_string()))?;
        Ok(Hosted {
            name: req.name,
            spec,
            settings: req.controller,
            state,
        })
    }

    /// A stored VDC, its controller restored from `snapshot` at `now_ns`.
    ///
    /// # Errors
    /// 500 when the stored rows do not make a VDC (they did when they were stored).
    pub fn load(
        name: &str,
        spec: &str,
        settings: &str,
        snapshot: Option<&str>,
        now_ns: u64,
    ) -> Result<Hosted, ServiceError> {
        let stored = |m: String| ServiceError::Internal(format!("stored VDC {name:?}: {m}"));
        let req = NewVdc {
            name: name.to_string(),
            spec: Some(serde_json::from_str(spec)?),
            toml: None,
            controller: serde_json::from_str(settings)?,
        };
        let mut h = Hosted::prepare(req, now_ns).map_err(|e| stored(e.to_string()))?;
        if let Some(s) = snapshot {
            let s: Snapshot = serde_json::from_str(s)?;
            h.state
                .restore(&s, now_ns)
                .map_err(|e| stored(e.to_string()))?;
        }
        Ok(h)
    }

    /// How the API shows it, with the file when `with_spec`.
    pub fn view(&self, now_ns: u64, with_spec: bool) -> VdcView {
        let status = self.state.status(now_ns);
        VdcView {
            name: self.name.clone(),
            controller: self.settings.clone(),
            tenants: self
                .state
                .datacenter()
                .tenants
                .iter()
                .map(|t| t.name.clone())
                .collect(),
            flows: self.state.datacenter().flows.len(),
            epoch: self.state.epoch(),
            enforcers: status.enforcers.len(),
            stale: status.enforcers.iter().filter(|e| e.stale).count(),
            spec: with_spec.then(|| self.spec.clone()),
        }
    }
}

/// The hosted VDCs by name.
#[derive(Debug, Default)]
pub struct Vdcs {
    map: BTreeMap<String, Hosted>,
}

impl Vdcs {
    pub fn get(&self, name: &str) -> Result<&Hosted, ServiceError> {
        self.map.get(name).ok_or_else(|| not_found(name))
    }

    pub fn get_mut(&mut self, name: &str) -> Result<&mut Hosted, ServiceError> {
        self.map.get_mut(name).ok_or_else(|| not_found(name))
    }

    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub fn insert(&mut self, h: Hosted) {
        self.map.insert(h.name.clone(), h);
    }

    pub fn remove(&mut self, name: &str) -> Option<Hosted> {
        self.map.remove(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Hosted> {
        self.map.values()
    }

    /// When the earliest next control step is due [ns]; `None` without VDCs.
    pub fn next_step_ns(&self) -> Option<u64> {
        self.map.values().map(|h| h.state.next_step_ns()).min()
    }

    /// Runs every step due at `now_ns`; returns the snapshots of the controllers that stepped
    /// (to be stored). A controller that fails is logged and left as it was.
    pub fn step(&mut self, now_ns: u64) -> Vec<(String, Snapshot)> {
        let mut out = Vec::new();
        for h in self.map.values_mut() {
            match h.state.step(now_ns) {
                Ok(true) => out.push((h.name.clone(), h.state.snapshot())),
                Ok(false) => {}
                Err(e) => tracing::error!(vdc = %h.name, error = %e, "control step failed"),
            }
        }
        out
    }

    /// Every VDC's controller status, by name (the status page).
    pub fn statuses(&self, now_ns: u64) -> Vec<(VdcView, Status)> {
        self.map
            .values()
            .map(|h| (h.view(now_ns, false), h.state.status(now_ns)))
            .collect()
    }
}

fn not_found(name: &str) -> ServiceError {
    ServiceError::NotFound {
        what: "VDC",
        name: name.to_string(),
    }
}

/// The service's answer to a refused protocol request (the statuses of `vdc serve`, with the
/// field to blame).
pub fn control_error(e: ControlError) -> ServiceError {
    let message = e.to_string();
    match e {
        ControlError::BadId(_) => ServiceError::Malformed {
            field: Some("id".into()),
            message,
        },
        ControlError::NotRegistered(name) => ServiceError::NotFound {
            what: "registered enforcer",
            name,
        },
        ControlError::UnknownFlow { .. } | ControlError::NotOwner { .. } => {
            ServiceError::invalid("flows", message)
        }
        ControlError::Controller(_) => ServiceError::Internal(message),
        _ => ServiceError::invalid("report", message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOML: &str = r#"
[[servers]]
name = "s0"
link = 1e9
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e6
[[tenants]]
name = "A"
vms = [{ name = "a", server = "s0", link = 1e9 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 4e5 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
"#;

    fn new(toml: &str) -> NewVdc {
        NewVdc {
            name: "dc".into(),
            spec: None,
            toml: Some(toml.into()),
            controller: VdcSettings::default(),
        }
    }

    #[test]
    fn bad_files_and_settings_name_the_field() {
        let h = Hosted::prepare(new(TOML), 0).unwrap();
        assert_eq!(h.view(0, false).tenants, ["A"]);
        let e = Hosted::prepare(new("[[servers]]\nname = 1"), 0).unwrap_err();
        assert_eq!((e.status(), e.field()), (400, Some("toml")));
        let e = Hosted::prepare(
            new(&TOML.replace("link = 1e9\n[[app", "link = -1\n[[app")),
            0,
        )
        .unwrap_err();
        assert_eq!((e.status(), e.field()), (422, Some("toml")));
        assert!(e.to_string().contains("server \"s0\", link"), "{e}");
        let mut r = new(TOML);
        r.controller.interval_s = 0.0;
        let e = Hosted::prepare(r, 0).unwrap_err();
        assert_eq!(e.field(), Some("controller.interval_s"));
        let mut r = new(TOML);
        r.controller.stale_after = 0;
        assert_eq!(
            Hosted::prepare(r, 0).unwrap_err().field(),
            Some("controller")
        );
        let mut r = new(TOML);
        r.name = "a/b".into();
        assert_eq!(Hosted::prepare(r, 0).unwrap_err().field(), Some("name"));
    }
}
