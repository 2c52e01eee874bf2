//! The workloads CSV reader's fuzz harness (issue 27; the shared edits of
//! `tailbound_testdata::fuzz`): nothing panics, an error names the file and a line within it,
//! and accepted workloads written back as CSV read back the same.

use proptest::prelude::*;
use std::path::Path;
use tailbound_placement::parse_workloads_csv;
use tailbound_testdata::fuzz::mutated;

const SEED: &str = "name,trace,slo_s,percentile\n\
                    exchange-a,traces/trace0000.csv,0.25,99.9\n\
                    # a comment\n\
                    livemaps,traces/trace0003.csv,500ms,99\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn workloads_csv(text in mutated(SEED)) {
        match parse_workloads_csv(Path::new("w.csv"), &text) {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("w.csv"), "{msg}");
                prop_assert!(e.line <= text.lines().count(), "{msg}");
            }
            Ok(ws) => {
                let mut back = String::from("name,trace,slo_s,percentile\n");
                for w in &ws {
                    back += &format!(
                        "{},{},{},{}\n",
                        w.name,
                        w.trace.display(),
                        w.slo.latency_s,
                        w.slo.percentile.value()
                    );
                }
                let again = parse_workloads_csv(Path::new("back.csv"), &back).unwrap();
                let key = |ws: &[tailbound_placement::WorkloadLine]| {
                    ws.iter()
                        .map(|w| (w.name.clone(), w.trace.clone(), w.slo))
                        .collect::<Vec<_>>()
                };
                prop_assert_eq!(key(&again), key(&ws));
            }
        }
    }
}
