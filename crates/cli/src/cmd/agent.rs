//! `tailbound agent --controller URL --host H --hosts MAP`: a host's tc agent. It long-polls
//! the controller service (`tailbound serve`, `GET /v1/hosts/{host}/decisions`) for the host's
//! decisions and applies them with the tc enforcer of `tailbound enforce apply`
//! (`tailbound-enforce-plan` plans, `tailbound_dataplane::tc::Enforcer` applies in one
//! `tc -batch` and reads back).
//!
//! Versions: every answer carries the service's version (the latest decision's number, which
//! the database commits with the decision). The agent keeps the last version it applied in
//! `--state FILE` (written whole or not at all) and applies an answer only when its version is
//! newer, so it never goes back to an older decision after a newer one; at start it applies
//! the current version even when it is the one it has (the host may have lost its tc state),
//! and a service whose version is older than the applied one (a database restored from an
//! old copy) is refused until the operator removes the state file. After its own restart the
//! agent asks from the version it applied and catches up at once; after the service's restart
//! it asks again and converges. Each poll reports the applied version (`applied=`), which the
//! service shows in `GET /v1/agents` and on `/status`, so a lagging agent is visible.
//!
//! Tenants the host map does not list are matched by their hosts' addresses alone (both
//! directions of the host pair); two such tenants on one host pair cannot be told apart and
//! the plan says so: list them in the map with their ports.
//!
//! Auth: the host's own token (`POST /v1/hosts/HOST/token`, admin) or the service's admin token
//! (`--token-file`, or `TAILBOUND_TOKEN`).

use crate::output;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::Args;
use hyper::Method;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tailbound_dataplane::tc::{self, Enforcer, InterfaceReport};
use tailbound_enforce_plan::hosts::{Endpoint, TenantTraffic};
use tailbound_enforce_plan::{plan, HostMap, HostRole, PlanOptions};
use tailbound_service::api::HostDecisions;
use tailbound_service::client::{ClientError, ServiceClient};

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// the controller service's URL, http://HOST:PORT
    #[arg(long, value_name = "URL")]
    pub controller: String,
    /// the host this agent enforces: registered with the service and in --hosts
    #[arg(long, value_name = "HOST")]
    pub host: String,
    /// host map (TOML, or JSON by its name): this host's namespace, interfaces and address,
    /// the other hosts' addresses, and how tenants' packets look (tenants it does not list
    /// are matched by their hosts' addresses)
    #[arg(long, value_name = "MAP")]
    pub hosts: PathBuf,
    /// the network namespace this host is (instead of the map's netns for --host)
    #[arg(long, value_name = "NS")]
    pub netns: Option<String>,
    /// where the agent keeps the last version it applied (default:
    /// /var/lib/tailbound/agent-HOST.json)
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// where the tc enforcer remembers each interface's configuration before the first apply
    #[arg(long, value_name = "DIR", default_value = tc::DEFAULT_STATE_DIR)]
    pub tc_state_dir: PathBuf,
    /// a file holding the host's own token (`POST /v1/hosts/HOST/token`: it reads only this
    /// host's decisions) or the service's admin token (default: the TAILBOUND_TOKEN
    /// environment variable)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// seconds each long poll waits for a newer version
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub wait: u64,
    /// fetch and apply the current version once, then exit
    #[arg(long)]
    pub once: bool,
}

/// What `--state` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentState {
    pub host: String,
    /// the last version applied
    pub version: u64,
    /// when [ms since the Unix epoch]
    pub applied_ms: u64,
}

/// What to do with an answer at `fetched` when `applied` is the last version applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Apply,
    /// the version is the one applied: nothing to do
    Current,
    /// the service is behind this agent: never go back
    Older,
}

/// The version rule: apply only what is newer, and the current version once at start.
pub fn verdict(applied: Option<u64>, fetched: u64, first: bool) -> Verdict {
    match applied {
        None => Verdict::Apply,
        Some(a) if fetched > a => Verdict::Apply,
        Some(a) if fetched == a && first => Verdict::Apply,
        Some(a) if fetched == a => Verdict::Current,
        Some(_) => Verdict::Older,
    }
}

/// `map` with `netns` for `host` and an entry for every tenant of `hd` the map does not list,
/// matched by its client's address (its server comes from the decisions).
pub fn host_map_for(
    map: &HostMap,
    host: &str,
    netns: Option<&str>,
    hd: &HostDecisions,
) -> anyhow::Result<HostMap> {
    let mut m = map.clone();
    if let Some(ns) = netns {
        if let Some(h) = m.hosts.iter_mut().find(|h| h.name == host) {
            h.netns = Some(ns.to_string());
        }
    }
    for e in &hd.endpoints {
        if m.tenant(&e.tenant).is_some() {
            continue;
        }
        let address = m
            .host(&e.client)
            .and_then(|h| h.first_address())
            .with_context(|| {
                format!(
                    "tenant {:?}'s client host {:?} has no address in the host map {}; add it as a [[hosts]] entry with an interface address",
                    e.tenant, e.client, map.origin
                )
            })?;
        m.tenants.push(TenantTraffic {
            name: e.tenant.clone(),
            client: Endpoint {
                host: e.client.clone(),
                address,
                address_given: false,
                port: None,
            },
            server: None,
            protocol: None,
        });
    }
    Ok(m)
}

fn read_state(path: &Path, host: &str) -> anyhow::Result<Option<u64>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read --state {}", path.display())),
    };
    let s: AgentState = serde_json::from_str(&text).with_context(|| {
        format!(
            "--state {}: not an agent state file (JSON {{\"host\", \"version\", \"applied_ms\"}})",
            path.display()
        )
    })?;
    if s.host != host {
        bail!(
            "--state {} belongs to host {:?}, not --host {host:?}; give each host's agent its own state file",
            path.display(),
            s.host
        );
    }
    Ok(Some(s.version))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The agent's fixed parts.
struct Agent {
    args: AgentArgs,
    state: PathBuf,
    map: HostMap,
    enforcer: Enforcer,
    client: ServiceClient,
}

impl Agent {
    /// Plans `hd` for this host and applies it.
    fn apply(&self, hd: &HostDecisions) -> anyhow::Result<Vec<InterfaceReport>> {
        let host = &self.args.host;
        let map = host_map_for(&self.map, host, self.args.netns.as_deref(), hd)?;
        let prior = self.enforcer.prior(&map, Some(host))?;
        let opts = PlanOptions {
            excess: None,
            host: Some(host.clone()),
        };
        let p = plan(&hd.decisions, &map, &opts, &prior)
            .with_context(|| format!("cannot plan version {} for host {host:?}", hd.version))?;
        let h = p
            .hosts
            .iter()
            .find(|h| h.host == *host)
            .context("the plan has no entry for the host")?;
        for u in &p.unenforced {
            tracing::info!(tenant = %u.tenant, flow = %u.flow, reason = %u.reason, "not enforced by tc");
        }
        Ok(self.enforcer.apply(h)?)
    }

    /// Writes `--state` whole or not at all (a temporary file beside it, synced, renamed).
    /// Not with `output::write_json`: its signal handler ends the process at once, and the
    /// agent finishes a change before it stops.
    fn save(&self, version: u64) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&AgentState {
            host: self.args.host.clone(),
            version,
            applied_ms: now_ms(),
        })?;
        let dir = self
            .state
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .and_then(|()| {
                tailbound_dataplane::file::write_whole(
                    &self.state,
                    format!("{text}\n").as_bytes(),
                    true,
                )
            })
            .map_err(|e| anyhow::anyhow!("cannot write --state {}: {e}", self.state.display()))
    }
}

/// Resolves once `stop` is set.
async fn stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn run(a: AgentArgs) -> anyhow::Result<Outcome> {
    let token = super::tenant::token(a.token_file.as_deref())?;
    let map = tc::read_host_map(&a.hosts)?;
    match map.host(&a.host) {
        None => bail!(
            "unknown host {:?} (--host); the host map {} has {}",
            a.host,
            a.hosts.display(),
            map.host_names()
        ),
        Some(h) if h.role != HostRole::Host => bail!(
            "host {:?} (--host) is a switch in the host map {}; agents run on end hosts",
            a.host,
            a.hosts.display()
        ),
        Some(_) => {}
    }
    let state = a
        .state
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/var/lib/tailbound/agent-{}.json", a.host)));
    let mut applied = read_state(&state, &a.host)?;
    // the long poll plus time to answer
    let client = ServiceClient::new(&a.controller, Some(token), Duration::from_secs(a.wait + 30))
        .context("--controller")?;
    let agent = Agent {
        enforcer: Enforcer::new(&a.tc_state_dir),
        args: a,
        state,
        map,
        client,
    };
    let stop = tc::defer_signals().context("cannot catch signals")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let host = agent.args.host.clone();
    output::note(format_args!(
        "agent: host {host}, controller {}, applied version {}",
        agent.args.controller,
        applied.map_or("none".into(), |v| v.to_string())
    ));
    // the newest version fetched, applied or not (a plan that fails is not asked again
    // until a newer version comes)
    let mut seen = applied.unwrap_or(0);
    let mut first = true;
    let mut backoff = 1u64;
    loop {
        if stop.load(Ordering::SeqCst) {
            output::note(format_args!("agent: stopped"));
            return Ok(Outcome::Ok);
        }
        let wait = if first || agent.args.once {
            0
        } else {
            agent.args.wait
        };
        let mut path = format!("/v1/hosts/{host}/decisions?since={seen}&wait={wait}");
        if let Some(v) = applied {
            path.push_str(&format!("&applied={v}"));
        }
        let answer = rt.block_on(async {
            tokio::select! {
                r = agent.client.call::<HostDecisions>(Method::GET, &path, None::<&()>) => Some(r),
                () = stopped(&stop) => None,
            }
        });
        let Some(answer) = answer else { continue };
        let hd = match answer {
            Ok((_, hd)) => hd,
            Err(e) => {
                let fatal = matches!(&e, ClientError::Refused { status, .. } if matches!(status, 401 | 403))
                    || matches!(e, ClientError::Url { .. });
                if fatal || agent.args.once {
                    return Err(e).context(format!("agent for host {host:?}"));
                }
                output::note(format_args!("agent: {e}; asking again in {backoff} s"));
                rt.block_on(async {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(backoff)) => {}
                        () = stopped(&stop) => {}
                    }
                });
                backoff = (backoff * 2).min(30);
                continue;
            }
        };
        backoff = 1;
        let was_first = first;
        first = false;
        match verdict(applied, hd.version, was_first) {
            Verdict::Current => continue,
            Verdict::Older => {
                let message = format!(
                    "the service is at version {}, older than version {} this agent applied (--state {}); not applying it. If the service's database was replaced on purpose, remove the state file",
                    hd.version,
                    applied.unwrap_or(0),
                    agent.state.display()
                );
                if agent.args.once {
                    bail!(message);
                }
                output::note(format_args!("agent: {message}"));
                seen = seen.max(hd.version);
                rt.block_on(async {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(agent.args.wait)) => {}
                        () = stopped(&stop) => {}
                    }
                });
                continue;
            }
            Verdict::Apply => {}
        }
        seen = hd.version;
        match agent.apply(&hd) {
            Ok(reports) => {
                agent.save(hd.version)?;
                applied = Some(hd.version);
                let changes: usize = reports.iter().map(|r| r.changes).sum();
                let line = format!(
                    "agent: applied version {} on host {host}: {} tenants, {changes} tc commands",
                    hd.version,
                    hd.decisions.tenants.len()
                );
                if agent.args.once {
                    output::print(&format!("{}\n", &line["agent: ".len()..]))?;
                    return Ok(Outcome::Ok);
                }
                output::note(format_args!("{line}"));
            }
            Err(e) => {
                if agent.args.once {
                    return Err(e);
                }
                // keeps the version it has; the next newer version is tried
                output::note(format_args!(
                    "agent: version {} not applied: {}",
                    hd.version,
                    output::error_text(&e)
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::{Decisions, Excess};
    use tailbound_service::api::TenantEnds;

    #[test]
    fn an_agent_never_goes_back_and_applies_its_version_again_only_at_start() {
        assert_eq!(verdict(None, 0, false), Verdict::Apply);
        assert_eq!(verdict(Some(4), 5, false), Verdict::Apply);
        assert_eq!(verdict(Some(5), 5, true), Verdict::Apply);
        assert_eq!(verdict(Some(5), 5, false), Verdict::Current);
        assert_eq!(verdict(Some(5), 4, true), Verdict::Older);
        assert_eq!(verdict(Some(5), 4, false), Verdict::Older);
    }

    const MAP: &str = r#"
[[hosts]]
name = "c"
netns = "ns-c"
[[hosts.interfaces]]
name = "eth0"
address = "10.1.0.1"
link = "1Gbit"

[[hosts]]
name = "s"
[[hosts.interfaces]]
name = "eth0"
address = "10.1.0.2"
link = "1Gbit"

[[tenants]]
name = "listed"
client = { host = "c" }
server = { host = "s", port = 11211 }
"#;

    fn answer(ends: &[(&str, &str, &str)]) -> HostDecisions {
        HostDecisions {
            host: "c".into(),
            version: 3,
            decisions: Decisions {
                policy: "p".into(),
                tenants: Vec::new(),
                excess: Excess::Wait,
            },
            endpoints: ends
                .iter()
                .map(|&(t, c, s)| TenantEnds {
                    tenant: t.into(),
                    client: c.into(),
                    server: s.into(),
                })
                .collect(),
        }
    }

    #[test]
    fn unlisted_tenants_are_matched_by_their_client_address_and_listed_ones_kept() {
        let map = HostMap::parse(MAP, "m.toml").unwrap();
        let hd = answer(&[("listed", "c", "s"), ("new", "c", "s")]);
        let m = host_map_for(&map, "c", Some("other-ns"), &hd).unwrap();
        assert_eq!(m.host("c").unwrap().netns.as_deref(), Some("other-ns"));
        assert_eq!(m.tenants.len(), 2);
        assert_eq!(m.tenant("listed"), map.tenant("listed"));
        let new = m.tenant("new").unwrap();
        assert_eq!(new.client.address.to_string(), "10.1.0.1");
        assert_eq!((new.client.port, new.server.is_none()), (None, true));
        // a client the map does not know is named
        let e = host_map_for(&map, "c", None, &answer(&[("x", "elsewhere", "c")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"elsewhere\"") && e.contains("m.toml"), "{e}");
    }
}
