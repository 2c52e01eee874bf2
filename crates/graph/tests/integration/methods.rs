//! Which methods apply, static priority, overload, SNC.

use crate::example;
use tailbound_calculus::{bound_all, Bound, BoundOptions, Method};
use tailbound_graph::{analyze, Graph, GraphMethod, Outcome};
use tailbound_model::{
    FlowModels, Mmpp, MmppState, NetworkBuilder, NewTenant, SizeModel, Slo, Stage,
};

fn mmpp(lo: f64, hi: f64) -> Mmpp {
    let state = |p: f64| MmppState {
        rate_per_s: p / 1e-5,
        arrival_prob: p,
        sizes: SizeModel::Exponential { mean: 2000.0 },
        intervals: 0,
        requests: 0,
        work: 0.0,
    };
    Mmpp {
        step_s: 1e-5,
        interval_s: 1.0,
        states: vec![state(lo), state(hi)],
        transition: vec![vec![1.0 - 1e-6, 1e-6], vec![5e-6, 1.0 - 5e-6]],
    }
}

#[test]
fn static_priority_protects_the_high_level() {
    let g = Graph::from_toml(&example("priority.toml")).unwrap();
    let r = analyze(&g, &GraphMethod::ALL).unwrap();
    let d = |name: &str, m| {
        r.flows
            .iter()
            .find(|f| f.flow == name)
            .unwrap()
            .outcome(m)
            .unwrap()
            .delay_s()
            .unwrap()
    };
    // control at sw1-p1: its own 2000 B plus one 1500 B bulk packet at 125 MB/s = 28 µs
    let first_hop = (2000.0 + 1500.0) / 125e6;
    assert!(d("control", GraphMethod::Tfa) > first_hop);
    assert!(d("control", GraphMethod::Sfa) < d("bulk", GraphMethod::Sfa));
    assert!(d("control", GraphMethod::Sfa) <= d("control", GraphMethod::Tfa) + 1e-12);
    // no MMPPs: SNC says why
    let snc = r.flows[0].outcome(GraphMethod::Snc).unwrap();
    assert!(
        matches!(snc, Outcome::NotApplicable { reason } if reason.contains("no MMPP")),
        "{snc:?}"
    );
}

#[test]
fn an_overloaded_server_is_unbounded_and_named() {
    let text =
        example("tandem.toml").replace("rate_bytes_per_s = 375000", "rate_bytes_per_s = 1.2e6");
    let g = Graph::from_toml(&text).unwrap();
    let r = analyze(&g, &[GraphMethod::Tfa, GraphMethod::Sfa]).unwrap();
    for b in &r.flows[0].bounds {
        assert!(
            matches!(&b.outcome, Outcome::Unbounded { reason } if reason.contains("\"s2\"")),
            "{b:?}"
        );
    }
    // c1 does not cross s2
    assert!(r.flows[1]
        .outcome(GraphMethod::Sfa)
        .unwrap()
        .delay_s()
        .is_some());
}

#[test]
fn snc_equals_the_calculus_on_the_same_network() {
    let text = r#"
name = "snc"
[[servers]]
name = "a"
service = [{ rate_bytes_per_s = 2e6 }]
[[servers]]
name = "b"
service = [{ rate_bytes_per_s = 3e6 }]
[[flows]]
name = "x"
path = ["a", "b"]
[[flows]]
name = "y"
path = ["b"]
percentile = 99
"#;
    let mut g = Graph::from_toml(text).unwrap();
    g.flows[0].mmpp = Some(mmpp(0.002, 0.006));
    g.flows[1].mmpp = Some(mmpp(0.001, 0.004));
    let r = analyze(&g, &GraphMethod::ALL).unwrap();
    // DNC needs arrival curves
    assert!(matches!(
        r.flows[0].outcome(GraphMethod::Tfa).unwrap(),
        Outcome::NotApplicable { .. }
    ));
    assert!(
        matches!(&r.servers[0].tfa, Outcome::NotApplicable { reason } if reason.contains("no arrival curve"))
    );
    let mut b = NetworkBuilder::new();
    let (qa, qb) = (b.queue("a", 2e6), b.queue("b", 3e6));
    for (name, path, m, p) in [
        ("x", vec![qa, qb], mmpp(0.002, 0.006), 99.9),
        ("y", vec![qb], mmpp(0.001, 0.004), 99.0),
    ] {
        let mut t = NewTenant::new(name, Slo::new(1.0, p).unwrap());
        t.priority = Some(0);
        let t = b.tenant(t);
        b.flow_on(
            t,
            name,
            Stage::NetIn,
            path,
            FlowModels {
                mmpp: Some(m),
                arrival: None,
            },
        );
    }
    let want = bound_all(
        &b.build().unwrap(),
        Method::SncMeister,
        &BoundOptions::default(),
    )
    .unwrap();
    for (f, w) in r.flows.iter().zip(&want) {
        let Outcome::Bounded {
            delay_s,
            violation_probability,
            backlog_bytes,
        } = f.outcome(GraphMethod::Snc).unwrap()
        else {
            panic!("{f:?}");
        };
        let Bound::Within(expect) = w.total else {
            panic!("{w:?}")
        };
        assert_eq!(*delay_s, expect);
        assert!(backlog_bytes.is_none());
        assert!((violation_probability - if f.flow == "x" { 1e-3 } else { 1e-2 }).abs() < 1e-12);
    }
    // a rate-latency server is not an SNC queue
    g.servers[0].service[0].latency_s = 1e-6;
    let r = analyze(&g, &[GraphMethod::Snc]).unwrap();
    assert!(
        matches!(r.flows[0].outcome(GraphMethod::Snc).unwrap(), Outcome::NotApplicable { reason } if reason.contains("\"a\" is not constant-rate"))
    );
}

#[test]
fn report_json_round_trips() {
    let g = Graph::from_toml(&example("tandem.toml")).unwrap();
    let r = analyze(&g, &[GraphMethod::Tfa, GraphMethod::Sfa, GraphMethod::Snc]).unwrap();
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"result\":\"not-applicable\""), "{text}");
    let back: tailbound_graph::GraphReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back.flows.len(), r.flows.len());
    for (b, f) in back.flows.iter().zip(&r.flows) {
        assert_eq!(b.flow, f.flow);
        for (x, y) in b.bounds.iter().zip(&f.bounds) {
            assert_eq!(x.method, y.method);
            match (x.outcome.delay_s(), y.outcome.delay_s()) {
                (Some(p), Some(q)) => assert!((p - q).abs() <= 1e-12 * q, "{p} vs {q}"),
                _ => assert_eq!(x.outcome, y.outcome),
            }
        }
    }
}
