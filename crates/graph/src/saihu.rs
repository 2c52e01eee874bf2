//! Saihu's JSON network description (the "output-port network" of
//! github.com/adfeel220/Saihu-TSN-Analysis-Tool-Integration, README §Output-Port Network), so a
//! network can be analyzed here and by DNC, Panco and xTFA through Saihu.
//!
//! The format: `network` (name, `multiplexing` FIFO or ARBITRARY, default `time_unit`,
//! `data_unit`, `rate_unit`), `flows` (name, `path` of server names, optional `multicast`
//! paths, `arrival_curve` {`bursts`, `rates`}: the minimum of those token buckets,
//! `max_packet_length`, own units) and `servers` (name, `service_curve` {`latencies`,
//! `rates`}: the maximum of those rate-latency curves, `capacity`, own units). A value is a
//! number in the applicable default unit or a string with its unit: time `s`, `m` (minute),
//! `h` with a decimal prefix (`us`, `ms`); data `b` (bit) or `B` (byte) (`kB`, `Mb`); rate
//! data `p` time (`Mbps`, `kBps`). Without units Saihu reads seconds, bits and bits per second.
//!
//! Import: each multicast path becomes a flow of its own named `flow/path` (how Saihu hands
//! multicast flows to every tool but xTFA); `capacity`, `packetizer`, `analysis_option` and
//! minimum packet lengths are not modelled here and are listed in [`Imported::ignored`].
//! Export writes values as strings in seconds, bytes and bytes per second; static priority has
//! no spelling in the format and is refused.

use crate::{Graph, GraphError, GraphFlow, RateLatencySpec, Scheduling, Server, TokenBucketSpec};
use serde_json::{json, Map, Value};

/// A graph read from Saihu's format, with what the format said that the graph does not keep.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub graph: Graph,
    /// one line per dropped field, naming where it was
    pub ignored: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Time,
    Data,
    Rate,
}

impl Kind {
    fn accepted(self) -> &'static str {
        match self {
            Kind::Time => {
                "a time unit: s, m (minute) or h with an optional decimal prefix (us, ms)"
            }
            Kind::Data => {
                "a data unit: b (bit) or B (byte) with an optional decimal prefix (kB, Mb)"
            }
            Kind::Rate => {
                "a rate unit: data unit + p + time unit with an optional prefix (Mbps, kBps)"
            }
        }
    }
}

fn multiplier(prefix: &str) -> Option<f64> {
    Some(match prefix {
        "" => 1.0,
        "a" => 1e-18,
        "f" => 1e-15,
        "p" => 1e-12,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        _ => return None,
    })
}

fn time_base(c: char) -> Option<f64> {
    match c {
        's' => Some(1.0),
        'm' => Some(60.0),
        'h' => Some(3600.0),
        _ => None,
    }
}

fn data_base(c: char) -> Option<f64> {
    match c {
        'b' => Some(1.0 / 8.0),
        'B' => Some(1.0),
        _ => None,
    }
}

/// The factor turning a value in `unit` into seconds, bytes or bytes per second.
fn unit_factor(unit: &str, kind: Kind) -> Option<f64> {
    let chars: Vec<char> = unit.chars().collect();
    let (base, rest) = match kind {
        Kind::Time => {
            let (&last, rest) = chars.split_last()?;
            (time_base(last)?, rest)
        }
        Kind::Data => {
            let (&last, rest) = chars.split_last()?;
            (data_base(last)?, rest)
        }
        Kind::Rate => {
            if chars.len() < 3 || chars[chars.len() - 2] != 'p' {
                return None;
            }
            let n = chars.len();
            (
                data_base(chars[n - 3])? / time_base(chars[n - 1])?,
                &chars[..n - 3],
            )
        }
    };
    let prefix: String = rest.iter().collect();
    Some(multiplier(&prefix)? * base)
}

/// Where a value sits, for messages.
struct At<'a> {
    what: &'static str,
    name: &'a str,
    field: &'static str,
}

impl At<'_> {
    fn err(&self, value: &Value, expected: impl Into<String>) -> GraphError {
        GraphError::Field {
            what: self.what,
            name: self.name.to_string(),
            field: self.field,
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

/// A value in base units: a number in `default` unit, or a string "<number><unit>".
fn quantity(v: &Value, kind: Kind, default: &str, at: &At) -> Result<f64, GraphError> {
    let (number, unit) = match v {
        Value::Number(n) => (n.as_f64(), default.to_string()),
        Value::String(s) => {
            let s = s.trim();
            let split = s
                .char_indices()
                .map(|(i, _)| i)
                .chain([s.len()])
                .rev()
                .find(|&i| s[..i].parse::<f64>().is_ok());
            match split {
                Some(i) => {
                    let unit = s[i..].trim();
                    let unit = if unit.is_empty() { default } else { unit };
                    (s[..i].parse::<f64>().ok(), unit.to_string())
                }
                None => (None, String::new()),
            }
        }
        _ => (None, String::new()),
    };
    let Some(number) = number.filter(|x| x.is_finite()) else {
        return Err(at.err(
            v,
            format!(
                "a finite number or a string of a number and {}",
                kind.accepted()
            ),
        ));
    };
    let Some(factor) = unit_factor(&unit, kind) else {
        return Err(at.err(v, format!("unit {unit:?} is not {}", kind.accepted())));
    };
    Ok(number * factor)
}

fn list<'a>(obj: &'a Value, key: &str, at: &At) -> Result<&'a Vec<Value>, GraphError> {
    match obj.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(at.err(v, format!("an array `{key}`"))),
        None => Err(at.err(&Value::Null, format!("an object with an array `{key}`"))),
    }
}

fn text<'a>(obj: &'a Value, key: &str, default: &'a str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or(default)
}

/// Units in force for one flow or server: its own, else the network's, else Saihu's.
fn units<'a>(obj: &'a Value, network: &'a Value) -> [&'a str; 3] {
    let pick = |key: &str, saihu: &'static str| -> &'a str {
        obj.get(key)
            .and_then(Value::as_str)
            .or_else(|| network.get(key).and_then(Value::as_str))
            .unwrap_or(saihu)
    };
    [
        pick("time_unit", "s"),
        pick("data_unit", "b"),
        pick("rate_unit", "bps"),
    ]
}

/// Reads Saihu's JSON network description.
pub fn import(text_in: &str) -> Result<Imported, GraphError> {
    let root: Value = serde_json::from_str(text_in).map_err(|e| GraphError::Syntax {
        format: "Saihu JSON",
        message: e.to_string(),
    })?;
    let top = At {
        what: "Saihu network",
        name: "",
        field: "(top level)",
    };
    let network = root
        .get("network")
        .ok_or_else(|| top.err(&root, "an object with `network`, `flows` and `servers`"))?;
    let name = text(network, "name", "").to_string();
    let net_at = At {
        what: "Saihu network",
        name: &name,
        field: "multiplexing",
    };
    let scheduling = match text(network, "multiplexing", "FIFO")
        .to_ascii_uppercase()
        .as_str()
    {
        "FIFO" => Scheduling::Fifo,
        "ARBITRARY" => Scheduling::Arbitrary,
        _ => return Err(net_at.err(&network["multiplexing"], "FIFO or ARBITRARY")),
    };
    let mut ignored = Vec::new();
    for key in [
        "packetizer",
        "analysis_option",
        "min_packet_length",
        "max_packet_length",
    ] {
        if let Some(v) = network.get(key) {
            ignored.push(format!("network.{key} = {v}"));
        }
    }
    let mut servers = Vec::new();
    for s in list(&root, "servers", &top)? {
        let sname = text(s, "name", "");
        let at = |field| At {
            what: "server",
            name: sname,
            field,
        };
        if sname.is_empty() {
            return Err(at("name").err(s.get("name").unwrap_or(&Value::Null), "a non-empty name"));
        }
        let [time_u, _, rate_u] = units(s, network);
        let curve = s.get("service_curve").unwrap_or(&Value::Null);
        let lat = list(curve, "latencies", &at("service_curve.latencies"))?;
        let rates = list(curve, "rates", &at("service_curve.rates"))?;
        if lat.len() != rates.len() || lat.is_empty() {
            return Err(at("service_curve").err(
                curve,
                "`latencies` and `rates` of the same, non-zero length",
            ));
        }
        let service = lat
            .iter()
            .zip(rates)
            .map(|(l, r)| {
                Ok(RateLatencySpec {
                    latency_s: quantity(l, Kind::Time, time_u, &at("service_curve.latencies"))?,
                    rate_bytes_per_s: quantity(r, Kind::Rate, rate_u, &at("service_curve.rates"))?,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        if let Some(v) = s.get("capacity") {
            ignored.push(format!("server {sname:?}: capacity = {v}"));
        }
        servers.push(Server {
            name: sname.to_string(),
            service,
            scheduling,
        });
    }
    let mut flows = Vec::new();
    for f in list(&root, "flows", &top)? {
        let fname = text(f, "name", "");
        let at = |field| At {
            what: "flow",
            name: fname,
            field,
        };
        if fname.is_empty() {
            return Err(at("name").err(f.get("name").unwrap_or(&Value::Null), "a non-empty name"));
        }
        let [_, data_u, rate_u] = units(f, network);
        let curve = f.get("arrival_curve").unwrap_or(&Value::Null);
        let bursts = list(curve, "bursts", &at("arrival_curve.bursts"))?;
        let rates = list(curve, "rates", &at("arrival_curve.rates"))?;
        if bursts.len() != rates.len() || bursts.is_empty() {
            return Err(
                at("arrival_curve").err(curve, "`bursts` and `rates` of the same, non-zero length")
            );
        }
        let arrival = bursts
            .iter()
            .zip(rates)
            .map(|(b, r)| {
                Ok(TokenBucketSpec {
                    burst_bytes: quantity(b, Kind::Data, data_u, &at("arrival_curve.bursts"))?,
                    rate_bytes_per_s: quantity(r, Kind::Rate, rate_u, &at("arrival_curve.rates"))?,
                })
            })
            .collect::<Result<Vec<_>, GraphError>>()?;
        let max_packet_bytes = f
            .get("max_packet_length")
            .map(|v| quantity(v, Kind::Data, data_u, &at("max_packet_length")))
            .transpose()?;
        if let Some(v) = f.get("min_packet_length") {
            ignored.push(format!("flow {fname:?}: min_packet_length = {v}"));
        }
        let path_of = |v: &Value, field| -> Result<Vec<String>, GraphError> {
            match v {
                Value::Array(a) => a
                    .iter()
                    .map(|s| {
                        s.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| at(field).err(s, "a server name"))
                    })
                    .collect(),
                _ => Err(at(field).err(v, "an array of server names")),
            }
        };
        let flow = |name: String, path: Vec<String>| GraphFlow {
            name,
            path,
            arrival: arrival.clone(),
            priority: 0,
            max_packet_bytes,
            mmpp: None,
            trace: None,
            percentile: None,
        };
        flows.push(flow(
            fname.to_string(),
            path_of(f.get("path").unwrap_or(&Value::Null), "path")?,
        ));
        if let Some(m) = f.get("multicast") {
            let Value::Array(paths) = m else {
                return Err(at("multicast").err(m, "an array of {name, path}"));
            };
            for (i, p) in paths.iter().enumerate() {
                let pname = p
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or(format!("p{}", i + 1));
                let path = path_of(p.get("path").unwrap_or(&Value::Null), "multicast.path")?;
                flows.push(flow(format!("{fname}/{pname}"), path));
            }
        }
    }
    let graph = Graph {
        name,
        servers,
        flows,
    };
    graph.validate()?;
    Ok(Imported { graph, ignored })
}

/// A value as Saihu's "<number><unit>" string: Rust writes the shortest decimal that reads
/// back to the same f64 (JSON numbers would go through serde_json's faster, not always
/// correctly rounded float parser, and a round trip could move the last bit).
fn with_unit(x: f64, unit: &str) -> Value {
    Value::String(format!("{x}{unit}"))
}

/// Writes Saihu's JSON network description (values as strings in seconds, bytes and bytes per
/// second, e.g. `"0.00001s"`, `"500000Bps"`).
pub fn export(graph: &Graph) -> Result<String, GraphError> {
    graph.validate()?;
    let multiplexing = match graph.servers.first().map(|s| s.scheduling) {
        None | Some(Scheduling::Fifo) => "FIFO",
        Some(Scheduling::Arbitrary) => "ARBITRARY",
        Some(Scheduling::StaticPriority) => "",
    };
    if let Some(s) = graph.servers.iter().find(|s| {
        s.scheduling == Scheduling::StaticPriority
            || s.scheduling.as_str() != graph.servers[0].scheduling.as_str()
    }) {
        return Err(GraphError::Field {
            what: "server",
            name: s.name.clone(),
            field: "scheduling",
            value: s.scheduling.to_string(),
            expected: "Saihu's format has one multiplexing for the whole network, FIFO or ARBITRARY (no static priority)".into(),
        });
    }
    let flows: Vec<Value> = graph
        .flows
        .iter()
        .map(|f| {
            if f.arrival.is_empty() {
                return Err(GraphError::Field {
                    what: "flow",
                    name: f.name.clone(),
                    field: "arrival",
                    value: "[]".into(),
                    expected: "Saihu's format needs token buckets (characterize the trace first)".into(),
                });
            }
            let mut o = Map::new();
            o.insert("name".into(), json!(f.name));
            o.insert("path".into(), json!(f.path));
            o.insert(
                "arrival_curve".into(),
                json!({
                    "bursts": f.arrival.iter().map(|b| with_unit(b.burst_bytes, "B")).collect::<Vec<_>>(),
                    "rates": f.arrival.iter().map(|b| with_unit(b.rate_bytes_per_s, "Bps")).collect::<Vec<_>>(),
                }),
            );
            if let Some(l) = f.max_packet_bytes {
                o.insert("max_packet_length".into(), with_unit(l, "B"));
            }
            Ok(Value::Object(o))
        })
        .collect::<Result<_, GraphError>>()?;
    let servers: Vec<Value> = graph
        .servers
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "service_curve": {
                    "latencies": s.service.iter().map(|c| with_unit(c.latency_s, "s")).collect::<Vec<_>>(),
                    "rates": s.service.iter().map(|c| with_unit(c.rate_bytes_per_s, "Bps")).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    let doc = json!({
        "network": {
            "name": graph.name,
            "multiplexing": multiplexing,
            "time_unit": "s",
            "data_unit": "B",
            "rate_unit": "Bps",
        },
        "flows": flows,
        "servers": servers,
    });
    serde_json::to_string_pretty(&doc)
        .map_err(|e| GraphError::Invalid(format!("writing Saihu JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_saihu() {
        let at = At {
            what: "flow",
            name: "f",
            field: "x",
        };
        let q = |v: Value, k| quantity(&v, k, "b", &at);
        assert_eq!(q(json!("1ms"), Kind::Time).unwrap(), 1e-3);
        assert_eq!(q(json!("2m"), Kind::Time).unwrap(), 120.0);
        assert_eq!(q(json!("2kB"), Kind::Data).unwrap(), 2000.0);
        assert_eq!(q(json!(16), Kind::Data).unwrap(), 2.0);
        assert_eq!(q(json!("4Mbps"), Kind::Rate).unwrap(), 5e5);
        assert_eq!(q(json!("1e-2"), Kind::Data).unwrap(), 1e-2 / 8.0);
        let e = q(json!("4Mbit"), Kind::Rate).unwrap_err().to_string();
        assert!(
            e.contains("flow \"f\"") && e.contains("\"Mbit\"") && e.contains("Mbps"),
            "{e}"
        );
        assert!(q(json!("fast"), Kind::Rate).is_err());
        assert!(q(json!(null), Kind::Rate).is_err());
    }
}
