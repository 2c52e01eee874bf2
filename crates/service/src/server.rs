//! The HTTP/JSON API (axum) over one [`Service`]: the routes of [`ROUTES`], described by the
//! OpenAPI document ([`crate::openapi`]). Every decision is proposed by the [`Engine`],
//! committed to the [`Store`] in one transaction and only then applied in memory and answered;
//! a failed commit answers 500 and changes nothing.
//!
//! Authentication: `Authorization: Bearer TOKEN`, the admin token, a tenant's own (handed
//! out once, when it was admitted) or a host agent's (`POST /v1/hosts/{host}/token`). Every
//! route under `/v1` needs one; mutating routes answer 401 without a valid token; a tenant's
//! token sees and departs only its own tenancy (403 for another's); a host's token reads only
//! that host's decisions and acts only as enforcer `{host}` of VDCs ([`crate::vdc_api`]). `/healthz`, `/metrics`, `/openapi.json` and the read-only status page
//! `/status` are open.

use crate::api::{Admitted, DecisionKind, Health, NewHost, NewTenant};
use crate::auth;
use crate::engine::{prepare, Engine, Proposal};
use crate::error::{parse_json, ServiceError};
use crate::limits::{ClientKey, RateLimits};
use crate::metrics::Metrics;
use crate::store::Store;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path as UrlPath, RawQuery, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tailbound_admission::Policy;
use tailbound_dataplane::clock::{Clock, MonotonicClock};
use tokio::net::TcpListener;

/// Every route: method and path (axum's `{param}` syntax), as the OpenAPI document lists them.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
    ("get", "/status"),
    ("get", "/v1/hosts"),
    ("post", "/v1/hosts"),
    ("get", "/v1/tenants"),
    ("post", "/v1/tenants"),
    ("get", "/v1/tenants/{name}"),
    ("delete", "/v1/tenants/{name}"),
    ("post", "/v1/what-if"),
    ("get", "/v1/decisions"),
    ("get", "/v1/bounds"),
    ("get", "/v1/hosts/{host}/decisions"),
    ("post", "/v1/hosts/{host}/token"),
    ("get", "/v1/agents"),
    ("get", "/v1/vdcs"),
    ("post", "/v1/vdcs"),
    ("get", "/v1/vdcs/{vdc}"),
    ("delete", "/v1/vdcs/{vdc}"),
    ("get", "/v1/vdcs/{vdc}/datacenter"),
    ("get", "/v1/vdcs/{vdc}/status"),
    ("post", "/v1/vdcs/{vdc}/enforcers/{id}/register"),
    ("post", "/v1/vdcs/{vdc}/enforcers/{id}/report"),
    ("get", "/v1/vdcs/{vdc}/enforcers/{id}/allocation"),
];

/// How the service runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// the admission policy; a database keeps the one it was created with
    pub policy: Policy,
    /// the largest request body [bytes] (a trace travels in the body)
    pub max_body_bytes: usize,
    /// mutating requests per second of one client, sustained [1/s] (a client: the token it
    /// presents, or its peer address without one)
    pub mutations_per_s: f64,
    /// mutating requests of one client at once after a quiet period
    pub mutation_burst: f64,
    /// reads (GET) per second of one client, sustained [1/s]
    pub reads_per_s: f64,
    /// reads of one client at once after a quiet period
    pub read_burst: f64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            policy: Policy::SncMeister,
            max_body_bytes: 8 << 20,
            mutations_per_s: 1000.0,
            mutation_burst: 1000.0,
            reads_per_s: 200.0,
            read_burst: 200.0,
        }
    }
}

struct Inner {
    engine: Engine,
    store: Store,
    metrics: Metrics,
    /// bounds of every admitted tenant at decision `seq` (the metrics' headroom)
    bounds: Option<(u64, Vec<crate::api::BoundView>)>,
}

/// Clients with a rate-limit bucket at most, per kind of request.
pub const MAX_LIMITED_CLIENTS: usize = 10_000;

/// The service: its state behind one lock (decisions are serialized), the admin token's
/// digest and the limits.
pub struct Service {
    inner: Mutex<Inner>,
    /// the latest committed decision's number, for the agents' long polls
    version: tokio::sync::watch::Sender<u64>,
    /// host agents as last seen, by host (in memory: after a restart they show up again
    /// at their next poll)
    agents: Mutex<std::collections::BTreeMap<String, (u64, u64)>>,
    admin_sha256: String,
    config: Config,
    /// per-client buckets: mutating requests, reads
    limits: Mutex<(RateLimits, RateLimits)>,
    /// the rate limits' and the VDC controllers' clock (a manual one in tests)
    pub(crate) clock: Arc<dyn Clock>,
    /// the hosted VDCs' controllers (lock order: `vdcs`, then `inner`)
    vdcs: Mutex<crate::vdc::Vdcs>,
    /// the VDC step task re-reads the next step time
    pub(crate) vdc_wake: tokio::sync::Notify,
    /// host agents' tokens: digest → host
    host_tokens: Mutex<std::collections::HashMap<String, String>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The admin token a service started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminToken {
    /// given by the operator (`--admin-token-file`): its digest replaces the stored one
    Given(String),
    /// the stored one, or a new one when the database has none
    Stored,
}

impl Service {
    /// Opens the database at `db` and rebuilds the state it holds. Returns the service and,
    /// when a new admin token was generated, that token (to be shown once).
    ///
    /// # Errors
    /// The database cannot be opened or holds another policy's decisions.
    pub fn open(
        db: &Path,
        config: Config,
        admin: AdminToken,
    ) -> Result<(Arc<Service>, Option<String>), ServiceError> {
        Service::open_with_clock(db, config, admin, Arc::new(MonotonicClock::new()))
    }

    /// [`Service::open`] with the rate limits on `clock`.
    ///
    /// # Errors
    /// As [`Service::open`].
    pub fn open_with_clock(
        db: &Path,
        config: Config,
        admin: AdminToken,
        clock: Arc<dyn Clock>,
    ) -> Result<(Arc<Service>, Option<String>), ServiceError> {
        let store = Store::open(db)?;
        let policy = config.policy.to_string();
        match store.meta("policy")? {
            Some(p) if p != policy => {
                return Err(ServiceError::Internal(format!(
                    "database {} holds decisions of policy {p}; start it with --policy {p} (it was asked for {policy})",
                    db.display()
                )))
            }
            Some(_) => {}
            None => store.set_meta("policy", &policy)?,
        }
        let mut generated = None;
        let admin_sha256 = match admin {
            AdminToken::Given(t) => {
                let d = auth::digest(&t);
                store.set_meta("admin_token_sha256", &d)?;
                d
            }
            AdminToken::Stored => match store.meta("admin_token_sha256")? {
                Some(d) => d,
                None => {
                    let t = auth::new_token();
                    let d = auth::digest(&t);
                    store.set_meta("admin_token_sha256", &d)?;
                    generated = Some(t);
                    d
                }
            },
        };
        let engine = Engine::load(
            config.policy,
            store.hosts()?,
            store.tenants()?,
            store.placements()?,
            store.last_seq()?,
        )?;
        tracing::info!(
            db = %db.display(),
            hosts = engine.hosts().len(),
            tenants = engine.tenant_count(),
            seq = engine.seq(),
            "state restored"
        );
        let mut vdcs = crate::vdc::Vdcs::default();
        for row in store.vdcs()? {
            vdcs.insert(crate::vdc::Hosted::load(
                &row.name,
                &row.spec,
                &row.settings,
                row.snapshot.as_deref(),
                clock.now_ns(),
            )?);
        }
        let host_tokens = store
            .host_tokens()?
            .into_iter()
            .map(|(host, digest)| (digest, host))
            .collect();
        let (version, _) = tokio::sync::watch::channel(engine.seq());
        let service = Service {
            version,
            agents: Mutex::new(std::collections::BTreeMap::new()),
            inner: Mutex::new(Inner {
                engine,
                store,
                metrics: Metrics::default(),
                bounds: None,
            }),
            admin_sha256,
            config,
            limits: Mutex::new((
                RateLimits::new(
                    config.mutations_per_s,
                    config.mutation_burst,
                    MAX_LIMITED_CLIENTS,
                ),
                RateLimits::new(config.reads_per_s, config.read_burst, MAX_LIMITED_CLIENTS),
            )),
            clock,
            vdcs: Mutex::new(vdcs),
            host_tokens: Mutex::new(host_tokens),
            vdc_wake: tokio::sync::Notify::new(),
        };
        Ok((Arc::new(service), generated))
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // every change is applied only after its commit, and apply either completes or
        // leaves the previous state: a poisoned lock still holds a consistent state
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The hosted VDCs (take before [`Service::store`] when both are needed).
    pub(crate) fn vdcs(&self) -> MutexGuard<'_, crate::vdc::Vdcs> {
        // every ControlState method validates before it changes anything
        self.vdcs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the database.
    pub(crate) fn with_store<T>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        f(&mut self.inner().store)
    }

    /// Runs every VDC control step due now on the service's clock and stores the controllers'
    /// new state; returns how many stepped. With a manual clock, call it after moving the
    /// clock (the step task waits for real time).
    ///
    /// # Errors
    /// The database refused the new state (the controllers stepped in memory).
    pub fn step_vdcs(&self) -> Result<usize, ServiceError> {
        let mut vdcs = self.vdcs();
        let stepped = vdcs.step(self.clock.now_ns());
        let rows = stepped
            .iter()
            .map(|(name, snap)| Ok((name.clone(), serde_json::to_string(snap)?)))
            .collect::<Result<Vec<_>, ServiceError>>()?;
        if !rows.is_empty() {
            self.with_store(|store| store.set_vdc_snapshots(&rows))?;
        }
        Ok(rows.len())
    }

    /// The caller of a tenant or admin route: a host's token is refused there (403).
    pub(crate) fn caller(&self, headers: &HeaderMap) -> Result<Caller, ServiceError> {
        match self.who(headers)? {
            Who::Admin => Ok(Caller::Admin),
            Who::Tenant(t) => Ok(Caller::Tenant(t)),
            Who::Host(h) => Err(host_refused(&h)),
        }
    }

    /// Who presents the request's token: the admin, a tenant or a host's agent.
    pub(crate) fn who(&self, headers: &HeaderMap) -> Result<Who, ServiceError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(ServiceError::Unauthorized(
                "no token; send Authorization: Bearer TOKEN (the admin token, or the tenant's own)"
                    .into(),
            ));
        };
        let token = value.to_str().ok().and_then(auth::bearer).ok_or_else(|| {
            ServiceError::Unauthorized("the Authorization header is not \"Bearer TOKEN\"".into())
        })?;
        if auth::matches(token, &self.admin_sha256) {
            return Ok(Who::Admin);
        }
        let d = auth::digest(token);
        if let Some(host) = self
            .host_tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&d)
        {
            return Ok(Who::Host(host.clone()));
        }
        match self.inner().engine.tenant_with_token(&d) {
            Some(name) => Ok(Who::Tenant(name.to_string())),
            None => Err(ServiceError::Unauthorized(
                "the token is not valid (unknown, its tenant departed, or its host was given a new one)".into(),
            )),
        }
    }

    pub(crate) fn admin(&self, headers: &HeaderMap) -> Result<(), ServiceError> {
        match self.caller(headers)? {
            Caller::Admin => Ok(()),
            Caller::Tenant(t) => Err(ServiceError::Forbidden(format!(
                "tenant {t:?}'s token cannot do this; it needs the admin token"
            ))),
        }
    }

    /// Counts a request of `key` against its bucket (mutating or read).
    fn limit(&self, key: ClientKey, mutating: bool) -> Result<(), ServiceError> {
        let now_s = self.clock.now_ns() as f64 * 1e-9;
        let mut l = self.limits.lock().unwrap_or_else(|e| e.into_inner());
        let (limits, what) = if mutating {
            (&mut l.0, "mutating requests")
        } else {
            (&mut l.1, "reads")
        };
        limits
            .take(&key, now_s)
            .map_err(|retry_after_s| ServiceError::RateLimited {
                what,
                client: key.to_string(),
                per_s: limits.per_s(),
                retry_after_s,
            })
    }

    /// Commits `p` and applies it; counts it in the metrics.
    fn commit(
        &self,
        inner: &mut Inner,
        p: Proposal,
        started: Instant,
    ) -> Result<crate::api::Decision, ServiceError> {
        inner.store.commit(&p.change)?;
        let decision = p.decision.clone();
        // committed: agents waiting for a newer version may fetch it now
        self.version.send_replace(decision.seq);
        if let Err(e) = inner.engine.apply(p) {
            // the database has the decision; memory is rebuilt from it
            tracing::error!(error = %e, "applying a committed decision failed; reloading the state");
            let reloaded = Engine::load(
                self.config.policy,
                inner.store.hosts()?,
                inner.store.tenants()?,
                inner.store.placements()?,
                inner.store.last_seq()?,
            )?;
            inner.engine = reloaded;
        }
        let latency = started.elapsed().as_secs_f64();
        inner
            .metrics
            .record(decision.kind, decision.admitted, latency);
        tracing::info!(
            seq = decision.seq,
            kind = ?decision.kind,
            tenant = %decision.tenant,
            admitted = decision.admitted,
            bound_s = ?decision.bound_s,
            latency_ms = latency * 1e3,
            "decision committed"
        );
        Ok(decision)
    }
}

/// The 403 for a host's token on a route that is not its agent's.
fn host_refused(host: &str) -> ServiceError {
    ServiceError::Forbidden(format!(
        "host {host:?}'s token reads only GET /v1/hosts/{host}/decisions and acts as enforcer {host:?} of VDCs; this needs the admin token or a tenant's"
    ))
}

/// Who may use the tenant and admin routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Caller {
    Admin,
    Tenant(String),
}

/// Whose token a request presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Who {
    Admin,
    Tenant(String),
    /// a host agent's token (`POST /v1/hosts/{host}/token`)
    Host(String),
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(crate) struct Failure(ServiceError);

impl From<ServiceError> for Failure {
    fn from(e: ServiceError) -> Failure {
        Failure(e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::error!(error = %self.0, "request failed");
        }
        let mut r = (status, Json(self.0.body())).into_response();
        if let ServiceError::RateLimited { retry_after_s, .. } = &self.0 {
            let secs = retry_after_s.ceil().clamp(1.0, 86_400.0) as u64;
            if let Ok(v) = header::HeaderValue::from_str(&secs.to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

pub(crate) type Shared = State<Arc<Service>>;
pub(crate) type Answer = Result<Response, Failure>;

pub(crate) fn json<T: Serialize>(status: StatusCode, v: &T) -> Answer {
    Ok((status, Json(v)).into_response())
}

/// The body as JSON of `T`: 415 unless the content type is JSON, 413 past the size limit, 400
/// naming the field when it does not parse.
pub(crate) fn body<T: serde::de::DeserializeOwned>(
    s: &Service,
    headers: &HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<T, ServiceError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ct
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return Err(ServiceError::UnsupportedMediaType(ct.to_string()));
    }
    let bytes = bytes.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServiceError::TooLarge {
                limit: s.config.max_body_bytes,
            }
        } else {
            ServiceError::Malformed {
                field: None,
                message: format!("the body could not be read: {r}"),
            }
        }
    })?;
    parse_json(&bytes)
}

/// Runs blocking work (characterization, SQLite) off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ServiceError::Internal(format!("worker failed: {e}")))?
}

async fn healthz(State(s): Shared) -> Answer {
    let inner = s.inner();
    json(
        StatusCode::OK,
        &Health {
            status: "ok".into(),
            tenants: inner.engine.tenant_count(),
            hosts: inner.engine.hosts().len(),
            seq: inner.engine.seq(),
        },
    )
}

async fn metrics(State(s): Shared) -> Answer {
    let s2 = s.clone();
    let text = blocking(move || {
        // lock order: vdcs, then inner
        let vdcs = s2.vdcs().statuses(s2.clock.now_ns());
        let mut inner = s2.inner();
        let seq = inner.engine.seq();
        let bounds = match inner.bounds.take() {
            Some((at, b)) if at == seq => b,
            _ => inner.engine.bounds()?,
        };
        let text = inner.metrics.render(
            inner.engine.tenant_count(),
            &bounds,
            &inner.engine.link_loads(),
            &vdcs,
        );
        inner.bounds = Some((seq, bounds));
        Ok(text)
    })
    .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// Decisions the status page lists.
const STATUS_DECISIONS: u64 = 20;

async fn status(State(s): Shared) -> Answer {
    let s2 = s.clone();
    let page = blocking(move || {
        // lock order: vdcs, then inner
        let vdcs = s2.vdcs().statuses(s2.clock.now_ns());
        let mut inner = s2.inner();
        let seq = inner.engine.seq();
        let bounds = match inner.bounds.take() {
            Some((at, b)) if at == seq => b,
            _ => inner.engine.bounds()?,
        };
        let decisions = inner.store.recent_decisions(STATUS_DECISIONS)?;
        let policy = inner.engine.policy().to_string();
        let page = crate::status::render(&crate::status::StatusView {
            policy: &policy,
            seq,
            hosts: inner.engine.hosts(),
            bounds: &bounds,
            loads: &inner.engine.link_loads(),
            decisions: &decisions,
            agents: &s2.agents(),
            vdcs: &vdcs,
        });
        inner.bounds = Some((seq, bounds));
        Ok(page)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response())
}

async fn openapi() -> Answer {
    json(StatusCode::OK, &crate::openapi::document())
}

async fn list_hosts(State(s): Shared, headers: HeaderMap) -> Answer {
    s.caller(&headers)?;
    let hosts = s.inner().engine.hosts().to_vec();
    json(StatusCode::OK, &hosts)
}

async fn add_host(
    State(s): Shared,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    s.admin(&headers)?;
    let h: NewHost = body(&s, &headers, bytes)?;
    let s2 = s.clone();
    let host = blocking(move || {
        let mut inner = s2.inner();
        let p = inner.engine.propose_host(h)?;
        let host = p.change.insert_host.clone();
        inner.store.commit(&p.change)?;
        inner.engine.apply(p)?;
        Ok(host)
    })
    .await?;
    json(StatusCode::CREATED, &host)
}

async fn list_tenants(State(s): Shared, headers: HeaderMap) -> Answer {
    let caller = s.caller(&headers)?;
    let inner = s.inner();
    let tenants = match caller {
        Caller::Admin => inner.engine.tenants(),
        Caller::Tenant(t) => inner.engine.tenant(&t).into_iter().collect(),
    };
    drop(inner);
    json(StatusCode::OK, &tenants)
}

/// The tenant `name` may be read or departed by `caller`.
fn own(caller: &Caller, name: &str) -> Result<(), ServiceError> {
    match caller {
        Caller::Admin => Ok(()),
        Caller::Tenant(t) if t == name => Ok(()),
        Caller::Tenant(t) => Err(ServiceError::Forbidden(format!(
            "tenant {t:?}'s token gives access to {t:?} only, not to {name:?}"
        ))),
    }
}

async fn get_tenant(
    State(s): Shared,
    headers: HeaderMap,
    UrlPath(name): UrlPath<String>,
) -> Answer {
    own(&s.caller(&headers)?, &name)?;
    let t = s.inner().engine.tenant(&name);
    match t {
        Some(t) => json(StatusCode::OK, &t),
        None => Err(ServiceError::NotFound {
            what: "admitted tenant",
            name,
        }
        .into()),
    }
}

async fn decide(
    s: Arc<Service>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
    kind: DecisionKind,
) -> Answer {
    let started = Instant::now();
    s.admin(&headers)?;
    let req: NewTenant = body(&s, &headers, bytes)?;
    let policy = s.config.policy;
    let s2 = s.clone();
    let (decision, token) = blocking(move || {
        let candidate = prepare(req, policy)?;
        let token = auth::new_token();
        // decisions are serialized: propose and commit under one lock
        let mut inner = s2.inner();
        let p = inner
            .engine
            .propose_arrival(&candidate, kind, &auth::digest(&token), now_ms())?;
        if kind == DecisionKind::WhatIf {
            let d = p.decision;
            inner
                .metrics
                .record(kind, d.admitted, started.elapsed().as_secs_f64());
            return Ok((d, None));
        }
        let admitted = p.decision.admitted;
        let d = s2.commit(&mut inner, p, started)?;
        Ok((d, admitted.then_some(token)))
    })
    .await?;
    if kind == DecisionKind::WhatIf {
        return json(StatusCode::OK, &decision);
    }
    let status = if decision.admitted {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    json(status, &Admitted { decision, token })
}

async fn add_tenant(
    State(s): Shared,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    decide(s, headers, bytes, DecisionKind::Arrive).await
}

async fn what_if(
    State(s): Shared,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    decide(s, headers, bytes, DecisionKind::WhatIf).await
}

async fn depart(State(s): Shared, headers: HeaderMap, UrlPath(name): UrlPath<String>) -> Answer {
    let started = Instant::now();
    own(&s.caller(&headers)?, &name)?;
    let s2 = s.clone();
    let d = blocking(move || {
        let mut inner = s2.inner();
        let p = inner.engine.propose_departure(&name, now_ms())?;
        s2.commit(&mut inner, p, started)
    })
    .await?;
    json(StatusCode::OK, &d)
}

/// The query's parameters, each a non-negative integer and one of `known`, in order.
fn query_numbers(q: Option<&str>, known: &[&str]) -> Result<Vec<(String, u64)>, ServiceError> {
    let mut out = Vec::new();
    for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if !known.contains(&k) {
            return Err(ServiceError::Malformed {
                field: Some(k.to_string()),
                message: format!(
                    "unknown query parameter {k:?}; expected {}",
                    known.join(", ")
                ),
            });
        }
        let n = v.parse::<u64>().map_err(|_| ServiceError::Malformed {
            field: Some(k.to_string()),
            message: format!("query parameter {k}={v:?} is not a non-negative integer"),
        })?;
        out.push((k.to_string(), n));
    }
    Ok(out)
}

/// `since` and `limit` of `GET /v1/decisions`.
fn decisions_query(q: Option<&str>) -> Result<(u64, u64), ServiceError> {
    let (mut since, mut limit) = (0u64, 100u64);
    for (k, n) in query_numbers(q, &["since", "limit"])? {
        if k == "since" {
            since = n;
        } else {
            if !(1..=1000).contains(&n) {
                return Err(ServiceError::invalid(
                    "limit",
                    format!("{n} is out of range; expected 1 to 1000"),
                ));
            }
            limit = n;
        }
    }
    Ok((since, limit))
}

/// The longest long poll of `GET /v1/hosts/{host}/decisions` [s].
pub const MAX_WAIT_S: u64 = 60;

/// `since`, `wait` and `applied` of `GET /v1/hosts/{host}/decisions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct HostQuery {
    /// answer at once when the service is past this version, else wait for one
    since: u64,
    /// how long to wait for a version past `since` [s]
    wait_s: u64,
    /// the version the agent has applied (reported on the status page and `/v1/agents`)
    applied: Option<u64>,
}

fn host_query(q: Option<&str>) -> Result<HostQuery, ServiceError> {
    let mut h = HostQuery::default();
    for (k, n) in query_numbers(q, &["since", "wait", "applied"])? {
        match k.as_str() {
            "since" => h.since = n,
            "wait" if n > MAX_WAIT_S => {
                return Err(ServiceError::invalid(
                    "wait",
                    format!("{n} s is too long; expected 0 to {MAX_WAIT_S} seconds"),
                ))
            }
            "wait" => h.wait_s = n,
            _ => h.applied = Some(n),
        }
    }
    Ok(h)
}

async fn decisions(State(s): Shared, headers: HeaderMap, RawQuery(q): RawQuery) -> Answer {
    let caller = s.caller(&headers)?;
    let (since, limit) = decisions_query(q.as_deref())?;
    let s2 = s.clone();
    let list = blocking(move || {
        let inner = s2.inner();
        let tenant = match &caller {
            Caller::Admin => None,
            Caller::Tenant(t) => Some(t.as_str()),
        };
        inner.store.decisions(since, limit, tenant)
    })
    .await?;
    json(StatusCode::OK, &list)
}

async fn bounds(State(s): Shared, headers: HeaderMap) -> Answer {
    let caller = s.caller(&headers)?;
    let s2 = s.clone();
    let list = blocking(move || s2.inner().engine.bounds()).await?;
    let list: Vec<_> = match caller {
        Caller::Admin => list,
        Caller::Tenant(t) => list.into_iter().filter(|b| b.tenant == t).collect(),
    };
    json(StatusCode::OK, &list)
}

/// `GET /v1/hosts/{host}/decisions`: the host's tc-relevant decisions at the latest version;
/// with `since`, waits up to `wait` seconds for a version past it (a long poll).
async fn host_decisions(
    State(s): Shared,
    headers: HeaderMap,
    UrlPath(host): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Answer {
    match s.who(&headers)? {
        Who::Admin => {}
        Who::Host(h) if h == host => {}
        Who::Host(h) => {
            return Err(ServiceError::Forbidden(format!(
                "host {h:?}'s token reads host {h:?}'s decisions only, not {host:?}'s"
            ))
            .into())
        }
        Who::Tenant(t) => {
            return Err(ServiceError::Forbidden(format!(
                "tenant {t:?}'s token cannot read a host's decisions; use the admin token or the host's own"
            ))
            .into())
        }
    }
    let q = host_query(q.as_deref())?;
    if !s.inner().engine.hosts().iter().any(|h| h.name == host) {
        return Err(ServiceError::NotFound {
            what: "host",
            name: host,
        }
        .into());
    }
    if let Some(applied) = q.applied {
        s.agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(host.clone(), (applied, now_ms()));
    }
    if q.wait_s > 0 {
        let mut rx = s.version.subscribe();
        let newer = rx.wait_for(|v| *v > q.since);
        // a timeout answers the current version: the agent asks again
        let _ = tokio::time::timeout(std::time::Duration::from_secs(q.wait_s), newer).await;
    }
    let s2 = s.clone();
    let answer = blocking(move || {
        let inner = s2.inner();
        let version = inner.engine.seq();
        let (decisions, endpoints) =
            inner
                .engine
                .host_decisions(&host)
                .ok_or_else(|| ServiceError::NotFound {
                    what: "host",
                    name: host.clone(),
                })?;
        Ok(crate::api::HostDecisions {
            host,
            version,
            decisions,
            endpoints,
        })
    })
    .await?;
    json(StatusCode::OK, &answer)
}

impl Service {
    /// The host agents as last seen, with how far each is behind.
    pub fn agents(&self) -> Vec<crate::api::AgentView> {
        let latest = *self.version.borrow();
        self.agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(host, &(applied, seen_ms))| crate::api::AgentView {
                host: host.clone(),
                applied,
                behind: latest.saturating_sub(applied),
                seen_ms,
            })
            .collect()
    }
}

/// `POST /v1/hosts/{host}/token`: a new token for the host's agent (shown once, stored as its
/// digest); an earlier one of the host stops working.
async fn host_token(
    State(s): Shared,
    headers: HeaderMap,
    UrlPath(host): UrlPath<String>,
) -> Answer {
    s.admin(&headers)?;
    let s2 = s.clone();
    let answer = blocking(move || {
        let token = auth::new_token();
        let digest = auth::digest(&token);
        let inner = s2.inner();
        if !inner.engine.hosts().iter().any(|h| h.name == host) {
            return Err(ServiceError::NotFound {
                what: "host",
                name: host,
            });
        }
        inner.store.set_host_token(&host, &digest)?;
        drop(inner);
        let mut tokens = s2.host_tokens.lock().unwrap_or_else(|e| e.into_inner());
        tokens.retain(|_, h| *h != host);
        tokens.insert(digest, host.clone());
        tracing::info!(host = %host, "host token issued");
        Ok(crate::api::HostToken { host, token })
    })
    .await?;
    json(StatusCode::CREATED, &answer)
}

async fn agents(State(s): Shared, headers: HeaderMap) -> Answer {
    s.admin(&headers)?;
    json(StatusCode::OK, &s.agents())
}

/// Every request counts against its client's bucket: the token it presents (with the host, for
/// an agent's `GET /v1/hosts/{host}/decisions`), else its peer address; GET against the
/// reads', anything else against the mutating requests'.
async fn rate_limit(State(s): Shared, req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(auth::bearer);
    // a fleet of host agents may share one token: each host's polls have their own bucket
    let agent_host = req
        .uri()
        .path()
        .strip_prefix("/v1/hosts/")
        .and_then(|p| p.strip_suffix("/decisions"));
    let key = match token {
        Some(t) => ClientKey::Token(match agent_host {
            Some(h) => format!("{} host {h}", auth::digest(t)),
            None => auth::digest(t),
        }),
        None => match req.extensions().get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(a)) => ClientKey::Peer(a.ip()),
            None => ClientKey::Unknown,
        },
    };
    let mutating = !matches!(*req.method(), Method::GET | Method::HEAD);
    match s.limit(key, mutating) {
        Ok(()) => next.run(req).await,
        Err(e) => Failure(e).into_response(),
    }
}

async fn not_found() -> Answer {
    Err(ServiceError::NotFound {
        what: "route",
        name: "see /openapi.json for the routes".into(),
    }
    .into())
}

/// The routes over `service`.
pub fn router(service: Arc<Service>) -> Router {
    let limit = service.config.max_body_bytes;
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/status", get(status))
        .route("/v1/hosts", get(list_hosts).post(add_host))
        .route("/v1/tenants", get(list_tenants).post(add_tenant))
        .route("/v1/tenants/{name}", get(get_tenant).delete(depart))
        .route("/v1/what-if", axum::routing::post(what_if))
        .route("/v1/decisions", get(decisions))
        .route("/v1/bounds", get(bounds))
        .route("/v1/hosts/{host}/decisions", get(host_decisions))
        .route("/v1/hosts/{host}/token", axum::routing::post(host_token))
        .route("/v1/agents", get(agents))
        .merge(crate::vdc_api::routes())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            service.clone(),
            rate_limit,
        ))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(service)
}

/// Serves the API on `listener` until `shutdown`.
///
/// # Errors
/// The server's I/O error.
pub async fn serve(
    listener: TcpListener,
    service: Arc<Service>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let steps = tokio::spawn(crate::vdc_api::run_steps(service.clone(), async move {
        let _ = stop_rx.changed().await;
    }));
    let r = axum::serve(
        listener,
        router(service).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await;
    let _ = stop_tx.send(true);
    let _ = steps.await;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decisions_query_names_the_bad_parameter() {
        assert_eq!(decisions_query(None).unwrap(), (0, 100));
        assert_eq!(decisions_query(Some("since=5&limit=7")).unwrap(), (5, 7));
        let e = decisions_query(Some("since=-1")).unwrap_err();
        assert_eq!((e.status(), e.field()), (400, Some("since")));
        let e = decisions_query(Some("limit=0")).unwrap_err();
        assert_eq!((e.status(), e.field()), (422, Some("limit")));
        let e = decisions_query(Some("page=2")).unwrap_err();
        assert_eq!(e.field(), Some("page"));
    }
}
