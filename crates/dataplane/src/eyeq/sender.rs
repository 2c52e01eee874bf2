//! The sender agent: one HTB class per destination on the sending host's egress, its rate set
//! from `tailbound_shaping::eyeq::Sender`, which the receivers' feedback drives. See the module
//! docs of [`crate::eyeq`].
//!
//! The interface gets (it must have no root qdisc before: the agent shapes the host's NIC
//! itself): HTB root `1:` defaulting to `1:2`; `1:1` the NIC at `line_rate`; `1:2` every other
//! packet; per destination `k` a leaf [`class_id`]`(k)` under `1:1` with a `bfifo` of
//! `queue_bytes` (EyeQ's sender queue: a blaster that overruns its limit loses datagrams here,
//! as at EyeQ's limiter) and a u32 filter on the destination address. A bypassed destination's
//! class runs at rate = ceil = `line_rate`; a limited one at rate = ceil = the limit, with the
//! limiter's burst. The root qdisc is deleted when the agent stops.

use super::{io_error, process_cpu_s, thread_cpu_s, wire, AgentThread, EyeqAgentError};
use crate::netns;
use crate::tc::batch;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{Ipv4Addr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tailbound_shaping::eyeq::{EyeqConfig, Sender};

/// How long a read of the feedback socket waits before the agent checks `hold` and stops.
const POLL: Duration = Duration::from_millis(1);
/// A limit that moved by less than this fraction is not worth a `tc class change`.
const CHANGE: f64 = 0.01;
/// Time limit of the setup and removal batches.
const BATCH_LIMIT: Duration = Duration::from_secs(30);
/// HTB's round-robin quantum for every class [bytes]: one frame, so that no warning about
/// small or large quanta is printed whatever the rate.
const QUANTUM: u64 = 1514;

/// What limits the sender agent applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SenderLimits {
    /// EyeQ: the receivers' feedback (bypassed while there is none)
    Feedback,
    /// every destination at this rate, always (static rate limits) [bytes/s]
    Fixed { rate: f64 },
    /// every destination bypassed, feedback ignored (the same data path without EyeQ)
    Bypass,
}

/// Where a [`SenderAgent`] runs and what it limits.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderSpec {
    /// the sending host's namespace
    pub netns: String,
    /// its interface (e.g. [`netns::HOST_IFACE`])
    pub iface: String,
    /// the host's NIC rate: the root class and every bypassed destination [bytes/s]
    pub line_rate: f64,
    /// one class per destination address (receiving tenants)
    pub destinations: Vec<Ipv4Addr>,
    /// EyeQ's parameters (the limiters' `hold` and bursts)
    pub config: EyeqConfig,
    pub limits: SenderLimits,
    /// the feedback port to listen on ([`wire::PORT`])
    pub port: u16,
    /// each destination's queue in front of its limiter [bytes]
    pub queue_bytes: u64,
    /// the agent stops by itself after this long
    pub max_duration: Duration,
    /// the `tc` program
    pub tc: PathBuf,
}

/// What a sender agent received and did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SenderReport {
    /// feedback datagrams applied
    pub feedback: u64,
    /// datagrams that were not feedback about one of its destinations
    pub invalid: u64,
    /// `tc class change` commands written
    pub class_changes: u64,
    /// lines `tc` printed on its error output (each a failed or warned change)
    pub tc_errors: u64,
    /// the lowest rate set per destination [bytes/s]; `None`: never limited
    pub lowest_rate: Vec<Option<f64>>,
    /// how long it ran [s]
    pub elapsed_s: f64,
    /// CPU time of its thread and its `tc` process [s]
    pub cpu_s: f64,
}

/// The HTB class of destination `k`: `1:(0x100 + k)`, as (major, minor).
pub fn class_id(k: usize) -> (u16, u16) {
    (1, 0x100 + k as u16)
}

/// A running sender agent; stopped (its qdisc deleted, its thread joined) by
/// [`SenderAgent::stop`] or on drop.
#[derive(Debug)]
pub struct SenderAgent {
    thread: AgentThread<SenderReport>,
}

impl SenderAgent {
    /// Installs the classes and starts listening; returns once both are done.
    ///
    /// # Errors
    /// A bad spec; tc refusing the classes (the interface already has a root qdisc); a
    /// socket that cannot be bound (the port in use).
    pub fn start(spec: SenderSpec) -> Result<SenderAgent, EyeqAgentError> {
        let bad = |message: String, expected| EyeqAgentError::Spec {
            agent: "sender",
            message,
            expected,
        };
        if spec.destinations.is_empty() || spec.destinations.len() > 0xfe00 {
            return Err(bad(
                format!("{} destinations", spec.destinations.len()),
                "1 to 65024 destination addresses",
            ));
        }
        if !(spec.line_rate.is_finite() && spec.line_rate >= 125.0) {
            return Err(bad(
                format!("line rate {} B/s", spec.line_rate),
                "a finite rate of at least 125 B/s (1 kbit/s)",
            ));
        }
        if let SenderLimits::Fixed { rate } = spec.limits {
            if !(rate.is_finite() && rate >= 125.0) {
                return Err(bad(
                    format!("fixed rate {rate} B/s"),
                    "a finite rate of at least 125 B/s",
                ));
            }
        }
        if spec.queue_bytes < 1514 {
            return Err(bad(
                format!("queue of {} bytes", spec.queue_bytes),
                "room for at least one 1514-byte frame",
            ));
        }
        spec.config.validate()?;
        let (thread, ()) =
            AgentThread::spawn("sender", move |stop, ready| run(&spec, stop, ready))?;
        Ok(SenderAgent { thread })
    }

    /// Stops it, deletes its qdisc, and returns its report.
    ///
    /// # Errors
    /// The error that ended it early (tc exiting, a socket failing).
    pub fn stop(self) -> Result<SenderReport, EyeqAgentError> {
        self.thread.stop()
    }
}

fn bits(rate: f64) -> String {
    format!("{}bit", (rate * 8.0).round().max(8.0) as u64)
}

/// The `tc` line that sets class `k` to `rate` with `burst`.
fn class_line(verb: &str, iface: &str, k: usize, rate: f64, burst: f64) -> String {
    let (major, minor) = class_id(k);
    let burst = (burst.ceil() as u64).max(QUANTUM);
    format!(
        "class {verb} dev {iface} parent 1:1 classid {major:x}:{minor:x} htb rate {r} ceil {r} burst {burst} cburst {burst} quantum {QUANTUM}",
        r = bits(rate)
    )
}

/// The batch that installs the classes and filters (see the module docs).
fn setup_lines(spec: &SenderSpec) -> Vec<String> {
    let (dev, line) = (&spec.iface, spec.line_rate);
    let burst = spec.config.burst(line);
    let mut lines = vec![
        format!("qdisc add dev {dev} root handle 1: htb default 2"),
        format!(
            "class add dev {dev} parent 1: classid 1:1 htb rate {r} ceil {r} quantum {QUANTUM}",
            r = bits(line)
        ),
        format!(
            "class add dev {dev} parent 1:1 classid 1:2 htb rate {r} ceil {r} quantum {QUANTUM}",
            r = bits(line)
        ),
    ];
    for (k, dest) in spec.destinations.iter().enumerate() {
        let (major, minor) = class_id(k);
        lines.push(class_line("add", dev, k, line, burst));
        lines.push(format!(
            "qdisc add dev {dev} parent {major:x}:{minor:x} handle {minor:x}: bfifo limit {}",
            spec.queue_bytes
        ));
        lines.push(format!(
            "filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip dst {dest}/32 flowid {major:x}:{minor:x}"
        ));
    }
    lines
}

/// One long-running `tc -force -batch -` in the namespace, fed a line per change; its error
/// output is counted and logged.
struct TcPipe {
    child: Child,
    stdin: Option<ChildStdin>,
    errors: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl TcPipe {
    fn start(spec: &SenderSpec) -> std::io::Result<TcPipe> {
        let mut child = Command::new(&spec.tc)
            .args(["-n", &spec.netns, "-force", "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // its own process group: a Ctrl-C for tailbound does not cut a change in half
            .process_group(0)
            .spawn()?;
        let errors = Arc::new(AtomicU64::new(0));
        let stderr = child.stderr.take();
        let (count, ns) = (Arc::clone(&errors), spec.netns.clone());
        let reader = std::thread::Builder::new()
            .name("eyeq-tc-stderr".into())
            .spawn(move || {
                if let Some(e) = stderr {
                    for line in BufReader::new(e).lines().map_while(Result::ok) {
                        count.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(netns = %ns, "tc: {line}");
                    }
                }
            })?;
        Ok(TcPipe {
            stdin: child.stdin.take(),
            child,
            errors,
            reader: Some(reader),
        })
    }

    fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::from(ErrorKind::BrokenPipe))?;
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()
    }

    /// Ends tc (end of input; killed if it does not exit within 5 s); its CPU time [s] and
    /// the lines it printed on its error output.
    fn finish(mut self) -> (f64, u64) {
        let cpu = process_cpu_s(self.child.id());
        self.close();
        (cpu, self.errors.load(Ordering::Relaxed))
    }

    fn close(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

impl Drop for TcPipe {
    fn drop(&mut self) {
        self.close();
    }
}

/// Deletes the agent's root qdisc (and with it its classes and filters) when dropped.
struct Installed<'a>(&'a SenderSpec);

impl Drop for Installed<'_> {
    fn drop(&mut self) {
        let line = format!("qdisc del dev {} root", self.0.iface);
        if let Err(e) = batch::run(&self.0.tc, Some(&self.0.netns), &[line], BATCH_LIMIT) {
            tracing::warn!(netns = %self.0.netns, error = ?e, "cannot delete the EyeQ sender's qdisc");
        }
    }
}

fn run(
    spec: &SenderSpec,
    stop: &AtomicBool,
    ready: &mpsc::Sender<()>,
) -> Result<SenderReport, EyeqAgentError> {
    netns::enter(&spec.netns)?;
    let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, spec.port)).map_err(io_error(
        "sender",
        &spec.netns,
        &format!("feedback socket on port {}", spec.port),
    ))?;
    sock.set_read_timeout(Some(POLL)).map_err(io_error(
        "sender",
        &spec.netns,
        "feedback socket",
    ))?;
    batch::run(&spec.tc, Some(&spec.netns), &setup_lines(spec), BATCH_LIMIT).map_err(|e| {
        EyeqAgentError::Tc {
            netns: spec.netns.clone(),
            message: format!(
                "installing the per-destination classes on {} (it must have no root qdisc): {e:?}",
                spec.iface
            ),
        }
    })?;
    let qdisc = Installed(spec);
    let mut tc =
        TcPipe::start(spec).map_err(io_error("sender", &spec.netns, "starting tc -batch"))?;
    let cpu0 = thread_cpu_s();
    let epoch = Instant::now();
    let _ = ready.send(());
    let mut sender = Sender::<Ipv4Addr>::new(spec.config)?;
    let n = spec.destinations.len();
    // the limit each class is at; None = bypassed (line rate)
    let mut installed: Vec<Option<f64>> = vec![None; n];
    let mut report = SenderReport {
        feedback: 0,
        invalid: 0,
        class_changes: 0,
        tc_errors: 0,
        lowest_rate: vec![None; n],
        elapsed_s: 0.0,
        cpu_s: 0.0,
    };
    let mut buf = [0u8; 64];
    let result = loop {
        if stop.load(Ordering::Relaxed) || epoch.elapsed() >= spec.max_duration {
            break Ok(());
        }
        let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        match sock.recv(&mut buf) {
            Ok(len) => match wire::decode(&buf[..len]) {
                Ok(m) if spec.destinations.contains(&m.dest) => {
                    if sender.on_feedback(now, m.dest, m.feedback).is_ok() {
                        report.feedback += 1;
                    } else {
                        report.invalid += 1;
                    }
                }
                _ => report.invalid += 1,
            },
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => break Err(io_error("sender", &spec.netns, "reading feedback")(e)),
        }
        for (k, dest) in spec.destinations.iter().enumerate() {
            let limit = match spec.limits {
                SenderLimits::Feedback => sender.limit(now, dest),
                SenderLimits::Fixed { rate } => Some(rate),
                SenderLimits::Bypass => None,
            }
            .map(|r| r.min(spec.line_rate));
            let changed = match (installed[k], limit) {
                (None, None) => false,
                (Some(a), Some(b)) => (a - b).abs() > CHANGE * a,
                _ => true,
            };
            if changed {
                let want = limit.unwrap_or(spec.line_rate);
                let line = class_line("change", &spec.iface, k, want, spec.config.burst(want));
                if let Err(e) = tc.send(&line) {
                    return Err(io_error("sender", &spec.netns, "writing to tc -batch")(e));
                }
                installed[k] = limit;
                report.class_changes += 1;
                if let Some(l) = limit {
                    let low = report.lowest_rate[k].get_or_insert(l);
                    *low = low.min(l);
                }
            }
        }
    };
    report.elapsed_s = epoch.elapsed().as_secs_f64();
    let thread_cpu = thread_cpu_s() - cpu0;
    let (tc_cpu, tc_errors) = tc.finish();
    report.cpu_s = thread_cpu + tc_cpu;
    report.tc_errors = tc_errors;
    drop(qdisc);
    result.map(|()| report)
}
