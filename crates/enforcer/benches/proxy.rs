//! memcached direct vs through the enforcer proxy with unlimited buckets, side by side in one
//! run: for each value size, closed loop (throughput) and open loop at half the closed-loop
//! rate (latency), alternating direct and proxied runs over several rounds; medians of
//! throughput and p50/p99, the throughput lost and the latency added by the proxy.
//!
//! `cargo bench -p tailbound-enforcer --bench proxy` (or `bench/enforcer`). Settings from the
//! environment: ENFORCER_BENCH_SIZES (64,1024,16384,65536), ENFORCER_BENCH_ROUNDS (3),
//! ENFORCER_BENCH_SECONDS (2), ENFORCER_BENCH_CONNECTIONS (4), ENFORCER_BENCH_THREADS (proxy
//! worker threads, 1), ENFORCER_BENCH_JSON (a file for the results).

use std::sync::Arc;
use tailbound_allocation::VdcSpec;
use tailbound_dataplane::clock::MonotonicClock;
use tailbound_dataplane::memcache::load::{run_load, LoadMode, LoadResult, LoadSpec};
use tailbound_dataplane::memcache::{Memcached, MemcachedOptions};
use tailbound_enforcer::{
    Charger, FlowSetup, Identify, ListenerSpec, Proxy, ProxyConfig, ProxyFlow,
};

const SPEC: &str = r#"
[[servers]]
name = "s0"
link = 1e10
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e9
[[tenants]]
name = "A"
vms = [{ name = "a", server = "s0", link = 1e10 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 1e9 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
"#;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[derive(Debug, Default, serde::Serialize)]
struct Side {
    throughput_per_s: Vec<f64>,
    p50_us: Vec<f64>,
    p99_us: Vec<f64>,
    errors: u64,
}

impl Side {
    fn add(&mut self, r: &LoadResult) {
        self.throughput_per_s.push(r.throughput_per_s);
        let l = r.latency.as_ref();
        self.p50_us.push(l.map_or(f64::NAN, |l| l.p50_us));
        self.p99_us.push(l.map_or(f64::NAN, |l| l.p99_us));
        self.errors += r.errors;
    }
}

#[derive(Debug, serde::Serialize)]
struct Row {
    value_bytes: usize,
    mode: &'static str,
    direct: Side,
    proxied: Side,
    throughput_loss_pct: f64,
    added_p50_us: f64,
    added_p99_us: f64,
}

fn main() {
    // `cargo test --all-targets` runs this without `--bench`: one short smoke round at 1 KiB
    // (the bench still works), not minutes of load in the test suite.
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = if full {
        std::env::var("ENFORCER_BENCH_SIZES")
            .unwrap_or_else(|_| "64,1024,16384,65536".into())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    } else {
        vec![1024]
    };
    let rounds: usize = if full {
        env("ENFORCER_BENCH_ROUNDS", 3)
    } else {
        1
    };
    let seconds: f64 = if full {
        env("ENFORCER_BENCH_SECONDS", 2.0)
    } else {
        0.2
    };
    let connections: usize = env("ENFORCER_BENCH_CONNECTIONS", 4);
    let threads: usize = env("ENFORCER_BENCH_THREADS", 1);
    let mc = match Memcached::start(&MemcachedOptions {
        memory_mib: 256,
        ..MemcachedOptions::default()
    }) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("a runtime");
    let (_, dc) = VdcSpec::parse("bench.toml", SPEC).expect("the bench's VDC is valid");
    let dc = Arc::new(dc);
    let proxy = rt.block_on(async {
        let cfg = ProxyConfig::new(
            mc.addr(),
            vec![ListenerSpec {
                addr: "127.0.0.1:0".parse().expect("an address"),
                identify: Identify::Flow(0),
            }],
        );
        let flows = vec![ProxyFlow {
            setup: FlowSetup {
                name: "A/a-kv".into(),
                hops: dc.flows[0].hops.len(),
                priority: 0,
            },
            charger: Arc::new(Charger::new(dc.clone(), 0)),
        }];
        let p = Proxy::start(cfg, flows, Arc::new(MonotonicClock::new()))
            .await
            .expect("the proxy starts");
        p.set_unlimited(0).expect("flow 0");
        p
    });
    let via = proxy.local_addrs()[0];
    eprintln!(
        "memcached {} (pid {}), proxy {via} ({threads} worker thread(s)), {connections} connections, \
         {rounds} rounds of {seconds} s per side, 50% GETs",
        mc.addr(),
        mc.pid()
    );
    let mut rows = Vec::new();
    for &size in &sizes {
        for mode in ["closed", "open"] {
            let mut direct = Side::default();
            let mut proxied = Side::default();
            let mut open_rate = f64::NAN;
            for round in 0..rounds {
                let spec = |addr, m| LoadSpec {
                    connections,
                    mode: m,
                    duration_s: seconds,
                    warmup_s: 0.3,
                    seed: round as u64 + 1,
                    ..LoadSpec::closed(addr, size)
                };
                let m = if mode == "closed" {
                    LoadMode::Closed { depth: 1 }
                } else {
                    if open_rate.is_nan() {
                        // half of what the proxied closed loop managed in this run's rounds
                        let closed: &Row = rows.last().expect("the closed loop ran first");
                        open_rate = 0.5 * median(closed.proxied.throughput_per_s.clone());
                    }
                    LoadMode::Open {
                        rate_per_s: open_rate,
                    }
                };
                // alternate which side goes first
                let order = if round % 2 == 0 {
                    [false, true]
                } else {
                    [true, false]
                };
                for through_proxy in order {
                    let addr = if through_proxy { via } else { mc.addr() };
                    match run_load(&spec(addr, m)) {
                        Ok(r) => {
                            if through_proxy {
                                proxied.add(&r)
                            } else {
                                direct.add(&r)
                            }
                        }
                        Err(e) => eprintln!("{size} B {mode} round {round}: {e}"),
                    }
                }
            }
            let md = |v: &Vec<f64>| {
                if v.is_empty() {
                    f64::NAN
                } else {
                    median(v.clone())
                }
            };
            let row = Row {
                value_bytes: size,
                mode,
                throughput_loss_pct: 100.0
                    * (1.0 - md(&proxied.throughput_per_s) / md(&direct.throughput_per_s)),
                added_p50_us: md(&proxied.p50_us) - md(&direct.p50_us),
                added_p99_us: md(&proxied.p99_us) - md(&direct.p99_us),
                direct,
                proxied,
            };
            eprintln!(
                "{:>6} B {:<6} direct {:>9.0}/s p50 {:>7.1} p99 {:>8.1} µs | proxy {:>9.0}/s p50 {:>7.1} p99 {:>8.1} µs",
                size,
                mode,
                md(&row.direct.throughput_per_s),
                md(&row.direct.p50_us),
                md(&row.direct.p99_us),
                md(&row.proxied.throughput_per_s),
                md(&row.proxied.p50_us),
                md(&row.proxied.p99_us)
            );
            rows.push(row);
        }
    }
    println!(
        "{:>8}  {:<6}  {:>12}  {:>12}  {:>8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>10}  {:>10}",
        "value",
        "loop",
        "direct [/s]",
        "proxy [/s]",
        "loss [%]",
        "p50 dir",
        "p50 prx",
        "p99 dir",
        "p99 prx",
        "+p50 [µs]",
        "+p99 [µs]"
    );
    for r in &rows {
        let md = |v: &Vec<f64>| {
            if v.is_empty() {
                f64::NAN
            } else {
                median(v.clone())
            }
        };
        println!(
            "{:>8}  {:<6}  {:>12.0}  {:>12.0}  {:>8.2}  {:>9.1}  {:>9.1}  {:>9.1}  {:>9.1}  {:>10.1}  {:>10.1}",
            r.value_bytes,
            r.mode,
            md(&r.direct.throughput_per_s),
            md(&r.proxied.throughput_per_s),
            r.throughput_loss_pct,
            md(&r.direct.p50_us),
            md(&r.proxied.p50_us),
            md(&r.direct.p99_us),
            md(&r.proxied.p99_us),
            r.added_p50_us,
            r.added_p99_us
        );
        if r.direct.errors + r.proxied.errors > 0 {
            println!(
                "          errors: direct {}, proxy {}",
                r.direct.errors, r.proxied.errors
            );
        }
    }
    if let Ok(path) = std::env::var("ENFORCER_BENCH_JSON") {
        match serde_json::to_string_pretty(&rows) {
            Ok(j) => {
                if let Err(e) = std::fs::write(&path, j) {
                    eprintln!("cannot write {path}: {e}");
                }
            }
            Err(e) => eprintln!("cannot encode the results: {e}"),
        }
    }
    rt.block_on(proxy.shutdown());
    mc.stop();
}
