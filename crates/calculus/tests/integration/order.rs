//! [`bound_hinted`] under every method bounds the tenants in the order given and stops after
//! the first bound its callback breaks at, with the bounds [`bound_all`] gives them.

use std::ops::ControlFlow;
use tailbound_calculus::{bound_all, bound_hinted, BoundOptions, Method};
use tailbound_testdata::synthetic::{self, Cluster};

#[test]
fn bounds_come_in_the_order_asked_and_stop_where_the_callback_breaks() {
    let cluster = Cluster {
        clients: 3,
        servers: 2,
        link_bytes_per_s: 40e6,
    };
    let net = synthetic::network(cluster, 6, 7);
    let opts = BoundOptions::default();
    let backwards: Vec<usize> = (0..net.tenants.len()).rev().collect();
    for method in [
        Method::Dnc,
        Method::SncMeister,
        Method::SncHop,
        Method::SncConv,
        Method::SncMartingale,
    ] {
        let whole = bound_all(&net, method, &opts).unwrap();
        let mut seen = Vec::new();
        let mut three = |h: &mut tailbound_calculus::HintedBound| {
            seen.push(h.bound.tenant);
            if seen.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let cut = bound_hinted(&net, method, &backwards, &opts, &[], &mut three).unwrap();
        assert_eq!(
            seen,
            backwards[..3],
            "{method}: the order handed to the callback"
        );
        let got: Vec<usize> = cut.iter().map(|h| h.bound.tenant).collect();
        assert_eq!(got, backwards[..3], "{method}: the bounds returned");
        for h in &cut {
            assert_eq!(
                h.bound, whole[h.bound.tenant],
                "{method}: tenant {}",
                h.bound.tenant
            );
        }
    }
}
