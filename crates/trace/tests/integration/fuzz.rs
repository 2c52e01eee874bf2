//! Nothing panics, whatever the bytes.

use proptest::prelude::*;
use tailbound_trace::parse_trace;

const VALID: &str = "time_s,size_bytes,op\n0.5,4096,Get\n";
const NATIVE: &str = "564037000,0x00001000,DiskWrite\n564243000,0x00001000,DiskRead\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_trace("fuzz", &bytes[..]);
    }

    #[test]
    fn random_lines_from_a_small_alphabet_never_panic(
        text in "[0-9a-fxX.,+\\-eEinfNa \t\r\n#]{0,200}"
    ) {
        let _ = parse_trace("fuzz", text.as_bytes());
        let _ = parse_trace("fuzz", format!("time_s,size_bytes,op\n{text}").as_bytes());
    }

    #[test]
    fn mutated_valid_lines_never_panic(
        csv in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)
    ) {
        let mut bytes = if csv { VALID } else { NATIVE }.as_bytes().to_vec();
        for (at, byte, action) in edits {
            let i = at.index(bytes.len() + 1);
            match action {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => bytes.push(byte),
            }
        }
        if let Ok(t) = parse_trace("fuzz", &bytes[..]) {
            prop_assert!(!t.requests.is_empty());
            prop_assert!(t.requests.iter().all(|r| r.size_bytes > 0));
            prop_assert!(t.requests.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
        }
    }
}

/// The reader's fuzz harness of issue 27 (the shared edits of `tailbound_testdata::fuzz`):
/// an error names the file and a line within it, and an accepted trace written back in
/// either format reads back the same requests.
mod harness {
    use super::{NATIVE, VALID};
    use proptest::prelude::*;
    use tailbound_testdata::fuzz::mutated;
    use tailbound_trace::{parse_trace, write_trace, Format};

    fn check(text: &str) -> Result<(), TestCaseError> {
        match parse_trace("fuzz.csv", text.as_bytes()) {
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("fuzz.csv"), "{msg}");
                prop_assert!(e.line as usize <= text.lines().count() + 1, "{msg}");
            }
            Ok(t) => {
                for format in [Format::Native, Format::Csv] {
                    let mut out = Vec::new();
                    write_trace(&mut out, &t.requests, format).unwrap();
                    let back = parse_trace("back.csv", &out[..]).unwrap();
                    prop_assert_eq!(&back.requests, &t.requests);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn csv_traces(text in mutated(VALID)) {
            check(&text)?;
        }

        #[test]
        fn native_traces(text in mutated(NATIVE)) {
            check(&text)?;
        }
    }
}
