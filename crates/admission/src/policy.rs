//! How each policy chooses a newcomer's level and rate limits, and how it bounds a candidate
//! set (see the table in the crate docs).

use crate::index::AdmittedIndex;
use crate::{AdmissionError, Grant, Policy};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use tailbound_calculus::dnc::{shaper_delay, Envelope};
use tailbound_calculus::snc::{MmppBound, Present};
use tailbound_calculus::{
    bound_hinted, bound_hinted_over, Bound, BoundOptions, Hint, HintedBound, Method, Reach,
    TenantBound,
};
use tailbound_curves::effbw::{effective_bandwidth, EffBwError};
use tailbound_curves::rb::prune;
use tailbound_model::{ArrivalCurve, Bucket, Network, Queue};

/// PriorityMeister enforces the r-b curve as this many token buckets (the originals prune
/// r-b curves to 12 segments).
pub const PM_BUCKETS: usize = 12;

/// QJump++'s levels: each tenant's rate limit as a fraction of the slowest link on its path,
/// level 0 (highest priority) first. Fixed, independent of the number of tenants
/// (snc-meister §5.1: QJump's own equation admitted 5× fewer tenants); seven levels, as the
/// paper's switches offer.
pub const QJUMP_LEVELS: [f64; 7] = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5];

/// Every rate limit is at least this multiple of the flow's characterized mean rate, so a
/// replayed half a little busier than the characterized one does not queue without end at
/// its own shaper.
pub const HEADROOM: f64 = 1.2;

/// A candidate decision for the newcomer and its check.
pub(crate) struct Verdict {
    pub grant: Option<Grant>,
    pub bound_s: Option<f64>,
    pub reason: Option<String>,
    /// where the bounds minimised were found, per tenant ([`Thetas`])
    pub thetas: Vec<(usize, Found)>,
}

/// Where a tenant's SNC bound was minimised: per flow, the θ of its minimum and the minimum (or,
/// for a flow kept at its last θ while others were minimised, that θ and its bound there).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    /// [1/work]
    pub thetas: Vec<f64>,
    /// [s]
    pub bounds_s: Vec<f64>,
}

/// Per admitted tenant, where its SNC bound was last minimised: where a decision checks it
/// first, each flow within the share of the SLO its bound had (`calculus::bound_hinted`; crate
/// docs).
pub(crate) type Thetas = HashMap<usize, Found>;

fn method(policy: Policy) -> Method {
    match policy {
        Policy::SncMeister => Method::SncMeister,
        Policy::SncMartingale => Method::SncMartingale,
        _ => Method::Dnc,
    }
}

pub(crate) fn check_models(net: &Network, policy: Policy) -> Result<(), AdmissionError> {
    check_models_from(net, policy, 0)
}

/// [`check_models`] for the flows from index `from` on.
pub(crate) fn check_models_from(
    net: &Network,
    policy: Policy,
    from: usize,
) -> Result<(), AdmissionError> {
    for f in net.flows.iter().skip(from) {
        let (missing, model) = match policy {
            Policy::SncMeister | Policy::SncMartingale => (f.mmpp.is_none(), "MMPP"),
            _ => (f.arrival.is_none(), "arrival curve"),
        };
        if missing {
            return Err(AdmissionError::MissingModel {
                flow: f.name.clone(),
                model,
                policy,
            });
        }
    }
    Ok(())
}

/// Which tenants of a set [`bound_set`] bounds.
#[derive(Clone, Copy)]
pub(crate) enum Which<'a> {
    /// every one
    All,
    /// the newcomer and those at its level or below
    AtOrBelow(usize),
    /// these, ascending (the set being the tenants their bounds read: crate docs), each
    /// tenant of the set at its level in the whole admission (`None`: not admitted), not at
    /// its rank in the set
    These(&'a [usize], &'a dyn Fn(usize) -> Option<u32>),
}

/// Which tenants an arrival re-bounds ([`crate::Rebound`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// those the tenants `changed` (the newcomer first) can affect, found with the index of
    /// the admitted tenants, each on the network of the tenants its bound reads
    Neighbourhood {
        changed: &'a [usize],
        index: &'a AdmittedIndex,
        /// per flow, its MMPP bound when built once (SNC-Meister)
        sources: &'a [Option<Arc<MmppBound>>],
    },
    /// the newcomer and every admitted tenant at its level or below, on the whole network
    Full,
}

fn arrival(net: &Network, flow: usize) -> &ArrivalCurve {
    net.flows[flow]
        .arrival
        .as_ref()
        .expect("check_models: every flow has an arrival curve")
}

/// The slowest queue on a flow's path [work/s].
fn bottleneck(net: &Network, flow: usize) -> f64 {
    net.flows[flow]
        .path
        .iter()
        .map(|&q| net.queues[q].rate)
        .fold(f64::INFINITY, f64::min)
}

/// Silo's and QJump's one-packet burst, as one request: the largest work of the characterized
/// half that arrives at one instant (shapers release requests whole, so a smaller bucket
/// would only add a deficit; on storage flows, in busy-seconds, a packet means nothing).
fn packet_burst(a: &ArrivalCurve) -> f64 {
    a.at(0.0)
}

/// PriorityMeister's buckets: the pruned arrival curve's lines with rates above a floor, plus
/// the exact curve's bucket at the floor. The floor is Silo++'s rate for the same budget (the
/// effective bandwidth, at least [`HEADROOM`] × the mean): buckets near the characterized
/// mean rate hold a replayed half that is busier for minutes (the production traces are)
/// for seconds to minutes at the tenant's own shaper, which no SLO survives.
fn pm_buckets(a: &ArrivalCurve, budget_s: f64) -> Vec<Bucket> {
    let floor = silo_bucket(a, budget_s).rate;
    let pruned = prune(a, PM_BUCKETS).unwrap_or_else(|_| a.clone());
    let exact = Envelope::from(a);
    let mut out: Vec<Bucket> = Envelope::from(&pruned)
        .buckets()
        .into_iter()
        .filter(|b| b.rate > floor)
        .collect();
    if let Some(burst) = exact.burst_at_rate(floor) {
        out.push(Bucket { rate: floor, burst });
    }
    out
}

/// Half of the SLO for the shapers, split over the tenant's flows; the rest is the network's
/// [s].
fn shaper_budget(slo_s: f64, flows: usize) -> f64 {
    slo_s / 2.0 / flows.max(1) as f64
}

/// Silo++'s bucket for a flow with a shaper-delay budget [s]: the effective bandwidth (least
/// bucketless rate within the budget), at least [`HEADROOM`] × the mean, one-packet burst.
fn silo_bucket(a: &ArrivalCurve, budget_s: f64) -> Bucket {
    let mean = a.tail_rate();
    let rate = match effective_bandwidth(&a.to_rb(), budget_s) {
        Ok(r) => r,
        Err(EffBwError::BelowCurve { first_rate, .. }) => first_rate,
        Err(_) => mean,
    };
    Bucket {
        rate: rate.max(HEADROOM * mean),
        burst: packet_burst(a),
    }
}

/// Shaper delay of the flow's characterized traffic through its buckets [s]: exact for one
/// bucket; PriorityMeister's buckets lie on or above the curve, so theirs is 0.
fn shaper_delay_s(a: &ArrivalCurve, buckets: &[Bucket]) -> Result<f64, String> {
    let alpha = Envelope::from(a);
    let mut worst: f64 = 0.0;
    for b in buckets {
        let d = shaper_delay(&alpha, *b)
            .map_err(|e| format!("rate limit {} [work/s] is too low: {e}", b.rate))?;
        worst = worst.max(d);
    }
    Ok(worst)
}

/// A grant for `tenant` at `level` with the given buckets per flow, with its shaper delay for
/// the traffic `net` carries; an error when a bucket's rate is below that traffic's mean.
pub(crate) fn grant(
    net: &Network,
    tenant: usize,
    level: u32,
    buckets: Vec<Vec<Bucket>>,
) -> Result<Grant, String> {
    let mut shaper = 0.0;
    for (&f, bs) in net.tenants[tenant].flows.iter().zip(&buckets) {
        shaper += shaper_delay_s(arrival(net, f), bs)?;
    }
    Ok(Grant {
        level,
        buckets,
        shaper_delay_s: shaper,
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn decide(
    net: &Network,
    policy: Policy,
    admitted: &HashMap<usize, Grant>,
    groups: &HashMap<usize, String>,
    packets_s: &[f64],
    thetas: &Thetas,
    newcomer: usize,
    scope: Scope,
) -> Result<Verdict, AdmissionError> {
    let flows = &net.tenants[newcomer].flows;
    let slo_s = net.tenants[newcomer].slo.latency_s;
    let candidates: Vec<Result<Grant, String>> = match policy {
        Policy::SncMeister | Policy::SncMartingale => vec![Ok(Grant {
            level: 0,
            buckets: vec![Vec::new(); flows.len()],
            shaper_delay_s: 0.0,
        })],
        Policy::PriorityMeister => {
            let budget = shaper_budget(slo_s, flows.len());
            let buckets = flows
                .iter()
                .map(|&f| pm_buckets(arrival(net, f), budget))
                .collect();
            vec![grant(net, newcomer, 0, buckets)]
        }
        Policy::SiloPlusPlus => {
            let budget = shaper_budget(slo_s, flows.len());
            let buckets = flows
                .iter()
                .map(|&f| vec![silo_bucket(arrival(net, f), budget)])
                .collect();
            vec![grant(net, newcomer, 0, buckets)]
        }
        Policy::QjumpPlusPlus => QJUMP_LEVELS
            .iter()
            .enumerate()
            .map(|(level, &fraction)| {
                let buckets = flows
                    .iter()
                    .map(|&f| {
                        let a = arrival(net, f);
                        let rate = fraction * bottleneck(net, f);
                        if rate < HEADROOM * a.tail_rate() {
                            return Err(format!(
                                "level {level} rate {rate:.0} [work/s] is below {HEADROOM} × flow {:?}'s mean {:.0}",
                                net.flows[f].name,
                                a.tail_rate()
                            ));
                        }
                        Ok(vec![Bucket {
                            rate,
                            burst: packet_burst(a),
                        }])
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                grant(net, newcomer, level as u32, buckets)
            })
            .collect(),
    };
    let mut last = Verdict {
        grant: None,
        bound_s: None,
        reason: Some("no level to try".into()),
        thetas: Vec::new(),
    };
    for candidate in candidates {
        let g = match candidate {
            Ok(g) => g,
            Err(reason) => {
                last = Verdict {
                    grant: None,
                    bound_s: None,
                    reason: Some(reason),
                    thetas: Vec::new(),
                };
                continue;
            }
        };
        let (bound_s, failure, found) = check(
            net, policy, admitted, groups, packets_s, thetas, newcomer, &g, scope,
        )?;
        if failure.is_none() {
            return Ok(Verdict {
                grant: Some(g),
                bound_s,
                reason: None,
                thetas: found,
            });
        }
        last = Verdict {
            grant: None,
            bound_s,
            reason: failure,
            thetas: Vec::new(),
        };
    }
    Ok(last)
}

/// The order in which a decision bounds tenants and reports missed SLOs, the first one
/// reported being the reason: the newcomer's own, then the admitted tenants' by index.
fn first_missed(t: usize, newcomer: usize) -> (bool, usize) {
    (t != newcomer, t)
}

/// Whether bounding goes on after `b`: not past a missed SLO in a decision.
fn go_on(b: &TenantBound, decision: bool) -> ControlFlow<()> {
    if decision && !b.meets_slo {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// Bounds the admitted tenants plus the newcomer with grant `g` (those `scope` says); returns
/// the newcomer's bound, the first SLO that would be missed ([`first_missed`]) and the θs of
/// the bounds minimised. The tenants are bounded in that order and bounding stops at the
/// first miss: a rejection costs the tenants bounded up to it, not the neighbourhood. Under
/// [`Scope::Neighbourhood`] an admitted tenant is checked first at its θs of
/// `thetas` and only minimised when its bound there misses its SLO: the decision is the
/// same (a bound at any θ is a valid bound; a tenant within its SLO there is within it at its
/// minimum too), only the bounds of the tenants that still meet their SLOs may be looser
/// than their minima. The newcomer's bound is always minimised.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn check(
    net: &Network,
    policy: Policy,
    admitted: &HashMap<usize, Grant>,
    groups: &HashMap<usize, String>,
    packets_s: &[f64],
    thetas: &Thetas,
    newcomer: usize,
    g: &Grant,
    scope: Scope,
) -> Result<(Option<f64>, Option<String>, Vec<(usize, Found)>), AdmissionError> {
    let bounds = match scope {
        Scope::Neighbourhood {
            changed,
            index,
            sources,
        } => {
            let level = |t: usize| index.level_with(net, t, newcomer, g);
            let reach = Reach::over(net, index.queues(), &[newcomer], level);
            let changed: Vec<(usize, u32)> = changed
                .iter()
                .map(|&t| (t, level(t).unwrap_or(0)))
                .collect();
            let affected = reach.affected(&changed);
            let grant_of = |t: usize| {
                if t == newcomer {
                    Some(g)
                } else {
                    admitted.get(&t)
                }
            };
            if policy == Policy::SncMeister {
                let present = Neighbours {
                    net,
                    reach: &reach,
                    groups,
                    sources,
                };
                let mut order = affected.clone();
                order.sort_by_key(|&t| first_missed(t, newcomer));
                bound_over(net, &present, &grant_of, &order, packets_s, thetas)?
            } else {
                let set: Vec<(usize, &Grant)> = reach
                    .inputs(&affected)
                    .into_iter()
                    .filter_map(|t| grant_of(t).map(|a| (t, a)))
                    .collect();
                bound_set_hinted(
                    net,
                    policy,
                    &set,
                    groups,
                    packets_s,
                    Which::These(&affected, &level),
                    Some(newcomer),
                    thetas,
                )?
            }
        }
        Scope::Full => {
            let mut set: Vec<(usize, &Grant)> = admitted.iter().map(|(&t, g)| (t, g)).collect();
            set.push((newcomer, g));
            bound_set_hinted(
                net,
                policy,
                &set,
                groups,
                packets_s,
                Which::AtOrBelow(newcomer),
                Some(newcomer),
                &Thetas::new(),
            )?
        }
    };
    let found = bounds
        .iter()
        .filter(|h| h.searched)
        .filter_map(|h| {
            let thetas: Option<Vec<f64>> = h.thetas.iter().copied().collect();
            let bounds_s = h
                .bound
                .flows
                .iter()
                .map(|f| f.bound.seconds().unwrap_or(f64::NAN))
                .collect();
            thetas.map(|thetas| (h.bound.tenant, Found { thetas, bounds_s }))
        })
        .collect();
    let bound_s = bounds
        .iter()
        .find(|h| h.bound.tenant == newcomer)
        .and_then(|h| h.bound.total.seconds());
    let failure = bounds
        .iter()
        .map(|h| &h.bound)
        .filter(|b| !b.meets_slo)
        .min_by_key(|b| first_missed(b.tenant, newcomer))
        .map(|b| match &b.total {
            Bound::Within(s) => format!(
                "tenant {:?} would get {:.3} ms > its SLO {:.3} ms",
                b.name,
                s * 1e3,
                b.slo.latency_s * 1e3
            ),
            Bound::Unbounded(why) => format!("tenant {:?} would be unbounded: {why}", b.name),
        });
    Ok((bound_s, failure, found))
}

/// The bounds of the tenants of `set` running together with their grants, each including its
/// shaper delay and its packetization allowance (`packets_s` by tenant, none past its end);
/// `tenant` of each result is an index into `net`'s tenants, in ascending order; `which` says
/// which tenants are bounded. The priority levels reported are those of the tenants bounded
/// together.
pub(crate) fn bound_set(
    net: &Network,
    policy: Policy,
    set: &[(usize, &Grant)],
    groups: &HashMap<usize, String>,
    packets_s: &[f64],
    which: Which,
) -> Result<Vec<TenantBound>, AdmissionError> {
    let hinted = bound_set_hinted(
        net,
        policy,
        set,
        groups,
        packets_s,
        which,
        None,
        &Thetas::new(),
    )?;
    Ok(hinted.into_iter().map(|h| h.bound).collect())
}

/// [`bound_set`], checking each tenant with θs in `thetas` there first, within its SLO less
/// its shaper delay and packetization allowance (`calculus::bound_hinted`). In a decision
/// about `newcomer` the tenants are bounded in [`first_missed`]'s order and bounding stops at
/// the first missed SLO.
#[allow(clippy::too_many_arguments)]
fn bound_set_hinted(
    net: &Network,
    policy: Policy,
    set: &[(usize, &Grant)],
    groups: &HashMap<usize, String>,
    packets_s: &[f64],
    which: Which,
    newcomer: Option<usize>,
    thetas: &Thetas,
) -> Result<Vec<HintedBound>, AdmissionError> {
    let mut set = set.to_vec();
    set.sort_unstable_by_key(|&(t, _)| t);
    let ids: Vec<usize> = set.iter().map(|&(t, _)| t).collect();
    // the network flow of each flow of `sub`
    let (mut sub, net_flow) = subnetwork(net, &ids);
    for (spec, &(t, grant)) in sub.tenants.iter_mut().zip(&set) {
        if let Some(group) = groups.get(&t) {
            spec.group = Some(group.clone());
        }
        match (which, policy) {
            // the levels DNC reports (in a rejection's reason) are the admission's
            (Which::These(_, level), Policy::PriorityMeister) => {
                spec.priority = level(t).or(spec.priority)
            }
            (_, Policy::SncMeister | Policy::SncMartingale | Policy::PriorityMeister) => {}
            (_, Policy::SiloPlusPlus | Policy::QjumpPlusPlus) => spec.priority = Some(grant.level),
        }
        for (&f, buckets) in spec.flows.iter().zip(&grant.buckets) {
            if buckets.is_empty() {
                continue;
            }
            let flow = &mut sub.flows[f];
            let shaped = Envelope::from_buckets(buckets)
                .and_then(|a| {
                    a.to_model()
                        .map_err(|e| tailbound_calculus::dnc::DncError::Invalid(e.to_string()))
                })
                .map_err(|e| {
                    AdmissionError::Calculus(tailbound_calculus::CalculusError::Invalid(format!(
                        "flow {:?}: rate limits {buckets:?}: {e}",
                        flow.name
                    )))
                })?;
            flow.arrival = Some(shaped);
        }
    }
    let levels = sub.priorities();
    let mut which: Vec<usize> = match which {
        Which::These(bounded, _) => (0..sub.tenants.len())
            .filter(|&i| bounded.binary_search(&set[i].0).is_ok())
            .collect(),
        Which::AtOrBelow(n) => match set.iter().position(|&(t, _)| t == n) {
            Some(me) => (0..sub.tenants.len())
                .filter(|&i| levels[i] >= levels[me])
                .collect(),
            None => (0..sub.tenants.len()).collect(),
        },
        Which::All => (0..sub.tenants.len()).collect(),
    };
    if let Some(n) = newcomer {
        which.sort_by_key(|&i| first_missed(set[i].0, n));
    }
    let hints: Vec<Option<Hint>> = which
        .iter()
        .map(|&i| {
            let (t, grant) = set[i];
            hint(net, t, grant, packets_s, thetas)
        })
        .collect();
    let mut each = |h: &mut HintedBound| {
        let b = &mut h.bound;
        let (t, grant) = set[b.tenant];
        b.tenant = t;
        for f in &mut b.flows {
            f.flow = net_flow[f.flow];
        }
        add_delays(b, grant, packets_s);
        go_on(b, newcomer.is_some())
    };
    Ok(bound_hinted(
        &sub,
        method(policy),
        &which,
        &BoundOptions::default(),
        &hints,
        &mut each,
    )?)
}

/// Where to check admitted tenant `t` with `grant` first: its θs in `thetas`, within its SLO
/// less its shaper delay and packetization allowance.
fn hint(
    net: &Network,
    t: usize,
    grant: &Grant,
    packets_s: &[f64],
    thetas: &Thetas,
) -> Option<Hint> {
    let packets = packets_s.get(t).copied().unwrap_or(0.0);
    // a margin for rounding: within the budget, the total is within the SLO
    let budget_s = (net.tenants[t].slo.latency_s - grant.shaper_delay_s - packets) * (1.0 - 1e-9);
    thetas.get(&t).map(|found| Hint {
        thetas: found.thetas.clone(),
        shares: found.bounds_s.clone(),
        budget_s,
    })
}

/// Adds tenant `b.tenant`'s shaper delay and packetization allowance to its bound.
fn add_delays(b: &mut TenantBound, grant: &Grant, packets_s: &[f64]) {
    if let Bound::Within(s) = b.total {
        let packets = packets_s.get(b.tenant).copied().unwrap_or(0.0);
        b.total = Bound::from_seconds(s + grant.shaper_delay_s + packets, String::new);
    }
    b.meets_slo = b.total.meets(b.slo.latency_s);
}

/// The tenants a [`Reach`] sees, in their dependency groups: what the SNC analysis of a
/// neighbourhood reads ([`tailbound_calculus::snc::Analysis::over`]).
struct Neighbours<'a> {
    net: &'a Network,
    reach: &'a Reach<'a>,
    groups: &'a HashMap<usize, String>,
    sources: &'a [Option<Arc<MmppBound>>],
}

impl Present for Neighbours<'_> {
    fn level(&self, t: usize) -> Option<u32> {
        self.reach.level(t)
    }

    fn flows_at(&self, q: usize) -> Vec<usize> {
        self.reach.flows_at(q)
    }

    fn group(&self, t: usize) -> Option<&str> {
        self.groups
            .get(&t)
            .or(self.net.tenants[t].group.as_ref())
            .map(String::as_str)
    }

    fn mmpp(&self, f: usize) -> Option<Arc<MmppBound>> {
        self.sources.get(f).cloned().flatten()
    }
}

/// The bounds of the tenants `bounded` among those `reach` sees running with their grants
/// (`grant_of`), in that order up to the first that misses its SLO, each including its shaper
/// delay and packetization allowance, each admitted one checked first at its θs
/// (SNC-Meister's analysis over the neighbourhood, not a network of it:
/// [`tailbound_calculus::bound_hinted_over`]). The bounds are those [`bound_set_hinted`]
/// gives on the network of the tenants their bounds read.
fn bound_over<'g>(
    net: &Network,
    present: &Neighbours,
    grant_of: &dyn Fn(usize) -> Option<&'g Grant>,
    bounded: &[usize],
    packets_s: &[f64],
    thetas: &Thetas,
) -> Result<Vec<HintedBound>, AdmissionError> {
    let mut grants = Vec::with_capacity(bounded.len());
    for &t in bounded {
        grants.push(
            grant_of(t).ok_or_else(|| AdmissionError::NotAdmitted(net.tenants[t].name.clone()))?,
        );
    }
    let hints: Vec<Option<Hint>> = bounded
        .iter()
        .zip(&grants)
        .map(|(&t, grant)| hint(net, t, grant, packets_s, thetas))
        .collect();
    let mut grants = grants.into_iter();
    let mut each = |h: &mut HintedBound| {
        if let Some(grant) = grants.next() {
            add_delays(&mut h.bound, grant, packets_s);
        }
        go_on(&h.bound, true)
    };
    Ok(bound_hinted_over(
        net,
        Method::SncMeister,
        present,
        bounded,
        &BoundOptions::default(),
        &hints,
        &mut each,
    )?)
}

/// The network of tenants `tenants` of `net` (in that order, each keeping its flows,
/// renumbered) with only the queues their flows cross, in `net`'s order, and no hosts; also
/// returns, per flow of the result, its index in `net`. What the calculus reads of it is what
/// it reads of [`Network::subset`], whose other queues carry no flow: the queues keep their
/// order (the analyses see the same flows, queues and dependency sources in the same order,
/// so the bounds are the same bit for bit), and no analysis reads hosts. Building it costs
/// the tenants, not the cluster's hosts and queues.
fn subnetwork(net: &Network, tenants: &[usize]) -> (Network, Vec<usize>) {
    let mut used: Vec<usize> = tenants
        .iter()
        .flat_map(|&t| &net.tenants[t].flows)
        .flat_map(|&f| net.flows[f].path.iter().copied())
        .collect();
    used.sort_unstable();
    used.dedup();
    let mut sub = Network {
        hosts: Vec::new(),
        queues: used
            .iter()
            .map(|&q| Queue {
                site: None,
                ..net.queues[q].clone()
            })
            .collect(),
        flows: Vec::new(),
        tenants: Vec::with_capacity(tenants.len()),
    };
    let mut origin = Vec::new();
    for &t in tenants {
        let mut spec = net.tenants[t].clone();
        spec.hosts = None;
        for f in &mut spec.flows {
            let mut flow = net.flows[*f].clone();
            flow.tenant = sub.tenants.len();
            for q in &mut flow.path {
                *q = used.partition_point(|&u| u < *q);
            }
            origin.push(*f);
            *f = sub.flows.len();
            sub.flows.push(flow);
        }
        sub.tenants.push(spec);
    }
    (sub, origin)
}
