//! What this machine can run: a testbed whose replay needs more CPU or memory than the machine
//! has would measure the machine, not the scenario (late sends, slow servers), so it is refused
//! before anything is built, with the `--scale` that would fit.
//!
//! The replay's cost is dominated by requests (client task, memcached, kernel per exchange)
//! and by bytes (copies through veth pairs, the bridge and HTB, MTU-sized packets). The
//! budgets per core ([`Budget::MEASURED`]) come from the CPU time testbed runs reported
//! (`machine` in the report) on a 2-core machine; a testbed may use [`CPU_SHARE`] of the cores. Both rates fall linearly with the scale (the
//! replay is slowed down 1/scale times), so the largest scale that fits is the current one
//! times the ratio of the allowance to the need.

use crate::memcached::memory_mib;
use crate::schedule::Schedule;
use crate::topology::Topology;
use crate::TestbedError;
use serde::{Deserialize, Serialize};

/// The share of the machine's cores a testbed's load may take.
pub const CPU_SHARE: f64 = 0.7;

/// What one core replays per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// requests (client, server and kernel work of one exchange) [1/s]
    pub requests_per_s: f64,
    /// bytes through the links [bytes/s]
    pub bytes_per_s: f64,
}

impl Budget {
    /// Half of what testbed runs' client and server CPU time (the report's `machine`) came to
    /// on this project's 2-core machine (busy with other builds): about 60 µs per request and
    /// 8 ms per MB; the other half is left for the kernel's packet work, which neither is
    /// charged with.
    pub const MEASURED: Budget = Budget {
        requests_per_s: 8000.0,
        bytes_per_s: 60e6,
    };
}

/// The machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    /// `MemAvailable` of `/proc/meminfo` [bytes]
    pub memory_bytes: u64,
}

impl Machine {
    pub fn detect() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemAvailable:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(u64::MAX, |kb| kb * 1024);
        Machine {
            cores,
            memory_bytes,
        }
    }
}

/// The load a testbed puts on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// mean requests per second of the replay [1/s of real time]
    pub requests_per_s: f64,
    /// mean bytes per second of the replay and the aggressor [bytes/s of real time]
    pub bytes_per_s: f64,
    /// cores that takes by the budgets
    pub cores: f64,
    /// item memory of every memcached [MiB]
    pub memcached_mib: u64,
}

/// The load of `schedule` on `topology`.
pub fn load(topology: &Topology, schedule: &Schedule, budget: &Budget) -> Load {
    let real_s = schedule.replay_s(topology.scale).max(1e-3);
    let aggressor = topology
        .aggressor
        .as_ref()
        .map_or(0.0, |a| topology.hosts[a.host].rate_bytes_per_s);
    let requests_per_s = schedule.requests as f64 / real_s;
    let bytes_per_s = schedule.bytes as f64 / real_s + aggressor;
    let memcached_mib = (0..topology.hosts.len())
        .filter(|&h| topology.hosts[h].server)
        .map(|h| {
            let sizes = schedule.sizes_on(topology, h);
            memory_mib(sizes.iter().map(|&s| u64::from(s)).sum(), sizes.len())
        })
        .sum();
    Load {
        requests_per_s,
        bytes_per_s,
        cores: requests_per_s / budget.requests_per_s + bytes_per_s / budget.bytes_per_s,
        memcached_mib,
    }
}

/// Refuses a testbed this machine cannot run (see the module docs); returns its load.
pub fn check(
    topology: &Topology,
    schedule: &Schedule,
    machine: &Machine,
    budget: &Budget,
) -> Result<Load, TestbedError> {
    let l = load(topology, schedule, budget);
    let allowed = machine.cores as f64 * CPU_SHARE;
    if l.cores > allowed {
        return Err(TestbedError::Capacity(format!(
            "replaying {} requests in {:.0} s at scale {} offers {:.0} requests/s and {:.1} MB/s, \
             which takes about {:.1} cores ({:.0} requests/s and {:.0} MB/s per core); this \
             machine has {} cores and a testbed may use {:.0} % of them: use --scale {:.3} or less \
             (or --duration to replay less)",
            schedule.requests,
            schedule.replay_s(topology.scale),
            topology.scale,
            l.requests_per_s,
            l.bytes_per_s / 1e6,
            l.cores,
            budget.requests_per_s,
            budget.bytes_per_s / 1e6,
            machine.cores,
            CPU_SHARE * 100.0,
            topology.scale * allowed / l.cores
        )));
    }
    let memory = l.memcached_mib.saturating_mul(1 << 20);
    if memory > machine.memory_bytes / 2 {
        return Err(TestbedError::Capacity(format!(
            "the memcached servers need {} MiB of item memory, more than half of the {} MiB \
             this machine has available; use fewer server hosts or tenants",
            l.memcached_mib,
            machine.memory_bytes >> 20
        )));
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Host, Tenant};
    use std::net::{Ipv4Addr, SocketAddr};
    use tailbound_dataplane::replay::ReplayRequest;

    fn case(scale: f64, requests: u64, size: u32) -> (Topology, Schedule) {
        let host = |server: bool| Host {
            name: "h".into(),
            label: "h".into(),
            ip: Ipv4Addr::LOCALHOST,
            rate_bytes_per_s: 1e6,
            server,
            client: !server,
        };
        let topology = Topology {
            policy: "test".into(),
            excess: tailbound_model::Excess::Wait,
            scale,
            port: 1,
            hosts: vec![host(false), host(true)],
            tenants: vec![Tenant {
                name: "t".into(),
                scenario_index: 0,
                client: 0,
                server: 1,
                address: Ipv4Addr::LOCALHOST,
                server_addr: SocketAddr::from(([127, 0, 0, 1], 1)),
                priority: 0,
                tos: 0,
                slo_s: 0.01,
                percentile: 99.9,
                limits: Vec::new(),
            }],
            aggressor: None,
        };
        // `requests` over 10 s of trace time
        let reqs: Vec<ReplayRequest> = (0..requests)
            .map(|i| ReplayRequest {
                due_ns: 0,
                window: 0,
                read: true,
                size_bytes: size + (i % 2) as u32,
            })
            .collect();
        let schedule = Schedule {
            tenants: vec![reqs],
            replayed: vec![Vec::new()],
            origin_ns: 0,
            span_s: 10.0,
            requests,
            bytes: requests * u64::from(size),
        };
        (topology, schedule)
    }

    const TWO: Machine = Machine {
        cores: 2,
        memory_bytes: 16 << 30,
    };

    #[test]
    fn a_load_beyond_the_cores_is_refused_with_a_scale_that_fits() {
        let budget = Budget {
            requests_per_s: 1000.0,
            bytes_per_s: 1e6,
        };
        // 20 000 requests in 10 s: 2000/s → 2 cores by requests alone, more than 1.4 allowed
        let (t, s) = case(1.0, 20_000, 100);
        let e = check(&t, &s, &TWO, &budget).unwrap_err().to_string();
        assert!(e.contains("use --scale"), "{e}");
        let suggested: f64 = e
            .split("use --scale ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        let (t, s) = case(suggested, 20_000, 100);
        let l = check(&t, &s, &TWO, &budget).unwrap();
        assert!(l.cores <= 2.0 * CPU_SHARE + 1e-9, "{l:?}");
        // slowed down 1/scale times, the same trace fits
        assert!(l.requests_per_s < 2000.0);
    }

    #[test]
    fn servers_needing_more_memory_than_the_machine_has_are_refused() {
        let (t, s) = case(1.0, 10, 1 << 20);
        let small = Machine {
            cores: 2,
            memory_bytes: 64 << 20,
        };
        let e = check(&t, &s, &small, &Budget::MEASURED)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MiB of item memory"), "{e}");
        assert!(check(&t, &s, &TWO, &Budget::MEASURED).is_ok());
    }
}
