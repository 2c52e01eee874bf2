use tailbound_model::{Op, Request};
use tailbound_trace::Trace;

pub fn trace(points: &[(u64, u64, Op)]) -> Trace {
    Trace {
        name: "handmade".into(),
        requests: points
            .iter()
            .map(|&(arrival_ns, size_bytes, op)| Request {
                arrival_ns,
                size_bytes,
                op,
            })
            .collect(),
    }
}
