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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Host, Tenant};
    use std::net::{Ipv4Addr, SocketAddr};
    use tailbound_model::Op;

    fn topology(scale: f64) -> Topology {
        let host = |name: &str, server: bool| Host {
            name: name.into(),
            label: "h".into(),
            ip: Ipv4Addr::LOCALHOST,
            rate_bytes_per_s: 1e6,
            server,
            client: !server,
        };
        let tenant = |name: &str, scenario_index| Tenant {
            name: name.into(),
            scenario_index,
            client: 0,
            server: 1,
            address: Ipv4Addr::LOCALHOST,
            server_addr: SocketAddr::from(([127, 0, 0, 1], 1)),
            priority: 0,
            tos: 0xfc,
            slo_s: 0.01,
            percentile: 99.9,
            limits: Vec::new(),
        };
        Topology {
            policy: "test".into(),
            excess: tailbound_model::Excess::Wait,
            scale,
            port: 1,
            hosts: vec![host("c", false), host("s", true)],
            // scenario tenant 1 is not admitted
            tenants: vec![tenant("a", 0), tenant("b", 2)],
            aggressor: None,
        }
    }

    fn req(ms: u64, size: u64, op: Op) -> Request {
        Request {
            arrival_ns: ms * 1_000_000,
            size_bytes: size,
            op,
        }
    }

    #[test]
    fn due_times_are_slowed_by_the_scale_from_the_first_arrival_and_windows_counted_from_it() {
        let requests = vec![
            vec![
                req(1000, 100, Op::Get),
                req(1500, 200, Op::Put),
                req(4000, 100, Op::Get),
            ],
            vec![req(0, 5, Op::Get)],
            vec![req(1200, 300, Op::DiskRead)],
        ];
        let s = Schedule::build(&topology(0.5), &requests, 2.0, None).unwrap();
        // origin: the first arrival of a running tenant (1 s; tenant 1 does not run)
        assert_eq!(s.origin_ns, 1_000_000_000);
        let due: Vec<u64> = s.tenants[0].iter().map(|r| r.due_ns).collect();
        assert_eq!(due, [0, 1_000_000_000, 6_000_000_000]);
        let windows: Vec<u32> = s.tenants[0].iter().map(|r| r.window).collect();
        assert_eq!(windows, [0, 0, 1]);
        assert_eq!(
            s.tenants[0].iter().map(|r| r.read).collect::<Vec<_>>(),
            [true, false, true]
        );
        assert_eq!(s.tenants[1][0].due_ns, 400_000_000);
        assert_eq!((s.requests, s.bytes), (4, 700));
        assert!((s.span_s - 3.0).abs() < 1e-12);
        assert!((s.replay_s(0.5) - 6.0).abs() < 1e-12);
        assert!(s.replayed[1].is_empty(), "not running, not simulated");
        assert_eq!(s.sizes_on(&topology(0.5), 1), [100, 200, 300]);
    }

    #[test]
    fn a_duration_keeps_the_same_requests_for_the_testbed_and_the_simulator() {
        let requests = vec![
            vec![req(1000, 100, Op::Get), req(2500, 200, Op::Put)],
            vec![],
            vec![req(1200, 300, Op::Get), req(1900, 300, Op::Get)],
        ];
        let s = Schedule::build(&topology(1.0), &requests, 180.0, Some(1.0)).unwrap();
        assert_eq!(s.tenants[0].len(), 1);
        assert_eq!(s.tenants[1].len(), 2);
        assert_eq!(s.replayed[0].len(), 1);
        assert_eq!(s.replayed[2].len(), 2);
    }

    #[test]
    fn values_above_memcacheds_limit_and_empty_replays_are_refused() {
        let big = vec![
            vec![req(0, 2 << 20, Op::Get)],
            vec![],
            vec![req(0, 1, Op::Get)],
        ];
        let e = Schedule::build(&topology(1.0), &big, 180.0, None).unwrap_err();
        assert!(e.to_string().contains("at most 1048576 bytes"), "{e}");
        let none = vec![vec![], vec![], vec![]];
        assert!(Schedule::build(&topology(1.0), &none, 180.0, None).is_err());
        let one = vec![vec![req(0, 1, Op::Get)], vec![], vec![]];
        for w in [0.0, f64::NAN] {
            assert!(Schedule::build(&topology(1.0), &one, w, None).is_err());
        }
        assert!(Schedule::build(&topology(1.0), &one, 180.0, Some(0.0)).is_err());
    }
}
