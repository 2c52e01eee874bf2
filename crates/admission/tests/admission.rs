//! The admission engine on seeded synthetic tenants whose arithmetic is known: each puts
//! ~4.7 MB/s of responses on one 12.5 MB/s server link, so at most two fit.

use proptest::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use tailbound_admission::{Admission, AdmissionError, Outcome, Policy, Rebound};
use tailbound_calculus::{packetization_allowance_s, TenantBound};
use tailbound_model::{NetworkBuilder, NewTenant};
use tailbound_scenario::Scenario;
use tailbound_testdata::synthetic::{self, Cluster, Rng};

fn scenario(slos_ms: &[u32]) -> Scenario {
    scenario_at(slos_ms, 1000)
}

/// The tenants of [`scenario`] with `per_s` requests per second each instead of 1000.
fn scenario_at(slos_ms: &[u32], per_s: u32) -> Scenario {
    let mut text = String::from("[[hosts]]\nname = \"server1\"\nlink = \"100Mbit\"\n");
    for (i, slo) in slos_ms.iter().enumerate() {
        text += &format!(
            "[[hosts]]\nname = \"client{i}\"\nlink = \"1Gbit\"\n[[tenants]]\nname = \"t{i}\"\n\
             client = \"client{i}\"\nserver = \"server1\"\nslo = \"{slo}ms\"\nseed = {}\n\
             model = {{ arrival = {{ model = \"poisson\", rate_per_s = {per_s} }}, sizes = {{ model = \
             \"fixed\", bytes = 4096 }}, read_fraction = 1.0, duration_s = 40, vocabulary = \
             \"key_value\" }}\n",
            i + 1,
        );
    }
    tailbound_scenario::own::parse_toml(Path::new("admission-test.toml"), &text).unwrap()
}

/// A third tenant on a link that carries two overloads it: every tenant's bound there is
/// unbounded, and the rejection names the newcomer's own miss, found first (a decision bounds
/// the newcomer before the admitted tenants and stops at the first miss).
#[test]
fn a_rejection_names_the_newcomers_own_miss_first() {
    let s = scenario(&[200, 200, 200]);
    let mut checked = Vec::new();
    for policy in Policy::ALL {
        for rebound in [Rebound::Neighbourhood, Rebound::Full] {
            let mut a = Admission::new(&s.network, policy)
                .unwrap()
                .with_rebound(rebound);
            let outcomes: Vec<_> = (0..3).map(|t| a.arrive(t).unwrap()).collect();
            if outcomes[..2].iter().any(|o| !o.admitted) {
                continue; // this policy does not fit two: nothing to overload
            }
            let third = &outcomes[2];
            assert!(!third.admitted, "{policy}, {rebound:?}: {third:?}");
            let reason = third.reason.as_deref().unwrap_or_default();
            assert!(
                reason.starts_with("tenant \"t2\""),
                "{policy}, {rebound:?}: the reason names the newcomer: {reason}"
            );
            checked.push(policy);
        }
    }
    assert!(
        checked.contains(&Policy::SncMeister) && checked.len() >= 4,
        "too few policies fit two tenants to test: {checked:?}"
    );
}

#[test]
fn every_policy_stops_before_the_link_overloads() {
    let s = scenario(&[200, 200, 200, 200]);
    for policy in Policy::ALL {
        let mut a = Admission::new(&s.network, policy).unwrap();
        let outcomes: Vec<_> = (0..4).map(|t| a.arrive(t).unwrap()).collect();
        let admitted = outcomes.iter().filter(|o| o.admitted).count();
        assert!(
            admitted <= 2,
            "{policy}: {admitted} admitted on a link that carries two"
        );
        assert!(
            outcomes[0].admitted,
            "{policy}: the first tenant alone fits: {:?}",
            outcomes[0]
        );
        for o in outcomes.iter().filter(|o| !o.admitted) {
            assert!(o.reason.is_some(), "{policy}: a rejection says why");
            assert!(o.bound_s.is_none_or(|b| b.is_finite()), "{policy}: {o:?}");
        }
        // every admitted tenant's bound now: within its SLO, no lower than when it was
        // admitted (later tenants only add traffic), and the last one's is the one it got
        let bounds = a.bounds().unwrap();
        let ids: Vec<usize> = bounds.iter().map(|b| b.tenant).collect();
        assert_eq!(ids, a.admitted(), "{policy}");
        for b in &bounds {
            let now = b.total.seconds().expect("admitted tenants are bounded");
            let then = outcomes[b.tenant].bound_s.unwrap();
            assert!(b.meets_slo && now <= 0.2, "{policy}: {b:?}");
            assert!(now >= then * (1.0 - 1e-12), "{policy}: {now} < {then}");
            assert!(
                b.flows
                    .iter()
                    .all(|f| s.network.tenants[b.tenant].flows.contains(&f.flow)),
                "{policy}: flow indices are the network's"
            );
        }
        let last = bounds.last().unwrap();
        assert_eq!(
            last.total.seconds(),
            outcomes[last.tenant].bound_s,
            "{policy}"
        );
        let d = a.decisions();
        assert_eq!(d.tenants.len(), 4);
        assert_eq!(d.tenants.iter().filter(|t| t.admitted).count(), admitted);
        let limited = d.tenants.iter().any(|t| !t.limits.is_empty());
        assert_eq!(limited, !policy.is_snc(), "{policy}: rate limits");
    }
}

#[test]
fn a_tighter_newcomer_moves_existing_tenants_down_and_departures_free_room() {
    let s = scenario(&[100, 20, 100, 100]);
    let mut a = Admission::new(&s.network, Policy::SncMeister).unwrap();
    let first = a.arrive(0).unwrap();
    assert_eq!((first.admitted, first.level), (true, Some(0)));
    let second = a.arrive(1).unwrap();
    assert!(second.admitted, "{second:?}");
    assert_eq!(second.level, Some(0));
    assert_eq!(second.changed, vec![(0, 0, 1)], "t0 drops to level 1");
    assert!(!a.arrive(2).unwrap().admitted, "a third overloads the link");
    assert_eq!(a.depart(1).unwrap(), vec![(0, 1, 0)], "t0 back to level 0");
    assert!(a.arrive(3).unwrap().admitted, "room after the departure");
    assert!(matches!(a.depart(2), Err(AdmissionError::NotAdmitted(_))));
    assert!(matches!(a.arrive(0), Err(AdmissionError::Arrived(_))));
}

#[test]
fn an_unknown_dependency_fails_that_arrival_only() {
    let s = scenario(&[100, 100]);
    let mut a = Admission::new(&s.network, Policy::SncMeister).unwrap();
    let e = a.arrive_with_dependencies(0, &["nobody"]).unwrap_err();
    assert!(
        e.to_string().contains("\"nobody\"") && e.to_string().contains("t0, t1"),
        "{e}"
    );
    assert!(a.admitted().is_empty());
    assert!(a.arrive(0).unwrap().admitted, "the tenant may arrive again");
    // dependent on t0 the two may burst together (Hölder): at ~75% load that no longer fits
    // in 100 ms, while two independent tenants do
    let dependent = a.arrive_with_dependencies(1, &["t0"]).unwrap();
    assert!(!dependent.admitted, "{dependent:?}");
    let mut b = Admission::new(&s.network, Policy::SncMeister).unwrap();
    assert!(b.arrive(0).unwrap().admitted);
    let independent = b.arrive(1).unwrap();
    assert!(independent.admitted, "{independent:?}");
    assert!(dependent.bound_s.unwrap() > independent.bound_s.unwrap());
}

#[test]
fn qjump_puts_a_tenant_on_the_first_level_fast_enough_for_it() {
    let s = scenario(&[200]);
    let mut a = Admission::new(&s.network, Policy::QjumpPlusPlus).unwrap();
    let o = a.arrive(0).unwrap();
    // ~4.7 MB/s of responses on a 12.5 MB/s link: 50% (level 6) is the first rate ≥ 1.2×
    assert_eq!((o.admitted, o.level), (true, Some(6)), "{o:?}");
    let d = a.decisions();
    let resp = d.tenants[0]
        .limits
        .iter()
        .find(|l| l.flow == "t0-resp")
        .unwrap();
    assert!((resp.bucket.rate - 0.5 * 12.5e6).abs() < 1.0, "{resp:?}");
}

#[test]
fn bounds_on_other_traffic_keep_the_decisions_and_follow_the_traffic() {
    let s = scenario(&[200, 200, 200, 200]);
    // each tenant 10% busier (~5.2 MB/s, under every policy's rate limits), then twice as busy
    // (~9.4 MB/s: above them, and two of them overload the link)
    let busier = scenario_at(&[200, 200, 200, 200], 1100);
    let double = scenario_at(&[200, 200, 200, 200], 2000);
    for policy in Policy::ALL {
        let mut a = Admission::new(&s.network, policy).unwrap();
        for t in 0..4 {
            a.arrive(t).unwrap();
        }
        let bounds = a.bounds().unwrap();
        assert_eq!(
            a.bounds_on(&s.network).unwrap(),
            bounds,
            "{policy}: the same traffic"
        );
        let more = a.bounds_on(&busier.network).unwrap();
        for (m, b) in more.iter().zip(&bounds) {
            assert_eq!((m.tenant, m.priority), (b.tenant, b.priority), "{policy}");
            let (m, b) = (m.total.seconds().unwrap(), b.total.seconds().unwrap());
            assert!(m > b, "{policy}: busier traffic, bound {m} not above {b}");
        }
        for m in a.bounds_on(&double.network).unwrap() {
            assert!(!m.meets_slo, "{policy}: {m:?}");
            let why = match &m.total {
                tailbound_calculus::Bound::Unbounded(why) => why.clone(),
                other => panic!("{policy}: {other:?}"),
            };
            if !policy.is_snc() {
                assert!(why.contains("rate limits cannot carry"), "{policy}: {why}");
            }
        }
    }
    // another SLO, or fewer tenants, is not the same network with other traffic
    let a = Admission::new(&s.network, Policy::SncMeister).unwrap();
    for other in [scenario(&[200, 200, 200, 100]), scenario(&[200, 200, 200])] {
        let e = a.bounds_on(&other.network).unwrap_err();
        assert!(matches!(e, AdmissionError::TrafficMismatch(_)), "{e}");
    }
}

#[test]
fn packetization_adds_its_allowance_to_every_bound() {
    let s = scenario(&[200, 200, 200, 200]);
    let net = &s.network;
    for policy in Policy::ALL {
        let mut fluid = Admission::new(net, policy).unwrap().with_mtu(None);
        let mut packets = Admission::new(net, policy).unwrap();
        let mut jumbo = Admission::new(net, policy).unwrap().with_mtu(Some(9000));
        for t in 0..4 {
            let (f, p) = (fluid.arrive(t).unwrap(), packets.arrive(t).unwrap());
            jumbo.arrive(t).unwrap();
            assert_eq!(
                f.admitted, p.admitted,
                "{policy}: tens of microseconds of 200 ms decide nothing here"
            );
        }
        let bounds = [fluid.bounds(), packets.bounds(), jumbo.bounds()].map(Result::unwrap);
        for ((f, p), j) in bounds[0].iter().zip(&bounds[1]).zip(&bounds[2]) {
            let extra = |b: &TenantBound| b.total.seconds().unwrap() - f.total.seconds().unwrap();
            // by default, Ethernet packets: 2 x 1500 B / R per link crossed, plus 1 us
            let want = |mtu: u64| packetization_allowance_s(net, f.tenant, mtu);
            assert!((extra(p) - want(1500)).abs() < 1e-12, "{policy}");
            assert!((extra(j) - want(9000)).abs() < 1e-12, "{policy}");
            assert!(want(9000) > want(1500) && want(1500) > 1e-6);
        }
    }
}

/// The controller service grows its network between arrivals: an engine resumed on a network
/// with the next tenant appended decides as one that had it from the start, and a restored
/// grant counts as admitted.
#[test]
fn resuming_on_a_grown_network_and_restoring_grants_decide_as_the_whole_run() {
    let s = scenario(&[200, 200, 200]);
    for policy in Policy::ALL {
        let mut whole = Admission::new(&s.network, policy).unwrap();
        let expected: Vec<_> = (0..3).map(|t| whole.arrive(t).unwrap()).collect();

        let nets: Vec<_> = (1..=3)
            .map(|n| s.network.subset(&(0..n).collect::<Vec<_>>()).0)
            .collect();
        let mut state = Admission::new(&nets[0], policy).unwrap().into_state();
        for (t, net) in nets.iter().enumerate() {
            let mut a = Admission::resume(net, state).unwrap();
            assert_eq!(a.arrive(t).unwrap(), expected[t], "{policy}: tenant {t}");
            state = a.into_state();
        }

        let mut restored = Admission::new(&s.network, policy).unwrap();
        for t in whole.admitted() {
            let g = whole.grant(t).unwrap().clone();
            restored.restore(t, g, None).unwrap();
        }
        assert_eq!(restored.admitted(), whole.admitted(), "{policy}");
        assert_eq!(
            restored.bounds().unwrap(),
            whole.bounds().unwrap(),
            "{policy}"
        );
        assert!(matches!(
            restored.restore(0, whole.grant(0).unwrap().clone(), None),
            Err(AdmissionError::Arrived(_))
        ));
    }
}

/// The same network grown one tenant at a time in place ([`Admission::extend`]) decides as
/// one that had every tenant from the start; a tenant appended and not decided can be dropped
/// again, an arrived one cannot.
#[test]
fn a_network_grown_in_place_decides_as_the_whole_run() {
    let cluster = Cluster {
        clients: 3,
        servers: 2,
        link_bytes_per_s: 12.5e6,
    };
    let whole = synthetic::network(cluster, 6, 7);
    for policy in Policy::ALL {
        let mut a = Admission::new(&whole, policy).unwrap();
        let expected: Vec<_> = (0..6).map(|t| a.arrive(t).unwrap()).collect();
        let mut grown =
            Admission::owned(synthetic::hosts(cluster).build().unwrap(), policy).unwrap();
        let mut rng = Rng::new(7);
        for (i, want) in expected.iter().enumerate() {
            let (t, flows) = synthetic::tenant(&mut rng, cluster, i);
            let size = grown.network().size();
            let append = |b: &mut NetworkBuilder| {
                let ti = b.tenant(t.clone());
                for (stage, m) in &flows {
                    b.flow(ti, *stage, m.clone())?;
                }
                Ok(ti)
            };
            // a proposal dropped, then taken
            let ti = grown.extend(append).unwrap();
            grown.truncate(size).unwrap();
            assert_eq!(grown.network().size(), size);
            let ti2 = grown.extend(append).unwrap();
            assert_eq!((ti, ti2), (i, i));
            assert_eq!(&grown.arrive(i).unwrap(), want, "{policy}: tenant {i}");
            assert!(matches!(
                grown.truncate(size),
                Err(AdmissionError::Retract(_))
            ));
        }
        assert_eq!(grown.network(), &whole, "{policy}");
        // a duplicate name is refused and leaves the network as it was
        let size = grown.network().size();
        let dup = grown.extend(|b| {
            Ok(b.tenant(NewTenant::new(
                "t0",
                tailbound_model::Slo::new(0.01, 99.9).unwrap(),
            )))
        });
        assert!(matches!(dup, Err(AdmissionError::Network(_))), "{dup:?}");
        assert_eq!(grown.network().size(), size);
    }
}

/// Compares one decision of the incremental engine with the full re-bound's.
fn same_outcome(inc: &Outcome, full: &Outcome, what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(inc.admitted, full.admitted, "{}", what);
    prop_assert_eq!(inc.level, full.level, "{}", what);
    prop_assert_eq!(&inc.changed, &full.changed, "{}", what);
    prop_assert_eq!(&inc.reason, &full.reason, "{}", what);
    match (inc.bound_s, full.bound_s) {
        (Some(a), Some(b)) => prop_assert!(
            (a - b).abs() <= 1e-9 * b.abs(),
            "{what}: bound {a} incrementally, {b} re-bounding everything"
        ),
        (a, b) => prop_assert_eq!(a, b, "{}", what),
    }
    Ok(())
}

/// The levels an engine keeps as tenants come and go are those of its admitted tenants taken
/// together: the dense rank of their SLOs (SNC and PriorityMeister), or their grants' levels.
fn levels_are_recomputed_ones(
    a: &Admission,
    net: &tailbound_model::Network,
    policy: Policy,
    what: &str,
) -> Result<(), TestCaseError> {
    let admitted = a.admitted();
    let expected: HashMap<usize, u32> = match policy {
        Policy::SiloPlusPlus | Policy::QjumpPlusPlus => admitted
            .iter()
            .map(|&t| (t, a.grant(t).map_or(u32::MAX, |g| g.level)))
            .collect(),
        _ => admitted
            .iter()
            .copied()
            .zip(net.priorities_of(&admitted))
            .collect(),
    };
    prop_assert_eq!(&a.priorities(), &expected, "{}", what);
    for &t in &admitted {
        prop_assert_eq!(a.priority(t), expected.get(&t).copied(), "{}", what);
    }
    Ok(())
}

/// Random arrivals (some bursting with an admitted tenant) and departures on random small
/// clusters, loaded so that some arrivals are rejected: re-bounding only the tenants an arrival
/// affects ([`Rebound::Neighbourhood`]) decides exactly as re-bounding every tenant at its
/// level or below ([`Rebound::Full`]), with the same bounds, for every policy; the levels
/// kept incrementally are those recomputed from the admitted tenants; and the bounds of
/// everyone admitted agree at the end.
fn incremental_equals_full(
    policy: Policy,
    seed: u64,
    clients: usize,
    servers: usize,
    tenants: usize,
) -> Result<(), TestCaseError> {
    let cluster = Cluster {
        clients,
        servers,
        link_bytes_per_s: 40e6,
    };
    let net = synthetic::network(cluster, tenants, seed);
    let mut inc = Admission::new(&net, policy).unwrap();
    let mut full = Admission::new(&net, policy)
        .unwrap()
        .with_rebound(Rebound::Full);
    let mut rng = Rng::new(seed ^ 0x5eed);
    for t in 0..tenants {
        let admitted = inc.admitted();
        prop_assert_eq!(&admitted, &full.admitted());
        if !admitted.is_empty() && rng.unit() < 0.25 {
            let gone = admitted[rng.below(admitted.len())];
            prop_assert_eq!(inc.depart(gone).unwrap(), full.depart(gone).unwrap());
        }
        let admitted = inc.admitted();
        let deps: Vec<&str> = if !admitted.is_empty() && rng.unit() < 0.2 {
            vec![net.tenants[admitted[rng.below(admitted.len())]]
                .name
                .as_str()]
        } else {
            Vec::new()
        };
        let a = inc.arrive_with_dependencies(t, &deps).unwrap();
        let b = full.arrive_with_dependencies(t, &deps).unwrap();
        let what = format!("{policy}, seed {seed}: tenant {t} after {admitted:?}");
        same_outcome(&a, &b, &what)?;
        levels_are_recomputed_ones(&inc, &net, policy, &what)?;
    }
    let (a, b) = (inc.bounds().unwrap(), full.bounds().unwrap());
    prop_assert_eq!(a, b);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn incremental_decisions_equal_a_full_rebound(
        seed in any::<u64>(),
        clients in 1usize..5,
        servers in 1usize..4,
        tenants in 3usize..9,
    ) {
        for policy in Policy::ALL {
            incremental_equals_full(policy, seed, clients, servers, tenants)?;
        }
    }
}
