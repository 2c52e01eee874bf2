//! Fuzz harnesses of the allocation readers (issue 27; the shared edits of
//! `tailbound_testdata::fuzz` on the bundled examples): `tailbound alloc`'s JSON input and the
//! VDC spec (TOML and JSON). Nothing panics; a syntax error names the file, a validation error
//! the resource, tenant, flow or field at fault; what is accepted round-trips through JSON,
//! and an accepted allocation input allocates within every capacity.

use proptest::prelude::*;
use tailbound_allocation::input::AllocInput;
use tailbound_allocation::{Mechanism, Mra, VdcSpec};
use tailbound_testdata::fuzz::mutated;

const ALLOC: &str = include_str!("../../examples/alloc.json");
const VDC: &str = include_str!("../../examples/vdc.toml");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn allocation_input(text in mutated(ALLOC)) {
        match AllocInput::from_json("in.json", &text) {
            Err(e) => prop_assert!(e.to_string().contains("in.json"), "{e}"),
            Ok(input) => {
                let json = serde_json::to_string(&input).unwrap();
                prop_assert_eq!(&AllocInput::from_json("back.json", &json).unwrap(), &input);
                match input.problem() {
                    Err(e) => {
                        let msg = e.to_string();
                        prop_assert!(
                            ["resource", "tenant", "flow", "weight", "capacity", "demand"]
                                .iter()
                                .any(|w| msg.contains(w)),
                            "{msg}"
                        );
                    }
                    Ok(p) => {
                        for m in Mechanism::ALL {
                            let a = m.allocate(&p);
                            for (u, c) in a.usage(&p).iter().zip(p.capacity()) {
                                prop_assert!(*u <= c * (1.0 + 1e-9), "{m}: {u} > {c}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn vdc_spec(text in mutated(VDC)) {
        match VdcSpec::parse("dc.toml", &text) {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("dc.toml"), "{msg}");
            }
            Ok((spec, _)) => {
                let json = serde_json::to_string(&spec).unwrap();
                let (back, _) = VdcSpec::parse("dc.json", &json).unwrap();
                prop_assert_eq!(back, spec);
            }
        }
    }
}
