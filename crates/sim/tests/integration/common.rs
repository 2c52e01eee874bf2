//! Small networks and seeded synthetic workloads shared by the topics.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use tailbound_model::{FlowModels, Network, NetworkBuilder, NewTenant, Op, Request, Slo, Stage};
use tailbound_sim::{SizeWork, TenantWorkload};

/// Queues named `q0, q1, …` of the given rates [bytes/s]; tenant `i` has one link flow per
/// entry of `paths[i]` (stages in order) and priority `prios[i]`.
pub fn network(rates: &[f64], paths: &[Vec<Vec<usize>>], prios: &[u32]) -> Network {
    let mut b = NetworkBuilder::new();
    for (i, &rate) in rates.iter().enumerate() {
        b.queue(format!("q{i}"), rate);
    }
    for (t, stages) in paths.iter().enumerate() {
        let tenant = b.tenant(NewTenant {
            priority: Some(prios[t]),
            ..NewTenant::new(format!("t{t}"), Slo::new(1.0, 99.9).unwrap())
        });
        for (s, path) in stages.iter().enumerate() {
            let name = format!("t{t}-s{s}");
            b.flow_on(
                tenant,
                name,
                Stage::NetIn,
                path.clone(),
                FlowModels::default(),
            );
        }
    }
    b.build().unwrap()
}

/// One workload per tenant over the same requests, work = size on every stage (links).
pub fn size_workloads<'a>(net: &Network, requests: &'a [Vec<Request>]) -> Vec<TenantWorkload<'a>> {
    net.tenants
        .iter()
        .zip(requests)
        .map(|(t, r)| TenantWorkload {
            requests: r,
            works: vec![&SizeWork; t.flows.len()],
        })
        .collect()
}

pub fn req(arrival_ns: u64, size_bytes: u64) -> Request {
    Request {
        arrival_ns,
        size_bytes,
        op: Op::Get,
    }
}

/// `n` Poisson arrivals of rate `lambda` [1/s]; sizes from `size` [bytes].
pub fn poisson(
    seed: u64,
    n: usize,
    lambda: f64,
    mut size: impl FnMut(&mut ChaCha8Rng) -> u64,
) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gap = Exp::new(lambda).unwrap();
    let mut t_s = 0.0;
    (0..n)
        .map(|_| {
            t_s += gap.sample(&mut rng);
            let s = size(&mut rng);
            req((t_s * 1e9).round() as u64, s)
        })
        .collect()
}

/// Exponential sizes of mean `mean` [bytes], at least 1.
pub fn exp_size(mean: f64) -> impl FnMut(&mut ChaCha8Rng) -> u64 {
    let d = Exp::new(1.0 / mean).unwrap();
    move |rng| (d.sample(rng).round() as u64).max(1)
}

pub fn mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let (s, n) = v
        .into_iter()
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    s / n as f64
}

/// |a/b − 1| ≤ tol, with a message.
pub fn close(what: &str, got: f64, want: f64, tol: f64) {
    let rel = (got / want - 1.0).abs();
    eprintln!("{what}: got {got:.6e}, want {want:.6e}, rel. error {rel:.4}");
    assert!(
        rel <= tol,
        "{what}: got {got}, want {want} (rel. error {rel:.4} > {tol})"
    );
}
