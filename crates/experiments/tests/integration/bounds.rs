use tailbound_calculus::{Method, ThetaSearch};
use tailbound_experiments::bounds::{
    vs_dependent, vs_nines, vs_tenants, BoundsConfig, BoundsExperiment, TenantWorkload,
};
use tailbound_model::Percentile;

fn config() -> BoundsConfig {
    BoundsConfig {
        workload: TenantWorkload {
            duration_s: 120.0,
            ..TenantWorkload::default()
        },
        link_bytes_per_s: 125e6,
        seed: 3,
        percentile: Percentile::new(99.9).unwrap(),
        methods: Method::ALL.to_vec(),
        theta: ThetaSearch::Brent,
    }
}

fn bound(exp: &BoundsExperiment, row: usize, m: Method) -> Option<f64> {
    exp.rows[row].bound_s[m.as_str()]
}

#[test]
fn fig7_snc_meister_is_tightest_and_bounds_grow_with_tenants() {
    let exp = vs_tenants(&config(), &[1, 4, 8], || {}).unwrap();
    for (i, row) in exp.rows.iter().enumerate() {
        let meister = bound(&exp, i, Method::SncMeister)
            .unwrap_or_else(|| panic!("{} tenants: SNC-Meister unbounded", row.x));
        // Alone, a tenant's DNC bound is its own burst over the link rate, which is tight;
        // the stochastic bound wins once tenants multiplex (snc-meister Fig. 7).
        let others: &[Method] = if row.x >= 4.0 {
            &[Method::SncHop, Method::SncConv, Method::Dnc]
        } else {
            &[Method::SncHop, Method::SncConv]
        };
        for &other in others {
            if let Some(b) = bound(&exp, i, other) {
                assert!(
                    meister <= b * (1.0 + 1e-9),
                    "{} tenants: snc-meister {meister} > {} {b}",
                    row.x,
                    other.as_str()
                );
            }
        }
        if i > 0 {
            let prev = bound(&exp, i - 1, Method::SncMeister).unwrap();
            assert!(meister >= prev * (1.0 - 1e-9), "more tenants, lower bound");
        }
    }
}

#[test]
fn fig8_dependence_raises_the_snc_bound() {
    let exp = vs_dependent(&config(), 4, || {}).unwrap();
    let b: Vec<f64> = (0..exp.rows.len())
        .map(|i| bound(&exp, i, Method::SncMeister).unwrap())
        .collect();
    assert!(b.windows(2).all(|w| w[1] >= w[0] * (1.0 - 1e-6)), "{b:?}");
    assert!(
        b[b.len() - 1] > b[0],
        "all dependent should be looser: {b:?}"
    );
}

#[test]
fn fig13_more_nines_cost_more_but_dnc_is_flat() {
    let exp = vs_nines(&config(), 5, &[1, 3, 6, 12], || {}).unwrap();
    let snc: Vec<f64> = (0..4)
        .map(|i| bound(&exp, i, Method::SncMeister).unwrap())
        .collect();
    assert!(snc.windows(2).all(|w| w[1] >= w[0]), "{snc:?}");
    let dnc: Vec<Option<f64>> = (0..4).map(|i| bound(&exp, i, Method::Dnc)).collect();
    assert!(dnc.windows(2).all(|w| w[0] == w[1]), "{dnc:?}");
    assert!(
        snc[1] < dnc[1].unwrap_or(f64::INFINITY),
        "p99.9 SNC below DNC"
    );
}
