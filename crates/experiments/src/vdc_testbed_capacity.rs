//! Pulsar's Fig. 14(a) (pulsar §6.2) on the real testbed: the controller's estimate of a real
//! memcached's capacity as tenants start one after another, driven only by the enforcer
//! proxies' reports, against the capacity measured without enforcement. The same datacenter
//! and closed loops are simulated beside ([`crate::vdc::capacity_of`]).
//!
//! ```text
//!  td: D, 4 conns × 8 GETs of 16 KiB  (from 0)        ┐
//!  tc: C, 4 conns × 8 GETs of 16 KiB  (from 1 phase)  ├─ br0 ─ s0: enforcer proxy ─► br0 ─ kv: memcached
//!  tb: B, 4 conns × 8 GETs of 16 KiB  (from 2 phases) ┘        controller (HTTP, on lo)   (link HTB-shaped each way)
//! ```
//!
//! **The appliance.** One memcached on its own host `kv`, whose link is shaped at
//! `link_bytes_per_s`: what its clients can get from it is bounded by that link (memcached
//! itself serves far more on this machine). To the controller the key-value store is a black
//! box of unknown capacity, declared at [`INITIAL_CAPACITY`] × the link rate (the estimator's
//! `minW`, its first estimate) and at most [`MAX_CAPACITY`] × (its `maxW`); the datacenter
//! does not model kv's link, and s0's and the tenants' links are unshaped (declared at 100×).
//! The enforcer proxy on s0 sits in front of the store, as pulsar's enforcers sit in front of
//! the appliance: a request is outstanding until its reply is back at the proxy, so the
//! store's queue (at its link) is what the proxy's outstanding tokens measure. (With
//! memcached on s0 behind s0's shaped link, replies completed at the proxy and then queued in
//! its sockets towards the link, out of the estimator's sight: the estimate rose to 1.7× the
//! capacity and stayed there.) Every GET reads a 16 KiB value, charged 16 384 tokens
//! (pulsar's cost function, Fig. 6(b)), so tokens/s and bytes/s on the link agree up to the
//! TCP/IP and reply headers. Each tenant keeps 32 GETs outstanding: a queue at the link then
//! takes many times a response's unloaded residence (one 16 KiB value's serialization, 4 ms at
//! 4 MB/s), which is how the estimator tells an over-estimate (queueing) from tenants that ask
//! for less.
//!
//! **Runs.** First the capacity is *measured*: every tenant reads directly from memcached
//! (no proxy) for `calibrate_s`, and the tokens/s its clients complete after the first
//! quarter is the capacity the estimate should find. Then the Pulsar run: an enforcer proxy
//! in front of memcached reporting to the in-process controller (demand and capacity
//! estimation, the chosen global mechanism), tenants D, C, B (guarantees 1:2:3, summing to
//! less than `minW`) starting one per phase. Per control interval: the controller's estimate
//! after its last step in the interval, and every tenant's tokens/s as its clients counted.
//!
//! **Hygiene.** As [`crate::vdc_testbed`]: namespaces and memcached (by PID) go when the run
//! ends, on success, error or signal; every load is bounded by its time and a request count;
//! the proxy and the controller live in threads of this process and end with the run.

use crate::vdc::{
    capacity_of, capacity_phases, flow, testbed_cost, CapacityExperiment, CapacityPoint, VdcConfig,
};
use crate::vdc_testbed::{
    check_interval, check_link, enforcers, in_namespace, run_error, tenant_load, Bed,
    ControllerStep, Store, TenantCounts, TenantLoad, VdcTestbedError,
};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailbound_allocation::vdc::{
    ApplianceSpec, GuaranteeKind, ServerSpec, TenantSpec, VirtualApplianceSpec, VmSpec,
};
use tailbound_allocation::{Datacenter, Mechanism, VdcSpec};
use tailbound_vdc_sim::{ApplianceModel, FlowWorkload, Isolation, Loop};

/// The key-value store's declared capacity (the estimator's `minW` and first estimate), as a
/// fraction of the link rate [tokens/s per bytes/s].
pub const INITIAL_CAPACITY: f64 = 0.35;
/// The most the estimator may probe (`maxW`), as a multiple of the link rate.
pub const MAX_CAPACITY: f64 = 2.0;
/// The value every GET reads [bytes].
pub const VALUE_BYTES: usize = 16384;
/// The key-value store's port on s0.
const KV_PORT: u16 = 11211;

/// The tenants in the order they start, each with its guarantee at the key-value store as a
/// fraction of the link rate (pulsar Fig. 14's 1:2:3).
pub const TENANTS: [(TenantLoad, f64); 3] = [
    (
        TenantLoad {
            name: "D",
            appliance: "kv",
            vm_link: 0.5,
            value_bytes: VALUE_BYTES,
            connections: 4,
            depth: 8,
        },
        0.05,
    ),
    (
        TenantLoad {
            name: "C",
            appliance: "kv",
            vm_link: 0.5,
            value_bytes: VALUE_BYTES,
            connections: 4,
            depth: 8,
        },
        0.10,
    ),
    (
        TenantLoad {
            name: "B",
            appliance: "kv",
            vm_link: 0.5,
            value_bytes: VALUE_BYTES,
            connections: 4,
            depth: 8,
        },
        0.15,
    ),
];

/// How the experiment runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityTestbedConfig {
    /// time between tenant starts, and after the last [s]
    pub phase_s: f64,
    /// control interval, and the series' bin [s]
    pub interval_s: f64,
    /// the direct run that measures the capacity [s]
    pub calibrate_s: f64,
    /// s0's link, each way (HTB) [bytes/s]
    pub link_bytes_per_s: f64,
    pub global: Mechanism,
    /// seeds the keys and the simulator
    pub seed: u64,
    /// the memcached executable
    pub memcached: PathBuf,
    /// also simulate the same datacenter and workloads
    pub simulate: bool,
}

impl Default for CapacityTestbedConfig {
    fn default() -> Self {
        CapacityTestbedConfig {
            phase_s: 10.0,
            interval_s: 0.5,
            calibrate_s: 3.0,
            link_bytes_per_s: 4e6,
            global: Mechanism::Hdrf,
            seed: 1,
            memcached: PathBuf::from("memcached"),
            simulate: true,
        }
    }
}

impl CapacityTestbedConfig {
    /// # Errors
    /// [`VdcTestbedError::Config`] naming the bad setting and what is accepted.
    pub fn validate(&self) -> Result<(), VdcTestbedError> {
        let bad = |m: String| Err(VdcTestbedError::Config(m));
        check_interval(self.interval_s)?;
        if !(self.phase_s.is_finite() && self.phase_s >= 4.0 * self.interval_s)
            || self.phase_s > 600.0
        {
            return bad(format!(
                "phase {} s; use four control intervals ({} s) to 600 s",
                self.phase_s,
                4.0 * self.interval_s
            ));
        }
        if !(self.calibrate_s.is_finite() && (0.5..=60.0).contains(&self.calibrate_s)) {
            return bad(format!(
                "calibration {} s; use 0.5 to 60 s",
                self.calibrate_s
            ));
        }
        check_link(self.link_bytes_per_s)?;
        Ok(())
    }
}

/// The experiment's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityTestbedExperiment {
    pub config: CapacityTestbedConfig,
    /// what the tenants' clients completed reading directly from memcached [tokens/s]
    pub measured_capacity: f64,
    /// the controller's first estimate: the declared capacity, `minW` [tokens/s]
    pub initial_estimate: f64,
    /// the estimate after the last step [tokens/s]
    pub final_estimate: f64,
    /// mean |estimate − measured| / measured over the second half of the last phase
    pub late_error: f64,
    /// the estimate moved from its initial value toward the measured capacity and ended
    /// within 25% of it (`late_error` < 0.25, and below the initial value's error)
    pub converged: bool,
    /// controller steps in the Pulsar run
    pub steps: usize,
    /// error replies and misses the tenants saw
    pub errors: u64,
    /// the Pulsar run as Fig. 14's data (`outstanding` is not sampled on the testbed: 0)
    pub testbed: CapacityExperiment,
    /// the same datacenter and closed loops in the simulator, its appliance serving the
    /// measured capacity
    pub simulated: Option<CapacityExperiment>,
}

/// What the run reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityTestbedProgress {
    Up,
    Calibrated,
    Ran,
    Simulated,
}

/// The experiment's datacenter for a link rate [bytes/s]; see the module docs.
///
/// # Errors
/// The datacenter's validation error (none for a valid rate).
pub fn datacenter(link_bytes_per_s: f64) -> Result<Datacenter, VdcTestbedError> {
    let l = link_bytes_per_s;
    let mut servers = vec![ServerSpec {
        name: "s0".into(),
        link: 100.0 * l,
    }];
    let mut tenants = Vec::new();
    for (t, g) in &TENANTS {
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
            weight: None,
            vms: vec![VmSpec {
                name: lower.clone(),
                server,
                link: t.vm_link * l,
                link_max: None,
            }],
            appliances: vec![VirtualApplianceSpec {
                name: t.appliance.into(),
                appliance: t.appliance.into(),
                guarantee: g * l,
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
    let spec = VdcSpec {
        header_bytes: 64.0,
        servers,
        appliances: vec![ApplianceSpec {
            name: "kv".into(),
            server: Some("s0".into()),
            capacity: INITIAL_CAPACITY * l,
            max_capacity: Some(MAX_CAPACITY * l),
            estimate: true,
            cost: Some(testbed_cost()),
        }],
        tenants,
    };
    Ok(spec.compile()?)
}

fn loads() -> Vec<TenantLoad> {
    TENANTS.iter().map(|(t, _)| *t).collect()
}

/// Tokens a GET is charged.
fn get_cost() -> f64 {
    testbed_cost().read.cost(VALUE_BYTES as f64)
}

/// Runs the experiment (as root): the testbed, the direct run, the Pulsar run, then the
/// simulator.
///
/// # Errors
/// [`VdcTestbedError`]: bad settings, no root, no memcached, a namespace, a server or a load
/// that fails. Everything built is removed either way.
pub fn run(
    cfg: &CapacityTestbedConfig,
    mut progress: impl FnMut(CapacityTestbedProgress),
) -> Result<CapacityTestbedExperiment, VdcTestbedError> {
    cfg.validate()?;
    let dc = Arc::new(datacenter(cfg.link_bytes_per_s)?);
    tailbound_testbed::memcached::check_binary(&cfg.memcached)?;
    let bed = Bed::up(
        cfg.link_bytes_per_s,
        Store::OwnHost,
        &cfg.memcached,
        &loads(),
        &[("kv", KV_PORT)],
        cfg.seed,
    )?;
    progress(CapacityTestbedProgress::Up);
    // the capacity, measured: every tenant at once, directly
    let direct = vec![bed.backend("kv"); TENANTS.len()];
    let bin_s = cfg.calibrate_s / 20.0;
    let (counts, _) = clients(&bed, &direct, cfg.seed, bin_s, cfg.calibrate_s, &[0.0; 3])?;
    let skip = 5;
    let measured: u64 = counts
        .iter()
        .map(|c| c.bins.iter().skip(skip).sum::<u64>())
        .sum();
    let measured_capacity = measured as f64 * get_cost() / (15.0 * bin_s);
    progress(CapacityTestbedProgress::Calibrated);
    // Pulsar, tenants one per phase
    let (counts, (t0, steps)) = pulsar_run(cfg, &bed, &dc)?;
    drop(bed);
    progress(CapacityTestbedProgress::Ran);
    let kv = dc.resource("kv").unwrap_or(0);
    let initial_estimate = dc.resources[kv].capacity;
    let bins = counts.first().map_or(0, |c| c.bins.len());
    let mut k = 0;
    let mut estimate = initial_estimate;
    let mut phase = None;
    let mut series = Vec::with_capacity(bins);
    for b in 0..bins {
        let end = t0 + Duration::from_secs_f64((b + 1) as f64 * cfg.interval_s);
        while let Some(s) = steps.get(k).filter(|s| s.at <= end) {
            if let Some(r) = s.resources.get(kv) {
                estimate = r.capacity;
                phase.clone_from(&r.phase);
            }
            k += 1;
        }
        let throughput: Vec<f64> = counts
            .iter()
            .map(|c| c.bins[b] as f64 * get_cost() / cfg.interval_s)
            .collect();
        series.push(CapacityPoint {
            t_s: (b + 1) as f64 * cfg.interval_s,
            estimate,
            phase: phase.clone(),
            appliance: throughput.iter().sum(),
            throughput,
            outstanding: 0.0,
        });
    }
    let tenants: Vec<(String, f64)> = TENANTS
        .iter()
        .map(|(t, g)| (t.name.to_string(), g * cfg.link_bytes_per_s))
        .collect();
    let vcfg = VdcConfig {
        duration_s: cfg.phase_s,
        interval_s: cfg.interval_s,
        global: cfg.global,
        seed: cfg.seed,
    };
    let late_from = (TENANTS.len() as f64 - 0.5) * cfg.phase_s;
    let late: Vec<f64> = series
        .iter()
        .filter(|p| p.t_s > late_from + 1e-9)
        .map(|p| (p.estimate - measured_capacity).abs() / measured_capacity)
        .collect();
    let late_error = if late.is_empty() || measured_capacity <= 0.0 {
        f64::MAX
    } else {
        late.iter().sum::<f64>() / late.len() as f64
    };
    let initial_error = (initial_estimate - measured_capacity).abs() / measured_capacity;
    let testbed = CapacityExperiment {
        config: vcfg.clone(),
        phases: capacity_phases(&series, &tenants, cfg.phase_s),
        tenants,
        series,
    };
    let simulated = if cfg.simulate && measured_capacity > 0.0 {
        let sim = simulate(&vcfg, &dc, measured_capacity)?;
        progress(CapacityTestbedProgress::Simulated);
        Some(sim)
    } else {
        None
    };
    Ok(CapacityTestbedExperiment {
        config: cfg.clone(),
        measured_capacity,
        initial_estimate,
        final_estimate: testbed
            .series
            .last()
            .map_or(initial_estimate, |p| p.estimate),
        late_error,
        converged: late_error < 0.25 && late_error < initial_error,
        steps: steps.len(),
        errors: counts.iter().map(|c| c.errors).sum(),
        testbed,
        simulated,
    })
}

/// The Pulsar run: the proxy and the controller in s0's namespace, tenant `i` starting at
/// `i` phases. Returns every tenant's counts (bins of the control interval from the common
/// start) and the controller's steps with that start.
#[allow(clippy::type_complexity)]
fn pulsar_run(
    cfg: &CapacityTestbedConfig,
    bed: &Bed,
    dc: &Arc<Datacenter>,
) -> Result<(Vec<TenantCounts>, (Instant, Vec<ControllerStep>)), VdcTestbedError> {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<Result<Vec<SocketAddr>, String>>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = {
        let ns = bed.ns(0);
        let dc = dc.clone();
        let backends = vec![bed.backend("kv"); TENANTS.len()];
        let server_ip = bed.server_ip();
        let (interval_s, global) = (cfg.interval_s, cfg.global);
        std::thread::spawn(move || {
            let tx = addr_tx.clone();
            let r = in_namespace(&ns, "the enforcer", move || {
                enforcers(
                    dc,
                    Isolation::Pulsar,
                    true,
                    backends,
                    server_ip,
                    interval_s,
                    global,
                    addr_tx,
                    stop_rx,
                )
            });
            if let Err(e) = &r {
                let _ = tx.send(Err(e.to_string()));
            }
            r
        })
    };
    let addrs = match addr_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(run_error("starting the enforcer", e)),
        Err(_) => Err(run_error("starting the enforcer", "no answer within 60 s")),
    };
    let starts: Vec<f64> = (0..TENANTS.len()).map(|i| i as f64 * cfg.phase_s).collect();
    let total = TENANTS.len() as f64 * cfg.phase_s;
    let counts =
        addrs.and_then(|addrs| clients(bed, &addrs, cfg.seed, cfg.interval_s, total, &starts));
    // the enforcer stops whatever the clients did
    let _ = stop_tx.send(());
    let enforced = match server.join() {
        Ok(r) => r?,
        Err(_) => return Err(run_error("the enforcer thread", "panicked")),
    };
    let (counts, t0) = counts?;
    Ok((counts, (t0, enforced.steps)))
}

/// Every tenant's closed loops against `addrs[i]` from its namespace, tenant `i` starting
/// `starts[i]` after a common start and all ending `total_s` after it; completions in bins of
/// `bin_s` from the common start. Returns the counts and the common start.
fn clients(
    bed: &Bed,
    addrs: &[SocketAddr],
    seed: u64,
    bin_s: f64,
    total_s: f64,
    starts: &[f64],
) -> Result<(Vec<TenantCounts>, Instant), VdcTestbedError> {
    let t0 = Instant::now() + Duration::from_millis(200);
    let bins = (total_s / bin_s).round() as usize;
    let handles: Vec<_> = TENANTS
        .iter()
        .enumerate()
        .map(|(i, (t, _))| {
            let ns = bed.ns(i + 1);
            let addr = addrs[i];
            let t = *t;
            let start = starts.get(i).copied().unwrap_or(0.0);
            let offset = (start / bin_s).round() as usize;
            std::thread::spawn(move || {
                in_namespace(&ns, &format!("tenant {}'s clients", t.name), move || {
                    let from = t0 + Duration::from_secs_f64(start);
                    tenant_load(
                        t,
                        addr,
                        seed,
                        from,
                        bin_s,
                        bins.saturating_sub(offset),
                        total_s - start,
                    )
                })
                .map(|c| {
                    let mut all = vec![0; bins];
                    for (a, b) in all.iter_mut().skip(offset).zip(c.bins) {
                        *a = b;
                    }
                    TenantCounts {
                        bins: all,
                        errors: c.errors,
                    }
                })
            })
        })
        .collect();
    let mut counts = Vec::new();
    let mut failure = None;
    for h in handles {
        match h.join() {
            Ok(Ok(c)) => counts.push(c),
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(_) => failure = failure.or(Some(run_error("a client thread", "panicked"))),
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok((counts, t0)),
    }
}

/// The same datacenter and closed loops in the simulator, the key-value store serving
/// `capacity` tokens/s of what it is charged.
fn simulate(
    vcfg: &VdcConfig,
    dc: &Datacenter,
    capacity: f64,
) -> Result<CapacityExperiment, VdcTestbedError> {
    let models = vec![ApplianceModel {
        true_cost: testbed_cost(),
        rate: capacity,
    }];
    let workloads: Vec<FlowWorkload> = TENANTS
        .iter()
        .enumerate()
        .map(|(i, (t, _))| FlowWorkload {
            flow: i,
            driver: Loop::Closed {
                outstanding: t.depth * t.connections as u32,
            },
            read_fraction: 1.0,
            size_bytes: t.value_bytes as u64,
            start_s: i as f64 * vcfg.duration_s,
            stop_s: f64::INFINITY,
        })
        .collect();
    Ok(capacity_of(vcfg, dc, &models, &workloads, |_| {})?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_declared_below_the_link_and_the_guarantees_fit_its_declared_capacity() {
        let dc = datacenter(4e6).unwrap();
        let kv = dc.resource("kv").unwrap();
        assert_eq!(dc.resources[kv].capacity, INITIAL_CAPACITY * 4e6);
        assert_eq!(dc.resources[kv].max_capacity, MAX_CAPACITY * 4e6);
        let g: f64 = dc
            .tenants
            .iter()
            .flat_map(|t| &t.virtuals)
            .filter(|v| v.appliance.is_some())
            .map(|v| v.guarantee)
            .sum();
        assert!((g - 0.3 * 4e6).abs() < 1.0, "{g}");
        assert!(g < dc.resources[kv].capacity);
        // 16 KiB GETs cost their bytes: tokens/s and the link's bytes/s agree
        assert_eq!(get_cost(), VALUE_BYTES as f64);
    }

    #[test]
    fn bad_settings_name_the_setting() {
        let cfg = CapacityTestbedConfig {
            phase_s: 0.1,
            ..CapacityTestbedConfig::default()
        };
        assert!(cfg.validate().unwrap_err().to_string().contains("phase"));
        let cfg = CapacityTestbedConfig {
            calibrate_s: f64::NAN,
            ..CapacityTestbedConfig::default()
        };
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("calibration"));
    }

    /// Simulated, the same scenario finds the capacity it is given.
    #[test]
    fn the_simulated_estimate_moves_toward_the_appliances_capacity() {
        let dc = datacenter(4e6).unwrap();
        let vcfg = VdcConfig {
            duration_s: 10.0,
            interval_s: 0.5,
            global: Mechanism::Hdrf,
            seed: 1,
        };
        let cap = 0.9 * 4e6;
        let sim = simulate(&vcfg, &dc, cap).unwrap();
        let first = sim.series[0].estimate;
        let closest = sim
            .series
            .iter()
            .map(|p| (p.estimate - cap).abs())
            .fold(f64::INFINITY, f64::min);
        assert!(closest < (first - cap).abs(), "{:?}", sim.series);
    }
}
