//! SNC-Meister's two JSON files, read into tailbound's [`Network`].
//!
//! Other formats (tailbound's own scenario files) live in [`crate::own`]; detecting which
//! format a file is in lives in [`crate::load`]. Characterizing traces lives in
//! `tailbound-curves`; bounding latencies in `tailbound-calculus`.
//!
//! # Model config ([`read_config`])
//!
//! The file SNC-Meister's `SNC-ConfigGen` generates for its calculator and admission client
//! (`shared/reference/snc-meister/sample_config.txt`). Fields read (others, such as
//! `addrPrefix`, `debug`, `outputConfig`, `srcAddr`, `dstAddr`, `enforcerAddr`, and the
//! calculator's output fields `latency`/`priority`, are ignored):
//!
//! ```text
//! {
//!   "queues":  [ { "name": "clientHostname1-out", "bandwidth": 125000000 }, ... ],  // [bytes/s]
//!   "clients": [ {
//!       "name": "C0",                 // optional; C<index> when absent
//!       "SLO": 0.04,                  // [s]
//!       "SLOpercentile": 99,          // optional, default 99.9; strictly between 0 and 100
//!       "trace": "sample_trace1.txt", // optional, recorded in TenantSource::ModelConfig
//!       "dependencies": [ "C2" ],     // optional, other clients' names, see below
//!       "flows": [ {
//!           "name": "F0In",
//!           "queues": [ "clientHostname1-out", "serverHostname1-in" ],  // names from "queues"
//!           "arrivalInfo": {
//!             "MGFs": [ {                       // one MMPP state each, in state order
//!                 "type": "MGFExponential",     // the only type SNC-Meister generates
//!                 "count": 181833,              // requests observed in the state
//!                 "lambda": 0.00098,            // exponential size rate [1/byte], > 0
//!                 "p": 0.00215,                 // arrival probability per 10 µs step
//!                 "totalSize": 185324193.6      // bytes observed in the state
//!             }, ... ],
//!             "transitionMatrix": [ [ ... ], ... ]   // per 10 µs step, rows sum to 1
//!           } } ] } ]
//! }
//! ```
//!
//! Each queue becomes a [`Queue`] with `rate` = `bandwidth`; each client a [`TenantSpec`]
//! (SLO from `SLO`/`SLOpercentile`, group from `dependencies`, priority `None`: derived from
//! the SLO as the original's `configurePrioritiesBySLO` does); each flow a [`Flow`] whose
//! `mmpp` has step 10 µs, interval 1 s and one state per MGF *exactly as in the file*
//! (including placeholder states with `count` 0 and `lambda` 1e6, so the original's numbers
//! reproduce): `arrival_prob` = p, `rate_per_s` = p / 10 µs, sizes exponential with mean
//! 1/lambda, `requests` = count, `work` = totalSize, `intervals` = 0 (the file does not
//! record them; [`Mmpp::stationary`] then solves the chain). Flows carry no arrival curve.
//!
//! # Topology ([`read_topology`])
//!
//! The file an operator writes for `SNC-ConfigGen` (`sample_topology.txt`):
//!
//! ```text
//! {
//!   "clients": [ {
//!       "name": "web",                           // optional; C<index> when absent
//!       "SLO": 0.04,                             // [s]
//!       "SLOpercentile": 99,                     // optional, default 99.9
//!       "trace": "sample_trace1.txt",            // relative to the JSON file's folder
//!       "clientHost": "clientHostname1", "clientVM": "1",
//!       "serverHost": "serverHostname1", "serverVM": "1",
//!       "dependencies": [ "C2" ]                 // optional, other clients' names
//!   }, ... ]
//! }
//! ```
//!
//! Client `i` becomes tenant `C{i}` (or its `name`) with flows `F{i}In` (`<clientHost>-out`
//! → `<serverHost>-in`, [`Stage::NetIn`] work) and `F{i}Out` (`<serverHost>-out` →
//! `<clientHost>-in`, [`Stage::NetOut`] work), the names `SNC-ConfigGen` uses. Queues are made
//! as `SNC-ConfigGen` makes them: hosts sorted by name, `<host>-in` then `<host>-out`, at
//! [`Options::link_rate_bytes_per_s`] (1 Gbit/s = 125e6 bytes/s by default). Each flow's
//! traffic is characterized from [`Options::part`] of the trace (first half by default, as in
//! both papers; `SNC-ConfigGen` itself uses the whole file it is given): `mmpp` by
//! `tailbound_curves::mmpp::fit_mmpp` and `arrival` by the exact
//! `tailbound_curves::rb::arrival_curve` of the stage's work series. A trace file that several
//! clients name (a topology reusing traces round-robin) is read and fitted once, for the first
//! of them, and its flows' models copied to the others. `clientVM`/`serverVM`
//! and the top-level `addrPrefix`, `outputConfig`, `debug` only address enforcers and are
//! ignored.
//!
//! # Dependencies
//!
//! `dependencies` (snc-meister §4.2; README and `SNC-ConfigGen.cpp`: "list of other client
//! names that are dependent on this client") names other clients, in either file. The
//! original declares each listed pair dependent (`SNC::addDependency`, symmetric). tailbound's
//! [`TenantSpec::group`] is a label, so clients linked by dependencies form one group
//! (union-find, i.e. the transitive closure: conservative, since more dependence only
//! loosens bounds), labelled with its members' names joined by `+` in client order
//! (`"C0+C2"`). Clients with no dependency get no group. A dependency on a client that does
//! not exist is an error naming it (the original's `assert` aborted).

use crate::characterize::FitCache;
use crate::error::ScenarioError;
use crate::{relative_to, Part, Scenario, TenantSource};
use serde::Deserialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use tailbound_curves::mmpp::SizeKind;
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::{
    FlowModels, Mmpp, MmppState, Network, NetworkBuilder, NetworkError, NewTenant, SizeModel, Slo,
    SloError, Stage, TenantHosts,
};

/// The time step of SNC-Meister's discrete-time MMPPs [s].
pub const STEP_S: f64 = 1e-5;
/// The counting interval of SNC-Meister's MMPP fit [s].
pub const INTERVAL_S: f64 = 1.0;
/// Row sums of a transition matrix may differ from 1 by this much.
const ROW_TOL: f64 = 1e-9;
/// SNC-Meister's default `SLOpercentile` when a client gives none.
pub const DEFAULT_PERCENTILE: f64 = 99.9;
/// SNC-Meister's hard-coded link rate: 1 Gbit/s [bytes/s].
pub const LINK_RATE_BYTES_PER_S: f64 = 125e6;

fn default_percentile() -> f64 {
    DEFAULT_PERCENTILE
}

/// Largest scenario, topology or model-config file read [bytes] (10 000 tenants take ~3 MB):
/// memory stays bounded whatever the path names (`/dev/zero`, a huge file).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

pub(crate) fn read_text(path: &Path) -> Result<String, ScenarioError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| ScenarioError::io(path, e))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| ScenarioError::io(path, e))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(ScenarioError::Format {
            path: path.to_path_buf(),
            message: format!(
                "the file is larger than {} MiB; a scenario is at most that",
                MAX_FILE_BYTES >> 20
            ),
        });
    }
    Ok(text)
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<T, ScenarioError> {
    serde_json::from_str(text).map_err(|e| ScenarioError::Syntax {
        path: path.to_path_buf(),
        message: format!("invalid JSON: {e}"),
    })
}

#[derive(Deserialize)]
struct ConfigFile {
    queues: Vec<ConfigQueue>,
    clients: Vec<ConfigClient>,
}

#[derive(Deserialize)]
struct ConfigQueue {
    name: String,
    /// [bytes/s]
    bandwidth: f64,
}

#[derive(Deserialize)]
struct ConfigClient {
    name: Option<String>,
    #[serde(rename = "SLO")]
    slo_s: f64,
    #[serde(rename = "SLOpercentile", default = "default_percentile")]
    percentile: f64,
    trace: Option<PathBuf>,
    flows: Vec<ConfigFlow>,
    #[serde(default)]
    dependencies: Vec<String>,
}

#[derive(Deserialize)]
struct ConfigFlow {
    name: String,
    queues: Vec<String>,
    #[serde(rename = "arrivalInfo")]
    arrival: ArrivalInfo,
}

#[derive(Deserialize)]
struct ArrivalInfo {
    #[serde(rename = "MGFs")]
    mgfs: Vec<Mgf>,
    #[serde(rename = "transitionMatrix")]
    transition: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct Mgf {
    #[serde(rename = "type")]
    kind: String,
    count: f64,
    /// [1/byte]
    lambda: f64,
    /// per step
    p: f64,
    /// [bytes]
    #[serde(rename = "totalSize")]
    total_size: f64,
}

/// Reads SNC-Meister's generated model config (format in the [module docs](self)).
///
/// Errors name the file, the client/flow and the field: probabilities outside [0, 1],
/// transition rows not summing to 1 (within 1e-9), a non-square matrix or one whose size
/// differs from the number of MGFs, `lambda` ≤ 0, an unknown MGF type, a queue name not in
/// `queues`, an invalid SLO; then [`Network::validate`].
pub fn read_config(path: &Path) -> Result<Network, ScenarioError> {
    Ok(read_config_scenario(path)?.network)
}

/// [`read_config`] with a [`TenantSource::ModelConfig`] per tenant (what [`crate::load`]
/// returns for a model config).
pub fn read_config_scenario(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = read_text(path)?;
    let file: ConfigFile = parse_json(path, &text)?;
    config_network(path, file)
}

fn config_network(path: &Path, file: ConfigFile) -> Result<Scenario, ScenarioError> {
    let bad =
        |at: &str, field: &str, problem: String| ScenarioError::invalid(path, at, field, problem);
    let mut b = NetworkBuilder::new();
    let mut sources = Vec::with_capacity(file.clients.len());
    let mut dependencies = Vec::with_capacity(file.clients.len());
    let mut queue_index = HashMap::new();
    for q in &file.queues {
        let at = format!("queue {:?}", q.name);
        if !(q.bandwidth.is_finite() && q.bandwidth > 0.0) {
            return Err(bad(
                &at,
                "bandwidth",
                format!("{} is not a positive rate [bytes/s]", q.bandwidth),
            ));
        }
        if queue_index.contains_key(&q.name) {
            return Err(bad(
                &at,
                "name",
                "appears twice; queue names must be unique".into(),
            ));
        }
        queue_index.insert(q.name.clone(), b.queue(&q.name, q.bandwidth));
    }
    let mut names = Vec::with_capacity(file.clients.len());
    for (ci, client) in file.clients.into_iter().enumerate() {
        let name = client.name.unwrap_or_else(|| format!("C{ci}"));
        let at = format!("client {name}");
        let slo = snc_slo(path, &at, client.slo_s, client.percentile)?;
        sources.push(TenantSource::ModelConfig {
            config: path.to_path_buf(),
            trace: client.trace.as_deref().map(|t| relative_to(path, t)),
        });
        dependencies.push(client.dependencies);
        let tenant = b.tenant(NewTenant::new(name.clone(), slo));
        for f in client.flows {
            let at = format!("client {name} flow {}", f.name);
            let mut path_q = Vec::with_capacity(f.queues.len());
            for q in &f.queues {
                let &qi = queue_index.get(q).ok_or_else(|| {
                    bad(
                        &at,
                        "queues",
                        format!(
                            "unknown queue {q:?}; the file's queues are {:?}",
                            file.queues.iter().map(|q| &q.name).collect::<Vec<_>>()
                        ),
                    )
                })?;
                path_q.push(qi);
            }
            let mmpp = config_mmpp(path, &at, f.arrival)?;
            let stage = config_stage(&f.name);
            let models = FlowModels {
                mmpp: Some(mmpp),
                arrival: None,
            };
            b.flow_on(tenant, f.name, stage, path_q, models);
        }
        names.push(name);
    }
    let groups = dependency_groups(path, &names, &dependencies)?;
    let mut net = b.build().map_err(|e| network_error(path, e))?;
    for (t, group) in net.tenants.iter_mut().zip(groups) {
        t.group = group;
    }
    tracing::debug!(
        file = %path.display(),
        queues = net.queues.len(),
        flows = net.flows.len(),
        tenants = net.tenants.len(),
        "read SNC-Meister model config"
    );
    Ok(Scenario {
        network: net,
        sources,
        profiles: Vec::new(),
    })
}

/// The stage of a model config's flow. Every queue of a config is a link, so its flows carry
/// bytes; their direction is only in the names `SNC-ConfigGen` gives them (`F<i>In` client to
/// server, `F<i>Out` server to client). Other names count as the request direction.
fn config_stage(name: &str) -> Stage {
    if name.ends_with("Out") {
        Stage::NetOut
    } else {
        Stage::NetIn
    }
}

pub(crate) fn network_error(path: &Path, source: NetworkError) -> ScenarioError {
    ScenarioError::Network {
        path: path.to_path_buf(),
        source,
    }
}

fn snc_slo(path: &Path, at: &str, slo_s: f64, percentile: f64) -> Result<Slo, ScenarioError> {
    Slo::new(slo_s, percentile).map_err(|e| {
        let field = match e {
            SloError::Percentile(_) => "SLOpercentile",
            _ => "SLO",
        };
        ScenarioError::invalid(path, at, field, e.to_string())
    })
}

/// Groups of clients linked by `dependencies` (client names; symmetric and transitive), as
/// [`TenantSpec::group`] labels: the members' names joined by `+`, in client order. Clients
/// in no dependency (or only on themselves) get `None`.
fn dependency_groups(
    path: &Path,
    names: &[String],
    dependencies: &[Vec<String>],
) -> Result<Vec<Option<String>>, ScenarioError> {
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut parent: Vec<usize> = (0..names.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (i, deps) in dependencies.iter().enumerate() {
        for d in deps {
            let Some(&j) = index.get(d.as_str()) else {
                return Err(ScenarioError::invalid(
                    path,
                    format!("client {}", names[i]),
                    "dependencies",
                    format!(
                        "unknown client {d:?}; dependencies name other clients, which are {names:?}"
                    ),
                ));
            };
            let (a, b) = (root(&mut parent, i), root(&mut parent, j));
            // the smaller index becomes the root, so labels list members in client order
            parent[a.max(b)] = a.min(b);
        }
    }
    let roots: Vec<usize> = (0..names.len()).map(|i| root(&mut parent, i)).collect();
    let mut members: HashMap<usize, Vec<&str>> = HashMap::new();
    for (i, &r) in roots.iter().enumerate() {
        members.entry(r).or_default().push(&names[i]);
    }
    Ok(roots
        .iter()
        .map(|r| members.get(r).filter(|m| m.len() > 1).map(|m| m.join("+")))
        .collect())
}

fn config_mmpp(path: &Path, at: &str, info: ArrivalInfo) -> Result<Mmpp, ScenarioError> {
    let bad = |field: String, problem: String| ScenarioError::invalid(path, at, field, problem);
    let n = info.mgfs.len();
    if n == 0 {
        return Err(bad(
            "arrivalInfo.MGFs".into(),
            "is empty; an MMPP needs at least one state".into(),
        ));
    }
    let mut states = Vec::with_capacity(n);
    for (i, m) in info.mgfs.iter().enumerate() {
        let field = |name: &str| format!("arrivalInfo.MGFs[{i}].{name}");
        if m.kind != "MGFExponential" {
            return Err(bad(
                field("type"),
                format!(
                    "unknown MGF type {:?}; the only supported type is \"MGFExponential\"",
                    m.kind
                ),
            ));
        }
        if !(m.p.is_finite() && (0.0..=1.0).contains(&m.p)) {
            return Err(bad(
                field("p"),
                format!("{} is not a probability in [0, 1]", m.p),
            ));
        }
        if !(m.lambda.is_finite() && m.lambda > 0.0) {
            return Err(bad(
                field("lambda"),
                format!("{} is not a positive rate [1/byte]", m.lambda),
            ));
        }
        if !(m.count.is_finite() && m.count >= 0.0 && m.count.fract() == 0.0) {
            return Err(bad(
                field("count"),
                format!("{} is not a non-negative whole number of requests", m.count),
            ));
        }
        if !(m.total_size.is_finite() && m.total_size >= 0.0) {
            return Err(bad(
                field("totalSize"),
                format!("{} is not a non-negative number of bytes", m.total_size),
            ));
        }
        states.push(MmppState {
            rate_per_s: m.p / STEP_S,
            arrival_prob: m.p,
            sizes: SizeModel::Exponential {
                mean: 1.0 / m.lambda,
            },
            intervals: 0,
            requests: m.count as u64,
            work: m.total_size,
        });
    }
    let field = "arrivalInfo.transitionMatrix";
    if info.transition.len() != n {
        return Err(bad(
            field.into(),
            format!(
                "has {} rows but there are {n} MGFs; it must be {n}x{n}",
                info.transition.len()
            ),
        ));
    }
    for (i, row) in info.transition.iter().enumerate() {
        if row.len() != n {
            return Err(bad(
                format!("{field}[{i}]"),
                format!("has {} entries; the matrix must be {n}x{n}", row.len()),
            ));
        }
        if let Some((j, p)) = row
            .iter()
            .enumerate()
            .find(|(_, p)| !(p.is_finite() && (0.0..=1.0).contains(*p)))
        {
            return Err(bad(
                format!("{field}[{i}][{j}]"),
                format!("{p} is not a probability in [0, 1]"),
            ));
        }
        let sum: f64 = row.iter().sum();
        if (sum - 1.0).abs() > ROW_TOL {
            return Err(bad(
                format!("{field}[{i}]"),
                format!("sums to {sum}; each row must sum to 1 (within {ROW_TOL})"),
            ));
        }
    }
    Ok(Mmpp {
        step_s: STEP_S,
        interval_s: INTERVAL_S,
        states,
        transition: info.transition,
    })
}

/// Options of [`read_topology`]. `Default` gives SNC-Meister's link rate and both papers'
/// characterize-on-the-first-half methodology.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// rate of every host link, each direction [bytes/s]; default 125e6 (1 Gbit/s)
    pub link_rate_bytes_per_s: f64,
    /// which part of each trace characterizes the client; default the first half
    /// ([`Part::Whole`] is what SNC-ConfigGen does with the file it is given)
    pub part: Part,
    /// size model of the MMPP states; default exponential (SNC-Meister's `MGFExponential`)
    pub sizes: SizeKind,
    /// which models to fit; default both
    pub models: crate::Models,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            link_rate_bytes_per_s: LINK_RATE_BYTES_PER_S,
            part: Part::FirstHalf,
            sizes: SizeKind::Exponential,
            models: crate::Models::Fitted,
        }
    }
}

#[derive(Deserialize)]
struct TopologyFile {
    clients: Vec<TopologyClient>,
}

#[derive(Deserialize)]
struct TopologyClient {
    name: Option<String>,
    #[serde(rename = "SLO")]
    slo_s: f64,
    #[serde(rename = "SLOpercentile", default = "default_percentile")]
    percentile: f64,
    trace: PathBuf,
    #[serde(rename = "clientHost")]
    client_host: String,
    #[serde(rename = "serverHost")]
    server_host: String,
    #[serde(default)]
    dependencies: Vec<String>,
}

/// Reads an SNC-Meister topology and characterizes its traces (format in the
/// [module docs](self)).
///
/// Cheap checks come first (SLOs, dependencies, the link rate), then each trace is read; a
/// missing trace is an error naming the client and the file as resolved.
pub fn read_topology(path: &Path, options: &Options) -> Result<Scenario, ScenarioError> {
    let text = read_text(path)?;
    let file: TopologyFile = parse_json(path, &text)?;
    if !(options.link_rate_bytes_per_s.is_finite() && options.link_rate_bytes_per_s > 0.0) {
        return Err(ScenarioError::invalid(
            path,
            "options",
            "link_rate_bytes_per_s",
            format!(
                "{} is not a positive rate [bytes/s]",
                options.link_rate_bytes_per_s
            ),
        ));
    }
    let names: Vec<String> = file
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| c.name.clone().unwrap_or_else(|| format!("C{i}")))
        .collect();
    let mut slos = Vec::with_capacity(names.len());
    for (c, name) in file.clients.iter().zip(&names) {
        let at = format!("client {name}");
        slos.push(snc_slo(path, &at, c.slo_s, c.percentile)?);
        for (field, host) in [
            ("clientHost", &c.client_host),
            ("serverHost", &c.server_host),
        ] {
            if host.trim().is_empty() {
                return Err(ScenarioError::invalid(
                    path,
                    &at,
                    field,
                    "is empty; expected a host name",
                ));
            }
        }
    }
    let dependencies: Vec<Vec<String>> = file
        .clients
        .iter()
        .map(|c| c.dependencies.clone())
        .collect();
    let groups = dependency_groups(path, &names, &dependencies)?;

    // hosts sorted by name, as SNC-ConfigGen makes their queues
    let host_names: BTreeSet<&str> = file
        .clients
        .iter()
        .flat_map(|c| [c.client_host.as_str(), c.server_host.as_str()])
        .collect();
    let mut b = NetworkBuilder::new();
    let hosts: HashMap<&str, usize> = host_names
        .iter()
        .map(|&h| (h, b.host(h, options.link_rate_bytes_per_s, None)))
        .collect();
    let mut sources = Vec::with_capacity(names.len());
    let profile = StorageProfile::intel710_ssd();
    // client i's flows, in this order: F{i}In (the requests), F{i}Out (the responses)
    const STAGES: [Stage; 2] = [Stage::NetIn, Stage::NetOut];
    let flow_name = |i: usize, stage: Stage| match stage {
        Stage::NetOut => format!("F{i}Out"),
        _ => format!("F{i}In"),
    };
    // the options are the same for every client: a trace's fits depend on its path alone
    let mut fits = FitCache::new();
    for (i, c) in file.clients.iter().enumerate() {
        let at = format!("client {}", names[i]);
        let trace_path = relative_to(path, &c.trace);
        let models = fits.get_or_fit(trace_path.clone(), || {
            let trace = crate::own::read_trace_at(path, &at, &trace_path)?;
            // the whole trace as it is read, without the copy `Part::of` makes
            let part = match options.part {
                Part::Whole => std::borrow::Cow::Borrowed(&trace),
                part => std::borrow::Cow::Owned(
                    part.of(&trace)
                        .map_err(|e| trace_error(path, &at, &trace_path, e.to_string()))?,
                ),
            };
            STAGES
                .iter()
                .map(|&stage| {
                    crate::characterize::characterize_for(
                        options.models,
                        &part.requests,
                        stage_work(stage, &profile),
                        options.sizes,
                        1.0,
                        0.0,
                    )
                    .map_err(|m| (stage, m))
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|(stage, m)| {
                    let name = flow_name(i, stage);
                    trace_error(path, &at, &trace_path, format!("{name} ({stage}): {m}"))
                })
        })?;
        let tenant = b.tenant(NewTenant {
            name: names[i].clone(),
            slo: slos[i],
            group: groups[i].clone(),
            priority: None,
            hosts: Some(TenantHosts {
                client: hosts[c.client_host.as_str()],
                server: hosts[c.server_host.as_str()],
            }),
        });
        for (&stage, flow_models) in STAGES.iter().zip(models) {
            b.named_flow(tenant, flow_name(i, stage), stage, flow_models.clone())
                .map_err(|e| network_error(path, e))?;
        }
        sources.push(TenantSource::Trace {
            path: trace_path,
            part: options.part,
        });
    }
    let net = b.build().map_err(|e| network_error(path, e))?;
    tracing::debug!(
        file = %path.display(),
        queues = net.queues.len(),
        tenants = net.tenants.len(),
        "read SNC-Meister topology"
    );
    Ok(Scenario {
        network: net,
        sources,
        profiles: Vec::new(),
    })
}

fn trace_error(path: &Path, at: &str, trace: &Path, message: String) -> ScenarioError {
    ScenarioError::Trace {
        path: path.to_path_buf(),
        at: at.to_string(),
        trace: trace.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_config() -> std::path::PathBuf {
        tailbound_testdata::reference_dir().join("snc-meister/sample_config.txt")
    }

    #[test]
    fn sample_config_reads_into_four_tenants_eight_flows_six_queues() {
        let net = read_config(&sample_config()).unwrap();
        assert_eq!(net.queues.len(), 6);
        assert!(net.queues.iter().all(|q| q.rate == 125e6));
        let names: Vec<_> = net.tenants.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["C0", "C1", "C2", "C3"]);
        let slos: Vec<_> = net
            .tenants
            .iter()
            .map(|t| (t.slo.latency_s, t.slo.percentile.value()))
            .collect();
        assert_eq!(
            slos,
            [(0.04, 99.0), (0.03, 99.9), (0.02, 99.9), (0.01, 99.9)]
        );
        assert!(net
            .tenants
            .iter()
            .all(|t| t.group.is_none() && t.priority.is_none()));
        assert_eq!(net.flows.len(), 8);
        for (k, t) in net.tenants.iter().enumerate() {
            let server = if k < 2 { 1 } else { 2 };
            let path = |f: usize| -> Vec<&str> {
                net.flows[f]
                    .path
                    .iter()
                    .map(|&q| net.queues[q].name.as_str())
                    .collect()
            };
            let [fin, fout] = t.flows[..] else {
                panic!("tenant {} has {:?}", t.name, t.flows)
            };
            assert_eq!(net.flows[fin].name, format!("F{k}In"));
            assert_eq!(net.flows[fout].name, format!("F{k}Out"));
            let sin = format!("serverHostname{server}-in");
            let sout = format!("serverHostname{server}-out");
            assert_eq!(path(fin), ["clientHostname1-out", sin.as_str()]);
            assert_eq!(path(fout), [sout.as_str(), "clientHostname1-in"]);
        }
        for f in &net.flows {
            let m = f.mmpp.as_ref().unwrap();
            m.validate().unwrap();
            assert_eq!(m.states.len(), 4);
            assert_eq!((m.step_s, m.interval_s), (1e-5, 1.0));
            assert!(f.arrival.is_none());
        }
        // the count-0 placeholder state of C1 is kept as it is
        let s = &net.flows[2].mmpp.as_ref().unwrap().states[2];
        assert_eq!((s.requests, s.work), (0, 0.0));
        let s0 = &net.flows[0].mmpp.as_ref().unwrap().states[0];
        assert_eq!(s0.requests, 181833);
        assert_eq!(s0.arrival_prob, 0.0021548723255849687);
        assert!((s0.rate_per_s - 215.48723255849687).abs() < 1e-9);
        assert!((s0.sizes.mean() - 1.0 / 0.000_981_161_695_449_107_7).abs() < 1e-9);
    }

    fn config_with(edit: impl FnOnce(&mut serde_json::Value)) -> ScenarioError {
        let dir = tempfile::tempdir().unwrap();
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sample_config()).unwrap()).unwrap();
        edit(&mut v);
        let p = dir.path().join("bad_config.json");
        std::fs::write(&p, v.to_string()).unwrap();
        read_config(&p).unwrap_err()
    }

    type Edit = dyn FnOnce(&mut serde_json::Value);

    #[test]
    fn bad_configs_name_file_flow_and_field() {
        let cases: Vec<(Box<Edit>, &[&str])> = vec![
            (
                Box::new(|v| {
                    v["clients"][1]["flows"][0]["arrivalInfo"]["MGFs"][0]["p"] = 1.5.into()
                }),
                &["client C1 flow F1In", "MGFs[0].p", "1.5"],
            ),
            (
                Box::new(|v| {
                    v["clients"][1]["flows"][0]["arrivalInfo"]["MGFs"][1]["lambda"] = 0.into()
                }),
                &["F1In", "MGFs[1].lambda", "positive"],
            ),
            (
                Box::new(|v| {
                    v["clients"][1]["flows"][0]["arrivalInfo"]["MGFs"][1]["type"] =
                        "MGFPareto".into()
                }),
                &["F1In", "MGFs[1].type", "MGFPareto", "MGFExponential"],
            ),
            (
                Box::new(|v| {
                    v["clients"][1]["flows"][0]["arrivalInfo"]["transitionMatrix"][0][0] =
                        0.5.into()
                }),
                &["F1In", "transitionMatrix[0]", "sums to"],
            ),
            (
                Box::new(|v| {
                    v["clients"][1]["flows"][0]["arrivalInfo"]["transitionMatrix"][2] =
                        serde_json::json!([0.5, 0.5]);
                }),
                &["F1In", "transitionMatrix[2]", "4x4"],
            ),
            (
                Box::new(|v| v["clients"][0]["flows"][1]["queues"][0] = "nowhere-out".into()),
                &["client C0 flow F0Out", "queues", "nowhere-out"],
            ),
            (
                Box::new(|v| v["clients"][3]["SLOpercentile"] = 100.into()),
                &["client C3", "SLOpercentile", "100"],
            ),
        ];
        for (edit, wants) in cases {
            let msg = config_with(edit).to_string();
            assert!(msg.contains("bad_config.json"), "{msg}");
            for w in wants {
                assert!(msg.contains(w), "{msg:?} lacks {w:?}");
            }
        }
    }
}
