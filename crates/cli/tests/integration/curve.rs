use crate::common::{json, tailbound};
use tailbound_cli::report::{EffBwReport, MmppReport, RbReport};
use tailbound_model::{ArrivalCurve, RbCurve, Stage};
use tailbound_testdata::production;

#[test]
fn rb_json_has_ascending_vertices_and_a_matching_arrival_curve() {
    let path = production("trace0000.csv");
    for stage in ["net-in", "storage", "net-out"] {
        let r: RbReport = json(&[
            "curve",
            "rb",
            path.to_str().unwrap(),
            "--stage",
            stage,
            "--json",
        ]);
        assert_eq!(r.stage, stage.parse::<Stage>().unwrap());
        assert_eq!(r.requests, 2871);
        // The vertices form valid curves, and they are duals of each other.
        let rb = RbCurve::new(r.rb.clone()).expect("valid r-b curve");
        let arrival = ArrivalCurve::new(r.arrival.clone(), r.tail_rate).expect("valid arrival");
        assert_eq!(rb.vertices()[0][0], 0.0, "exact curves start at r = 0");
        let total = arrival.vertices().last().unwrap()[1];
        assert!(
            (rb.vertices()[0][1] - total).abs() <= 1e-9 * total,
            "b(0) = all work"
        );
        for t in [0.0, 0.001, 0.1, 1.0, 10.0] {
            let min = rb
                .vertices()
                .iter()
                .map(|[r, b]| b + r * t)
                .fold(f64::INFINITY, f64::min);
            assert!(
                (arrival.at(t) - min).abs() <= 1e-9 * min.max(1.0),
                "{stage} t={t}"
            );
        }
    }
}

#[test]
fn pruned_curve_is_an_upper_bound_with_few_pieces() {
    let path = production("trace0001.csv");
    let args = |prune: Option<&str>| {
        let mut a = vec![
            "curve",
            "rb",
            path.to_str().unwrap(),
            "--stage",
            "net-out",
            "--json",
        ];
        if let Some(k) = prune {
            a.extend(["--prune", k]);
        }
        json::<RbReport>(&a.iter().map(|s| &**s).collect::<Vec<_>>())
    };
    let exact = args(None);
    let pruned = args(Some("5"));
    assert!(pruned.rb.len() <= 5 && exact.rb.len() > 5);
    let e = ArrivalCurve::new(exact.arrival, exact.tail_rate).unwrap();
    let p = ArrivalCurve::new(pruned.arrival, pruned.tail_rate).unwrap();
    for &[t, _] in e.vertices() {
        assert!(p.at(t) >= e.at(t) * (1.0 - 1e-9), "t={t}");
    }
}

#[test]
fn rb_svg_has_both_panels() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("rb.svg");
    let path = production("trace0000.csv");
    let out = tailbound(&[
        "curve",
        "rb",
        path.to_str().unwrap(),
        "--stage",
        "net-in",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("r-b curve") && svg.contains("arrival curve"));
}

#[test]
fn mmpp_fit_of_a_production_trace() {
    let path = production("trace0000.csv");
    for sizes in ["exponential", "empirical"] {
        let r: MmppReport = json(&[
            "curve",
            "mmpp",
            path.to_str().unwrap(),
            "--stage",
            "net-out",
            "--sizes",
            sizes,
            "--json",
        ]);
        r.mmpp.validate().expect("valid MMPP");
        assert!(!r.mmpp.states.is_empty() && r.mmpp.states.len() <= 10);
        assert!(r.mmpp.states.iter().all(|s| s.intervals > 0));
        assert_eq!(r.mmpp.step_s, 1e-5);
        assert!(r.mean_rate.is_finite() && r.mean_rate > 0.0);
    }
}

#[test]
fn effective_bandwidth_shrinks_as_the_delay_grows() {
    let path = production("trace0000.csv");
    let at = |delay: &str| {
        json::<EffBwReport>(&[
            "curve",
            "effbw",
            path.to_str().unwrap(),
            "--stage",
            "net-out",
            "--delay",
            delay,
            "--json",
        ])
    };
    let (tight, loose) = (at("10ms"), at("1s"));
    assert!(tight.rate > loose.rate);
    let mean = tight.mean_rate.unwrap();
    assert!(
        loose.rate >= mean * 0.999,
        "no shaper drains a trace below its mean rate"
    );
}
