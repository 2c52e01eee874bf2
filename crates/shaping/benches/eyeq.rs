//! CPU cost of EyeQ's per-packet work (`shaping::eyeq`), per 1500-byte packet:
//!
//! * `eyeq_limiter_bypassed`: `Sender::take` for a destination without a limit (EyeQ's
//!   common case: one hash look-up).
//! * `eyeq_limiter_limited`: `Sender::ready_at` + `Sender::take` for a limited destination,
//!   the clock advanced to each packet's ready time (every packet waits for its tokens), and
//!   the feedback that keeps it limited applied every `feedback_ns` (100 µs) as a receiver
//!   sends it (without it the limit lapses after `hold` and the loop measures a bypass).
//! * `eyeq_receiver_arrival_{2,64}_tenants`: `Receiver::on_arrival` on a congested 10 Gbit/s
//!   link (two tenants over their shares, feedback every 10 kB), 64 senders; the interval
//!   updates (every 200 µs) are amortized over the packets. With 64 tenants the interval's
//!   water-filling over all tenants is included.
//!
//! Criterion's throughput line reads "elem/s" = packets/s; the time per iteration is the
//! cost of one packet.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tailbound_shaping::eyeq::{EyeqConfig, Feedback, Receiver, Sender};

const TEN_G: f64 = 1.25e9;
const PACKET: u64 = 1500;

fn limiter(c: &mut Criterion) {
    let cfg = EyeqConfig::new(TEN_G);
    let mut g = c.benchmark_group("eyeq_limiter");
    g.throughput(Throughput::Elements(1));
    let mut bypassed = Sender::<(u32, u16)>::new(cfg).expect("valid config");
    bypassed
        .on_feedback(0, (1, 11211), Feedback::Limit { rate: 1e8 })
        .expect("valid rate");
    let mut now = 0u64;
    g.bench_function("eyeq_limiter_bypassed", |b| {
        b.iter(|| {
            now += 1_200;
            black_box(bypassed.take(now, black_box(&(2, 11211)), PACKET)).ok();
        })
    });
    let mut limited = Sender::<(u32, u16)>::new(cfg).expect("valid config");
    let dest = (1, 11211);
    limited
        .on_feedback(0, dest, Feedback::Limit { rate: 6e8 })
        .expect("valid rate");
    let mut now = 0u64;
    let mut fed = 0u64;
    g.bench_function("eyeq_limiter_limited", |b| {
        b.iter(|| {
            if now - fed >= cfg.feedback_ns {
                fed = now;
                limited
                    .on_feedback(now, dest, Feedback::Limit { rate: 6e8 })
                    .ok();
            }
            now = limited.ready_at(now, &dest, PACKET);
            black_box(limited.take(now, black_box(&dest), PACKET)).ok();
        })
    });
    g.finish();
}

fn receiver(c: &mut Criterion) {
    let cfg = EyeqConfig::new(TEN_G);
    let mut g = c.benchmark_group("eyeq_receiver");
    g.throughput(Throughput::Elements(1));
    for tenants in [2usize, 64] {
        let weights = vec![1.0; tenants];
        let mut rx = Receiver::<u32>::new(cfg, &weights, 0).expect("valid receiver");
        // 1.2 x the line rate, spread over 64 senders of the first two tenants
        let gap_ns = (PACKET as f64 / (1.2 * TEN_G) * 1e9) as u64;
        let mut now = 0u64;
        let mut k = 0u32;
        g.bench_function(format!("eyeq_receiver_arrival_{tenants}_tenants"), |b| {
            b.iter(|| {
                now += gap_ns;
                k = (k + 1) % 64;
                black_box(rx.on_arrival(now, k, (k % 2) as usize, PACKET)).ok();
            })
        });
    }
    g.finish();
}

criterion_group!(benches, limiter, receiver);
criterion_main!(benches);
