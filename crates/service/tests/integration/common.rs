//! A real server on 127.0.0.1:0 over a database in a temporary folder, and the tenants the
//! tests submit.

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tailbound_service::client::ServiceClient;
use tailbound_service::{AdminToken, Config, Service};
use tokio::sync::oneshot;

pub const ADMIN: &str = "tb_test-admin-token";

/// A running server; dropping it stops the server.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    pub async fn start(db: &Path, config: Config) -> Server {
        let (service, generated) =
            Service::open(db, config, AdminToken::Given(ADMIN.into())).unwrap();
        assert!(generated.is_none(), "a given token is not replaced");
        Server::serve(service).await
    }

    pub async fn serve(service: Arc<Service>) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            tailbound_service::serve(listener, service, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        Server {
            addr,
            stop: Some(tx),
            task: Some(task),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn client(&self, token: Option<&str>) -> ServiceClient {
        ServiceClient::new(
            &self.url(),
            token.map(str::to_string),
            Duration::from_secs(60),
        )
        .unwrap()
    }

    pub fn admin(&self) -> ServiceClient {
        self.client(Some(ADMIN))
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.unwrap();
        }
    }
}

/// A Poisson tenant of fixed 4 KiB reads at `per_s` requests/s for 20 s: its responses put
/// about 4.7 MB/s on the server's link at 1000/s (so two fit on 100 Mbit/s, not three).
pub fn tenant(name: &str, client: &str, server: Option<&str>, slo: &str, per_s: f64) -> Value {
    let mut t = json!({
        "name": name,
        "client": client,
        "slo": slo,
        "traffic": {
            "model": {
                "arrival": {"model": "poisson", "rate_per_s": per_s},
                "sizes": {"model": "fixed", "bytes": 4096},
                "read_fraction": 1.0,
                "duration_s": 20.0,
                "vocabulary": "key_value"
            },
            "seed": 1
        }
    });
    if let Some(s) = server {
        t["server"] = json!(s);
    }
    t
}

/// A one-state MMPP flow (Poisson, exponential sizes) at `stage`.
pub fn mmpp_flow(stage: &str, per_s: f64, mean: f64) -> Value {
    json!({
        "stage": stage,
        "mmpp": {
            "step_s": 1e-5,
            "interval_s": 1.0,
            "states": [{
                "rate_per_s": per_s,
                "arrival_prob": per_s * 1e-5,
                "sizes": {"type": "exponential", "mean": mean},
                "intervals": 100,
                "requests": (per_s * 100.0) as u64,
                "work": per_s * 100.0 * mean
            }],
            "transition": [[1.0]]
        }
    })
}

/// A tenant given by its flows' MMPPs (no characterization).
pub fn mmpp_tenant(name: &str, client: &str, server: &str, slo: &str) -> Value {
    json!({
        "name": name,
        "client": client,
        "server": server,
        "slo": slo,
        "traffic": {"flows": [mmpp_flow("net-in", 100.0, 200.0), mmpp_flow("net-out", 100.0, 4096.0)]}
    })
}

/// Registers `name` with a link and optional storage.
pub async fn host(c: &ServiceClient, name: &str, link: &str, storage: Option<f64>) {
    let mut h = json!({"name": name, "link": link});
    if let Some(s) = storage {
        h["storage"] = json!(s);
    }
    let (status, _): (u16, Value) = c
        .call(hyper::Method::POST, "/v1/hosts", Some(&h))
        .await
        .unwrap();
    assert_eq!(status, 201);
}

/// A VDC file (pulsar §3): two tenants whose flows share appliance `kv` (1e6 tokens/s, 4e5
/// guaranteed to each), links far from binding, capacities as configured.
pub const VDC_TOML: &str = r#"
header_bytes = 0
[[servers]]
name = "s0"
link = 1e10
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e6
estimate = false
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

/// `POST /v1/vdcs` of [`VDC_TOML`] as `name`, stepping every second with the configured
/// capacities and no link headroom (what `tailbound vdc alloc` assumes).
pub fn new_vdc(name: &str) -> Value {
    json!({
        "name": name,
        "toml": VDC_TOML,
        "controller": {"interval_s": 1.0, "estimate": false, "link_headroom": 0.0}
    })
}
