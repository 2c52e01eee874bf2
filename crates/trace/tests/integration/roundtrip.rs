//! Whatever is written reads back identically, in both formats.

use proptest::prelude::*;
use tailbound_model::{Op, Request};
use tailbound_trace::{parse_trace, write_trace, Format, MAX_REQUEST_BYTES};

fn requests() -> impl Strategy<Value = Vec<Request>> {
    (
        prop_oneof![Just(0u64), 0..u64::MAX / 2],
        proptest::collection::vec(
            (
                0u64..10_000_000_000,
                1u64..=MAX_REQUEST_BYTES,
                prop::sample::select(Op::ALL.to_vec()),
            ),
            1..100,
        ),
    )
        .prop_map(|(start, steps)| {
            let mut t = start;
            steps
                .into_iter()
                .map(|(gap, size_bytes, op)| {
                    t = t.saturating_add(gap);
                    Request {
                        arrival_ns: t,
                        size_bytes,
                        op,
                    }
                })
                .collect()
        })
}

proptest! {
    #[test]
    fn write_then_read_gives_back_the_requests(reqs in requests(), csv in any::<bool>()) {
        let format = if csv { Format::Csv } else { Format::Native };
        let mut buf = Vec::new();
        write_trace(&mut buf, &reqs, format).unwrap();
        let back = parse_trace("rt", &buf[..]).unwrap();
        prop_assert_eq!(back.requests, reqs);
    }
}

#[test]
fn extreme_times_round_trip() {
    let reqs = vec![
        Request {
            arrival_ns: 0,
            size_bytes: 1,
            op: Op::Get,
        },
        Request {
            arrival_ns: u64::MAX,
            size_bytes: MAX_REQUEST_BYTES,
            op: Op::DiskWrite,
        },
    ];
    for format in [Format::Native, Format::Csv] {
        let mut buf = Vec::new();
        write_trace(&mut buf, &reqs, format).unwrap();
        assert_eq!(
            parse_trace("rt", &buf[..]).unwrap().requests,
            reqs,
            "{format:?}"
        );
    }
}
