//! Linux tc enforcement on real interfaces: read an interface's configuration (over netlink,
//! [`netlink`]), change it to a plan of `tailbound-enforce-plan` in one `tc -batch` process
//! ([`batch`]), read it back and check it, and remember what it was before ([`record`]).
//!
//! What the planner decides (classes, filters, ids) lives in `tailbound-enforce-plan`; the
//! `tailbound enforce` command in the CLI. Here:
//!
//! * [`Enforcer::apply`]: per host, reads every interface first (a missing namespace or
//!   interface fails before anything changes), applies each interface's diff, verifies it, and
//!   writes the records only when the whole host is at the plan. A failure half-way rolls the
//!   host back to the configuration it had (the failed interface and those already changed)
//!   and the error says whether the host is at its old configuration or, if even the rollback
//!   failed, that its state is unknown.
//! * [`Enforcer::status`]: the tc commands that would bring each interface to the plan.
//! * [`Enforcer::remove`]: each interface back to what it had before the first apply.
//! * [`Enforcer::apply_interface`]: one interface to one plan; with
//!   [`tailbound_enforce_plan::link_plan`] this is how a testbed shapes a link (zero tenants,
//!   the link rate).
//! * [`read_state`]: the configuration of one interface.
//!
//! Limits: IPv4 u32 filters and HTB only; an interface whose root qdisc tailbound did not
//! create must be HTB (its classes and u32 filters are restored by remove) or the kernel's
//! default, otherwise apply refuses it. Every change to an interface goes through its lock,
//! so two enforcers never interleave on it.

pub mod batch;
pub mod netlink;
pub mod record;

use crate::error::TcError;
use crate::netns;
use record::{Identity, Record, Records};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailbound_enforce_plan::diff::Effect;
use tailbound_enforce_plan::{
    diff, HostMap, HostPlan, InterfacePlan, PriorAllocations, TcOp, TcState,
};

/// Where enforcement records live unless told otherwise.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/tailbound/enforce";
/// How long one `tc -batch` may take before it is killed.
const BATCH_LIMIT: Duration = Duration::from_secs(120);
/// How long to wait for another enforcer's lock on an interface.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// One interface of one host.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub host: &'a str,
    /// the host's network namespace; `None`: this process's
    pub netns: Option<&'a str>,
    pub interface: &'a str,
}

/// What an apply or remove did to one interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfaceReport {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    pub interface: String,
    /// tc commands run; 0 when the interface already was as planned
    pub changes: usize,
    pub added: usize,
    pub changed: usize,
    pub deleted: usize,
    /// the commands, as `tc -batch` lines
    pub commands: Vec<String>,
    /// why nothing was done, when nothing could be (remove of an interface never applied)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// time to read, change and read back [s]
    pub seconds: f64,
}

/// How far one interface is from its plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfaceStatus {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    pub interface: String,
    /// whether tailbound has applied a plan here (it has a record)
    pub applied: bool,
    /// the tc commands that would bring the interface to the plan; empty: no drift
    pub drift: Vec<String>,
}

/// Applies, checks and removes plans; remembers interfaces in a state directory.
#[derive(Debug, Clone)]
pub struct Enforcer {
    tc: PathBuf,
    records: Records,
    inject: Option<Arc<Injection>>,
}

/// A command the kernel rejects, put into one batch (tests of the rollback).
#[derive(Debug)]
struct Injection {
    batch: usize,
    after: usize,
    seen: AtomicUsize,
}

/// One interface's part of a host's change.
struct Step<'a> {
    target: Target<'a>,
    before: TcState,
    desired: TcState,
    /// the record to write when the host succeeds (`None`: delete it)
    record: Option<Record>,
    /// the record as it was (unchanged records are not written again)
    previous: Option<Record>,
}

/// How a failed change ended.
enum Failure {
    /// nothing ran or the interface is back at its configuration before the change
    Restored(TcError),
    /// even the rollback failed
    Unknown(TcError),
}

impl Enforcer {
    /// An enforcer that runs `tc` from the `PATH` and keeps its records in `state_dir`.
    pub fn new(state_dir: impl Into<PathBuf>) -> Enforcer {
        Enforcer {
            tc: PathBuf::from("tc"),
            records: Records::new(state_dir),
            inject: None,
        }
    }

    /// Runs this `tc` program instead.
    pub fn with_tc(mut self, program: impl Into<PathBuf>) -> Enforcer {
        self.tc = program.into();
        self
    }

    /// Tests only: the `batch`-th `tc -batch` this enforcer runs (0 = the first) gets, after
    /// `after` commands, one the kernel rejects, so the rollback runs against the real kernel.
    #[doc(hidden)]
    pub fn with_failure(mut self, batch: usize, after: usize) -> Enforcer {
        self.inject = Some(Arc::new(Injection {
            batch,
            after,
            seen: AtomicUsize::new(0),
        }));
        self
    }

    pub fn state_dir(&self) -> &Path {
        self.records.dir()
    }

    /// The ids of the last applied plan of every interface of the map's hosts (or `host`),
    /// for [`tailbound_enforce_plan::plan`]. Records of interfaces that were re-created since
    /// (another index or namespace) are ignored.
    pub fn prior(&self, map: &HostMap, host: Option<&str>) -> Result<PriorAllocations, TcError> {
        let mut prior = PriorAllocations::new();
        for h in map
            .hosts
            .iter()
            .filter(|h| host.is_none_or(|n| n == h.name))
        {
            for i in &h.interfaces {
                let Some(rec) = self.records.load(&h.name, &i.name)? else {
                    continue;
                };
                let t = Target {
                    host: &h.name,
                    netns: h.netns.as_deref(),
                    interface: &i.name,
                };
                // an interface that does not exist has no current ids; apply reports it
                if identity(t).is_ok_and(|id| id == rec.identity) {
                    prior.insert((h.name.clone(), i.name.clone()), rec.allocation);
                }
            }
        }
        Ok(prior)
    }

    /// Brings every interface of `plan`'s host to its plan, or leaves the host as it was.
    pub fn apply(&self, plan: &HostPlan) -> Result<Vec<InterfaceReport>, TcError> {
        let locks = plan
            .interfaces
            .iter()
            .map(|i| self.records.lock(&plan.host, &i.interface, LOCK_WAIT))
            .collect::<Result<Vec<_>, _>>()?;
        let mut steps = Vec::with_capacity(plan.interfaces.len());
        for i in &plan.interfaces {
            let target = Target {
                host: &plan.host,
                netns: plan.netns.as_deref(),
                interface: &i.interface,
            };
            steps.push(self.apply_step(target, i)?);
        }
        let reports = self.transition(steps);
        drop(locks);
        reports
    }

    /// Brings one interface to `plan` (a host of one interface).
    pub fn apply_interface(
        &self,
        target: Target<'_>,
        plan: &InterfacePlan,
    ) -> Result<InterfaceReport, TcError> {
        let _lock = self
            .records
            .lock(target.host, target.interface, LOCK_WAIT)?;
        let step = self.apply_step(target, plan)?;
        let mut reports = self.transition(vec![step])?;
        Ok(reports.remove(0))
    }

    fn apply_step<'a>(
        &self,
        target: Target<'a>,
        plan: &InterfacePlan,
    ) -> Result<Step<'a>, TcError> {
        let (before, identity) = read(target)?;
        let previous = self
            .records
            .load(target.host, target.interface)?
            .filter(|r| r.identity == identity);
        let original = match &previous {
            Some(r) => r.original.clone(),
            None => {
                check_restorable(target, &before)?;
                before.clone()
            }
        };
        Ok(Step {
            target,
            before,
            desired: plan.state.clone(),
            record: Some(Record::new(
                target.host,
                target.interface,
                identity,
                original,
                plan.allocation.clone(),
            )),
            previous,
        })
    }

    /// The drift of every interface of `plan`'s host from its plan.
    pub fn status(&self, plan: &HostPlan) -> Result<Vec<InterfaceStatus>, TcError> {
        plan.interfaces
            .iter()
            .map(|i| {
                let target = Target {
                    host: &plan.host,
                    netns: plan.netns.as_deref(),
                    interface: &i.interface,
                };
                let (current, identity) = read(target)?;
                let applied = self
                    .records
                    .load(target.host, target.interface)?
                    .is_some_and(|r| r.identity == identity);
                Ok(InterfaceStatus {
                    host: plan.host.clone(),
                    netns: plan.netns.clone(),
                    interface: i.interface.clone(),
                    applied,
                    drift: diff(&current, &i.state)
                        .iter()
                        .map(|o| o.line(&i.interface))
                        .collect(),
                })
            })
            .collect()
    }

    /// Returns every interface of `host` (in `map`) to what it had before the first apply,
    /// and forgets it. Interfaces never applied, or re-created since, are left alone.
    pub fn remove(&self, map: &HostMap, host: &str) -> Result<Vec<InterfaceReport>, TcError> {
        let Some(h) = map.host(host) else {
            return Ok(Vec::new());
        };
        let locks = h
            .interfaces
            .iter()
            .map(|i| self.records.lock(&h.name, &i.name, LOCK_WAIT))
            .collect::<Result<Vec<_>, _>>()?;
        let mut steps = Vec::new();
        let mut untouched = Vec::new();
        for i in &h.interfaces {
            let target = Target {
                host: &h.name,
                netns: h.netns.as_deref(),
                interface: &i.name,
            };
            let note = |n: &str| InterfaceReport {
                host: h.name.clone(),
                netns: h.netns.clone(),
                interface: i.name.clone(),
                changes: 0,
                added: 0,
                changed: 0,
                deleted: 0,
                commands: Vec::new(),
                note: Some(n.to_string()),
                seconds: 0.0,
            };
            let Some(rec) = self.records.load(&h.name, &i.name)? else {
                untouched.push(note(
                    "tailbound has not applied a plan here; nothing to remove",
                ));
                continue;
            };
            let (before, identity) = match read(target) {
                Ok(r) => r,
                Err(TcError::NoInterface { .. } | TcError::Netns { .. }) => {
                    self.records.delete(&h.name, &i.name)?;
                    untouched.push(note("the interface is gone; its record is deleted"));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if identity != rec.identity {
                self.records.delete(&h.name, &i.name)?;
                untouched.push(note(
                    "the interface was created again since the apply; its record is deleted",
                ));
                continue;
            }
            steps.push(Step {
                target,
                before,
                desired: rec.original.clone(),
                record: None,
                previous: Some(rec),
            });
        }
        let mut reports = self.transition(steps)?;
        drop(locks);
        reports.extend(untouched);
        Ok(reports)
    }

    /// Runs the steps of one host; on a failure, rolls back the steps already done.
    fn transition(&self, steps: Vec<Step<'_>>) -> Result<Vec<InterfaceReport>, TcError> {
        let mut reports = Vec::with_capacity(steps.len());
        for (k, s) in steps.iter().enumerate() {
            let start = Instant::now();
            match self.reach(s.target, &s.before, &s.desired) {
                Ok(ops) => reports.push(report(s.target, &ops, start.elapsed())),
                Err(failure) => {
                    let (mut err, mut known) = match failure {
                        Failure::Restored(e) => (e, true),
                        Failure::Unknown(e) => (e, false),
                    };
                    let mut restored = Vec::new();
                    for done in steps[..k].iter().rev() {
                        match self.reach(done.target, &done.desired, &done.before) {
                            Ok(_) => restored.push(done.target.interface.to_string()),
                            Err(_) => known = false,
                        }
                    }
                    let state = if known {
                        let also = if restored.is_empty() {
                            String::new()
                        } else {
                            format!(" (interfaces {} rolled back)", restored.join(", "))
                        };
                        format!("host {:?} is at its old configuration{also}", s.target.host)
                    } else {
                        format!(
                            "host {:?} is in an unknown state: the rollback failed too; see `tailbound enforce status`",
                            s.target.host
                        )
                    };
                    set_state(&mut err, state);
                    return Err(err);
                }
            }
        }
        // the host is at the plan: now the records say so
        for s in &steps {
            match &s.record {
                Some(r) => self.records.save(r, s.previous.as_ref())?,
                None => self.records.delete(s.target.host, s.target.interface)?,
            }
        }
        Ok(reports)
    }

    /// Changes one interface from `before` to `desired`; on failure back to `before`.
    fn reach(
        &self,
        t: Target<'_>,
        before: &TcState,
        desired: &TcState,
    ) -> Result<Vec<TcOp>, Failure> {
        let ops = diff(before, desired);
        if ops.is_empty() {
            return Ok(ops);
        }
        let failure = match self.run(t, &ops) {
            Ok(()) => match read(t) {
                Ok((now, _)) => {
                    let left = diff(&now, desired);
                    if left.is_empty() {
                        return Ok(ops);
                    }
                    TcError::Verify {
                        host: t.host.into(),
                        interface: t.interface.into(),
                        difference: summarize(&left, t.interface),
                        state: String::new(),
                    }
                }
                Err(e) => e,
            },
            Err(e @ TcError::Spawn { .. }) => return Err(Failure::Restored(e)),
            Err(e) => e,
        };
        // back to `before`: object by object, else from scratch
        let restored = read(t).is_ok_and(|(now, _)| {
            let back = diff(&now, before);
            (back.is_empty() || self.run(t, &back).is_ok())
                && read(t).is_ok_and(|(now, _)| diff(&now, before).is_empty())
        }) || {
            let mut scratch = vec![TcOp::DelRoot];
            scratch.extend(diff(&TcState::default(), before));
            let _ = self.run(t, &scratch[..1]);
            (scratch.len() == 1 || self.run(t, &scratch[1..]).is_ok())
                && read(t).is_ok_and(|(now, _)| diff(&now, before).is_empty())
        };
        Err(if restored {
            Failure::Restored(failure)
        } else {
            Failure::Unknown(failure)
        })
    }

    /// Runs `ops` as one batch.
    fn run(&self, t: Target<'_>, ops: &[TcOp]) -> Result<(), TcError> {
        let mut lines: Vec<String> = ops.iter().map(|o| o.line(t.interface)).collect();
        if let Some(inj) = self
            .inject
            .as_ref()
            .filter(|i| i.seen.fetch_add(1, Ordering::SeqCst) == i.batch)
        {
            let at = inj.after.min(lines.len());
            lines.insert(
                at,
                format!(
                    "class change dev {} classid 7fff:ffff htb rate 1bps",
                    t.interface
                ),
            );
        }
        tracing::debug!(
            host = t.host,
            interface = t.interface,
            commands = lines.len(),
            "tc -batch"
        );
        // spawned from a thread inside the namespace, tc inherits it: no `tc -n`, which
        // unshares a mount namespace and remounts /sys for every call
        let outcome = in_netns(t, || Ok(batch::run(&self.tc, None, &lines, BATCH_LIMIT)))?;
        outcome.map_err(|e| match e {
            batch::BatchError::Spawn(source) => TcError::Spawn {
                program: self.tc.display().to_string(),
                source,
            },
            batch::BatchError::Failed { line, mut message } => TcError::Failed {
                host: t.host.into(),
                interface: t.interface.into(),
                command: line
                    .and_then(|l| lines.get(l.wrapping_sub(1)))
                    .cloned()
                    .unwrap_or_else(|| "-batch".into()),
                message: {
                    if message.contains("Operation not permitted") {
                        message.push_str(" (tc needs root: CAP_NET_ADMIN)");
                    }
                    message
                },
                state: String::new(),
            },
            batch::BatchError::Timeout(limit) => TcError::Timeout {
                host: t.host.into(),
                interface: t.interface.into(),
                seconds: limit.as_secs(),
                state: String::new(),
            },
        })
    }
}

fn set_state(e: &mut TcError, to: String) {
    match e {
        TcError::Failed { state, .. }
        | TcError::Verify { state, .. }
        | TcError::Timeout { state, .. } => *state = to,
        _ => {}
    }
}

fn summarize(ops: &[TcOp], dev: &str) -> String {
    let first = ops.first().map(|o| o.line(dev)).unwrap_or_default();
    if ops.len() == 1 {
        format!("still needed: {first}")
    } else {
        format!("{} commands still needed, the first: {first}", ops.len())
    }
}

fn report(t: Target<'_>, ops: &[TcOp], took: Duration) -> InterfaceReport {
    let count = |e| ops.iter().filter(|o| o.effect() == e).count();
    InterfaceReport {
        host: t.host.into(),
        netns: t.netns.map(String::from),
        interface: t.interface.into(),
        changes: ops.len(),
        added: count(Effect::Add),
        changed: count(Effect::Change),
        deleted: count(Effect::Delete),
        commands: ops.iter().map(|o| o.line(t.interface)).collect(),
        note: None,
        seconds: took.as_secs_f64(),
    }
}

/// An interface whose configuration remove could not restore is left alone.
fn check_restorable(t: Target<'_>, s: &TcState) -> Result<(), TcError> {
    if let Some(q) = s
        .qdiscs
        .iter()
        .find(|q| !q.is_implicit() && q.kind != "htb")
    {
        return Err(TcError::Foreign {
            host: t.host.into(),
            interface: t.interface.into(),
            kind: q.kind.clone(),
            handle: q.handle,
        });
    }
    Ok(())
}

/// The tc configuration of one interface, read over netlink (inside its namespace).
pub fn read_state(t: Target<'_>) -> Result<TcState, TcError> {
    read(t).map(|(s, _)| s)
}

/// What the kernel counted for every HTB class of one interface (bytes and packets sent,
/// drops): how tests and operators see which class traffic went through.
pub fn read_stats(t: Target<'_>) -> Result<Vec<netlink::ClassStats>, TcError> {
    in_netns(t, || {
        let ifindex = ifindex_here(t)?;
        let sock = netlink::Socket::open().map_err(read_err(t))?;
        netlink::read_stats(&sock, ifindex).map_err(read_err(t))
    })
}

/// Reads an interface's state and identity.
fn read(t: Target<'_>) -> Result<(TcState, Identity), TcError> {
    in_netns(t, || {
        let ifindex = ifindex_here(t)?;
        let sock = netlink::Socket::open().map_err(read_err(t))?;
        let state = netlink::read(&sock, ifindex).map_err(read_err(t))?;
        Ok((state, identity_here(t, ifindex)?))
    })
}

/// Where an interface is (its index and namespace), without reading its configuration.
fn identity(t: Target<'_>) -> Result<Identity, TcError> {
    in_netns(t, || identity_here(t, ifindex_here(t)?))
}

/// The interface's index in the calling thread's namespace.
fn ifindex_here(t: Target<'_>) -> Result<u32, TcError> {
    let name = CString::new(t.interface).map_err(|_| no_interface(t))?;
    // SAFETY: a valid NUL-terminated name.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(no_interface(t)),
        i => Ok(i),
    }
}

fn identity_here(t: Target<'_>, ifindex: u32) -> Result<Identity, TcError> {
    let netns_inode = std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| m.ino())
        .map_err(read_err(t))?;
    Ok(Identity {
        ifindex,
        netns_inode,
    })
}

fn read_err(t: Target<'_>) -> impl Fn(std::io::Error) -> TcError + '_ {
    move |source| TcError::Read {
        host: t.host.into(),
        interface: t.interface.into(),
        source,
    }
}

fn no_interface(t: Target<'_>) -> TcError {
    TcError::NoInterface {
        host: t.host.into(),
        interface: t.interface.into(),
        netns: t.netns.map(String::from),
    }
}

/// Runs `f` on a thread inside the target's namespace (this thread when there is none).
fn in_netns<T: Send>(
    t: Target<'_>,
    f: impl FnOnce() -> Result<T, TcError> + Send,
) -> Result<T, TcError> {
    let Some(ns) = t.netns else {
        return f();
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            netns::enter(ns).map_err(|source| TcError::Netns {
                host: t.host.into(),
                source,
            })?;
            f()
        })
        .join()
        .unwrap_or_else(|p| {
            Err(TcError::Panicked(
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
            ))
        })
    })
}

/// Reads and validates a host map file (TOML, or JSON by its `.json` name).
pub fn read_host_map(path: &Path) -> Result<HostMap, crate::error::HostMapFileError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| crate::error::HostMapFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(HostMap::parse(&text, &path.display().to_string())?)
}

/// From now on SIGINT, SIGTERM and SIGHUP only set the returned flag: a change in progress
/// finishes (or rolls back) before the caller looks at it and stops. `tc` itself runs in its
/// own process group, so a terminal's Ctrl-C does not reach it either.
pub fn defer_signals() -> std::io::Result<Arc<std::sync::atomic::AtomicBool>> {
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(flag)
}
