//! `tailbound vdc enforcer`: Pulsar's rate enforcer as a proxy in front of a memcached.
//!
//! ```text
//! tailbound vdc enforcer --backend 127.0.0.1:11211 --controller http://127.0.0.1:7600 \
//!     --listen B/b1-kv=127.0.0.1:11300 --listen C/c1-kv=127.0.0.1:11301
//! tailbound vdc enforcer --backend 127.0.0.1:11211 --vdc dc.toml --unlimited \
//!     --listen 127.0.0.1:11300 --auth-file users.txt
//! ```
//!
//! With `--controller` the flows, their costs and their allocations come from `tailbound vdc
//! serve` (`http://HOST:PORT`) or from a VDC of `tailbound serve`
//! (`http://HOST:PORT/v1/vdcs/NAME`, with `--token-file`: the admin token, or the token of
//! the host named by `--id`); with `--vdc` (no controller) every flow gets the allocation `tailbound vdc alloc`
//! shows for backlogged flows, or no limit with `--unlimited`. Runs until SIGINT or SIGTERM.

use super::vdc::load_vdc;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::Args;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tailbound_allocation::steps::backlogged_demand;
use tailbound_allocation::{allocate_vdc, Datacenter, Mechanism};
use tailbound_control::protocol::flow_name;
use tailbound_control::ControlClient;
use tailbound_dataplane::clock::MonotonicClock;
use tailbound_dataplane::memcache::Limits;
use tailbound_enforcer::link::{fetch_datacenter, Link};
use tailbound_enforcer::{
    AuthUser, Charger, CoreConfig, FlowSetup, Identify, ListenerSpec, Proxy, ProxyConfig, ProxyFlow,
};
use tailbound_model::units::Seconds;

/// `[TENANT/FLOW=]ADDR`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenArg {
    pub flow: Option<String>,
    pub addr: SocketAddr,
}

fn listen_arg(s: &str) -> Result<ListenArg, String> {
    let (flow, addr) = match s.rsplit_once('=') {
        Some((f, a)) => (Some(f.to_string()), a),
        None => (None, s),
    };
    let addr = addr
        .parse()
        .map_err(|_| format!("{addr:?} is not HOST:PORT (e.g. 127.0.0.1:11300)"))?;
    if flow.as_deref().is_some_and(|f| !f.contains('/')) {
        return Err(format!(
            "{s:?}: name the flow as TENANT/FLOW (e.g. B/b1-kv=127.0.0.1:11300)"
        ));
    }
    Ok(ListenArg { flow, addr })
}

/// `TENANT=LEVEL`.
fn priority_arg(s: &str) -> Result<(String, usize), String> {
    let (t, l) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not TENANT=LEVEL (e.g. B=0)"))?;
    let l = l
        .parse()
        .map_err(|_| format!("{l:?} is not a level; use 0 (highest) to 63"))?;
    if l > 63 {
        return Err(format!("level {l}; use 0 (highest) to 63"));
    }
    Ok((t.to_string(), l))
}

fn size_arg(s: &str) -> Result<usize, String> {
    let b = s
        .parse::<tailbound_model::units::Bytes>()
        .map_err(|e| e.to_string())?
        .0;
    if !(b.is_finite() && (1.0..=f64::from(1u32 << 30)).contains(&b)) {
        return Err(format!("{s}: use 1 B to 1 GiB (memcached's largest item)"));
    }
    Ok(b as usize)
}

/// Run Pulsar's rate enforcer as a proxy in front of a memcached.
#[derive(Debug, Args)]
pub struct EnforcerArgs {
    /// the memcached to protect, HOST:PORT
    #[arg(long, value_name = "ADDR")]
    pub backend: SocketAddr,
    /// where clients connect: TENANT/FLOW=ADDR (the port is the flow) or ADDR (clients
    /// authenticate first with memcached's text auth; needs --auth-file); repeatable
    #[arg(long, value_name = "[TENANT/FLOW=]ADDR", value_parser = listen_arg, required = true)]
    pub listen: Vec<ListenArg>,
    /// the controller: `tailbound vdc serve` at http://HOST:PORT, or a VDC of `tailbound
    /// serve` at http://HOST:PORT/v1/vdcs/NAME; flows, costs and allocations come from it
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "vdc",
        required_unless_present = "vdc"
    )]
    pub controller: Option<String>,
    /// a file holding the token `tailbound serve` wants (the admin token, or the token of
    /// the host named by --id); default: the TAILBOUND_TOKEN environment variable, if set
    #[arg(long, value_name = "FILE", requires = "controller")]
    pub token_file: Option<PathBuf>,
    /// a VDC file instead of a controller: static allocation of backlogged flows
    #[arg(long, value_name = "VDC_FILE")]
    pub vdc: Option<PathBuf>,
    /// with --vdc: no limits (measures the proxy alone)
    #[arg(long, requires = "vdc")]
    pub unlimited: bool,
    /// this enforcer's name at the controller ([A-Za-z0-9._-], at most 64)
    #[arg(long, default_value = "enforcer")]
    pub id: String,
    /// users of authenticating listeners: lines TENANT/FLOW:SECRET (# comments)
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
    /// a tenant's strict-priority level when --window is full (0 highest; default 0)
    #[arg(long, value_name = "TENANT=LEVEL", value_parser = priority_arg)]
    pub priority: Vec<(String, usize)>,
    /// at most N requests outstanding at memcached; the rest wait by priority
    #[arg(long, value_name = "N")]
    pub window: Option<usize>,
    /// largest value a client may store
    #[arg(long, value_parser = size_arg, default_value = "1MiB")]
    pub max_value: usize,
    /// connecting to memcached, and the longest wait for a reply
    #[arg(long, default_value = "5s")]
    pub backend_timeout: Seconds,
    /// the longest a client may leave its replies unread
    #[arg(long, default_value = "30s")]
    pub client_timeout: Seconds,
    /// most client connections at once
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// most requests of one connection in flight
    #[arg(long, default_value_t = 256)]
    pub depth: usize,
    /// tokio worker threads (default: the CPUs this process may use)
    #[arg(long)]
    pub threads: Option<usize>,
}

/// A timeout flag as a `Duration`: positive and at most a day.
fn timeout_arg(flag: &str, s: Seconds) -> anyhow::Result<Duration> {
    if !(s.0 > 0.0 && s.0 <= 86_400.0) {
        bail!(
            "{flag} {} s: use a duration above 0 and up to a day (e.g. 5s)",
            s.0
        );
    }
    Ok(Duration::from_secs_f64(s.0))
}

/// A multi-threaded runtime for the long-running commands.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    runtime_with(None)
}

fn runtime_with(threads: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = threads {
        if t == 0 {
            bail!("--threads must be at least 1");
        }
        b.worker_threads(t);
    }
    b.enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A future that resolves on SIGINT or SIGTERM. The handlers are installed by this call, not
/// when the future is first polled: call it before announcing that the server is up, so that a
/// signal sent right after the announcement (a script or test that waited for it) stops the
/// server cleanly instead of killing it by the default action. Needs a tokio runtime.
pub fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt =
        signal(SignalKind::interrupt()).context("cannot install a handler for SIGINT")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("cannot install a handler for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// `TENANT/FLOW:SECRET` lines.
fn read_auth_file(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let name = path.display();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read --auth-file {name}"))?;
    let mut users = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((user, secret)) = line.split_once(':') else {
            bail!("{name}:{}: {line:?} is not TENANT/FLOW:SECRET", n + 1);
        };
        if !user.contains('/') || secret.is_empty() || secret.contains(char::is_whitespace) {
            bail!(
                "{name}:{}: {line:?}: expected TENANT/FLOW:SECRET with a secret without spaces",
                n + 1
            );
        }
        users.push((user.to_string(), secret.to_string()));
    }
    Ok(users)
}

pub fn run(a: EnforcerArgs) -> anyhow::Result<Outcome> {
    let rt = runtime_with(a.threads)?;
    rt.block_on(run_async(a))
}

async fn run_async(a: EnforcerArgs) -> anyhow::Result<Outcome> {
    let stop = stop_signal()?;
    let timeout = Duration::from_secs(5);
    // the datacenter: from the controller, or a file
    let (dc, client, info) = match (&a.controller, &a.vdc) {
        (Some(url), _) => {
            let token = match &a.token_file {
                Some(p) => Some(super::serve::read_token_file(p, "--token-file")?),
                None => std::env::var("TAILBOUND_TOKEN")
                    .ok()
                    .filter(|t| !t.trim().is_empty()),
            };
            let client = ControlClient::new(url, timeout)
                .context("--controller")?
                .with_token(token);
            let info = fetch_datacenter(&client).await.with_context(|| {
                format!("cannot fetch the datacenter from the controller at {url}")
            })?;
            (Arc::new(info.datacenter.clone()), Some(client), Some(info))
        }
        (None, Some(file)) => (Arc::new(load_vdc(file)?), None, None),
        (None, None) => bail!("give --controller URL or --vdc FILE"),
    };
    let names: Vec<String> = (0..dc.flows.len()).map(|i| flow_name(&dc, i)).collect();
    let known = || names.join(", ");
    // the flows this enforcer polices, in order of first mention
    let users = match &a.auth_file {
        Some(p) => read_auth_file(p)?,
        None => Vec::new(),
    };
    let mut mine: Vec<usize> = Vec::new();
    let mut index_of = |flow: &str, what: &str| -> anyhow::Result<usize> {
        let i = names.iter().position(|n| n == flow).with_context(|| {
            format!(
                "{what}: no flow {flow:?} in the datacenter; flows: {}",
                known()
            )
        })?;
        Ok(match mine.iter().position(|&m| m == i) {
            Some(k) => k,
            None => {
                mine.push(i);
                mine.len() - 1
            }
        })
    };
    let mut listeners = Vec::new();
    for l in &a.listen {
        let identify = match &l.flow {
            Some(f) => Identify::Flow(index_of(f, &format!("--listen {f}={}", l.addr))?),
            None => {
                if users.is_empty() {
                    bail!("--listen {}: a listener without a flow authenticates clients; give --auth-file", l.addr);
                }
                Identify::Auth
            }
        };
        listeners.push(ListenerSpec {
            addr: l.addr,
            identify,
        });
    }
    let mut auth = Vec::new();
    for (user, secret) in users {
        let flow = index_of(&user, "--auth-file")?;
        auth.push(AuthUser { user, secret, flow });
    }
    let priority: BTreeMap<&str, usize> =
        a.priority.iter().map(|(t, l)| (t.as_str(), *l)).collect();
    for t in priority.keys() {
        if dc.tenant(t).is_none() {
            bail!(
                "--priority {t}=...: no tenant {t:?}; tenants: {}",
                dc.tenants
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let flows: Vec<ProxyFlow> = mine
        .iter()
        .map(|&i| {
            let tenant = &dc.tenants[dc.flows[i].tenant].name;
            ProxyFlow {
                setup: FlowSetup {
                    name: names[i].clone(),
                    hops: dc.flows[i].hops.len(),
                    priority: priority.get(tenant.as_str()).copied().unwrap_or(0),
                },
                charger: Arc::new(Charger::new(dc.clone(), i)),
            }
        })
        .collect();
    let core = match &info {
        Some(info) => CoreConfig {
            min_rate: info.min_rate,
            carry_s: info.carry_s,
            window: a.window,
            initial_rate: Some(info.min_rate),
        },
        None => CoreConfig {
            window: a.window,
            initial_rate: None,
            ..CoreConfig::default()
        },
    };
    let cfg = ProxyConfig {
        auth,
        limits: Limits {
            max_value: a.max_value,
            ..Limits::default()
        },
        backend_timeout: timeout_arg("--backend-timeout", a.backend_timeout)?,
        client_timeout: timeout_arg("--client-timeout", a.client_timeout)?,
        max_connections: a.max_connections,
        depth: a.depth,
        core,
        ..ProxyConfig::new(a.backend, listeners)
    };
    let proxy = Proxy::start(cfg, flows, Arc::new(MonotonicClock::new())).await?;
    for (l, addr) in a.listen.iter().zip(proxy.local_addrs()) {
        eprintln!(
            "enforcer: {} on {addr} → memcached {}",
            l.flow.as_deref().unwrap_or("authenticated clients"),
            a.backend
        );
    }
    match (client, info) {
        (Some(client), Some(info)) => {
            let (link, first) = Link::register(client, &a.id, &info, &proxy)
                .await
                .with_context(|| {
                    format!("cannot register enforcer {:?} with the controller", a.id)
                })?;
            eprintln!(
                "enforcer: registered as {:?} (allocation epoch {}); Ctrl-C stops",
                a.id, first.epoch
            );
            link.run(&proxy, &first, stop).await;
        }
        _ => {
            if a.unlimited {
                for i in 0..mine.len() {
                    proxy.set_unlimited(i)?;
                }
                eprintln!("enforcer: unlimited buckets; Ctrl-C stops");
            } else {
                static_allocation(&dc, &mine, &proxy)?;
                eprintln!("enforcer: static allocation of backlogged flows (tailbound vdc alloc); Ctrl-C stops");
            }
            stop.await;
        }
    }
    proxy.shutdown().await;
    eprintln!("enforcer: stopped");
    Ok(Outcome::Ok)
}

/// Without a controller: every flow gets what `tailbound vdc alloc` gives it when all flows are
/// backlogged, at the configured capacities.
fn static_allocation(dc: &Datacenter, mine: &[usize], proxy: &Proxy) -> anyhow::Result<()> {
    let demand = backlogged_demand(dc);
    let capacity: Vec<f64> = dc.resources.iter().map(|r| r.capacity).collect();
    let out = allocate_vdc(dc, &demand, &capacity, Mechanism::Hdrf)?;
    for (k, &i) in mine.iter().enumerate() {
        proxy.set_allocation(k, &out.rates[i])?;
    }
    Ok(())
}
