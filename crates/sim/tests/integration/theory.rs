//! Closed-form queueing results on one fluid queue (whole requests, non-preemptive):
//! M/M/1 mean and tail, M/D/1 mean (Pollaczek–Khinchine), and the two-class non-preemptive
//! priority queue (Cobham's formulas).

use crate::common::{close, exp_size, mean, network, poisson, size_workloads};
use tailbound_sim::{simulate, SimConfig, Transmission};

const RATE: f64 = 1e9; // [bytes/s]
const MEAN_SIZE: f64 = 1e6; // [bytes] → mean service 1 ms, μ = 1000/s

fn fluid() -> SimConfig {
    SimConfig {
        transmission: Transmission::Fluid,
        ..SimConfig::default()
    }
}

#[test]
fn mm1_mean_and_tail_match_closed_form() {
    let (lambda, mu) = (500.0, 1e3);
    let net = network(&[RATE], &[vec![vec![0]]], &[0]);
    let reqs = vec![poisson(1, 2_000_000, lambda, exp_size(MEAN_SIZE))];
    let r = simulate(&net, &size_workloads(&net, &reqs), &fluid()).unwrap();
    let t = &r.tenants[0];
    // sojourn T ~ Exp(μ − λ)
    close("M/M/1 mean sojourn", t.mean_s, 1.0 / (mu - lambda), 0.02);
    // P(T > t) = e^{−(μ−λ)t}: p99 = ln(100)/(μ−λ), p99.9 = ln(1000)/(μ−λ)
    close("M/M/1 p99", t.p99_s, 100f64.ln() / (mu - lambda), 0.03);
    close("M/M/1 p99.9", t.p999_s, 1000f64.ln() / (mu - lambda), 0.03);
}

#[test]
fn md1_mean_matches_pollaczek_khinchine() {
    let (lambda, mu) = (500.0, 1e3);
    let rho: f64 = lambda / mu;
    let net = network(&[RATE], &[vec![vec![0]]], &[0]);
    let reqs = vec![poisson(2, 400_000, lambda, |_| MEAN_SIZE as u64)];
    let r = simulate(&net, &size_workloads(&net, &reqs), &fluid()).unwrap();
    // W = ρ / (2μ(1 − ρ)), T = W + 1/μ
    let want = rho / (2.0 * mu * (1.0 - rho)) + 1.0 / mu;
    close("M/D/1 mean sojourn", r.tenants[0].mean_s, want, 0.02);
}

#[test]
fn two_priority_classes_match_non_preemptive_formulas() {
    let (l1, l2) = (250.0, 350.0);
    let es2 = 2.0 * (MEAN_SIZE / RATE).powi(2); // E[S²] of Exp with mean 1 ms
    let (rho1, rho2) = (l1 * MEAN_SIZE / RATE, l2 * MEAN_SIZE / RATE);
    let w0 = (l1 + l2) * es2 / 2.0;
    let w1 = w0 / (1.0 - rho1);
    let w2 = w0 / ((1.0 - rho1) * (1.0 - rho1 - rho2));

    let net = network(&[RATE], &[vec![vec![0]], vec![vec![0]]], &[0, 1]);
    let reqs = vec![
        poisson(3, 400_000, l1, exp_size(MEAN_SIZE)),
        poisson(4, 560_000, l2, exp_size(MEAN_SIZE)),
    ];
    let r = simulate(&net, &size_workloads(&net, &reqs), &fluid()).unwrap();
    // waiting = sojourn − own service, averaged
    let wait =
        |i: usize| r.tenants[i].mean_s - mean(reqs[i].iter().map(|q| q.size_bytes as f64 / RATE));
    close("class 1 mean wait", wait(0), w1, 0.03);
    close("class 2 mean wait", wait(1), w2, 0.03);
}
