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
    assert_eq!(
        exp.methods.len(),
        5,
        "the default methods: dnc, snc-hop, snc-conv, snc-meister, snc-martingale"
    );
    let written: BoundsExperiment =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(written, exp);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("Fig. 7") && svg.matches("<path").count() >= 3);
}

#[test]
fn admission_experiment_runs_every_policy_with_replay_and_opt() {
    use tailbound_experiments::admission::AdmissionResult;
    let dir = tempfile::tempdir().unwrap();
    let (out, svg) = (dir.path().join("fig10.json"), dir.path().join("fig10.svg"));
    let traces = tailbound_testdata::production_dir();
    let args = [
        "experiment",
        "admission",
        "--traces",
        traces.to_str().unwrap(),
        "--runs",
        "2",
        "--tenants",
        "16",
        "--opt-runs",
        "1",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ];
    let done = crate::common::tailbound(&args);
    // exit 1 only when some policy had a replay violation
    assert!(
        matches!(done.status.code(), Some(0 | 1)),
        "{}",
        crate::common::stderr(&done)
    );
    let r: AdmissionResult = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(r.runs.len(), 2);
    let violations: usize = r
        .runs
        .iter()
        .flat_map(|x| x.policies.values())
        .map(|p| p.violations)
        .sum();
    assert_eq!(done.status.code() == Some(1), violations > 0);
    for run in &r.runs {
        assert_eq!(
            run.policies.len(),
            5,
            "the four policies and snc-martingale"
        );
        for p in run.policies.values() {
            assert!(p.admitted <= 16 && p.violations <= p.admitted);
            assert_eq!(p.violators.len(), p.violations);
            // every admitted tenant with its bound (within its SLO) and its replay
            assert_eq!(p.tenants.len(), p.admitted);
            for t in &p.tenants {
                assert!(
                    t.bound_s > 0.0 && t.bound_s <= t.slo_s * (1.0 + 1e-9),
                    "{t:?}"
                );
            }
            let missed = p.tenants.iter().filter(|t| t.worst_s > t.slo_s).count();
            assert_eq!(missed, p.violations);
        }
        // a worst case for what the tenants sent: the DNC policies' bounds on the replayed
        // halves, under the same decisions, are never below the replay
        for (name, p) in run.policies.iter().filter(|(n, _)| *n != "snc-meister") {
            for t in &p.tenants {
                assert!(
                    t.replayed_bound_s.is_none_or(|b| t.worst_s <= b),
                    "{name}: {t:?}"
                );
            }
        }
    }
    assert!(r.runs[0].opt.is_some() && r.runs[1].opt.is_none());
    // the default regime: traces sped up 5x, tenants kept when they meet their SLO alone
    assert_eq!(r.config.speed_up, 5.0);
    assert!(r.config.isolated);
    // a violator is diagnosed alone behind its own limits
    for p in r.runs.iter().flat_map(|x| x.policies.values()) {
        assert!(p
            .violators
            .iter()
            .all(|v| v.alone_limited_worst_s.is_some()));
    }
    for p in r.summary.policies.values() {
        assert!(p.of_opt_median.is_some() && p.of_opt.is_some());
    }
    // the two runs draw different arrival orders
    assert_ne!(r.runs[0].seed, r.runs[1].seed);
    let raw: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    for key in ["admitted", "bytes", "violations", "seconds"] {
        assert!(
            raw["runs"][0]["policies"]["snc-meister"][key].is_number(),
            "{key}"
        );
    }
    assert!(raw["summary"]["ratio"].is_number() || raw["summary"]["ratio"].is_null());
    for (name, p) in &r.summary.policies {
        let above: f64 = r
            .runs
            .iter()
            .map(|x| {
                x.policies[name]
                    .tenants
                    .iter()
                    .filter(|t| t.worst_s > t.bound_s)
                    .count() as f64
            })
            .sum::<f64>()
            / 2.0;
        assert!((p.above_bound - above).abs() < 1e-12, "{name}");
        assert!(
            p.bound_over_replay.is_some_and(|x| x > 0.0) || p.admitted == 0.0,
            "{name}"
        );
    }
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("bound vs replay"));
    assert!(std::fs::read_to_string(out).unwrap().contains("\"runs\""));
}

#[test]
fn admission_experiment_refuses_a_speed_up_that_is_not_positive() {
    let traces = tailbound_testdata::production_dir();
    let done = crate::common::tailbound(&[
        "experiment",
        "admission",
        "--traces",
        traces.to_str().unwrap(),
        "--speed-up",
        "0",
        "--isolated",
        "false",
    ]);
    assert_eq!(done.status.code(), Some(2));
    let err = crate::common::stderr(&done);
    assert!(
        err.contains("--speed-up") && err.contains("expected more than 0"),
        "{err}"
    );
}

#[test]
fn eyeq_writes_json_and_svg_with_both_parts() {
    let dir = tempfile::tempdir().unwrap();
    let (out, svg) = (dir.path().join("eyeq.json"), dir.path().join("eyeq.svg"));
    let res = crate::common::tailbound(&[
        "experiment",
        "eyeq",
        "--seeds",
        "1",
        "--modes",
        "none,eyeq",
        "--duration",
        "300ms",
        "--warmup",
        "50ms",
        "--latency-duration",
        "1s",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    // 0 when every check holds, 1 when one fails; never an error
    assert!(
        matches!(res.status.code(), Some(0 | 1)),
        "{}",
        crate::common::stderr(&res)
    );
    let exp: tailbound_experiments::eyeq::EyeqExperiment =
        serde_json::from_slice(&res.stdout).unwrap();
    assert_eq!(res.status.code(), Some(if exp.holds() { 0 } else { 1 }));
    let share = |m| exp.mode(m).unwrap().share_of_guarantee;
    use tailbound_experiments::eyeq::{Mode, Row};
    assert!(share(Mode::Eyeq) > 2.0 * share(Mode::None), "{exp:?}");
    assert_eq!(exp.latency.len(), 4);
    let p999 = |r| exp.row(r).unwrap().p999_s;
    assert!(p999(Row::Interference) > 5.0 * p999(Row::Alone));
    assert!(p999(Row::InterferenceEyeq) < p999(Row::Interference) / 3.0);
    let written: tailbound_experiments::eyeq::EyeqExperiment =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(written, exp);
    assert!(std::fs::read_to_string(svg).unwrap().contains("EyeQ (a)"));
}

#[test]
fn eyeq_rejects_bad_flags_before_running() {
    for (flag, value, says) in [
        ("--link", "fast", "--link"),
        ("--capacity", "1.5", "capacity_fraction = 1.5"),
        ("--modes", "eyeq,strict", "none, static, eyeq"),
        ("--warmup", "2s", "warmup_s"),
        ("--interval", "5s", "eyeq_interval_s"),
        ("--testbed", "--warmup=20s", "warmup_s"),
    ] {
        let res = crate::common::tailbound(&["experiment", "eyeq", flag, value]);
        assert_eq!(res.status.code(), Some(2), "{flag} {value}");
        let err = crate::common::stderr(&res);
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
}
