//! Placement of production traces: every policy's limits keep every SLO by the calculus;
//! fast-first-fit never beats first-fit by more than it should; departures re-optimise.

use tailbound_curves::StorageProfile;
use tailbound_model::Slo;
use tailbound_placement::lp::{bounds, LpSolution};
use tailbound_placement::{
    characterize, ClientHost, ClientHosts, ClientNic, LpStage, Placement, PlacementConfig, Placer,
    Policy, Workload,
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
    check_servers_with(placer, ws, ClientNic::Own)
}

fn check_servers_with(placer: &Placer, ws: &[Workload], client_nic: ClientNic) {
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
            client_nic,
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

fn client_hosts(hosts: usize, vms: usize) -> ClientHosts {
    ClientHosts::new(
        (0..hosts)
            .map(|h| ClientHost {
                name: format!("client{h:03}"),
                vms: (0..vms).map(|v| v.to_string()).collect(),
            })
            .collect(),
    )
    .unwrap()
}

/// WorkloadCompactor's topology: a server's workloads share one client host, whose NICs add
/// nothing (the tandem pairs), so no fewer workloads placed and, placing as many, no more
/// servers than with a client NIC per workload; every
/// bound still holds by the calculus with the tandem model, and each server's workloads run
/// on one host no other server uses.
#[test]
fn shared_client_hosts_group_by_server_and_need_no_more_servers() {
    let ws = workloads(24);
    for policy in [
        Policy::CompactorFff,
        Policy::Baseline(tailbound_placement::BaselineRule::Knee),
    ] {
        let mut own = Placer::new(PlacementConfig::new(policy)).unwrap();
        let mut shared = Placer::new(PlacementConfig::new(policy))
            .unwrap()
            .with_client_hosts(client_hosts(24, 15))
            .unwrap();
        assert_eq!(shared.client_nic(), ClientNic::Tandem);
        for w in &ws {
            own.arrive(w.clone()).unwrap();
            shared.arrive(w.clone()).unwrap();
        }
        check_servers_with(&shared, &ws, ClientNic::Tandem);
        // the tandem model only drops a term: whatever fits with own client NICs fits here
        let (placed_own, placed_shared) = (own.assignments().len(), shared.assignments().len());
        assert!(
            placed_shared >= placed_own,
            "{policy}: {placed_shared} < {placed_own}"
        );
        if placed_shared == placed_own {
            assert!(
                shared.servers_in_use() <= own.servers_in_use(),
                "{policy}: {} > {}",
                shared.servers_in_use(),
                own.servers_in_use()
            );
        }
        let a = shared.assignments();
        let mut host_of = std::collections::BTreeMap::new();
        for x in &a {
            let c = x
                .client
                .clone()
                .expect("every placed workload has a client VM");
            let host = host_of.entry(x.server).or_insert_with(|| c.host.clone());
            assert_eq!(*host, c.host, "server {} spans client hosts", x.server);
        }
        let hosts: std::collections::BTreeSet<_> = host_of.values().collect();
        assert_eq!(
            hosts.len(),
            host_of.len(),
            "a client host serves two servers"
        );
        for x in &a {
            assert_eq!(
                x.buckets[LpStage::ClientIn.index()],
                x.buckets[LpStage::NetOut.index()]
            );
        }
    }
}

/// Client VMs are a limit: a server whose host is full takes no more workloads, and without an
/// unused host no server opens.
#[test]
fn full_client_hosts_limit_the_servers() {
    let ws = workloads(12);
    let mut p = Placer::new(PlacementConfig::new(Policy::CompactorFff))
        .unwrap()
        .with_client_hosts(client_hosts(2, 2))
        .unwrap();
    let outcomes: Vec<Placement> = ws.iter().map(|w| p.arrive(w.clone()).unwrap().1).collect();
    let placed = outcomes
        .iter()
        .filter(|o| matches!(o, Placement::Placed { .. }))
        .count();
    assert!(
        (2..=4).contains(&placed),
        "2 hosts of 2 VMs run at most 4 workloads: {outcomes:?}"
    );
    assert!(outcomes.contains(&Placement::NoServer));
    // a departure frees its VM for the next arrival
    p.depart(tailbound_placement::WorkloadId(0)).unwrap();
    let (_, out) = p.arrive(ws[0].clone()).unwrap();
    assert!(matches!(out, Placement::Placed { .. }), "{out:?}");
    assert!(Placer::new(PlacementConfig::new(Policy::Compactor))
        .unwrap()
        .with_client_hosts(client_hosts(1, 1))
        .is_ok());
}
