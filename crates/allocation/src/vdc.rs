//! Virtual datacenter specs (pulsar §3, Fig. 5) and the datacenter they compile into.
//!
//! # Format (TOML; the same structure in JSON)
//!
//! ```toml
//! header_bytes = 64          # bytes of every request/response message besides its payload
//!
//! [[servers]]
//! name = "s0"
//! link = 1.25e9              # NIC rate, each direction [bytes/s] (network tokens are bytes)
//!
//! [[appliances]]
//! name = "kv"
//! server = "s0"              # reached through s0's links; omit for an in-hypervisor
//!                            # appliance (at the source of each flow, no network)
//! capacity = 4e8             # a capacity known to be available (the estimator's minW) [tokens/s]
//! max_capacity = 2e9         # known to exceed the real capacity (maxW); default 4 × capacity
//! estimate = true            # estimate the capacity at run time (§4.3); default true
//! cost = { read = { vertices = [[8192.0, 8192.0], [16384.0, 16384.0]] },
//!          write = { vertices = [[8192.0, 8192.0], [16384.0, 16384.0]] } }
//!                            # virtual cost function: [size bytes, tokens] vertices per op,
//!                            # flat before the first, extended along the last segment
//!                            # (Fig. 6); default one token per byte
//!
//! [[tenants]]
//! name = "B"
//! guarantee = "minimum"      # "fixed" (exactly the VDC) | "minimum" (+ spare capacity)
//! mra = "drf"                # local policy: "drf" | "hdrf" | "first-fit"; default drf
//! weight = 1600              # global weight; default the sum of the virtual appliances'
//!                            # guarantees, or of the VM links' if it has no appliance
//! vms = [{ name = "b1", server = "s1", link = 2e8, link_max = 4e8 }]
//!                            # VM link guarantee, each direction [tokens/s]; max optional
//! appliances = [{ name = "kv", appliance = "kv", guarantee = 1.6e8, max = 3e8 }]
//!                            # a virtual appliance on physical `appliance`
//! flows = [{ name = "b1-kv", src = "b1", dst = "kv", via = [], weight = 1 }]
//!                            # dst: a VM or virtual appliance of the tenant; via: virtual
//!                            # appliances crossed first, in order
//! ```
//!
//! Unknown keys, duplicate names, unknown references, negative or non-finite rates and
//! `max < guarantee` are errors naming the file, tenant and field.
//!
//! # Paths
//!
//! A flow's request crosses, in order: its source VM's virtual link out; for each appliance of
//! `via` then `dst`, the network to it (the source server's uplink and the appliance server's
//! downlink when they differ) and the appliance; to a VM, the network and the VM's virtual link
//! in. A flow to an appliance gets a response back (the appliance server's uplink, the source
//! server's downlink, the VM's virtual link in). Each [`Hop`] is one charge (request message,
//! appliance, response message) with the physical resource and the tenant's virtual resource
//! it uses, either possibly absent (same-server traffic uses no physical link; the physical
//! links to an appliance server are not part of the VDC).

use crate::error::{known_list, AllocError};
use crate::mra::Mechanism;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tailbound_curves::work::{PiecewiseCost, TokenCost};
use tailbound_model::{OpKind, Request};

/// The spec of a datacenter and its tenants' VDCs; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VdcSpec {
    /// bytes of every message besides its payload [bytes]
    #[serde(default = "default_header")]
    pub header_bytes: f64,
    pub servers: Vec<ServerSpec>,
    #[serde(default)]
    pub appliances: Vec<ApplianceSpec>,
    pub tenants: Vec<TenantSpec>,
}

fn default_header() -> f64 {
    64.0
}

fn yes() -> bool {
    true
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServerSpec {
    pub name: String,
    /// NIC rate, each direction [bytes/s]
    pub link: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApplianceSpec {
    pub name: String,
    /// the server whose links lead to it; `None`: in the hypervisor at each flow's source
    #[serde(default)]
    pub server: Option<String>,
    /// a capacity known to be available (minW) [tokens/s]
    pub capacity: f64,
    /// a capacity known to be too high (maxW) [tokens/s]; default 4 × `capacity`
    #[serde(default)]
    pub max_capacity: Option<f64>,
    /// estimate the capacity at run time (§4.3)
    #[serde(default = "yes")]
    pub estimate: bool,
    /// virtual cost function; default one token per byte
    #[serde(default)]
    pub cost: Option<TokenCost>,
}

/// Fixed guarantees give exactly the VDC; minimum ones add spare capacity (pulsar §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum GuaranteeKind {
    Fixed,
    #[default]
    Minimum,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TenantSpec {
    pub name: String,
    #[serde(default)]
    pub guarantee: GuaranteeKind,
    /// local MRA (eq. 2)
    #[serde(default)]
    pub mra: Mechanism,
    /// global weight (eq. 3); default derived from the guarantees
    #[serde(default)]
    pub weight: Option<f64>,
    pub vms: Vec<VmSpec>,
    #[serde(default)]
    pub appliances: Vec<VirtualApplianceSpec>,
    pub flows: Vec<FlowSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VmSpec {
    pub name: String,
    pub server: String,
    /// guarantee of the VM's virtual link, each direction [tokens/s]
    pub link: f64,
    /// optional maximum of the link, each direction [tokens/s]
    #[serde(default)]
    pub link_max: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VirtualApplianceSpec {
    pub name: String,
    /// the physical appliance it maps to
    pub appliance: String,
    /// [tokens/s]
    pub guarantee: f64,
    /// optional maximum [tokens/s]
    #[serde(default)]
    pub max: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FlowSpec {
    pub name: String,
    /// source VM
    pub src: String,
    /// destination VM or virtual appliance
    pub dst: String,
    /// virtual appliances crossed before `dst`, in order
    #[serde(default)]
    pub via: Vec<String>,
    /// weight in the tenant's local MRA and in H-DRF's second level
    #[serde(default = "one")]
    pub weight: f64,
}

/// What a physical resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum ResourceKind {
    Uplink { server: usize },
    Downlink { server: usize },
    Appliance { appliance: usize },
}

/// A physical resource: a directional server link or an appliance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    /// `<server>.up`, `<server>.down` or the appliance's name
    pub name: String,
    pub kind: ResourceKind,
    /// link rate, or the appliance's known capacity (minW) [tokens/s]
    pub capacity: f64,
    /// the appliance's maxW [tokens/s] (= capacity for links)
    pub max_capacity: f64,
    /// the capacity is estimated at run time
    pub estimate: bool,
}

/// A tenant's virtual resource: a VM link direction or a virtual appliance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VirtualResource {
    /// `<vm>.up`, `<vm>.down` or the virtual appliance's name
    pub name: String,
    /// [tokens/s]
    pub guarantee: f64,
    /// [tokens/s]
    pub max: Option<f64>,
    /// the physical appliance, for virtual appliances
    pub appliance: Option<usize>,
}

/// A compiled tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tenant {
    pub name: String,
    pub guarantee: GuaranteeKind,
    pub mra: Mechanism,
    /// global weight
    pub weight: f64,
    pub virtuals: Vec<VirtualResource>,
    /// its flows (indices into [`Datacenter::flows`])
    pub flows: Vec<usize>,
}

/// What a hop charges a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Charge {
    /// the request message: header + payload of writes [tokens = bytes]
    Request,
    /// the response message: header + payload of reads [tokens = bytes]
    Response,
    /// the appliance's virtual cost function
    Appliance(usize),
}

/// One charge on a flow's path, with the resources it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    /// physical resource (index into [`Datacenter::resources`])
    pub physical: Option<usize>,
    /// the tenant's virtual resource (index into [`Tenant::virtuals`])
    pub virtual_resource: Option<usize>,
    pub charge: Charge,
}

/// A compiled flow with its path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    pub name: String,
    pub tenant: usize,
    pub weight: f64,
    /// the source VM's server
    pub server: usize,
    /// ends at an appliance (so a response comes back)
    pub to_appliance: bool,
    pub hops: Vec<Hop>,
}

/// A validated datacenter: physical resources, tenants with their virtual resources, flows
/// with their paths and the appliances' virtual cost functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Datacenter {
    pub header_bytes: f64,
    pub servers: Vec<String>,
    pub resources: Vec<Resource>,
    /// appliance index → its resource
    pub appliance_resource: Vec<usize>,
    pub costs: Vec<TokenCost>,
    pub tenants: Vec<Tenant>,
    pub flows: Vec<Flow>,
}

impl VdcSpec {
    /// Parses TOML when `file` ends in `.toml`, JSON otherwise, and validates.
    ///
    /// # Errors
    /// [`AllocError::Parse`] with serde's location, or a validation error naming the field.
    pub fn parse(file: &str, text: &str) -> Result<(VdcSpec, Datacenter), AllocError> {
        let spec: VdcSpec = if file.ends_with(".toml") {
            toml::from_str(text).map_err(|e| AllocError::Parse {
                file: file.to_string(),
                message: e.to_string(),
            })?
        } else {
            serde_json::from_str(text).map_err(|e| AllocError::Parse {
                file: file.to_string(),
                message: e.to_string(),
            })?
        };
        let dc = spec.compile().map_err(|e| match e {
            AllocError::Invalid { context, message } => AllocError::Invalid {
                context: format!("{file}: {context}"),
                message,
            },
            other => AllocError::Invalid {
                context: file.to_string(),
                message: other.to_string(),
            },
        })?;
        Ok((spec, dc))
    }

    /// Validates the spec and builds the datacenter.
    ///
    /// # Errors
    /// [`AllocError`] naming the tenant, field and value.
    pub fn compile(&self) -> Result<Datacenter, AllocError> {
        let invalid = |context: String, message: String| AllocError::Invalid { context, message };
        let rate = |context: String, v: f64, positive: bool| {
            if v.is_finite() && (v > 0.0 || (!positive && v == 0.0)) {
                Ok(v)
            } else {
                Err(invalid(
                    context,
                    format!(
                        "{v} is not allowed; expected a finite rate {} [tokens/s]",
                        if positive { "> 0" } else { ">= 0" }
                    ),
                ))
            }
        };
        if !(self.header_bytes.is_finite() && self.header_bytes >= 0.0) {
            return Err(invalid(
                "header_bytes".into(),
                format!("{} is not allowed; expected bytes >= 0", self.header_bytes),
            ));
        }
        let mut server_index = HashMap::new();
        let mut resources = Vec::new();
        for (s, sv) in self.servers.iter().enumerate() {
            if server_index.insert(sv.name.as_str(), s).is_some() {
                return Err(AllocError::Duplicate {
                    kind: "server",
                    name: sv.name.clone(),
                });
            }
            let link = rate(format!("server {:?}, link", sv.name), sv.link, true)?;
            for (suffix, kind) in [
                ("up", ResourceKind::Uplink { server: s }),
                ("down", ResourceKind::Downlink { server: s }),
            ] {
                resources.push(Resource {
                    name: format!("{}.{suffix}", sv.name),
                    kind,
                    capacity: link,
                    max_capacity: link,
                    estimate: false,
                });
            }
        }
        let server_names = || known_list(self.servers.iter().map(|s| s.name.as_str()));
        let mut appliance_index = HashMap::new();
        let mut appliance_server = Vec::new();
        let mut appliance_resource = Vec::new();
        let mut costs = Vec::new();
        for (a, ap) in self.appliances.iter().enumerate() {
            if appliance_index.insert(ap.name.as_str(), a).is_some() {
                return Err(AllocError::Duplicate {
                    kind: "appliance",
                    name: ap.name.clone(),
                });
            }
            let server = match &ap.server {
                None => None,
                Some(s) => Some(*server_index.get(s.as_str()).ok_or_else(|| {
                    invalid(
                        format!("appliance {:?}, server", ap.name),
                        format!("unknown server {s:?}; known: {}", server_names()),
                    )
                })?),
            };
            let cap = rate(
                format!("appliance {:?}, capacity", ap.name),
                ap.capacity,
                true,
            )?;
            let max = match ap.max_capacity {
                None => 4.0 * cap,
                Some(m) => {
                    let m = rate(format!("appliance {:?}, max_capacity", ap.name), m, true)?;
                    if m <= cap {
                        return Err(invalid(
                            format!("appliance {:?}, max_capacity", ap.name),
                            format!("{m} must exceed capacity {cap}"),
                        ));
                    }
                    m
                }
            };
            let cost = match &ap.cost {
                None => TokenCost::network(),
                Some(c) => {
                    for (op, f) in [("read", &c.read), ("write", &c.write)] {
                        PiecewiseCost::new(f.vertices.clone()).map_err(|m| {
                            invalid(format!("appliance {:?}, cost.{op}", ap.name), m)
                        })?;
                    }
                    c.clone()
                }
            };
            appliance_server.push(server);
            appliance_resource.push(resources.len());
            resources.push(Resource {
                name: ap.name.clone(),
                kind: ResourceKind::Appliance { appliance: a },
                capacity: cap,
                max_capacity: max,
                estimate: ap.estimate,
            });
            costs.push(cost);
        }
        let mut tenants = Vec::new();
        let mut flows = Vec::new();
        let mut tenant_names = HashMap::new();
        for ts in &self.tenants {
            if tenant_names.insert(ts.name.as_str(), ()).is_some() {
                return Err(AllocError::Duplicate {
                    kind: "tenant",
                    name: ts.name.clone(),
                });
            }
            let ctx = |field: &str| format!("tenant {:?}, {field}", ts.name);
            let mut virtuals = Vec::new();
            // name → (server, up virtual, down virtual)
            let mut vm_index: HashMap<&str, (usize, usize, usize)> = HashMap::new();
            for vm in &ts.vms {
                let server = *server_index.get(vm.server.as_str()).ok_or_else(|| {
                    invalid(
                        ctx(&format!("vm {:?}, server", vm.name)),
                        format!("unknown server {:?}; known: {}", vm.server, server_names()),
                    )
                })?;
                let g = rate(ctx(&format!("vm {:?}, link", vm.name)), vm.link, false)?;
                let max = check_max(vm.link_max, g, &ctx(&format!("vm {:?}, link_max", vm.name)))?;
                if vm_index.contains_key(vm.name.as_str()) {
                    return Err(AllocError::Duplicate {
                        kind: "vm",
                        name: format!("{}/{}", ts.name, vm.name),
                    });
                }
                vm_index.insert(&vm.name, (server, virtuals.len(), virtuals.len() + 1));
                for dir in ["up", "down"] {
                    virtuals.push(VirtualResource {
                        name: format!("{}.{dir}", vm.name),
                        guarantee: g,
                        max,
                        appliance: None,
                    });
                }
            }
            let mut vapp_index: HashMap<&str, (usize, usize)> = HashMap::new();
            for va in &ts.appliances {
                let a = *appliance_index.get(va.appliance.as_str()).ok_or_else(|| {
                    invalid(
                        ctx(&format!("appliance {:?}", va.name)),
                        format!(
                            "unknown physical appliance {:?}; known: {}",
                            va.appliance,
                            known_list(self.appliances.iter().map(|a| a.name.as_str()))
                        ),
                    )
                })?;
                let g = rate(
                    ctx(&format!("appliance {:?}, guarantee", va.name)),
                    va.guarantee,
                    false,
                )?;
                let max = check_max(va.max, g, &ctx(&format!("appliance {:?}, max", va.name)))?;
                if vapp_index.contains_key(va.name.as_str())
                    || vm_index.contains_key(va.name.as_str())
                {
                    return Err(AllocError::Duplicate {
                        kind: "vm or virtual appliance",
                        name: format!("{}/{}", ts.name, va.name),
                    });
                }
                vapp_index.insert(&va.name, (a, virtuals.len()));
                virtuals.push(VirtualResource {
                    name: va.name.clone(),
                    guarantee: g,
                    max,
                    appliance: Some(a),
                });
            }
            let weight = match ts.weight {
                Some(w) if w.is_finite() && w > 0.0 => w,
                Some(w) => {
                    return Err(invalid(
                        ctx("weight"),
                        format!("{w} is not allowed; expected a finite weight > 0"),
                    ))
                }
                None => {
                    let apps: f64 = ts.appliances.iter().map(|a| a.guarantee).sum();
                    let links: f64 = ts.vms.iter().map(|v| v.link).sum();
                    if apps > 0.0 {
                        apps
                    } else if links > 0.0 {
                        links
                    } else {
                        1.0
                    }
                }
            };
            let t = tenants.len();
            let mut tflows = Vec::new();
            let endpoints = || {
                known_list(
                    ts.vms
                        .iter()
                        .map(|v| v.name.as_str())
                        .chain(ts.appliances.iter().map(|a| a.name.as_str())),
                )
            };
            for fs in &ts.flows {
                let fctx = |field: &str| ctx(&format!("flow {:?}, {field}", fs.name));
                if !(fs.weight.is_finite() && fs.weight > 0.0) {
                    return Err(invalid(
                        fctx("weight"),
                        format!("{} is not allowed; expected a finite weight > 0", fs.weight),
                    ));
                }
                if flows
                    .iter()
                    .any(|f: &Flow| f.tenant == t && f.name == fs.name)
                {
                    return Err(AllocError::Duplicate {
                        kind: "flow",
                        name: format!("{}/{}", ts.name, fs.name),
                    });
                }
                let &(src_server, src_up, src_down) =
                    vm_index.get(fs.src.as_str()).ok_or_else(|| {
                        invalid(
                            fctx("src"),
                            format!(
                                "unknown VM {:?}; known: {}",
                                fs.src,
                                known_list(ts.vms.iter().map(|v| v.name.as_str()))
                            ),
                        )
                    })?;
                let up = |s: usize| 2 * s;
                let down = |s: usize| 2 * s + 1;
                // resolve the appliances on the way and the destination first
                let mut stops = Vec::new();
                for name in &fs.via {
                    let &(a, v) = vapp_index.get(name.as_str()).ok_or_else(|| {
                        invalid(
                            fctx("via"),
                            format!(
                                "unknown virtual appliance {name:?}; known: {}",
                                known_list(ts.appliances.iter().map(|a| a.name.as_str()))
                            ),
                        )
                    })?;
                    stops.push(Stop::Appliance(a, v));
                }
                if let Some(&(server, _, dst_down)) = vm_index.get(fs.dst.as_str()) {
                    stops.push(Stop::Vm(server, dst_down));
                } else if let Some(&(a, v)) = vapp_index.get(fs.dst.as_str()) {
                    stops.push(Stop::Appliance(a, v));
                } else {
                    return Err(invalid(
                        fctx("dst"),
                        format!(
                            "unknown VM or virtual appliance {:?}; known: {}",
                            fs.dst,
                            endpoints()
                        ),
                    ));
                }
                let server_of = |stop: &Stop, at: usize| match *stop {
                    Stop::Appliance(a, _) => appliance_server[a].unwrap_or(at),
                    Stop::Vm(s, _) => s,
                };
                let mut hops = Vec::new();
                // the VM's virtual link out is charged with the request message where it
                // leaves the source server, or first if it never does
                let leaves = {
                    let mut at = src_server;
                    stops.iter().any(|st| {
                        let to = server_of(st, at);
                        let moved = to != at;
                        at = to;
                        moved
                    })
                };
                let mut up_charged = !leaves;
                if !leaves {
                    hops.push(Hop {
                        physical: None,
                        virtual_resource: Some(src_up),
                        charge: Charge::Request,
                    });
                }
                let mut at = src_server;
                for stop in &stops {
                    let to = server_of(stop, at);
                    if to != at {
                        hops.push(Hop {
                            physical: Some(up(at)),
                            virtual_resource: (!up_charged).then_some(src_up),
                            charge: Charge::Request,
                        });
                        up_charged = true;
                    }
                    match *stop {
                        Stop::Appliance(a, v) => {
                            if to != at {
                                hops.push(Hop {
                                    physical: Some(down(to)),
                                    virtual_resource: None,
                                    charge: Charge::Request,
                                });
                            }
                            hops.push(Hop {
                                physical: Some(appliance_resource[a]),
                                virtual_resource: Some(v),
                                charge: Charge::Appliance(a),
                            });
                        }
                        Stop::Vm(_, dst_down) => hops.push(Hop {
                            physical: (to != at).then(|| down(to)),
                            virtual_resource: Some(dst_down),
                            charge: Charge::Request,
                        }),
                    }
                    at = to;
                }
                let to_appliance = matches!(stops.last(), Some(Stop::Appliance(..)));
                if to_appliance {
                    // the response comes back to the source VM
                    if at != src_server {
                        hops.push(Hop {
                            physical: Some(up(at)),
                            virtual_resource: None,
                            charge: Charge::Response,
                        });
                    }
                    hops.push(Hop {
                        physical: (at != src_server).then(|| down(src_server)),
                        virtual_resource: Some(src_down),
                        charge: Charge::Response,
                    });
                }
                tflows.push(flows.len());
                flows.push(Flow {
                    name: fs.name.clone(),
                    tenant: t,
                    weight: fs.weight,
                    server: src_server,
                    to_appliance,
                    hops,
                });
            }
            tenants.push(Tenant {
                name: ts.name.clone(),
                guarantee: ts.guarantee,
                mra: ts.mra,
                weight,
                virtuals,
                flows: tflows,
            });
        }
        Ok(Datacenter {
            header_bytes: self.header_bytes,
            servers: self.servers.iter().map(|s| s.name.clone()).collect(),
            resources,
            appliance_resource,
            costs,
            tenants,
            flows,
        })
    }
}

/// A place a flow's request stops at: an appliance `(appliance, virtual)` or the destination
/// VM `(server, virtual link in)`.
enum Stop {
    Appliance(usize, usize),
    Vm(usize, usize),
}

fn check_max(max: Option<f64>, guarantee: f64, context: &str) -> Result<Option<f64>, AllocError> {
    match max {
        None => Ok(None),
        Some(m) if m.is_finite() && m >= guarantee => Ok(Some(m)),
        Some(m) => Err(AllocError::Invalid {
            context: context.to_string(),
            message: format!(
                "{m} is not allowed; a maximum must be finite and at least the guarantee {guarantee} [tokens/s]"
            ),
        }),
    }
}

impl Datacenter {
    /// Tokens `req` costs at `hop` (pulsar §3): message bytes on network hops, the
    /// appliance's virtual cost function on appliance hops.
    pub fn hop_cost(&self, hop: &Hop, req: &Request) -> f64 {
        let size = req.size_bytes as f64;
        match (hop.charge, req.op.kind()) {
            (Charge::Request, OpKind::Write) | (Charge::Response, OpKind::Read) => {
                self.header_bytes + size
            }
            (Charge::Request, OpKind::Read) | (Charge::Response, OpKind::Write) => {
                self.header_bytes
            }
            (Charge::Appliance(a), OpKind::Read) => self.costs[a].read.cost(size),
            (Charge::Appliance(a), OpKind::Write) => self.costs[a].write.cost(size),
        }
    }

    /// Index of the physical resource named `name`.
    pub fn resource(&self, name: &str) -> Option<usize> {
        self.resources.iter().position(|r| r.name == name)
    }

    /// Index of the tenant named `name`.
    pub fn tenant(&self, name: &str) -> Option<usize> {
        self.tenants.iter().position(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::Op;

    const SPEC: &str = r#"
header_bytes = 100
[[servers]]
name = "s0"
link = 1000.0
[[servers]]
name = "s1"
link = 1000.0
[[appliances]]
name = "kv"
server = "s0"
capacity = 500.0
[[appliances]]
name = "enc"
capacity = 800.0
[[tenants]]
name = "B"
vms = [{ name = "b1", server = "s1", link = 100.0 }, { name = "b2", server = "s0", link = 50.0 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 200.0 }, { name = "enc", appliance = "enc", guarantee = 300.0 }]
flows = [{ name = "b1-kv", src = "b1", dst = "kv", via = ["enc"] }, { name = "b1-b2", src = "b1", dst = "b2" }, { name = "b2-kv", src = "b2", dst = "kv" }]
"#;

    #[test]
    fn paths_follow_the_topology() {
        let (_, dc) = VdcSpec::parse("dc.toml", SPEC).unwrap();
        let name = |h: &Hop| {
            h.physical
                .map_or("-".to_string(), |p| dc.resources[p].name.clone())
        };
        let f = &dc.flows[0];
        let names: Vec<String> = f.hops.iter().map(name).collect();
        // enc in the hypervisor on s1, then s1.up → s0.down → kv, response s0.up → s1.down
        assert_eq!(names, ["enc", "s1.up", "s0.down", "kv", "s0.up", "s1.down"]);
        assert_eq!(f.hops[1].virtual_resource, Some(0));
        assert_eq!(f.hops[5].virtual_resource, Some(1));
        let names: Vec<String> = dc.flows[1].hops.iter().map(name).collect();
        assert_eq!(names, ["s1.up", "s0.down"]);
        // same server: no physical link, but the VM's virtual links are charged
        let f = &dc.flows[2];
        let names: Vec<String> = f.hops.iter().map(name).collect();
        assert_eq!(names, ["-", "kv", "-"]);
        assert_eq!(dc.tenants[0].weight, 500.0);
        let r = Request {
            arrival_ns: 0,
            size_bytes: 4096,
            op: Op::Get,
        };
        assert_eq!(dc.hop_cost(&dc.flows[0].hops[1], &r), 100.0);
        assert_eq!(dc.hop_cost(&dc.flows[0].hops[5], &r), 4196.0);
    }

    #[test]
    fn errors_name_file_tenant_and_field() {
        let bad = SPEC.replace("dst = \"b2\"", "dst = \"nope\"");
        let e = VdcSpec::parse("dc.toml", &bad).unwrap_err().to_string();
        assert!(
            e.contains("dc.toml") && e.contains("\"B\"") && e.contains("nope"),
            "{e}"
        );
        assert!(e.contains("b1, b2, kv, enc"), "{e}");
        let bad = SPEC.replace("guarantee = 200.0", "guarantee = -1.0");
        let e = VdcSpec::parse("dc.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("-1") && e.contains("guarantee"), "{e}");
        let bad = SPEC.replace("link = 100.0 }", "link = 100.0, link_max = 10.0 }");
        let e = VdcSpec::parse("dc.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("link_max"), "{e}");
        let e = VdcSpec::parse("dc.toml", "[[servers]]\nname = 3").unwrap_err();
        assert!(matches!(e, AllocError::Parse { .. }), "{e}");
        let bad = SPEC.replace("header_bytes = 100", "header_bytes = 100\ncolour = 1");
        assert!(VdcSpec::parse("dc.toml", &bad).is_err());
    }
}
