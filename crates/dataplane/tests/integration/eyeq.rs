//! EyeQ's agents on real namespaces: a UDP blaster into a congested receiver makes the receiver
//! agent send feedback, the sender agent turns its HTB class for that destination down to the
//! fed-back rate (read back from the kernel), and back to bypass once the blaster stops; the
//! receiver agent reads the switch port's queue and counts what it delivers above the
//! marking threshold as marked.
//! Asserts on what the agents decide; the deadlines are generous bounds, not measurements.

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tailbound_dataplane::blast::{blast, BlastProtocol, BlastSpec, Sink};
use tailbound_dataplane::eyeq::{
    class_id, wire, PortQueue, ReceiverAgent, ReceiverSpec, SenderAgent, SenderLimits, SenderSpec,
};
use tailbound_dataplane::netns::{extra_ip, HostSpec, Lan, LanSpec, HOST_IFACE};
use tailbound_dataplane::probe::Control;
use tailbound_dataplane::tc::batch;
use tailbound_dataplane::tc::{read_state, Target};
use tailbound_enforce_plan::ClassId;
use tailbound_shaping::eyeq::EyeqConfig;

const LINK: f64 = 1.25e6; // 10 Mbit/s into the receiver
const NIC: f64 = 1.25e8; // the sender's NIC, 1 Gbit/s

/// The rate of the sender's class for destination 0 [bytes/s], if it exists.
fn class_rate(ns: &str) -> Option<u64> {
    let (major, minor) = class_id(0);
    let state = read_state(Target {
        host: "tx",
        netns: Some(ns),
        interface: HOST_IFACE,
    })
    .ok()?;
    state
        .classes
        .iter()
        .find(|c| c.id == ClassId::new(major, minor))
        .map(|c| c.rate_bytes_per_s)
}

/// Polls `f` every 20 ms until it holds or `limit` passes.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

#[test]
fn a_blaster_into_a_congested_receiver_is_limited_by_feedback_and_released_after_it_stops() {
    if !tailbound_testdata::root_or_skip("EyeQ agents in namespaces") {
        return;
    }
    let vm = extra_ip(0).unwrap();
    let lan = Lan::create(&LanSpec {
        hosts: vec![
            HostSpec {
                label: "rx".into(),
                rate_bytes_per_s: Some(LINK),
                extra: vec![vm],
            },
            HostSpec {
                label: "tx".into(),
                rate_bytes_per_s: None,
                extra: Vec::new(),
            },
        ],
        bridge: true,
        mtu_packets: true,
        persistent: None,
    })
    .unwrap();
    let (rx, tx) = (lan.hosts()[0].ns.clone(), lan.hosts()[1].ns.clone());
    // the receiving switch port's queue: 40 ms at the link rate, drop-tail
    let (sw, port) = (
        lan.switch_ns().unwrap().to_string(),
        lan.hosts()[0].port.clone().unwrap(),
    );
    let line = format!("qdisc replace dev {port} parent 1:1 handle 2: bfifo limit 50000");
    batch::run(
        std::path::Path::new("tc"),
        Some(&sw),
        &[line],
        Duration::from_secs(30),
    )
    .unwrap();
    // EyeQ's time constants × 50: a 10 ms interval; a short hold so the test ends soon
    let config = EyeqConfig {
        interval_ns: 10_000_000,
        feedback_ns: 5_000_000,
        hold_ns: 300_000_000,
        burst_s: 2.5e-3,
        mark_threshold_s: 1.8e-3,
        ecn: true,
        ..EyeqConfig::new(LINK)
    };
    let sink = Sink::start(
        Some(&rx),
        SocketAddr::new(vm.into(), 9000),
        BlastProtocol::Udp,
    )
    .unwrap();
    let receiver = ReceiverAgent::start(ReceiverSpec {
        netns: rx.clone(),
        iface: HOST_IFACE.into(),
        tenants: vec![vm],
        weights: vec![1.0],
        config,
        feedback: true,
        feedback_port: wire::PORT,
        bin_ns: 100_000_000,
        marks: Some(PortQueue {
            netns: sw.clone(),
            iface: port.clone(),
            qdisc: 0x0002_0000,
        }),
        max_duration: Duration::from_secs(60),
    })
    .unwrap();
    let sender = SenderAgent::start(SenderSpec {
        netns: tx.clone(),
        iface: HOST_IFACE.into(),
        line_rate: NIC,
        destinations: vec![vm],
        config,
        limits: SenderLimits::Feedback,
        port: wire::PORT,
        queue_bytes: 128 * 1024,
        max_duration: Duration::from_secs(60),
        tc: "tc".into(),
    })
    .unwrap();
    // bypassed: the class runs at the NIC's rate
    assert_eq!(class_rate(&tx), Some(NIC as u64));
    let ctl = Control::new();
    let spec = BlastSpec {
        protocol: BlastProtocol::Udp,
        netns: Some(tx.clone()),
        source: None,
        target: sink.addr(),
        rate_bytes_per_s: 3.0 * LINK,
        tos: 0,
    };
    let limited = std::thread::scope(|s| {
        let blaster = s.spawn(|| blast(&spec, Instant::now() + Duration::from_secs(15), &ctl));
        let limited = eventually(Duration::from_secs(10), || {
            class_rate(&tx).is_some_and(|r| (r as f64) < 0.5 * NIC)
        });
        let rate = class_rate(&tx);
        ctl.stop();
        blaster.join().unwrap().unwrap();
        (limited, rate)
    });
    assert!(limited.0, "the class never left bypass: {:?}", limited.1);
    // the limit is the receiver's: at most C (98 % of the link, HTB rounds to bits), at least
    // EyeQ's minimum rate
    let rate = limited.1.unwrap() as f64;
    assert!(
        rate <= 0.98 * LINK * 1.01 && rate >= config.min_rate,
        "{rate}"
    );
    // the blaster stopped: no more feedback, the limiter's hold passes, bypass again
    assert!(
        eventually(Duration::from_secs(10), || class_rate(&tx)
            == Some(NIC as u64)),
        "still limited: {:?}",
        class_rate(&tx)
    );
    let r = receiver.stop().unwrap();
    let snd = sender.stop().unwrap();
    assert!(r.stats.limits >= 1 && r.feedback_sent >= 1, "{r:?}");
    assert!(r.packets > 0 && r.tenant_bytes[0].iter().sum::<u64>() > 0);
    // the unlimited start filled the port's queue beyond the threshold: marks
    let threshold = config.mark_threshold_s * LINK;
    assert!(
        r.port_peak_bytes as f64 > threshold && r.marked > 0,
        "{r:?}"
    );
    assert!(r.stats.marked_arrivals > 0, "{:?}", r.stats);
    assert!(snd.feedback >= 1 && snd.class_changes >= 2, "{snd:?}");
    assert_eq!(snd.tc_errors, 0);
    assert!(snd.lowest_rate[0].is_some_and(|l| l <= 0.98 * LINK * 1.01));
    // the agent removed its classes
    assert_eq!(class_rate(&tx), None);
    let _ = sink.stop();
}
