//! `tailbound graph bound` and `tailbound graph convert` (issue 26 item 2).

use crate::common::{json, stderr, tailbound};
use std::path::PathBuf;
use tailbound_graph::{analyze, saihu, Graph, GraphMethod, GraphReport, Outcome};
use tailbound_testdata::production;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/graphs")
        .join(name)
}

#[test]
fn bound_json_is_the_library_report() {
    let path = example("tandem.toml");
    let r: GraphReport = json(&[
        "graph",
        "bound",
        path.to_str().unwrap(),
        "--method",
        "sfa,tfa",
        "--json",
    ]);
    let g = Graph::from_toml(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let want = analyze(&g, &[GraphMethod::Sfa, GraphMethod::Tfa]).unwrap();
    assert_eq!(r.methods, want.methods);
    let f = &r.flows[0];
    assert_eq!(f.flow, "f");
    let sfa = f.outcome(GraphMethod::Sfa).unwrap().delay_s().unwrap();
    let lib = want.flows[0]
        .outcome(GraphMethod::Sfa)
        .unwrap()
        .delay_s()
        .unwrap();
    assert!((sfa - lib).abs() <= 1e-12 * lib, "{sfa} vs {lib}");
    // Saihu's file gives the published DiscoDNC SFA bound of f0 (see tailbound-graph's tests)
    let demo = example("saihu-demo.json");
    let r: GraphReport = json(&["graph", "bound", demo.to_str().unwrap(), "--json"]);
    let f0 = r.flows[0]
        .outcome(GraphMethod::Sfa)
        .unwrap()
        .delay_s()
        .unwrap();
    assert!((f0 * 1e6 - 80.0501253132832).abs() < 1e-6, "{f0}");
}

#[test]
fn convert_round_trips_through_saihu_files() {
    let dir = tempfile::tempdir().unwrap();
    let saihu_file = dir.path().join("demo.json");
    let own_file = dir.path().join("demo.toml");
    let src = example("saihu-demo.json");
    let out = tailbound(&[
        "graph",
        "convert",
        src.to_str().unwrap(),
        "--to",
        "tailbound",
        "--out",
        own_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = tailbound(&[
        "graph",
        "convert",
        own_file.to_str().unwrap(),
        "--to",
        "saihu",
        "--out",
        saihu_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let original = saihu::import(&std::fs::read_to_string(&src).unwrap())
        .unwrap()
        .graph;
    let again = saihu::import(&std::fs::read_to_string(&saihu_file).unwrap())
        .unwrap()
        .graph;
    assert_eq!(again, original);
    assert_eq!(
        Graph::from_toml(&std::fs::read_to_string(&own_file).unwrap()).unwrap(),
        original
    );
}

#[test]
fn trace_flows_are_characterized_and_snc_applies() {
    let dir = tempfile::tempdir().unwrap();
    let trace = production("trace0000.csv");
    let file = dir.path().join("traced.toml");
    let text = format!(
        "name = \"traced\"\n[[servers]]\nname = \"link\"\nservice = [{{ rate_bytes_per_s = 1.25e8 }}]\n\
         [[flows]]\nname = \"t0\"\npath = [\"link\"]\ntrace = {:?}\n",
        trace.to_str().unwrap()
    );
    std::fs::write(&file, text).unwrap();
    let r: GraphReport = json(&["graph", "bound", file.to_str().unwrap(), "--json"]);
    for m in GraphMethod::ALL {
        let o = r.flows[0].outcome(m).unwrap();
        assert!(matches!(o, Outcome::Bounded { .. }), "{m}: {o:?}");
    }
    let snc = r.flows[0].outcome(GraphMethod::Snc).unwrap();
    assert!(
        matches!(snc, Outcome::Bounded { violation_probability, backlog_bytes: None, .. } if (violation_probability - 1e-3).abs() < 1e-12)
    );
}

#[test]
fn bad_files_name_the_file_field_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let tandem = std::fs::read_to_string(example("tandem.toml")).unwrap();
    let cases = [
        (w("cycle.toml", &tandem.replace("path = [\"s2\"]", "path = [\"s3\", \"s1\"]")), "cycle s1 -> s2 -> s3 -> s1"),
        (w("unknown.toml", &tandem.replace("path = [\"s2\"]", "path = [\"s9\"]")), "flow \"c2\": field path = s9"),
        (w("negative.toml", &tandem.replace("burst_bytes = 2500", "burst_bytes = -1")), "arrival.burst_bytes = -1"),
        (w("key.toml", &tandem.replace("scheduling = \"fifo\"", "scheduling = \"wfq\"")), "wfq"),
        (w("saihu.json", "{\"network\": {\"name\": \"x\"}, \"flows\": [], \"servers\": [{\"name\": \"a\", \"service_curve\": {\"latencies\": [1], \"rates\": [\"9Mbit\"]}}]}"), "unit \"Mbit\""),
    ];
    for (path, fragment) in &cases {
        let out = tailbound(&["graph", "bound", path.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
        assert!(
            err.contains(fragment) && err.contains(path.file_name().unwrap().to_str().unwrap()),
            "{}: {err}",
            path.display()
        );
    }
    // static priority has no Saihu spelling
    let out = tailbound(&[
        "graph",
        "convert",
        example("priority.toml").to_str().unwrap(),
        "--to",
        "saihu",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("static-priority"), "{}", stderr(&out));
}
