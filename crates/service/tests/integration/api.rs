//! Decisions over HTTP: admit, reject with the reason, depart, what-if, placement, and a
//! restart that answers the same state.

use crate::common::{host, mmpp_tenant, tenant, Server};
use hyper::Method;
use serde_json::Value;
use tailbound_service::api::{Admitted, BoundView, Decision, DecisionKind, Health, TenantView};
use tailbound_service::client::{ClientError, ServiceClient};
use tailbound_service::Config;

async fn submit(c: &ServiceClient, t: &Value) -> (u16, Admitted) {
    c.call(Method::POST, "/v1/tenants", Some(t)).await.unwrap()
}

async fn tenants(c: &ServiceClient) -> Vec<TenantView> {
    c.call::<Vec<TenantView>>(Method::GET, "/v1/tenants", None::<&()>)
        .await
        .unwrap()
        .1
}

/// One 100 Mbit/s server and four clients.
async fn small_cluster(c: &ServiceClient) {
    host(c, "server1", "100Mbit", None).await;
    for i in 0..4 {
        host(c, &format!("client{i}"), "1Gbit", None).await;
    }
}

#[tokio::test]
async fn admit_reject_with_the_reason_depart_and_admit_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let c = s.admin();
    small_cluster(&c).await;

    let (st, a0) = submit(
        &c,
        &tenant("t0", "client0", Some("server1"), "200ms", 1000.0),
    )
    .await;
    assert_eq!(st, 201, "{a0:?}");
    let d0 = &a0.decision;
    assert!(d0.admitted && d0.seq == 1 && d0.kind == DecisionKind::Arrive);
    let b0 = d0.bound_s.expect("admitted tenants are bounded");
    assert!(b0 > 0.0 && b0 <= 0.2, "{b0}");
    assert_eq!(d0.policy, "snc-meister");
    assert!(a0.token.as_deref().is_some_and(|t| t.starts_with("tb_")));
    // the explanation: its queues, with their load
    let out = d0.queues.iter().find(|q| q.queue == "server1-out").unwrap();
    assert!(out.load > 0.3 && out.load < 0.5, "{out:?}");

    let (st, a1) = submit(
        &c,
        &tenant("t1", "client1", Some("server1"), "200ms", 1000.0),
    )
    .await;
    assert_eq!(st, 201, "{a1:?}");
    let out = a1
        .decision
        .queues
        .iter()
        .find(|q| q.queue == "server1-out")
        .unwrap();
    assert_eq!(out.tenants, ["t0"], "the queue's other tenants are named");

    let (st, a2) = submit(
        &c,
        &tenant("t2", "client2", Some("server1"), "200ms", 1000.0),
    )
    .await;
    assert_eq!(st, 200, "a rejection is an answer: {a2:?}");
    let d2 = &a2.decision;
    assert!(!d2.admitted && a2.token.is_none());
    let reason = d2.reason.as_deref().unwrap();
    assert!(reason.contains("tenant"), "{reason}");
    let out = d2.queues.iter().find(|q| q.queue == "server1-out").unwrap();
    assert!(out.load > 0.9, "three such tenants load the link: {out:?}");
    assert_eq!(out.tenants, ["t0", "t1"]);

    let names: Vec<String> = tenants(&c).await.into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["t0", "t1"]);

    // t0 departs with its own token; then t2 fits
    let own = s.client(a0.token.as_deref());
    let (st, dep): (u16, Decision) = own
        .call(Method::DELETE, "/v1/tenants/t0", None::<&()>)
        .await
        .unwrap();
    assert_eq!(st, 200);
    assert_eq!(
        (dep.kind, dep.admitted, dep.seq),
        (DecisionKind::Depart, false, 4)
    );
    // its token died with its tenancy
    let e = own
        .call::<Value>(Method::GET, "/v1/tenants/t0", None::<&()>)
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Refused { status: 401, .. }), "{e}");
    let (st, a2) = submit(
        &c,
        &tenant("t2", "client2", Some("server1"), "200ms", 1000.0),
    )
    .await;
    assert_eq!(st, 201, "{a2:?}");
    // a departed tenant's name is free again (it is decided, here rejected: the link is full)
    let (st, again) = submit(
        &c,
        &tenant("t0", "client0", Some("server1"), "200ms", 1000.0),
    )
    .await;
    assert_eq!((st, again.decision.admitted), (200, false), "{again:?}");

    // the log holds every decision, rejections included, in order
    let (_, log): (u16, Vec<Decision>) = c
        .call(Method::GET, "/v1/decisions?since=0", None::<&()>)
        .await
        .unwrap();
    let seqs: Vec<(u64, bool)> = log.iter().map(|d| (d.seq, d.admitted)).collect();
    assert_eq!(
        seqs,
        [
            (1, true),
            (2, true),
            (3, false),
            (4, false),
            (5, true),
            (6, false)
        ]
    );
    let (_, bounds): (u16, Vec<BoundView>) = c
        .call(Method::GET, "/v1/bounds", None::<&()>)
        .await
        .unwrap();
    assert_eq!(bounds.len(), 2);
    assert!(bounds
        .iter()
        .all(|b| b.meets_slo && b.bound_s.is_some_and(|v| v <= 0.2)));
    s.stop().await;
}

#[tokio::test]
async fn a_what_if_decides_without_changing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let c = s.admin();
    small_cluster(&c).await;
    submit(&c, &mmpp_tenant("a", "client0", "server1", "50ms")).await;
    let health = |c: ServiceClient| async move {
        c.call::<Health>(Method::GET, "/healthz", None::<&()>)
            .await
            .unwrap()
            .1
    };
    let before = health(c.clone()).await;
    let (st, d): (u16, Decision) = c
        .call(
            Method::POST,
            "/v1/what-if",
            Some(&mmpp_tenant("b", "client1", "server1", "50ms")),
        )
        .await
        .unwrap();
    assert_eq!(st, 200);
    assert!(
        d.admitted && d.kind == DecisionKind::WhatIf && d.seq == 0,
        "{d:?}"
    );
    assert!(d.bound_s.is_some());
    assert_eq!(health(c.clone()).await, before);
    let names: Vec<String> = tenants(&c).await.into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a"]);
    // the same tenant, submitted for real, gets the bound the what-if promised
    let (st, a) = submit(&c, &mmpp_tenant("b", "client1", "server1", "50ms")).await;
    assert_eq!(st, 201);
    assert_eq!(a.decision.bound_s, d.bound_s);
    s.stop().await;
}

#[tokio::test]
async fn placement_spreads_tenants_that_do_not_share_a_server_and_rejects_when_none_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let c = s.admin();
    host(&c, "s1", "1Gbit", Some(1.0)).await;
    host(&c, "s2", "1Gbit", Some(1.0)).await;
    host(&c, "small", "100Mbit", Some(1.0)).await;
    for i in 0..3 {
        host(&c, &format!("c{i}"), "1Gbit", None).await;
    }
    // 1 MB reads at 70/s: ~74 MB/s of responses, well over half of a 1 Gbit/s link; each
    // tenant has its own client
    let big = |name: &str| {
        let client = format!("c{}", &name[1..]);
        let mut t = tenant(name, &client, None, "2s", 70.0);
        t["traffic"]["model"]["sizes"]["bytes"] = serde_json::json!(1_048_576);
        t
    };
    let (st, a) = submit(&c, &big("p0")).await;
    assert_eq!(st, 201, "{a:?}");
    assert!(a.decision.placed);
    assert_eq!(a.decision.server.as_deref(), Some("s1"));
    let (st, b) = submit(&c, &big("p1")).await;
    assert_eq!(st, 201, "{b:?}");
    assert_eq!(
        b.decision.server.as_deref(),
        Some("s2"),
        "s1 is full; the 100 Mbit/s host cannot hold a placement server"
    );
    let (st, r) = submit(&c, &big("p2")).await;
    assert_eq!(st, 200, "{r:?}");
    assert!(!r.decision.admitted);
    assert!(
        r.decision.reason.as_deref().unwrap().contains("placement"),
        "{r:?}"
    );
    // p0 leaves: its server is free again
    c.call::<Decision>(Method::DELETE, "/v1/tenants/p0", None::<&()>)
        .await
        .unwrap();
    let (st, r) = submit(&c, &big("p2")).await;
    assert_eq!(st, 201, "{r:?}");
    assert_eq!(r.decision.server.as_deref(), Some("s1"));
    s.stop().await;
}

#[tokio::test]
async fn a_restart_answers_the_same_state_and_goes_on_deciding_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let s = Server::start(&db, Config::default()).await;
    let c = s.admin();
    small_cluster(&c).await;
    let mut tokens = Vec::new();
    for (i, slo) in ["50ms", "20ms", "80ms"].iter().enumerate() {
        let (st, a) = submit(
            &c,
            &mmpp_tenant(&format!("m{i}"), &format!("client{i}"), "server1", slo),
        )
        .await;
        assert_eq!(st, 201);
        tokens.push(a.token.unwrap());
    }
    c.call::<Decision>(Method::DELETE, "/v1/tenants/m0", None::<&()>)
        .await
        .unwrap();
    let get = |c: ServiceClient| async move {
        let t: Vec<TenantView> = c
            .call(Method::GET, "/v1/tenants", None::<&()>)
            .await
            .unwrap()
            .1;
        let b: Vec<BoundView> = c
            .call(Method::GET, "/v1/bounds", None::<&()>)
            .await
            .unwrap()
            .1;
        let d: Vec<Decision> = c
            .call(Method::GET, "/v1/decisions", None::<&()>)
            .await
            .unwrap()
            .1;
        (t, b, d)
    };
    let before = get(c.clone()).await;
    let next = mmpp_tenant("m3", "client3", "server1", "30ms");
    let (_, what_if): (u16, Decision) = c
        .call(Method::POST, "/v1/what-if", Some(&next))
        .await
        .unwrap();
    s.stop().await;

    let s = Server::start(&db, Config::default()).await;
    let c = s.admin();
    assert_eq!(get(c.clone()).await, before);
    let (_, again): (u16, Decision) = c
        .call(Method::POST, "/v1/what-if", Some(&next))
        .await
        .unwrap();
    assert_eq!(
        (again.admitted, again.bound_s, again.priority),
        (what_if.admitted, what_if.bound_s, what_if.priority)
    );
    // tenants' tokens survive the restart (their digests are stored)
    let own = s.client(Some(&tokens[1]));
    let (_, me): (u16, TenantView) = own
        .call(Method::GET, "/v1/tenants/m1", None::<&()>)
        .await
        .unwrap();
    assert_eq!(me.name, "m1");
    s.stop().await;
}

#[tokio::test]
async fn a_tenant_sees_only_its_own_tenancy() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let c = s.admin();
    small_cluster(&c).await;
    let (_, a) = submit(&c, &mmpp_tenant("a", "client0", "server1", "50ms")).await;
    submit(&c, &mmpp_tenant("b", "client1", "server1", "50ms")).await;
    let own = s.client(a.token.as_deref());
    let names: Vec<String> = tenants(&own).await.into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["a"]);
    let (_, log): (u16, Vec<Decision>) = own
        .call(Method::GET, "/v1/decisions", None::<&()>)
        .await
        .unwrap();
    assert!(log.iter().all(|d| d.tenant == "a") && log.len() == 1);
    let (_, b): (u16, Vec<BoundView>) = own
        .call(Method::GET, "/v1/bounds", None::<&()>)
        .await
        .unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].tenant, "a");
    s.stop().await;
}
