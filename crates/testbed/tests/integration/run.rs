//! A small testbed run (2 hosts, 2 tenants, seconds): every request sent and answered, the
//! servers real and alive during the replay, and nothing of the run left afterwards. Asserts
//! what the code decides and counts, never latencies (the machine may be busy).

use crate::common::{nice_in, nice_of_threads, own_namespaces, turn, Small};
use std::path::Path;
use std::sync::Arc;
use tailbound_dataplane::netns;
use tailbound_dataplane::probe::Control;
use tailbound_dataplane::replay::ReplayOptions;
use tailbound_dataplane::tc::Enforcer;
use tailbound_enforce_plan::{ClassRole, PlanOptions, PriorAllocations};
use tailbound_model::Stage;
use tailbound_testbed::enforce;
use tailbound_testbed::run::{self as tb_run, prepare, sizes, RunOptions};
use tailbound_testbed::testbed::{session_nice, SessionNice, Testbed, AGGRESSOR_NICE, NICE};

fn options(duration_s: f64, scale: f64) -> RunOptions {
    let mut o = RunOptions {
        duration_s: Some(duration_s),
        ..RunOptions::default()
    };
    o.topology.scale = scale;
    o
}

#[test]
fn a_small_run_answers_every_request_and_leaves_nothing_behind() {
    let Some(_turn) = turn() else { return };
    let small = Small::new();
    let works = small.scenario.works();
    let input = small.input(&works);
    let opts = options(2.0, 0.5);
    let p = prepare(&input, &opts).unwrap();
    assert_eq!(p.topology.hosts.len(), 2);
    let bed = Testbed::up(&p.topology, &sizes(&p), &opts.testbed).unwrap();
    let names: Vec<String> = bed.lan().names().into_iter().map(String::from).collect();
    assert_eq!(names.len(), 3, "two hosts and the switch");
    let servers = bed.servers();
    assert_eq!(servers.len(), 1);
    assert!(
        servers.iter().all(|(_, p)| p.is_memcached()),
        "memcached runs"
    );
    // the memcached is in the server host's namespace
    let server_ns = &bed.lan().hosts()[servers[0].0].ns;
    assert!(netns::pids_in(server_ns).contains(&servers[0].1.pid));
    // the decisions are on every host and switch port: the enforcer sees no drift from the
    // plan, which has a class for each tenant's request flow on the client host and for each
    // level on the server's switch port
    assert!(bed.enforced());
    let map = enforce::host_map(bed.lan(), &p.topology).unwrap();
    let plan = tailbound_enforce_plan::plan(
        &enforce::decisions(&p.topology),
        &map,
        &PlanOptions::default(),
        &PriorAllocations::new(),
    )
    .unwrap();
    let enforcer = Enforcer::new(bed.records_dir());
    for host in &plan.hosts {
        for st in enforcer.status(host).unwrap() {
            assert!(st.applied && st.drift.is_empty(), "{st:?}");
        }
    }
    let roles = |host: &str| -> Vec<ClassRole> {
        let h = plan.hosts.iter().find(|h| h.host == host).unwrap();
        h.interfaces
            .iter()
            .flat_map(|i| &i.state.classes)
            .filter_map(|c| c.serves.clone())
            .collect()
    };
    let flows = roles("client1")
        .into_iter()
        .filter(|r| {
            matches!(
                r,
                ClassRole::Flow {
                    stage: Stage::NetIn,
                    ..
                }
            )
        })
        .count();
    assert_eq!(flows, 2, "a request class per tenant on the client host");
    let levels = roles("switch")
        .into_iter()
        .filter(|r| matches!(r, ClassRole::Level { .. }))
        .count();
    assert_eq!(levels, 2 * 2, "both levels on both switch ports");
    let replay = ReplayOptions {
        latency_scale: p.topology.scale,
        timeout: tb_run::timeout(&p.topology, &opts),
        ..ReplayOptions::default()
    };
    let m = bed
        .replay(&p.schedule, &replay, &Arc::new(Control::new()))
        .unwrap();
    drop(bed);
    assert_eq!(m.tenants.len(), 2);
    for (t, scheduled) in m.tenants.iter().zip(&p.schedule.tenants) {
        let n = scheduled.len() as u64;
        assert!(n > 50, "{}: {n} requests in 2 s", t.name);
        assert_eq!(
            (t.sent, t.replies, t.errors, t.timeouts),
            (n, n, 0, 0),
            "{}: {:?}",
            t.name,
            t.first_error
        );
        assert_eq!(t.latency.len(), n);
        assert!(t.connections >= 1);
    }
    // everything of the run is gone: processes and namespaces
    assert!(
        servers.iter().all(|(_, p)| !p.is_memcached()),
        "memcached stopped"
    );
    assert!(names.iter().all(|n| !netns::path(n).exists()), "{names:?}");
    assert!(own_namespaces().is_empty(), "{:?}", own_namespaces());
}

#[test]
fn the_whole_run_reports_testbed_and_simulator_per_tenant() {
    let Some(_turn) = turn() else { return };
    let mut small = Small::new();
    small.bounds = vec![Some(0.001), None];
    let works = small.scenario.works();
    let input = small.input(&works);
    let mut opts = options(1.0, 1.0);
    opts.topology.aggressor = Some("tcp".parse().unwrap());
    let r = tb_run::run(&input, &opts, &Arc::new(Control::new()), &|_| {}).unwrap();
    assert_eq!(r.tenants.len(), 2);
    for t in &r.tenants {
        assert_eq!(
            (t.sent, t.replies, t.errors, t.timeouts),
            (t.requests, t.requests, 0, 0),
            "{}",
            t.name
        );
        assert!(t.sim_p999_s > 0.0 && t.testbed_p999_s > 0.0, "{}", t.name);
        assert_eq!(t.testbed_over_sim, Some(t.testbed_p999_s / t.sim_p999_s));
        assert_eq!(t.violated, t.testbed_worst_window_s > t.slo_s);
        assert_eq!(t.server, "server1");
    }
    assert_eq!(r.tenants[0].bound_s, Some(0.001));
    assert_eq!(r.tenants[1].bound_s, None);
    assert_eq!(r.comparison.tenants, 2);
    let a = r.aggressor.as_ref().unwrap();
    assert_eq!(a.target, "server1");
    assert!(a.bytes > 0, "the aggressor sent");
    assert!(r.machine.wall_s > 0.0);
    assert!(own_namespaces().is_empty(), "{:?}", own_namespaces());
}

/// The aggressor's CPU work is the testbed's artefact (on a cluster it is a machine of its
/// own): its sink runs at the lowest priority, below the servers, which run above the rest of
/// the machine.
#[test]
fn the_aggressor_runs_below_the_hosts() {
    let Some(_turn) = turn() else { return };
    let small = Small::new();
    let works = small.scenario.works();
    let input = small.input(&works);
    let mut opts = options(1.0, 1.0);
    opts.topology.aggressor = Some("udp".parse().unwrap());
    let p = prepare(&input, &opts).unwrap();
    let bed = Testbed::up(&p.topology, &sizes(&p), &opts.testbed).unwrap();
    assert_eq!(nice_of_threads("blast-sink-udp"), vec![AGGRESSOR_NICE]);
    let servers = bed.servers();
    assert_eq!(servers.len(), 1);
    for (_, s) in &servers {
        let stat = format!("/proc/{}/stat", s.pid);
        assert_eq!(nice_in(Path::new(&stat)), NICE);
    }
    drop(bed);
    assert!(
        nice_of_threads("blast-sink-udp").is_empty(),
        "the sink stopped"
    );
    assert!(own_namespaces().is_empty(), "{:?}", own_namespaces());
}

/// Nice values act only within a session (autogroup): the replay raises its session to the
/// hosts' priority while it runs and restores it after.
#[test]
fn the_hosts_session_is_raised_while_the_guard_lives() {
    let Some(_turn) = turn() else { return };
    let Some(before) = session_nice() else {
        eprintln!("skipped: this kernel has no autogroups");
        return;
    };
    {
        let _raised = SessionNice::set(NICE);
        assert_eq!(session_nice(), Some(NICE));
    }
    assert_eq!(session_nice(), Some(before));
}
