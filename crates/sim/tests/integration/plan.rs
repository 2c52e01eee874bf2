//! Replaying scenarios under decisions (who runs, priorities, servers, rate limits) and the
//! OPT search, on a seeded synthetic scenario where the arithmetic is known: each tenant puts
//! ~4.7 MB/s of responses on a 12.5 MB/s server link, so two fit and three overload it.

use tailbound_curves::{stage_work, StorageProfile, WorkFunction};
use tailbound_model::{
    Bucket, Decisions, FlowModels, Network, NetworkBuilder, NewTenant, RateLimit, Request, Slo,
    Stage, TenantDecision,
};
use tailbound_sim::{opt, opt_greedy, Plan, Replay, ReplayError, Transmission};
use tailbound_trace::{generate, ArrivalModel, GenSpec, Part, SizeDist, Vocabulary};

/// Two 100 Mbit/s servers, four clients at 1 Gbit/s, tenant `t<i>` on client `i` and server 1
/// with request and response flows, and each tenant's held-out requests: the second half of
/// a 40 s Poisson trace of 4 KiB reads at 1000/s (seed i + 1).
fn scenario() -> (Network, Vec<Vec<Request>>) {
    let mut b = NetworkBuilder::new();
    let server1 = b.host("server1", 12.5e6, None);
    b.host("server2", 12.5e6, None);
    let mut requests = Vec::new();
    for i in 0..4 {
        let client = b.host(format!("client{i}"), 125e6, None);
        let slo = Slo::new(0.05, 99.9).unwrap();
        let t = b.tenant(NewTenant::new(format!("t{i}"), slo).between(client, server1));
        for stage in [Stage::NetIn, Stage::NetOut] {
            b.flow(t, stage, FlowModels::default()).unwrap();
        }
        let spec = GenSpec {
            arrival: ArrivalModel::Poisson { rate_per_s: 1000.0 },
            sizes: SizeDist::Fixed { bytes: 4096 },
            read_fraction: 1.0,
            duration_s: 40.0,
            vocabulary: Vocabulary::KeyValue,
        };
        let trace = generate(&spec, i + 1).unwrap();
        requests.push(Part::SecondHalf.of(&trace).unwrap().requests);
    }
    (b.build().unwrap(), requests)
}

fn replay<'a>(net: &'a Network, requests: Vec<Vec<Request>>) -> Replay<'a> {
    static PROFILE: std::sync::OnceLock<StorageProfile> = std::sync::OnceLock::new();
    let profile = PROFILE.get_or_init(StorageProfile::intel710_ssd);
    let works: Vec<&dyn WorkFunction> = net
        .flows
        .iter()
        .map(|f| stage_work(f.stage, profile))
        .collect();
    Replay::new(net, requests, works).unwrap()
}

fn decide(admitted: &[bool]) -> Decisions {
    Decisions {
        policy: "test".into(),
        excess: tailbound_model::Excess::Wait,
        tenants: admitted
            .iter()
            .enumerate()
            .map(|(i, &a)| TenantDecision {
                name: format!("t{i}"),
                admitted: a,
                priority: None,
                server: None,
                limits: vec![],
            })
            .collect(),
    }
}

const SERVICE: Transmission = Transmission::Chunked { mtu_bytes: 1500 };

fn limit(flow: &str, stage: Stage, rate: f64, burst: f64) -> RateLimit {
    RateLimit {
        flow: flow.into(),
        stage,
        bucket: Bucket::new(rate, burst),
    }
}

#[test]
fn opt_is_the_most_tenants_the_server_link_carries() {
    let (s, requests) = scenario();
    let replay = replay(&s, requests);
    let mut calls = 0;
    let o = opt(&replay, SERVICE, 180.0, |_, _| calls += 1).unwrap();
    assert_eq!(o.n, 2, "{o:?}");
    assert_eq!(o.tenants, 4);
    assert_eq!(calls, o.probes.len());
    assert!(
        o.probes.contains(&(2, true)) && o.probes.contains(&(3, false)),
        "{o:?}"
    );
}

#[test]
fn trial_and_error_skips_the_tenants_that_do_not_fit() {
    let (s, requests) = scenario();
    let replay = replay(&s, requests);
    let mut trials = Vec::new();
    let kept = opt_greedy(&replay, SERVICE, 180.0, |t, ok| trials.push((t, ok))).unwrap();
    assert_eq!(kept, [0, 1]);
    assert_eq!(trials, [(0, true), (1, true), (2, false), (3, false)]);
}

#[test]
fn rejected_tenants_do_not_run() {
    let (s, requests) = scenario();
    let replay = replay(&s, requests);
    let all = replay.run(&Plan::all(&s), SERVICE, 180.0).unwrap();
    assert!(all.tenants.iter().any(|t| !t.meets_slo));
    let plan = Plan::from_decisions(&s, &decide(&[true, false, true, false])).unwrap();
    let two = replay.run(&plan, SERVICE, 180.0).unwrap();
    let names: Vec<_> = two.tenants.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t0", "t2"]);
    assert!(two.tenants.iter().all(|t| t.meets_slo));
    // the second half of a 40 s Poisson trace at 1000/s
    assert!(two
        .tenants
        .iter()
        .all(|t| (17_000..23_000).contains(&t.requests)));
}

#[test]
fn priorities_from_decisions_protect_the_chosen_tenant() {
    let (s, requests) = scenario();
    let replay = replay(&s, requests);
    let mut d = decide(&[true, true, true, false]);
    d.tenants[2].priority = Some(0);
    d.tenants[0].priority = Some(1);
    d.tenants[1].priority = Some(1);
    let r = replay
        .run(&Plan::from_decisions(&s, &d).unwrap(), SERVICE, 180.0)
        .unwrap();
    // the overloaded link starves the low class; the high class sees a 38% load
    assert!(
        r.tenants[2].meets_slo && r.tenants[2].p999_s < 0.005,
        "{}",
        r.tenants[2].p999_s
    );
    assert!(!r.tenants[0].meets_slo || !r.tenants[1].meets_slo);
}

#[test]
fn rate_limits_from_decisions_delay_the_limited_flow() {
    let (s, requests) = scenario();
    let replay = replay(&s, requests);
    let free = replay
        .run(
            &Plan::from_decisions(&s, &decide(&[true, false, false, false])).unwrap(),
            SERVICE,
            180.0,
        )
        .unwrap();
    let mut d = decide(&[true, false, false, false]);
    // below the ~4.7 MB/s the responses need: the shaper's backlog grows without end
    d.tenants[0]
        .limits
        .push(limit("t0-resp", Stage::NetOut, 4.0e6, 50_000.0));
    let limited = replay
        .run(&Plan::from_decisions(&s, &d).unwrap(), SERVICE, 180.0)
        .unwrap();
    assert!(free.tenants[0].meets_slo);
    assert!(!limited.tenants[0].meets_slo);
    assert!(limited.tenants[0].p50_s > 10.0 * free.tenants[0].p50_s);
}

#[test]
fn moving_a_tenant_to_another_server_relieves_the_first() {
    let (s, requests) = scenario();
    let replay = replay(&s, requests);
    let mut d = decide(&[true, true, true, false]);
    let crowded = replay
        .run(&Plan::from_decisions(&s, &d).unwrap(), SERVICE, 180.0)
        .unwrap();
    assert!(crowded.tenants.iter().any(|t| !t.meets_slo));
    d.tenants[2].server = Some("server2".into());
    let spread = replay
        .run(&Plan::from_decisions(&s, &d).unwrap(), SERVICE, 180.0)
        .unwrap();
    assert!(spread.tenants.iter().all(|t| t.meets_slo));
    d.tenants[2].server = Some("server9".into());
    let e = Plan::from_decisions(&s, &d).unwrap_err();
    assert!(
        matches!(e, ReplayError::Server { ref server, .. } if server == "server9"),
        "{e}"
    );
    assert!(e.to_string().contains("server1, server2, client0"), "{e}");
}

#[test]
fn bad_decisions_name_what_is_wrong() {
    let (s, _) = scenario();
    let mut d = decide(&[true, true, true]);
    let e = Plan::from_decisions(&s, &d).unwrap_err();
    assert!(
        matches!(e, ReplayError::Undecided(ref n) if n == "t3"),
        "{e}"
    );
    d.tenants.push(TenantDecision {
        name: "t3".into(),
        admitted: true,
        priority: None,
        server: None,
        limits: vec![limit("t0-req", Stage::NetIn, 1e6, 0.0)],
    });
    let e = Plan::from_decisions(&s, &d).unwrap_err().to_string();
    assert!(
        e.contains("\"t0-req\"") && e.contains("t3-req, t3-resp"),
        "{e}"
    );
    // a limit whose stage is not its flow's
    let mut d = decide(&[true, true, true, true]);
    d.tenants[0].limits = vec![limit("t0-req", Stage::NetOut, 1e6, 0.0)];
    let e = Plan::from_decisions(&s, &d).unwrap_err().to_string();
    assert!(
        e.contains("\"t0-req\" at stage net-out, but it is a net-in flow"),
        "{e}"
    );
    let mut d = decide(&[true, true, true, true]);
    d.tenants[1].name = "nobody".into();
    let e = Plan::from_decisions(&s, &d).unwrap_err().to_string();
    assert!(
        e.contains("\"nobody\"") && e.contains("t0, t1, t2, t3"),
        "{e}"
    );
}
