//! The host map: where the hosts of scenarios and decisions are on real machines, and how each
//! tenant's packets are recognised. TOML or JSON (by the file name: `.json` is JSON).
//!
//! ```toml
//! [[hosts]]
//! name = "client1"             # the host name used in scenarios and decisions
//! netns = "tb-client1"         # optional: the host is this network namespace on this machine
//! [[hosts.interfaces]]
//! name = "eth0"                # the interface the host sends tenant traffic from
//! address = "10.90.0.1"        # its IPv4 address (tenant endpoints default to it)
//! aliases = ["10.90.1.1"]      # optional: more addresses of the interface, e.g. one per
//!                              # tenant VM, which tenant endpoints may name
//! link = "1Gbit"               # its link rate: the root class of its tc configuration
//!
//! [[hosts]]
//! name = "switch"
//! role = "switch"              # a switch: each port classifies on the DSCP senders set
//! netns = "tb-switch"
//! [[hosts.interfaces]]
//! name = "to-server1"          # a port, shaped toward the host behind it; no address
//! link = "1Gbit"
//!
//! [[tenants]]
//! name = "web"
//! client = { host = "client1" }                       # address: the host's first interface's
//! server = { host = "server1", port = 11211 }         # optional when the decisions place it
//! protocol = "tcp"                                    # optional: tcp | udp; default both
//! ```
//!
//! An endpoint is `{host, address?, port?}`: the address selects the host's interface (default:
//! its first interface); a port narrows the match (the server's port is usually known, the
//! client's is ephemeral). Unknown keys are errors. Parsing does no I/O: [`HostMap::parse`]
//! takes the text and the file name for messages; reading the file is the caller's.

use crate::error::HostMapError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::net::Ipv4Addr;
use tailbound_model::units::parse_rate_bytes_per_s;

/// The slowest link a host map may declare: 1 kbit/s [bytes/s].
pub const MIN_LINK_BYTES_PER_S: f64 = 125.0;

/// A transport protocol a filter can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    /// The IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
        }
    }
}

/// What a host is: an end host sends tenant traffic (per-tenant classes and filters on its
/// interfaces); a switch forwards it (per-priority classes, filters on the DSCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum HostRole {
    #[default]
    Host,
    Switch,
}

/// The validated host map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostMap {
    /// the file it came from, for messages
    pub origin: String,
    pub hosts: Vec<Host>,
    pub tenants: Vec<TenantTraffic>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Host {
    pub name: String,
    /// the network namespace this host is on this machine; `None`: the machine itself
    pub netns: Option<String>,
    pub role: HostRole,
    pub interfaces: Vec<Interface>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interface {
    pub name: String,
    /// required on end hosts, absent on switch ports
    pub address: Option<Ipv4Addr>,
    /// more addresses of the interface that tenant endpoints may name (end hosts only)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<Ipv4Addr>,
    /// link rate [bytes/s]
    pub link_bytes_per_s: f64,
}

/// How one tenant's packets are recognised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantTraffic {
    pub name: String,
    pub client: Endpoint,
    /// `None`: the decisions say where the tenant runs
    pub server: Option<Endpoint>,
    /// `None`: TCP and UDP
    pub protocol: Option<Protocol>,
}

/// A tenant's end on one host: the interface's address (resolved) and an optional port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Endpoint {
    pub host: String,
    /// resolved: the given address, or the host's first interface's
    pub address: Ipv4Addr,
    /// whether the address was given (when the decisions move a tenant to another server, a
    /// given address stays with the host it belongs to)
    pub address_given: bool,
    pub port: Option<u16>,
}

/// The format a JSON host map may name in `"format"`, as the CLI's JSON outputs do.
pub const HOSTS_FORMAT: &str = "tailbound.hosts/1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "HostMap"))]
struct RawMap {
    /// optional: `tailbound.hosts/1`
    format: Option<String>,
    /// optional: the tool that wrote the file; informative only
    #[allow(dead_code)]
    tool: Option<String>,
    hosts: Vec<RawHost>,
    #[serde(default)]
    tenants: Vec<RawTenant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RawHost {
    name: String,
    netns: Option<String>,
    #[serde(default)]
    role: HostRole,
    interfaces: Vec<RawInterface>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RawInterface {
    name: String,
    address: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    link: RawRate,
}

#[derive(Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
enum RawRate {
    Number(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RawTenant {
    name: String,
    client: RawEndpoint,
    server: Option<RawEndpoint>,
    protocol: Option<Protocol>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RawEndpoint {
    host: String,
    address: Option<String>,
    port: Option<u32>,
}

/// Longest interface name Linux accepts (IFNAMSIZ - 1).
const MAX_IFNAME: usize = 15;

impl HostMap {
    /// The JSON Schema of a host map (TOML files validate as the JSON value of their TOML),
    /// for editors and `tailbound schema hosts`.
    #[cfg(feature = "schema")]
    pub fn schema() -> schemars::schema::RootSchema {
        schemars::schema_for!(RawMap)
    }

    /// Parses and validates a host map; `origin` is the file name (`.json` selects JSON, any
    /// other name TOML) and prefixes every message.
    pub fn parse(text: &str, origin: &str) -> Result<HostMap, HostMapError> {
        let raw: RawMap = if origin.ends_with(".json") {
            serde_json::from_str(text).map_err(|e| HostMapError::Syntax {
                file: origin.to_string(),
                message: e.to_string(),
            })?
        } else {
            toml::from_str(text).map_err(|e| HostMapError::Syntax {
                file: origin.to_string(),
                message: e.to_string(),
            })?
        };
        let bad = |at: String, field: &str, message: String| HostMapError::Field {
            file: origin.to_string(),
            at,
            field: field.to_string(),
            message,
        };
        if let Some(format) = raw.format.as_deref().filter(|f| *f != HOSTS_FORMAT) {
            return Err(bad(
                "the file".into(),
                "format",
                format!("{format:?} is not allowed; this tailbound reads host maps in format {HOSTS_FORMAT:?}"),
            ));
        }
        if raw.hosts.is_empty() {
            return Err(bad(
                "the map".into(),
                "hosts",
                "is empty; list every host with [[hosts]]".into(),
            ));
        }
        let mut hosts: Vec<Host> = Vec::with_capacity(raw.hosts.len());
        let mut namespaces = HashSet::new();
        for h in raw.hosts {
            let at = format!("host {:?}", h.name);
            check_name(&h.name).map_err(|m| bad(at.clone(), "name", m))?;
            if hosts.iter().any(|o| o.name == h.name) {
                return Err(bad(
                    at,
                    "name",
                    "appears twice; host names must be unique".into(),
                ));
            }
            if let Some(ns) = &h.netns {
                check_name(ns).map_err(|m| bad(at.clone(), "netns", m))?;
                if !namespaces.insert(ns.clone()) {
                    return Err(bad(
                        at,
                        "netns",
                        format!("{ns:?} is another host's namespace; each host has its own"),
                    ));
                }
            }
            if h.interfaces.is_empty() {
                return Err(bad(
                    at,
                    "interfaces",
                    "is empty; list the interfaces it sends from with [[hosts.interfaces]]".into(),
                ));
            }
            let mut interfaces: Vec<Interface> = Vec::with_capacity(h.interfaces.len());
            for i in h.interfaces {
                let at = format!("host {:?}, interface {:?}", h.name, i.name);
                check_ifname(&i.name).map_err(|m| bad(at.clone(), "name", m))?;
                if interfaces.iter().any(|o| o.name == i.name) {
                    return Err(bad(at, "name", "appears twice on this host".into()));
                }
                let link = match &i.link {
                    RawRate::Number(v) => Ok(*v),
                    RawRate::Text(s) => parse_rate_bytes_per_s(s).map_err(|e| e.to_string()),
                };
                let quoted = match &i.link {
                    RawRate::Number(v) => v.to_string(),
                    RawRate::Text(s) => format!("{s:?}"),
                };
                let link = link.map_err(|e| bad(at.clone(), "link", e))?;
                if !(link.is_finite() && link >= MIN_LINK_BYTES_PER_S) {
                    return Err(bad(
                        at,
                        "link",
                        format!(
                            "{quoted} is not a link rate; expected at least 1Kbit, e.g. \"1Gbit\""
                        ),
                    ));
                }
                let address = match (&i.address, h.role) {
                    (None, HostRole::Host) => {
                        return Err(bad(
                            at,
                            "address",
                            "is missing; an end host's interface needs its IPv4 address".into(),
                        ))
                    }
                    (Some(a), HostRole::Switch) => {
                        return Err(bad(
                            at,
                            "address",
                            format!("{a:?} is set on a switch port; switch ports classify on the DSCP and take no address"),
                        ))
                    }
                    (None, HostRole::Switch) => None,
                    (Some(a), HostRole::Host) => {
                        Some(parse_ipv4(a).map_err(|m| bad(at.clone(), "address", m))?)
                    }
                };
                if !i.aliases.is_empty() && h.role == HostRole::Switch {
                    return Err(bad(
                        at,
                        "aliases",
                        "are set on a switch port; switch ports classify on the DSCP and take no address".into(),
                    ));
                }
                let aliases = i
                    .aliases
                    .iter()
                    .map(|a| parse_ipv4(a))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|m| bad(at.clone(), "aliases", m))?;
                interfaces.push(Interface {
                    name: i.name,
                    address,
                    aliases,
                    link_bytes_per_s: link,
                });
            }
            hosts.push(Host {
                name: h.name,
                netns: h.netns,
                role: h.role,
                interfaces,
            });
        }
        let mut tenants: Vec<TenantTraffic> = Vec::with_capacity(raw.tenants.len());
        for t in raw.tenants {
            let at = format!("tenant {:?}", t.name);
            if t.name.trim().is_empty() {
                return Err(bad(
                    at,
                    "name",
                    "is empty; expected the tenant's name in the decisions".into(),
                ));
            }
            if tenants.iter().any(|o| o.name == t.name) {
                return Err(bad(
                    at,
                    "name",
                    "appears twice; tenant names must be unique".into(),
                ));
            }
            let client = endpoint(&hosts, &t.client)
                .map_err(|(field, m)| bad(at.clone(), &format!("client.{field}"), m))?;
            let server = t
                .server
                .as_ref()
                .map(|s| endpoint(&hosts, s))
                .transpose()
                .map_err(|(field, m)| bad(at.clone(), &format!("server.{field}"), m))?;
            tenants.push(TenantTraffic {
                name: t.name,
                client,
                server,
                protocol: t.protocol,
            });
        }
        Ok(HostMap {
            origin: origin.to_string(),
            hosts,
            tenants,
        })
    }

    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    pub fn tenant(&self, name: &str) -> Option<&TenantTraffic> {
        self.tenants.iter().find(|t| t.name == name)
    }

    /// The names of the hosts, for messages.
    pub fn host_names(&self) -> String {
        self.hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Host {
    /// The interface that has `address` (its own or an alias).
    pub fn interface_with(&self, address: Ipv4Addr) -> Option<&Interface> {
        self.interfaces
            .iter()
            .find(|i| i.address == Some(address) || i.aliases.contains(&address))
    }

    /// The first interface's address (end hosts always have one).
    pub fn first_address(&self) -> Option<Ipv4Addr> {
        self.interfaces.iter().find_map(|i| i.address)
    }
}

/// Resolves an endpoint against the hosts; errors name the field.
fn endpoint(hosts: &[Host], e: &RawEndpoint) -> Result<Endpoint, (&'static str, String)> {
    let host = hosts.iter().find(|h| h.name == e.host).ok_or_else(|| {
        (
            "host",
            format!(
                "unknown host {:?}; the map's hosts are {}",
                e.host,
                hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    if host.role == HostRole::Switch {
        return Err((
            "host",
            format!("{:?} is a switch; tenants run on end hosts", e.host),
        ));
    }
    let (address, address_given) = match &e.address {
        Some(a) => {
            let a = parse_ipv4(a).map_err(|m| ("address", m))?;
            if host.interface_with(a).is_none() {
                return Err((
                    "address",
                    format!(
                        "{a} is not an address of host {:?}; its interfaces have {}",
                        host.name,
                        host.interfaces
                            .iter()
                            .flat_map(|i| i.address.iter().chain(&i.aliases))
                            .map(|a| a.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            (a, true)
        }
        None => (
            host.first_address()
                .ok_or(("address", format!("host {:?} has no address", host.name)))?,
            false,
        ),
    };
    let port = match e.port {
        None => None,
        Some(p) if (1..=65535).contains(&p) => Some(p as u16),
        Some(p) => return Err(("port", format!("{p} is not a port; expected 1 to 65535"))),
    };
    Ok(Endpoint {
        host: host.name.clone(),
        address,
        address_given,
        port,
    })
}

fn parse_ipv4(s: &str) -> Result<Ipv4Addr, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an IPv4 address; expected e.g. \"10.90.0.1\""))
}

/// Host and namespace names go into file names and commands: letters, digits, `.`, `_`, `-`.
fn check_name(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 64 {
        return Err(format!("{s:?} must have 1 to 64 characters"));
    }
    if s.starts_with('.')
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(format!(
            "{s:?} is not allowed; use letters, digits, '.', '_' and '-' (not first '.')"
        ));
    }
    Ok(())
}

fn check_ifname(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_IFNAME {
        return Err(format!(
            "{s:?} is not an interface name; Linux names have 1 to {MAX_IFNAME} characters"
        ));
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(format!(
            "{s:?} is not an interface name; use letters, digits, '.', '_', '-' and '@'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[hosts]]
name = "client1"
netns = "ns-c"
[[hosts.interfaces]]
name = "eth0"
address = "10.0.0.1"
link = "1Gbit"

[[hosts]]
name = "server1"
[[hosts.interfaces]]
name = "eth0"
address = "10.0.0.2"
link = 125000000

[[tenants]]
name = "web"
client = { host = "client1" }
server = { host = "server1", port = 11211 }
protocol = "tcp"
"#;

    fn err(text: &str) -> String {
        HostMap::parse(text, "m.toml").unwrap_err().to_string()
    }

    #[test]
    fn tenant_endpoints_may_name_an_alias_of_an_interface() {
        let text = GOOD
            .replacen(
                "address = \"10.0.0.1\"",
                "address = \"10.0.0.1\"\naliases = [\"10.0.1.1\", \"10.0.1.2\"]",
                1,
            )
            .replace(
                "client = { host = \"client1\" }",
                "client = { host = \"client1\", address = \"10.0.1.2\" }",
            );
        let m = HostMap::parse(&text, "m.toml").unwrap();
        let web = m.tenant("web").unwrap();
        assert_eq!(web.client.address, "10.0.1.2".parse::<Ipv4Addr>().unwrap());
        let host = m.host("client1").unwrap();
        assert_eq!(
            host.interface_with(web.client.address).unwrap().name,
            "eth0"
        );
        // an address that is neither the interface's nor an alias is named with the aliases
        let e = err(&text.replace("address = \"10.0.1.2\" }", "address = \"10.0.1.9\" }"));
        assert!(e.contains("10.0.1.9") && e.contains("10.0.1.1"), "{e}");
        let e = err(&text.replace("aliases = [\"10.0.1.1\"", "aliases = [\"ten\""));
        assert!(e.contains("aliases") && e.contains("\"ten\""), "{e}");
    }

    #[test]
    fn the_format_and_tool_fields_are_optional_and_a_foreign_format_is_refused() {
        let stamped = format!("format = \"tailbound.hosts/1\"\ntool = \"tailbound 0.1.0\"\n{GOOD}");
        let a = HostMap::parse(&stamped, "m.toml").unwrap();
        assert_eq!(a.hosts, HostMap::parse(GOOD, "m.toml").unwrap().hosts);
        let e = err(&stamped.replace("hosts/1", "hosts/2"));
        assert!(
            e.contains("format") && e.contains("tailbound.hosts/2"),
            "{e}"
        );
    }

    #[test]
    fn a_good_map_resolves_endpoints() {
        let m = HostMap::parse(GOOD, "m.toml").unwrap();
        assert_eq!(m.hosts.len(), 2);
        assert_eq!(m.hosts[0].interfaces[0].link_bytes_per_s, 125e6);
        let t = m.tenant("web").unwrap();
        assert_eq!(t.client.address, Ipv4Addr::new(10, 0, 0, 1));
        assert!(!t.client.address_given);
        assert_eq!(t.server.as_ref().unwrap().port, Some(11211));
        assert_eq!(t.protocol, Some(Protocol::Tcp));
    }

    #[test]
    fn json_is_chosen_by_the_file_name() {
        let json = r#"{"hosts": [{"name": "h", "interfaces": [{"name": "eth0", "address": "10.0.0.1", "link": "10Mbit"}]}]}"#;
        let m = HostMap::parse(json, "m.json").unwrap();
        assert_eq!(m.hosts[0].interfaces[0].link_bytes_per_s, 1.25e6);
    }

    #[test]
    fn errors_name_the_file_the_place_the_field_and_the_value() {
        let e = err(&GOOD.replace("host = \"server1\", port", "host = \"server9\", port"));
        assert!(
            e.contains("m.toml")
                && e.contains("tenant \"web\"")
                && e.contains("server.host")
                && e.contains("server9")
                && e.contains("client1, server1"),
            "{e}"
        );
        let e = err(&GOOD.replace("\"1Gbit\"", "\"fast\""));
        assert!(
            e.contains("interface \"eth0\"") && e.contains("link") && e.contains("fast"),
            "{e}"
        );
        let e = err(&GOOD.replace("\"10.0.0.1\"", "\"10.0.0.300\""));
        assert!(e.contains("address") && e.contains("10.0.0.300"), "{e}");
        let e = err(&GOOD.replace("port = 11211", "port = 70000"));
        assert!(e.contains("server.port") && e.contains("70000"), "{e}");
        let e = err(&GOOD.replace("name = \"server1\"", "name = \"client1\""));
        assert!(e.contains("appears twice"), "{e}");
        let e = err(&GOOD.replace("protocol = \"tcp\"", "protocl = \"tcp\""));
        assert!(e.contains("m.toml") && e.contains("protocl"), "{e}");
        let e = err(&GOOD.replace(
            "name = \"eth0\"\naddress = \"10.0.0.1\"",
            "name = \"eth0 x\"\naddress = \"10.0.0.1\"",
        ));
        assert!(e.contains("eth0 x") && e.contains("interface name"), "{e}");
        let e = err(&GOOD.replace(
            "client = { host = \"client1\" }",
            "client = { host = \"client1\", address = \"10.0.0.2\" }",
        ));
        assert!(
            e.contains("client.address") && e.contains("10.0.0.2") && e.contains("10.0.0.1"),
            "{e}"
        );
        let e = err(&GOOD.replace("address = \"10.0.0.2\"\n", ""));
        assert!(e.contains("address") && e.contains("missing"), "{e}");
    }

    #[test]
    fn switch_ports_take_no_address_and_host_no_tenant() {
        let sw = "[[hosts]]\nname = \"sw\"\nrole = \"switch\"\n[[hosts.interfaces]]\nname = \"p1\"\nlink = \"1Gbit\"\n";
        assert!(HostMap::parse(sw, "m.toml").is_ok());
        let e = err(&sw.replace("name = \"p1\"", "name = \"p1\"\naddress = \"10.0.0.9\""));
        assert!(e.contains("switch port"), "{e}");
        let e = err(&format!(
            "{sw}[[tenants]]\nname = \"t\"\nclient = {{ host = \"sw\" }}\n"
        ));
        assert!(e.contains("is a switch"), "{e}");
    }
}
