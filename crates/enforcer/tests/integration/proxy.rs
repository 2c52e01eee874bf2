//! The proxy's data path: order, error replies, exact delays, authentication, failures.

use crate::common::*;
use std::sync::Arc;
use std::time::Duration;
use tailbound_dataplane::clock::{ManualClock, MonotonicClock};
use tailbound_dataplane::memcache::Limits;
use tailbound_enforcer::{AuthUser, Identify, ListenerSpec};
use tailbound_shaping::MultiBucket;

fn unlimited(proxy: &tailbound_enforcer::Proxy) {
    for i in 0..proxy.flows().len() {
        proxy.set_unlimited(i).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_keep_their_order_and_malformed_ones_get_errors() {
    let Some(mc) = memcached() else { return };
    let proxy = start(config(mc.addr(), 2), Arc::new(MonotonicClock::new())).await;
    unlimited(&proxy);
    let requests: &[u8] = b"set a 0 0 3\r\nabc\r\n\
get a\r\n\
bogus\r\n\
get a nope\r\n\
set k 0 0 x\r\n\
mg a v\r\n\
set q 0 0 1 noreply\r\nz\r\n\
delete nope noreply\r\n\
ms m 2 q\r\nhi\r\n\
mg nope v q\r\n\
flush_all\r\n\
get q m\r\n\
mn\r\n";
    let expected: &[u8] = b"STORED\r\n\
VALUE a 0 3\r\nabc\r\nEND\r\n\
ERROR\r\n\
VALUE a 0 3\r\nabc\r\nEND\r\n\
CLIENT_ERROR bad command line format\r\n\
VA 3\r\nabc\r\n\
CLIENT_ERROR flush_all is not allowed through this proxy\r\n\
VALUE q 0 1\r\nz\r\nVALUE m 0 2\r\nhi\r\nEND\r\n\
MN\r\n";
    // all at once, then the same cut into 7-byte writes (requests split across reads)
    for chunk in [requests.len(), 7] {
        let mut c = connect(proxy.local_addrs()[0]).await;
        for piece in requests.chunks(chunk) {
            send(&mut c, piece).await;
            tokio::task::yield_now().await;
        }
        let got = read_n(&mut c, expected.len()).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected)
        );
        send(&mut c, b"quit\r\n").await;
        assert_eq!(read_to_end(&mut c).await, b"");
    }
    // every forwarded request was charged to tenant A's flow only, and completed
    let r = proxy.report();
    assert!(r.flows[0].completed[1] > 0.0);
    assert_eq!(r.flows[0].utilization, r.flows[0].completed);
    assert_eq!(r.flows[1].utilization, vec![0.0; 3]);
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_requests_are_delayed_exactly_as_the_multibucket_says() {
    let Some(mc) = memcached() else { return };
    let clock = Arc::new(ManualClock::new(0));
    let mut cfg = config(mc.addr(), 2);
    cfg.core.min_rate = 1.0;
    cfg.core.initial_rate = Some(1e6);
    let proxy = start(cfg, clock.clone()).await;
    let t0 = 5;
    clock.set(t0);
    // 20 000 tokens/s at the store, plenty on the VM links; 0.1 s of tokens carried
    let rates = [1e6, 2e4, 1e6];
    proxy.set_allocation(0, &rates).unwrap();
    // the buckets start full at the initial rate; an allocation keeps at most 0.1 s of tokens
    let mut mirror = MultiBucket::new(&[(1e6, 1e6); 3], 0).unwrap();
    mirror.set_rates(t0, &rates.map(|r| (r, r * 0.1))).unwrap();
    mirror.set_rates(t0, &rates.map(|r| (r, r))).unwrap();
    // a 1500-byte set costs 1564 on each VM link (64 header bytes), 1500 at the store (one
    // token per byte), 64 for the reply
    let cost = [1564.0, 1500.0, 64.0];
    let value = vec![b'x'; 1500];
    let mut req = Vec::new();
    for k in 0..3 {
        req.extend_from_slice(format!("set k{k} 0 0 1500\r\n").as_bytes());
        req.extend_from_slice(&value);
        req.extend_from_slice(b"\r\n");
    }
    let mut c = connect(proxy.local_addrs()[0]).await;
    send(&mut c, &req).await;
    // the first fits in the carried tokens
    assert_eq!(read_n(&mut c, 8).await, b"STORED\r\n");
    mirror.take(t0, &cost).unwrap();
    // the second waits for the store's bucket; the third waits behind it
    until(|| proxy.status()[0].queued == 2).await;
    let ready = mirror.ready_at(t0, &cost).unwrap();
    assert!(ready > t0);
    assert_eq!(proxy.next_wakeup(), Some(ready));
    clock.set(ready - 1);
    proxy.tick();
    assert_eq!(proxy.status()[0].queued, 2, "released a nanosecond early");
    clock.set(ready);
    proxy.tick();
    assert_eq!(proxy.status()[0].queued, 1);
    assert_eq!(read_n(&mut c, 8).await, b"STORED\r\n");
    mirror.take(ready, &cost).unwrap();
    let ready3 = mirror.ready_at(ready, &cost).unwrap();
    assert_eq!(proxy.next_wakeup(), Some(ready3));
    // 1500 tokens at 20 000/s, to the nanosecond's rounding
    assert!(
        (ready3 - ready).abs_diff(75_000_000) <= 1,
        "{}",
        ready3 - ready
    );
    clock.set(ready3);
    proxy.tick();
    assert_eq!(read_n(&mut c, 8).await, b"STORED\r\n");
    // the other tenant was never held back
    let mut b = connect(proxy.local_addrs()[1]).await;
    send(&mut b, b"get k0\r\n").await;
    let got = read_n(&mut b, 17 + 1502 + 5).await;
    assert_eq!(got[..17], *b"VALUE k0 0 1500\r\n");
    let r = proxy.report();
    assert_eq!(r.flows[0].utilization, vec![3.0 * 1564.0, 4500.0, 192.0]);
    assert!(r.flows[0].queueing[1] > 0.0);
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_authenticate_with_memcacheds_text_auth() {
    let Some(mc) = memcached() else { return };
    let mut cfg = config(mc.addr(), 0);
    cfg.listeners = vec![ListenerSpec {
        addr: "127.0.0.1:0".parse().unwrap(),
        identify: Identify::Auth,
    }];
    cfg.auth = vec![AuthUser {
        user: "B/b-kv".into(),
        secret: "s3cret".into(),
        flow: 1,
    }];
    let proxy = start(cfg, Arc::new(MonotonicClock::new())).await;
    unlimited(&proxy);
    let addr = proxy.local_addrs()[0];
    let mut c = connect(addr).await;
    send(&mut c, b"set x 0 0 12\r\nB/b-kv wrong\r\n").await;
    assert_eq!(
        read_to_end(&mut c).await,
        b"CLIENT_ERROR authentication failure\r\n"
    );
    let mut c = connect(addr).await;
    send(&mut c, b"get k\r\n").await;
    assert_eq!(
        read_to_end(&mut c).await,
        b"CLIENT_ERROR authentication failure\r\n"
    );
    let mut c = connect(addr).await;
    send(
        &mut c,
        b"set x 0 0 13\r\nB/b-kv s3cret\r\nset k 0 0 2\r\nhi\r\n",
    )
    .await;
    assert_eq!(read_n(&mut c, 16).await, b"STORED\r\nSTORED\r\n");
    let r = proxy.report();
    assert_eq!(r.flows[0].completed, vec![0.0; 3]);
    // the auth exchange is the proxy's own; the set costs its bytes (the store's default cost
    // function is a token per byte)
    assert_eq!(r.flows[1].completed, vec![66.0, 2.0, 64.0]);
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_bound_what_a_connection_holds() {
    let Some(mc) = memcached() else { return };
    let mut cfg = config(mc.addr(), 2);
    cfg.limits = Limits {
        max_line: 64,
        max_value: 1000,
        max_keys: 4,
    };
    let proxy = start(cfg, Arc::new(MonotonicClock::new())).await;
    unlimited(&proxy);
    let mut c = connect(proxy.local_addrs()[0]).await;
    let mut req = b"set big 0 0 5000\r\n".to_vec();
    req.extend(std::iter::repeat_n(b'v', 5000));
    req.extend_from_slice(b"\r\nget a b c d e\r\nget big\r\n");
    send(&mut c, &req).await;
    let want = b"SERVER_ERROR object too large for cache\r\n\
CLIENT_ERROR too many keys (5); at most 4 per request\r\nEND\r\n";
    assert_eq!(
        String::from_utf8_lossy(&read_n(&mut c, want.len()).await),
        String::from_utf8_lossy(want)
    );
    send(&mut c, &[b'g'; 100]).await;
    assert_eq!(read_to_end(&mut c).await, b"CLIENT_ERROR line too long\r\n");
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_backend_gives_errors_and_the_proxy_keeps_serving() {
    let Some(mc) = memcached() else { return };
    let proxy = start(config(mc.addr(), 2), Arc::new(MonotonicClock::new())).await;
    unlimited(&proxy);
    let addr = proxy.local_addrs()[0];
    let mut c = connect(addr).await;
    send(&mut c, b"set a 0 0 1\r\nx\r\n").await;
    assert_eq!(read_n(&mut c, 8).await, b"STORED\r\n");
    // memcached goes away under an open connection
    mc.stop();
    send(&mut c, b"get a\r\nget a\r\n").await;
    let got = String::from_utf8(read_to_end(&mut c).await).unwrap();
    let lines: Vec<&str> = got.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 2, "{got:?}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("SERVER_ERROR backend connection lost")),
        "{got:?}"
    );
    // a new connection finds no backend at the old address
    let mut c = connect(addr).await;
    send(&mut c, b"get a\r\n").await;
    let got = String::from_utf8(read_to_end(&mut c).await).unwrap();
    assert!(
        got.starts_with("SERVER_ERROR backend unavailable: "),
        "{got:?}"
    );
    assert!(got.ends_with("\r\n") && got.lines().count() == 1, "{got:?}");
    // nothing leaks: both connections are gone
    until(|| proxy.connections() == 0).await;
    proxy.shutdown().await;
}

/// Beside the real-memcached test above: a backend that accepts and never answers (a fake
/// memcached would be pointless; what is tested is the proxy's timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_backend_times_out_with_errors() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut keep = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            keep.push(s);
        }
    });
    let mut cfg = config(backend, 2);
    cfg.backend_timeout = Duration::from_millis(300);
    let proxy = start(cfg, Arc::new(MonotonicClock::new())).await;
    unlimited(&proxy);
    let mut c = connect(proxy.local_addrs()[1]).await;
    send(&mut c, b"get a\r\nset b 0 0 1\r\nz\r\n").await;
    let got = String::from_utf8(read_to_end(&mut c).await).unwrap();
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 2, "{got:?}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("SERVER_ERROR backend timeout")),
        "{got:?}"
    );
    // both requests completed for the enforcer: nothing stays outstanding
    let r = proxy.report();
    assert_eq!(r.flows[1].utilization, r.flows[1].completed);
    proxy.shutdown().await;
    held.abort();
}
