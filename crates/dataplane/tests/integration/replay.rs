//! The open-loop replay against a real memcached on loopback (started and stopped here, by
//! PID): every request answered and counted, misses and silent servers counted as what they
//! are, and an unreachable server refused before the start. Needs memcached (Debian's
//! package); without it the tests say so and return, except under `CI=true`, where that is a
//! failure.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;
use tailbound_dataplane::memcache::server::available;
use tailbound_dataplane::memcache::{Memcached, MemcachedOptions};
use tailbound_dataplane::probe::Control;
use tailbound_dataplane::replay::{self, HostReplay, ReplayOptions, ReplayRequest, TenantReplay};
use tailbound_dataplane::ReplayError;

/// A memcached on a free loopback port with the item size raised to 2 MiB, or `None` (test
/// skipped) when it is not installed outside CI.
fn memcached() -> Option<Memcached> {
    if !available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "memcached is not installed (apt-get install -y memcached); CI must run this test"
        );
        eprintln!("skipped: memcached is not installed");
        return None;
    }
    let opts = MemcachedOptions {
        item_size_bytes: Some(2 << 20),
        ..MemcachedOptions::default()
    };
    Some(Memcached::start(&opts).expect("memcached starts"))
}

fn requests(n: u64, sizes: &[u32]) -> Vec<ReplayRequest> {
    (0..n)
        .map(|i| ReplayRequest {
            due_ns: i * 500_000,
            window: (i / 50) as u32,
            read: i % 3 != 0,
            size_bytes: sizes[i as usize % sizes.len()],
        })
        .collect()
}

fn one_host(tenants: Vec<TenantReplay>) -> Vec<HostReplay> {
    vec![HostReplay {
        netns: None,
        tenants,
    }]
}

#[test]
fn every_request_of_every_tenant_is_sent_answered_and_recorded() {
    let Some(m) = memcached() else { return };
    let sizes = [100, 4096, 65_536, 1 << 20];
    replay::preload(None, m.addr(), &sizes, Duration::from_secs(30)).unwrap();
    let tenant = |name: &str, n| TenantReplay {
        name: name.into(),
        server: m.addr(),
        source: None,
        tos: 0x20,
        requests: requests(n, &sizes),
    };
    let opts = ReplayOptions {
        latency_scale: 0.5,
        timeout: Duration::from_secs(60),
        initial_connections: 2,
        ..ReplayOptions::default()
    };
    let out = replay::run(
        one_host(vec![tenant("a", 200), tenant("b", 120)]),
        &opts,
        &Arc::new(Control::new()),
    )
    .unwrap();
    assert_eq!(out.tenants.len(), 2);
    for (t, n) in out.tenants.iter().zip([200u64, 120]) {
        assert_eq!(
            (t.sent, t.replies, t.errors, t.timeouts),
            (n, n, 0, 0),
            "{}: {:?}",
            t.name,
            t.first_error
        );
        assert_eq!(t.latency.len(), n);
        assert_eq!(t.lateness.len(), n);
        // windows of 50 requests each, the last partial
        let counts: Vec<u64> = t.windows.values().map(|h| h.len()).collect();
        assert_eq!(counts.iter().sum::<u64>(), n);
        assert_eq!(t.windows.len() as u64, n.div_ceil(50));
        assert!(
            t.connections >= 2 && t.connections <= 256,
            "{}",
            t.connections
        );
        assert!(t.max_in_flight >= 1);
    }
    assert!(out.wall_s > 0.0);
}

#[test]
fn a_get_of_a_value_never_stored_is_an_error_not_a_reply() {
    let Some(m) = memcached() else { return };
    let out = replay::run(
        one_host(vec![TenantReplay {
            name: "miss".into(),
            server: m.addr(),
            source: None,
            tos: 0,
            requests: vec![ReplayRequest {
                due_ns: 0,
                window: 0,
                read: true,
                size_bytes: 777,
            }],
        }]),
        &ReplayOptions::default(),
        &Arc::new(Control::new()),
    )
    .unwrap();
    let t = &out.tenants[0];
    assert_eq!((t.sent, t.replies, t.errors), (1, 0, 1));
    assert!(
        t.first_error.as_deref().unwrap().contains("miss"),
        "{:?}",
        t.first_error
    );
}

#[test]
fn a_server_that_never_answers_times_requests_out_at_the_timeout() {
    // accepts connections (the kernel does) and never reads or answers
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let timeout = Duration::from_millis(300);
    let out = replay::run(
        one_host(vec![TenantReplay {
            name: "silent".into(),
            server: silent.local_addr().unwrap(),
            source: None,
            tos: 0,
            requests: requests(5, &[64]),
        }]),
        &ReplayOptions {
            timeout,
            latency_scale: 2.0,
            initial_connections: 1,
            ..ReplayOptions::default()
        },
        &Arc::new(Control::new()),
    )
    .unwrap();
    let t = &out.tenants[0];
    assert_eq!((t.sent, t.replies, t.timeouts), (5, 0, 5));
    // recorded at the timeout, scaled (within the histogram's 0.1 %)
    let max = t.latency.max() as f64;
    assert!((max / 600e6 - 1.0).abs() < 2e-3, "{max}");
}

#[test]
fn an_unreachable_server_fails_before_the_start() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = replay::run(
        one_host(vec![TenantReplay {
            name: "nobody".into(),
            server: format!("127.0.0.1:{port}").parse().unwrap(),
            source: None,
            tos: 0,
            requests: requests(3, &[64]),
        }]),
        &ReplayOptions::default(),
        &Arc::new(Control::new()),
    )
    .unwrap_err();
    assert!(
        matches!(e, ReplayError::Connect { ref tenant, .. } if tenant == "nobody"),
        "{e}"
    );
    assert!(e.to_string().contains("cannot reach memcached"), "{e}");
}

#[test]
fn bad_requests_are_refused() {
    let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let bad = |requests: Vec<ReplayRequest>| {
        replay::run(
            one_host(vec![TenantReplay {
                name: "t".into(),
                server: addr,
                source: None,
                tos: 0,
                requests,
            }]),
            &ReplayOptions::default(),
            &Arc::new(Control::new()),
        )
        .unwrap_err()
    };
    let mut r = requests(2, &[64]);
    r[1].size_bytes = 2 << 20;
    assert!(bad(r).to_string().contains("values are 1 to"));
    let mut r = requests(2, &[64]);
    r.swap(0, 1);
    assert!(bad(r).to_string().contains("not sorted"));
}
