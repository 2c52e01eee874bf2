//! The papers' experiments, reproduced with tailbound's own components.
//!
//! Each experiment is a function from a configuration to the data behind a figure (serde
//! structures), so the CLI only prints, writes JSON and draws; tests can assert the papers'
//! orderings on the same data: snc-meister Fig. 7, 8 and 13 ([`bounds`]), Fig. 1/10/11
//! ([`admission`]), and a small version of it on the real testbed ([`admission_testbed`]);
//! workload-compactor Fig. 6/11/12/13 ([`placement`]); pulsar Fig. 12–14 ([`vdc`]), Fig. 12/13 and 14(a) on the testbed ([`vdc_testbed`],
//! [`vdc_testbed_capacity`]); EyeQ's
//! throughput demo and memcached table ([`eyeq`], on a pluggable backend: the simulator, or
//! the testbed); and the whole pipeline on a bundled tenant set ([`demo`]).

pub mod admission;
pub mod admission_testbed;
pub mod bounds;
pub mod demo;
pub mod eyeq;
pub mod placement;
pub mod vdc;
pub mod vdc_testbed;
pub mod vdc_testbed_capacity;

/// Maps `f` over `items` on up to `threads` scoped threads, keeping the order; each worker
/// takes the next unclaimed item, so uneven items (runs, traces) balance.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<Option<R>>> =
        std::sync::Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1).min(items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                out.lock().expect("no worker panicked")[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .expect("no worker panicked")
        .into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}
