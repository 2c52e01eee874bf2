//! The enforcer's decisions without I/O: which request may go to the appliance when. Every call
//! takes `now` [ns]; the proxy reads the clock at the edge, tests and simulators pass their own.
//!
//! ```text
//!  submit(flow, costs) ──► flow's FIFO ──► MultiBucket (all hops or none) ──► window ──► released
//!                          (one per flow)   (pulsar §4.4, rates from the       (optional: at most N
//!                                           controller every interval)         outstanding; strict
//!                                                                              priority between
//!                                                                              tenants, FIFO within)
//!  complete(ticket) ◄── the reply is back: outstanding and completed tokens, window slot freed
//! ```
//!
//! **Same rules as the simulator** (`tailbound_vdc_sim`): one [`MultiBucket`] per flow over its
//! hops, sized rate × [`DEFAULT_BURST_S`]; an allocation update keeps at most `carry_s` of
//! unused tokens ([`CoreConfig::carry_s`], 0.1 s) and gives every hop at least
//! [`CoreConfig::min_rate`]; a flow's requests leave in arrival order. And the same statistics
//! for [`FlowReport`] (pulsar §4.2): tokens let through (utilization), tokens queued at the end
//! of the interval (backlog), the time averages of tokens queued at the enforcer (queueing)
//! and outstanding beyond it until the reply is back (outstanding), tokens completed, and the
//! same figures per sub-interval sample, integrated exactly over time: one
//! [`FlowMeter`] per flow, the simulator's own.
//!
//! **Costs known late.** A GET's size is known only from its reply: it is charged an estimate
//! at submission and the difference is settled on every hop's bucket when it completes
//! ([`MultiBucket::adjust`]), so over any window the tokens taken match the real costs but for
//! the requests still outstanding.
//!
//! **Priorities.** With a window of `N` outstanding requests ([`CoreConfig::window`]), requests
//! that passed their buckets wait for a free slot in a strict-priority queue by their flow's
//! level (0 highest), FIFO within a level: a latency-sensitive tenant's requests overtake a
//! backlog of others' at the appliance. Without a window, requests leave as soon as their
//! buckets allow, and priorities do not matter.

use std::collections::VecDeque;
use tailbound_allocation::{FlowMeter, FlowReport};
use tailbound_shaping::{MultiBucket, PriorityQueue, ShapingError, DEFAULT_BURST_S};

/// Rate of an unlimited bucket [tokens/s] (and its burst [tokens]): finite, so the same
/// [`MultiBucket`] code runs, and beyond any real appliance.
pub const UNLIMITED_RATE: f64 = 1e30;

/// Settings of the core.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreConfig {
    /// the smallest rate a bucket gets, so new demand can show (pulsar §5's default rate for
    /// new flows) [tokens/s]
    pub min_rate: f64,
    /// unused tokens a bucket keeps across an allocation update, as time at the new rate [s]
    pub carry_s: f64,
    /// most requests outstanding at the appliance at once; `None`: no limit
    pub window: Option<usize>,
    /// bucket rates before the first allocation: `None` → [`UNLIMITED_RATE`]
    pub initial_rate: Option<f64>,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            min_rate: 1e5,
            carry_s: 0.1,
            window: None,
            initial_rate: Some(1e5),
        }
    }
}

/// A flow the enforcer polices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSetup {
    /// `tenant/flow`, for errors and reports
    pub name: String,
    /// hops on its path (one bucket each)
    pub hops: usize,
    /// strict-priority level at the window, 0 highest
    pub priority: usize,
}

/// Why the core refused an input. Nothing changes on error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    #[error("unknown flow #{flow}; the enforcer has {flows} flows")]
    UnknownFlow { flow: usize, flows: usize },
    #[error("flow {flow:?}: {source}")]
    Bucket {
        flow: String,
        #[source]
        source: ShapingError,
    },
    #[error("invalid enforcer settings: {0}")]
    Config(String),
}

/// A released request: hand it back to [`EnforcerCore::complete`] when its reply is in.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    flow: usize,
    /// tokens charged per hop
    costs: Vec<f64>,
}

impl Ticket {
    /// The flow it belongs to.
    pub fn flow(&self) -> usize {
        self.flow
    }

    /// Tokens charged per hop.
    pub fn costs(&self) -> &[f64] {
        &self.costs
    }
}

/// What [`EnforcerCore::submit`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Admit {
    /// go now
    Now(Ticket),
    /// queued: the item comes back from a later call, with its ticket
    Queued,
}

#[derive(Debug)]
struct Queued<T> {
    item: Option<T>,
    costs: Vec<f64>,
}

#[derive(Debug)]
struct Flow<T> {
    setup: FlowSetup,
    bucket: MultiBucket,
    /// waiting for tokens, in arrival order
    queue: VecDeque<Queued<T>>,
    meter: FlowMeter,
    /// requests let through and not completed
    in_flight: usize,
}

/// A request that passed its buckets and waits for a window slot.
#[derive(Debug)]
struct Passed<T> {
    flow: usize,
    item: Option<T>,
    costs: Vec<f64>,
}

/// One flow's state for status pages and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowStatus {
    pub name: String,
    /// requests waiting for tokens
    pub queued: usize,
    /// requests released and not completed
    pub in_flight: usize,
    /// bucket rates per hop [tokens/s]
    pub rates: Vec<f64>,
    /// bucket levels per hop [tokens]
    pub tokens: Vec<f64>,
}

/// One interval's reports.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalReport {
    /// when the interval began and ended [ns]
    pub from_ns: u64,
    pub to_ns: u64,
    /// per flow, in setup order
    pub flows: Vec<FlowReport>,
}

/// The enforcer's core; see the module docs. `T` is what the driver wants back when a queued
/// request may go (a waker, a channel end).
#[derive(Debug)]
pub struct EnforcerCore<T> {
    cfg: CoreConfig,
    flows: Vec<Flow<T>>,
    waiting: PriorityQueue<Passed<T>>,
    /// released and not completed, all flows
    in_flight: usize,
    interval_from_ns: u64,
    /// cost vectors of completed tickets, handed out again by [`Self::costs_buffer`] (a
    /// request costs no allocation once the proxy runs)
    spare: Vec<Vec<f64>>,
    /// the settled difference of a completion
    delta: Vec<f64>,
}

/// Most cost vectors kept for reuse.
const SPARE_COSTS: usize = 4096;

impl<T> EnforcerCore<T> {
    /// A core for `flows` at `now_ns`, their buckets at the initial rate.
    ///
    /// # Errors
    /// [`CoreError::Config`] for a non-positive minimum or initial rate, a negative carry or a
    /// zero window.
    pub fn new(
        flows: Vec<FlowSetup>,
        cfg: CoreConfig,
        now_ns: u64,
    ) -> Result<EnforcerCore<T>, CoreError> {
        if !(cfg.min_rate.is_finite() && cfg.min_rate > 0.0) {
            return Err(CoreError::Config(format!(
                "minimum rate {} must be finite and > 0 [tokens/s]",
                cfg.min_rate
            )));
        }
        if !(cfg.carry_s.is_finite() && cfg.carry_s >= 0.0) {
            return Err(CoreError::Config(format!(
                "carry-over {} s must be finite and >= 0",
                cfg.carry_s
            )));
        }
        if cfg.window == Some(0) {
            return Err(CoreError::Config(
                "a window of 0 outstanding requests lets nothing through; use at least 1".into(),
            ));
        }
        let rate = cfg.initial_rate.unwrap_or(UNLIMITED_RATE);
        if !(rate.is_finite() && rate > 0.0) {
            return Err(CoreError::Config(format!(
                "initial rate {rate} must be finite and > 0 [tokens/s]"
            )));
        }
        let flows = flows
            .into_iter()
            .map(|setup| {
                let bucket =
                    MultiBucket::new(&vec![(rate, rate * DEFAULT_BURST_S); setup.hops], now_ns)
                        .map_err(|source| CoreError::Bucket {
                            flow: setup.name.clone(),
                            source,
                        })?;
                Ok(Flow {
                    meter: FlowMeter::new(setup.hops, now_ns),
                    setup,
                    bucket,
                    queue: VecDeque::new(),
                    in_flight: 0,
                })
            })
            .collect::<Result<Vec<_>, CoreError>>()?;
        Ok(EnforcerCore {
            cfg,
            flows,
            waiting: PriorityQueue::new(),
            in_flight: 0,
            interval_from_ns: now_ns,
            spare: Vec::new(),
            delta: Vec::new(),
        })
    }

    /// An empty vector for a request's costs: one a completed ticket gave back when there
    /// is one (pass it to [`Self::submit`]).
    pub fn costs_buffer(&mut self) -> Vec<f64> {
        self.spare.pop().unwrap_or_default()
    }

    fn recycle(&mut self, mut costs: Vec<f64>) {
        if self.spare.len() < SPARE_COSTS {
            costs.clear();
            self.spare.push(costs);
        }
    }

    /// The flows, in setup order.
    pub fn flows(&self) -> impl Iterator<Item = &FlowSetup> {
        self.flows.iter().map(|f| &f.setup)
    }

    fn flow_index(&self, flow: usize) -> Result<usize, CoreError> {
        if flow < self.flows.len() {
            Ok(flow)
        } else {
            Err(CoreError::UnknownFlow {
                flow,
                flows: self.flows.len(),
            })
        }
    }

    fn check_hops(&self, flow: usize, got: usize) -> Result<(), CoreError> {
        let f = &self.flows[flow];
        if got == f.setup.hops {
            Ok(())
        } else {
            Err(CoreError::Bucket {
                flow: f.setup.name.clone(),
                source: ShapingError::WrongLength {
                    what: "costs",
                    got,
                    expected: f.setup.hops,
                },
            })
        }
    }

    /// A request of flow `flow` costing `costs` per hop arrives at `now_ns`. It goes at once
    /// ([`Admit::Now`]) when nothing of its flow waits, its buckets allow and the window has
    /// room; otherwise it is queued with `item()` and comes back through `released` from this
    /// or a later call. Other flows' requests that became ready are appended to `released`.
    ///
    /// # Errors
    /// [`CoreError`] for an unknown flow or a cost vector without one entry per hop.
    pub fn submit(
        &mut self,
        now_ns: u64,
        flow: usize,
        costs: Vec<f64>,
        item: impl FnOnce() -> T,
        released: &mut Vec<(T, Ticket)>,
    ) -> Result<Admit, CoreError> {
        let flow = self.flow_index(flow)?;
        self.check_hops(flow, costs.len())?;
        let f = &mut self.flows[flow];
        f.meter.queue(now_ns, &costs, 1.0);
        let fast = f.queue.is_empty()
            && self.waiting.is_empty()
            && self.cfg.window.is_none_or(|w| self.in_flight < w)
            && f.bucket.take(now_ns, &costs).is_ok();
        if fast {
            f.meter.let_through(&costs);
            return Ok(Admit::Now(self.release(now_ns, flow, costs)));
        }
        f.queue.push_back(Queued {
            item: Some(item()),
            costs,
        });
        self.drain(now_ns, flow, released);
        Ok(Admit::Queued)
    }

    /// Counts a request as gone to the appliance.
    fn release(&mut self, now_ns: u64, flow: usize, costs: Vec<f64>) -> Ticket {
        let f = &mut self.flows[flow];
        f.meter.queue(now_ns, &costs, -1.0);
        f.meter.go_out(now_ns, &costs, 1.0);
        f.in_flight += 1;
        self.in_flight += 1;
        Ticket { flow, costs }
    }

    /// Lets flow `flow`'s head requests pass their buckets while they allow, then fills the
    /// window.
    fn drain(&mut self, now_ns: u64, flow: usize, released: &mut Vec<(T, Ticket)>) {
        let f = &mut self.flows[flow];
        while let Some(head) = f.queue.front() {
            if f.bucket.take(now_ns, &head.costs).is_err() {
                // not ready (a wrong-length vector was refused at submission)
                break;
            }
            let Some(q) = f.queue.pop_front() else { break };
            f.meter.let_through(&q.costs);
            self.waiting.push(
                f.setup.priority,
                Passed {
                    flow,
                    item: q.item,
                    costs: q.costs,
                },
            );
        }
        self.fill_window(now_ns, released);
    }

    fn fill_window(&mut self, now_ns: u64, released: &mut Vec<(T, Ticket)>) {
        while self.cfg.window.is_none_or(|w| self.in_flight < w) {
            let Some((_, p)) = self.waiting.pop() else {
                break;
            };
            let ticket = self.release(now_ns, p.flow, p.costs);
            if let Some(item) = p.item {
                released.push((item, ticket));
            }
        }
    }

    /// Releases every queued request whose buckets allow at `now_ns` (call it at
    /// [`Self::next_wakeup`]).
    pub fn poll(&mut self, now_ns: u64, released: &mut Vec<(T, Ticket)>) {
        for flow in 0..self.flows.len() {
            if !self.flows[flow].queue.is_empty() {
                self.drain(now_ns, flow, released);
            }
        }
        self.fill_window(now_ns, released);
    }

    /// The earliest time [ns] at which a queued request's buckets will allow it (the
    /// multi-resource bucket's exact `ready_at`), if any request waits for tokens.
    pub fn next_wakeup(&self, now_ns: u64) -> Option<u64> {
        self.flows
            .iter()
            .filter_map(|f| {
                let head = f.queue.front()?;
                f.bucket.ready_at(now_ns, &head.costs).ok()
            })
            .min()
    }

    /// The reply to a released request is in at `now_ns`. `actual` is what it really cost per
    /// hop when that differs from what it was charged (a GET's real size): the difference is
    /// settled on the buckets. Frees its window slot, which may release others into
    /// `released`.
    ///
    /// # Errors
    /// [`CoreError`] for a ticket of an unknown flow or `actual` without one entry per hop.
    pub fn complete(
        &mut self,
        now_ns: u64,
        ticket: Ticket,
        actual: Option<&[f64]>,
        released: &mut Vec<(T, Ticket)>,
    ) -> Result<(), CoreError> {
        let flow = self.flow_index(ticket.flow)?;
        if let Some(a) = actual {
            self.check_hops(flow, a.len())?;
        }
        let f = &mut self.flows[flow];
        match actual {
            Some(a) => {
                let delta = &mut self.delta;
                delta.clear();
                delta.extend(a.iter().zip(&ticket.costs).map(|(x, c)| x - c));
                f.bucket
                    .adjust(now_ns, delta)
                    .map_err(|source| CoreError::Bucket {
                        flow: f.setup.name.clone(),
                        source,
                    })?;
                f.meter.go_out(now_ns, &ticket.costs, -1.0);
                f.meter.let_through(delta);
                f.meter.complete_path(a);
            }
            None => {
                f.meter.go_out(now_ns, &ticket.costs, -1.0);
                f.meter.complete_path(&ticket.costs);
            }
        }
        f.in_flight = f.in_flight.saturating_sub(1);
        self.in_flight = self.in_flight.saturating_sub(1);
        self.recycle(ticket.costs);
        self.fill_window(now_ns, released);
        Ok(())
    }

    /// Drops the queued requests whose item `gone` says is gone (a closed connection); they
    /// count as never sent.
    pub fn cancel(&mut self, now_ns: u64, mut gone: impl FnMut(&T) -> bool) {
        for f in &mut self.flows {
            let meter = &mut f.meter;
            f.queue.retain(|q| {
                let keep = q.item.as_ref().is_some_and(|i| !gone(i));
                if !keep {
                    meter.queue(now_ns, &q.costs, -1.0);
                }
                keep
            });
        }
    }

    /// New allocation for flow `flow` at `now_ns`, per hop [tokens/s], as the simulator
    /// applies it: every rate at least the minimum, at most `carry_s` of unused tokens kept,
    /// buckets of rate × [`DEFAULT_BURST_S`]. Queued requests the new rates allow are
    /// appended to `released`.
    ///
    /// # Errors
    /// [`CoreError`] for an unknown flow, a vector without one rate per hop, or a rate that is
    /// negative or not finite.
    pub fn set_allocation(
        &mut self,
        now_ns: u64,
        flow: usize,
        rates: &[f64],
        released: &mut Vec<(T, Ticket)>,
    ) -> Result<(), CoreError> {
        let flow = self.flow_index(flow)?;
        self.check_hops(flow, rates.len())?;
        let (min_rate, carry_s) = (self.cfg.min_rate, self.cfg.carry_s);
        let f = &mut self.flows[flow];
        let bad = rates.iter().find(|r| !(r.is_finite() && **r >= 0.0));
        if let Some(&r) = bad {
            return Err(CoreError::Bucket {
                flow: f.setup.name.clone(),
                source: ShapingError::InvalidRate { rate: r },
            });
        }
        let full: Vec<(f64, f64)> = rates
            .iter()
            .map(|&r| {
                let r = r.max(min_rate);
                (r, r * DEFAULT_BURST_S)
            })
            .collect();
        let carry: Vec<(f64, f64)> = full.iter().map(|&(r, _)| (r, r * carry_s)).collect();
        f.bucket
            .set_rates(now_ns, &carry)
            .and_then(|()| f.bucket.set_rates(now_ns, &full))
            .map_err(|source| CoreError::Bucket {
                flow: f.setup.name.clone(),
                source,
            })?;
        self.drain(now_ns, flow, released);
        Ok(())
    }

    /// Makes flow `flow`'s buckets unlimited (rate and burst [`UNLIMITED_RATE`]).
    ///
    /// # Errors
    /// [`CoreError::UnknownFlow`].
    pub fn set_unlimited(
        &mut self,
        now_ns: u64,
        flow: usize,
        released: &mut Vec<(T, Ticket)>,
    ) -> Result<(), CoreError> {
        let flow = self.flow_index(flow)?;
        let f = &mut self.flows[flow];
        let p = vec![(UNLIMITED_RATE, UNLIMITED_RATE); f.setup.hops];
        f.bucket = MultiBucket::new(&p, now_ns).map_err(|source| CoreError::Bucket {
            flow: f.setup.name.clone(),
            source,
        })?;
        self.drain(now_ns, flow, released);
        Ok(())
    }

    /// Closes the current sub-interval sample of every flow at `now_ns` (pulsar §5's enforcer
    /// timer; the capacity estimators count their consistent readings over samples).
    pub fn sample(&mut self, now_ns: u64) {
        for f in &mut self.flows {
            f.meter.close_sample(now_ns);
        }
    }

    /// Closes the interval at `now_ns` (and its last sample) and returns every flow's
    /// [`FlowReport`]; the next interval starts.
    pub fn report(&mut self, now_ns: u64) -> IntervalReport {
        let from_ns = self.interval_from_ns;
        let flows = self
            .flows
            .iter_mut()
            .map(|f| f.meter.report(now_ns))
            .collect();
        self.interval_from_ns = now_ns.max(from_ns);
        IntervalReport {
            from_ns,
            to_ns: now_ns,
            flows,
        }
    }

    /// Every flow's queue, requests in flight and buckets at `now_ns`.
    pub fn status(&self, now_ns: u64) -> Vec<FlowStatus> {
        self.flows
            .iter()
            .map(|f| FlowStatus {
                name: f.setup.name.clone(),
                queued: f.queue.len(),
                in_flight: f.in_flight,
                rates: f.bucket.buckets().iter().map(|b| b.rate()).collect(),
                tokens: f.bucket.tokens(now_ns),
            })
            .collect()
    }

    /// Requests released and not completed, all flows.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn core(flows: &[(usize, usize)], window: Option<usize>) -> EnforcerCore<u32> {
        let setups = flows
            .iter()
            .enumerate()
            .map(|(i, &(hops, priority))| FlowSetup {
                name: format!("t{i}/f"),
                hops,
                priority,
            })
            .collect();
        EnforcerCore::new(
            setups,
            CoreConfig {
                window,
                ..CoreConfig::default()
            },
            0,
        )
        .unwrap()
    }

    /// An operation script: each step runs at a time and says what must be released.
    enum Op {
        /// (at, flow, costs, id): submit; `true` if it must go at once
        Submit(u64, usize, Vec<f64>, u32, bool),
        /// (at, flow, rates): allocation
        Allocate(u64, usize, Vec<f64>),
        /// (at): poll; the ids released
        Poll(u64, Vec<u32>),
        /// (at, id of a released request): its reply is in; the ids released by it
        Complete(u64, u32, Vec<u32>),
        /// the next wake-up must be this
        Wakeup(u64, Option<u64>),
    }

    fn check(core: &mut EnforcerCore<u32>, ops: Vec<Op>) {
        let mut tickets: Vec<(u32, Ticket)> = Vec::new();
        for (k, op) in ops.into_iter().enumerate() {
            let mut released = Vec::new();
            match op {
                Op::Submit(at, flow, costs, id, now) => {
                    let a = core.submit(at, flow, costs, || id, &mut released).unwrap();
                    match a {
                        Admit::Now(t) => {
                            assert!(now, "step {k}: request {id} went at once");
                            tickets.push((id, t));
                        }
                        Admit::Queued => assert!(!now, "step {k}: request {id} was queued"),
                    }
                    assert!(released.is_empty(), "step {k}: {released:?}");
                }
                Op::Allocate(at, flow, rates) => {
                    core.set_allocation(at, flow, &rates, &mut released)
                        .unwrap();
                    assert!(released.is_empty(), "step {k}: {released:?}");
                }
                Op::Poll(at, want) => {
                    core.poll(at, &mut released);
                    let got: Vec<u32> = released.iter().map(|(i, _)| *i).collect();
                    assert_eq!(got, want, "step {k}");
                }
                Op::Complete(at, id, want) => {
                    let i = tickets.iter().position(|(j, _)| *j == id).unwrap();
                    let (_, t) = tickets.remove(i);
                    core.complete(at, t, None, &mut released).unwrap();
                    let got: Vec<u32> = released.iter().map(|(i, _)| *i).collect();
                    assert_eq!(got, want, "step {k}");
                }
                Op::Wakeup(at, want) => assert_eq!(core.next_wakeup(at), want, "step {k}"),
            }
            tickets.extend(released);
        }
    }

    #[test]
    fn over_budget_requests_wait_exactly_as_the_multibucket_says() {
        use Op::*;
        let mut c = core(&[(2, 0)], None);
        // 1000 tokens/s on hop 0, 4000 on hop 1 (above the minimum of 1e5? no: floor applies)
        let mut c2 = EnforcerCore::<u32>::new(
            vec![FlowSetup {
                name: "b/f".into(),
                hops: 2,
                priority: 0,
            }],
            CoreConfig {
                min_rate: 1.0,
                ..CoreConfig::default()
            },
            0,
        )
        .unwrap();
        let mut mirror = MultiBucket::with_default_bursts(&[1000.0, 4000.0], 0).unwrap();
        mirror
            .set_rates(0, &[(1000.0, 100.0), (4000.0, 400.0)])
            .unwrap();
        mirror
            .set_rates(0, &[(1000.0, 1000.0), (4000.0, 4000.0)])
            .unwrap();
        let cost = vec![60.0, 300.0];
        // the carried 0.1 s lets one request through; the next waits for hop 1's tokens
        mirror.take(0, &cost).unwrap();
        let ready = mirror.ready_at(0, &cost).unwrap();
        assert!(ready > 0);
        check(
            &mut c2,
            vec![
                Allocate(0, 0, vec![1000.0, 4000.0]),
                Submit(0, 0, cost.clone(), 1, true),
                Submit(0, 0, cost.clone(), 2, false),
                Submit(0, 0, cost.clone(), 3, false),
                Wakeup(0, Some(ready)),
                Poll(ready - 1, vec![]),
                Poll(ready, vec![2]),
            ],
        );
        mirror.take(ready, &cost).unwrap();
        assert_eq!(c2.next_wakeup(ready), mirror.ready_at(ready, &cost).ok());
        // and the unconfigured core lets everything through at the initial rate's burst
        check(&mut c, vec![Submit(0, 0, vec![10.0, 10.0], 9, true)]);
    }

    #[test]
    fn a_flow_keeps_its_order_and_flows_do_not_block_each_other() {
        use Op::*;
        let mut c = core(&[(1, 0), (1, 0)], None);
        check(
            &mut c,
            vec![
                Allocate(0, 0, vec![0.0]), // the minimum rate, 1e5 tokens/s, 1e4 carried
                Submit(0, 0, vec![1e4], 1, true),
                Submit(0, 0, vec![5e4], 2, false),
                // a small request behind a large one waits its turn
                Submit(0, 0, vec![1.0], 3, false),
                Submit(0, 1, vec![1.0], 4, true),
                Wakeup(0, Some(S / 2)),
                Poll(S / 2, vec![2]),
                Poll(S / 2 + 10_000, vec![3]),
            ],
        );
    }

    #[test]
    fn the_window_releases_by_priority_then_fifo() {
        use Op::*;
        let mut c = core(&[(1, 1), (1, 0)], Some(1));
        check(
            &mut c,
            vec![
                Submit(0, 0, vec![1.0], 1, true),
                Submit(1, 0, vec![1.0], 2, false),
                Submit(2, 0, vec![1.0], 3, false),
                Submit(3, 1, vec![1.0], 4, false),
                Submit(4, 1, vec![1.0], 5, false),
                Complete(5, 1, vec![4]),
                Complete(6, 4, vec![5]),
                Complete(7, 5, vec![2]),
                Complete(8, 2, vec![3]),
            ],
        );
        assert_eq!(c.in_flight(), 1);
    }

    #[test]
    fn reports_integrate_queued_and_outstanding_tokens_exactly() {
        let mut c = EnforcerCore::<u32>::new(
            vec![FlowSetup {
                name: "a/f".into(),
                hops: 1,
                priority: 0,
            }],
            CoreConfig {
                min_rate: 100.0,
                carry_s: 0.0,
                ..CoreConfig::default()
            },
            0,
        )
        .unwrap();
        let mut rel = Vec::new();
        c.set_allocation(0, 0, &[100.0], &mut rel).unwrap();
        // empty bucket: a 50-token request waits 0.5 s, is outstanding 0.25 s
        assert_eq!(
            c.submit(0, 0, vec![50.0], || 1, &mut rel).unwrap(),
            Admit::Queued
        );
        c.sample(S / 4);
        c.poll(S / 2, &mut rel);
        let (_, t) = rel.pop().unwrap();
        c.complete(3 * S / 4, t, Some(&[80.0]), &mut rel).unwrap();
        let r = c.report(S);
        let f = &r.flows[0];
        assert_eq!(f.utilization, vec![80.0]);
        assert_eq!(f.completed, vec![80.0]);
        assert_eq!(f.backlog, vec![0.0]);
        assert!((f.queueing[0] - 25.0).abs() < 1e-9, "{f:?}");
        assert!((f.outstanding[0] - 12.5).abs() < 1e-9, "{f:?}");
        assert_eq!(f.samples.len(), 2);
        assert_eq!(f.samples[0].utilization, vec![0.0]);
        assert!((f.samples[1].outstanding[0] - 50.0 / 3.0).abs() < 1e-9);
        // the 30 extra tokens of the real cost were charged: -5 at 0.75 s, +25 by 1 s
        assert_eq!(c.status(S)[0].tokens[0], 20.0);
        // the next interval starts from zero
        let r = c.report(2 * S);
        assert_eq!(r.flows[0].utilization, vec![0.0]);
        assert_eq!(r.from_ns, S);
    }

    #[test]
    fn cancelled_requests_leave_the_queue() {
        let mut c = core(&[(1, 0)], None);
        let mut rel = Vec::new();
        c.set_allocation(0, 0, &[0.0], &mut rel).unwrap();
        for id in 0..4 {
            let _ = c.submit(0, 0, vec![2e4], || id, &mut rel).unwrap();
        }
        c.cancel(0, |&id| id >= 2);
        assert_eq!(c.status(0)[0].queued, 2);
        c.poll(10 * S, &mut rel);
        assert_eq!(rel.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(c.report(10 * S).flows[0].backlog, vec![0.0]);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let mut c = core(&[(2, 0)], None);
        let mut rel = Vec::new();
        assert!(matches!(
            c.submit(0, 5, vec![1.0], || 0, &mut rel),
            Err(CoreError::UnknownFlow { flow: 5, flows: 1 })
        ));
        assert!(c.submit(0, 0, vec![1.0], || 0, &mut rel).is_err());
        assert!(c.set_allocation(0, 0, &[1.0, f64::NAN], &mut rel).is_err());
        assert!(EnforcerCore::<u32>::new(
            vec![],
            CoreConfig {
                window: Some(0),
                ..CoreConfig::default()
            },
            0
        )
        .is_err());
    }
}
