//! Saihu's JSON network description: import, export, round trip, errors.

use crate::example;
use tailbound_graph::{saihu, Graph, Scheduling};

#[test]
fn import_export_import_is_equal() {
    let first = saihu::import(&example("saihu-demo.json")).unwrap();
    let text = saihu::export(&first.graph).unwrap();
    let again = saihu::import(&text).unwrap();
    assert_eq!(again.graph, first.graph);
    assert!(again.ignored.is_empty(), "{:?}", again.ignored);
    // units were read: 4 Mbit/s = 500 000 B/s after 10 µs; f0's 0.5 kbit/s = 62.5 B/s
    let s0 = &first.graph.servers[0];
    assert_eq!(s0.service[0].rate_bytes_per_s, 500_000.0);
    assert!((s0.service[0].latency_s - 10e-6).abs() < 1e-18);
    assert_eq!(s0.service[1].rate_bytes_per_s, 6_250_000.0);
    assert_eq!(first.graph.flows[0].arrival[1].rate_bytes_per_s, 62.5);
    assert_eq!(first.graph.flows[0].arrival[1].burst_bytes, 2000.0);
    assert_eq!(first.graph.flows[2].max_packet_bytes, Some(50.0));
}

#[test]
fn our_files_round_trip_through_saihu() {
    let g = Graph::from_toml(&example("tandem.toml")).unwrap();
    let back = saihu::import(&saihu::export(&g).unwrap()).unwrap().graph;
    assert_eq!(back, g);
    // and our own TOML writer
    assert_eq!(Graph::from_toml(&g.to_toml().unwrap()).unwrap(), g);
}

#[test]
fn multicast_paths_become_flows_and_dropped_fields_are_listed() {
    let text = r#"{"network": {"name": "m", "time_unit": "us", "data_unit": "B", "rate_unit": "Mbps", "packetizer": false},
      "flows": [{"name": "f", "path": ["a"], "multicast": [{"name": "p1", "path": ["b"]}],
                 "arrival_curve": {"bursts": [10], "rates": [1]}, "min_packet_length": 4}],
      "servers": [{"name": "a", "service_curve": {"latencies": [1], "rates": [10]}, "capacity": 100},
                  {"name": "b", "service_curve": {"latencies": [1], "rates": [10]}}]}"#;
    let imp = saihu::import(text).unwrap();
    let names: Vec<&str> = imp.graph.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["f", "f/p1"]);
    assert_eq!(imp.graph.flows[1].path, ["b"]);
    assert_eq!(imp.ignored.len(), 3, "{:?}", imp.ignored);
    assert!(imp
        .ignored
        .iter()
        .any(|l| l.contains("\"a\": capacity = 100")));
}

#[test]
fn bad_saihu_input_names_the_field_and_value() {
    let bad_unit =
        example("saihu-demo.json").replace("\"4Mbps\", \"50Mbps\"", "\"4Mbit\", \"50Mbps\"");
    let e = saihu::import(&bad_unit).unwrap_err().to_string();
    assert!(
        e.contains("server \"s0-o0\"") && e.contains("service_curve.rates") && e.contains("4Mbit"),
        "{e}"
    );
    let bad_path = example("saihu-demo.json").replace("[\"s1-o0\"]", "[\"s9\"]");
    let e = saihu::import(&bad_path).unwrap_err().to_string();
    assert!(e.contains("flow \"f2\"") && e.contains("s9"), "{e}");
    let e = saihu::import("{\"flows\": []}").unwrap_err().to_string();
    assert!(e.contains("network"), "{e}");
}

#[test]
fn static_priority_cannot_be_exported() {
    let g = Graph::from_toml(&example("priority.toml")).unwrap();
    assert_eq!(g.servers[0].scheduling, Scheduling::StaticPriority);
    let e = saihu::export(&g).unwrap_err().to_string();
    assert!(e.contains("sw1-p1") && e.contains("static-priority"), "{e}");
}
