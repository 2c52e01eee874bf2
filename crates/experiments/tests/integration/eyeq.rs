//! EyeQ's experiment in the simulator: issue 23's acceptance on three seeds (deterministic:
//! the simulator draws nothing from the machine), and the orderings behind it.

use tailbound_experiments::eyeq::{run, EyeqSetup, Mode, Row, Simulator};

#[test]
fn eyeq_acceptance_holds_in_the_simulator_on_three_seeds() {
    let setup = EyeqSetup::default();
    let exp = run(
        &Simulator,
        &setup,
        &[1, 2, 3],
        &[Mode::None, Mode::Static, Mode::Eyeq],
        &Row::ALL,
        || {},
    )
    .unwrap();
    for c in &exp.checks {
        assert!(c.holds, "{}: {}", c.name, c.detail);
    }
    assert_eq!(exp.checks.len(), 4);
    let (none, fixed, eyeq) = (
        exp.mode(Mode::None).unwrap(),
        exp.mode(Mode::Static).unwrap(),
        exp.mode(Mode::Eyeq).unwrap(),
    );
    for s in &eyeq.seeds {
        // EyeQ is work conserving: the TCP tenant takes more than its guarantee while the
        // blaster is off; static limits hold it at its guarantee
        assert!(s.share_of_guarantee_while_off > 1.4, "{s:?}");
        assert!(
            s.blaster_share_of_guarantee > 0.9,
            "the blaster keeps its share: {s:?}"
        );
    }
    for s in &fixed.seeds {
        assert!((s.share_of_guarantee_while_off - 1.0).abs() < 0.02, "{s:?}");
    }
    // without enforcement the blaster takes most of the link while on
    assert!(none
        .seeds
        .iter()
        .all(|s| s.blaster_share_of_guarantee > 1.5));
    let feedback = exp.feedback.as_ref().unwrap();
    assert!(
        feedback.fraction_of_link > 0.0 && feedback.fraction_of_link < 0.02,
        "{feedback:?}"
    );
    let alone = exp.row(Row::Alone).unwrap();
    let alone_eyeq = exp.row(Row::AloneEyeq).unwrap();
    // EyeQ alone changes nothing: memcached is never congested
    assert_eq!(alone.seeds, alone_eyeq.seeds);
}
