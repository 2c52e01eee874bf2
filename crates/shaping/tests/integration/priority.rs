//! `PriorityQueue` against a Vec-based model: strict priority across levels, FIFO within one.

use proptest::prelude::*;
use tailbound_shaping::PriorityQueue;

#[derive(Debug, Clone)]
enum Op {
    Push(usize),
    Pop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![3 => (0usize..6).prop_map(Op::Push), 2 => Just(Op::Pop)]
}

/// The model: items in push order; pop takes the first item of the lowest level.
fn model_pop(model: &mut Vec<(usize, u32)>) -> Option<(usize, u32)> {
    let best = model.iter().map(|&(level, _)| level).min()?;
    let pos = model.iter().position(|&(level, _)| level == best)?;
    Some(model.remove(pos))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn matches_the_vec_model(ops in prop::collection::vec(op(), 0..200)) {
        let mut q = PriorityQueue::new();
        let mut model: Vec<(usize, u32)> = Vec::new();
        let mut next_id = 0u32;
        for op in ops {
            match op {
                Op::Push(level) => {
                    q.push(level, next_id);
                    model.push((level, next_id));
                    next_id += 1;
                }
                Op::Pop => {
                    let expected = model_pop(&mut model);
                    prop_assert_eq!(q.peek().map(|(l, &id)| (l, id)), expected);
                    prop_assert_eq!(q.pop(), expected);
                }
            }
            prop_assert_eq!(q.len(), model.len());
            prop_assert_eq!(q.is_empty(), model.is_empty());
            for level in 0..7 {
                let n = model.iter().filter(|&&(l, _)| l == level).count();
                prop_assert_eq!(q.len_at(level), n);
            }
        }
        // Draining pops levels in non-decreasing order, FIFO (increasing id) within a level.
        let drained: Vec<(usize, u32)> = std::iter::from_fn(|| q.pop()).collect();
        prop_assert!(drained.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
        prop_assert_eq!(drained.len(), model.len());
    }
}
