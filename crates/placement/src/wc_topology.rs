//! WorkloadCompactor's topology file (its README's "Topology configuration file";
//! `examples/topo-example.txt` in the original), read into workloads, client hosts and
//! servers. Parsing only: reading the traces is the caller's.
//!
//! ```text
//! {
//!   "addrPrefix": "tzhu",          // ignored: it only addresses enforcers
//!   "enforce": false,              // ignored, likewise
//!   "clients": [ {                 // the workloads, placed in this order
//!       "name": "C0",              // optional; C<index> when absent
//!       "SLO": 0.2,                // worst-case latency goal [s], > 0
//!       "SLOpercentile": 99.9,     // optional (DNC bounds hold at every percentile)
//!       "trace": "traces/trace0000.txt"   // relative to the topology file's folder
//!   }, ... ],
//!   "clientVMs": [ { "clientHost": "client000", "clientVM": "0" }, ... ],
//!   "serverVMs": [ { "serverHost": "server000", "serverVM": "1" }, ... ]
//! }
//! ```
//!
//! Servers are tried first-fit in the original's order: by host name, then VM name. Each
//! server host may have one VM: tailbound's server is one NIC and one storage device, while
//! the original's VMs on one host share its NIC and each has its own storage queue. A
//! client's placement fields in the original's output files (`clientHost`, `clientVM`,
//! `serverHost`, `serverVM`, `admitted`) are ignored: every client is placed afresh.
//!
//! # Arrival-curve files
//!
//! The original characterizes each trace once and caches the result in
//! `arrivalCurves/arrivalCurve<trace file name><type>.txt`, type `networkIn` (requests),
//! `storageSSD` (storage busy time) or `networkOut` (responses) ([`wc_curve_file_name`]).
//! Each line is `x [s], y [work], slope [work/s]`: a piece of a concave arrival curve from x
//! on, i.e. the token bucket ⟨slope, y − slope·x⟩; the first line has the highest rate, the
//! last the long-term rate ([`parse_wc_arrival_curve`] turns the lines into an r-b curve).

use crate::client_hosts::{ClientHost, ClientHosts};
use crate::workloads_csv::{WorkloadLine, WorkloadsFileError};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use tailbound_model::{RbCurve, Slo, Stage};

/// The percentile recorded for a client without `SLOpercentile`.
const DEFAULT_PERCENTILE: f64 = 99.9;

/// A WorkloadCompactor topology: what to place and where.
#[derive(Debug, Clone, PartialEq)]
pub struct WcTopology {
    /// the clients, in file order (`line`: where the client's name is, or its list)
    pub workloads: Vec<WorkloadLine>,
    pub client_hosts: ClientHosts,
    /// server host names in first-fit order
    pub servers: Vec<String>,
}

#[derive(Deserialize)]
struct File {
    clients: Vec<Client>,
    #[serde(rename = "clientVMs")]
    client_vms: Vec<ClientVmEntry>,
    #[serde(rename = "serverVMs")]
    server_vms: Vec<ServerVmEntry>,
}

#[derive(Deserialize)]
struct Client {
    name: Option<String>,
    #[serde(rename = "SLO")]
    slo: f64,
    #[serde(rename = "SLOpercentile")]
    percentile: Option<f64>,
    trace: String,
}

#[derive(Deserialize)]
struct ClientVmEntry {
    #[serde(rename = "clientHost")]
    host: String,
    #[serde(rename = "clientVM")]
    vm: String,
}

#[derive(Deserialize)]
struct ServerVmEntry {
    #[serde(rename = "serverHost")]
    host: String,
    #[serde(rename = "serverVM")]
    vm: String,
}

/// Whether `text` looks like a WorkloadCompactor topology (a JSON object with `serverVMs`),
/// as opposed to an SNC-Meister topology or a tailbound scenario.
pub fn is_wc_topology(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"serverVMs\"")
}

/// The line (1-based) of the first occurrence of `needle` at or after byte `from`; 0 when absent.
fn line_of(text: &str, needle: &str, from: usize) -> usize {
    let from = from.min(text.len());
    match text.get(from..).and_then(|t| t.find(needle)) {
        Some(i) => text[..from + i].lines().count().max(1),
        None => 0,
    }
}

/// Parses the text of topology `file` (named in errors, with the line).
pub fn parse_wc_topology(file: &Path, text: &str) -> Result<WcTopology, WorkloadsFileError> {
    let err = |line: usize, message: String| WorkloadsFileError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let f: File = serde_json::from_str(text).map_err(|e| {
        err(
            e.line(),
            format!(
                "{e}; expected WorkloadCompactor's topology: an object with \"clients\" \
                 (name, SLO, trace), \"clientVMs\" (clientHost, clientVM) and \"serverVMs\" \
                 (serverHost, serverVM)"
            ),
        )
    })?;
    let clients_at = text.find("\"clients\"").unwrap_or(0);
    let mut workloads: Vec<WorkloadLine> = Vec::with_capacity(f.clients.len());
    let mut search_from = clients_at;
    for (i, c) in f.clients.into_iter().enumerate() {
        let name = c.name.unwrap_or_else(|| format!("C{i}"));
        let mut line = line_of(text, &format!("\"{name}\""), search_from);
        if line == 0 {
            line = line_of(text, "\"clients\"", 0);
        } else if let Some(at) = text
            .get(search_from..)
            .and_then(|t| t.find(&format!("\"{name}\"")))
        {
            search_from += at + 1;
        }
        let what = format!("client {i} ({name:?})");
        if name.is_empty() {
            return Err(err(
                line,
                format!("{what}: the name is empty; expected a name"),
            ));
        }
        if workloads.iter().any(|w| w.name == name) {
            return Err(err(
                line,
                format!("{what}: the name appears twice; client names must be unique"),
            ));
        }
        if c.trace.is_empty() {
            return Err(err(
                line,
                format!("{what}: the trace is empty; expected a trace file"),
            ));
        }
        let slo = Slo::new(c.slo, c.percentile.unwrap_or(DEFAULT_PERCENTILE))
            .map_err(|e| err(line, format!("{what}: SLO {} s: {e}", c.slo)))?;
        workloads.push(WorkloadLine {
            name,
            trace: PathBuf::from(c.trace),
            slo,
            line,
        });
    }
    if workloads.is_empty() {
        return Err(err(
            line_of(text, "\"clients\"", 0),
            "\"clients\" is empty; expected the workloads to place".into(),
        ));
    }
    // client hosts in the order they first appear; ClientHosts orders them by name
    let mut hosts: Vec<ClientHost> = Vec::new();
    for e in f.client_vms {
        match hosts.iter_mut().find(|h| h.name == e.host) {
            Some(h) => h.vms.push(e.vm),
            None => hosts.push(ClientHost {
                name: e.host,
                vms: vec![e.vm],
            }),
        }
    }
    let client_hosts = ClientHosts::new(hosts)
        .map_err(|e| err(line_of(text, "\"clientVMs\"", 0), format!("clientVMs: {e}")))?;
    let mut servers: Vec<(String, String)> =
        f.server_vms.into_iter().map(|s| (s.host, s.vm)).collect();
    servers.sort();
    let servers_line = line_of(text, "\"serverVMs\"", 0);
    if servers.is_empty() {
        return Err(err(
            servers_line,
            "\"serverVMs\" is empty; expected at least one server".into(),
        ));
    }
    if let Some(w) = servers.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(err(
            line_of(
                text,
                &format!("\"{}\"", w[1].0),
                text.find("\"serverVMs\"").unwrap_or(0),
            ),
            format!(
                "server host {:?} has VMs {:?} and {:?}; tailbound places onto one server per \
                 host (one NIC, one storage device): list one VM per server host",
                w[0].0, w[0].1, w[1].1
            ),
        ));
    }
    if let Some((h, _)) = servers.iter().find(|(h, v)| h.is_empty() || v.is_empty()) {
        return Err(err(
            servers_line,
            format!("server host {h:?}: a server host or VM name is empty; expected names"),
        ));
    }
    Ok(WcTopology {
        workloads,
        client_hosts,
        servers: servers.into_iter().map(|(h, _)| h).collect(),
    })
}

/// The original's arrival-curve file name for `trace` at `stage`; `None` when the trace path
/// has no file name.
pub fn wc_curve_file_name(trace: &Path, stage: Stage) -> Option<String> {
    let kind = match stage {
        Stage::NetIn => "networkIn",
        Stage::Storage => "storageSSD",
        Stage::NetOut => "networkOut",
    };
    Some(format!(
        "arrivalCurve{}{kind}.txt",
        trace.file_name()?.to_str()?
    ))
}

/// The r-b curve of the original's arrival-curve file `file` (named in errors, with the
/// line): one token bucket ⟨slope, y − slope·x⟩ per line, ordered by rate.
pub fn parse_wc_arrival_curve(file: &Path, text: &str) -> Result<RbCurve, WorkloadsFileError> {
    let err = |line: usize, message: String| WorkloadsFileError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let mut buckets: Vec<[f64; 2]> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let v: Vec<f64> = line
            .split(',')
            .map(|f| f.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| err(i + 1, format!("{line:?} is not three numbers x,y,slope")))?;
        let &[x, y, slope] = v.as_slice() else {
            return Err(err(
                i + 1,
                format!("{} fields in {line:?}; expected x,y,slope", v.len()),
            ));
        };
        if !(x.is_finite() && y.is_finite() && slope.is_finite() && slope >= 0.0 && x >= 0.0) {
            return Err(err(
                i + 1,
                format!("{line:?}: expected finite x >= 0, y and slope >= 0"),
            ));
        }
        // rounding in the file can leave a burst a hair below 0
        buckets.push([slope, (y - slope * x).max(0.0)]);
    }
    if buckets.is_empty() {
        return Err(err(0, "no curve; expected lines x,y,slope".into()));
    }
    buckets.reverse();
    // equal rates: keep the smaller burst (the file's pieces meet there)
    buckets.dedup_by(|b, a| {
        let same = b[0] == a[0];
        if same {
            a[1] = a[1].min(b[1]);
        }
        same
    });
    RbCurve::new(buckets).map_err(|e| err(0, format!("not a concave arrival curve: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPO: &str = r#"{
  "addrPrefix" : "x",
  "enforce" : false,
  "clients" : [
    { "SLO" : 0.2, "name" : "C0", "trace" : "traces/a.txt" },
    { "SLO" : 0.1, "trace" : "traces/b.txt", "SLOpercentile": 99,
      "clientHost": "client000", "serverHost": "server001" }
  ],
  "clientVMs" : [
    { "clientHost" : "client001", "clientVM" : "0" },
    { "clientHost" : "client000", "clientVM" : "1" },
    { "clientHost" : "client000", "clientVM" : "0" }
  ],
  "serverVMs" : [
    { "serverHost" : "server001", "serverVM" : "1" },
    { "serverHost" : "server000", "serverVM" : "1" }
  ]
}"#;

    fn parse(text: &str) -> Result<WcTopology, WorkloadsFileError> {
        parse_wc_topology(Path::new("topo.txt"), text)
    }

    #[test]
    fn reads_clients_hosts_and_servers_in_the_originals_order() {
        assert!(is_wc_topology(TOPO));
        let t = parse(TOPO).unwrap();
        assert_eq!(t.workloads.len(), 2);
        assert_eq!(
            (t.workloads[0].name.as_str(), t.workloads[0].line),
            ("C0", 5)
        );
        assert_eq!(t.workloads[1].name, "C1");
        assert_eq!(t.workloads[1].trace, PathBuf::from("traces/b.txt"));
        assert_eq!(t.workloads[1].slo.latency_s, 0.1);
        assert_eq!(t.servers, vec!["server000", "server001"]);
        let h = t.client_hosts.hosts();
        assert_eq!(
            (h[0].name.as_str(), h[0].vms.clone()),
            ("client000", vec!["0".to_string(), "1".into()])
        );
        assert_eq!(t.client_hosts.vm_count(), 3);
    }

    #[test]
    fn reads_the_originals_arrival_curves() {
        assert_eq!(
            wc_curve_file_name(Path::new("traces/trace0000.txt"), Stage::Storage).as_deref(),
            Some("arrivalCurvetrace0000.txtstorageSSD.txt")
        );
        // the first three lines of the original's trace0000 storage curve, and a tail
        let text = "0,0.0122951935643,1\n0.0102644280095238,0.0225596215738238,0.306999999999999\n\
                    0.011811,0.0230344191749,0.0379999999999991\n100,2.5,0.02\n";
        let c = parse_wc_arrival_curve(Path::new("a.txt"), text).unwrap();
        let v = c.vertices();
        assert_eq!(v.len(), 4);
        assert_eq!(v[0], [0.02, 2.5 - 0.02 * 100.0]);
        assert_eq!(v[3], [1.0, 0.0122951935643]);
        let b = 0.0225596215738238 - 0.306999999999999 * 0.0102644280095238;
        assert!((v[2][1] - b).abs() < 1e-15, "{v:?}");
        for (text, want) in [
            ("0,1\n", "a.txt:1: 2 fields"),
            ("0,1,x\n", "a.txt:1: \"0,1,x\" is not three numbers"),
            ("\n", "a.txt:0: no curve"),
            ("0,1,1\n1,1.1,2\n", "a.txt:0: not a concave arrival curve"),
        ] {
            let e = parse_wc_arrival_curve(Path::new("a.txt"), text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
    }

    #[test]
    fn errors_name_the_file_line_and_value() {
        let bad_slo = TOPO.replace("\"SLO\" : 0.2", "\"SLO\" : -1");
        let dup = TOPO.replace(
            "\"trace\" : \"traces/b.txt\"",
            "\"name\": \"C0\", \"trace\" : \"t\"",
        );
        let two_vms = TOPO.replace(
            "{ \"serverHost\" : \"server000\", \"serverVM\" : \"1\" }",
            "{ \"serverHost\" : \"server001\", \"serverVM\" : \"2\" }",
        );
        let no_trace = TOPO.replace("\"trace\" : \"traces/a.txt\"", "\"tracefile\" : \"a\"");
        for (text, want) in [
            (bad_slo.as_str(), "topo.txt:5: client 0 (\"C0\"): SLO -1 s"),
            (
                dup.as_str(),
                "topo.txt:6: client 1 (\"C0\"): the name appears twice",
            ),
            (
                two_vms.as_str(),
                "topo.txt:15: server host \"server001\" has VMs \"1\" and \"2\"",
            ),
            (no_trace.as_str(), "topo.txt:5: missing field `trace`"),
            ("{ \"clients\": [", "topo.txt:1: EOF"),
            (
                r#"{"clients": [], "clientVMs": [], "serverVMs": []}"#,
                "topo.txt:1: \"clients\" is empty",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
        assert!(!is_wc_topology("{\"clients\": []}"));
    }
}
