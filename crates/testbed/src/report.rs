//! What a testbed run reports: per tenant the testbed's latencies (in the scenario's time: a
//! measured latency × the scale), the simulator's for the same scenario, decisions and
//! requests, the bound and the SLO; how far testbed and simulator are apart over the tenants;
//! and whether the machine kept up (CPU, how late requests were sent).
//!
//! Percentiles of the testbed come from HdrHistograms (3 significant digits: each within 0.1 %
//! above the exact value); the simulator's are exact. A tenant violates its SLO when its worst
//! window's SLO percentile exceeds its SLO latency (the papers' check), on the testbed
//! (`violated`) or in the simulator (`sim_violated`).

use crate::capacity::Load;
use crate::testbed::{HostCounters, Measured};
use crate::topology::{AggressorKind, Topology};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tailbound_sim::TenantResult;

/// One SLO window of a tenant on the testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowReport {
    /// start of the window after the replay's first arrival [s of trace time]
    pub start_s: f64,
    pub requests: u64,
    /// the tenant's SLO percentile in the window [s]
    pub slo_percentile_s: f64,
}

/// One admitted tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantReport {
    pub name: String,
    pub slo_s: f64,
    pub percentile: f64,
    pub priority: u32,
    /// the admission bound [s]; `None` when the decisions came without one
    pub bound_s: Option<f64>,
    pub client: String,
    pub server: String,
    /// requests scheduled, sent, answered, failed, timed out
    pub requests: u64,
    pub sent: u64,
    pub replies: u64,
    pub errors: u64,
    pub timeouts: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    pub testbed_p50_s: f64,
    pub testbed_p99_s: f64,
    pub testbed_p999_s: f64,
    pub testbed_max_s: f64,
    /// the largest windowed SLO percentile on the testbed [s]
    pub testbed_worst_window_s: f64,
    pub sim_p50_s: f64,
    pub sim_p99_s: f64,
    pub sim_p999_s: f64,
    pub sim_max_s: f64,
    pub sim_worst_window_s: f64,
    /// testbed p99.9 / simulator p99.9 (`None` when the simulator's is 0)
    pub testbed_over_sim: Option<f64>,
    /// the testbed's worst window misses the SLO
    pub violated: bool,
    /// the simulator's worst window misses the SLO
    pub sim_violated: bool,
    /// how late its requests were sent, p99 and max [s of real time]
    pub send_late_p99_s: f64,
    pub send_late_max_s: f64,
    /// connections its client opened, and its most requests in flight
    pub connections: u64,
    pub max_in_flight: u64,
    pub windows: Vec<WindowReport>,
}

/// Testbed p99.9 / simulator p99.9 over the tenants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// tenants with a ratio
    pub tenants: usize,
    pub median: Option<f64>,
    pub p25: Option<f64>,
    pub p75: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// tenants whose ratio is above 2 or below 1/2
    pub apart: Vec<String>,
}

/// Whether the machine kept up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineReport {
    pub cores: usize,
    /// the replay's span [s of real time]
    pub wall_s: f64,
    /// CPU of the clients (this process) and of every memcached over the replay [s]
    pub client_cpu_s: f64,
    pub server_cpu_s: f64,
    /// (client + server CPU) / (span × cores): the measured share of the machine (the
    /// kernel's packet work done in softirq context is partly in neither)
    pub cpu_share: f64,
    /// how late requests were sent over all tenants, p99 of the tenants' p99 and the max
    /// [s of real time]
    pub send_late_p99_s: f64,
    pub send_late_max_s: f64,
    /// the load the capacity check estimated
    pub offered_requests_per_s: f64,
    pub offered_bytes_per_s: f64,
    pub estimated_cores: f64,
}

/// What one host's kernel did over the replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    pub name: String,
    #[serde(flatten)]
    pub counters: HostCounters,
}

/// The aggressor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggressorReport {
    pub kind: AggressorKind,
    /// the server host it aimed at
    pub target: String,
    /// payload bytes it sent (memcached: values it read)
    pub bytes: u64,
    /// its rate over the replay, in the scenario's units (× 1/scale) [bytes/s]
    pub rate_bytes_per_s: f64,
}

/// A testbed run; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedReport {
    pub scenario: String,
    /// the policy that decided
    pub policy: String,
    /// link rates × scale, trace times ÷ scale
    pub scale: f64,
    /// the decisions were applied on every host and switch port (false: links shaped only)
    pub enforced: bool,
    pub aggressor: Option<AggressorReport>,
    /// trace time from the first to the last arrival replayed [s]
    pub span_s: f64,
    pub tenants: Vec<TenantReport>,
    pub comparison: Comparison,
    pub machine: MachineReport,
    /// per host: TCP retransmissions and shaper drops over the replay (the simulator has
    /// neither)
    pub hosts: Vec<HostReport>,
    /// tenants whose testbed worst window misses the SLO
    pub violated: usize,
}

fn secs(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// The nearest-rank percentile of a histogram [s]: the value of rank `n − ⌊ε·n⌋` (ε = 1 −
/// percentile/100), the simulator's rule (`tailbound_sim::nearest_rank`), read as the highest
/// value of its bucket. (HdrHistogram's own `value_at_quantile` rounds `0.999 × 1000` up to
/// rank 1000.)
fn quantile(h: &Histogram<u64>, percentile: f64) -> f64 {
    let n = h.len();
    if n == 0 {
        return 0.0;
    }
    let epsilon = (100.0 - percentile) / 100.0;
    let above = (epsilon * n as f64 * (1.0 + 1e-12)).floor() as u64;
    let rank = n.saturating_sub(above).max(1);
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_since_last_iteration();
        if seen >= rank {
            return secs(h.highest_equivalent(v.value_iterated_to()));
        }
    }
    secs(h.max())
}

/// The median and quartiles of `v` (sorted in place), nearest rank.
fn quartiles(v: &mut [f64]) -> (Option<f64>, Option<f64>, Option<f64>) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        (!v.is_empty()).then(|| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1])
    };
    (at(0.25), at(0.5), at(0.75))
}

/// Everything the report needs besides the measurement.
pub struct Context<'a> {
    pub scenario: String,
    pub policy: String,
    pub topology: &'a Topology,
    /// the simulator's results, by tenant name
    pub sim: &'a [TenantResult],
    /// the bound per scenario tenant
    pub bounds: &'a [Option<f64>],
    /// requests scheduled per topology tenant
    pub scheduled: Vec<u64>,
    pub window_s: f64,
    pub span_s: f64,
    pub enforced: bool,
    pub load: Load,
}

/// Builds the report of `measured`.
pub fn build(ctx: &Context<'_>, measured: &Measured) -> TestbedReport {
    let topo = ctx.topology;
    let mut tenants = Vec::with_capacity(topo.tenants.len());
    for ((t, m), &requests) in topo
        .tenants
        .iter()
        .zip(&measured.tenants)
        .zip(&ctx.scheduled)
    {
        let sim = ctx.sim.iter().find(|r| r.name == t.name);
        let windows: Vec<WindowReport> = m
            .windows
            .iter()
            .map(|(&w, h)| WindowReport {
                start_s: f64::from(w) * ctx.window_s,
                requests: h.len(),
                slo_percentile_s: quantile(h, t.percentile),
            })
            .collect();
        let worst = windows
            .iter()
            .map(|w| w.slo_percentile_s)
            .fold(0.0, f64::max);
        let p999 = quantile(&m.latency, 99.9);
        let sim_p999 = sim.map_or(0.0, |r| r.p999_s);
        tenants.push(TenantReport {
            name: t.name.clone(),
            slo_s: t.slo_s,
            percentile: t.percentile,
            priority: t.priority,
            bound_s: ctx.bounds.get(t.scenario_index).copied().flatten(),
            client: topo.hosts[t.client].name.clone(),
            server: topo.hosts[t.server].name.clone(),
            requests,
            sent: m.sent,
            replies: m.replies,
            errors: m.errors,
            timeouts: m.timeouts,
            first_error: m.first_error.clone(),
            testbed_p50_s: quantile(&m.latency, 50.0),
            testbed_p99_s: quantile(&m.latency, 99.0),
            testbed_p999_s: p999,
            testbed_max_s: secs(m.latency.max()),
            testbed_worst_window_s: worst,
            sim_p50_s: sim.map_or(0.0, |r| r.p50_s),
            sim_p99_s: sim.map_or(0.0, |r| r.p99_s),
            sim_p999_s: sim_p999,
            sim_max_s: sim.map_or(0.0, |r| r.max_s),
            sim_worst_window_s: sim.map_or(0.0, TenantResult::worst_window_s),
            testbed_over_sim: (sim_p999 > 0.0).then(|| p999 / sim_p999),
            violated: worst > t.slo_s,
            sim_violated: sim.is_some_and(|r| !r.meets_slo),
            send_late_p99_s: quantile(&m.lateness, 99.0),
            send_late_max_s: secs(m.lateness.max()),
            connections: m.connections,
            max_in_flight: m.max_in_flight,
            windows,
        });
    }
    let mut ratios: Vec<f64> = tenants.iter().filter_map(|t| t.testbed_over_sim).collect();
    let (p25, median, p75) = quartiles(&mut ratios);
    let comparison = Comparison {
        tenants: ratios.len(),
        median,
        p25,
        p75,
        min: ratios.first().copied(),
        max: ratios.last().copied(),
        apart: tenants
            .iter()
            .filter(|t| {
                t.testbed_over_sim
                    .is_some_and(|r| !(0.5..=2.0).contains(&r))
            })
            .map(|t| t.name.clone())
            .collect(),
    };
    let cores = crate::capacity::Machine::detect().cores;
    let mut late: Vec<f64> = tenants.iter().map(|t| t.send_late_p99_s).collect();
    late.sort_by(f64::total_cmp);
    let machine = MachineReport {
        cores,
        wall_s: measured.wall_s,
        client_cpu_s: measured.client_cpu_s,
        server_cpu_s: measured.server_cpu_s,
        cpu_share: if measured.wall_s > 0.0 {
            (measured.client_cpu_s + measured.server_cpu_s) / (measured.wall_s * cores as f64)
        } else {
            0.0
        },
        send_late_p99_s: late
            .get(((0.99 * late.len() as f64).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0),
        send_late_max_s: tenants
            .iter()
            .map(|t| t.send_late_max_s)
            .fold(0.0, f64::max),
        offered_requests_per_s: ctx.load.requests_per_s,
        offered_bytes_per_s: ctx.load.bytes_per_s,
        estimated_cores: ctx.load.cores,
    };
    let aggressor = topo.aggressor.as_ref().map(|a| AggressorReport {
        kind: a.kind,
        target: topo.hosts[a.target].name.clone(),
        bytes: measured.aggressor_bytes,
        rate_bytes_per_s: if measured.wall_s > 0.0 {
            measured.aggressor_bytes as f64 / measured.wall_s / topo.scale
        } else {
            0.0
        },
    });
    TestbedReport {
        scenario: ctx.scenario.clone(),
        policy: ctx.policy.clone(),
        scale: topo.scale,
        enforced: ctx.enforced,
        aggressor,
        span_s: ctx.span_s,
        violated: tenants.iter().filter(|t| t.violated).count(),
        hosts: topo
            .hosts
            .iter()
            .zip(&measured.hosts)
            .map(|(h, c)| HostReport {
                name: h.name.clone(),
                counters: *c,
            })
            .collect(),
        tenants,
        comparison,
        machine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_are_nearest_rank() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(quartiles(&mut v), (Some(1.0), Some(2.0), Some(3.0)));
        let mut one = vec![7.0];
        assert_eq!(quartiles(&mut one), (Some(7.0), Some(7.0), Some(7.0)));
        assert_eq!(quartiles(&mut []), (None, None, None));
    }

    #[test]
    fn histogram_percentiles_are_within_their_resolution_above_the_exact_value() {
        let mut h = tailbound_dataplane::probe::stats::new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000).unwrap();
        }
        // nearest rank p99.9 of 1..=1000 ms is 999 ms, p50 500 ms, p100 the max
        let p = quantile(&h, 99.9);
        assert!((0.999..=0.999 * 1.001).contains(&p), "{p}");
        let p = quantile(&h, 50.0);
        assert!((0.5..=0.5 * 1.001).contains(&p), "{p}");
        assert!(quantile(&h, 100.0) >= 1.0);
        let mut few = tailbound_dataplane::probe::stats::new_histogram();
        for v in [3u64, 1, 2] {
            few.record(v * 1_000_000).unwrap();
        }
        // fewer samples than 1/ε: the maximum
        assert!(quantile(&few, 99.9) >= 3e-3);
    }
}
