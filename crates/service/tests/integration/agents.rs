//! What host agents see: `GET /v1/hosts/{host}/decisions` lists exactly the host's admitted
//! tenants with the decided priority and limits at a version that grows with every decision;
//! a long poll is answered by the next committed decision; `GET /v1/agents` shows how far each
//! agent is behind; a host's own token reads its decisions and nothing else.

use crate::common::{host, new_vdc, tenant, Server, ADMIN};
use bytes::Bytes;
use hyper::Method;
use std::collections::BTreeSet;
use tailbound_admission::Policy;
use tailbound_service::api::{Admitted, AgentView, Decision, HostDecisions, HostToken};
use tailbound_service::client::ClientError;
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

#[tokio::test]
async fn a_host_token_reads_only_its_hosts_decisions_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let s = Server::start(&db, Config::default()).await;
    let c = s.admin();
    for h in ["c0", "s0"] {
        host(&c, h, "1Gbit", None).await;
    }
    let (_, a): (u16, Admitted) = c
        .call(
            Method::POST,
            "/v1/tenants",
            Some(&tenant("a", "c0", Some("s0"), "50ms", 200.0)),
        )
        .await
        .unwrap();
    let tenant_token = a.token.unwrap();
    let issue = |h: &'static str| {
        let c = c.clone();
        async move {
            c.call::<HostToken>(Method::POST, &format!("/v1/hosts/{h}/token"), None::<&()>)
                .await
        }
    };
    let (status, first) = issue("c0").await.unwrap();
    assert_eq!((status, first.host.as_str()), (201, "c0"));
    let (_, s0) = issue("s0").await.unwrap();
    let status_of = |token: Option<&str>, method: Method, path: &str| {
        let client = s.client(token);
        let path = path.to_string();
        async move {
            client
                .raw(method, &path, None, Bytes::new())
                .await
                .unwrap()
                .status
        }
    };
    let own = s.client(Some(&first.token));
    let (_, hd): (u16, HostDecisions) = own
        .call(Method::GET, "/v1/hosts/c0/decisions?applied=1", None::<&()>)
        .await
        .unwrap();
    assert_eq!(names(&hd), ["a"].map(String::from).into());
    // it reported as c0's agent
    let (_, agents): (u16, Vec<AgentView>) = c
        .call(Method::GET, "/v1/agents", None::<&()>)
        .await
        .unwrap();
    assert_eq!((agents[0].host.as_str(), agents[0].applied), ("c0", 1));
    let t = Some(first.token.as_str());
    let g = Method::GET;
    // another host's decisions, anything but its own, a tenant's token, no token
    assert_eq!(status_of(t, g.clone(), "/v1/hosts/s0/decisions").await, 403);
    assert_eq!(status_of(t, g.clone(), "/v1/tenants").await, 403);
    assert_eq!(status_of(t, g.clone(), "/v1/agents").await, 403);
    assert_eq!(status_of(t, Method::DELETE, "/v1/tenants/a").await, 403);
    assert_eq!(status_of(t, Method::POST, "/v1/hosts/c0/token").await, 403);
    let tt = Some(tenant_token.as_str());
    assert_eq!(
        status_of(tt, g.clone(), "/v1/hosts/c0/decisions").await,
        403
    );
    assert_eq!(status_of(tt, Method::POST, "/v1/hosts/c0/token").await, 403);
    assert_eq!(
        status_of(None, g.clone(), "/v1/hosts/c0/decisions").await,
        401
    );
    assert_eq!(
        status_of(None, Method::POST, "/v1/hosts/c0/token").await,
        401
    );
    assert_eq!(
        status_of(Some(ADMIN), Method::POST, "/v1/hosts/ghost/token").await,
        404
    );

    // as a VDC enforcer: its own host's id only
    let _: (u16, serde_json::Value) = c
        .call(Method::POST, "/v1/vdcs", Some(&new_vdc("dc1")))
        .await
        .unwrap();
    let reg = serde_json::json!({"flows": ["A/a-kv"]});
    let as_enforcer = |token: String, id: &'static str| {
        let client = s.client(Some(&token));
        let reg = reg.clone();
        async move {
            client
                .call::<serde_json::Value>(
                    Method::POST,
                    &format!("/v1/vdcs/dc1/enforcers/{id}/register"),
                    Some(&reg),
                )
                .await
        }
    };
    assert!(as_enforcer(s0.token.clone(), "s0").await.is_ok());
    let e = as_enforcer(s0.token.clone(), "c0").await.unwrap_err();
    assert!(matches!(e, ClientError::Refused { status: 403, .. }), "{e}");
    let e = as_enforcer(tenant_token.clone(), "c0").await.unwrap_err();
    assert!(matches!(e, ClientError::Refused { status: 403, .. }), "{e}");

    // a new token for c0 retires the old one
    let (_, second) = issue("c0").await.unwrap();
    assert_ne!(second.token, first.token);
    assert_eq!(status_of(t, g.clone(), "/v1/hosts/c0/decisions").await, 401);
    let t2 = Some(second.token.as_str());
    assert_eq!(
        status_of(t2, g.clone(), "/v1/hosts/c0/decisions").await,
        200
    );
    s.stop().await;

    // the tokens are stored (hashed): after a restart they still work, the old one not
    let s = Server::start(&db, Config::default()).await;
    let status_of = |token: &str, path: &str| {
        let client = s.client(Some(token));
        let path = path.to_string();
        async move {
            client
                .raw(Method::GET, &path, None, Bytes::new())
                .await
                .unwrap()
                .status
        }
    };
    assert_eq!(
        status_of(&second.token, "/v1/hosts/c0/decisions").await,
        200
    );
    assert_eq!(status_of(&s0.token, "/v1/hosts/s0/decisions").await, 200);
    assert_eq!(status_of(&first.token, "/v1/hosts/c0/decisions").await, 401);
    // the database and its WAL hold digests, never a token
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let stored = std::fs::read(f.unwrap().path()).unwrap();
        for t in [&first.token, &second.token, &s0.token] {
            let needle = t.as_bytes();
            assert!(!stored.windows(needle.len()).any(|w| w == needle));
        }
    }
    s.stop().await;
}
