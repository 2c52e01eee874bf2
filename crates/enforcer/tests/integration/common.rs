//! Shared set-up: memcached, a two-tenant datacenter, a proxy in front of memcached, a raw
//! client that reads exactly what it expects.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tailbound_allocation::{Datacenter, VdcSpec};
use tailbound_dataplane::clock::Clock;
use tailbound_dataplane::memcache::server::available;
use tailbound_dataplane::memcache::{Memcached, MemcachedOptions};
use tailbound_enforcer::{
    Charger, FlowSetup, Identify, ListenerSpec, Proxy, ProxyConfig, ProxyFlow,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A fresh memcached, or `None` (test skipped) when it is not installed outside CI.
pub fn memcached() -> Option<Memcached> {
    if !available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "memcached is not installed (apt-get install -y memcached); CI must run this test"
        );
        eprintln!("skipped: memcached is not installed");
        return None;
    }
    Some(Memcached::start(&MemcachedOptions::default()).expect("memcached starts"))
}

/// Two tenants on one server with the key-value store: each flow's path is its VM's link out
/// (no physical link: same server), the store, its VM's link in.
pub const SPEC: &str = r#"
header_bytes = 64
[[servers]]
name = "s0"
link = 1e9
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e6
max_capacity = 4e6
[[tenants]]
name = "A"
vms = [{ name = "a", server = "s0", link = 1e9 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 4e5 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
[[tenants]]
name = "B"
vms = [{ name = "b", server = "s0", link = 1e9 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 4e5 }]
flows = [{ name = "b-kv", src = "b", dst = "kv" }]
"#;

pub fn datacenter() -> Arc<Datacenter> {
    Arc::new(VdcSpec::parse("test.toml", SPEC).unwrap().1)
}

/// The proxy's flows for every flow of `dc`, priority 0.
pub fn flows(dc: &Arc<Datacenter>) -> Vec<ProxyFlow> {
    (0..dc.flows.len())
        .map(|i| ProxyFlow {
            setup: FlowSetup {
                name: tailbound_control::protocol::flow_name(dc, i),
                hops: dc.flows[i].hops.len(),
                priority: 0,
            },
            charger: Arc::new(Charger::new(dc.clone(), i)),
        })
        .collect()
}

/// A listener per flow on free loopback ports.
pub fn config(backend: SocketAddr, flows: usize) -> ProxyConfig {
    let listeners = (0..flows)
        .map(|i| ListenerSpec {
            addr: "127.0.0.1:0".parse().unwrap(),
            identify: Identify::Flow(i),
        })
        .collect();
    ProxyConfig::new(backend, listeners)
}

pub async fn start(cfg: ProxyConfig, clock: Arc<dyn Clock>) -> Proxy {
    let dc = datacenter();
    Proxy::start(cfg, flows(&dc), clock).await.unwrap()
}

/// A bound on how long any one exchange may take (not an assertion on timing).
pub const PATIENCE: Duration = Duration::from_secs(10);

pub async fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

pub async fn send(s: &mut TcpStream, bytes: &[u8]) {
    s.write_all(bytes).await.unwrap();
}

/// Reads exactly `n` bytes.
pub async fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    tokio::time::timeout(PATIENCE, s.read_exact(&mut buf))
        .await
        .expect("the reply comes")
        .expect("the connection stays open");
    buf
}

/// Reads until the peer closes.
pub async fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    tokio::time::timeout(PATIENCE, s.read_to_end(&mut buf))
        .await
        .expect("the connection closes")
        .expect("a clean close");
    buf
}

/// Waits (bounded) until `cond` holds; the wait is for an event, never a timing assertion.
pub async fn until(mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "condition not reached");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
