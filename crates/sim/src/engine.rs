//! The event loop: arrivals, shaper releases and chunk departures on a binary heap of
//! `(time [ns], sequence)`; ties are broken by insertion order, so a run is a pure function
//! of its inputs.

use crate::event::EventQueue;
use crate::stats::{tenant_result, TenantResult};
use crate::{ClosedLoop, Excess, SimConfig, SimError, TenantWorkload, Transmission};
use std::collections::VecDeque;
use tailbound_curves::WorkFunction;
use tailbound_model::{Network, Request};
use tailbound_shaping::eyeq::{DestinationLimiter, EyeqConfig, Feedback, Receiver, ReceiverStats};
use tailbound_shaping::{PriorityQueue, TokenBucket};

/// What one queue did during the run.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStats {
    pub name: String,
    /// units served: chunks on chunked links, requests elsewhere
    pub chunks: u64,
    /// work served [work]
    pub work: f64,
    /// time spent serving [ns]; each unit's service time is `work / rate` rounded to the ns
    pub busy_ns: u64,
    /// when the last unit left [ns], 0 if none did
    pub last_departure_ns: u64,
}

/// The outcome of [`simulate`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// one per network tenant, in network order
    pub tenants: Vec<TenantResult>,
    /// one per network queue, in network order
    pub queues: Vec<QueueStats>,
    /// events processed: arrivals, shaper releases and departures (one per chunk per queue)
    pub events: u64,
    /// time of the last departure from any queue (the run is drained then) [ns]
    pub end_ns: u64,
    /// with [`SimConfig::throughput_bin_ns`]: per network tenant, the bytes its link flows
    /// delivered (left their last queue) in each bin, counted from the earliest arrival;
    /// empty otherwise
    pub throughput: Vec<Vec<u64>>,
    /// with [`SimConfig::eyeq`]: one per receiver, in the order given
    pub eyeq: Vec<EyeqReceiverResult>,
}

/// What one EyeQ receiver did during the run.
#[derive(Debug, Clone, PartialEq)]
pub struct EyeqReceiverResult {
    /// the watched queue
    pub queue: String,
    /// intervals closed and feedback messages sent
    pub stats: ReceiverStats,
}

const KIND_SHIFT: u32 = 62;
const ARRIVAL: u64 = 0;
const DEPART: u64 = 1;
const SHAPER: u64 = 2;
const FEEDBACK: u64 = 3;
const DATA_MASK: u64 = (1 << KIND_SHIFT) - 1;
/// the latency recorded for a dropped request
const DROPPED: u64 = u64::MAX;

/// A run of chunks waiting at a queue: `chunks` units of the same request and hop, each of
/// `mtu` work except the last, which has `last_work`.
#[derive(Debug, Clone, Copy)]
struct Item {
    slot: u32,
    hop: u32,
    chunks: u32,
    last_work: f64,
}

#[derive(Debug, Clone, Copy)]
struct Serving {
    slot: u32,
    hop: u32,
    work: f64,
}

struct QueueState {
    /// one FIFO per dense priority level, 0 highest
    waiting: PriorityQueue<Item>,
    serving: Option<Serving>,
    ns_per_work: f64,
    stats: QueueStats,
}

struct FlowState<'a> {
    path: Vec<usize>,
    level: usize,
    /// the chunk size on this flow [work]; infinite = whole requests
    mtu: f64,
    /// a link flow (bytes), counted in the throughput series
    packetized: bool,
    work: &'a dyn tailbound_curves::WorkFunction,
    shaper: Option<Shaper>,
    /// the EyeQ receiver it crosses and its tenant index there
    receiver: Option<(usize, usize)>,
}

/// One EyeQ receiver of the run.
struct EyeqReceiver {
    queue: usize,
    rx: Receiver<usize>,
}

/// EyeQ's state: receivers, and feedback in flight (FIFO: every message takes the same
/// delay, so they arrive in the order they were sent).
struct Eyeq {
    receivers: Vec<EyeqReceiver>,
    /// receiver index per queue
    at_queue: Vec<Option<usize>>,
    in_flight: VecDeque<(usize, Feedback)>,
    delay_ns: u64,
}

/// A closed-loop tenant's window.
#[derive(Debug, Clone, Copy)]
struct Window {
    spec: ClosedLoop,
    in_flight: u32,
    /// its next request waits for a completion
    blocked: bool,
}

/// A request in flight.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    tenant: u32,
    index: u32,
    /// position in the tenant's flow list
    stage: u32,
    /// network flow index of the current stage
    flow: u32,
    /// chunks of the current stage that have not yet left the flow's last queue
    outstanding: u32,
    /// work of the current stage [work]
    work: f64,
    /// the current stage exceeded its flow's buckets and runs at the best-effort level
    demoted: bool,
}

/// A FIFO queue of requests in front of one flow's token buckets
/// (`tailbound_shaping::TokenBucket`, the one the enforcer runs on real time): the head
/// passes when every bucket lets its work through, and is charged to all of them. With
/// [`Excess::BestEffort`] every request in `waiting` is already on its way at the
/// best-effort level; the head is promoted when its tokens come.
struct Shaper {
    buckets: Vec<TokenBucket>,
    /// EyeQ's per-destination limiter, with its receiver's settings
    limiter: Option<(EyeqConfig, DestinationLimiter)>,
    /// work of the requests in `waiting` [work]
    waiting_work: f64,
    /// requests not yet charged, in arrival order
    waiting: VecDeque<u32>,
    /// when the scheduled retry event fires (later events for this flow are stale)
    retry_at: Option<u64>,
}

struct NoWork;

impl tailbound_curves::WorkFunction for NoWork {
    fn work(&self, _: &Request) -> f64 {
        0.0
    }
    fn unit(&self) -> &'static str {
        "none"
    }
}

struct Engine<'a> {
    net: &'a Network,
    workloads: &'a [TenantWorkload<'a>],
    queues: Vec<QueueState>,
    flows: Vec<FlowState<'a>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    next: Vec<usize>,
    latencies: Vec<Vec<u64>>,
    queue: EventQueue<u64>,
    events: u64,
    /// what a shaper does with a request its buckets cannot pass now
    excess: Excess,
    /// the level below every tenant's, for demoted requests
    best_effort: usize,
    eyeq: Option<Eyeq>,
    /// per tenant, `Some` when closed loop
    windows: Vec<Option<Window>>,
    /// open-loop requests finding this much work at their shaper are dropped [work]
    shaper_queue: Option<f64>,
    /// throughput bin [ns] and the series per tenant
    bin_ns: Option<u64>,
    throughput: Vec<Vec<u64>>,
    origin_ns: u64,
}

/// Replays `workloads[t]` (one per network tenant, in order) through `net` and measures every
/// request's latency. See the crate docs for the model.
pub fn simulate(
    net: &Network,
    workloads: &[TenantWorkload<'_>],
    cfg: &SimConfig,
) -> Result<SimResult, SimError> {
    net.validate()?;
    check(net, workloads, cfg)?;
    let window_ns = (cfg.window_s * 1e9).round().max(1.0) as u64;
    let origin_ns = workloads
        .iter()
        .filter_map(|w| w.requests.first().map(|r| r.arrival_ns))
        .min()
        .unwrap_or(0);
    let mut engine = Engine::new(net, workloads, cfg, origin_ns)?;
    engine.run()?;
    let end_ns = engine
        .queues
        .iter()
        .map(|q| q.stats.last_departure_ns)
        .max()
        .unwrap_or(0);
    tracing::debug!(events = engine.events, end_ns, "simulation drained");
    let mut arrivals = Vec::new();
    let tenants = net
        .tenants
        .iter()
        .zip(workloads)
        .zip(std::mem::take(&mut engine.latencies))
        .map(|((spec, w), mut lat)| {
            arrivals.clear();
            let done = |i: &usize| lat[*i] != DROPPED;
            arrivals.extend(
                (0..lat.len())
                    .filter(done)
                    .map(|i| w.requests[i].arrival_ns),
            );
            let bytes = (0..lat.len())
                .filter(done)
                .map(|i| w.requests[i].size_bytes)
                .sum();
            let before = lat.len();
            lat.retain(|&l| l != DROPPED);
            let mut r = tenant_result(
                spec.name.clone(),
                &spec.slo,
                bytes,
                &arrivals,
                lat,
                origin_ns,
                window_ns,
            );
            r.dropped = (before - r.latencies_ns.len()) as u64;
            r
        })
        .collect();
    let eyeq = match &engine.eyeq {
        Some(e) => e
            .receivers
            .iter()
            .map(|r| EyeqReceiverResult {
                queue: net.queues[r.queue].name.clone(),
                stats: r.rx.stats(),
            })
            .collect(),
        None => Vec::new(),
    };
    Ok(SimResult {
        tenants,
        queues: engine.queues.into_iter().map(|q| q.stats).collect(),
        events: engine.events,
        end_ns,
        throughput: engine.throughput,
        eyeq,
    })
}

fn check(net: &Network, workloads: &[TenantWorkload<'_>], cfg: &SimConfig) -> Result<(), SimError> {
    if workloads.len() != net.tenants.len() {
        return Err(SimError::WorkloadCount {
            expected: net.tenants.len(),
            got: workloads.len(),
        });
    }
    for (spec, w) in net.tenants.iter().zip(workloads) {
        if w.works.len() != spec.flows.len() {
            return Err(SimError::FlowCount {
                tenant: spec.name.clone(),
                expected: spec.flows.len(),
                got: w.works.len(),
            });
        }
        if w.requests.len() >= u32::MAX as usize {
            return Err(SimError::TooManyRequests {
                tenant: spec.name.clone(),
                requests: w.requests.len(),
                max: u32::MAX as usize - 1,
            });
        }
        for (i, pair) in w.requests.windows(2).enumerate() {
            if pair[1].arrival_ns < pair[0].arrival_ns {
                return Err(SimError::Unsorted {
                    tenant: spec.name.clone(),
                    index: i + 1,
                    arrival_ns: pair[1].arrival_ns,
                    previous_ns: pair[0].arrival_ns,
                });
            }
        }
    }
    if let Some(p) = &cfg.priorities {
        if p.len() != net.tenants.len() {
            return Err(SimError::ConfigLength {
                what: "priorities",
                of: "tenants",
                of_one: "tenant",
                expected: net.tenants.len(),
                got: p.len(),
            });
        }
    }
    if !cfg.shapers.is_empty() && cfg.shapers.len() != net.flows.len() {
        return Err(SimError::ConfigLength {
            what: "shapers",
            of: "flows",
            of_one: "flow",
            expected: net.flows.len(),
            got: cfg.shapers.len(),
        });
    }
    if let Transmission::Chunked { mtu_bytes: 0 } = cfg.transmission {
        return Err(SimError::Mtu(0));
    }
    if !(cfg.window_s.is_finite() && cfg.window_s > 0.0) {
        return Err(SimError::Window(cfg.window_s));
    }
    if !cfg.closed_loop.is_empty() && cfg.closed_loop.len() != net.tenants.len() {
        return Err(SimError::ConfigLength {
            what: "closed_loop",
            of: "tenants",
            of_one: "tenant",
            expected: net.tenants.len(),
            got: cfg.closed_loop.len(),
        });
    }
    for (spec, c) in net.tenants.iter().zip(&cfg.closed_loop) {
        if matches!(c, Some(c) if c.window == 0) {
            return Err(SimError::ClosedLoopWindow(spec.name.clone()));
        }
    }
    if cfg.throughput_bin_ns == Some(0) {
        return Err(SimError::ThroughputBin);
    }
    if let Some(cap) = cfg.shaper_queue_bytes {
        if !(cap.is_finite() && cap >= 0.0) {
            return Err(SimError::ShaperQueue(cap));
        }
    }
    if let Some(e) = &cfg.eyeq {
        if cfg.excess == Excess::BestEffort {
            return Err(SimError::EyeqExcess);
        }
        if e.weights.len() != net.tenants.len() {
            return Err(SimError::ConfigLength {
                what: "EyeQ weights",
                of: "tenants",
                of_one: "tenant",
                expected: net.tenants.len(),
                got: e.weights.len(),
            });
        }
        let mut seen = vec![false; net.queues.len()];
        for &q in &e.receivers {
            let Some(s) = seen.get_mut(q) else {
                return Err(SimError::EyeqQueue {
                    index: q,
                    queues: net.queues.len(),
                });
            };
            if std::mem::replace(s, true) {
                return Err(SimError::EyeqDuplicate(net.queues[q].name.clone()));
            }
        }
    }
    Ok(())
}

/// Per flow: the EyeQ receiver it crosses and its tenant index there.
type ReceiverOf = Vec<Option<(usize, usize)>>;

/// Builds EyeQ's receivers and says, per flow, which receiver it crosses and its tenant
/// index there (tenants numbered in network order among those crossing the receiver).
fn build_eyeq(
    net: &Network,
    cfg: &SimConfig,
    origin_ns: u64,
) -> Result<(Option<Eyeq>, ReceiverOf), SimError> {
    let mut of_flow = vec![None; net.flows.len()];
    let Some(e) = &cfg.eyeq else {
        return Ok((None, of_flow));
    };
    let mut at_queue = vec![None; net.queues.len()];
    for (ri, &q) in e.receivers.iter().enumerate() {
        at_queue[q] = Some(ri);
    }
    let mut receivers = Vec::with_capacity(e.receivers.len());
    for (ri, &q) in e.receivers.iter().enumerate() {
        let queue = &net.queues[q];
        let mut local = vec![None; net.tenants.len()];
        let mut weights = Vec::new();
        for (fi, f) in net.flows.iter().enumerate() {
            let Some(first) = f.path.iter().find_map(|&p| at_queue[p]) else {
                continue;
            };
            if let Some(second) = f.path.iter().filter_map(|&p| at_queue[p]).nth(1) {
                return Err(SimError::EyeqTwoReceivers {
                    flow: f.name.clone(),
                    first: net.queues[e.receivers[first]].name.clone(),
                    second: net.queues[e.receivers[second]].name.clone(),
                });
            }
            if first != ri {
                continue;
            }
            let t = *local[f.tenant].get_or_insert_with(|| {
                weights.push(e.weights[f.tenant]);
                weights.len() - 1
            });
            of_flow[fi] = Some((ri, t));
        }
        let config = EyeqConfig {
            line_rate: queue.rate,
            ..e.config
        };
        let eyeq_err = |source| SimError::Eyeq {
            queue: queue.name.clone(),
            source,
        };
        let rx = if weights.is_empty() {
            // no flow crosses it: a receiver with one idle tenant, for its settings' check
            Receiver::new(config, &[1.0], origin_ns)
        } else {
            Receiver::new(config, &weights, origin_ns)
        }
        .map_err(eyeq_err)?;
        receivers.push(EyeqReceiver { queue: q, rx });
    }
    Ok((
        Some(Eyeq {
            receivers,
            at_queue,
            in_flight: VecDeque::new(),
            delay_ns: e.feedback_delay_ns,
        }),
        of_flow,
    ))
}

impl<'a> Engine<'a> {
    fn new(
        net: &'a Network,
        workloads: &'a [TenantWorkload<'a>],
        cfg: &SimConfig,
        origin_ns: u64,
    ) -> Result<Self, SimError> {
        let prio = cfg.priorities.clone().unwrap_or_else(|| net.priorities());
        // dense ranks keep the per-queue level scan short whatever the level numbers
        let mut distinct = prio.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let dense: Vec<usize> = prio
            .iter()
            .map(|p| distinct.partition_point(|d| d < p))
            .collect();
        // one more level below every tenant's for excess sent best effort
        let n_levels = distinct.len().max(1) + usize::from(cfg.excess == Excess::BestEffort);
        let queues = net
            .queues
            .iter()
            .map(|q| QueueState {
                waiting: PriorityQueue::with_levels(n_levels),
                serving: None,
                ns_per_work: 1e9 / q.rate,
                stats: QueueStats {
                    name: q.name.clone(),
                    chunks: 0,
                    work: 0.0,
                    busy_ns: 0,
                    last_departure_ns: 0,
                },
            })
            .collect();
        let (eyeq, receiver_of) = build_eyeq(net, cfg, origin_ns)?;
        // each flow's work function: the tenant's workload lists them in tenant-flow order
        let mut work_of: Vec<Option<&'a dyn WorkFunction>> = vec![None; net.flows.len()];
        for (spec, w) in net.tenants.iter().zip(workloads) {
            for (&f, &work) in spec.flows.iter().zip(&w.works) {
                work_of[f] = Some(work);
            }
        }
        let flows = net
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                // a flow no tenant lists never carries a request
                let work = work_of[i].unwrap_or(&NoWork);
                let mtu = match cfg.transmission {
                    Transmission::Chunked { mtu_bytes } if f.stage.is_link() => mtu_bytes as f64,
                    _ => f64::INFINITY,
                };
                let buckets = cfg.shapers.get(i).map_or(&[][..], |b| &b[..]);
                let receiver = receiver_of[i];
                let limiter = match (receiver, &eyeq) {
                    (Some((ri, _)), Some(e)) => {
                        Some((*e.receivers[ri].rx.config(), DestinationLimiter::new()))
                    }
                    _ => None,
                };
                let shaper = if buckets.is_empty() && limiter.is_none() {
                    None
                } else {
                    Some(Shaper {
                        buckets: buckets
                            .iter()
                            .map(|b| TokenBucket::new(b.rate, b.burst, origin_ns))
                            .collect::<Result<_, _>>()
                            .map_err(|e| SimError::Shaper {
                                flow: f.name.clone(),
                                source: e,
                            })?,
                        limiter,
                        waiting_work: 0.0,
                        waiting: VecDeque::new(),
                        retry_at: None,
                    })
                };
                Ok(FlowState {
                    path: f.path.clone(),
                    level: dense[f.tenant],
                    mtu,
                    packetized: f.stage.is_link(),
                    work,
                    shaper,
                    receiver,
                })
            })
            .collect::<Result<_, SimError>>()?;
        let mut events = EventQueue::new();
        for (t, w) in workloads.iter().enumerate() {
            if let Some(r) = w.requests.first() {
                events.push(r.arrival_ns, (ARRIVAL << KIND_SHIFT) | t as u64);
            }
        }
        let windows = (0..workloads.len())
            .map(|t| {
                cfg.closed_loop
                    .get(t)
                    .copied()
                    .flatten()
                    .map(|spec| Window {
                        spec,
                        in_flight: 0,
                        blocked: false,
                    })
            })
            .collect();
        Ok(Engine {
            eyeq,
            windows,
            shaper_queue: cfg
                .shaper_queue_bytes
                .filter(|_| cfg.excess == Excess::Wait),
            bin_ns: cfg.throughput_bin_ns,
            throughput: if cfg.throughput_bin_ns.is_some() {
                vec![Vec::new(); workloads.len()]
            } else {
                Vec::new()
            },
            origin_ns,
            excess: cfg.excess,
            best_effort: n_levels - 1,
            net,
            workloads,
            queues,
            flows,
            slots: Vec::new(),
            free: Vec::new(),
            next: vec![0; workloads.len()],
            latencies: workloads
                .iter()
                .map(|w| vec![0; w.requests.len()])
                .collect(),
            queue: events,
            events: 0,
        })
    }

    fn push(&mut self, at: u64, kind: u64, data: usize) {
        self.queue.push(at, (kind << KIND_SHIFT) | data as u64);
    }

    fn run(&mut self) -> Result<(), SimError> {
        while let Some((now, ev)) = self.queue.pop() {
            self.events += 1;
            let data = (ev & DATA_MASK) as usize;
            match ev >> KIND_SHIFT {
                ARRIVAL => self.arrive(data, now)?,
                DEPART => self.depart(data, now)?,
                FEEDBACK => self.feedback(now)?,
                _ => {
                    let Some(s) = self.flows[data].shaper.as_mut() else {
                        continue;
                    };
                    if s.retry_at != Some(now) {
                        continue; // superseded by an earlier retry
                    }
                    s.retry_at = None;
                    self.release(data, now)?;
                }
            }
        }
        Ok(())
    }

    fn request(&self, slot: &Slot) -> &'a Request {
        &self.workloads[slot.tenant as usize].requests[slot.index as usize]
    }

    fn arrive(&mut self, tenant: usize, now: u64) -> Result<(), SimError> {
        if let Some(w) = self.windows[tenant].as_mut() {
            if w.in_flight >= w.spec.window {
                // the next request waits for a completion
                w.blocked = true;
                return Ok(());
            }
            w.in_flight += 1;
        }
        let index = self.next[tenant];
        self.next[tenant] += 1;
        if let Some(r) = self.workloads[tenant].requests.get(index + 1) {
            self.push(r.arrival_ns.max(now), ARRIVAL, tenant);
        }
        let slot = Slot {
            tenant: tenant as u32,
            index: index as u32,
            ..Slot::default()
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.enter_stage(id, 0, now)
    }

    fn enter_stage(&mut self, id: u32, stage: u32, now: u64) -> Result<(), SimError> {
        let mut slot = self.slots[id as usize];
        let spec = &self.net.tenants[slot.tenant as usize];
        let flow = spec.flows[stage as usize];
        let req = self.request(&slot);
        let work = self.flows[flow].work.work(req);
        if !(work.is_finite() && work >= 0.0) {
            return Err(SimError::Work {
                tenant: spec.name.clone(),
                flow: self.net.flows[flow].name.clone(),
                index: slot.index as usize,
                work,
            });
        }
        slot.stage = stage;
        slot.flow = flow as u32;
        slot.work = work;
        slot.demoted = false;
        self.slots[id as usize] = slot;
        let open_loop = self.windows[slot.tenant as usize].is_none();
        match self.flows[flow].shaper.as_mut() {
            Some(s) => {
                if open_loop && self.shaper_queue.is_some_and(|cap| s.waiting_work >= cap) {
                    // the sender's queue is full: the request is lost
                    self.latencies[slot.tenant as usize][slot.index as usize] = DROPPED;
                    self.free.push(id);
                    return Ok(());
                }
                s.waiting_work += work;
                s.waiting.push_back(id);
                if s.waiting.len() == 1 {
                    self.release(flow, now)?;
                } else if self.excess == Excess::BestEffort {
                    // behind an uncharged request: it cannot pass now, so it goes on at once
                    self.send_best_effort(id, now);
                }
                Ok(())
            }
            None => {
                self.inject(id, now);
                Ok(())
            }
        }
    }

    /// Lets the shaper's head requests through while the buckets allow (promoting those
    /// already on their way at best effort); otherwise schedules a retry for when they will
    /// and, with [`Excess::BestEffort`], sends the head on at best effort meanwhile.
    fn release(&mut self, flow: usize, now: u64) -> Result<(), SimError> {
        let best_effort = self.excess == Excess::BestEffort;
        loop {
            let Some(s) = self.flows[flow].shaper.as_mut() else {
                return Ok(());
            };
            let Some(&id) = s.waiting.front() else {
                return Ok(());
            };
            let cost = self.slots[id as usize].work;
            let bytes = cost.round() as u64;
            let limited_at = s
                .limiter
                .as_ref()
                .map_or(now, |(c, l)| l.ready_at(c, now, bytes));
            let ready_at_ns = s
                .buckets
                .iter()
                .map(|b| b.ready_at(now, cost))
                .max()
                .unwrap_or(now)
                .max(limited_at);
            if ready_at_ns <= now {
                for b in &mut s.buckets {
                    b.take(now, cost)
                        .expect("every bucket was ready for this cost at this instant");
                }
                if let Some((c, l)) = s.limiter.as_mut() {
                    l.take(c, now, bytes)
                        .expect("the limiter was ready for these bytes at this instant");
                }
                s.waiting.pop_front();
                s.waiting_work = (s.waiting_work - cost).max(0.0);
                if self.slots[id as usize].demoted {
                    self.promote(id);
                } else {
                    self.inject(id, now);
                }
                continue;
            }
            if ready_at_ns == u64::MAX {
                if best_effort {
                    // never conforms: it stays best effort and no longer holds the FIFO
                    s.waiting.pop_front();
                    s.waiting_work = (s.waiting_work - cost).max(0.0);
                    if !self.slots[id as usize].demoted {
                        self.send_best_effort(id, now);
                    }
                    continue;
                }
                let slot = self.slots[id as usize];
                return Err(SimError::ShaperStall {
                    tenant: self.net.tenants[slot.tenant as usize].name.clone(),
                    flow: self.net.flows[flow].name.clone(),
                    index: slot.index as usize,
                });
            }
            if !matches!(s.retry_at, Some(t) if t <= ready_at_ns) {
                s.retry_at = Some(ready_at_ns);
                tracing::trace!(
                    now_ns = now,
                    flow = %self.net.flows[flow].name,
                    until_ns = ready_at_ns,
                    "throttled"
                );
                self.push(ready_at_ns, SHAPER, flow);
            }
            if best_effort && !self.slots[id as usize].demoted {
                self.send_best_effort(id, now);
            }
            return Ok(());
        }
    }

    /// Sends a request its buckets cannot pass now on at the best-effort level.
    fn send_best_effort(&mut self, id: u32, now: u64) {
        self.slots[id as usize].demoted = true;
        self.inject(id, now);
    }

    /// A best-effort request has been charged: its units still waiting at the best-effort
    /// level move to its tenant's level (behind what is there), and later hops take it there.
    fn promote(&mut self, id: u32) {
        self.slots[id as usize].demoted = false;
        let f = &self.flows[self.slots[id as usize].flow as usize];
        for &q in &f.path {
            self.queues[q]
                .waiting
                .move_matching(self.best_effort, f.level, |item| item.slot == id);
        }
    }

    /// A best-effort request finished its stage before its tokens came: it leaves the
    /// shaper uncharged; if it was the head, the next one is looked at now.
    fn forget(&mut self, id: u32, now: u64) -> Result<(), SimError> {
        let flow = self.slots[id as usize].flow as usize;
        let Some(s) = self.flows[flow].shaper.as_mut() else {
            return Ok(());
        };
        let work = self.slots[id as usize].work;
        match s.waiting.iter().position(|&w| w == id) {
            Some(0) => {
                s.waiting.pop_front();
                s.waiting_work = (s.waiting_work - work).max(0.0);
                self.release(flow, now)
            }
            Some(i) => {
                s.waiting.remove(i);
                s.waiting_work = (s.waiting_work - work).max(0.0);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Puts a request's current stage into the first queue of the stage's flow.
    fn inject(&mut self, id: u32, now: u64) {
        let slot = &mut self.slots[id as usize];
        let f = &self.flows[slot.flow as usize];
        let (chunks, last_work) = if slot.work <= f.mtu {
            (1, slot.work)
        } else {
            let n = (slot.work / f.mtu).ceil();
            (n as u32, slot.work - (n - 1.0) * f.mtu)
        };
        slot.outstanding = chunks;
        let level = if slot.demoted {
            self.best_effort
        } else {
            f.level
        };
        let q = f.path[0];
        self.enqueue(
            q,
            level,
            Item {
                slot: id,
                hop: 0,
                chunks,
                last_work,
            },
            now,
        );
    }

    fn enqueue(&mut self, q: usize, level: usize, item: Item, now: u64) {
        let qs = &mut self.queues[q];
        qs.waiting.push(level, item);
        if qs.serving.is_none() {
            self.start(q, now);
        }
    }

    /// Starts serving the head chunk of the highest non-empty level, if any.
    fn start(&mut self, q: usize, now: u64) {
        let qs = &mut self.queues[q];
        let Some((_, head)) = qs.waiting.front_mut() else {
            return;
        };
        let (slot, hop) = (head.slot, head.hop);
        let work = if head.chunks == 1 {
            head.last_work
        } else {
            self.flows[self.slots[slot as usize].flow as usize].mtu
        };
        head.chunks -= 1;
        if head.chunks == 0 {
            qs.waiting.pop();
        }
        let service_ns = (work * qs.ns_per_work).round() as u64;
        qs.serving = Some(Serving { slot, hop, work });
        qs.stats.busy_ns += service_ns;
        qs.stats.work += work;
        qs.stats.chunks += 1;
        self.push(now.saturating_add(service_ns), DEPART, q);
    }

    fn depart(&mut self, q: usize, now: u64) -> Result<(), SimError> {
        let qs = &mut self.queues[q];
        let Some(done) = qs.serving.take() else {
            return Ok(());
        };
        qs.stats.last_departure_ns = now;
        let slot = self.slots[done.slot as usize];
        self.at_receiver(q, slot.flow as usize, done.work, now)?;
        let f = &self.flows[slot.flow as usize];
        let next_hop = done.hop as usize + 1;
        if let Some(&next_q) = f.path.get(next_hop) {
            let level = if slot.demoted {
                self.best_effort
            } else {
                f.level
            };
            self.enqueue(
                next_q,
                level,
                Item {
                    slot: done.slot,
                    hop: next_hop as u32,
                    chunks: 1,
                    last_work: done.work,
                },
                now,
            );
        } else {
            if let (Some(bin), true) = (self.bin_ns, f.packetized) {
                let k = ((now - self.origin_ns) / bin) as usize;
                let series = &mut self.throughput[slot.tenant as usize];
                if series.len() <= k {
                    series.resize(k + 1, 0);
                }
                series[k] += done.work.round() as u64;
            }
            let s = &mut self.slots[done.slot as usize];
            s.outstanding -= 1;
            if s.outstanding == 0 {
                if s.demoted {
                    self.forget(done.slot, now)?;
                }
                self.finish_stage(done.slot, now)?;
            }
        }
        if self.queues[q].serving.is_none() {
            self.start(q, now);
        }
        Ok(())
    }

    fn finish_stage(&mut self, id: u32, now: u64) -> Result<(), SimError> {
        let slot = self.slots[id as usize];
        let n_stages = self.net.tenants[slot.tenant as usize].flows.len() as u32;
        if slot.stage + 1 < n_stages {
            return self.enter_stage(id, slot.stage + 1, now);
        }
        let arrival = self.request(&slot).arrival_ns;
        self.latencies[slot.tenant as usize][slot.index as usize] = now - arrival;
        self.free.push(id);
        if let Some(w) = self.windows[slot.tenant as usize].as_mut() {
            w.in_flight -= 1;
            if std::mem::take(&mut w.blocked) {
                let at = now.saturating_add(w.spec.ack_delay_ns);
                self.push(at, ARRIVAL, slot.tenant as usize);
            }
        }
        Ok(())
    }

    /// A chunk of `work` bytes of `flow` left queue `q`: if an EyeQ receiver watches `q`,
    /// it arrived at the receiving host; feedback goes back to the flow's limiter.
    fn at_receiver(&mut self, q: usize, flow: usize, work: f64, now: u64) -> Result<(), SimError> {
        let Some(e) = self.eyeq.as_mut() else {
            return Ok(());
        };
        let Some(ri) = e.at_queue[q] else {
            return Ok(());
        };
        let Some((_, tenant)) = self.flows[flow].receiver else {
            return Ok(());
        };
        let r = &mut e.receivers[ri];
        let fb =
            r.rx.on_arrival(now, flow, tenant, work.round() as u64)
                .map_err(|source| SimError::Eyeq {
                    queue: self.net.queues[q].name.clone(),
                    source,
                })?;
        if let Some(fb) = fb {
            e.in_flight.push_back((flow, fb));
            let at = now.saturating_add(e.delay_ns);
            self.push(at, FEEDBACK, 0);
        }
        Ok(())
    }

    /// The oldest feedback in flight reaches its flow's limiter; the shaper looks again.
    fn feedback(&mut self, now: u64) -> Result<(), SimError> {
        let Some((flow, fb)) = self.eyeq.as_mut().and_then(|e| e.in_flight.pop_front()) else {
            return Ok(());
        };
        let Some((c, l)) = self.flows[flow]
            .shaper
            .as_mut()
            .and_then(|s| s.limiter.as_mut())
        else {
            return Ok(());
        };
        if let Err(source) = l.on_feedback(c, now, fb) {
            let queue = match (self.flows[flow].receiver, &self.eyeq) {
                (Some((ri, _)), Some(e)) => self.net.queues[e.receivers[ri].queue].name.clone(),
                _ => self.net.flows[flow].name.clone(),
            };
            return Err(SimError::Eyeq { queue, source });
        }
        self.release(flow, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SizeWork;
    use tailbound_model::{FlowModels, NetworkBuilder, NewTenant, Op, Slo, Stage};

    /// Two tenants on one 1 MB/s queue (1 B = 1 µs), one flow each.
    fn net() -> Network {
        let mut b = NetworkBuilder::new();
        let q = b.queue("q", 1e6);
        for t in 0..2 {
            let slo = Slo::new(0.01 * (t + 1) as f64, 99.9).unwrap();
            let id = b.tenant(NewTenant::new(format!("t{t}"), slo));
            b.flow_on(
                id,
                format!("f{t}"),
                Stage::NetIn,
                vec![q],
                FlowModels::default(),
            );
        }
        b.build().unwrap()
    }

    fn r(arrival_ns: u64, size_bytes: u64) -> Request {
        Request {
            arrival_ns,
            size_bytes,
            op: Op::Put,
        }
    }

    fn run(reqs: &[Vec<Request>], cfg: &SimConfig) -> Result<SimResult, SimError> {
        let w: Vec<_> = reqs
            .iter()
            .map(|r| TenantWorkload {
                requests: r,
                works: vec![&SizeWork],
            })
            .collect();
        simulate(&net(), &w, cfg)
    }

    struct Nan;
    impl tailbound_curves::WorkFunction for Nan {
        fn work(&self, _: &Request) -> f64 {
            f64::NAN
        }
        fn unit(&self) -> &'static str {
            "bytes"
        }
    }

    #[test]
    fn slo_priorities_apply_unless_overridden() {
        // t0 (10 ms SLO) outranks t1 (20 ms): t1 arrives first and is served first (it is
        // alone), then t0 overtakes t1's second request
        let reqs = vec![vec![r(10, 1000)], vec![r(0, 1000), r(5, 1000)]];
        let fluid = SimConfig {
            transmission: Transmission::Fluid,
            ..SimConfig::default()
        };
        let a = run(&reqs, &fluid).unwrap();
        assert_eq!(a.tenants[0].latencies_ns, vec![1_999_990]);
        assert_eq!(a.tenants[1].latencies_ns, vec![1_000_000, 2_999_995]);
        let swapped = SimConfig {
            priorities: Some(vec![7, 3]),
            ..fluid
        };
        let b = run(&reqs, &swapped).unwrap();
        assert_eq!(b.tenants[0].latencies_ns, vec![2_999_990]);
        assert_eq!(b.tenants[1].latencies_ns, vec![1_000_000, 1_999_995]);
        assert_eq!(b.events, 3 + 3);
    }

    #[test]
    fn invalid_inputs_are_errors_that_say_what_to_fix() {
        let ok = vec![vec![r(0, 1)], vec![r(0, 1)]];
        let cfg = SimConfig::default();
        let e = run(&ok[..1], &cfg).unwrap_err();
        assert!(matches!(
            e,
            SimError::WorkloadCount {
                expected: 2,
                got: 1
            }
        ));
        let e = run(&[vec![r(5, 1), r(4, 1)], vec![]], &cfg).unwrap_err();
        assert!(e.to_string().contains("sorted by arrival"), "{e}");
        let bad = SimConfig {
            priorities: Some(vec![0]),
            ..SimConfig::default()
        };
        assert!(matches!(run(&ok, &bad), Err(SimError::ConfigLength { .. })));
        let bad = SimConfig {
            shapers: vec![Vec::new()],
            ..SimConfig::default()
        };
        assert!(matches!(run(&ok, &bad), Err(SimError::ConfigLength { .. })));
        let bad = SimConfig {
            transmission: Transmission::Chunked { mtu_bytes: 0 },
            ..SimConfig::default()
        };
        assert_eq!(run(&ok, &bad), Err(SimError::Mtu(0)));
        let bad = SimConfig {
            window_s: 0.0,
            ..SimConfig::default()
        };
        assert!(matches!(run(&ok, &bad), Err(SimError::Window(_))));
        let w = vec![
            TenantWorkload {
                requests: &ok[0],
                works: vec![&Nan],
            },
            TenantWorkload {
                requests: &ok[1],
                works: vec![],
            },
        ];
        let e = simulate(&net(), &w, &cfg).unwrap_err();
        assert!(matches!(e, SimError::FlowCount { got: 0, .. }), "{e}");
        let w = vec![w[0].clone(), w[0].clone()];
        let e = simulate(&net(), &w, &cfg).unwrap_err();
        assert!(matches!(e, SimError::Work { .. }), "{e}");
    }

    #[test]
    fn zero_work_and_empty_tenants_complete() {
        let reqs = vec![vec![], vec![r(3, 0)]];
        let res = run(&reqs, &SimConfig::default()).unwrap();
        assert_eq!(res.tenants[0].requests, 0);
        assert!(res.tenants[0].meets_slo);
        assert_eq!(res.tenants[1].latencies_ns, vec![0]);
        assert!(res.tenants[1].meets_slo);
    }
}
