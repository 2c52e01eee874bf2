//! `tailbound serve --db FILE --listen ADDR [--admin-token-file FILE]`: the controller service
//! (`tailbound-service`): tenants admitted and placed one at a time over HTTP/JSON, Pulsar's
//! VDCs and their controllers (`/v1/vdcs`; enforcers: `tailbound vdc enforcer --controller
//! http://ADDR/v1/vdcs/NAME`), host agents' tokens, state in SQLite. Without `--admin-token-file`, the token stored in the database is kept; a new
//! database gets a fresh one, printed once on stdout.

use crate::output;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use tailbound_admission::Policy;
use tailbound_model::units::Bytes;
use tailbound_service::{AdminToken, Config, Service};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// the SQLite database holding the state (created if missing)
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// where to listen (port 0: any free port, printed on stderr)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,
    /// a file holding the admin token (its SHA-256 replaces the stored one)
    #[arg(long, value_name = "FILE")]
    pub admin_token_file: Option<PathBuf>,
    /// the admission policy (a database keeps the one it was created with)
    #[arg(long, default_value = "snc-meister")]
    pub policy: Policy,
    /// the largest request body (traces travel in it)
    #[arg(long, default_value = "8MiB")]
    pub max_body: Bytes,
    /// mutating requests per second of one client (its token, or its address without
    /// one), sustained and in a burst; beyond it: 429 with Retry-After
    #[arg(long, default_value_t = 1000.0)]
    pub rate_limit: f64,
    /// reads (GET) per second of one client, sustained and in a burst
    #[arg(long, default_value_t = 200.0)]
    pub read_rate_limit: f64,
}

/// Reads a token file: one line, not empty.
pub fn read_token_file(path: &std::path::Path, flag: &str) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {flag} {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        bail!(
            "{flag} {}: expected one token on one line, found {}",
            path.display(),
            if token.is_empty() {
                "nothing"
            } else {
                "whitespace inside"
            }
        );
    }
    Ok(token.to_string())
}

pub fn run(a: ServeArgs) -> anyhow::Result<Outcome> {
    for (flag, v) in [
        ("--rate-limit", a.rate_limit),
        ("--read-rate-limit", a.read_rate_limit),
    ] {
        if !(v.is_finite() && (1e-3..=1e9).contains(&v)) {
            bail!("{flag} {v}: expected requests per second, 0.001 to 1e9");
        }
    }
    let max_body = a.max_body.0;
    if !(1024.0..=1e9).contains(&max_body) {
        bail!("--max-body {max_body} bytes: expected 1KiB to 1GB");
    }
    let admin = match &a.admin_token_file {
        Some(p) => AdminToken::Given(read_token_file(p, "--admin-token-file")?),
        None => AdminToken::Stored,
    };
    let config = Config {
        policy: a.policy,
        max_body_bytes: max_body as usize,
        mutations_per_s: a.rate_limit,
        mutation_burst: a.rate_limit.max(1.0),
        reads_per_s: a.read_rate_limit,
        read_burst: a.read_rate_limit.max(1.0),
    };
    let (service, generated) = Service::open(&a.db, config, admin)
        .with_context(|| format!("cannot start the service on --db {}", a.db.display()))?;
    if let Some(t) = generated {
        output::note(format_args!(
            "a new admin token (shown once; the database keeps only its hash):"
        ));
        output::print(&format!("{t}\n"))?;
    }
    let rt = super::enforcer::runtime()?;
    rt.block_on(async {
        let stop = super::enforcer::stop_signal()?;
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .with_context(|| format!("cannot listen on {} (--listen)", a.listen))?;
        output::note(format_args!(
            "service: listening on http://{} (db {}, policy {}); Ctrl-C stops",
            listener.local_addr()?,
            a.db.display(),
            a.policy
        ));
        tailbound_service::serve(listener, service, stop)
            .await
            .context("service")?;
        output::note(format_args!("service: stopped"));
        Ok(Outcome::Ok)
    })
}
