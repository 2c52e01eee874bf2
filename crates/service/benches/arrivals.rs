//! Decision latency of the service's engine as tenants arrive one by one (issue 24's
//! `bench/service`): `TENANTS` synthetic MMPP tenants (default 10 000,
//! `tailbound_testdata::synthetic`: SNC-Meister, SLOs of 2 to 50 ms) arrive on `SERVERS`
//! server hosts (default 1 000) from as many client hosts, 1 Gbit/s links; each arrival is
//! proposed and applied ([`Engine::propose_arrival`], [`Engine::apply`]: everything but the
//! database commit and HTTP) and timed. At 1 000 tenants and at `TENANTS` it prints the median
//! and p99 of the last 10 % of those arrivals, and of the CPU time the decisions ran (on a
//! shared machine the wall time includes other processes' turns on the core); then samples `FULL_SAMPLES` what-if arrivals (default 10; 0: none, e.g. to profile the arrivals
//! alone) on the same state both incrementally and re-bounding every tenant at the
//! newcomer's level or below ([`Rebound::Full`]), side by side: full re-bounding is too slow
//! to run for every arrival. Bounded in count; no network, no files.
//!
//! `cargo bench -p tailbound-service --bench arrivals` (bench/service runs it).

use std::time::Instant;
use tailbound_admission::{Policy, Rebound};
use tailbound_service::api::{DecisionKind, NewHost, Quantity};
use tailbound_service::engine::{Candidate, Engine, TenantRecord};
use tailbound_testdata::synthetic::{self, Cluster, Rng};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn candidate(rng: &mut Rng, cluster: Cluster, i: usize) -> Candidate {
    let (t, flows) = synthetic::tenant(rng, cluster, i);
    let hosts = t.hosts.expect("synthetic tenants have hosts");
    Candidate {
        record: TenantRecord {
            name: t.name,
            client: format!("c{}", hosts.client),
            server: format!("s{}", hosts.server - cluster.clients),
            placed: false,
            slo: t.slo,
            storage: false,
            depends_on: Vec::new(),
            flows,
            group: None,
            admitted_bound_s: None,
        },
        workload: None,
    }
}

/// Median and p99 [ms] of `v` [s].
fn quantiles(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |q: f64| s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)] * 1e3;
    (at(0.5), at(0.99))
}

fn row(tenants: usize, mode: &str, how: &str, v: &[f64]) {
    let (med, p99) = quantiles(v);
    println!(
        "{tenants:>8} {mode:<12} {how:<26} {:>9} {med:>10.3} {p99:>10.3}",
        v.len()
    );
}

/// The CPU time this thread has run [s] (`CLOCK_THREAD_CPUTIME_ID`), `None` if unavailable:
/// on a shared machine a decision's wall time includes the time other processes held the
/// core, its CPU time does not.
fn thread_cpu_s() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// `samples` what-if arrivals of the next tenants on `e`'s state [s each].
fn what_ifs(e: &mut Engine, cands: &[Candidate]) -> Vec<f64> {
    cands
        .iter()
        .map(|c| {
            let t = Instant::now();
            e.propose_arrival(c, DecisionKind::WhatIf, "", 0)
                .expect("a what-if decision");
            t.elapsed().as_secs_f64()
        })
        .collect()
}

fn main() {
    let tenants = env("TENANTS", 10_000);
    let servers = env("SERVERS", 1_000);
    let samples = env("FULL_SAMPLES", 10);
    let cluster = Cluster {
        clients: servers,
        servers,
        link_bytes_per_s: 125e6,
    };
    let mut e = Engine::new(Policy::SncMeister).expect("an engine");
    for name in (0..servers).flat_map(|k| [format!("c{k}"), format!("s{k}")]) {
        let p = e
            .propose_host(NewHost {
                name,
                link: Quantity::Number(cluster.link_bytes_per_s),
                storage: None,
            })
            .expect("a new host");
        e.apply(p).expect("a host added");
    }
    let checkpoints: Vec<usize> = [1_000, tenants]
        .into_iter()
        .filter(|&n| n <= tenants)
        .collect();
    println!(
        "{tenants} synthetic tenants arriving on {servers} servers ({servers} clients, 1 Gbit/s), snc-meister, release build"
    );
    println!(
        "{:>8} {:<12} {:<26} {:>9} {:>10} {:>10}",
        "tenants", "re-bound", "decisions", "count", "median ms", "p99 ms"
    );
    let mut rng = Rng::new(1);
    let mut latencies = Vec::with_capacity(tenants);
    let mut cpu = Vec::with_capacity(tenants);
    let mut admitted = 0;
    let started = Instant::now();
    for i in 0..tenants {
        let c = candidate(&mut rng, cluster, i);
        let c0 = thread_cpu_s();
        let t = Instant::now();
        let p = e
            .propose_arrival(&c, DecisionKind::Arrive, "", 0)
            .expect("a decision");
        admitted += usize::from(p.decision.admitted);
        e.apply(p).expect("applied");
        latencies.push(t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (c0, thread_cpu_s()) {
            cpu.push(b - a);
        }
        if (i + 1) % 1000 == 0 {
            eprintln!(
                "{} arrivals, {admitted} admitted, {:.0} s",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
        if checkpoints.contains(&(i + 1)) {
            let n = i + 1;
            let window = &latencies[n - n / 10..];
            row(
                n,
                "incremental",
                &format!("arrivals {}..{n}", n - n / 10 + 1),
                window,
            );
            if cpu.len() == latencies.len() {
                row(
                    n,
                    "incremental",
                    &format!("CPU time of {}..{n}", n - n / 10 + 1),
                    &cpu[n - n / 10..],
                );
            }
            if samples == 0 {
                continue;
            }
            // the next tenants, on a copy of the generator: the run goes on unchanged
            let mut peek = rng.clone();
            let cands: Vec<Candidate> = (0..samples)
                .map(|k| candidate(&mut peek, cluster, tenants + k))
                .collect();
            let inc = what_ifs(&mut e, &cands);
            e = e.with_rebound(Rebound::Full);
            let full = what_ifs(&mut e, &cands);
            e = e.with_rebound(Rebound::Neighbourhood);
            row(n, "incremental", "what-ifs (sampled)", &inc);
            row(n, "full", "what-ifs (sampled)", &full);
            let (mi, pi) = quantiles(&inc);
            let (mf, pf) = quantiles(&full);
            println!(
                "{n:>8} full ÷ incremental: median {:.1}×, p99 {:.1}×; admitted so far {admitted}",
                mf / mi,
                pf / pi
            );
        }
    }
    let (_, p99) = quantiles(&latencies[tenants - tenants / 10..]);
    println!(
        "goal p99 < 10 ms per decision at {tenants} tenants: {} ({p99:.3} ms)",
        if p99 < 10.0 { "met" } else { "not met" }
    );
}
