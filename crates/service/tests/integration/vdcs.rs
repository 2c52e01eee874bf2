//! Pulsar's VDCs in the service: the enforcers' client (`tailbound_control::ControlClient`,
//! what `tailbound vdc enforcer` uses) against `tailbound serve` at `/v1/vdcs/NAME`, the
//! allocation against `tailbound vdc alloc`'s, a restart, a silent enforcer.

use crate::common::{new_vdc, Server, ADMIN, VDC_TOML};
use hyper::Method;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tailbound_allocation::FlowReport;
use tailbound_allocation::{allocate_vdc, Mechanism, VdcSpec};
use tailbound_control::protocol::{FlowStats, Register, Report};
use tailbound_control::ControlClient;
use tailbound_dataplane::clock::ManualClock;
use tailbound_service::vdc::VdcView;
use tailbound_service::{AdminToken, Config, Service};

const S: u64 = 1_000_000_000;

/// A flow that used `rate` tokens/s on each of its 3 hops for one second, nothing queued.
fn used(flow: &str, rate: f64) -> FlowStats {
    let v = |x: f64| vec![x; 3];
    FlowStats {
        flow: flow.into(),
        report: FlowReport {
            utilization: v(rate),
            backlog: v(0.0),
            queueing: v(0.0),
            outstanding: v(0.0),
            completed: v(rate),
            samples: Vec::new(),
        },
    }
}

fn open(db: &std::path::Path, clock: &Arc<ManualClock>) -> Arc<Service> {
    let (service, _) = Service::open_with_clock(
        db,
        Config::default(),
        AdminToken::Given(ADMIN.into()),
        clock.clone(),
    )
    .unwrap();
    service
}

#[tokio::test]
async fn an_enforcer_reports_and_gets_what_vdc_alloc_computes_and_it_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let clock = Arc::new(ManualClock::new(5 * S));
    let service = open(&db, &clock);
    let s = Server::serve(service.clone()).await;
    let (status, v): (u16, VdcView) = s
        .admin()
        .call(Method::POST, "/v1/vdcs", Some(&new_vdc("dc1")))
        .await
        .unwrap();
    assert_eq!(status, 201);
    assert_eq!(
        (v.tenants.join(","), v.flows, v.epoch),
        ("A,B".to_string(), 2, 1)
    );

    let c = ControlClient::new(&format!("{}/v1/vdcs/dc1", s.url()), Duration::from_secs(30))
        .unwrap()
        .with_token(Some(ADMIN.into()));
    let info = c.datacenter().await.unwrap();
    assert_eq!(info.interval_ns, S);
    let reg = Register {
        flows: vec!["A/a-kv".into(), "B/b-kv".into()],
    };
    let first = c.register("e1", &reg).await.unwrap();
    assert_eq!(first.epoch, 1);
    // A wants 9e5 tokens/s of kv, B 1e5: one interval's report, then the step
    let report = Report {
        span_ns: S,
        flows: vec![used("A/a-kv", 9e5), used("B/b-kv", 1e5)],
    };
    c.report("e1", &report).await.unwrap();
    clock.advance(S);
    assert_eq!(service.step_vdcs().unwrap(), 1);
    let got = c.allocation("e1").await.unwrap();
    assert_eq!(got.epoch, 2);

    // `tailbound vdc alloc VDC --demand A/a-kv=9e5 --demand B/b-kv=1e5 --global hdrf`
    let (_, dc) = VdcSpec::parse("vdc.toml", VDC_TOML).unwrap();
    let demand = vec![vec![9e5; 3], vec![1e5; 3]];
    let capacity: Vec<f64> = dc.resources.iter().map(|r| r.capacity).collect();
    let want = allocate_vdc(&dc, &demand, &capacity, Mechanism::Hdrf).unwrap();
    for (i, f) in got.flows.iter().enumerate() {
        for (h, (g, w)) in f.rates.iter().zip(&want.rates[i]).enumerate() {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{} hop {h}: service {g}, vdc alloc {w}",
                f.flow
            );
        }
    }
    // and it is not a trivial allocation: B gets its demand at kv, A the rest
    assert!((got.flows[1].rates[1] - 1e5).abs() < 1.0, "{got:?}");
    assert!((got.flows[0].rates[1] - 9e5).abs() < 1.0, "{got:?}");
    s.stop().await;
    drop(service);

    // a restart (a new process: a new clock) answers the same VDC, registration and
    // allocation, before the enforcer says anything
    let clock = Arc::new(ManualClock::new(0));
    let service = open(&db, &clock);
    let s = Server::serve(service.clone()).await;
    let (_, list): (u16, Vec<VdcView>) = s
        .admin()
        .call(Method::GET, "/v1/vdcs", None::<&()>)
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].name.as_str(), list[0].enforcers), ("dc1", 1));
    let c = ControlClient::new(&format!("{}/v1/vdcs/dc1", s.url()), Duration::from_secs(30))
        .unwrap()
        .with_token(Some(ADMIN.into()));
    let again = c.allocation("e1").await.unwrap();
    assert_eq!((again.epoch, &again.flows), (got.epoch, &got.flows));

    // the enforcer goes silent: flagged stale after 3 intervals, its allocation holds
    for _ in 0..4 {
        clock.advance(S);
        service.step_vdcs().unwrap();
    }
    let st = c.status().await.unwrap();
    assert!(st.enforcers[0].stale, "{st:?}");
    assert_eq!(c.allocation("e1").await.unwrap().flows, got.flows);
    let (_, one): (u16, VdcView) = s
        .admin()
        .call(Method::GET, "/v1/vdcs/dc1", None::<&()>)
        .await
        .unwrap();
    assert_eq!((one.stale, one.epoch), (1, got.epoch + 4));
    assert!(one.spec.is_some());

    // removed: gone for the enforcer too, and after another restart
    let (status, _): (u16, Value) = s
        .admin()
        .call(Method::DELETE, "/v1/vdcs/dc1", None::<&()>)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let e = c.allocation("e1").await.unwrap_err().to_string();
    assert!(
        e.contains("404") && e.contains("no VDC named \"dc1\""),
        "{e}"
    );
    s.stop().await;
    drop(service);
    let service = open(&db, &clock);
    assert_eq!(service.step_vdcs().unwrap(), 0);
    let s = Server::serve(service).await;
    let (_, list): (u16, Vec<VdcView>) = s
        .admin()
        .call(Method::GET, "/v1/vdcs", None::<&()>)
        .await
        .unwrap();
    assert!(list.is_empty());
    s.stop().await;
}
