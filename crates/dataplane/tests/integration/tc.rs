//! tc enforcement on real interfaces: two network namespaces joined by a veth pair, plans
//! applied with `tc -batch`, read back over netlink; failures half-way, bad targets, the
//! testbed's zero-tenant link plan. Needs root and iproute2 (skipped otherwise, except under
//! CI=true, where a skip is a failure).

use std::process::Command;
use tailbound_dataplane::netns::{LinkOptions, TwoHosts};
use tailbound_dataplane::tc::{read_state, Enforcer, InterfaceReport, Target};
use tailbound_dataplane::TcError;
use tailbound_enforce_plan::state::ClassRole;
use tailbound_enforce_plan::{diff, link_plan, plan, HostMap, Plan, PlanOptions};
use tailbound_model::{Decisions, Excess, Stage};

/// Whether root-only tests can run; under CI=true they must.
pub fn root_or_skip() -> bool {
    tailbound_testdata::root_or_skip("tc enforcement")
}

pub fn two_hosts() -> TwoHosts {
    TwoHosts::create(LinkOptions::default()).expect("two namespaces")
}

/// client (10.199.0.2) and server (10.199.0.1), one veth each, tenants t0..t{n-1} on server
/// ports 7000 + i over UDP; `link` is the link rate of both.
pub fn host_map(h: &TwoHosts, tenants: usize, link: &str) -> HostMap {
    let mut s = format!(
        "[[hosts]]\nname = \"client\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.2\"\nlink = \"{link}\"\n\
         [[hosts]]\nname = \"server\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.1\"\nlink = \"{link}\"\n",
        h.client_ns(),
        h.server_ns()
    );
    for i in 0..tenants {
        s.push_str(&format!(
            "[[tenants]]\nname = \"t{i}\"\nclient = {{ host = \"client\" }}\nserver = {{ host = \"server\", port = {} }}\nprotocol = \"udp\"\n",
            7000 + i
        ));
    }
    HostMap::parse(&s, "test.hosts.toml").expect("valid host map")
}

pub use tailbound_testdata::tenant_decision as tenant;

pub use tailbound_testdata::decisions;

/// Plans with the enforcer's records, as `tailbound enforce apply` does.
pub fn plan_with(e: &Enforcer, d: &Decisions, m: &HostMap) -> Plan {
    let prior = e.prior(m, None).expect("records readable");
    plan(d, m, &PlanOptions::default(), &prior).expect("the decisions plan")
}

pub fn apply_all(e: &Enforcer, p: &Plan) -> Vec<InterfaceReport> {
    p.hosts
        .iter()
        .flat_map(|h| {
            e.apply(h)
                .unwrap_or_else(|err| panic!("apply {}: {err}", h.host))
        })
        .collect()
}

fn target<'a>(ns: &'a str) -> Target<'a> {
    Target {
        host: "h",
        netns: Some(ns),
        interface: "tb0",
    }
}

fn three() -> Decisions {
    decisions(
        vec![
            tenant(
                "t0",
                0,
                &[(Stage::NetIn, 1e6, 64e3), (Stage::NetOut, 2e6, 30e3)],
            ),
            tenant(
                "t1",
                1,
                &[(Stage::NetIn, 10e6, 20e3), (Stage::NetIn, 3e6, 300e3)],
            ),
            tenant("t2", 9, &[]),
        ],
        Excess::BestEffort,
    )
}

#[test]
fn apply_reads_back_reapply_is_a_no_op_a_rate_changes_in_place_and_remove_restores() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    let e = Enforcer::new(dir.path());
    let m = host_map(&h, 3, "1Gbit");
    let d = three();
    let p = plan_with(&e, &d, &m);
    let first = apply_all(&e, &p);
    assert!(first.iter().all(|r| r.changes > 0));
    // the kernel has the plan's classes with the decisions' numbers
    let client = read_state(target(h.client_ns())).unwrap();
    let want = &p.hosts[0].interfaces[0].state;
    assert!(diff(&client, want).is_empty());
    let leaf = want
        .classes
        .iter()
        .find(|c| matches!(&c.serves, Some(ClassRole::Flow { tenant, bucket: 0, .. }) if tenant == "t0"))
        .unwrap();
    let got = client.class(leaf.id).expect("t0's leaf is in the kernel");
    assert_eq!(got.rate_bytes_per_s, 1_000_000);
    assert_eq!(
        got.ceil_bytes_per_s, 125_000_000,
        "best effort borrows to the link"
    );
    assert!(got.burst_bytes.abs_diff(64_000) <= 2, "{}", got.burst_bytes);
    assert_eq!(got.prio, 0);
    // again: nothing to do
    let p2 = plan_with(&e, &d, &m);
    assert!(apply_all(&e, &p2).iter().all(|r| r.changes == 0));
    // a rate changes in place: one `class change`
    let mut faster = d.clone();
    faster.tenants[0].limits[0].bucket.rate = 1.5e6;
    let p3 = plan_with(&e, &faster, &m);
    let r = apply_all(&e, &p3);
    assert_eq!(r[0].changes, 1, "{:?}", r[0].commands);
    assert!(
        r[0].commands[0].starts_with("class change"),
        "{:?}",
        r[0].commands
    );
    assert_eq!(r[1].changes, 0, "the server side did not change");
    // remove: back to the kernel's default root, records gone
    for host in ["client", "server"] {
        e.remove(&m, host).unwrap();
    }
    for ns in [h.client_ns(), h.server_ns()] {
        let s = read_state(target(ns)).unwrap();
        assert!(!s.has_htb(), "{s:?}");
    }
    assert!(e.prior(&m, None).unwrap().is_empty());
}

#[test]
fn a_failure_half_way_leaves_the_host_at_its_old_configuration() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    let m = host_map(&h, 3, "1Gbit");
    // the very first apply fails after 4 commands: back to the default root
    let bad = Enforcer::new(dir.path()).with_failure(0, 4);
    let p = plan_with(&bad, &three(), &m);
    let err = bad.apply(&p.hosts[0]).unwrap_err();
    assert!(matches!(err, TcError::Failed { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("7fff:ffff") && msg.contains("at its old configuration"),
        "{msg}"
    );
    assert!(!read_state(target(h.client_ns())).unwrap().has_htb());
    // applied once, then a change that fails half-way: the first plan stays
    let good = Enforcer::new(dir.path());
    apply_all(&good, &p);
    let before = read_state(target(h.client_ns())).unwrap();
    let mut moved = three();
    moved.tenants[0].priority = Some(2);
    moved.tenants[1].limits.remove(0);
    let bad = Enforcer::new(dir.path()).with_failure(0, 2);
    let p2 = plan_with(&bad, &moved, &m);
    let err = bad.apply(&p2.hosts[0]).unwrap_err().to_string();
    assert!(err.contains("at its old configuration"), "{err}");
    let after = read_state(target(h.client_ns())).unwrap();
    assert!(
        diff(&after, &before).is_empty(),
        "{:?}",
        diff(&after, &before)
    );
    // and the records still describe the first plan: re-applying it changes nothing
    let again = plan_with(&good, &three(), &m);
    assert!(good
        .apply(&again.hosts[0])
        .unwrap()
        .iter()
        .all(|r| r.changes == 0));
}

#[test]
fn a_host_with_two_interfaces_rolls_back_the_first_when_the_second_fails() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let ns = h.client_ns().to_string();
    let ok = |args: &[&str]| {
        let out = Command::new("ip").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // a second interface of the client: one end of a veth pair inside its namespace
    ok(&[
        "-n", &ns, "link", "add", "tb1", "type", "veth", "peer", "name", "tb1p",
    ]);
    ok(&["-n", &ns, "link", "set", "tb1", "up"]);
    let text = format!(
        "[[hosts]]\nname = \"client\"\nnetns = \"{ns}\"\n\
         [[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.2\"\nlink = \"1Gbit\"\n\
         [[hosts.interfaces]]\nname = \"tb1\"\naddress = \"10.198.0.2\"\nlink = \"1Gbit\"\n\
         [[hosts]]\nname = \"server\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.1\"\nlink = \"1Gbit\"\n\
         [[tenants]]\nname = \"t0\"\nclient = {{ host = \"client\" }}\nserver = {{ host = \"server\", port = 7000 }}\n\
         [[tenants]]\nname = \"t1\"\nclient = {{ host = \"client\", address = \"10.198.0.2\" }}\nserver = {{ host = \"server\", port = 7001 }}\n",
        h.server_ns()
    );
    let m = HostMap::parse(&text, "two.hosts.toml").unwrap();
    let d = decisions(
        vec![
            tenant("t0", 0, &[(Stage::NetIn, 1e6, 1e4)]),
            tenant("t1", 1, &[(Stage::NetIn, 1e6, 1e4)]),
        ],
        Excess::Wait,
    );
    let dir = tempfile::tempdir().unwrap();
    // batch 0 is tb0's (it succeeds), batch 1 tb1's (it fails)
    let bad = Enforcer::new(dir.path()).with_failure(1, 3);
    let p = plan_with(&bad, &d, &m);
    let err = bad.apply(&p.hosts[0]).unwrap_err().to_string();
    assert!(
        err.contains("tb1") && err.contains("old configuration") && err.contains("tb0 rolled back"),
        "{err}"
    );
    for iface in ["tb0", "tb1"] {
        let t = Target {
            host: "client",
            netns: Some(&ns),
            interface: iface,
        };
        assert!(
            !read_state(t).unwrap().has_htb(),
            "{iface} kept a configuration"
        );
    }
    assert!(
        bad.prior(&m, None).unwrap().is_empty(),
        "no record of a failed apply"
    );
}

#[test]
fn missing_interfaces_namespaces_and_tc_and_foreign_roots_change_nothing() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    let e = Enforcer::new(dir.path());
    let m = host_map(&h, 3, "1Gbit");
    let p = plan_with(&e, &three(), &m);
    // an interface that does not exist
    let mut wrong = p.hosts[0].clone();
    wrong.interfaces[0].interface = "nope0".into();
    let err = e.apply(&wrong).unwrap_err();
    assert!(matches!(err, TcError::NoInterface { .. }), "{err}");
    assert!(err.to_string().contains("\"nope0\"") && err.to_string().contains(h.client_ns()));
    // a namespace that does not exist
    let mut gone = p.hosts[0].clone();
    gone.netns = Some("tailbound-no-such-ns".into());
    let err = e.apply(&gone).unwrap_err();
    assert!(matches!(err, TcError::Netns { .. }), "{err}");
    // tc missing: a clear error, nothing applied
    let no_tc = Enforcer::new(dir.path()).with_tc("/nonexistent/tc");
    let err = no_tc.apply(&p.hosts[0]).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/tc") && err.to_string().contains("iproute2"),
        "{err}"
    );
    assert!(!read_state(target(h.client_ns())).unwrap().has_htb());
    // a root qdisc tailbound could not restore
    let out = Command::new("tc")
        .args([
            "-n",
            h.client_ns(),
            "qdisc",
            "add",
            "dev",
            "tb0",
            "root",
            "handle",
            "5:",
            "tbf",
            "rate",
            "1mbit",
            "burst",
            "10k",
            "latency",
            "50ms",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = e.apply(&p.hosts[0]).unwrap_err();
    assert!(
        matches!(err, TcError::Foreign { ref kind, .. } if kind == "tbf"),
        "{err}"
    );
    let s = read_state(target(h.client_ns())).unwrap();
    assert_eq!(s.root().map(|q| q.kind.as_str()), Some("tbf"));
    assert!(e.prior(&m, None).unwrap().is_empty());
}

#[test]
fn a_link_plan_shapes_a_link_and_tenants_come_and_go_on_top_of_it() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    let e = Enforcer::new(dir.path());
    let link = Target {
        host: "client",
        netns: Some(h.client_ns()),
        interface: "tb0",
    };
    // the testbed's case: zero tenants, the link rate
    let r = e.apply_interface(link, &link_plan("tb0", 12.5e6)).unwrap();
    assert_eq!(r.changes, 2);
    let s = read_state(link).unwrap();
    assert_eq!(s.classes.len(), 1);
    assert_eq!(s.classes[0].rate_bytes_per_s, 12_500_000);
    // tenants on top keep the link class; without them the link alone is left
    let m = host_map(&h, 3, "100Mbit");
    let p = plan_with(&e, &three(), &m);
    let r = e.apply(&p.hosts[0]).unwrap();
    assert!(r[0].changes > 0);
    assert!(
        r[0].commands.iter().all(|c| !c.contains("classid 1:1 ")),
        "the link class stays: {:?}",
        r[0].commands
    );
    let none = decisions(Vec::new(), Excess::Wait);
    let p = plan_with(&e, &none, &m);
    e.apply(&p.hosts[0]).unwrap();
    let s = read_state(link).unwrap();
    assert_eq!(s.classes.len(), 1);
    assert_eq!(s.classes[0].rate_bytes_per_s, 12_500_000);
    // remove: what the interface had before the first apply, the kernel's default
    e.remove(&m, "client").unwrap();
    let s = read_state(link).unwrap();
    assert!(s.root().is_none() && !s.has_htb(), "{s:?}");
}
