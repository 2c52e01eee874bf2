//! `tailbound host add|ls|token --server URL`: the hosts of a running controller service
//! (`tailbound serve`): register a host with its NIC rate and storage, list them, and issue a
//! host agent's own token (`tailbound agent --token-file`, `tailbound vdc enforcer
//! --token-file`). Adding hosts and issuing tokens take the admin token (`--token-file` or
//! `TAILBOUND_TOKEN`).

use super::tenant::{call, client, Conn};
use crate::output;
use crate::table::render;
use crate::Outcome;
use clap::{Args, Subcommand};
use hyper::Method;
use serde_json::{json, Value};
use tailbound_service::api::{HostToken, HostView};

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Register a host (its NIC rate each way, its storage if it serves from storage)
    Add(AddArgs),
    /// List the registered hosts
    Ls(LsArgs),
    /// Issue a new token for the host's agent, printed once (the host's earlier token stops
    /// working; the service keeps only its hash)
    Token(TokenArgs),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// the host's name (1 to 64 characters from [A-Za-z0-9._-])
    pub name: String,
    /// NIC rate each way: bytes/s or a rate with a unit, e.g. 1Gbit, 125MB/s
    #[arg(long, value_name = "RATE")]
    pub link: String,
    /// storage devices' service rate [busy-s/s] (1 for one SSD); absent: no storage
    #[arg(long, value_name = "RATE")]
    pub storage: Option<f64>,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub conn: Conn,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// the host whose agent gets the token
    pub name: String,
}

pub fn run(c: HostCommand) -> anyhow::Result<Outcome> {
    match c {
        HostCommand::Add(a) => add(a),
        HostCommand::Ls(a) => ls(a),
        HostCommand::Token(a) => token(a),
    }
}

/// The link as the service reads it: a plain number stays a number (bytes/s), anything else
/// is sent as text for the service to parse and, if need be, refuse with the field named.
fn link_value(link: &str) -> Value {
    match link.trim().parse::<f64>() {
        Ok(v) => json!(v),
        Err(_) => json!(link),
    }
}

fn add(a: AddArgs) -> anyhow::Result<Outcome> {
    let c = client(&a.conn)?;
    let mut body = json!({"name": a.name, "link": link_value(&a.link)});
    if let Some(s) = a.storage {
        body["storage"] = json!(s);
    }
    let h: HostView = call(&c, Method::POST, "/v1/hosts", Some(&body))?;
    if a.conn.json {
        output::print_json(&h)?;
    } else {
        output::print(&format!(
            "added host {}: link {:.0} bytes/s each way, {}\n",
            h.name,
            h.link_bytes_per_s,
            h.storage_rate
                .map_or("no storage".into(), |s| format!("storage {s} busy-s/s"))
        ))?;
    }
    Ok(Outcome::Ok)
}

fn ls(a: LsArgs) -> anyhow::Result<Outcome> {
    let c = client(&a.conn)?;
    let list: Vec<HostView> = call(&c, Method::GET, "/v1/hosts", None)?;
    if a.conn.json {
        output::print_json(&output::Items { items: &list })?;
        return Ok(Outcome::Ok);
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|h| {
            vec![
                h.name.clone(),
                format!("{:.0}", h.link_bytes_per_s),
                h.storage_rate.map_or("-".into(), |s| s.to_string()),
            ]
        })
        .collect();
    output::print(&render(
        &["host", "link [bytes/s]", "storage [busy-s/s]"],
        &rows,
    ))?;
    Ok(Outcome::Ok)
}

fn token(a: TokenArgs) -> anyhow::Result<Outcome> {
    let c = client(&a.conn)?;
    let path = format!("/v1/hosts/{}/token", path_segment(&a.name)?);
    let t: HostToken = call(&c, Method::POST, &path, None)?;
    if a.conn.json {
        output::print_json(&t)?;
    } else {
        output::note(format_args!(
            "a new token for host {}'s agent (shown once; its earlier token no longer works):",
            t.host
        ));
        output::print(&format!("{}\n", t.token))?;
    }
    Ok(Outcome::Ok)
}

/// A host name as one path segment: the service's names follow the protocol's id rule (1 to 64
/// characters from `[A-Za-z0-9._-]`), so anything else is refused here rather than sent to a
/// different route.
fn path_segment(name: &str) -> anyhow::Result<&str> {
    if tailbound_control::protocol::valid_id(name) && name != "." && name != ".." {
        Ok(name)
    } else {
        anyhow::bail!("host {name:?}: expected 1 to 64 characters from [A-Za-z0-9._-]")
    }
}
