//! Pulsar's Fig. 12/13 (pulsar §6.1) on the real testbed: four tenants, two of them
//! aggressive, sharing a server's link and two real memcached appliances, run under each
//! isolation mode; every tenant's throughput in tokens/s at its appliance, measured by its
//! clients, against its guarantee. The same datacenter and workloads are simulated beside
//! (`tailbound_vdc_sim`, [`crate::vdc::enforcement_of`]).
//!
//! ```text
//!  tenant hosts (netns, unshaped)        switch        server s0 (netns, link HTB-shaped each way)
//!  ta: A, 4 conns × 8 GETs of 16 KiB ──┐                ┌─ enforcer proxy "cache" ─► memcached :11212
//!  tb: B, 2 conns × 4 GETs of 8 KiB  ──┤── br0 ── p0 ═══┤  enforcer proxy "kv"    ─► memcached :11211
//!  tc: C, 4 conns × 16 GETs of 512 B ──┤                └─ controller (HTTP, in-process, on lo)
//!  td: D, 2 conns × 2 GETs of 16 KiB ──┘
//! ```
//!
//! **Scenario** (pulsar Fig. 9–11, scaled to one machine). A is the only tenant of a cache
//! appliance (pulsar's A has its own VM-to-VM traffic and encryption appliance); B, C and D
//! share a key-value store (pulsar's B on the key-value store, C and D on the filestore). All
//! four read through s0's uplink, the shared bottleneck (pulsar's server link shared by A's
//! destination, B's store and D's VMs), shaped with HTB at `link_bytes_per_s`; the datacenter
//! declares it at [`LINK_DECLARED`] of that (TCP/IP headers). Every appliance charges
//! pulsar's cost function (8 Ktokens up to 8 KB, a token per byte above; Fig. 6(b)). A is
//! aggressive on the network (32 large GETs outstanding), C on the appliance (64 small ones,
//! each charged 8 Ktokens); B and D keep 64 KiB outstanding, enough for their guarantees at
//! tens of milliseconds of round trip (a busy machine), not when A's backlog fills the link. Guarantees, as fractions of the link rate: 0.2 at each tenant's
//! appliance; VM links 0.22 (A, B, D) and 0.05 (C).
//!
//! **Modes**, all with the same clients, servers and shaping:
//! * `pulsar` — an enforcer proxy per appliance (`tailbound_enforcer`), each registered with
//!   the in-process controller (`tailbound_control`: demand estimation, H-DRF or the chosen
//!   mechanism) and applying its allocation vectors every interval on every hop.
//! * `none` — the clients talk to memcached directly.
//! * `per-appliance` (pulsar's DRFQ/Pisces/IOFlow baseline) — the same proxies without the
//!   controller, policing only the appliance hop, each appliance's capacity split among its
//!   tenants in proportion to their weights; network hops unlimited.
//! * `network-only` (pulsar's Hadrian baseline) — the same proxies policing only the network
//!   hops (request and response bytes), each link's declared rate split in proportion to the
//!   weights of the tenants crossing it; appliance hops unlimited.
//!
//! A tenant's weight is its flow's smallest virtual guarantee, as in the simulator's baselines.
//! The baselines' shares are static (what a weighted fair queue converges to when every tenant
//! is backlogged, as here: closed loops), not work-conserving.
//!
//! **Measurement.** Each tenant's clients count completed GETs per interval; `achieved` is
//! their tokens at the tenant's appliance per second over the measured time after
//! `warmup_s`; a guarantee is met at [`crate::vdc::MET`] of it.
//!
//! **Hygiene.** The namespaces (`tailbound_dataplane::netns::Lan`) and memcached (by PID) are
//! removed when the run ends, on success, error or signal; each mode's load is bounded by its
//! time and a request count; the proxies and the controller live in threads of this process
//! and end with each mode.

use crate::vdc::{enforcement_of, flow, testbed_cost, EnforcementExperiment, VdcConfig, MET};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailbound_allocation::vdc::{
    ApplianceSpec, Charge, GuaranteeKind, ServerSpec, TenantSpec, VirtualApplianceSpec, VmSpec,
};
use tailbound_allocation::{ControllerConfig, Datacenter, Mechanism, VdcSpec};
use tailbound_control::{ControlClient, ControlConfig, ControlState, Service};
use tailbound_dataplane::clock::{Clock, MonotonicClock};
use tailbound_dataplane::memcache::{Client, Request};
use tailbound_dataplane::netns::{self, HostSpec, Lan, LanSpec};
use tailbound_enforcer::core::UNLIMITED_RATE;
use tailbound_enforcer::link::{fetch_datacenter, Link};
use tailbound_enforcer::{
    Charger, FlowSetup, Identify, ListenerSpec, Proxy, ProxyConfig, ProxyFlow,
};
pub use tailbound_vdc_sim::Isolation;
use tailbound_vdc_sim::{ApplianceModel, FlowWorkload, Loop};

/// The datacenter declares s0's link at this fraction of its HTB rate (TCP/IP headers).
pub const LINK_DECLARED: f64 = 0.95;
/// Each tenant's guarantee at its appliance, as a fraction of the link rate [tokens/s per
/// bytes/s].
pub const APPLIANCE_GUARANTEE: f64 = 0.2;
/// Each appliance's declared capacity, as a multiple of the link rate: memcached is not the
/// bottleneck here, the link is.
pub const APPLIANCE_CAPACITY: f64 = 1.5;
/// Keys per tenant, stored before the modes run.
pub const KEYS: usize = 64;
/// Requests per connection and mode at most (the load stops at its time before this).
pub const MAX_REQUESTS: u64 = 2_000_000;
/// Connecting, and the longest wait for a reply.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The key-value store's and the cache's ports on s0.
const KV_PORT: u16 = 11211;
const CACHE_PORT: u16 = 11212;
/// memcached's item memory [MiB] (4 × 64 keys of at most 16 KiB fit many times over).
const MEMORY_MIB: u64 = 64;

/// One tenant's VMs and load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TenantLoad {
    pub name: &'static str,
    /// the appliance it reads from
    pub appliance: &'static str,
    /// its VM's link guarantee, as a fraction of the link rate
    pub vm_link: f64,
    pub value_bytes: usize,
    pub connections: usize,
    /// GETs outstanding per connection (closed loop)
    pub depth: u32,
}

/// The four tenants, A–D.
pub const TENANTS: [TenantLoad; 4] = [
    TenantLoad {
        name: "A",
        appliance: "cache",
        vm_link: 0.22,
        value_bytes: 16384,
        connections: 4,
        depth: 8,
    },
    TenantLoad {
        name: "B",
        appliance: "kv",
        vm_link: 0.22,
        value_bytes: 8192,
        connections: 2,
        depth: 4,
    },
    TenantLoad {
        name: "C",
        appliance: "kv",
        vm_link: 0.05,
        value_bytes: 512,
        connections: 4,
        depth: 16,
    },
    TenantLoad {
        name: "D",
        appliance: "kv",
        vm_link: 0.22,
        value_bytes: 16384,
        connections: 2,
        depth: 2,
    },
];

/// Why the testbed experiment could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VdcTestbedError {
    #[error("{0}")]
    Config(String),
    #[error("the experiment's datacenter: {0}")]
    Spec(#[from] tailbound_allocation::AllocError),
    #[error(transparent)]
    Netns(#[from] tailbound_dataplane::NetnsError),
    #[error(transparent)]
    Testbed(#[from] tailbound_testbed::TestbedError),
    #[error("{what}: {message}")]
    Run { what: String, message: String },
    #[error("the simulator: {0}")]
    Sim(#[from] crate::vdc::VdcExperimentError),
}

pub(crate) fn run_error(what: impl Into<String>, e: impl std::fmt::Display) -> VdcTestbedError {
    VdcTestbedError::Run {
        what: what.into(),
        message: e.to_string(),
    }
}

/// How the experiment runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VdcTestbedConfig {
    /// measured time per mode, after the warm-up [s]
    pub duration_s: f64,
    /// time before measuring, for the controller to converge [s]
    pub warmup_s: f64,
    /// control interval, and the series' bin [s]
    pub interval_s: f64,
    /// s0's link, each way (HTB) [bytes/s]
    pub link_bytes_per_s: f64,
    pub global: Mechanism,
    pub seeds: Vec<u64>,
    pub modes: Vec<Isolation>,
    /// the memcached executable
    pub memcached: PathBuf,
    /// also simulate the same datacenter and workloads (first seed)
    pub simulate: bool,
}

impl Default for VdcTestbedConfig {
    fn default() -> Self {
        VdcTestbedConfig {
            duration_s: 8.0,
            warmup_s: 8.0,
            interval_s: 0.5,
            link_bytes_per_s: 4e6,
            global: Mechanism::Hdrf,
            seeds: vec![1, 2, 3],
            modes: Isolation::ALL.to_vec(),
            memcached: PathBuf::from("memcached"),
            simulate: true,
        }
    }
}

impl VdcTestbedConfig {
    /// # Errors
    /// [`VdcTestbedError::Config`] naming the bad setting and what is accepted.
    pub fn validate(&self) -> Result<(), VdcTestbedError> {
        let bad = |m: String| Err(VdcTestbedError::Config(m));
        check_interval(self.interval_s)?;
        if !(self.duration_s.is_finite() && self.duration_s >= self.interval_s)
            || self.duration_s > 600.0
        {
            return bad(format!(
                "duration {} s; use one control interval ({} s) to 600 s",
                self.duration_s, self.interval_s
            ));
        }
        if !(self.warmup_s.is_finite() && (0.0..=600.0).contains(&self.warmup_s)) {
            return bad(format!("warm-up {} s; use 0 to 600 s", self.warmup_s));
        }
        check_link(self.link_bytes_per_s)?;
        if self.seeds.is_empty() || self.seeds.len() > 20 {
            return bad(format!("{} seeds; use 1 to 20", self.seeds.len()));
        }
        if self.modes.is_empty() {
            return bad("no isolation mode; use pulsar, none, per-appliance, network-only".into());
        }
        Ok(())
    }
}

/// The control interval every VDC testbed experiment accepts: 0.05 to 10 s.
pub(crate) fn check_interval(interval_s: f64) -> Result<(), VdcTestbedError> {
    if interval_s.is_finite() && (0.05..=10.0).contains(&interval_s) {
        return Ok(());
    }
    Err(VdcTestbedError::Config(format!(
        "control interval {interval_s} s; use 0.05 to 10 s"
    )))
}

/// The appliances' link rate every VDC testbed experiment accepts: 100 kB/s to 1 GB/s.
pub(crate) fn check_link(link_bytes_per_s: f64) -> Result<(), VdcTestbedError> {
    if link_bytes_per_s.is_finite() && (1e5..=1e9).contains(&link_bytes_per_s) {
        return Ok(());
    }
    Err(VdcTestbedError::Config(format!(
        "link rate {link_bytes_per_s} bytes/s; use 100 kB/s to 1 GB/s (the load is bounded by it)"
    )))
}

/// The experiment's datacenter for a link rate [bytes/s]: s0 (the appliances' server, its link
/// declared at [`LINK_DECLARED`]) and a server per tenant VM (unshaped, declared at 100× the
/// link), the cache and the key-value store on s0, tenants A–D of [`TENANTS`].
///
/// # Errors
/// The datacenter's validation error (none for a valid rate).
pub fn datacenter(link_bytes_per_s: f64) -> Result<Datacenter, VdcTestbedError> {
    let l = link_bytes_per_s;
    let mut servers = vec![ServerSpec {
        name: "s0".into(),
        link: LINK_DECLARED * l,
    }];
    let mut tenants = Vec::new();
    for t in &TENANTS {
        let lower = t.name.to_lowercase();
        let server = format!("c{lower}");
        servers.push(ServerSpec {
            name: server.clone(),
            link: 100.0 * l,
        });
        tenants.push(TenantSpec {
            name: t.name.into(),
            guarantee: GuaranteeKind::Minimum,
            mra: Mechanism::Drf,
            weight: Some(APPLIANCE_GUARANTEE * l),
            vms: vec![VmSpec {
                name: lower.clone(),
                server,
                link: t.vm_link * l,
                link_max: None,
            }],
            appliances: vec![VirtualApplianceSpec {
                name: t.appliance.into(),
                appliance: t.appliance.into(),
                guarantee: APPLIANCE_GUARANTEE * l,
                max: None,
            }],
            flows: vec![flow(
                format!("{lower}-{}", t.appliance),
                lower,
                t.appliance,
                &[],
            )],
        });
    }
    let appliance = |name: &str| ApplianceSpec {
        name: name.into(),
        server: Some("s0".into()),
        capacity: APPLIANCE_CAPACITY * l,
        max_capacity: None,
        estimate: false,
        cost: Some(testbed_cost()),
    };
    let spec = VdcSpec {
        header_bytes: 64.0,
        servers,
        appliances: vec![appliance("kv"), appliance("cache")],
        tenants,
    };
    Ok(spec.compile()?)
}

/// The appliance a flow ends at (its last appliance hop).
fn flow_appliance(dc: &Datacenter, flow: usize) -> Option<usize> {
    dc.flows[flow]
        .hops
        .iter()
        .rev()
        .find_map(|h| match h.charge {
            Charge::Appliance(a) => Some(a),
            _ => None,
        })
}

/// A flow's weight in the baselines: its smallest virtual guarantee (as the simulator's).
fn flow_weight(dc: &Datacenter, flow: usize) -> f64 {
    let f = &dc.flows[flow];
    f.hops
        .iter()
        .filter_map(|h| h.virtual_resource)
        .map(|v| dc.tenants[f.tenant].virtuals[v].guarantee)
        .fold(f64::INFINITY, f64::min)
}

/// The baselines' static allocation of every flow, per hop [tokens/s]: a policed hop with a
/// physical resource gets that resource's capacity split in proportion to the weights of the
/// flows crossing it; every other hop is unlimited. `None` for `pulsar` and `none`.
pub fn static_allocation(dc: &Datacenter, mode: Isolation) -> Option<Vec<Vec<f64>>> {
    let policed = |c: Charge| match mode {
        Isolation::PerAppliance => matches!(c, Charge::Appliance(_)),
        Isolation::NetworkOnly => matches!(c, Charge::Request | Charge::Response),
        Isolation::Pulsar | Isolation::None => false,
    };
    if matches!(mode, Isolation::Pulsar | Isolation::None) {
        return None;
    }
    let weights: Vec<f64> = (0..dc.flows.len()).map(|i| flow_weight(dc, i)).collect();
    let crossing = |r: usize| -> f64 {
        dc.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.hops.iter().any(|h| h.physical == Some(r)))
            .map(|(i, _)| weights[i])
            .sum()
    };
    Some(
        dc.flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                f.hops
                    .iter()
                    .map(|h| match h.physical {
                        Some(r) if policed(h.charge) => {
                            let total = crossing(r);
                            if total > 0.0 && weights[i].is_finite() {
                                dc.resources[r].capacity * weights[i] / total
                            } else {
                                UNLIMITED_RATE
                            }
                        }
                        _ => UNLIMITED_RATE,
                    })
                    .collect()
            })
            .collect(),
    )
}

/// One tenant under one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedTenantOutcome {
    pub tenant: String,
    /// the virtual appliance whose throughput is guaranteed
    pub resource: String,
    /// [tokens/s]
    pub guarantee: f64,
    /// tokens/s at `resource` over the measured time, from the completed GETs
    pub achieved: f64,
    /// achieved / guarantee
    pub ratio: f64,
    /// ratio ≥ [`MET`]
    pub guarantee_met: bool,
    /// GETs completed in the measured time
    pub requests: u64,
    /// error replies and misses over the whole mode
    pub errors: u64,
    /// the enforcer's bucket rates of the tenant's flow at the end, per hop [tokens/s]; empty
    /// without a proxy
    pub rates: Vec<f64>,
}

/// One mode of one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedModeOutcome {
    pub mode: Isolation,
    pub tenants: Vec<TestbedTenantOutcome>,
    pub all_met: bool,
    /// the controller's allocation epoch at the end (`pulsar`: ≥ 2 once an allocation computed
    /// from the proxies' reports reached them)
    pub epoch: Option<u64>,
    /// per interval from the start of the load: every tenant's tokens/s at its appliance
    pub series: Vec<(f64, Vec<f64>)>,
}

/// All modes of one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedSeedRun {
    pub seed: u64,
    pub modes: Vec<TestbedModeOutcome>,
}

/// The experiment's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VdcTestbedExperiment {
    pub config: VdcTestbedConfig,
    pub runs: Vec<TestbedSeedRun>,
    /// `pulsar` met every guarantee on every seed (where it ran)
    pub pulsar_held: bool,
    /// `none` broke at least one guarantee on every seed (where it ran)
    pub none_broke: bool,
    /// the same datacenter and workloads in the simulator (first seed), when asked for
    pub simulated: Option<EnforcementExperiment>,
}

/// What the run reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VdcTestbedProgress {
    /// seed `seed`'s testbed is up
    Up { seed: u64 },
    /// a mode of a seed finished
    Mode { seed: u64, mode: Isolation },
    /// the simulator finished
    Simulated,
}

/// Runs the experiment (as root): for every seed a fresh testbed, every mode in turn.
///
/// # Errors
/// [`VdcTestbedError`]: bad settings, no root, no memcached, a namespace, a server or a load
/// that fails. Everything built is removed either way.
pub fn run(
    cfg: &VdcTestbedConfig,
    mut progress: impl FnMut(VdcTestbedProgress),
) -> Result<VdcTestbedExperiment, VdcTestbedError> {
    cfg.validate()?;
    let dc = Arc::new(datacenter(cfg.link_bytes_per_s)?);
    tailbound_testbed::memcached::check_binary(&cfg.memcached)?;
    let mut runs = Vec::new();
    for &seed in &cfg.seeds {
        let bed = Bed::up(
            cfg.link_bytes_per_s,
            Store::OnServer,
            &cfg.memcached,
            &TENANTS,
            &[("kv", KV_PORT), ("cache", CACHE_PORT)],
            seed,
        )?;
        progress(VdcTestbedProgress::Up { seed });
        let mut modes = Vec::new();
        for &mode in &cfg.modes {
            modes.push(bed.run_mode(cfg, &dc, mode, seed)?);
            progress(VdcTestbedProgress::Mode { seed, mode });
        }
        drop(bed);
        runs.push(TestbedSeedRun { seed, modes });
    }
    let simulated = if cfg.simulate {
        let sim = simulate(cfg, &dc)?;
        progress(VdcTestbedProgress::Simulated);
        Some(sim)
    } else {
        None
    };
    let of = |m: Isolation| {
        runs.iter()
            .flat_map(move |r| r.modes.iter().filter(move |o| o.mode == m))
    };
    Ok(VdcTestbedExperiment {
        pulsar_held: of(Isolation::Pulsar).all(|o| o.all_met),
        none_broke: of(Isolation::None).all(|o| !o.all_met),
        config: cfg.clone(),
        runs,
        simulated,
    })
}

/// The same datacenter and closed loops in the simulator.
fn simulate(
    cfg: &VdcTestbedConfig,
    dc: &Datacenter,
) -> Result<EnforcementExperiment, VdcTestbedError> {
    let models = dc
        .appliance_resource
        .iter()
        .map(|_| ApplianceModel {
            true_cost: testbed_cost(),
            rate: 100.0 * cfg.link_bytes_per_s,
        })
        .collect();
    let workloads = TENANTS
        .iter()
        .enumerate()
        .map(|(i, t)| FlowWorkload {
            flow: i,
            driver: Loop::Closed {
                outstanding: t.depth * t.connections as u32,
            },
            read_fraction: 1.0,
            size_bytes: t.value_bytes as u64,
            start_s: 0.0,
            stop_s: f64::INFINITY,
        })
        .collect();
    let metrics = TENANTS
        .iter()
        .enumerate()
        .map(|(t, load)| {
            let v = dc.tenants[t]
                .virtuals
                .iter()
                .position(|x| x.name == load.appliance)
                .unwrap_or(0);
            (t, v, dc.tenants[t].virtuals[v].guarantee)
        })
        .collect();
    let vcfg = VdcConfig {
        duration_s: (cfg.warmup_s + cfg.duration_s).max(4.0 * cfg.interval_s),
        interval_s: cfg.interval_s,
        global: cfg.global,
        seed: cfg.seeds.first().copied().unwrap_or(1),
    };
    Ok(enforcement_of(
        &vcfg,
        &cfg.modes,
        (dc.clone(), models, workloads, metrics),
        |_| {},
    )?)
}

/// A seed's testbed: the namespaces and the appliances' memcached, removed on drop.
/// Where the appliances' memcached run, and so where the shaped link sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    /// on s0 with the proxies, behind s0's shaped link: the link is a resource of its own,
    /// after the appliance (Fig. 12/13)
    OnServer,
    /// on a host of their own, `kv`, whose link is the shaped one, s0 unshaped: what the
    /// appliance serves is bounded before the proxy sees a reply complete, so the proxy's
    /// outstanding tokens see its queue (Fig. 14(a): the store is a black box of that capacity)
    OwnHost,
}

pub(crate) struct Bed {
    // memcached first: they die before their namespace goes
    _servers: Vec<tailbound_dataplane::memcache::Memcached>,
    lan: Lan,
    server_ip: IpAddr,
    /// where the memcached listen
    store_ip: IpAddr,
    tenants: Vec<TenantLoad>,
    /// every appliance's name and port on s0
    appliances: Vec<(&'static str, u16)>,
}

impl Bed {
    /// s0, a host per tenant, a memcached per appliance where `store` says (its host's link
    /// HTB-shaped at `link_bytes_per_s` each way), every tenant's keys stored.
    pub(crate) fn up(
        link_bytes_per_s: f64,
        store: Store,
        memcached: &std::path::Path,
        tenants: &[TenantLoad],
        appliances: &[(&'static str, u16)],
        seed: u64,
    ) -> Result<Bed, VdcTestbedError> {
        let shaped = Some(link_bytes_per_s);
        let mut hosts = vec![HostSpec {
            label: "s0".into(),
            rate_bytes_per_s: if store == Store::OnServer {
                shaped
            } else {
                None
            },
            extra: Vec::new(),
        }];
        for t in tenants {
            hosts.push(HostSpec {
                label: format!("t{}", t.name.to_lowercase()),
                rate_bytes_per_s: None,
                extra: Vec::new(),
            });
        }
        if store == Store::OwnHost {
            hosts.push(HostSpec {
                label: "kv".into(),
                rate_bytes_per_s: shaped,
                extra: Vec::new(),
            });
        }
        let lan = Lan::create(&LanSpec {
            hosts,
            bridge: true,
            mtu_packets: false,
            persistent: None,
        })?;
        let server_ip = IpAddr::V4(lan.hosts()[0].ip);
        let store_host = match store {
            Store::OnServer => lan.hosts()[0].clone(),
            Store::OwnHost => lan.hosts()[tenants.len() + 1].clone(),
        };
        let store_ip = IpAddr::V4(store_host.ip);
        let mut servers = Vec::new();
        for &(name, port) in appliances {
            servers.push(tailbound_testbed::memcached::start(
                &store_host.ns,
                &format!("{} ({name})", store_host.label),
                SocketAddr::new(store_ip, port),
                MEMORY_MIB,
                memcached,
                false,
            )?);
        }
        let bed = Bed {
            _servers: servers,
            lan,
            server_ip,
            store_ip,
            tenants: tenants.to_vec(),
            appliances: appliances.to_vec(),
        };
        bed.preload(seed)?;
        Ok(bed)
    }

    /// Host `host`'s namespace: 0 is s0, tenant `i` is `i + 1`.
    pub(crate) fn ns(&self, host: usize) -> String {
        self.lan.hosts()[host].ns.clone()
    }

    pub(crate) fn server_ip(&self) -> IpAddr {
        self.server_ip
    }

    /// Where appliance `appliance`'s memcached listens.
    pub(crate) fn backend(&self, appliance: &str) -> SocketAddr {
        let port = self
            .appliances
            .iter()
            .find(|(n, _)| *n == appliance)
            .or(self.appliances.first())
            .map_or(KV_PORT, |&(_, p)| p);
        SocketAddr::new(self.store_ip, port)
    }

    /// Stores every tenant's keys (from s0, directly).
    fn preload(&self, seed: u64) -> Result<(), VdcTestbedError> {
        let addrs: Vec<(SocketAddr, usize, &'static str)> = self
            .tenants
            .iter()
            .map(|t| (self.backend(t.appliance), t.value_bytes, t.name))
            .collect();
        in_namespace(&self.ns(0), "preloading the keys", move || async move {
            for (addr, size, name) in addrs {
                let mut c = Client::connect(addr, TIMEOUT)
                    .await
                    .map_err(|e| e.to_string())?;
                let value = vec![b'v'; size];
                for k in 0..KEYS {
                    c.set(&key(name, seed, k), &value)
                        .await
                        .map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        })
    }

    fn run_mode(
        &self,
        cfg: &VdcTestbedConfig,
        dc: &Arc<Datacenter>,
        mode: Isolation,
        seed: u64,
    ) -> Result<TestbedModeOutcome, VdcTestbedError> {
        let total = cfg.warmup_s + cfg.duration_s;
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<Result<Vec<SocketAddr>, String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        // the enforcers and the controller, in s0's namespace, until the load ends
        let server = if mode == Isolation::None {
            let _ = addr_tx.send(Ok(TENANTS
                .iter()
                .map(|t| self.backend(t.appliance))
                .collect()));
            None
        } else {
            let ns = self.ns(0);
            let dc = dc.clone();
            let backends = TENANTS.iter().map(|t| self.backend(t.appliance)).collect();
            let server_ip = self.server_ip;
            let interval_s = cfg.interval_s;
            let global = cfg.global;
            Some(std::thread::spawn(move || {
                let tx = addr_tx.clone();
                let r = in_namespace(&ns, "the enforcers", move || {
                    enforcers(
                        dc, mode, false, backends, server_ip, interval_s, global, addr_tx, stop_rx,
                    )
                });
                if let Err(e) = &r {
                    let _ = tx.send(Err(e.to_string()));
                }
                r
            }))
        };
        let addrs = match addr_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return Err(run_error("starting the enforcers", e)),
            Err(_) => return Err(run_error("starting the enforcers", "no answer within 60 s")),
        };
        // every tenant's clients, in its namespace, all started at once
        let t0 = Instant::now() + Duration::from_millis(200);
        let bins = (total / cfg.interval_s).ceil() as usize;
        let clients: Vec<_> = TENANTS
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let ns = self.ns(i + 1);
                let addr = addrs[i];
                let t = *t;
                let (interval_s, tseed) = (cfg.interval_s, seed);
                std::thread::spawn(move || {
                    in_namespace(&ns, &format!("tenant {}'s clients", t.name), move || {
                        tenant_load(t, addr, tseed, t0, interval_s, bins, total)
                    })
                })
            })
            .collect();
        let mut loads = Vec::new();
        let mut failure = None;
        for c in clients {
            match c.join() {
                Ok(Ok(l)) => loads.push(l),
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(_) => failure = failure.or(Some(run_error("a client thread", "panicked"))),
            }
        }
        let _ = stop_tx.send(());
        let enforced = match server {
            Some(h) => match h.join() {
                Ok(Ok(s)) => Some(s),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(run_error("the enforcer thread", "panicked")),
            },
            None => None,
        };
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(outcome(cfg, dc, mode, &loads, enforced))
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        // memcached are stopped by PID (their drop) before the namespaces go (the Lan's drop)
        self._servers.clear();
    }
}

/// A tenant's key `k` of seed `seed`.
pub(crate) fn key(tenant: &str, seed: u64, k: usize) -> String {
    format!("vdc-{tenant}-{seed}-{k}")
}

/// Runs `f`'s future on a current-thread runtime in a thread that entered namespace `ns`.
pub(crate) fn in_namespace<T, F, Fut>(ns: &str, what: &str, f: F) -> Result<T, VdcTestbedError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    netns::enter(ns)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| run_error(what, e))?;
    rt.block_on(f()).map_err(|e| run_error(what, e))
}

/// What a tenant's clients counted.
#[derive(Debug, Clone, Default)]
pub(crate) struct TenantCounts {
    /// completed GETs per interval
    pub(crate) bins: Vec<u64>,
    pub(crate) errors: u64,
}

/// A tenant's closed loops: `connections` × `depth` GETs of random keys, from `t0` for
/// `total_s`, counting completions per interval.
pub(crate) async fn tenant_load(
    t: TenantLoad,
    addr: SocketAddr,
    seed: u64,
    t0: Instant,
    interval_s: f64,
    bins: usize,
    total_s: f64,
) -> Result<TenantCounts, String> {
    tokio::time::sleep_until(t0.into()).await;
    let end = t0 + Duration::from_secs_f64(total_s);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..t.connections {
        let rng = ChaCha8Rng::seed_from_u64(seed ^ ((c as u64 + 1) << 32) ^ t.name.len() as u64);
        tasks.spawn(closed_loop(t, addr, seed, rng, t0, end, interval_s, bins));
    }
    let mut counts = TenantCounts {
        bins: vec![0; bins],
        errors: 0,
    };
    while let Some(r) = tasks.join_next().await {
        let c = r.map_err(|e| e.to_string())??;
        for (a, b) in counts.bins.iter_mut().zip(c.bins) {
            *a += b;
        }
        counts.errors += c.errors;
    }
    Ok(counts)
}

#[allow(clippy::too_many_arguments)]
async fn closed_loop(
    t: TenantLoad,
    addr: SocketAddr,
    seed: u64,
    mut rng: ChaCha8Rng,
    t0: Instant,
    end: Instant,
    interval_s: f64,
    bins: usize,
) -> Result<TenantCounts, String> {
    let mut c = Client::connect(addr, TIMEOUT)
        .await
        .map_err(|e| format!("tenant {} connecting to {addr}: {e}", t.name))?;
    let next = |rng: &mut ChaCha8Rng| Request::get(key(t.name, seed, rng.gen_range(0..KEYS)));
    for _ in 0..t.depth {
        c.send(&next(&mut rng)).await.map_err(|e| e.to_string())?;
    }
    let mut counts = TenantCounts {
        bins: vec![0; bins],
        errors: 0,
    };
    let mut sent = u64::from(t.depth);
    loop {
        let f = c.recv_frame().await.map_err(|e| e.to_string())?;
        let now = Instant::now();
        if f.error || f.values == 0 {
            counts.errors += 1;
        } else {
            let b = (now.saturating_duration_since(t0).as_secs_f64() / interval_s) as usize;
            if let Some(n) = counts.bins.get_mut(b) {
                *n += 1;
            }
        }
        if now >= end || sent >= MAX_REQUESTS {
            return Ok(counts);
        }
        c.send(&next(&mut rng)).await.map_err(|e| e.to_string())?;
        sent += 1;
    }
}

/// What the enforcers report at the end of a mode.
#[derive(Debug, Clone)]
pub(crate) struct Enforced {
    /// per tenant (flow): its proxy's bucket rates at the end
    pub(crate) rates: Vec<Vec<f64>>,
    pub(crate) epoch: Option<u64>,
    /// the controller's resources after each of its steps (with a controller)
    pub(crate) steps: Vec<ControllerStep>,
}

/// The controller's view of its resources after a step.
#[derive(Debug, Clone)]
pub(crate) struct ControllerStep {
    pub(crate) at: Instant,
    pub(crate) resources: Vec<tailbound_control::protocol::ResourceStatus>,
}

/// The enforcer proxies (one per appliance, a listener per flow) and, for `pulsar`, the
/// controller with a link per proxy (estimating the capacities of the appliances marked so
/// when `estimate_capacity`); sends the flows' listening addresses, runs until `stop`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn enforcers(
    dc: Arc<Datacenter>,
    mode: Isolation,
    estimate_capacity: bool,
    backends: Vec<SocketAddr>,
    server_ip: IpAddr,
    interval_s: f64,
    global: Mechanism,
    addrs: std::sync::mpsc::Sender<Result<Vec<SocketAddr>, String>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> Result<Enforced, String> {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let (halt, halted) = tokio::sync::watch::channel(false);
    // the controller (pulsar)
    let mut control = None;
    if mode == Isolation::Pulsar {
        let ccfg = ControlConfig {
            controller: ControllerConfig {
                interval_ns: (interval_s * 1e9).round() as u64,
                global,
                estimate_capacity,
                ..ControllerConfig::default()
            },
            ..ControlConfig::default()
        };
        let state =
            ControlState::new((*dc).clone(), ccfg, clock.now_ns()).map_err(|e| e.to_string())?;
        let service = Service::new(state, clock.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the controller's listener: {e}"))?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let mut h = halted.clone();
        let server = tokio::spawn(tailbound_control::server::serve(
            listener,
            service.clone(),
            async move {
                let _ = h.changed().await;
            },
        ));
        let client = ControlClient::new(&url, TIMEOUT).map_err(|e| e.to_string())?;
        let info = fetch_datacenter(&client).await.map_err(|e| e.to_string())?;
        control = Some((service, server, client, info));
    }
    let statics = static_allocation(&dc, mode);
    // a proxy per appliance, its flows those that end there
    let mut proxies: Vec<(Arc<Proxy>, Vec<usize>)> = Vec::new();
    let mut listen = vec![None; dc.flows.len()];
    let mut links = Vec::new();
    for a in 0..dc.costs.len() {
        let mine: Vec<usize> = (0..dc.flows.len())
            .filter(|&i| flow_appliance(&dc, i) == Some(a))
            .collect();
        let Some(&first) = mine.first() else {
            continue;
        };
        let flows: Vec<ProxyFlow> = mine
            .iter()
            .map(|&i| ProxyFlow {
                setup: FlowSetup {
                    name: tailbound_control::protocol::flow_name(&dc, i),
                    hops: dc.flows[i].hops.len(),
                    priority: 0,
                },
                charger: Arc::new(Charger::new(dc.clone(), i)),
            })
            .collect();
        let listeners = (0..mine.len())
            .map(|k| ListenerSpec {
                addr: SocketAddr::new(server_ip, 0),
                identify: Identify::Flow(k),
            })
            .collect();
        let mut pcfg = ProxyConfig::new(backends[first], listeners);
        if let Some((_, _, _, info)) = &control {
            pcfg.core.min_rate = info.min_rate;
            pcfg.core.initial_rate = Some(info.min_rate);
        } else {
            pcfg.core.initial_rate = None;
        }
        let proxy = Arc::new(
            Proxy::start(pcfg, flows, clock.clone())
                .await
                .map_err(|e| e.to_string())?,
        );
        for (k, &i) in mine.iter().enumerate() {
            listen[i] = proxy.local_addrs().get(k).copied();
            if let Some(rates) = statics.as_ref().map(|s| &s[i]) {
                proxy.set_allocation(k, rates).map_err(|e| e.to_string())?;
            }
        }
        if let Some((_, _, client, info)) = &control {
            let id = format!("{}-enforcer", dc.resources[dc.appliance_resource[a]].name);
            let (link, first) = Link::register(client.clone(), &id, info, &proxy)
                .await
                .map_err(|e| e.to_string())?;
            let p = proxy.clone();
            let mut h = halted.clone();
            links.push(tokio::spawn(async move {
                link.run(&p, &first, async move {
                    let _ = h.changed().await;
                })
                .await;
            }));
        }
        proxies.push((proxy, mine));
    }
    let listen: Option<Vec<SocketAddr>> = listen.into_iter().collect();
    let Some(listen) = listen else {
        return Err("a flow has no appliance to enforce at".into());
    };
    let _ = addrs.send(Ok(listen));
    // the controller's resources after every step, looked at four times an interval
    let mut steps = Vec::new();
    let mut stop = stop;
    match &control {
        Some((service, ..)) => {
            let every = Duration::from_secs_f64(interval_s / 4.0);
            let mut seen = None;
            loop {
                tokio::select! {
                    _ = &mut stop => break,
                    () = tokio::time::sleep(every) => {}
                }
                let now = service.now_ns();
                let state = service.state();
                if seen != Some(state.epoch()) {
                    seen = Some(state.epoch());
                    steps.push(ControllerStep {
                        at: Instant::now(),
                        resources: state.status(now).resources,
                    });
                }
            }
        }
        None => {
            let _ = stop.await;
        }
    }
    // the allocation at the end, then everything stops
    let mut rates = vec![Vec::new(); dc.flows.len()];
    for (proxy, mine) in &proxies {
        for (k, st) in proxy.status().into_iter().enumerate() {
            if let Some(&i) = mine.get(k) {
                rates[i] = st.rates;
            }
        }
    }
    let epoch = control
        .as_ref()
        .map(|(service, ..)| service.state().epoch());
    let _ = halt.send(true);
    for l in links {
        let _ = l.await;
    }
    for (p, _) in &proxies {
        p.shutdown().await;
    }
    if let Some((_, server, _, _)) = control {
        let _ = server.await;
    }
    Ok(Enforced {
        rates,
        epoch,
        steps,
    })
}

/// A mode's outcome from the tenants' counts.
fn outcome(
    cfg: &VdcTestbedConfig,
    dc: &Datacenter,
    mode: Isolation,
    loads: &[TenantCounts],
    enforced: Option<Enforced>,
) -> TestbedModeOutcome {
    let warm_bins = (cfg.warmup_s / cfg.interval_s).round() as usize;
    let cost = |t: &TenantLoad| testbed_cost().read.cost(t.value_bytes as f64);
    let series = (0..loads.first().map_or(0, |l| l.bins.len()))
        .map(|b| {
            (
                b as f64 * cfg.interval_s,
                TENANTS
                    .iter()
                    .zip(loads)
                    .map(|(t, l)| l.bins[b] as f64 * cost(t) / cfg.interval_s)
                    .collect(),
            )
        })
        .collect();
    let tenants: Vec<TestbedTenantOutcome> = TENANTS
        .iter()
        .zip(loads)
        .enumerate()
        .map(|(i, (t, l))| {
            let measured = &l.bins[warm_bins.min(l.bins.len())..];
            let requests: u64 = measured.iter().sum();
            let span = measured.len() as f64 * cfg.interval_s;
            let achieved = if span > 0.0 {
                requests as f64 * cost(t) / span
            } else {
                0.0
            };
            let guarantee = dc.tenants[i]
                .virtuals
                .iter()
                .find(|v| v.name == t.appliance)
                .map_or(0.0, |v| v.guarantee);
            let ratio = if guarantee > 0.0 {
                achieved / guarantee
            } else {
                0.0
            };
            TestbedTenantOutcome {
                tenant: t.name.into(),
                resource: t.appliance.into(),
                guarantee,
                achieved,
                ratio,
                guarantee_met: ratio >= MET,
                requests,
                errors: l.errors,
                rates: enforced
                    .as_ref()
                    .and_then(|e| e.rates.get(i).cloned())
                    .unwrap_or_default(),
            }
        })
        .collect();
    TestbedModeOutcome {
        mode,
        all_met: tenants.iter().all(|t| t.guarantee_met),
        tenants,
        epoch: enforced.as_ref().and_then(|e| e.epoch),
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_datacenter_puts_every_tenant_on_s0s_link_and_its_appliance() {
        let dc = datacenter(4e6).unwrap();
        assert_eq!(dc.tenants.len(), 4);
        let up = dc.resources.iter().position(|r| r.name == "s0.up").unwrap();
        for (i, t) in TENANTS.iter().enumerate() {
            assert!(dc.flows[i].hops.iter().any(|h| h.physical == Some(up)));
            let a = flow_appliance(&dc, i).unwrap();
            assert_eq!(dc.resources[dc.appliance_resource[a]].name, t.appliance);
        }
    }

    #[test]
    fn per_appliance_polices_only_appliances_and_network_only_only_links() {
        let dc = datacenter(4e6).unwrap();
        assert!(static_allocation(&dc, Isolation::Pulsar).is_none());
        assert!(static_allocation(&dc, Isolation::None).is_none());
        let pa = static_allocation(&dc, Isolation::PerAppliance).unwrap();
        let no = static_allocation(&dc, Isolation::NetworkOnly).unwrap();
        for (i, f) in dc.flows.iter().enumerate() {
            for (h, hop) in f.hops.iter().enumerate() {
                let app = matches!(hop.charge, Charge::Appliance(_));
                assert_eq!(pa[i][h] < UNLIMITED_RATE, app, "flow {i} hop {h}");
                let net = !app && hop.physical.is_some();
                assert_eq!(no[i][h] < UNLIMITED_RATE, net, "flow {i} hop {h}");
            }
        }
        // A is the cache's only tenant: per-appliance gives it all of the cache, which is
        // more than the link: what lets it hog s0's uplink
        let a_cache = pa[0].iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(a_cache, APPLIANCE_CAPACITY * 4e6);
        // network-only splits s0's uplink by the flows' smallest guarantees: C gets the least
        let up = dc.resources.iter().position(|r| r.name == "s0.up").unwrap();
        let share = |i: usize| {
            let h = dc.flows[i]
                .hops
                .iter()
                .position(|h| h.physical == Some(up))
                .unwrap();
            no[i][h]
        };
        let total: f64 = (0..4).map(share).sum();
        assert!((total - dc.resources[up].capacity).abs() < 1e-6 * total);
        assert!(share(2) < share(1) && (share(0) - share(3)).abs() < 1e-9);
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let mut cfg = VdcTestbedConfig {
            interval_s: 0.0,
            ..VdcTestbedConfig::default()
        };
        assert!(cfg.validate().unwrap_err().to_string().contains("interval"));
        cfg.interval_s = 0.5;
        cfg.link_bytes_per_s = f64::NAN;
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("link rate"));
        cfg.link_bytes_per_s = 4e6;
        cfg.seeds.clear();
        assert!(cfg.validate().unwrap_err().to_string().contains("seeds"));
    }
}
