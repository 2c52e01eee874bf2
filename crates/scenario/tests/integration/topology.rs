//! SNC-Meister topology JSON over production traces.

use serde_json::json;
use tailbound_scenario::snc_meister::{read_topology, Options};
use tailbound_scenario::{Part, TenantSource};

fn topology(clients: serde_json::Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = crate::write(
        dir.path(),
        "topology.json",
        &json!({ "addrPrefix": "u", "outputConfig": "out.txt", "clients": clients }).to_string(),
    );
    (dir, p)
}

fn client(slo: f64, trace: &str, client: &str, server: &str) -> serde_json::Value {
    json!({
        "SLO": slo, "SLOpercentile": 99.9, "trace": crate::production(trace),
        "clientHost": client, "clientVM": "1", "serverHost": server, "serverVM": "1"
    })
}

#[test]
fn topology_over_production_traces_builds_a_characterized_network() {
    let mut c0 = client(0.04, "trace0000.csv", "c1", "s1");
    c0["dependencies"] = json!(["C2"]);
    let (_dir, p) = topology(json!([
        c0,
        client(0.03, "trace0001.csv", "c1", "s1"),
        client(0.02, "trace0003.csv", "c1", "s2"),
    ]));
    let s = read_topology(&p, &Options::default()).unwrap();
    let net = &s.network;
    net.validate().unwrap();
    let queues: Vec<_> = net.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(
        queues,
        ["c1-out", "c1-in", "s1-out", "s1-in", "s2-out", "s2-in"]
    );
    assert!(net.queues.iter().all(|q| q.rate == 125e6));
    let names: Vec<_> = net.tenants.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["C0", "C1", "C2"]);
    let path = |f: usize| -> Vec<&str> {
        net.flows[f]
            .path
            .iter()
            .map(|&q| net.queues[q].name.as_str())
            .collect()
    };
    assert_eq!(net.flows[4].name, "F2In");
    assert_eq!(path(4), ["c1-out", "s2-in"]);
    assert_eq!(net.flows[5].name, "F2Out");
    assert_eq!(path(5), ["s2-out", "c1-in"]);
    for f in &net.flows {
        f.mmpp.as_ref().unwrap().validate().unwrap();
        let a = f.arrival.as_ref().unwrap();
        assert!(a.burst() > 0.0, "{}", f.name);
    }
    // responses carry the read data: more bytes than requests for these read-heavy traces or
    // at least a different curve
    assert_ne!(net.flows[0].arrival, net.flows[1].arrival);
    let groups: Vec<_> = net.tenants.iter().map(|t| t.group.as_deref()).collect();
    assert_eq!(groups, [Some("C0+C2"), None, Some("C0+C2")]);
    assert!(matches!(
        &s.sources[1],
        TenantSource::Trace { path, part: Part::FirstHalf } if path.ends_with("trace0001.csv")
    ));
    let replay = s.sources[1].replay_trace().unwrap().unwrap();
    assert!(!replay.requests.is_empty());
}

#[test]
fn options_change_link_rate_and_part() {
    let (_dir, p) = topology(json!([client(0.02, "trace0004.csv", "a", "b")]));
    let whole = read_topology(
        &p,
        &Options {
            link_rate_bytes_per_s: 1.25e9,
            part: Part::Whole,
            ..Options::default()
        },
    )
    .unwrap();
    let half = read_topology(&p, &Options::default()).unwrap();
    assert!(whole.network.queues.iter().all(|q| q.rate == 1.25e9));
    // the whole trace holds at least as much work in any window as its first half
    let (w, h) = (
        whole.network.flows[0].arrival.as_ref().unwrap(),
        half.network.flows[0].arrival.as_ref().unwrap(),
    );
    assert!(w.at(1e6) > h.at(1e6));
}

#[test]
fn dependency_on_an_unknown_tenant_is_an_error() {
    let mut c = client(0.02, "trace0004.csv", "a", "b");
    c["dependencies"] = json!(["C7"]);
    let (_dir, p) = topology(json!([c]));
    let msg = read_topology(&p, &Options::default())
        .unwrap_err()
        .to_string();
    crate::assert_mentions(
        &msg,
        &["topology.json", "client C0", "dependencies", "\"C7\""],
    );
}

#[test]
fn sample_topology_fails_naming_its_missing_trace() {
    let p = tailbound_testdata::reference_dir().join("snc-meister/sample_topology.txt");
    let msg = read_topology(&p, &Options::default())
        .unwrap_err()
        .to_string();
    crate::assert_mentions(
        &msg,
        &[
            "sample_topology.txt",
            "client C0",
            "sample_trace1.txt",
            "not found",
        ],
    );
}

#[test]
fn clients_sharing_a_trace_get_the_fits_of_their_own_copies() {
    // a topology reuses traces round-robin; each trace is read and fitted once (FitCache),
    // which must give what fitting each client's copy on its own gives
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.csv");
    std::fs::copy(tailbound_testdata::production("trace0004.csv"), &copy).unwrap();
    let mut own_copy = client(0.02, "trace0004.csv", "b", "a");
    own_copy["trace"] = json!(copy.display().to_string());
    let (_dir, p) = topology(json!([
        client(0.02, "trace0004.csv", "a", "b"),
        client(0.05, "trace0001.csv", "a", "b"),
        own_copy,
        client(0.01, "trace0004.csv", "b", "a"),
    ]));
    for part in [Part::Whole, Part::FirstHalf] {
        let options = Options {
            part,
            ..Options::default()
        };
        let net = read_topology(&p, &options).unwrap().network;
        let models = |t: usize| -> Vec<_> {
            net.tenants[t]
                .flows
                .iter()
                .map(|&f| (net.flows[f].mmpp.clone(), net.flows[f].arrival.clone()))
                .collect()
        };
        assert!(models(0).iter().all(|(m, a)| m.is_some() && a.is_some()));
        assert_eq!(models(0), models(2), "{part:?}");
        assert_eq!(models(0), models(3), "{part:?}");
        assert_ne!(models(0), models(1), "{part:?}");
        let names: Vec<_> = net.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["F0In", "F0Out", "F1In", "F1Out", "F2In", "F2Out", "F3In", "F3Out"]
        );
    }
}

#[test]
fn a_malformed_line_of_a_shared_trace_names_the_first_client_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = crate::write(
        dir.path(),
        "bad.csv",
        "1000,0x1000,Get\n2000,0x1000,Put\n3000,0x10zz,Get\n4000,0x1000,Get\n",
    );
    let mut c = client(0.02, "trace0004.csv", "a", "b");
    c["trace"] = json!(bad.display().to_string());
    let (_dir, p) = topology(json!([
        client(0.05, "trace0001.csv", "a", "b"),
        c.clone(),
        c
    ]));
    let msg = read_topology(&p, &Options::default())
        .unwrap_err()
        .to_string();
    crate::assert_mentions(
        &msg,
        &["topology.json", "client C1", "bad.csv", "line 3", "0x10zz"],
    );
    assert!(!msg.contains("client C2"), "{msg}");
}
