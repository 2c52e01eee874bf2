//! Seeded synthetic tenants on a client-server cluster, with both traffic models (a two-state
//! MMPP for the SNC analyses and a concave arrival curve for DNC), for tests and benches that
//! need many tenants without characterizing traces: each tenant runs between a client host
//! and a server host (requests client → server, responses server → client), at 50 to 400
//! requests per second of ~500-byte requests and 4 to 16 KB responses, bursting at 4× its
//! mean a tenth of the time, with an SLO of 2, 5, 10, 20 or 50 ms at the 99.9th percentile.

use tailbound_model::{
    ArrivalCurve, FlowModels, Mmpp, MmppState, Network, NetworkBuilder, NewTenant, SizeModel, Slo,
    Stage, TenantHosts,
};

/// The hosts of a synthetic cluster: `clients` client hosts and `servers` server hosts, every
/// link `link_bytes_per_s` each way.
#[derive(Debug, Clone, Copy)]
pub struct Cluster {
    pub clients: usize,
    pub servers: usize,
    pub link_bytes_per_s: f64,
}

/// A seeded generator (SplitMix64): the same seed gives the same tenants on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The SLOs tenants draw from [s].
pub const SLOS_S: [f64; 5] = [0.002, 0.005, 0.01, 0.02, 0.05];

/// A flow's models: `per_s` requests/s on average of exponential work with mean `mean`
/// [bytes], in a two-state MMPP (10 µs steps) that spends a tenth of the time at 4× the
/// base rate, and the arrival curve of a 20-request burst, then the burst rate for 10 ms, then
/// 1.5× the mean.
pub fn flow_models(per_s: f64, mean: f64) -> FlowModels {
    let step_s = 1e-5;
    // base rate b and burst rate 4b, a tenth of the time in the burst: mean 1.3 b
    let base = per_s / 1.3;
    let state = |rate_per_s: f64| MmppState {
        rate_per_s,
        arrival_prob: rate_per_s * step_s,
        sizes: SizeModel::Exponential { mean },
        intervals: 100,
        requests: (rate_per_s * 100.0) as u64,
        work: rate_per_s * 100.0 * mean,
    };
    // leave the burst after 10 ms on average, enter it after 90 ms
    let (out, into) = (step_s / 0.01, step_s / 0.09);
    let mmpp = Mmpp {
        step_s,
        interval_s: 1.0,
        states: vec![state(base), state(4.0 * base)],
        transition: vec![vec![1.0 - into, into], vec![out, 1.0 - out]],
    };
    let burst = 20.0 * mean;
    let peak = 4.0 * base * mean;
    let arrival = ArrivalCurve::new(
        vec![[0.0, burst], [0.01, burst + peak * 0.01]],
        1.5 * per_s * mean,
    )
    .expect("a concave curve: the peak rate is above the tail rate");
    FlowModels {
        mmpp: Some(mmpp),
        arrival: Some(arrival),
    }
}

/// Tenant `i`'s name, client, server, SLO and flows in `cluster`, drawn from `rng`.
pub fn tenant(rng: &mut Rng, cluster: Cluster, i: usize) -> (NewTenant, Vec<(Stage, FlowModels)>) {
    let client = rng.below(cluster.clients);
    let server = cluster.clients + rng.below(cluster.servers);
    let slo = Slo::new(SLOS_S[rng.below(SLOS_S.len())], 99.9).expect("a valid SLO");
    let per_s = 50.0 + 350.0 * rng.unit();
    let response = 4096.0 * (1.0 + 3.0 * rng.unit());
    let t = NewTenant {
        name: format!("t{i}"),
        slo,
        group: None,
        priority: None,
        hosts: Some(TenantHosts { client, server }),
    };
    let flows = vec![
        (Stage::NetIn, flow_models(per_s, 500.0)),
        (Stage::NetOut, flow_models(per_s, response)),
    ];
    (t, flows)
}

/// The hosts of `cluster`: clients `c0..`, then servers `s0..`.
pub fn hosts(cluster: Cluster) -> NetworkBuilder {
    let mut b = NetworkBuilder::new();
    for k in 0..cluster.clients {
        b.host(format!("c{k}"), cluster.link_bytes_per_s, None);
    }
    for k in 0..cluster.servers {
        b.host(format!("s{k}"), cluster.link_bytes_per_s, None);
    }
    b
}

/// `tenants` synthetic tenants on `cluster`, from `seed`.
pub fn network(cluster: Cluster, tenants: usize, seed: u64) -> Network {
    let mut rng = Rng::new(seed);
    let mut b = hosts(cluster);
    for i in 0..tenants {
        let (t, flows) = tenant(&mut rng, cluster, i);
        let ti = b.tenant(t);
        for (stage, models) in flows {
            b.flow(ti, stage, models)
                .expect("routable: hosts without storage, net flows only");
        }
    }
    b.build().expect("a valid synthetic network")
}
