//! The catalogue of bad requests: each gets the right 4xx, a JSON body saying what is wrong
//! and naming the field, and the state is unchanged afterwards.

use crate::common::{host, mmpp_flow, mmpp_tenant, new_vdc, tenant, Server, ADMIN};
use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use tailbound_dataplane::clock::ManualClock;
use tailbound_service::api::{Admitted, ErrorBody, Health, HostToken};
use tailbound_service::client::{ClientError, ServiceClient};
use tailbound_service::{AdminToken, Config, Service};

/// One bad request.
struct Bad {
    what: &'static str,
    method: Method,
    path: &'static str,
    /// None: no Authorization header
    token: Option<String>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    field: Option<&'static str>,
}

fn bad(
    what: &'static str,
    path: &'static str,
    body: Value,
    status: u16,
    field: Option<&'static str>,
) -> Bad {
    Bad {
        what,
        method: Method::POST,
        path,
        token: Some(ADMIN.into()),
        content_type: Some("application/json"),
        body: serde_json::to_vec(&body).unwrap(),
        status,
        field,
    }
}

fn with(t: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut t = t.clone();
    f(&mut t);
    t
}

#[tokio::test]
async fn every_bad_request_gets_its_4xx_naming_the_field_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let c = s.admin();
    host(&c, "server1", "1Gbit", None).await;
    host(&c, "disk1", "1Gbit", Some(1.0)).await;
    host(&c, "client0", "1Gbit", None).await;
    let (_, a): (u16, Admitted) = c
        .call(
            Method::POST,
            "/v1/tenants",
            Some(&mmpp_tenant("a", "client0", "server1", "50ms")),
        )
        .await
        .unwrap();
    let (_, b): (u16, Admitted) = c
        .call(
            Method::POST,
            "/v1/tenants",
            Some(&mmpp_tenant("b", "client0", "server1", "50ms")),
        )
        .await
        .unwrap();
    let token_a = a.token.unwrap();
    let token_b = b.token.unwrap();
    // a VDC with enforcer e1 of A's flow
    let (_, _): (u16, Value) = c
        .call(Method::POST, "/v1/vdcs", Some(&new_vdc("dc")))
        .await
        .unwrap();
    let (_, _): (u16, Value) = c
        .call(
            Method::POST,
            "/v1/vdcs/dc/enforcers/e1/register",
            Some(&json!({"flows": ["A/a-kv"]})),
        )
        .await
        .unwrap();
    let (_, issued): (u16, HostToken) = c
        .call(Method::POST, "/v1/hosts/client0/token", None::<&()>)
        .await
        .unwrap();
    let host_token = issued.token;
    let (_, vdc_before): (u16, Value) = c
        .call(Method::GET, "/v1/vdcs/dc/status", None::<&()>)
        .await
        .unwrap();
    let (_, before): (u16, Health) = c.call(Method::GET, "/healthz", None::<&()>).await.unwrap();

    let ok = mmpp_tenant("new", "client0", "server1", "50ms");
    let gen = tenant("gen", "client0", Some("server1"), "50ms", 100.0);
    let t = "/v1/tenants";
    let mut cases = vec![
        Bad {
            body: b"{".to_vec(),
            ..bad("malformed JSON", t, json!(null), 400, None)
        },
        bad("a list instead of an object", t, json!([]), 400, None),
        bad(
            "slo of the wrong type",
            t,
            with(&ok, |v| v["slo"] = json!(true)),
            400,
            Some("slo"),
        ),
        bad(
            "name of the wrong type",
            t,
            with(&ok, |v| v["name"] = json!(7)),
            400,
            Some("name"),
        ),
        bad(
            "missing traffic",
            t,
            with(&ok, |v| {
                v.as_object_mut().unwrap().remove("traffic");
            }),
            400,
            Some("traffic"),
        ),
        bad(
            "unknown field",
            t,
            with(&ok, |v| v["colour"] = json!("red")),
            400,
            Some("colour"),
        ),
        bad(
            "percentile 100",
            t,
            with(&ok, |v| v["percentile"] = json!(100.0)),
            422,
            Some("percentile"),
        ),
        bad(
            "percentile 0",
            t,
            with(&ok, |v| v["percentile"] = json!(0.0)),
            422,
            Some("percentile"),
        ),
        bad(
            "percentile -5",
            t,
            with(&ok, |v| v["percentile"] = json!(-5.0)),
            422,
            Some("percentile"),
        ),
        bad(
            "SLO 0",
            t,
            with(&ok, |v| v["slo"] = json!(0.0)),
            422,
            Some("slo"),
        ),
        bad(
            "SLO negative",
            t,
            with(&ok, |v| v["slo"] = json!("-3ms")),
            422,
            Some("slo"),
        ),
        bad(
            "SLO without a unit we know",
            t,
            with(&ok, |v| v["slo"] = json!("fast")),
            422,
            Some("slo"),
        ),
        bad(
            "unknown client host",
            t,
            with(&ok, |v| v["client"] = json!("nowhere")),
            422,
            Some("client"),
        ),
        bad(
            "unknown server host",
            t,
            with(&ok, |v| v["server"] = json!("nowhere")),
            422,
            Some("server"),
        ),
        bad(
            "duplicate tenant",
            t,
            with(&ok, |v| v["name"] = json!("a")),
            409,
            Some("name"),
        ),
        bad(
            "a name with a space",
            t,
            with(&ok, |v| v["name"] = json!("a b")),
            422,
            Some("name"),
        ),
        bad(
            "no traffic given",
            t,
            with(&ok, |v| v["traffic"] = json!({})),
            422,
            Some("traffic"),
        ),
        bad(
            "two kinds of traffic",
            t,
            with(&ok, |v| v["traffic"]["trace"] = json!("0,R,0,4096\n")),
            422,
            Some("traffic"),
        ),
        bad(
            "seed without a model",
            t,
            with(&ok, |v| v["traffic"]["seed"] = json!(3)),
            422,
            Some("traffic.seed"),
        ),
        bad(
            "a trace that is not one",
            t,
            with(&ok, |v| {
                v["traffic"] = json!({"trace": "hello, world\nnot a trace\n"})
            }),
            422,
            Some("traffic.trace"),
        ),
        bad(
            "a generator asking for 1e9 requests",
            t,
            with(&gen, |v| v["traffic"]["model"]["duration_s"] = json!(1e7)),
            422,
            Some("traffic.model.duration_s"),
        ),
        bad(
            "a generator with a negative rate",
            t,
            with(&gen, |v| {
                v["traffic"]["model"]["arrival"]["rate_per_s"] = json!(-1.0)
            }),
            422,
            Some("traffic.model"),
        ),
        bad(
            "flows without net-out",
            t,
            with(&ok, |v| {
                v["traffic"]["flows"] = json!([mmpp_flow("net-in", 10.0, 100.0)])
            }),
            422,
            Some("traffic.flows"),
        ),
        bad(
            "an unknown stage",
            t,
            with(&ok, |v| v["traffic"]["flows"][0]["stage"] = json!("disk")),
            400,
            Some("traffic.flows[0].stage"),
        ),
        bad(
            "an MMPP whose rows do not sum to 1",
            t,
            with(&ok, |v| {
                v["traffic"]["flows"][0]["mmpp"]["transition"] = json!([[0.5]])
            }),
            422,
            Some("traffic.flows[0].mmpp"),
        ),
        bad(
            "a stage twice",
            t,
            with(&ok, |v| v["traffic"]["flows"][1]["stage"] = json!("net-in")),
            422,
            Some("traffic.flows[1].stage"),
        ),
        bad(
            "a storage flow the tenant does not have",
            t,
            with(&ok, |v| {
                v["traffic"]["flows"][1]["stage"] = json!("storage")
            }),
            422,
            Some("traffic.flows[1].stage"),
        ),
        bad(
            "storage on a server without storage",
            t,
            with(&gen, |v| v["storage"] = json!(true)),
            422,
            Some("storage"),
        ),
        bad(
            "depends on an unknown tenant",
            t,
            with(&ok, |v| v["depends_on"] = json!(["ghost"])),
            422,
            Some("depends_on"),
        ),
        bad(
            "depends on itself",
            t,
            with(&ok, |v| v["depends_on"] = json!(["new"])),
            422,
            Some("depends_on"),
        ),
        bad(
            "placement without requests",
            t,
            with(&ok, |v| {
                v.as_object_mut().unwrap().remove("server");
            }),
            422,
            Some("server"),
        ),
        Bad {
            body: vec![b' '; 9 << 20],
            ..bad("a 9 MiB body", t, json!(null), 413, None)
        },
        Bad {
            content_type: None,
            ..bad("no content type", t, ok.clone(), 415, None)
        },
        Bad {
            content_type: Some("text/plain"),
            ..bad("text/plain", t, ok.clone(), 415, None)
        },
        Bad {
            token: None,
            ..bad("no token", t, ok.clone(), 401, None)
        },
        Bad {
            token: Some("tb_wrong".into()),
            ..bad("a wrong token", t, ok.clone(), 401, None)
        },
        Bad {
            token: Some(token_a.clone()),
            ..bad(
                "a tenant's token on an admin route",
                t,
                ok.clone(),
                403,
                None,
            )
        },
        Bad {
            token: None,
            ..bad(
                "what-if without a token",
                "/v1/what-if",
                ok.clone(),
                401,
                None,
            )
        },
        bad(
            "what-if with percentile 100",
            "/v1/what-if",
            with(&ok, |v| v["percentile"] = json!(100.0)),
            422,
            Some("percentile"),
        ),
        bad(
            "a duplicate host",
            "/v1/hosts",
            json!({"name": "server1", "link": "1Gbit"}),
            409,
            Some("name"),
        ),
        bad(
            "a link that is not a rate",
            "/v1/hosts",
            json!({"name": "h9", "link": "fast"}),
            422,
            Some("link"),
        ),
        bad(
            "a link of 0",
            "/v1/hosts",
            json!({"name": "h9", "link": 0}),
            422,
            Some("link"),
        ),
        bad(
            "negative storage",
            "/v1/hosts",
            json!({"name": "h9", "link": "1Gbit", "storage": -1}),
            422,
            Some("storage"),
        ),
        Bad {
            token: None,
            ..bad(
                "a host without a token",
                "/v1/hosts",
                json!({"name": "h9", "link": "1Gbit"}),
                401,
                None,
            )
        },
    ];
    let empty = |what, method, path, token: Option<String>, status, field| Bad {
        what,
        method,
        path,
        token,
        content_type: None,
        body: Vec::new(),
        status,
        field,
    };
    cases.extend([
        empty(
            "depart without a token",
            Method::DELETE,
            "/v1/tenants/a",
            None,
            401,
            None,
        ),
        empty(
            "Basic instead of Bearer",
            Method::DELETE,
            "/v1/tenants/a",
            Some("Basic YWRtaW4=".into()),
            401,
            None,
        ),
        empty(
            "another tenant's token departs",
            Method::DELETE,
            "/v1/tenants/b",
            Some(token_a.clone()),
            403,
            None,
        ),
        empty(
            "another tenant's token reads",
            Method::GET,
            "/v1/tenants/a",
            Some(token_b.clone()),
            403,
            None,
        ),
        empty(
            "depart an unknown tenant",
            Method::DELETE,
            "/v1/tenants/ghost",
            Some(ADMIN.into()),
            404,
            None,
        ),
        empty(
            "read an unknown tenant",
            Method::GET,
            "/v1/tenants/ghost",
            Some(ADMIN.into()),
            404,
            None,
        ),
        empty(
            "a since that is not a number",
            Method::GET,
            "/v1/decisions?since=x",
            Some(ADMIN.into()),
            400,
            Some("since"),
        ),
        empty(
            "a limit out of range",
            Method::GET,
            "/v1/decisions?limit=5000",
            Some(ADMIN.into()),
            422,
            Some("limit"),
        ),
        empty(
            "list tenants without a token",
            Method::GET,
            "/v1/tenants",
            None,
            401,
            None,
        ),
        empty(
            "a host's decisions without a token",
            Method::GET,
            "/v1/hosts/client0/decisions",
            None,
            401,
            None,
        ),
        empty(
            "a host's decisions with a tenant's token",
            Method::GET,
            "/v1/hosts/client0/decisions",
            Some(token_a.clone()),
            403,
            None,
        ),
        empty(
            "an unknown host's decisions",
            Method::GET,
            "/v1/hosts/ghost/decisions",
            Some(ADMIN.into()),
            404,
            None,
        ),
        empty(
            "a long poll beyond the longest wait",
            Method::GET,
            "/v1/hosts/client0/decisions?since=2&wait=61",
            Some(ADMIN.into()),
            422,
            Some("wait"),
        ),
        empty(
            "an applied version that is not a number",
            Method::GET,
            "/v1/hosts/client0/decisions?applied=-3",
            Some(ADMIN.into()),
            400,
            Some("applied"),
        ),
        empty(
            "an unknown parameter of a host's decisions",
            Method::GET,
            "/v1/hosts/client0/decisions?version=3",
            Some(ADMIN.into()),
            400,
            Some("version"),
        ),
        empty(
            "the agents with a tenant's token",
            Method::GET,
            "/v1/agents",
            Some(token_b.clone()),
            403,
            None,
        ),
        empty(
            "an unknown route",
            Method::GET,
            "/v1/nothing",
            Some(ADMIN.into()),
            404,
            None,
        ),
    ]);
    // VDCs: the errors of `tailbound vdc check` for the file, and the controller protocol's
    let v = "/v1/vdcs";
    let vdc = new_vdc("dc2");
    let spec = json!({"name": "dc2", "spec": {"servers": [{"name": "s0", "link": 1e9}], "appliances": [], "tenants": []}});
    let report = |flow: &str, hops: usize, span: u64| {
        let x = vec![1.0; hops];
        json!({"span_ns": span, "flows": [{"flow": flow, "report": {"utilization": x, "backlog": x, "queueing": x, "outstanding": x, "completed": x}}]})
    };
    cases.extend([
        bad(
            "a VDC file that is not TOML",
            v,
            with(&vdc, |x| x["toml"] = json!("[[servers]]\nname = ")),
            400,
            Some("toml"),
        ),
        bad(
            "a VDC server with a negative link",
            v,
            with(&vdc, |x| {
                x["toml"] = json!(crate::common::VDC_TOML.replace("link = 1e10", "link = -1"))
            }),
            422,
            Some("toml"),
        ),
        bad(
            "a VDC flow to an unknown appliance",
            v,
            with(&vdc, |x| {
                x["toml"] = json!(crate::common::VDC_TOML.replace("dst = \"kv\"", "dst = \"db\""))
            }),
            422,
            Some("toml"),
        ),
        bad(
            "a VDC link of the wrong type",
            v,
            with(&spec, |x| x["spec"]["servers"][0]["link"] = json!("fast")),
            400,
            Some("spec.servers[0].link"),
        ),
        bad(
            "a VDC server with an unknown key",
            v,
            with(&spec, |x| x["spec"]["servers"][0]["speed"] = json!(1)),
            400,
            Some("spec.servers[0].speed"),
        ),
        bad("a VDC without flows", v, spec.clone(), 422, Some("spec")),
        bad(
            "a VDC with neither spec nor toml",
            v,
            json!({"name": "dc2"}),
            400,
            Some("spec"),
        ),
        bad(
            "a VDC with both spec and toml",
            v,
            with(&vdc, |x| x["spec"] = spec["spec"].clone()),
            400,
            Some("toml"),
        ),
        bad(
            "a VDC name with a space",
            v,
            with(&vdc, |x| x["name"] = json!("dc 2")),
            422,
            Some("name"),
        ),
        bad(
            "a VDC control interval of 0",
            v,
            with(&vdc, |x| x["controller"]["interval_s"] = json!(0)),
            422,
            Some("controller.interval_s"),
        ),
        bad(
            "a VDC controller that never flags silent enforcers",
            v,
            with(&vdc, |x| x["controller"]["stale_after"] = json!(0)),
            422,
            Some("controller"),
        ),
        bad(
            "an unknown global mechanism",
            v,
            with(&vdc, |x| x["controller"]["global"] = json!("fifo")),
            400,
            Some("controller.global"),
        ),
        bad("a VDC name taken", v, new_vdc("dc"), 409, Some("name")),
        Bad {
            token: None,
            ..bad("a VDC without a token", v, vdc.clone(), 401, None)
        },
        Bad {
            token: Some(token_a.clone()),
            ..bad("a VDC with a tenant's token", v, vdc.clone(), 403, None)
        },
        bad(
            "an enforcer registers an unknown flow",
            "/v1/vdcs/dc/enforcers/e2/register",
            json!({"flows": ["A/nope"]}),
            422,
            Some("flows"),
        ),
        bad(
            "an enforcer id with a space",
            "/v1/vdcs/dc/enforcers/e%202/register",
            json!({"flows": ["A/a-kv"]}),
            400,
            Some("id"),
        ),
        bad(
            "an enforcer registers at an unknown VDC",
            "/v1/vdcs/ghost/enforcers/e1/register",
            json!({"flows": ["A/a-kv"]}),
            404,
            None,
        ),
        bad(
            "a report of an enforcer that has not registered",
            "/v1/vdcs/dc/enforcers/e2/report",
            report("A/a-kv", 3, 1_000_000_000),
            404,
            None,
        ),
        bad(
            "a report of a flow another enforcer polices",
            "/v1/vdcs/dc/enforcers/e1/report",
            report("B/b-kv", 3, 1_000_000_000),
            422,
            Some("flows"),
        ),
        bad(
            "a report with a vector short of the flow's hops",
            "/v1/vdcs/dc/enforcers/e1/report",
            report("A/a-kv", 2, 1_000_000_000),
            422,
            Some("report"),
        ),
        bad(
            "a report of an empty span",
            "/v1/vdcs/dc/enforcers/e1/report",
            report("A/a-kv", 3, 0),
            422,
            Some("report"),
        ),
        bad(
            "a report without its span",
            "/v1/vdcs/dc/enforcers/e1/report",
            json!({"flows": []}),
            400,
            Some("span_ns"),
        ),
        empty(
            "a VDC's allocations with a tenant's token",
            Method::GET,
            "/v1/vdcs/dc/status",
            Some(token_b.clone()),
            403,
            None,
        ),
        empty(
            "an enforcer's allocation without a token",
            Method::GET,
            "/v1/vdcs/dc/enforcers/e1/allocation",
            None,
            401,
            None,
        ),
        Bad {
            token: Some(host_token.clone()),
            ..bad(
                "an enforcer with another host's token",
                "/v1/vdcs/dc/enforcers/e1/register",
                json!({"flows": ["A/a-kv"]}),
                403,
                None,
            )
        },
        empty(
            "another host's decisions with a host's token",
            Method::GET,
            "/v1/hosts/server1/decisions",
            Some(host_token.clone()),
            403,
            None,
        ),
        empty(
            "the tenants with a host's token",
            Method::GET,
            "/v1/tenants",
            Some(host_token.clone()),
            403,
            None,
        ),
        empty(
            "a host token issued with a tenant's token",
            Method::POST,
            "/v1/hosts/client0/token",
            Some(token_a.clone()),
            403,
            None,
        ),
        empty(
            "a token for an unknown host",
            Method::POST,
            "/v1/hosts/ghost/token",
            Some(ADMIN.into()),
            404,
            None,
        ),
        empty(
            "remove an unknown VDC",
            Method::DELETE,
            "/v1/vdcs/ghost",
            Some(ADMIN.into()),
            404,
            None,
        ),
    ]);
    assert!(cases.len() >= 30);
    let raw = ServiceClient::new(&s.url(), None, std::time::Duration::from_secs(60)).unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let client = raw.with_token(case.token.clone());
        let a = client
            .raw(
                case.method.clone(),
                case.path,
                case.content_type,
                Bytes::from(case.body.clone()),
            )
            .await
            .unwrap();
        let body: Result<ErrorBody, _> = serde_json::from_slice(&a.body);
        let ok = a.status == case.status
            && body.as_ref().is_ok_and(|b| {
                !b.error.is_empty() && (case.field.is_none() || b.field.as_deref() == case.field)
            });
        if !ok {
            failures.push(format!(
                "{}: {} {} -> {} {}",
                case.what,
                case.method,
                case.path,
                a.status,
                String::from_utf8_lossy(&a.body)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // nothing changed
    let (_, after): (u16, Health) = c.call(Method::GET, "/healthz", None::<&()>).await.unwrap();
    assert_eq!(after, before);
    let (_, vdcs): (u16, Vec<Value>) = c.call(Method::GET, "/v1/vdcs", None::<&()>).await.unwrap();
    assert_eq!(vdcs.len(), 1, "{vdcs:?}");
    let (_, vdc_after): (u16, Value) = c
        .call(Method::GET, "/v1/vdcs/dc/status", None::<&()>)
        .await
        .unwrap();
    assert_eq!(vdc_after["enforcers"][0]["reports"], 0, "{vdc_after}");
    assert_eq!(vdc_after["flows"], vdc_before["flows"]);
}

/// A request over a plain socket: the status line and headers of the answer, lower-cased.
async fn head_of(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    c.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    text.split("\r\n\r\n").next().unwrap().to_string()
}

#[tokio::test]
async fn each_client_has_its_own_rate_limits_answered_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        mutations_per_s: 1.0,
        mutation_burst: 2.0,
        reads_per_s: 0.5,
        read_burst: 3.0,
        ..Config::default()
    };
    let clock = std::sync::Arc::new(ManualClock::new(0));
    let (service, _) = Service::open_with_clock(
        &dir.path().join("s.db"),
        config,
        AdminToken::Given(ADMIN.into()),
        clock.clone(),
    )
    .unwrap();
    let s = Server::serve(service).await;
    let c = s.admin();
    host(&c, "h1", "1Gbit", None).await;
    host(&c, "h2", "1Gbit", None).await;
    let h3 = json!({"name": "h3", "link": "1Gbit"});
    let e = c
        .call::<Value>(Method::POST, "/v1/hosts", Some(&h3))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Refused { status: 429, body } if body.error.contains("mutating requests")),
        "{e}"
    );
    // another token has its own bucket (and is then refused for what it is)
    let other = s.client(Some("tb_not-the-admin"));
    let e = other
        .call::<Value>(Method::POST, "/v1/hosts", Some(&h3))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Refused { status: 401, .. }), "{e}");
    // reads have their own budget: the admin still reads
    c.call::<Value>(Method::GET, "/v1/hosts", None::<&()>)
        .await
        .unwrap();
    // each host's agent polls count apart, even on the admin token
    for _ in 0..3 {
        c.call::<Value>(Method::GET, "/v1/hosts/h1/decisions", None::<&()>)
            .await
            .unwrap();
    }
    let e = c
        .call::<Value>(Method::GET, "/v1/hosts/h1/decisions", None::<&()>)
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Refused { status: 429, .. }), "{e}");
    c.call::<Value>(Method::GET, "/v1/hosts/h2/decisions", None::<&()>)
        .await
        .unwrap();
    // without a token, reads count against the peer address: 3, then 429 for 2 s
    let get = "GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    for _ in 0..3 {
        assert!(head_of(s.addr, get).await.starts_with("http/1.1 200"));
    }
    let refused = head_of(s.addr, get).await;
    assert!(refused.starts_with("http/1.1 429"), "{refused}");
    assert!(refused.contains("retry-after: 2"), "{refused}");
    // the clock moves, the buckets refill: one more mutation and one more read, no more
    clock.advance(2_000_000_000);
    assert!(head_of(s.addr, get).await.starts_with("http/1.1 200"));
    host(&c, "h3", "1Gbit", None).await;
    host(&c, "h4", "1Gbit", None).await;
    let e = c
        .call::<Value>(
            Method::POST,
            "/v1/hosts",
            Some(&json!({"name": "h5", "link": "1Gbit"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Refused { status: 429, .. }), "{e}");
    let (_, hosts): (u16, Vec<Value>) =
        c.call(Method::GET, "/v1/hosts", None::<&()>).await.unwrap();
    assert_eq!(hosts.len(), 4, "a refused request changed nothing");
}
