//! Placement of production traces: every policy's limits keep every SLO by the calculus;
//! fast-first-fit never beats first-fit by more than it should; departures re-optimise.

use tailbound_curves::StorageProfile;
use tailbound_model::Slo;
use tailbound_placement::lp::{bounds, LpSolution};
use tailbound_placement::{
    characterize, LpStage, Placement, PlacementConfig, Placer, Policy, Workload,
};

fn workloads(n: usize) -> Vec<Workload> {
    let profile = StorageProfile::intel710_ssd();
    let slos = [0.1, 0.15, 0.25, 0.5, 1.0];
    tailbound_trace::list_traces(&tailbound_testdata::production_dir())
        .unwrap()
        .iter()
        .take(n)
        .enumerate()
        .map(|(i, p)| {
            let t = tailbound_trace::read_trace(p).unwrap();
            let (first, _) = tailbound_trace::split(&t, 0.5).unwrap();
            Workload {
                name: format!("w{i}"),
                slo: Slo::new(slos[i % slos.len()], 99.9).unwrap(),
                curves: characterize("t", &first.requests, &profile, None).unwrap(),
            }
        })
        .collect()
}

/// Every server's limits, checked with the calculus against the SLOs.
fn check_servers(placer: &Placer, ws: &[Workload]) {
    let a = placer.assignments();
    let servers: std::collections::BTreeSet<usize> = a.iter().map(|x| x.server).collect();
    for k in servers {
        let on: Vec<_> = a.iter().filter(|x| x.server == k).collect();
        let slos: Vec<f64> = on
            .iter()
            .map(|x| ws.iter().find(|w| w.name == x.name).unwrap().slo.latency_s)
            .collect();
        let mut levels: Vec<u32> = on.iter().map(|x| x.priority).collect();
        // priorities are global dense ranks; their order on the server is what matters
        let mut sorted = levels.clone();
        sorted.sort();
        sorted.dedup();
        for l in &mut levels {
            *l = sorted.binary_search(l).unwrap() as u32;
        }
        let sol = LpSolution {
            buckets: on.iter().map(|x| x.buckets).collect(),
            levels,
            rate_sums: [0.0; 3],
        };
        for ((x, slo), bound) in on.iter().zip(&slos).zip(bounds(&sol).unwrap()) {
            assert!(
                bound <= slo + 1e-6,
                "{} on server {k}: bound {bound} > SLO {slo}",
                x.name
            );
        }
        for s in LpStage::SERVER {
            let sum: f64 = on.iter().map(|x| x.buckets[s.index()].rate).sum();
            assert!(sum <= 1.0, "server {k} {} overloaded: {sum}", s.as_str());
        }
    }
}

#[test]
fn compactor_needs_fewer_servers_than_the_baselines_and_keeps_every_bound() {
    let ws = workloads(24);
    let mut servers = std::collections::BTreeMap::new();
    for policy in Policy::all() {
        let mut p = Placer::new(PlacementConfig::new(policy)).unwrap();
        for w in &ws {
            p.arrive(w.clone()).unwrap();
        }
        check_servers(&p, &ws);
        servers.insert(policy.to_string(), (p.servers_in_use(), p.rejected().len()));
    }
    let (c, c_rej) = servers["compactor"];
    let (fff, _) = servers["compactor-fff"];
    assert!(
        fff >= c,
        "fast-first-fit cannot use fewer servers here: {servers:?}"
    );
    for (name, &(s, rejected)) in &servers {
        // on these traces no rule fits a workload alone that the LP cannot fit alone
        assert!(
            rejected >= c_rej,
            "{name} placed a workload the LP cannot: {servers:?}"
        );
        if rejected == c_rej {
            assert!(s >= c, "{name} used {s} < compactor's {c}: {servers:?}");
        }
    }
}

#[test]
fn departures_free_room_and_reoptimise() {
    let ws = workloads(12);
    let mut p = Placer::new(PlacementConfig::new(Policy::Compactor)).unwrap();
    let ids: Vec<_> = ws.iter().map(|w| p.arrive(w.clone()).unwrap().0).collect();
    let before = p.servers_in_use();
    let lps = p.lp_solves();
    for &id in &ids[..6] {
        p.depart(id).unwrap();
    }
    assert!(
        p.lp_solves() > lps,
        "departures must re-solve the touched servers"
    );
    assert!(p.servers_in_use() <= before);
    assert_eq!(p.assignments().len(), 6);
    check_servers(&p, &ws);
    // departing twice is an error
    assert!(p.depart(ids[0]).is_err());
    // the freed room is reused: the first departed workload fits again without a new server
    let opened = p.servers_opened();
    let (_, out) = p.arrive(ws[0].clone()).unwrap();
    assert!(matches!(out, Placement::Placed { .. }));
    assert_eq!(p.servers_opened(), opened);
}

#[test]
fn max_servers_rejects_instead_of_opening() {
    let ws = workloads(12);
    let mut cfg = PlacementConfig::new(Policy::CompactorFff);
    cfg.max_servers = Some(1);
    let mut p = Placer::new(cfg).unwrap();
    let outcomes: Vec<Placement> = ws.iter().map(|w| p.arrive(w.clone()).unwrap().1).collect();
    assert!(outcomes.contains(&Placement::NoServer), "{outcomes:?}");
    assert_eq!(p.servers_opened(), 1);
    let d = p.decisions();
    d.validate().unwrap();
    assert_eq!(d.tenants.len(), 12);
    assert!(d
        .tenants
        .iter()
        .filter(|t| t.admitted)
        .all(|t| t.server.as_deref() == Some("server0") && t.limits.len() == 3));
}

#[test]
fn a_safety_margin_never_packs_tighter() {
    let ws = workloads(16);
    let count = |margin: f64| {
        let mut cfg = PlacementConfig::new(Policy::Compactor);
        cfg.safety_margin = margin;
        let mut p = Placer::new(cfg).unwrap();
        for w in &ws {
            p.arrive(w.clone()).unwrap();
        }
        (p.servers_in_use(), p.rejected().len())
    };
    let (s0, r0) = count(0.0);
    let (s1, r1) = count(0.3);
    assert!(
        s1 + r1 >= s0 + r0,
        "margin 0.3: {s1}+{r1} vs none: {s0}+{r0}"
    );
}
