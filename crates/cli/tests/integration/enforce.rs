//! `tailbound enforce`: plans of `tailbound admit`'s decisions, bad input (exit 2, nothing
//! applied), and — as root, in two network namespaces — apply, re-apply, a tenant moved to
//! another level, status and remove against the kernel.

use crate::common::{json, stderr, tailbound};
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use tailbound_cli::report::{EnforceReport, EnforceStatusReport};
use tailbound_dataplane::netns::{LinkOptions, TwoHosts};
use tailbound_dataplane::tc::{read_state, Target};
use tailbound_enforce_plan::state::{ClassRole, FilterRole};
use tailbound_enforce_plan::{Plan, TcState};
use tailbound_model::Decisions;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenario/examples");

fn example(name: &str) -> String {
    format!("{EXAMPLES}/{name}")
}

/// `tailbound admit SCENARIO --policy P`'s decisions, written to `dir`.
fn admit(dir: &Path, scenario: &str, policy: &str) -> String {
    let out = dir.join(format!("{policy}.json"));
    let o = tailbound(&[
        "admit",
        &example(scenario),
        "--policy",
        policy,
        "--decisions-out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out.to_str().unwrap().to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn plan_json_lists_every_class_with_its_numbers_and_flow_and_every_filter() {
    let dir = tempfile::tempdir().unwrap();
    let d = admit(dir.path(), "two-servers.toml", "priority-meister");
    let decisions: Decisions = serde_json::from_str(&std::fs::read_to_string(&d).unwrap()).unwrap();
    let hosts = example("two-servers.hosts.toml");
    let plan: Plan = json(&["enforce", "plan", &d, "--hosts", &hosts, "--json"]);
    let names: Vec<&str> = plan.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(names, ["client1", "server1", "server2"]);
    let mut served = HashSet::new();
    for h in &plan.hosts {
        for i in &h.interfaces {
            for c in &i.state.classes {
                assert!(c.rate_bytes_per_s > 0 && c.ceil_bytes_per_s >= c.rate_bytes_per_s);
                assert!(c.prio <= 7);
                if let Some(ClassRole::Flow { tenant, stage, .. }) = &c.serves {
                    served.insert((tenant.clone(), *stage));
                }
            }
            for f in &i.state.filters {
                assert!(
                    i.state.class(f.flowid).is_some(),
                    "filter to a missing class"
                );
                assert!(matches!(f.serves, Some(FilterRole::Flow { .. })));
            }
        }
    }
    // every admitted tenant's request and response directions have classes, and every
    // network bucket of the decisions is a class's rate and burst
    for t in decisions.tenants.iter().filter(|t| t.admitted) {
        for stage in [
            tailbound_model::Stage::NetIn,
            tailbound_model::Stage::NetOut,
        ] {
            assert!(
                served.contains(&(t.name.clone(), stage)),
                "{} {stage}",
                t.name
            );
        }
        for l in t
            .limits
            .iter()
            .filter(|l| l.stage != tailbound_model::Stage::Storage)
        {
            let found = plan.hosts.iter().flat_map(|h| &h.interfaces).any(|i| {
                i.state.classes.iter().any(|c| {
                    matches!(&c.serves, Some(ClassRole::Flow { tenant, .. }) if *tenant == t.name)
                        && c.rate_bytes_per_s == l.bucket.rate.floor() as u64
                        && c.burst_bytes == (l.bucket.burst.floor() as u64).max(1)
                })
            });
            assert!(
                found,
                "{} {} r={} b={} has no class",
                t.name, l.flow, l.bucket.rate, l.bucket.burst
            );
        }
    }
    // db's storage bucket is listed, not enforced
    assert!(plan
        .unenforced
        .iter()
        .any(|u| u.tenant == "db" && u.stage == tailbound_model::Stage::Storage));
}

#[test]
fn bad_input_is_exit_2_with_the_value_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = admit(dir.path(), "two-servers.toml", "priority-meister");
    let hosts = example("two-servers.hosts.toml");
    let text = std::fs::read_to_string(&hosts).unwrap();
    let check = |args: &[&str], needles: &[&str]| {
        let o = tailbound(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        for n in needles {
            assert!(e.contains(n), "{args:?}: {n:?} not in {e}");
        }
    };
    // an unknown host
    check(
        &[
            "enforce", "plan", &d, "--hosts", &hosts, "--host", "client9",
        ],
        &["\"client9\"", "client1, server1, server2"],
    );
    check(
        &["enforce", "remove", "--hosts", &hosts, "--host", "client9"],
        &["\"client9\""],
    );
    // a tenant missing from the host map
    let cut = text.replace("name = \"batch\"", "name = \"batch-old\"");
    let map = write(dir.path(), "cut.hosts.toml", &cut);
    check(
        &["enforce", "plan", &d, "--hosts", &map],
        &["\"batch\"", "cut.hosts.toml"],
    );
    // a rate above the link: the map says the links are slower than the scenario's
    let slow = text
        .replace("\"1Gbit\"", "\"1Mbit\"")
        .replace("\"10Gbit\"", "\"1Mbit\"");
    let map = write(dir.path(), "slow.hosts.toml", &slow);
    check(
        &["enforce", "plan", &d, "--hosts", &map],
        &["above the link rate", "125000"],
    );
    // a host map that is not one
    let map = write(
        dir.path(),
        "bad.hosts.toml",
        &text.replace("link = \"1Gbit\"", "link = \"fast\""),
    );
    check(
        &["enforce", "plan", &d, "--hosts", &map],
        &["bad.hosts.toml", "link", "fast"],
    );
    check(
        &["enforce", "plan", &d, "--hosts", "/nonexistent.toml"],
        &["/nonexistent.toml"],
    );
    // decisions that are not
    let dec = write(dir.path(), "d.json", "{\"tenants\": [{\"name\": \"web\", \"admitted\": true, \"priority\": 0, \"limits\": [{\"flow\": \"web-req\", \"rate\": 1, \"burst\": 1}]}]}");
    check(
        &["enforce", "plan", &dec, "--hosts", &hosts],
        &["d.json", "stage"],
    );
}

fn root_or_skip() -> bool {
    tailbound_testdata::root_or_skip("tc enforcement")
}

/// six-tenants.hosts.toml pointed at the test's namespaces (veth `tb0`, 10.199.0.2 client,
/// 10.199.0.1 server).
fn six_tenant_map(dir: &Path, h: &TwoHosts, iface: &str) -> String {
    let text = std::fs::read_to_string(example("six-tenants.hosts.toml"))
        .unwrap()
        .replace("tb-client1", h.client_ns())
        .replace("tb-server1", h.server_ns())
        .replace("name = \"eth0\"", &format!("name = \"{iface}\""))
        .replace("10.90.0.1", "10.199.0.2")
        .replace("10.90.0.2", "10.199.0.1");
    write(dir, "six.hosts.toml", &text)
}

fn kernel(h: &TwoHosts, host: &str) -> TcState {
    let ns = if host == "client1" {
        h.client_ns()
    } else {
        h.server_ns()
    };
    read_state(Target {
        host,
        netns: Some(ns),
        interface: "tb0",
    })
    .unwrap()
}

/// How the commands of a change name `tenant`'s classes (`classid 2:7`) and filters (`::3 u32`)
/// in a plan, on `host`.
fn ids_of(plan: &Plan, host: &str, tenant: &str) -> HashSet<String> {
    let i = &plan
        .hosts
        .iter()
        .find(|x| x.host == host)
        .unwrap()
        .interfaces[0];
    let mut ids: HashSet<String> = i
        .state
        .classes
        .iter()
        .filter(|c| matches!(&c.serves, Some(ClassRole::Flow { tenant: t, .. }) if t == tenant))
        .map(|c| format!("classid {}", c.id))
        .collect();
    ids.extend(
        i.state
            .filters
            .iter()
            .filter(
                |f| matches!(&f.serves, Some(FilterRole::Flow { tenant: t, .. }) if t == tenant),
            )
            .map(|f| format!("::{:x} u32", f.handle.node())),
    );
    ids
}

#[test]
fn admitted_decisions_are_applied_kept_moved_checked_and_removed_in_namespaces() {
    if !root_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h = TwoHosts::create(LinkOptions::default()).unwrap();
    let map = six_tenant_map(dir.path(), &h, "tb0");
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    let d = admit(dir.path(), "six-tenants.toml", "priority-meister");
    let decisions: Decisions = serde_json::from_str(&std::fs::read_to_string(&d).unwrap()).unwrap();
    let levels: HashSet<u32> = decisions
        .tenants
        .iter()
        .filter_map(|t| t.priority)
        .collect();
    assert!(
        decisions.tenants.iter().filter(|t| t.admitted).count() >= 6 && levels.len() == 3,
        "{decisions:?}"
    );
    let apply = |decisions: &str| -> EnforceReport {
        json(&[
            "enforce",
            "apply",
            decisions,
            "--hosts",
            &map,
            "--state-dir",
            state,
            "--json",
        ])
    };
    let first = apply(&d);
    assert!(first.changes > 0);
    // the kernel has the plan, and the plan every bucket of the decisions with its rate,
    // burst and the tenant's prio
    let plan: Plan = json(&["enforce", "plan", &d, "--hosts", &map, "--json"]);
    for (host, stage) in [
        ("client1", tailbound_model::Stage::NetIn),
        ("server1", tailbound_model::Stage::NetOut),
    ] {
        let want = &plan
            .hosts
            .iter()
            .find(|x| x.host == host)
            .unwrap()
            .interfaces[0]
            .state;
        let k = kernel(&h, host);
        let left = tailbound_enforce_plan::diff(&k, want);
        assert!(left.is_empty(), "{host}: {left:?}");
        for t in decisions.tenants.iter().filter(|t| t.admitted) {
            let classes: Vec<_> = want
                .classes
                .iter()
                .filter(|c| matches!(&c.serves, Some(ClassRole::Flow { tenant, .. }) if *tenant == t.name))
                .collect();
            let leaf = classes
                .iter()
                .find(|c| matches!(c.serves, Some(ClassRole::Flow { bucket: 0, .. })))
                .unwrap();
            assert_eq!(u32::from(leaf.prio), t.priority.unwrap() % 7, "{}", t.name);
            for l in t.limits.iter().filter(|l| l.stage == stage) {
                let c = classes
                    .iter()
                    .find(|c| c.rate_bytes_per_s == l.bucket.rate.floor() as u64)
                    .unwrap_or_else(|| {
                        panic!("{host}: no class at {} B/s for {}", l.bucket.rate, t.name)
                    });
                let got = k.class(c.id).expect("in the kernel");
                assert_eq!(got.rate_bytes_per_s, l.bucket.rate.floor() as u64);
                assert!(
                    got.burst_bytes.abs_diff(l.bucket.burst.floor() as u64) as f64
                        <= 2.0 + l.bucket.rate * 2e-6,
                    "{}: burst {} vs {}",
                    t.name,
                    got.burst_bytes,
                    l.bucket.burst
                );
            }
        }
    }
    // the same decisions again: nothing to do
    let again = apply(&d);
    assert_eq!(again.changes, 0, "{:?}", again.interfaces);
    let status: EnforceStatusReport = json(&[
        "enforce",
        "status",
        &d,
        "--hosts",
        &map,
        "--state-dir",
        state,
        "--json",
    ]);
    assert!(!status.drift && status.interfaces.iter().all(|i| i.applied));
    // kv-b moves from level 0 to level 2: only its classes and filters change
    let moved_text = std::fs::read_to_string(&d).unwrap();
    let mut moved: Decisions = serde_json::from_str(&moved_text).unwrap();
    let kvb = moved.tenants.iter_mut().find(|t| t.name == "kv-b").unwrap();
    assert_eq!(kvb.priority, Some(0));
    kvb.priority = Some(2);
    let moved_path = write(
        dir.path(),
        "moved.json",
        &serde_json::to_string(&moved).unwrap(),
    );
    let r = apply(&moved_path);
    assert!(r.changes > 0);
    for rep in &r.interfaces {
        // `enforce plan` starts from no records, as the first apply did: the same ids
        let mine = ids_of(&plan, &rep.host, "kv-b");
        // one new leaf at level 2 (a fresh id: HTB cannot move a class), the filter switched
        // to it, the old leaf deleted
        assert_eq!(rep.commands.len(), 3, "{:?}", rep.commands);
        for c in &rep.commands {
            let touches_mine = mine
                .iter()
                .any(|id| c.contains(&format!("{id} ")) || c.ends_with(id.as_str()));
            let new_leaf = c.starts_with("class add") && c.contains("prio 2 ");
            assert!(
                touches_mine || new_leaf,
                "{}: moving kv-b ran `{c}`",
                rep.host
            );
        }
    }
    // drift: a rate changed by hand is reported (exit 1) and the next apply repairs it
    let leaf = kernel(&h, "client1")
        .classes
        .into_iter()
        .find(|c| {
            c.parent.is_some()
                && c.rate_bytes_per_s < 100_000_000
                && c.rate_bytes_per_s == c.ceil_bytes_per_s
        })
        .unwrap();
    let o = Command::new("tc")
        .args([
            "-n",
            h.client_ns(),
            "class",
            "change",
            "dev",
            "tb0",
            "classid",
            &leaf.id.to_string(),
            "htb",
            "rate",
            "12345bps",
            "ceil",
            "12345bps",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tailbound(&[
        "enforce",
        "status",
        &moved_path,
        "--hosts",
        &map,
        "--state-dir",
        state,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("classid {}", leaf.id)));
    assert_eq!(apply(&moved_path).changes, 1);
    // remove: no HTB left anywhere, and no record
    let removed: EnforceReport = json(&[
        "enforce",
        "remove",
        "--hosts",
        &map,
        "--state-dir",
        state,
        "--json",
    ]);
    assert!(removed.changes >= 2);
    for host in ["client1", "server1"] {
        assert!(!kernel(&h, host).has_htb(), "{host} kept an HTB qdisc");
    }
    let o = Command::new("tc")
        .args(["-n", h.client_ns(), "-j", "qdisc", "show", "dev", "tb0"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\"htb\""));
}

#[test]
fn a_missing_interface_or_tc_is_exit_2_and_changes_nothing() {
    if !root_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h = TwoHosts::create(LinkOptions::default()).unwrap();
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    let d = admit(dir.path(), "six-tenants.toml", "priority-meister");
    let wrong = six_tenant_map(dir.path(), &h, "tb7");
    let o = tailbound(&[
        "enforce",
        "apply",
        &d,
        "--hosts",
        &wrong,
        "--state-dir",
        state,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("\"tb7\"") && e.contains("does not exist") && e.contains("nothing was changed"),
        "{e}"
    );
    // without tc on the PATH
    let map = six_tenant_map(dir.path(), &h, "tb0");
    let o = Command::new(env!("CARGO_BIN_EXE_tailbound"))
        .args([
            "enforce",
            "apply",
            &d,
            "--hosts",
            &map,
            "--state-dir",
            state,
        ])
        .env("PATH", dir.path())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("cannot run `tc`") && e.contains("iproute2"),
        "{e}"
    );
    for host in ["client1", "server1"] {
        assert!(!kernel(&h, host).has_htb(), "{host}");
    }
}

#[test]
fn the_probe_marks_its_requests_with_a_priority_and_refuses_one_without_a_dscp() {
    let o = tailbound(&["probe", "run", "--priority", "63", "--count", "10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("priority 63") && stderr(&o).contains("0 to 62"),
        "{}",
        stderr(&o)
    );
    let o = tailbound(&[
        "probe",
        "run",
        "--priority",
        "1",
        "--tos",
        "0x10",
        "--count",
        "10",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--priority and --tos exclude each other"
    );
    for protocol in ["tcp", "udp"] {
        let o = tailbound(&[
            "probe",
            "run",
            "--protocol",
            protocol,
            "--priority",
            "2",
            "--size",
            "64",
            "--count",
            "50",
            "--warmup",
            "0",
        ]);
        assert!(o.status.success(), "{protocol}: {}", stderr(&o));
    }
}
