//! Three networks with published bounds: ours must be within 1 % (they agree to 1e-9 here).

use crate::{example, within};
use tailbound_graph::{analyze, saihu, Graph, GraphMethod, GraphReport, Scheduling};

fn delay_us(r: &GraphReport, flow: &str, m: GraphMethod) -> f64 {
    let f = r
        .flows
        .iter()
        .find(|f| f.flow == flow)
        .expect("flow in report");
    f.outcome(m).and_then(|o| o.delay_s()).expect("bounded") * 1e6
}

/// Source: Saihu's example network `src/example/demo.json` and its published results
/// `src/example/demo_data.json` (github.com/adfeel220/Saihu-TSN-Analysis-Tool-Integration),
/// column `DNC_SFA` (DiscoDNC's separated flow analysis, FIFO multiplexing):
/// f0 80.0501253132832 µs, f1 60.0501253132832 µs, f2 50.125125313283206 µs.
/// The network file here omits the demo's multicast path of f0 (`p1`): the published DNC
/// numbers are those of the network without it (with it, f1 would share s1-o1 with f0).
///
/// By hand (Le Boudec & Thiran Cor. 6.2.3, FIFO leftover (R − r)(t − T − b/R)⁺): every server
/// starts as 4 Mbit/s = 500 000 B/s after 10 µs (the 50 Mbit/s line takes over after ~1 ms);
/// every flow's burst is 10 B at 10 kbit/s = 1250 B/s.
/// * f0: at s0-o0 against f1: θ = 10 µs + 10/500 000 s = 30 µs, rate 498 750; at s1-o0 against
///   f2 the same: 60 µs + 10 B / 498 750 B/s = 60 + 20.0501253 = 80.0501253 µs.
/// * f1: 30 µs at s0-o0 against f0, then 10 µs alone at s1-o1: 40 + 20.0501253 = 60.0501253 µs.
/// * f2: f0 enters s1-o0 with burst 10 + 1250 · 30 µs = 10.0375 B (its output through its
///   leftover at s0-o0), so θ = 10 + 10.0375/0.5 µs = 30.075 µs: 30.075 + 20.0501253 =
///   50.1251253 µs.
#[test]
fn saihu_demo_fifo_sfa_matches_discodnc() {
    let g = saihu::import(&example("saihu-demo.json")).unwrap().graph;
    let r = analyze(&g, &[GraphMethod::Sfa, GraphMethod::Tfa]).unwrap();
    within(
        delay_us(&r, "f0", GraphMethod::Sfa),
        80.0501253132832,
        0.01,
        "f0 SFA",
    );
    within(
        delay_us(&r, "f1", GraphMethod::Sfa),
        60.0501253132832,
        0.01,
        "f1 SFA",
    );
    within(
        delay_us(&r, "f2", GraphMethod::Sfa),
        50.125125313283206,
        0.01,
        "f2 SFA",
    );
    // the same to 1e-6 relative: the bounds are the same formulas
    within(
        delay_us(&r, "f0", GraphMethod::Sfa),
        80.0501253132832,
        1e-6,
        "f0 SFA exact",
    );
    // xTFA's TFA at s0-o0 is 50 µs in the same report: both flows' bursts (20 B) at 4 Mbit/s
    // after 10 µs (xTFA's other servers use input shaping, which is not modelled here)
    let s0 = r.servers.iter().find(|s| s.server == "s0-o0").unwrap();
    within(s0.tfa.delay_s().unwrap() * 1e6, 50.0, 1e-6, "s0-o0 TFA");
    // TFA never beats SFA on a flow that pays several bursts
    assert!(delay_us(&r, "f0", GraphMethod::Tfa) > delay_us(&r, "f0", GraphMethod::Sfa));
}

/// Source: the same network and results file, column `DNC_PMOO` (DiscoDNC's pay multiplexing
/// only once, which assumes arbitrary multiplexing): f0 80.20050125313283 µs,
/// f1 60.125313283208015 µs, f2 50.20068969416021 µs. Every cross flow meets each flow of
/// interest at one server only, so PMOO's bound equals SFA's under arbitrary multiplexing.
///
/// By hand (blind leftover (R − r)(t − (RT + b)/(R − r))⁺, Le Boudec & Thiran Thm 7.1.5
/// special case): against a 10 B, 1250 B/s cross flow the leftover of 500 000 B/s after
/// 10 µs is 498 750 B/s after (5 + 10)/498 750 s = 30.0752 µs.
/// * f0: 2 · 30.0752 + 20.0501 = 80.2005 µs; f1: 30.0752 + 10 + 20.0501 = 60.1253 µs;
/// * f2: f0 arrives with 10 + 1250 · 30.0752 µs = 10.03759 B, so (5 + 10.03759)/498 750 s =
///   30.1506 µs, + 20.0501 = 50.2007 µs.
#[test]
fn saihu_demo_arbitrary_sfa_matches_discodnc_pmoo() {
    let text = example("saihu-demo.json").replace("\"FIFO\"", "\"ARBITRARY\"");
    let g = saihu::import(&text).unwrap().graph;
    assert!(g
        .servers
        .iter()
        .all(|s| s.scheduling == Scheduling::Arbitrary));
    let r = analyze(&g, &[GraphMethod::Sfa]).unwrap();
    within(
        delay_us(&r, "f0", GraphMethod::Sfa),
        80.20050125313283,
        0.01,
        "f0",
    );
    within(
        delay_us(&r, "f1", GraphMethod::Sfa),
        60.125313283208015,
        0.01,
        "f1",
    );
    within(
        delay_us(&r, "f2", GraphMethod::Sfa),
        50.20068969416021,
        0.01,
        "f2",
    );
    within(
        delay_us(&r, "f2", GraphMethod::Sfa),
        50.20068969416021,
        1e-6,
        "f2 exact",
    );
}

/// Source: Le Boudec & Thiran, *Network Calculus* (LNCS 2050), Thm 1.4.6 ("pay bursts only
/// once": the concatenation of rate-latency curves is rate-latency with the smallest rate and
/// the sum of latencies), Thm 1.4.2/1.4.3 (delay and output bounds of a token bucket through
/// a rate-latency server: T + b/R and b + rT) and Cor. 6.2.3 (FIFO leftover). Network:
/// examples/graphs/tandem.toml; every server R = 1.25e6 B/s.
///
/// SFA, by hand: leftover latencies θ_i = T_i + b_ci/R: 1 + 4 = 5 ms, 2 + 2 = 4 ms,
/// 0.5 + 8 = 8.5 ms (sum 17.5 ms); rates R − r_ci: 1e6, 875 000, 1.125e6 (min 875 000).
/// Delay 17.5 ms + 10 000/875 000 s = 28.928571 ms; backlog b + r·Σθ = 10 000 + 125 000 ·
/// 0.0175 = 12 187.5 B.
///
/// TFA, by hand: D1 = 1 ms + (10 000 + 5 000)/R = 13 ms. f leaves s1 with burst
/// 10 000 + 125 000 · 5 ms = 10 625 B (b + r·θ1, tighter than b + r·D1 = 11 625); D2 = 2 ms +
/// (10 625 + 2 500)/R = 12.5 ms; leaves s2 with 10 625 + 125 000 · 4 ms = 11 125 B;
/// D3 = 0.5 ms + (11 125 + 10 000)/R = 17.4 ms. Total 42.9 ms; backlog α(42.9 ms) =
/// 10 000 + 125 000 · 0.0429 = 15 362.5 B.
#[test]
fn le_boudec_thiran_tandem_pays_bursts_once() {
    let g = Graph::from_toml(&example("tandem.toml")).unwrap();
    let r = analyze(&g, &[GraphMethod::Tfa, GraphMethod::Sfa]).unwrap();
    let f = r.flows.iter().find(|f| f.flow == "f").unwrap();
    let sfa = f.outcome(GraphMethod::Sfa).unwrap();
    let tfa = f.outcome(GraphMethod::Tfa).unwrap();
    within(
        sfa.delay_s().unwrap(),
        0.0175 + 10_000.0 / 875_000.0,
        1e-9,
        "SFA delay",
    );
    within(sfa.backlog_bytes().unwrap(), 12_187.5, 1e-9, "SFA backlog");
    within(tfa.delay_s().unwrap(), 0.0429, 1e-9, "TFA delay");
    within(tfa.backlog_bytes().unwrap(), 15_362.5, 1e-9, "TFA backlog");
    // per-server TFA: the largest delay at s1 is every flow's 13 ms (FIFO)
    within(r.servers[0].tfa.delay_s().unwrap(), 0.013, 1e-9, "s1 TFA");
}
