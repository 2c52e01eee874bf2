//! Every route of the protocol through the real axum server and the hyper client; the
//! controller's clock is manual, so steps happen when the test says.

use std::sync::Arc;
use std::time::Duration;
use tailbound_allocation::{FlowReport, VdcSpec};
use tailbound_control::protocol::{FlowStats, Register, Report};
use tailbound_control::server::serve;
use tailbound_control::{ClientError, ControlClient, ControlConfig, ControlState, Service};
use tailbound_dataplane::clock::ManualClock;

const SPEC: &str = r#"
[[servers]]
name = "s0"
link = 1e9
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e6
[[tenants]]
name = "A"
vms = [{ name = "a", server = "s0", link = 1e9 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 4e5 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
"#;

const S: u64 = 1_000_000_000;

#[tokio::test]
async fn routes_round_trip_and_errors_say_why() {
    let (_, dc) = VdcSpec::parse("t.toml", SPEC).unwrap();
    let clock = Arc::new(ManualClock::new(0));
    let state = ControlState::new(dc.clone(), ControlConfig::default(), 0).unwrap();
    let service = Service::new(state, clock.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, service.clone(), async {
        let _ = stopped.await;
    }));
    let c = ControlClient::new(&url, Duration::from_secs(5)).unwrap();

    let info = c.datacenter().await.unwrap();
    assert_eq!(info.datacenter, dc);
    assert_eq!((info.interval_ns, info.samples_per_interval), (S, 10));

    // not registered yet: 404 with the fix in the message
    match c.allocation("e1").await {
        Err(ClientError::Refused {
            status: 404,
            message,
            ..
        }) => assert!(message.contains("register first"), "{message}"),
        other => panic!("{other:?}"),
    }
    let reg = Register {
        flows: vec!["A/a-kv".into()],
    };
    let u = c.register("e1", &reg).await.unwrap();
    assert_eq!((u.epoch, u.flows.len()), (1, 1));
    let bad = Register {
        flows: vec!["A/zz".into()],
    };
    match c.register("e1", &bad).await {
        Err(ClientError::Refused {
            status: 422,
            message,
            ..
        }) => assert!(message.contains("unknown flow \"A/zz\""), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.register("no/slash", &reg).await,
        Err(ClientError::BadId(_))
    ));

    let hops = dc.flows[0].hops.len();
    let report = Report {
        span_ns: S,
        flows: vec![FlowStats {
            flow: "A/a-kv".into(),
            report: FlowReport {
                utilization: vec![7e5; hops],
                backlog: vec![0.0; hops],
                queueing: vec![0.0; hops],
                outstanding: vec![0.0; hops],
                completed: vec![7e5; hops],
                samples: Vec::new(),
            },
        }],
    };
    c.report("e1", &report).await.unwrap();
    clock.set(S);
    assert!(service.step().unwrap());
    let u = c.allocation("e1").await.unwrap();
    assert_eq!(u.epoch, 2);
    assert!(
        u.flows[0].rates.iter().all(|&r| (r - 7e5).abs() < 1.0),
        "{u:?}"
    );
    let st = c.status().await.unwrap();
    assert_eq!(st.enforcers[0].reports, 1);
    assert_eq!(st.flows[0].enforcer.as_deref(), Some("e1"));
    assert_eq!(st.resources.len(), 3);

    // a malformed body is refused by the server, with its reason
    let raw = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let req = hyper::Request::post(format!("{url}/v1/enforcers/e1/report"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            b"{\"span_ns\": -1}",
        )))
        .unwrap();
    let resp = raw.request(req).await.unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());

    let _ = stop.send(());
    server.await.unwrap().unwrap();
    // the controller is gone: an error, not a hang
    assert!(matches!(
        c.status().await,
        Err(ClientError::Unreachable { .. } | ClientError::Timeout { .. })
    ));
}

#[test]
fn bad_urls_are_refused() {
    for url in ["ftp://x:1", "http://", "http://h:1/path", "not a url"] {
        let e = ControlClient::new(url, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("expected http://HOST:PORT"), "{e}");
    }
}
