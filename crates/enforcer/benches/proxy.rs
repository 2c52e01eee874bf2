//! memcached direct, through a floor relay and through the enforcer proxy with unlimited
//! buckets, side by side in one run: for each value size, closed loop (throughput) and open
//! loop at half the proxied closed-loop rate (latency), the sides interleaved over several
//! rounds (each round starts with another side); medians of throughput and p50/p99, and the
//! throughput lost and latency added by the floor and by the proxy; and the CPU per request
//! of this process (the load's clients and the relay) and of memcached, from `/proc`.
//!
//! The floor is the leanest user-space relay this file can write, with no logic at all: accept,
//! connect to memcached, copy bytes both ways. What it loses is what any user-space relay pays
//! on this machine (a second loopback hop, its wake-ups on shared cores); the proxy's own cost
//! is what it loses beyond the floor. It lives here only, never in the library.
//!
//! `cargo bench -p tailbound-enforcer --bench proxy` (or `bench/enforcer`). Settings from the
//! environment: ENFORCER_BENCH_SIZES (64,1024,16384,65536), ENFORCER_BENCH_ROUNDS (3),
//! ENFORCER_BENCH_SECONDS (2), ENFORCER_BENCH_CONNECTIONS (4), ENFORCER_BENCH_THREADS (proxy
//! worker threads, 1; 0 for tokio's current-thread runtime), ENFORCER_BENCH_JSON (a file for the
//! results).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
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

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The floor: one accepting thread, and per connection one thread per direction copying with
/// blocking reads and writes (leaner here than `tokio::io::copy_bidirectional` on the proxy's
/// runtime, which lost as much as the proxy).
struct Floor {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

/// Copies `from` to `to` until `from` ends, then ends `to`'s sending side.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

impl Floor {
    fn start(backend: SocketAddr) -> std::io::Result<Floor> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let accept = std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(backend) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                std::thread::spawn(move || pump(client, server));
                std::thread::spawn(move || pump(s2, c2));
            }
        });
        Ok(Floor {
            addr,
            stop,
            accept: Some(accept),
        })
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wake the accepting thread
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

/// CPU time a process has used so far [s]: utime + stime of `/proc/<pid>/stat`, in ticks of
/// USER_HZ (100 on Linux).
fn cpu_s(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // after the command in parentheses: field 3 (state) onwards; utime and stime are 14, 15
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return f64::NAN;
    };
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    if f.len() == 2 {
        (f[0] + f[1]) / 100.0
    } else {
        f64::NAN
    }
}

#[derive(Debug, Default, serde::Serialize)]
struct Side {
    throughput_per_s: Vec<f64>,
    p50_us: Vec<f64>,
    p99_us: Vec<f64>,
    /// CPU of this process (the load's clients, and the floor or the proxy) per request [µs]
    bench_cpu_us: Vec<f64>,
    /// memcached's CPU per request [µs]
    memcached_cpu_us: Vec<f64>,
    errors: u64,
}

impl Side {
    /// `cpu`: this process's and memcached's CPU over the whole run [s], warm-up included
    fn add(&mut self, r: &LoadResult, spec: &LoadSpec, cpu: (f64, f64)) {
        self.throughput_per_s.push(r.throughput_per_s);
        let l = r.latency.as_ref();
        self.p50_us.push(l.map_or(f64::NAN, |l| l.p50_us));
        self.p99_us.push(l.map_or(f64::NAN, |l| l.p99_us));
        // the warm-up ran at the measured rate, near enough
        let requests = r.throughput_per_s * (spec.duration_s + spec.warmup_s);
        self.bench_cpu_us.push(1e6 * cpu.0 / requests);
        self.memcached_cpu_us.push(1e6 * cpu.1 / requests);
        self.errors += r.errors;
    }
}

/// What a relay costs against going direct (medians over the rounds).
#[derive(Debug, serde::Serialize)]
struct Added {
    throughput_loss_pct: f64,
    added_p50_us: f64,
    added_p99_us: f64,
}

impl Added {
    fn of(relay: &Side, direct: &Side) -> Added {
        Added {
            throughput_loss_pct: 100.0
                * (1.0 - median(&relay.throughput_per_s) / median(&direct.throughput_per_s)),
            added_p50_us: median(&relay.p50_us) - median(&direct.p50_us),
            added_p99_us: median(&relay.p99_us) - median(&direct.p99_us),
        }
    }
}

#[derive(Debug, serde::Serialize)]
struct Row {
    value_bytes: usize,
    mode: &'static str,
    direct: Side,
    floor: Side,
    proxied: Side,
    floor_added: Added,
    proxy_added: Added,
}

const SIDES: [&str; 3] = ["direct", "floor", "proxy"];

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
    // the proxy's runtime runs on a thread of its own (a current-thread runtime runs its
    // tasks on the thread that blocks on it)
    let (addrs_tx, addrs_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let backend = mc.addr();
    let mc_pid = mc.pid().to_string();
    let runtime = std::thread::spawn(move || {
        let rt = if threads == 0 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()
        }
        .expect("a runtime");
        rt.block_on(async {
            let (_, dc) = VdcSpec::parse("bench.toml", SPEC).expect("the bench's VDC is valid");
            let dc = Arc::new(dc);
            let cfg = ProxyConfig::new(
                backend,
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
            let proxy = Proxy::start(cfg, flows, Arc::new(MonotonicClock::new()))
                .await
                .expect("the proxy starts");
            proxy.set_unlimited(0).expect("flow 0");
            let _ = addrs_tx.send(proxy.local_addrs()[0]);
            let _ = stop_rx.await;
            proxy.shutdown().await;
        });
    });
    let via = addrs_rx.recv().expect("the proxy's runtime starts");
    let relay = Floor::start(backend).expect("the floor starts");
    let runtime_name = if threads == 0 {
        "current-thread runtime".to_string()
    } else {
        format!("{threads} worker thread(s)")
    };
    eprintln!(
        "memcached {backend} (pid {}), floor {} (a thread per direction), proxy {via} \
         ({runtime_name}), {connections} connections, {rounds} rounds of {seconds} s per side, \
         50% GETs",
        mc.pid(),
        relay.addr
    );
    let mut rows: Vec<Row> = Vec::new();
    for &size in &sizes {
        for mode in ["closed", "open"] {
            let mut sides: [Side; 3] = Default::default();
            let mut open_rate = f64::NAN;
            for round in 0..rounds {
                let m = if mode == "closed" {
                    LoadMode::Closed { depth: 1 }
                } else {
                    if open_rate.is_nan() {
                        // half of what the proxied closed loop managed in this run's rounds
                        let closed: &Row = rows.last().expect("the closed loop ran first");
                        open_rate = 0.5 * median(&closed.proxied.throughput_per_s);
                    }
                    LoadMode::Open {
                        rate_per_s: open_rate,
                    }
                };
                // each round starts with another side
                for k in 0..SIDES.len() {
                    let side = (round + k) % SIDES.len();
                    let addr = [backend, relay.addr, via][side];
                    let spec = LoadSpec {
                        connections,
                        mode: m,
                        duration_s: seconds,
                        warmup_s: 0.3,
                        seed: round as u64 + 1,
                        ..LoadSpec::closed(addr, size)
                    };
                    let before = (cpu_s("self"), cpu_s(&mc_pid));
                    let r = run_load(&spec);
                    let cpu = (cpu_s("self") - before.0, cpu_s(&mc_pid) - before.1);
                    match r {
                        Ok(r) => sides[side].add(&r, &spec, cpu),
                        Err(e) => eprintln!("{size} B {mode} {} round {round}: {e}", SIDES[side]),
                    }
                }
            }
            let [direct, floor, proxied] = sides;
            let row = Row {
                value_bytes: size,
                mode,
                floor_added: Added::of(&floor, &direct),
                proxy_added: Added::of(&proxied, &direct),
                direct,
                floor,
                proxied,
            };
            eprintln!(
                "{:>6} B {:<6} direct {:>7.0}/s p50 {:>6.1} p99 {:>7.1} µs | floor {:>7.0}/s p50 {:>6.1} p99 {:>7.1} µs | proxy {:>7.0}/s p50 {:>6.1} p99 {:>7.1} µs",
                size,
                mode,
                median(&row.direct.throughput_per_s),
                median(&row.direct.p50_us),
                median(&row.direct.p99_us),
                median(&row.floor.throughput_per_s),
                median(&row.floor.p50_us),
                median(&row.floor.p99_us),
                median(&row.proxied.throughput_per_s),
                median(&row.proxied.p50_us),
                median(&row.proxied.p99_us),
            );
            rows.push(row);
        }
    }
    println!(
        "{:>6}  {:<6}  {:>8}  {:>8}  {:>8}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}",
        "value",
        "loop",
        "dir [/s]",
        "flr [/s]",
        "prx [/s]",
        "flr -%",
        "prx -%",
        "p50 dir",
        "p50 flr",
        "p50 prx",
        "p99 dir",
        "p99 flr",
        "p99 prx",
        "flr+p50",
        "prx+p50",
        "flr+p99",
        "prx+p99",
    );
    for r in &rows {
        println!(
            "{:>6}  {:<6}  {:>8.0}  {:>8.0}  {:>8.0}  {:>7.2}  {:>7.2}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}",
            r.value_bytes,
            r.mode,
            median(&r.direct.throughput_per_s),
            median(&r.floor.throughput_per_s),
            median(&r.proxied.throughput_per_s),
            r.floor_added.throughput_loss_pct,
            r.proxy_added.throughput_loss_pct,
            median(&r.direct.p50_us),
            median(&r.floor.p50_us),
            median(&r.proxied.p50_us),
            median(&r.direct.p99_us),
            median(&r.floor.p99_us),
            median(&r.proxied.p99_us),
            r.floor_added.added_p50_us,
            r.proxy_added.added_p50_us,
            r.floor_added.added_p99_us,
            r.proxy_added.added_p99_us,
        );
        if r.direct.errors + r.floor.errors + r.proxied.errors > 0 {
            println!(
                "        errors: direct {}, floor {}, proxy {}",
                r.direct.errors, r.floor.errors, r.proxied.errors
            );
        }
    }
    println!("(throughput [requests/s], latency [µs]; -%: throughput lost against direct; +p50/+p99: added against direct)");
    println!(
        "{:>6}  {:<6}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}",
        "value",
        "loop",
        "bch dir",
        "bch flr",
        "bch prx",
        "mc dir",
        "mc flr",
        "mc prx",
        "flr +",
        "prx +"
    );
    for r in &rows {
        let total = |s: &Side| median(&s.bench_cpu_us) + median(&s.memcached_cpu_us);
        println!(
            "{:>6}  {:<6}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}  {:>8.1}",
            r.value_bytes,
            r.mode,
            median(&r.direct.bench_cpu_us),
            median(&r.floor.bench_cpu_us),
            median(&r.proxied.bench_cpu_us),
            median(&r.direct.memcached_cpu_us),
            median(&r.floor.memcached_cpu_us),
            median(&r.proxied.memcached_cpu_us),
            total(&r.floor) - total(&r.direct),
            total(&r.proxied) - total(&r.direct),
        );
    }
    println!("(CPU per request [µs], medians: bch = this process: the load's clients and the relay; mc = memcached; +: both added against direct)");
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
    relay.stop();
    let _ = stop_tx.send(());
    let _ = runtime.join();
    mc.stop();
}
