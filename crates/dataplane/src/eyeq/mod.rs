//! EyeQ on real hosts: agents that drive `tailbound_shaping::eyeq`'s sans-IO
//! [`Receiver`](tailbound_shaping::eyeq::Receiver) and
//! [`Sender`](tailbound_shaping::eyeq::Sender) on real time inside network namespaces, and carry
//! their [`Feedback`](tailbound_shaping::eyeq::Feedback) in UDP datagrams ([`wire`]).
//!
//! * [`ReceiverAgent`] (on a receiving host): sees every IPv4 packet that arrives on the host's
//!   interface through an `AF_PACKET` socket (after the switch port's shaper, as EyeQ's
//!   receive path sees what its NIC delivers), attributes it to a sender (source address) and
//!   a tenant (destination address: each tenant VM has its own), and hands it to the
//!   `Receiver` with its arrival time (the kernel's `SO_TIMESTAMPNS` stamp, so that a batch
//!   read late by a descheduled agent still falls into the intervals it arrived in) and wire
//!   length. The feedback the `Receiver` returns
//!   goes at once to the sender's agent ([`wire::PORT`]). The same counts, binned, are the
//!   agent's report of what each tenant received (the experiments' throughput series). With
//!   a [`PortQueue`] it also stands in for EyeQ's ECN-marking switch: it reads the switch
//!   port's backlog over rtnetlink every millisecond and counts the packets delivered while
//!   it is above the marking threshold as marked (this kernel has no marking qdisc).
//! * [`SenderAgent`] (on a sending host): puts an HTB class per destination on the host's
//!   egress (u32 filter on the destination address), at the host's line rate while bypassed,
//!   and changes its rate and ceil to the limit in force (`tc class change` through one
//!   long-running `tc -batch -` in the namespace) whenever feedback or `hold` changes it. The
//!   limiter is the kernel's, so it limits every application on the host: TCP, the UDP blaster,
//!   memcached clients.
//!
//! Why these mechanisms: a packet socket counts each packet as it is delivered, with no
//! kernel module and from user space, so the `Receiver` gets EyeQ's per-packet input; an HTB
//! class is a token bucket per destination in front of the NIC, which is what EyeQ's sender
//! rate limiter is. What cannot carry over is EyeQ's 200 µs period: a user-space agent
//! woken by the scheduler of a shared machine and a `tc` round trip per change sustain
//! about 10 ms, so the experiments scale every EyeQ time constant by the same factor
//! (`EyeqConfig::interval_ns` and the rest are the caller's).
//!
//! What lives elsewhere: the congestion detector, rate controller and limiters
//! (`tailbound-shaping`), the namespaces ([`crate::netns`]), the experiment
//! (`tailbound-experiments::eyeq`).
//!
//! Both agents run on one thread each, stop by themselves at their deadline or when stopped,
//! and report the CPU time their thread used (`/proc/thread-self/schedstat`; the sender's
//! includes its `tc` process, from `/proc/<pid>/stat`).

mod receiver;
mod sender;
pub mod wire;

pub use receiver::{PortQueue, ReceiverAgent, ReceiverReport, ReceiverSpec};
pub use sender::{class_id, SenderAgent, SenderLimits, SenderReport, SenderSpec};

use crate::error::NetnsError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use tailbound_shaping::eyeq::EyeqError;

/// Why an EyeQ agent could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EyeqAgentError {
    #[error(transparent)]
    Netns(#[from] NetnsError),
    #[error("EyeQ: {0}")]
    Config(#[from] EyeqError),
    #[error("EyeQ {agent} agent in {netns}: {what}: {source}")]
    Io {
        agent: &'static str,
        netns: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("EyeQ sender agent in {netns}: tc: {message}")]
    Tc { netns: String, message: String },
    #[error("EyeQ {agent} agent: {message}; expected {expected}")]
    Spec {
        agent: &'static str,
        message: String,
        expected: &'static str,
    },
    #[error("EyeQ {0} agent's thread panicked")]
    Panicked(&'static str),
}

/// An agent's thread: started by [`AgentThread::spawn`], which returns once the agent says
/// it is ready (or failed); stopped and joined by [`AgentThread::stop`] or on drop.
#[derive(Debug)]
struct AgentThread<R> {
    agent: &'static str,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<R, EyeqAgentError>>>,
}

impl<R: Send + 'static> AgentThread<R> {
    /// Runs `body(stop, ready)` on a new thread; returns what it sent on `ready`, or the
    /// error it ended with before that.
    fn spawn<S: Send + 'static>(
        agent: &'static str,
        body: impl FnOnce(&AtomicBool, &mpsc::Sender<S>) -> Result<R, EyeqAgentError> + Send + 'static,
    ) -> Result<(AgentThread<R>, S), EyeqAgentError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("eyeq-{agent}"))
            .spawn(move || body(&flag, &tx))
            .map_err(|source| EyeqAgentError::Io {
                agent,
                netns: String::new(),
                what: "starting its thread".into(),
                source,
            })?;
        match rx.recv() {
            Ok(ready) => Ok((
                AgentThread {
                    agent,
                    stop,
                    thread: Some(thread),
                },
                ready,
            )),
            // the thread ended before it was ready: its error
            Err(_) => Err(thread
                .join()
                .map_err(|_| EyeqAgentError::Panicked(agent))?
                .err()
                .unwrap_or(EyeqAgentError::Panicked(agent))),
        }
    }

    /// Stops the agent and returns its result.
    fn stop(mut self) -> Result<R, EyeqAgentError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| EyeqAgentError::Panicked(self.agent))?,
            None => Err(EyeqAgentError::Panicked(self.agent)),
        }
    }
}

impl<R> Drop for AgentThread<R> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The error of an agent's I/O on `what`, made only when one happens.
fn io_error<'a>(
    agent: &'static str,
    netns: &'a str,
    what: &'a str,
) -> impl FnOnce(std::io::Error) -> EyeqAgentError + 'a {
    move |source| EyeqAgentError::Io {
        agent,
        netns: netns.to_string(),
        what: what.to_string(),
        source,
    }
}

/// CPU time the calling thread has used [s] (`/proc/thread-self/schedstat`), 0 when unknown.
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| parse_schedstat(&s))
        .unwrap_or(0.0)
}

/// The first field of a schedstat line: time on the CPU [ns], as seconds.
fn parse_schedstat(s: &str) -> Option<f64> {
    s.split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()
        .map(|ns| ns as f64 / 1e9)
}

/// CPU time (user + system) process `pid` has used [s] (`/proc/<pid>/stat`), 0 when unknown.
fn process_cpu_s(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| parse_stat_cpu(&s))
        .unwrap_or(0.0)
}

/// utime + stime from a `/proc/<pid>/stat` line [s] (fields 14 and 15, after the command's
/// parenthesis).
fn parse_stat_cpu(s: &str) -> Option<f64> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (u, s) = (
        f.get(11)?.parse::<u64>().ok()?,
        f.get(12)?.parse::<u64>().ok()?,
    );
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| (u + s) as f64 / hz as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_are_read_from_proc_lines() {
        assert_eq!(parse_schedstat("2500000000 12 3\n"), Some(2.5));
        assert_eq!(parse_schedstat(""), None);
        // pid (comm with ) inside) state ppid ... utime=30 stime=20 at fields 14, 15
        let line = "42 (tc (x)) S 1 42 42 0 -1 4194560 100 0 0 0 30 20 0 0 20 0 1 0";
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        assert_eq!(parse_stat_cpu(line), Some(50.0 / hz));
        assert_eq!(parse_stat_cpu("42 (tc) S 1"), None);
        assert!(thread_cpu_s() >= 0.0);
    }
}
