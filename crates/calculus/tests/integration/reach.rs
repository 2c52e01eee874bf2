//! `Reach`'s two rules on random small clusters, for each analysis admission uses: a
//! newcomer moves no bound outside [`Reach::affected`], and the affected tenants bounded on
//! the network of their [`Reach::inputs`] get the bounds of the whole network; so do they
//! analysed in place over the reach ([`bound_hinted_over`]), under SNC-Meister, in any
//! order, and stopped early they give the same bounds up to where they stop.

use proptest::prelude::*;
use std::ops::ControlFlow;
use tailbound_calculus::snc::Present;
use tailbound_calculus::{
    bound_all, bound_hinted_over, Bound, BoundOptions, Method, Reach, TenantBound,
};
use tailbound_model::Network;
use tailbound_testdata::synthetic::{self, Cluster, Rng};

/// The bound of tenant `name` in `bounds`.
fn of<'a>(bounds: &'a [TenantBound], name: &str) -> &'a Bound {
    &bounds
        .iter()
        .find(|b| b.name == name)
        .expect("a bounded tenant")
        .total
}

fn same(a: &Bound, b: &Bound) -> bool {
    match (a, b) {
        (Bound::Within(x), Bound::Within(y)) => (x - y).abs() <= 1e-9 * y.abs(),
        (Bound::Unbounded(_), Bound::Unbounded(_)) => true,
        _ => false,
    }
}

fn sub(net: &Network, ids: &[usize]) -> Network {
    net.subset(ids).0
}

/// The tenants a reach sees, in their own groups.
struct Over<'a> {
    net: &'a Network,
    reach: &'a Reach<'a>,
}

impl Present for Over<'_> {
    fn level(&self, t: usize) -> Option<u32> {
        self.reach.level(t)
    }

    fn flows_at(&self, q: usize) -> Vec<usize> {
        self.reach.flows_at(q)
    }

    fn group(&self, t: usize) -> Option<&str> {
        self.net.tenants[t].group.as_deref()
    }
}

fn check(method: Method, seed: u64, cluster: Cluster, tenants: usize) -> Result<(), TestCaseError> {
    let net = synthetic::network(cluster, tenants, seed);
    let mut rng = Rng::new(seed ^ 0xa11);
    let newcomer = rng.below(tenants);
    let present: Vec<usize> = (0..tenants)
        .filter(|&t| t != newcomer && rng.unit() < 0.8)
        .collect();
    let mut after: Vec<usize> = present.iter().copied().chain([newcomer]).collect();
    after.sort_unstable();
    let levels: Vec<(usize, u32)> = after
        .iter()
        .copied()
        .zip(net.priorities_of(&after))
        .collect();
    let reach = Reach::new(&net, &levels);
    let level = levels
        .iter()
        .find(|&&(t, _)| t == newcomer)
        .map(|&(_, l)| l);
    let affected = reach.affected(&[(newcomer, level.unwrap_or(0))]);
    prop_assert!(affected.contains(&newcomer));
    let opts = BoundOptions::default();
    let before = bound_all(&sub(&net, &present), method, &opts).unwrap();
    let whole = bound_all(&sub(&net, &after), method, &opts).unwrap();
    for &t in &present {
        let name = &net.tenants[t].name;
        if affected.binary_search(&t).is_err() {
            prop_assert!(
                same(of(&before, name), of(&whole, name)),
                "{method}, seed {seed}: {name} is not affected by t{newcomer}, but its bound moved from {:?} to {:?}",
                of(&before, name),
                of(&whole, name)
            );
        }
    }
    let inputs = reach.inputs(&affected);
    prop_assert!(affected.iter().all(|t| inputs.binary_search(t).is_ok()));
    let near = bound_all(&sub(&net, &inputs), method, &opts).unwrap();
    for &t in &affected {
        let name = &net.tenants[t].name;
        prop_assert!(
            same(of(&near, name), of(&whole, name)),
            "{method}, seed {seed}: {name} gets {:?} on its inputs {inputs:?}, {:?} on the whole network",
            of(&near, name),
            of(&whole, name)
        );
    }
    if method == Method::SncMeister {
        let over = Over {
            net: &net,
            reach: &reach,
        };
        let hints = vec![None; affected.len()];
        let mut all = |_: &mut _| ControlFlow::Continue(());
        let inplace =
            bound_hinted_over(&net, method, &over, &affected, &opts, &hints, &mut all).unwrap();
        prop_assert_eq!(inplace.len(), affected.len());
        for (h, &t) in inplace.iter().zip(&affected) {
            let name = &net.tenants[t].name;
            prop_assert_eq!(&h.bound.name, name);
            prop_assert!(h.searched);
            prop_assert_eq!(
                &h.bound.total,
                of(&near, name),
                "seed {}: {} in place over the reach, on its inputs' network",
                seed,
                name
            );
        }
        // backwards, stopping after the second: the bounds of a fresh analysis in another
        // order, cut short where `each` breaks
        let backwards: Vec<usize> = affected.iter().rev().copied().collect();
        let mut seen = 0;
        let mut two = |_: &mut _| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let cut =
            bound_hinted_over(&net, method, &over, &backwards, &opts, &hints, &mut two).unwrap();
        prop_assert_eq!(cut.len(), backwards.len().min(2));
        for (h, &t) in cut.iter().zip(&backwards) {
            let name = &net.tenants[t].name;
            prop_assert_eq!(
                &h.bound.total,
                of(&near, name),
                "seed {}: {} backwards",
                seed,
                name
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    fn an_arrival_moves_only_affected_bounds_and_inputs_suffice(
        seed in any::<u64>(),
        clients in 1usize..5,
        servers in 1usize..4,
        tenants in 3usize..10,
    ) {
        let cluster = Cluster { clients, servers, link_bytes_per_s: 40e6 };
        for method in [Method::SncMeister, Method::SncMartingale, Method::Dnc] {
            check(method, seed, cluster, tenants)?;
        }
    }
}
