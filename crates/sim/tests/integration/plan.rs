//! Replaying scenarios under decisions (who runs, priorities, servers, rate limits) and the
//! OPT search, on a seeded synthetic scenario where the arithmetic is known: each tenant puts
//! ~4.7 MB/s of responses on a 12.5 MB/s server link, so two fit and three overload it.

use std::path::Path;
use tailbound_model::{Decisions, RateLimit, Stage, TenantDecision};
use tailbound_scenario::Scenario;
use tailbound_sim::{opt, opt_greedy, Plan, Replay, ReplayError, ReplayPart, Service};

fn scenario() -> Scenario {
    let mut text = String::from(
        r#"
[[hosts]]
name = "server1"
link = "100Mbit"
[[hosts]]
name = "server2"
link = "100Mbit"
"#,
    );
    for i in 0..4 {
        text += &format!(
            r#"
[[hosts]]
name = "client{i}"
link = "1Gbit"
[[tenants]]
name = "t{i}"
client = "client{i}"
server = "server1"
slo = "50ms"
seed = {seed}
model = {{ arrival = {{ model = "poisson", rate_per_s = 1000 }}, sizes = {{ model = "fixed", bytes = 4096 }}, read_fraction = 1.0, duration_s = 40, vocabulary = "key_value" }}
"#,
            seed = i + 1
        );
    }
    tailbound_scenario::own::parse_toml(Path::new("plan-test.toml"), &text).expect("scenario")
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

const SERVICE: Service = Service::Chunked { mtu_bytes: 1500 };

#[test]
fn opt_is_the_most_tenants_the_server_link_carries() {
    let s = scenario();
    let replay = Replay::load(&s, ReplayPart::SecondHalf).unwrap();
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
    let s = scenario();
    let replay = Replay::load(&s, ReplayPart::SecondHalf).unwrap();
    let mut trials = Vec::new();
    let kept = opt_greedy(&replay, SERVICE, 180.0, |t, ok| trials.push((t, ok))).unwrap();
    assert_eq!(kept, [0, 1]);
    assert_eq!(trials, [(0, true), (1, true), (2, false), (3, false)]);
}

#[test]
fn rejected_tenants_do_not_run() {
    let s = scenario();
    let replay = Replay::load(&s, ReplayPart::SecondHalf).unwrap();
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
    let s = scenario();
    let replay = Replay::load(&s, ReplayPart::SecondHalf).unwrap();
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
    let s = scenario();
    let replay = Replay::load(&s, ReplayPart::SecondHalf).unwrap();
    let free = replay
        .run(
            &Plan::from_decisions(&s, &decide(&[true, false, false, false])).unwrap(),
            SERVICE,
            180.0,
        )
        .unwrap();
    let mut d = decide(&[true, false, false, false]);
    // below the ~4.7 MB/s the responses need: the shaper's backlog grows without end
    d.tenants[0].limits.push(RateLimit {
        flow: "t0-resp".into(),
        stage: Stage::NetOut,
        rate: 4.0e6,
        burst: 50_000.0,
    });
    let limited = replay
        .run(&Plan::from_decisions(&s, &d).unwrap(), SERVICE, 180.0)
        .unwrap();
    assert!(free.tenants[0].meets_slo);
    assert!(!limited.tenants[0].meets_slo);
    assert!(limited.tenants[0].p50_s > 10.0 * free.tenants[0].p50_s);
}

#[test]
fn moving_a_tenant_to_another_server_relieves_the_first() {
    let s = scenario();
    let replay = Replay::load(&s, ReplayPart::SecondHalf).unwrap();
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
    let e = replay
        .run(&Plan::from_decisions(&s, &d).unwrap(), SERVICE, 180.0)
        .unwrap_err();
    assert!(
        matches!(e, ReplayError::UnknownServer { ref queue, .. } if queue == "server9-in"),
        "{e}"
    );
}

#[test]
fn bad_decisions_name_what_is_wrong() {
    let s = scenario();
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
        limits: vec![RateLimit {
            flow: "t0-req".into(),
            stage: Stage::NetIn,
            rate: 1e6,
            burst: 0.0,
        }],
    });
    let e = Plan::from_decisions(&s, &d).unwrap_err().to_string();
    assert!(
        e.contains("\"t0-req\"") && e.contains("t3-req, t3-resp"),
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
