//! What host agents see: `GET /v1/hosts/{host}/decisions` lists exactly the host's admitted
//! tenants with the decided priority and limits at a version that grows with every decision;
//! a long poll is answered by the next committed decision; `GET /v1/agents` shows how far each
//! agent is behind.

use crate::common::{host, tenant, Server};
use hyper::Method;
use std::collections::BTreeSet;
use tailbound_admission::Policy;
use tailbound_service::api::{Admitted, AgentView, Decision, HostDecisions};
use tailbound_service::Config;

fn names(hd: &HostDecisions) -> BTreeSet<String> {
    hd.decisions
        .tenants
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

#[tokio::test]
async fn a_hosts_decisions_follow_arrivals_and_departures_with_a_growing_version() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        policy: Policy::PriorityMeister,
        ..Config::default()
    };
    let s = Server::start(&dir.path().join("s.db"), config).await;
    let c = s.admin();
    for h in ["c0", "c1", "s0"] {
        host(&c, h, "1Gbit", None).await;
    }
    let get = |path: String| {
        let c = c.clone();
        async move {
            c.call::<HostDecisions>(Method::GET, &path, None::<&()>)
                .await
        }
    };
    let empty = get("/v1/hosts/s0/decisions".into()).await.unwrap().1;
    assert_eq!((empty.version, empty.decisions.tenants.len()), (0, 0));

    let mut admitted = Vec::new();
    for (name, client) in [("a", "c0"), ("b", "c1")] {
        let (_, a): (u16, Admitted) = c
            .call(
                Method::POST,
                "/v1/tenants",
                Some(&tenant(name, client, Some("s0"), "50ms", 200.0)),
            )
            .await
            .unwrap();
        assert!(a.decision.admitted);
        admitted.push(a.decision);
    }
    let s0 = get("/v1/hosts/s0/decisions".into()).await.unwrap().1;
    let c0 = get("/v1/hosts/c0/decisions".into()).await.unwrap().1;
    assert_eq!(s0.version, 2);
    assert_eq!(names(&s0), ["a", "b"].map(String::from).into());
    assert_eq!(names(&c0), ["a"].map(String::from).into());
    assert_eq!(c0.endpoints[0].client, "c0");
    assert_eq!(c0.endpoints[0].server, "s0");
    // what the agent gets is what was decided: priority, server and every limit
    for d in &admitted {
        let t = s0.decisions.tenant(&d.tenant).unwrap();
        assert!(t.admitted);
        assert_eq!(t.priority, d.priority);
        assert_eq!(t.server.as_deref(), Some("s0"));
        assert!(!d.limits.is_empty());
        assert_eq!(t.limits, d.limits);
    }

    // a long poll from the current version is answered by the next decision
    let poll = tokio::spawn(get(format!(
        "/v1/hosts/c0/decisions?since={}&wait=60&applied={}",
        s0.version, s0.version
    )));
    // the poll has registered the agent before it waits
    for k in 0.. {
        assert!(k < 10_000, "the long poll never registered its agent");
        let (_, agents): (u16, Vec<AgentView>) = c
            .call(Method::GET, "/v1/agents", None::<&()>)
            .await
            .unwrap();
        if !agents.is_empty() {
            assert_eq!((agents[0].host.as_str(), agents[0].behind), ("c0", 0));
            break;
        }
        tokio::task::yield_now().await;
    }
    let (_, gone): (u16, Decision) = c
        .call(Method::DELETE, "/v1/tenants/a", None::<&()>)
        .await
        .unwrap();
    let after = poll.await.unwrap().unwrap().1;
    assert_eq!(after.version, gone.seq);
    assert!(after.version > s0.version);
    assert!(after.decisions.tenants.is_empty());
    // the agent reported version 2; the service is at 3
    let (_, agents): (u16, Vec<AgentView>) = c
        .call(Method::GET, "/v1/agents", None::<&()>)
        .await
        .unwrap();
    assert_eq!((agents[0].applied, agents[0].behind), (2, 1));
    // a poll already behind is answered at once, whatever its wait
    let at_once = get("/v1/hosts/s0/decisions?since=0&wait=60".into())
        .await
        .unwrap()
        .1;
    assert_eq!(names(&at_once), ["b"].map(String::from).into());
}
