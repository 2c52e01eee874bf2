//! When each request of each tenant is due on the testbed, and which requests the replay (and
//! the simulator it is compared with) uses. No I/O.
//!
//! Time origin: the earliest arrival of any running tenant (the simulator counts its SLO
//! windows from the same instant). A request arriving at trace time `a` is due `(a − origin)
//! / scale` after the replay's start and counts in window `⌊(a − origin) / window⌋`. With a
//! duration D, only requests arriving before `origin + D` are replayed, by both.

use crate::topology::Topology;
use crate::TestbedError;
use tailbound_dataplane::replay::{ReplayRequest, MAX_VALUE_BYTES};
use tailbound_model::Request;

/// The testbed's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// per tenant of the topology, in its order
    pub tenants: Vec<Vec<ReplayRequest>>,
    /// the replayed requests per scenario tenant (empty for those not running): what the
    /// simulator replays for the comparison
    pub replayed: Vec<Vec<Request>>,
    /// trace time of the first arrival [ns]
    pub origin_ns: u64,
    /// trace time from the origin to the last arrival [s]
    pub span_s: f64,
    /// requests and bytes over all tenants
    pub requests: u64,
    pub bytes: u64,
}

impl Schedule {
    /// The schedule of `topology`'s tenants over `requests` (one list per scenario tenant,
    /// sorted by arrival), windows of `window_s` and at most `duration_s` of trace time.
    pub fn build(
        topology: &Topology,
        requests: &[Vec<Request>],
        window_s: f64,
        duration_s: Option<f64>,
    ) -> Result<Schedule, TestbedError> {
        if !(window_s.is_finite() && window_s > 0.0) {
            return Err(TestbedError::Input(format!(
                "SLO window {window_s} s; use a positive duration (e.g. 180s)"
            )));
        }
        if let Some(d) = duration_s {
            if !(d.is_finite() && d > 0.0) {
                return Err(TestbedError::Input(format!(
                    "duration {d} s; use a positive duration of trace time (e.g. --duration 60s)"
                )));
            }
        }
        let mut replayed = vec![Vec::new(); requests.len()];
        for t in &topology.tenants {
            let Some(reqs) = requests.get(t.scenario_index) else {
                return Err(TestbedError::Input(format!(
                    "no requests for tenant {:?} (scenario tenant {})",
                    t.name, t.scenario_index
                )));
            };
            if let Some(r) = reqs
                .iter()
                .find(|r| r.size_bytes > u64::from(MAX_VALUE_BYTES))
            {
                return Err(TestbedError::Input(format!(
                    "tenant {:?} has a request of {} bytes; memcached values on the testbed \
                     are at most {MAX_VALUE_BYTES} bytes",
                    t.name, r.size_bytes
                )));
            }
            replayed[t.scenario_index] = reqs.clone();
        }
        let origin_ns = topology
            .tenants
            .iter()
            .filter_map(|t| replayed[t.scenario_index].first())
            .map(|r| r.arrival_ns)
            .min()
            .unwrap_or(0);
        if let Some(d) = duration_s {
            let end = origin_ns.saturating_add((d * 1e9) as u64);
            for reqs in &mut replayed {
                reqs.retain(|r| r.arrival_ns < end);
            }
        }
        let window_ns = ((window_s * 1e9) as u64).max(1);
        let mut tenants = Vec::with_capacity(topology.tenants.len());
        let (mut count, mut bytes, mut last) = (0u64, 0u64, origin_ns);
        for t in &topology.tenants {
            let reqs = &replayed[t.scenario_index];
            if reqs.windows(2).any(|w| w[0].arrival_ns > w[1].arrival_ns) {
                return Err(TestbedError::Input(format!(
                    "tenant {:?}: requests are not sorted by arrival",
                    t.name
                )));
            }
            tenants.push(
                reqs.iter()
                    .map(|r| {
                        let since = r.arrival_ns - origin_ns;
                        ReplayRequest {
                            due_ns: (since as f64 / topology.scale).round() as u64,
                            window: u32::try_from(since / window_ns).unwrap_or(u32::MAX),
                            read: r.op.is_read(),
                            size_bytes: r.size_bytes as u32,
                        }
                    })
                    .collect(),
            );
            count += reqs.len() as u64;
            bytes += reqs.iter().map(|r| r.size_bytes).sum::<u64>();
            last = last.max(reqs.last().map_or(origin_ns, |r| r.arrival_ns));
        }
        if count == 0 {
            return Err(TestbedError::Input(
                "the admitted tenants have no requests to replay (in the chosen duration)".into(),
            ));
        }
        Ok(Schedule {
            tenants,
            replayed,
            origin_ns,
            span_s: (last - origin_ns) as f64 * 1e-9,
            requests: count,
            bytes,
        })
    }

    /// The distinct value sizes the tenants of server host `h` read or write.
    pub fn sizes_on(&self, topology: &Topology, h: usize) -> Vec<u32> {
        let mut sizes: Vec<u32> = topology
            .tenants
            .iter()
            .zip(&self.tenants)
            .filter(|(t, _)| t.server == h)
            .flat_map(|(_, reqs)| reqs.iter().map(|r| r.size_bytes))
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// How long the replay takes on the testbed, from its start to the last request due [s of
    /// real time].
    pub fn replay_s(&self, scale: f64) -> f64 {
        self.span_s / scale
    }
}
