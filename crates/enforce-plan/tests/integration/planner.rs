//! What the planner builds from decisions: the classes, their parameters and filters, and the
//! errors for decisions a host cannot enforce.

use crate::{decisions, map, map_text, plan_of, state, tenant};
use std::net::Ipv4Addr;
use tailbound_enforce_plan::state::{ClassRole, FilterRole, QdiscParent, QdiscRole};
use tailbound_enforce_plan::{
    link_plan, plan, tos_for_priority, Class, HostMap, PlanError, PlanOptions, PriorAllocations,
    TcState,
};
use tailbound_model::{Excess, Stage};

fn flow_class<'a>(s: &'a TcState, t: &str, bucket: usize) -> &'a Class {
    s.classes
        .iter()
        .find(|c| matches!(&c.serves, Some(ClassRole::Flow { tenant, bucket: b, .. }) if tenant == t && *b == bucket))
        .unwrap_or_else(|| panic!("no class for {t} bucket {bucket}"))
}

fn level_class(s: &TcState, p: u32) -> &Class {
    s.classes
        .iter()
        .find(|c| c.serves == Some(ClassRole::Level { priority: p }))
        .unwrap_or_else(|| panic!("no level {p}"))
}

fn err(d: &tailbound_model::Decisions, m: &HostMap, opts: &PlanOptions) -> PlanError {
    plan(d, m, opts, &PriorAllocations::new()).unwrap_err()
}

#[test]
fn every_flow_gets_a_leaf_at_its_level_with_its_bucket_and_a_filter() {
    let d = decisions(
        vec![
            tenant(
                "t0",
                0,
                &[(Stage::NetIn, 1e6, 64e3), (Stage::NetOut, 2e6, 32e3)],
            ),
            tenant("t1", 2, &[(Stage::NetIn, 3e6, 10e3)]),
        ],
        Excess::Wait,
    );
    let p = plan_of(&d, &map(2));
    let client = state(&p, "client");
    // the link: rate = ceil = 1 Gbit/s
    let link = client
        .class(tailbound_enforce_plan::ClassId::new(1, 1))
        .unwrap();
    assert_eq!(link.serves, Some(ClassRole::Link));
    assert_eq!(
        (link.rate_bytes_per_s, link.ceil_bytes_per_s),
        (125_000_000, 125_000_000)
    );
    // t0's request direction leaves the client, its response the server
    let leaf = flow_class(client, "t0", 0);
    assert_eq!(
        (
            leaf.rate_bytes_per_s,
            leaf.ceil_bytes_per_s,
            leaf.burst_bytes,
            leaf.prio
        ),
        (1_000_000, 1_000_000, 64_000, 0)
    );
    assert_eq!(leaf.parent, Some(level_class(client, 0).id));
    assert!(
        matches!(&leaf.serves, Some(ClassRole::Flow { stage: Stage::NetIn, flow: Some(f), .. }) if f == "t0-net-in")
    );
    let server = state(&p, "server");
    let resp = flow_class(server, "t0", 0);
    assert_eq!(
        (resp.rate_bytes_per_s, resp.burst_bytes),
        (2_000_000, 32_000)
    );
    // t1 has no response limit: its leaf runs at the link rate, at its level
    let t1 = flow_class(server, "t1", 0);
    assert_eq!((t1.rate_bytes_per_s, t1.prio), (125_000_000, 2));
    // filters: t0's request by client address, server address, server port, tcp
    let f = client
        .filters
        .iter()
        .find(|f| matches!(&f.serves, Some(FilterRole::Flow { tenant, .. }) if tenant == "t0"))
        .unwrap();
    let m = f.matches.as_ref().unwrap();
    assert_eq!(m.src, Some(Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(m.dst, Some(Ipv4Addr::new(10, 0, 0, 2)));
    assert_eq!(m.dport, Some(11211));
    assert_eq!(f.flowid, leaf.id);
    // unclassified traffic goes to the best-effort class of the levels' qdisc
    let levels = client
        .qdiscs
        .iter()
        .find(|q| q.serves == Some(QdiscRole::Levels { depth: 0 }))
        .unwrap();
    let be = client
        .classes
        .iter()
        .find(|c| c.serves == Some(ClassRole::BestEffort { depth: 0 }))
        .unwrap();
    assert_eq!(
        be.id,
        tailbound_enforce_plan::ClassId::new(levels.handle, levels.default_minor)
    );
    assert_eq!(be.prio, 7);
}

#[test]
fn excess_waits_or_borrows_up_to_the_link() {
    let d = decisions(
        vec![tenant("t0", 1, &[(Stage::NetIn, 1e6, 5e3)])],
        Excess::Wait,
    );
    let m = map(1);
    let wait = plan_of(&d, &m);
    let leaf = flow_class(state(&wait, "client"), "t0", 0);
    assert_eq!(leaf.ceil_bytes_per_s, 1_000_000);
    let opts = PlanOptions {
        excess: Some(Excess::BestEffort),
        host: None,
    };
    let be = plan(&d, &m, &opts, &PriorAllocations::new()).unwrap();
    assert_eq!(be.excess, Excess::BestEffort);
    let leaf = flow_class(state(&be, "client"), "t0", 0);
    assert_eq!(
        (leaf.rate_bytes_per_s, leaf.ceil_bytes_per_s),
        (1_000_000, 125_000_000)
    );
}

#[test]
fn several_buckets_chain_with_the_long_term_one_at_the_leaf() {
    // a concave curve: 10 MB/s with 10 kB, 1 MB/s with 1 MB
    let d = decisions(
        vec![tenant(
            "t0",
            0,
            &[(Stage::NetIn, 10e6, 10e3), (Stage::NetIn, 1e6, 1e6)],
        )],
        Excess::BestEffort,
    );
    let p = plan_of(&d, &map(1));
    let s = state(&p, "client");
    let leaf = flow_class(s, "t0", 0);
    assert_eq!(
        (leaf.rate_bytes_per_s, leaf.burst_bytes),
        (1_000_000, 1_000_000)
    );
    let inner = flow_class(s, "t0", 1);
    assert_eq!(
        (
            inner.rate_bytes_per_s,
            inner.ceil_bytes_per_s,
            inner.burst_bytes
        ),
        (10_000_000, 10_000_000, 10_000),
        "the other buckets are strict"
    );
    assert_eq!(inner.parent, None, "a root class of its own qdisc");
    let q = s.qdisc(inner.id.major).unwrap();
    assert_eq!(q.parent, QdiscParent::Class(leaf.id));
    assert_eq!(q.default_minor, inner.id.minor);
}

#[test]
fn levels_beyond_seven_nest_a_qdisc_under_a_prio_7_container() {
    let d = decisions(
        vec![
            tenant("t0", 1, &[]),
            tenant("t1", 9, &[]),
            tenant("t2", 16, &[]),
        ],
        Excess::Wait,
    );
    let p = plan_of(&d, &map(3));
    let s = state(&p, "client");
    let depths: Vec<u32> = s
        .qdiscs
        .iter()
        .filter_map(|q| match q.serves {
            Some(QdiscRole::Levels { depth }) => Some(depth),
            _ => None,
        })
        .collect();
    assert_eq!(depths, vec![0, 1, 2]);
    let c1 = s
        .classes
        .iter()
        .find(|c| c.serves == Some(ClassRole::Container { depth: 1 }))
        .unwrap();
    assert_eq!(c1.prio, 7);
    assert_eq!(
        c1.rate_bytes_per_s, 125_000_000,
        "within its rate: ahead of every excess"
    );
    let t1 = flow_class(s, "t1", 0);
    assert_eq!(t1.prio, 2, "priority 9 is prio 2 of the second qdisc");
    // t2 (priority 16 = depth 2) is classified at depths 0, 1 and 2
    let f2: Vec<_> = s
        .filters
        .iter()
        .filter(|f| matches!(&f.serves, Some(FilterRole::Flow { tenant, .. }) if tenant == "t2"))
        .collect();
    assert_eq!(f2.len(), 3);
    assert_eq!(f2[0].flowid, c1.id);
    assert_eq!(f2[2].flowid, flow_class(s, "t2", 0).id);
    // a container's qdisc hangs under it
    let q1 = s
        .qdiscs
        .iter()
        .find(|q| q.serves == Some(QdiscRole::Levels { depth: 1 }))
        .unwrap();
    assert_eq!(q1.parent, QdiscParent::Class(c1.id));
}

#[test]
fn switch_ports_classify_each_level_on_its_dscp() {
    let d = decisions(
        vec![tenant("t0", 0, &[]), tenant("t1", 3, &[])],
        Excess::Wait,
    );
    let p = plan_of(&d, &map(2));
    let sw = state(&p, "switch");
    for prio in [0, 3] {
        let level = level_class(sw, prio);
        assert_eq!(
            level.rate_bytes_per_s, 125_000_000,
            "a leaf within its rate"
        );
        let f = sw
            .filters
            .iter()
            .find(|f| f.serves == Some(FilterRole::Level { priority: prio }))
            .unwrap();
        assert_eq!(f.flowid, level.id);
        let dscp = f.matches.as_ref().unwrap().dscp.unwrap();
        assert_eq!(Some(dscp << 2), tos_for_priority(prio));
    }
    assert!(sw
        .classes
        .iter()
        .all(|c| !matches!(c.serves, Some(ClassRole::Flow { .. }))));
}

#[test]
fn storage_limits_are_listed_as_unenforced() {
    let d = decisions(
        vec![tenant(
            "t0",
            0,
            &[(Stage::NetIn, 1e6, 1e3), (Stage::Storage, 0.3, 0.01)],
        )],
        Excess::Wait,
    );
    let p = plan_of(&d, &map(1));
    assert_eq!(p.unenforced.len(), 1);
    assert_eq!(p.unenforced[0].stage, Stage::Storage);
    assert!(p.unenforced[0].reason.contains("not packets"));
}

#[test]
fn a_link_plan_is_the_link_class_alone() {
    let p = link_plan("veth0", 12.5e6);
    assert_eq!(p.state.qdiscs.len(), 1);
    assert_eq!(p.state.classes.len(), 1);
    assert_eq!(p.state.classes[0].rate_bytes_per_s, 12_500_000);
    assert!(p.state.filters.is_empty());
    // rejected tenants add nothing either
    let mut d = decisions(vec![tenant("t0", 0, &[])], Excess::Wait);
    d.tenants[0].admitted = false;
    let plan = plan_of(&d, &map(0));
    assert_eq!(state(&plan, "client").classes.len(), 1);
}

#[test]
fn bad_decisions_are_errors_that_name_the_value() {
    let m = map(2);
    let none = PlanOptions::default();
    // a tenant missing from the map
    let d = decisions(vec![tenant("t7", 0, &[])], Excess::Wait);
    let e = err(&d, &m, &none).to_string();
    assert!(e.contains("\"t7\"") && e.contains("hosts.toml"), "{e}");
    // an unknown host, on the command line and in the decisions
    let d = decisions(vec![tenant("t0", 0, &[])], Excess::Wait);
    let opts = PlanOptions {
        host: Some("nohost".into()),
        ..PlanOptions::default()
    };
    let e = err(&d, &m, &opts).to_string();
    assert!(
        e.contains("\"nohost\"") && e.contains("client, server, switch"),
        "{e}"
    );
    let mut placed = d.clone();
    placed.tenants[0].server = Some("server9".into());
    let e = err(&placed, &m, &none).to_string();
    assert!(e.contains("\"server9\"") && e.contains("t0"), "{e}");
    // a rate above the link, and rates that add up above it
    let d = decisions(
        vec![tenant("t0", 0, &[(Stage::NetIn, 2e8, 1e3)])],
        Excess::Wait,
    );
    let e = err(&d, &m, &none);
    assert!(
        matches!(e, PlanError::RateAboveLink { rate_bytes_per_s, .. } if rate_bytes_per_s == 2e8),
        "{e}"
    );
    assert!(
        e.to_string().contains("200000000") && e.to_string().contains("125000000"),
        "{e}"
    );
    // a faster bucket beside a slower long-term one bounds bursts and is kept
    let d2 = decisions(
        vec![tenant(
            "t0",
            0,
            &[(Stage::NetIn, 2e8, 1e3), (Stage::NetIn, 1e6, 1e5)],
        )],
        Excess::Wait,
    );
    let p = plan(&d2, &m, &none, &PriorAllocations::new()).unwrap();
    assert_eq!(
        flow_class(state(&p, "client"), "t0", 1).rate_bytes_per_s,
        200_000_000
    );
    let d = decisions(
        vec![
            tenant("t0", 0, &[(Stage::NetIn, 7e7, 1e3)]),
            tenant("t1", 0, &[(Stage::NetIn, 7e7, 1e3)]),
        ],
        Excess::Wait,
    );
    assert!(matches!(
        err(&d, &m, &none),
        PlanError::RatesAboveLink { .. }
    ));
    // priorities beyond the DSCP's reach, and none at all
    let d = decisions(vec![tenant("t0", 63, &[])], Excess::Wait);
    assert!(err(&d, &m, &none).to_string().contains("63"));
    let mut d = decisions(vec![tenant("t0", 0, &[])], Excess::Wait);
    d.tenants[0].priority = None;
    assert!(matches!(err(&d, &m, &none), PlanError::NoPriority { .. }));
    // a bucket HTB cannot hold
    let d = decisions(
        vec![tenant("t0", 0, &[(Stage::NetIn, 1e3, 1e6)])],
        Excess::Wait,
    );
    assert!(matches!(err(&d, &m, &none), PlanError::BurstTooLong { .. }));
    // non-finite numbers never get in
    let d = decisions(
        vec![tenant("t0", 0, &[(Stage::NetIn, f64::NAN, 1e3)])],
        Excess::Wait,
    );
    assert!(matches!(err(&d, &m, &none), PlanError::Decisions(_)));
}

#[test]
fn tenants_no_filter_can_tell_apart_are_an_error() {
    // two tenants between the same hosts without ports
    let text = map_text(0)
        + "[[tenants]]\nname = \"a\"\nclient = { host = \"client\" }\nserver = { host = \"server\" }\n"
        + "[[tenants]]\nname = \"b\"\nclient = { host = \"client\" }\nserver = { host = \"server\", port = 80 }\n";
    let m = HostMap::parse(&text, "hosts.toml").unwrap();
    let d = decisions(vec![tenant("a", 0, &[]), tenant("b", 1, &[])], Excess::Wait);
    let e = plan(&d, &m, &PlanOptions::default(), &PriorAllocations::new()).unwrap_err();
    assert!(matches!(e, PlanError::Ambiguous { .. }), "{e}");
}

#[test]
fn the_shipped_host_map_covers_the_two_server_scenario() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenario/examples/two-servers.hosts.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let m = HostMap::parse(&text, path).unwrap();
    // the decisions `tailbound admit` makes for it: three levels, no limits
    let d = decisions(
        vec![
            tenant("web", 0, &[]),
            tenant("db", 1, &[]),
            tenant("batch", 2, &[]),
        ],
        Excess::Wait,
    );
    let p = plan_of(&d, &m);
    let client = state(&p, "client1");
    assert_eq!(
        client
            .classes
            .iter()
            .filter(|c| matches!(c.serves, Some(ClassRole::Flow { .. })))
            .count(),
        3,
        "every tenant's requests leave client1"
    );
    let server2 = state(&p, "server2");
    assert_eq!(server2.classes[0].rate_bytes_per_s, 1_250_000_000);
    assert_eq!(flow_class(server2, "batch", 0).prio, 2);
}
