//! EyeQ's experiments on real hosts: network namespaces on one switch, `tailbound_dataplane`'s
//! EyeQ agents, a real TCP connection, a paced UDP blaster and memcached (Debian's, by PID).
//!
//! ```text
//!  "vm" host ── TCP / memcached clients ─┐                     ┌─ rx host: tenant 0 (10.199.1.1)
//!   sender agent: HTB class per dest.    ├─ switch (bridge) ─ p0 ═╡   tenant 1 (10.199.1.2)
//!  "udp" host ── on/off UDP blaster ─────┘   HTB at link rate,    └─ receiver agent (AF_PACKET)
//!   sender agent: HTB class per dest.        a shallow bfifo
//! ```
//!
//! Every run builds its own namespaces and deletes them afterwards (with every process in
//! them), so runs do not share state. The receiving host's link is shaped at `link_rate` both
//! ways; its switch port (the link's in direction, where the tenants collide) has a drop-tail
//! buffer of [`Testbed::switch_buffer_intervals`] EyeQ intervals at the link rate (EyeQ
//! assumes shallow switch buffers). The sending hosts' NICs are the sender agents' HTB roots
//! at `nic_rate`. In every mode the same agents run: the receiver agent measures (its counts
//! are the throughput series) and sends feedback only with EyeQ; the sender agents keep
//! their classes bypassed (`none`), at the guarantee (`static`) or at the fed-back rate
//! (`eyeq`), so that the data path is the same and only the limits differ. The switch port's
//! queue (`bfifo` 2:) marks: the receiver agent reads its backlog and counts what it delivers
//! while the backlog is above EyeQ's marking threshold as ECN-marked (EyeQ's queue term).
//!
//! Only the receiving host runs a receiver agent: the blaster aims at it, and the other
//! direction carries ACKs and memcached's short replies (`STORED`).

use super::{
    blaster_on_periods, AgentCost, Backend, EyeqExperimentError, EyeqSetup, LatencyRun, Mode, Row,
    ThroughputRun,
};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tailbound_curves::NetworkCost;
use tailbound_dataplane::blast::{blast, BlastProtocol, BlastSpec, Sink, DATAGRAM_BYTES};
use tailbound_dataplane::eyeq::{
    wire, PortQueue, ReceiverAgent, ReceiverReport, ReceiverSpec, SenderAgent, SenderLimits,
    SenderReport, SenderSpec,
};
use tailbound_dataplane::memcache::load::{run_load, LoadMode, LoadSpec};
use tailbound_dataplane::netns::{self, extra_ip, HostSpec, Lan, LanSpec, HOST_IFACE};
use tailbound_dataplane::probe::Control;
use tailbound_dataplane::replay::set_nice;
use tailbound_dataplane::tc::batch;
use tailbound_shaping::eyeq::EyeqConfig;
use tailbound_testbed::testbed::{lower_to_aggressor, SessionNice, NICE};

/// Frame bytes of one blast datagram (payload + UDP 8 + IPv4 20 + Ethernet 14).
const DATAGRAM_FRAME_BYTES: f64 = DATAGRAM_BYTES as f64 + 42.0;
/// memcached's port on the receiving host.
const MEMCACHED_PORT: u16 = 11211;
const TCP_PORT: u16 = 5001;
const UDP_PORT: u16 = 5002;
/// The receiving switch port's queue: qdisc `2:` (its handle as the kernel has it).
const SWITCH_QUEUE: u32 = 0x0002_0000;
/// Slack on every agent's own deadline beyond the run's length.
const AGENT_SLACK: Duration = Duration::from_secs(60);

/// The testbed backend; runs one experiment at a time (they share the machine).
#[derive(Debug)]
pub struct Testbed {
    /// the receiving switch port's buffer, in EyeQ intervals at the link rate
    pub switch_buffer_intervals: f64,
    /// memcached's executable
    pub memcached: PathBuf,
    /// the `tc` program
    pub tc: PathBuf,
    /// memcached clients' connections
    pub connections: usize,
    one_at_a_time: Mutex<()>,
}

impl Default for Testbed {
    fn default() -> Self {
        Testbed {
            switch_buffer_intervals: 4.0,
            memcached: PathBuf::from("/usr/bin/memcached"),
            tc: PathBuf::from("tc"),
            connections: 4,
            one_at_a_time: Mutex::new(()),
        }
    }
}

fn err(message: impl std::fmt::Display) -> EyeqExperimentError {
    EyeqExperimentError::Backend {
        backend: "testbed",
        message: message.to_string(),
    }
}

/// One run's hosts.
struct Bed {
    lan: Lan,
    /// the receiving tenants' addresses: 0 = TCP or memcached, 1 = the blaster
    tenants: [Ipv4Addr; 2],
}

impl Bed {
    fn ns(&self, i: usize) -> &str {
        &self.lan.hosts()[i].ns
    }
    fn rx(&self) -> &str {
        self.ns(0)
    }
    fn vm(&self) -> &str {
        self.ns(1)
    }
    fn udp(&self) -> &str {
        self.ns(2)
    }
    /// The switch's namespace and its port towards the receiving host.
    fn switch_port(&self) -> Result<(&str, &str), EyeqExperimentError> {
        match (self.lan.switch_ns(), self.lan.hosts()[0].port.as_deref()) {
            (Some(sw), Some(port)) => Ok((sw, port)),
            _ => Err(err("the LAN has no switch")),
        }
    }
    /// The blaster's sink on the receiving host.
    fn blaster_sink(&self) -> Result<Sink, EyeqExperimentError> {
        Sink::start(
            Some(self.rx()),
            SocketAddr::new(self.tenants[1].into(), UDP_PORT),
            BlastProtocol::Udp,
        )
        .map_err(err)
    }
}

/// The agents of one run.
struct Agents {
    receiver: ReceiverAgent,
    senders: Vec<SenderAgent>,
}

impl Agents {
    fn stop(self) -> Result<(ReceiverReport, Vec<SenderReport>), EyeqExperimentError> {
        let r = self.receiver.stop().map_err(err)?;
        let s = self
            .senders
            .into_iter()
            .map(|s| s.stop().map_err(err))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((r, s))
    }
}

fn cost(r: &ReceiverReport, s: &[SenderReport]) -> AgentCost {
    AgentCost {
        elapsed_s: r.elapsed_s,
        receiver_cpu_s: r.cpu_s,
        sender_cpu_s: s.iter().map(|s| s.cpu_s).sum(),
        packets: r.packets,
        socket_drops: r.socket_drops,
        class_changes: s.iter().map(|s| s.class_changes).sum(),
    }
}

impl Testbed {
    fn bed(&self, setup: &EyeqSetup) -> Result<Bed, EyeqExperimentError> {
        let tenants = [extra_ip(0), extra_ip(1)];
        let [Some(t0), Some(t1)] = tenants else {
            return Err(err("no tenant addresses"));
        };
        let host = |label: &str, rate, extra| HostSpec {
            label: label.into(),
            rate_bytes_per_s: rate,
            extra,
        };
        let lan = Lan::create(&LanSpec {
            hosts: vec![
                host("rx", Some(setup.link_rate), vec![t0, t1]),
                host("vm", None, Vec::new()),
                host("udp", None, Vec::new()),
            ],
            bridge: true,
            mtu_packets: true,
            persistent: None,
        })
        .map_err(err)?;
        let bed = Bed {
            lan,
            tenants: [t0, t1],
        };
        // the receiving port's buffer: drop-tail, shallow
        let buffer = (self.switch_buffer_intervals * setup.eyeq_interval_s * setup.link_rate)
            .max(2.0 * DATAGRAM_FRAME_BYTES) as u64;
        let (sw, port) = bed.switch_port()?;
        let line = format!(
            "qdisc replace dev {port} parent 1:1 handle {:x}: bfifo limit {buffer}",
            SWITCH_QUEUE >> 16
        );
        batch::run(&self.tc, Some(sw), &[line], Duration::from_secs(30))
            .map_err(|e| err(format!("switch port buffer: {e:?}")))?;
        Ok(bed)
    }

    fn agents(
        &self,
        setup: &EyeqSetup,
        bed: &Bed,
        feedback: bool,
        limits: SenderLimits,
        run_s: f64,
    ) -> Result<Agents, EyeqExperimentError> {
        // the switch port's queue marks (ECN, read by the receiver agent): EyeQ's queue term
        let config = EyeqConfig {
            ecn: true,
            ..setup.eyeq_config()
        };
        let (sw, port) = bed.switch_port()?;
        let max_duration = Duration::from_secs_f64(run_s) + AGENT_SLACK;
        let receiver = ReceiverAgent::start(ReceiverSpec {
            netns: bed.rx().to_string(),
            iface: HOST_IFACE.into(),
            tenants: bed.tenants.to_vec(),
            weights: vec![1.0, 1.0],
            config,
            feedback,
            feedback_port: wire::PORT,
            bin_ns: (setup.bin_s * 1e9).round() as u64,
            marks: Some(PortQueue {
                netns: sw.to_string(),
                iface: port.to_string(),
                qdisc: SWITCH_QUEUE,
            }),
            max_duration,
        })
        .map_err(err)?;
        let senders = [bed.vm(), bed.udp()]
            .into_iter()
            .map(|ns| {
                SenderAgent::start(SenderSpec {
                    netns: ns.to_string(),
                    iface: HOST_IFACE.into(),
                    line_rate: setup.nic_rate,
                    destinations: bed.tenants.to_vec(),
                    config,
                    limits,
                    port: wire::PORT,
                    queue_bytes: setup.sender_queue_bytes,
                    max_duration,
                    tc: self.tc.clone(),
                })
                .map_err(err)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Agents { receiver, senders })
    }
}

/// Runs one run the way the admission testbed runs its hosts: this process's session above
/// the rest of the machine ([`SessionNice`] at [`NICE`]), and `run` on a thread of its own at
/// [`NICE`], which the agents, memcached, its clients and the TCP sender it starts inherit;
/// the blaster lowers its own thread ([`on_off_blaster`]). On a cluster each host is a machine
/// of its own; here a build beside the run, or the blaster's system calls, delayed memcached
/// and its clients by milliseconds (alone, p99.9 varied 1.9–11.8 ms between runs of one
/// setting at nice 0).
fn at_host_priority<T: Send>(
    run: impl FnOnce() -> Result<T, EyeqExperimentError> + Send,
) -> Result<T, EyeqExperimentError> {
    let _session = SessionNice::set(NICE);
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("eyeq-hosts".into())
            .spawn_scoped(scope, || {
                if let Err(e) = set_nice(0, NICE) {
                    tracing::warn!(nice = NICE, error = %e, "cannot raise the hosts' priority");
                }
                run()
            })
            .map_err(|e| err(format!("cannot start the hosts' thread: {e}")))?
            .join()
            .map_err(|_| err("the run panicked"))?
    })
}

/// The on/off blaster from the "udp" host: blasts at `rate` [frame bytes/s] during each of
/// `on` (seconds from `epoch`), idle between; stops early when `ctl` says so. It runs at the
/// aggressor's priority (`tailbound_testbed::testbed::AGGRESSOR_NICE`): on a cluster it is a
/// machine of its own, here its system calls would come out of the hosts' CPU.
fn on_off_blaster(
    ns: &str,
    target: SocketAddr,
    rate: f64,
    on: &[(f64, f64)],
    epoch: Instant,
    ctl: &Control,
) -> Result<(), EyeqExperimentError> {
    lower_to_aggressor();
    let spec = BlastSpec {
        protocol: BlastProtocol::Udp,
        netns: Some(ns.to_string()),
        source: None,
        target,
        rate_bytes_per_s: rate * DATAGRAM_BYTES as f64 / DATAGRAM_FRAME_BYTES,
        tos: 0,
    };
    for &(a, b) in on {
        let start = epoch + Duration::from_secs_f64(a);
        // wait for the period in short steps, so that a stop is noticed
        while Instant::now() < start && !ctl.stopped() {
            let left = start.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        if ctl.stopped() {
            break;
        }
        blast(&spec, epoch + Duration::from_secs_f64(b), ctl).map_err(err)?;
    }
    Ok(())
}

fn limits_of(mode: Mode, setup: &EyeqSetup) -> SenderLimits {
    match mode {
        Mode::None => SenderLimits::Bypass,
        Mode::Static => SenderLimits::Fixed {
            rate: setup.guarantee(),
        },
        Mode::Eyeq => SenderLimits::Feedback,
    }
}

/// The first `bins` entries of `v`, zero-padded.
fn first(v: &[u64], bins: usize) -> Vec<u64> {
    (0..bins).map(|k| v.get(k).copied().unwrap_or(0)).collect()
}

impl Backend for Testbed {
    fn name(&self) -> &'static str {
        "testbed"
    }

    fn throughput(
        &self,
        setup: &EyeqSetup,
        mode: Mode,
        seed: u64,
    ) -> Result<ThroughputRun, EyeqExperimentError> {
        let _turn = self.turn();
        at_host_priority(|| self.throughput_run(setup, mode, seed))
    }

    fn latency(
        &self,
        setup: &EyeqSetup,
        row: Row,
        seed: u64,
    ) -> Result<LatencyRun, EyeqExperimentError> {
        let _turn = self.turn();
        at_host_priority(|| self.latency_run(setup, row, seed))
    }
}

impl Testbed {
    /// One run at a time, taken before the session is raised: a run's [`SessionNice`] then
    /// never reads another run's raised value as the one to restore.
    fn turn(&self) -> std::sync::MutexGuard<'_, ()> {
        self.one_at_a_time.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn throughput_run(
        &self,
        setup: &EyeqSetup,
        mode: Mode,
        seed: u64,
    ) -> Result<ThroughputRun, EyeqExperimentError> {
        let bed = self.bed(setup)?;
        let tcp_sink = Sink::start(
            Some(bed.rx()),
            SocketAddr::new(bed.tenants[0].into(), TCP_PORT),
            BlastProtocol::Tcp,
        )
        .map_err(err)?;
        let udp_sink = bed.blaster_sink()?;
        let agents = self.agents(
            setup,
            &bed,
            mode == Mode::Eyeq,
            limits_of(mode, setup),
            setup.duration_s,
        )?;
        let epoch = agents.receiver.epoch();
        let on = blaster_on_periods(setup, seed, setup.duration_s);
        let end = epoch + Duration::from_secs_f64(setup.duration_s);
        let ctl = Control::new();
        let tcp = BlastSpec {
            protocol: BlastProtocol::Tcp,
            netns: Some(bed.vm().to_string()),
            source: None,
            target: tcp_sink.addr(),
            rate_bytes_per_s: 0.0,
            tos: 0,
        };
        let (tcp_sent, blasted) = std::thread::scope(|s| {
            let blaster = s.spawn(|| {
                let r = on_off_blaster(
                    bed.udp(),
                    udp_sink.addr(),
                    setup.blaster_rate,
                    &on,
                    epoch,
                    &ctl,
                );
                if r.is_err() {
                    ctl.stop();
                }
                r
            });
            let tcp_sent = blast(&tcp, end, &ctl).map_err(err);
            if tcp_sent.is_err() {
                ctl.stop();
            }
            let blasted = blaster.join().map_err(|_| err("the blaster panicked"));
            (tcp_sent, blasted)
        });
        let (r, s) = agents.stop()?;
        tcp_sent?;
        blasted??;
        let bins = (setup.duration_s / setup.bin_s).floor() as usize;
        tracing::info!(
            mode = %mode,
            seed,
            packets = r.packets,
            socket_drops = r.socket_drops,
            feedback = r.feedback_sent,
            "testbed throughput run done"
        );
        Ok(ThroughputRun {
            tcp_bytes: first(&r.tenant_bytes[0], bins),
            blaster_bytes: first(&r.tenant_bytes[1], bins),
            blaster_on: on,
            feedback_messages: r.feedback_sent,
            agents: Some(cost(&r, &s)),
        })
    }

    fn latency_run(
        &self,
        setup: &EyeqSetup,
        row: Row,
        seed: u64,
    ) -> Result<LatencyRun, EyeqExperimentError> {
        let bed = self.bed(setup)?;
        let addr = SocketAddr::new(bed.tenants[0].into(), MEMCACHED_PORT);
        let server =
            tailbound_testbed::memcached::start(bed.rx(), "rx", addr, 64, &self.memcached, false)
                .map_err(err)?;
        let udp_sink = bed.blaster_sink()?;
        let run_s = setup.warmup_s + setup.latency_duration_s;
        let limits = if row.eyeq() {
            SenderLimits::Feedback
        } else {
            SenderLimits::Bypass
        };
        let agents = self.agents(setup, &bed, row.eyeq(), limits, run_s)?;
        let epoch = agents.receiver.epoch();
        let on = if row.blaster() {
            blaster_on_periods(setup, seed, run_s)
        } else {
            Vec::new()
        };
        let request = NetworkCost::REQUEST_DIRECTION;
        let per_request = request.header_bytes + request.write_per_byte * setup.object_bytes as f64;
        let load = LoadSpec {
            addr,
            connections: self.connections,
            mode: LoadMode::Open {
                rate_per_s: setup.memcached_load * setup.link_rate / per_request,
            },
            value_bytes: setup.object_bytes as usize,
            get_fraction: 0.0,
            keys: 100,
            duration_s: setup.latency_duration_s,
            warmup_s: setup.warmup_s,
            max_requests: 10_000_000,
            timeout_s: 5.0,
            seed,
        };
        let ctl = Control::new();
        let vm = bed.vm().to_string();
        let (result, blasted) = std::thread::scope(|s| {
            let blaster = s.spawn(|| {
                on_off_blaster(
                    bed.udp(),
                    udp_sink.addr(),
                    setup.blaster_rate,
                    &on,
                    epoch,
                    &ctl,
                )
            });
            // the clients run on a thread in the "vm" host (its threads inherit the namespace)
            let result = s
                .spawn(|| {
                    netns::enter(&vm).map_err(err)?;
                    run_load(&load).map_err(err)
                })
                .join()
                .map_err(|_| err("the memcached clients panicked"))
                .and_then(|r| r);
            ctl.stop();
            let blasted = blaster.join().map_err(|_| err("the blaster panicked"));
            (result, blasted)
        });
        let (r, s) = agents.stop()?;
        server.stop();
        let result = result?;
        blasted??;
        tracing::info!(
            row = %row,
            seed,
            requests = result.requests,
            packets = r.packets,
            class_changes = s.iter().map(|s| s.class_changes).sum::<u64>(),
            "testbed latency run done"
        );
        let latency = result
            .latency
            .ok_or_else(|| err("memcached completed no request in the measured time"))?;
        Ok(LatencyRun {
            requests: usize::try_from(result.requests).unwrap_or(usize::MAX),
            dropped: result.errors,
            p50_s: latency.p50_us * 1e-6,
            p999_s: latency.p99_9_us * 1e-6,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_testbed::testbed::{session_nice, thread_nice, AGGRESSOR_NICE};

    fn nice() -> i32 {
        thread_nice().expect("Linux shows a thread's nice value")
    }

    #[test]
    fn a_run_and_what_it_starts_are_at_the_hosts_priority_and_the_blaster_at_the_lowest() {
        if !tailbound_testdata::root_or_skip("raising the hosts' priority") {
            return;
        }
        let before = (nice(), session_nice());
        let (own, started, blaster, session) = at_host_priority(|| {
            let started = std::thread::spawn(nice).join().unwrap();
            // the blaster with no on period: it lowers its thread and returns
            let target = SocketAddr::from(([127, 0, 0, 1], 9));
            let blaster = std::thread::spawn(move || {
                on_off_blaster("unused", target, 1.0, &[], Instant::now(), &Control::new())
                    .map(|()| nice())
            })
            .join()
            .unwrap()?;
            Ok((nice(), started, blaster, session_nice()))
        })
        .unwrap();
        assert_eq!((own, started, blaster), (NICE, NICE, AGGRESSOR_NICE));
        if before.1.is_some() {
            assert_eq!(session, Some(NICE), "the session is raised during the run");
        }
        assert_eq!(
            (nice(), session_nice()),
            before,
            "the caller keeps its priorities"
        );
        let failed = at_host_priority(|| -> Result<(), _> { Err(err("x")) });
        assert!(failed.unwrap_err().to_string().contains('x'));
    }
}
