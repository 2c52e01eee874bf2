//! `tailbound enforce plan|apply|status|remove`: put a policy's decisions onto hosts with Linux
//! tc. The planning lives in `tailbound-enforce-plan`, reading and changing interfaces in
//! `tailbound-dataplane` (`tc`); this module parses, calls and prints.

use super::print_json;
use super::simulate::read_decisions;
use crate::report::{EnforceReport, EnforceStatusReport};
use crate::table::{render, si};
use crate::Outcome;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use tailbound_dataplane::tc::{self, Enforcer, InterfaceReport};
use tailbound_enforce_plan::state::{ClassRole, FilterRole};
use tailbound_enforce_plan::{diff, plan, HostMap, Plan, PlanOptions, PriorAllocations, TcState};

#[derive(Debug, Subcommand)]
pub enum EnforceCommand {
    /// The tc configuration (HTB classes, u32 filters) every host interface needs for the
    /// decisions; changes nothing
    Plan(PlanArgs),
    /// Bring every host interface to the plan: read its state, change only what differs in
    /// one tc batch, read it back; a failure half-way leaves the host as it was
    Apply(ApplyArgs),
    /// How far each host interface is from the plan (exit 1 when any differs)
    Status(ApplyArgs),
    /// Return every host interface to what it had before tailbound's first apply
    Remove(RemoveArgs),
}

/// What every enforce command that plans takes.
#[derive(Debug, Args)]
pub struct Common {
    /// decisions (JSON) of `tailbound admit --decisions-out` or `tailbound place`
    pub decisions: PathBuf,
    /// host map (TOML, or JSON by its name): hosts, namespaces, interfaces, tenants' traffic
    #[arg(long, value_name = "MAP")]
    pub hosts: PathBuf,
    /// only this host of the map
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// what leaves do beyond their buckets (default: what the decisions say): wait, or borrow
    /// spare link capacity after every tenant's conforming traffic
    #[arg(long, value_name = "wait|best-effort")]
    pub excess: Option<tailbound_model::Excess>,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub common: Common,
    /// also print the tc batch that builds each interface from the kernel's default
    #[arg(long)]
    pub commands: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub common: Common,
    /// where tailbound remembers each interface's configuration before the first apply
    #[arg(long, value_name = "DIR", default_value = tc::DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// host map (TOML, or JSON by its name)
    #[arg(long, value_name = "MAP")]
    pub hosts: PathBuf,
    /// only this host of the map
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// where tailbound remembers each interface's configuration before the first apply
    #[arg(long, value_name = "DIR", default_value = tc::DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(c: EnforceCommand) -> anyhow::Result<Outcome> {
    match c {
        EnforceCommand::Plan(a) => run_plan(a),
        EnforceCommand::Apply(a) => run_apply(a),
        EnforceCommand::Status(a) => run_status(a),
        EnforceCommand::Remove(a) => run_remove(a),
    }
}

fn read_map(path: &std::path::Path) -> anyhow::Result<HostMap> {
    Ok(tc::read_host_map(path)?)
}

/// Reads the inputs and plans (with the ids of `prior`).
fn make_plan(
    c: &Common,
    prior: impl FnOnce(&HostMap) -> anyhow::Result<PriorAllocations>,
) -> anyhow::Result<Plan> {
    let decisions = read_decisions(&c.decisions)?;
    let map = read_map(&c.hosts)?;
    let prior = prior(&map)?;
    let opts = PlanOptions {
        excess: c.excess,
        host: c.host.clone(),
    };
    plan(&decisions, &map, &opts, &prior).with_context(|| {
        format!(
            "cannot enforce {} on the hosts of {}",
            c.decisions.display(),
            c.hosts.display()
        )
    })
}

fn run_plan(a: PlanArgs) -> anyhow::Result<Outcome> {
    let p = make_plan(&a.common, |_| Ok(PriorAllocations::new()))?;
    if a.common.json {
        print_json(&p)?;
        return Ok(Outcome::Ok);
    }
    crate::output::print(&plan_text(&p, a.commands))?;
    Ok(Outcome::Ok)
}

/// A rate as networks quote it: `1Gbit/s`.
fn rate_cell(bytes_per_s: u64) -> String {
    format!("{}bit/s", si(bytes_per_s as f64 * 8.0))
}

/// The classes and filters of every interface, as tables.
fn plan_text(p: &Plan, commands: bool) -> String {
    let mut out = format!(
        "decisions of {}; excess {}\n",
        if p.policy.is_empty() { "?" } else { &p.policy },
        match p.excess {
            tailbound_model::Excess::Wait => "waits",
            tailbound_model::Excess::BestEffort => "borrows (best effort)",
        }
    );
    for h in &p.hosts {
        for i in &h.interfaces {
            out.push_str(&format!(
                "\nhost {}{} interface {}, link {}\n",
                h.host,
                h.netns
                    .as_ref()
                    .map(|n| format!(" (netns {n})"))
                    .unwrap_or_default(),
                i.interface,
                rate_cell(i.link_bytes_per_s)
            ));
            let rows: Vec<Vec<String>> = i
                .state
                .classes
                .iter()
                .map(|c| {
                    vec![
                        c.id.to_string(),
                        c.parent
                            .map_or_else(|| format!("{:x}:", c.id.major), |p| p.to_string()),
                        c.serves.as_ref().map(class_role).unwrap_or_default(),
                        rate_cell(c.rate_bytes_per_s),
                        rate_cell(c.ceil_bytes_per_s),
                        format!("{} B", c.burst_bytes),
                        c.prio.to_string(),
                    ]
                })
                .collect();
            out.push_str(&render(
                &["class", "parent", "serves", "rate", "ceil", "burst", "prio"],
                &rows,
            ));
            if !i.state.filters.is_empty() {
                let rows: Vec<Vec<String>> = i
                    .state
                    .filters
                    .iter()
                    .map(|f| {
                        vec![
                            format!("{:x}: {}", f.qdisc, f.handle),
                            f.flowid.to_string(),
                            f.serves.as_ref().map(filter_role).unwrap_or_default(),
                            f.matches
                                .as_ref()
                                .map(|m| serde_json::to_string(m).unwrap_or_default())
                                .unwrap_or_default(),
                        ]
                    })
                    .collect();
                out.push('\n');
                out.push_str(&render(&["filter", "to", "classifies", "match"], &rows));
            }
            if commands {
                out.push('\n');
                for op in diff(&TcState::default(), &i.state) {
                    out.push_str(&format!("tc {}\n", op.line(&i.interface)));
                }
            }
        }
    }
    if !p.unenforced.is_empty() {
        out.push_str("\nnot enforced by tc:\n");
        for u in &p.unenforced {
            out.push_str(&format!(
                "  {} {} ({}): {}\n",
                u.tenant, u.flow, u.stage, u.reason
            ));
        }
    }
    out
}

fn class_role(r: &ClassRole) -> String {
    match r {
        ClassRole::Link => "link".into(),
        ClassRole::Root { depth } => format!("levels {}-{}", 7 * depth, 7 * depth + 6),
        ClassRole::BestEffort { .. } => "best effort".into(),
        ClassRole::Level { priority } => format!("level {priority}"),
        ClassRole::Container { depth } => format!("levels from {}", 7 * depth),
        ClassRole::Flow {
            tenant,
            stage,
            bucket,
            buckets,
            ..
        } => {
            if *buckets > 1 {
                format!("{tenant} {stage} bucket {}/{buckets}", bucket + 1)
            } else {
                format!("{tenant} {stage}")
            }
        }
    }
}

fn filter_role(r: &FilterRole) -> String {
    match r {
        FilterRole::Flow { tenant, stage, .. } => format!("{tenant} {stage}"),
        FilterRole::Level { priority } => format!("DSCP of level {priority}"),
    }
}

fn reports_text(reports: &[InterfaceReport]) -> String {
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            vec![
                r.host.clone(),
                r.interface.clone(),
                r.changes.to_string(),
                r.added.to_string(),
                r.changed.to_string(),
                r.deleted.to_string(),
                format!("{:.1}", r.seconds * 1e3),
                r.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    render(
        &[
            "host",
            "interface",
            "commands",
            "added",
            "changed",
            "deleted",
            "ms",
            "note",
        ],
        &rows,
    )
}

/// Runs `f` host by host with signals deferred; stops before the next host after one.
fn host_by_host<T>(
    names: Vec<String>,
    mut f: impl FnMut(&str) -> anyhow::Result<Vec<T>>,
) -> anyhow::Result<Vec<T>> {
    let stop = tc::defer_signals().context("cannot defer signals during the change")?;
    let mut out = Vec::new();
    for (k, name) in names.iter().enumerate() {
        out.extend(f(name)?);
        if stop.load(Ordering::SeqCst) && k + 1 < names.len() {
            anyhow::bail!(
                "interrupted: hosts {} are done, {} left unchanged",
                names[..=k].join(", "),
                names[k + 1..].join(", ")
            );
        }
    }
    if stop.load(Ordering::SeqCst) {
        anyhow::bail!("interrupted after the last host; every host is done");
    }
    Ok(out)
}

fn run_apply(a: ApplyArgs) -> anyhow::Result<Outcome> {
    let e = Enforcer::new(&a.state_dir);
    let host = a.common.host.clone();
    let p = make_plan(&a.common, |m| Ok(e.prior(m, host.as_deref())?))?;
    let names = p.hosts.iter().map(|h| h.host.clone()).collect();
    let interfaces = host_by_host(names, |name| {
        let h = p
            .hosts
            .iter()
            .find(|h| h.host == name)
            .context("planned host")?;
        e.apply(h)
            .with_context(|| format!("cannot apply the plan to host {name:?}"))
    })?;
    let report = EnforceReport {
        changes: interfaces.iter().map(|r| r.changes).sum(),
        interfaces,
        unenforced: p.unenforced,
    };
    if a.common.json {
        print_json(&report)?;
    } else {
        crate::output::print(&format!(
            "{}{} tc commands\n",
            reports_text(&report.interfaces),
            report.changes
        ))?;
    }
    Ok(Outcome::Ok)
}

fn run_status(a: ApplyArgs) -> anyhow::Result<Outcome> {
    let e = Enforcer::new(&a.state_dir);
    let host = a.common.host.clone();
    let p = make_plan(&a.common, |m| Ok(e.prior(m, host.as_deref())?))?;
    let mut interfaces = Vec::new();
    for h in &p.hosts {
        interfaces.extend(
            e.status(h)
                .with_context(|| format!("cannot read host {:?}", h.host))?,
        );
    }
    let drift = interfaces.iter().any(|i| !i.drift.is_empty());
    let report = EnforceStatusReport { drift, interfaces };
    if a.common.json {
        print_json(&report)?;
    } else {
        let rows: Vec<Vec<String>> = report
            .interfaces
            .iter()
            .map(|i| {
                vec![
                    i.host.clone(),
                    i.interface.clone(),
                    if i.applied { "yes" } else { "no" }.into(),
                    i.drift.len().to_string(),
                ]
            })
            .collect();
        let mut text = render(&["host", "interface", "applied", "commands to plan"], &rows);
        for i in report.interfaces.iter().filter(|i| !i.drift.is_empty()) {
            text += &format!("\n{} {}:\n", i.host, i.interface);
            for l in &i.drift {
                text += &format!("  tc {l}\n");
            }
        }
        crate::output::print(&text)?;
    }
    Ok(if drift {
        Outcome::CheckFailed
    } else {
        Outcome::Ok
    })
}

fn run_remove(a: RemoveArgs) -> anyhow::Result<Outcome> {
    let map = read_map(&a.hosts)?;
    if let Some(h) = &a.host {
        if map.host(h).is_none() {
            anyhow::bail!(
                "unknown host {h:?} (--host); the host map {} has {}",
                a.hosts.display(),
                map.host_names()
            );
        }
    }
    let e = Enforcer::new(&a.state_dir);
    let names = map
        .hosts
        .iter()
        .filter(|h| a.host.as_ref().is_none_or(|n| *n == h.name))
        .map(|h| h.name.clone())
        .collect();
    let interfaces = host_by_host(names, |name| {
        e.remove(&map, name)
            .with_context(|| format!("cannot remove tailbound's configuration from host {name:?}"))
    })?;
    let report = EnforceReport {
        changes: interfaces.iter().map(|r| r.changes).sum(),
        interfaces,
        unenforced: Vec::new(),
    };
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&reports_text(&report.interfaces))?;
    }
    Ok(Outcome::Ok)
}
