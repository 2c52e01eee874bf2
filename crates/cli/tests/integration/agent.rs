//! `tailbound agent` against a real `tailbound serve`, as root, in two network namespaces: the
//! agent applies its host's decisions (the kernel's tc state equals the enforcer's plan of the
//! service's answer, with every decided rate), converges after the service's `kill -9` and
//! restart, shows as lagging while stopped and catches up after its own restart; `--once` on
//! the other host; a service older than the applied version is refused.

use crate::common::{addr_in, stderr, tailbound, Running};
use crate::serve::rt;
use hyper::Method;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};
use tailbound_cli::cmd::agent::{host_map_for, AgentState};
use tailbound_dataplane::netns::{LinkOptions, TwoHosts};
use tailbound_dataplane::tc::{read_host_map, read_state, Enforcer, Target};
use tailbound_enforce_plan::{diff, plan, PlanOptions};
use tailbound_model::Stage;
use tailbound_service::api::{Admitted, AgentView, Decision, HostDecisions, HostToken};
use tailbound_service::client::ServiceClient;

const ADMIN: &str = "tb_agent-test-admin";
const PORT0: u16 = 11211;

fn serve(db: &Path, token: &Path, listen: &str) -> (Running, String) {
    let mut s = Running::spawn(&[
        "serve",
        "--db",
        db.to_str().unwrap(),
        "--listen",
        listen,
        "--admin-token-file",
        token.to_str().unwrap(),
        "--policy",
        "priority-meister",
    ]);
    let lines = s.lines_until("listening on");
    (s, addr_in(lines.last().unwrap()))
}

/// Tenant `i`: client1 → server1 on port PORT0 + i, a synthetic key-value workload whose
/// rate differs from every other tenant's.
fn tenant(i: u16) -> Value {
    json!({
        "name": format!("t{i}"),
        "client": "client1",
        "server": "server1",
        "slo": "50ms",
        "traffic": {"model": {"arrival": {"model": "poisson", "rate_per_s": 200 + 50 * i},
            "sizes": {"model": "fixed", "bytes": 4096}, "read_fraction": 1.0,
            "duration_s": 5, "vocabulary": "key_value"}, "seed": i}
    })
}

/// The host map: the namespaces (client1's given wrong, for --netns to correct), and t0..t5
/// told apart by their server ports.
fn host_map(h: &TwoHosts) -> String {
    let mut m = format!(
        "[[hosts]]\nname = \"client1\"\nnetns = \"tailbound-not-this-one\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.2\"\nlink = \"1Gbit\"\n\n\
         [[hosts]]\nname = \"server1\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.1\"\nlink = \"1Gbit\"\n",
        h.server_ns()
    );
    for i in 0..6 {
        m += &format!(
            "\n[[tenants]]\nname = \"t{i}\"\nclient = {{ host = \"client1\" }}\nserver = {{ host = \"server1\", port = {} }}\nprotocol = \"tcp\"\n",
            PORT0 + i
        );
    }
    m
}

struct Setup<'a> {
    h: &'a TwoHosts,
    dir: &'a Path,
    url: String,
}

impl Setup<'_> {
    fn ns(&self, host: &str) -> &str {
        if host == "client1" {
            self.h.client_ns()
        } else {
            self.h.server_ns()
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }

    fn admin(&self) -> ServiceClient {
        ServiceClient::new(
            &format!("http://{}", self.url),
            Some(ADMIN.into()),
            Duration::from_secs(60),
        )
        .unwrap()
    }

    fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        rt().block_on(self.admin().call(Method::GET, path, None::<&()>))
            .unwrap()
            .1
    }

    fn arrive(&self, i: u16) -> u64 {
        let (_, a): (u16, Admitted) = rt()
            .block_on(
                self.admin()
                    .call(Method::POST, "/v1/tenants", Some(&tenant(i))),
            )
            .unwrap();
        assert!(a.decision.admitted, "{:?}", a.decision);
        a.decision.seq
    }

    fn depart(&self, i: u16) -> u64 {
        let (_, d): (u16, Decision) = rt()
            .block_on(
                self.admin()
                    .call(Method::DELETE, &format!("/v1/tenants/t{i}"), None::<&()>),
            )
            .unwrap();
        d.seq
    }

    fn agent_args(&self, host: &str) -> Vec<String> {
        let mut a: Vec<String> = [
            "agent",
            "--controller",
            &format!("http://{}", self.url),
            "--host",
            host,
            "--hosts",
            &self.path("hosts.toml"),
            "--state",
            &self.path(&format!("agent-{host}.json")),
            "--tc-state-dir",
            &self.path("tc"),
            "--token-file",
            &self.path(&format!("{host}.token")),
            "--wait",
            "5",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if host == "client1" {
            a.extend(["--netns".to_string(), self.h.client_ns().to_string()]);
        }
        a
    }

    fn agent(&self, host: &str) -> Running {
        let args = self.agent_args(host);
        Running::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Waits (bounded) until the service saw `host`'s agent report `version` applied.
    fn applied(&self, host: &str, version: u64) -> AgentView {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let agents: Vec<AgentView> = self.get("/v1/agents");
            if let Some(a) = agents
                .iter()
                .find(|a| a.host == host && a.applied >= version)
            {
                return a.clone();
            }
            assert!(
                Instant::now() < deadline,
                "agent of {host} did not report version {version}: {agents:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The kernel of `host` equals the enforcer's plan of the service's answer, every limit
    /// of `tenants` on `stage` is a class's rate, and no other tenant has a filter.
    fn check(&self, host: &str, stage: Stage, tenants: &[u16]) {
        let hd: HostDecisions = self.get(&format!("/v1/hosts/{host}/decisions"));
        let names: BTreeSet<String> = hd
            .decisions
            .tenants
            .iter()
            .map(|t| t.name.clone())
            .collect();
        let want: BTreeSet<String> = tenants.iter().map(|i| format!("t{i}")).collect();
        assert_eq!(names, want);
        let ns = self.ns(host);
        let map = read_host_map(&self.dir.join("hosts.toml")).unwrap();
        let map = host_map_for(&map, host, Some(ns), &hd).unwrap();
        let prior = Enforcer::new(self.dir.join("tc"))
            .prior(&map, Some(host))
            .unwrap();
        let opts = PlanOptions {
            excess: None,
            host: Some(host.to_string()),
        };
        let p = plan(&hd.decisions, &map, &opts, &prior).unwrap();
        let desired = &p.hosts[0].interfaces[0].state;
        let kernel = read_state(Target {
            host,
            netns: Some(ns),
            interface: "tb0",
        })
        .unwrap();
        let left = diff(&kernel, desired);
        assert!(left.is_empty(), "{host}: {left:?}");
        let rates: BTreeSet<u64> = kernel.classes.iter().map(|c| c.rate_bytes_per_s).collect();
        let mut limits = 0;
        for t in &hd.decisions.tenants {
            for l in t.limits.iter().filter(|l| l.stage == stage) {
                limits += 1;
                assert!(
                    rates.contains(&(l.bucket.rate.floor() as u64)),
                    "{host}: no class at {} B/s for {}: {rates:?}",
                    l.bucket.rate,
                    t.name
                );
            }
        }
        assert!(limits >= tenants.len(), "every tenant has a {stage} limit");
        // one filter per present tenant's flow on this side
        let flow_filters = desired.filters.len();
        assert_eq!(kernel.filters.len(), flow_filters);
        assert_eq!(flow_filters, tenants.len());
    }
}

fn stop(mut agent: Running) {
    let pid = agent.0.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = agent.0.wait().unwrap();
    assert!(
        status.success(),
        "the agent stops cleanly on SIGTERM: {status}"
    );
}

#[test]
fn an_agent_applies_its_hosts_decisions_survives_a_service_kill_and_catches_up() {
    if !tailbound_testdata::root_or_skip("the host agent (tc in network namespaces)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h = TwoHosts::create(LinkOptions::default()).unwrap();
    std::fs::write(dir.path().join("hosts.toml"), host_map(&h)).unwrap();
    let token = dir.path().join("admin.token");
    std::fs::write(&token, ADMIN).unwrap();
    let db = dir.path().join("state.db");
    let (mut service, url) = serve(&db, &token, "127.0.0.1:0");
    let s = Setup {
        h: &h,
        dir: dir.path(),
        url: url.clone(),
    };
    rt().block_on(async {
        for name in ["client1", "server1"] {
            s.admin()
                .call::<Value>(
                    Method::POST,
                    "/v1/hosts",
                    Some(&json!({"name": name, "link": "1Gbit"})),
                )
                .await
                .unwrap();
            // each agent authenticates with its own host's token
            let (status, t): (u16, HostToken) = s
                .admin()
                .call(
                    Method::POST,
                    &format!("/v1/hosts/{name}/token"),
                    None::<&()>,
                )
                .await
                .unwrap();
            assert_eq!(status, 201);
            std::fs::write(s.path(&format!("{name}.token")), t.token).unwrap();
        }
    });
    s.arrive(0);
    let v = s.arrive(1);

    // the agent applies what was decided before it started
    let agent = s.agent("client1");
    s.applied("client1", v);
    s.check("client1", Stage::NetIn, &[0, 1]);

    // the service is killed (-9) and restarted on the same address: the agent converges
    let _ = service.0.kill();
    let _ = service.0.wait();
    let (restarted, _) = serve(&db, &token, &url);
    service = restarted;
    let v = s.arrive(2);
    s.applied("client1", v);
    s.check("client1", Stage::NetIn, &[0, 1, 2]);

    // stopped, the agent lags behind the decisions and the service shows it
    stop(agent);
    s.depart(0);
    let v = s.arrive(3);
    let lag: Vec<AgentView> = s.get("/v1/agents");
    let behind = lag.iter().find(|a| a.host == "client1").unwrap();
    assert_eq!(behind.behind, 2, "{lag:?}");
    let page = rt()
        .block_on(
            s.admin()
                .raw(Method::GET, "/status", None, hyper::body::Bytes::new()),
        )
        .unwrap();
    assert!(String::from_utf8_lossy(&page.body).contains("<td>client1</td>"));
    s.check_unchanged_kernel_has("client1", 3);

    // restarted, it catches up at once
    let agent = s.agent("client1");
    s.applied("client1", v);
    s.check("client1", Stage::NetIn, &[1, 2, 3]);
    let state: AgentState =
        serde_json::from_str(&std::fs::read_to_string(s.path("agent-client1.json")).unwrap())
            .unwrap();
    assert_eq!((state.host.as_str(), state.version), ("client1", v));
    stop(agent);

    // --once on the server: the response direction
    let args = s.agent_args("server1");
    let mut once: Vec<&str> = args.iter().map(String::as_str).collect();
    once.push("--once");
    let o = tailbound(&once);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("applied version {v}")));
    s.check("server1", Stage::NetOut, &[1, 2, 3]);

    // a service behind the applied version is refused, and nothing changes
    let ahead = AgentState {
        host: "server1".into(),
        version: v + 100,
        applied_ms: 0,
    };
    std::fs::write(
        s.path("agent-server1.json"),
        serde_json::to_string(&ahead).unwrap(),
    )
    .unwrap();
    s.depart(1);
    let o = tailbound(&once);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("older than version"), "{}", stderr(&o));
    s.check_unchanged_kernel_has("server1", 3);
    drop(service);
}

impl Setup<'_> {
    /// `host`'s kernel still has `n` tenant filters (nothing applied meanwhile).
    fn check_unchanged_kernel_has(&self, host: &str, n: usize) {
        let ns = self.ns(host);
        let kernel = read_state(Target {
            host,
            netns: Some(ns),
            interface: "tb0",
        })
        .unwrap();
        assert_eq!(kernel.filters.len(), n);
    }
}
