use crate::common::json;
use tailbound_experiments::bounds::BoundsExperiment;

#[test]
fn bounds_tenants_writes_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (out, svg) = (dir.path().join("fig7.json"), dir.path().join("fig7.svg"));
    let exp: BoundsExperiment = json(&[
        "experiment",
        "bounds-tenants",
        "--tenants",
        "1,4",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(exp.rows.len(), 2);
    assert_eq!(exp.methods.len(), 4);
    let written: BoundsExperiment =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(written, exp);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("Fig. 7") && svg.matches("<path").count() >= 3);
}
