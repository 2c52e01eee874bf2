//! `tailbound tenant add|rm|ls --server URL`: the operator's side of the controller service
//! (`tailbound serve`). The token comes from `--token-file` or `TAILBOUND_TOKEN`.

use crate::output;
use crate::table::{bound_cell, render, slo_cell};
use crate::Outcome;
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use hyper::Method;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tailbound_service::api::{Admitted, Decision, TenantView};
use tailbound_service::client::ServiceClient;

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Submit a tenant and print the decision (exit 1 when rejected)
    Add(AddArgs),
    /// Depart a tenant
    Rm(RmArgs),
    /// List the admitted tenants
    Ls(LsArgs),
}

#[derive(Debug, Args)]
pub struct Conn {
    /// the service's URL, http://HOST:PORT
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// a file holding the token (default: the TAILBOUND_TOKEN environment variable)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// seconds to wait for an answer
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// print the answer as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// the tenant's name
    pub name: String,
    /// the host its requests come from
    #[arg(long)]
    pub client: String,
    /// its server host (default: placed by the service)
    #[arg(long, value_name = "HOST")]
    pub on: Option<String>,
    /// latency SLO, e.g. 20ms
    #[arg(long)]
    pub slo: String,
    /// SLO percentile, strictly between 0 and 100
    #[arg(long, default_value_t = 99.9)]
    pub percentile: f64,
    /// requests also cross the server's storage
    #[arg(long)]
    pub storage: bool,
    /// a tenant it may burst together with (repeatable)
    #[arg(long, value_name = "TENANT")]
    pub depends_on: Vec<String>,
    /// its trace file (sent in the request)
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub trace: Option<PathBuf>,
    /// a JSON file holding a synthetic generator spec
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// the generator's seed (with --model)
    #[arg(long, requires = "model")]
    pub seed: Option<u64>,
    /// ask whether it would be admitted, changing nothing
    #[arg(long)]
    pub what_if: bool,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub name: String,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub conn: Conn,
}

pub fn run(c: TenantCommand) -> anyhow::Result<Outcome> {
    match c {
        TenantCommand::Add(a) => add(a),
        TenantCommand::Rm(a) => rm(a),
        TenantCommand::Ls(a) => ls(a),
    }
}

/// The token of `--token-file`, else of `TAILBOUND_TOKEN`.
pub fn token(token_file: Option<&std::path::Path>) -> anyhow::Result<String> {
    let token = match token_file {
        Some(p) => Some(super::serve::read_token_file(p, "--token-file")?),
        None => std::env::var("TAILBOUND_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty()),
    };
    match token {
        Some(t) => Ok(t),
        None => bail!("no token: give --token-file FILE or set TAILBOUND_TOKEN"),
    }
}

pub(crate) fn client(c: &Conn) -> anyhow::Result<ServiceClient> {
    let token = Some(token(c.token_file.as_deref())?);
    if !(c.timeout.is_finite() && c.timeout > 0.0 && c.timeout <= 3600.0) {
        bail!("--timeout {}: expected 0 to 3600 seconds", c.timeout);
    }
    ServiceClient::new(&c.server, token, Duration::from_secs_f64(c.timeout)).context("--server")
}

pub(crate) fn call<T: serde::de::DeserializeOwned>(
    c: &ServiceClient,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<T> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok(rt.block_on(c.call(method, path, body))?.1)
}

fn decision_line(d: &Decision) -> String {
    let slo = d
        .slo
        .map(|s| slo_cell(s.percentile, s.latency_s))
        .unwrap_or_default();
    let on = d.server.as_deref().unwrap_or("-");
    if d.admitted {
        format!(
            "admitted {} on {on}{}: bound {} against {slo}, priority {}\n",
            d.tenant,
            if d.placed { " (placed)" } else { "" },
            bound_cell(d.bound_s),
            d.priority.map_or("-".into(), |p| p.to_string())
        )
    } else {
        format!(
            "rejected {}: {}\n",
            d.tenant,
            d.reason.as_deref().unwrap_or("no reason given")
        )
    }
}

fn add(a: AddArgs) -> anyhow::Result<Outcome> {
    let c = client(&a.conn)?;
    let traffic = match (&a.trace, &a.model) {
        (Some(p), None) => json!({"trace": std::fs::read_to_string(p)
            .with_context(|| format!("cannot read --trace {}", p.display()))?}),
        (None, Some(p)) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read --model {}", p.display()))?;
            let spec: Value = serde_json::from_str(&text)
                .with_context(|| format!("--model {}: not JSON", p.display()))?;
            let mut t = json!({"model": spec});
            if let Some(s) = a.seed {
                t["seed"] = json!(s);
            }
            t
        }
        _ => bail!("give exactly one of --trace FILE and --model FILE"),
    };
    let mut body = json!({
        "name": a.name,
        "client": a.client,
        "slo": a.slo,
        "percentile": a.percentile,
        "storage": a.storage,
        "depends_on": a.depends_on,
        "traffic": traffic,
    });
    if let Some(s) = &a.on {
        body["server"] = json!(s);
    }
    let decision = if a.what_if {
        let d: Decision = call(&c, Method::POST, "/v1/what-if", Some(&body))?;
        if a.conn.json {
            output::print_json(&d)?;
        } else {
            output::print(&format!("what-if: {}", decision_line(&d)))?;
        }
        d
    } else {
        let ad: Admitted = call(&c, Method::POST, "/v1/tenants", Some(&body))?;
        if a.conn.json {
            output::print_json(&ad)?;
        } else {
            output::print(&decision_line(&ad.decision))?;
            if let Some(t) = &ad.token {
                output::print(&format!("token: {t}\n"))?;
            }
        }
        ad.decision
    };
    Ok(if decision.admitted {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn rm(a: RmArgs) -> anyhow::Result<Outcome> {
    let c = client(&a.conn)?;
    let d: Decision = call(&c, Method::DELETE, &format!("/v1/tenants/{}", a.name), None)?;
    if a.conn.json {
        output::print_json(&d)?;
    } else {
        output::print(&format!("departed {} (decision {})\n", d.tenant, d.seq))?;
    }
    Ok(Outcome::Ok)
}

fn ls(a: LsArgs) -> anyhow::Result<Outcome> {
    let c = client(&a.conn)?;
    let list: Vec<TenantView> = call(&c, Method::GET, "/v1/tenants", None)?;
    if a.conn.json {
        output::print_json(&output::Items { items: &list })?;
        return Ok(Outcome::Ok);
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.client.clone(),
                format!("{}{}", t.server, if t.placed { " (placed)" } else { "" }),
                slo_cell(t.slo.percentile, t.slo.latency_s),
                bound_cell(t.admitted_bound_s),
                t.priority.map_or("-".into(), |p| p.to_string()),
            ]
        })
        .collect();
    output::print(&render(
        &[
            "tenant",
            "client",
            "server",
            "SLO",
            "bound at admission",
            "priority",
        ],
        &rows,
    ))?;
    Ok(Outcome::Ok)
}
