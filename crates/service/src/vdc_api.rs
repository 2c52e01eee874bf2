//! The VDC routes: submit, list, get and remove VDCs (admin), and for each VDC the Pulsar
//! controller ↔ enforcers protocol of `tailbound_control::protocol` under `/v1/vdcs/{vdc}`
//! (`/datacenter`, `/status`, `/enforcers/{id}/register|report|allocation`), so that
//! `tailbound vdc enforcer --controller http://HOST:PORT/v1/vdcs/NAME` talks to `tailbound
//! serve` as it talks to `tailbound vdc serve`. The controllers step every interval in
//! [`run_steps`]; each step's and each registration's durable state is stored before the
//! registration is answered. Reports are kept in memory until the next step.
//!
//! Tokens: the admin token for everything; an enforcer may also present its host's token
//! (`POST /v1/hosts/{host}/token`) when its id is that host's name.

use crate::error::ServiceError;
use crate::server::{blocking, body, json, Answer, Service, Shared, Who};
use crate::store::VdcRow;
use crate::vdc::{control_error, Hosted, NewVdc};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use tailbound_control::protocol::{Register, Report};

/// `GET /v1/vdcs`: every hosted VDC (admin).
async fn list(State(s): Shared, headers: HeaderMap) -> Answer {
    s.admin(&headers)?;
    let now = s.clock.now_ns();
    let views: Vec<_> = s.vdcs().iter().map(|h| h.view(now, false)).collect();
    json(StatusCode::OK, &views)
}

/// `POST /v1/vdcs`: a new VDC, stored before it is answered (admin).
async fn submit(
    State(s): Shared,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    s.admin(&headers)?;
    let req: NewVdc = body(&s, &headers, bytes)?;
    let s2 = s.clone();
    let view = blocking(move || {
        let now = s2.clock.now_ns();
        let hosted = Hosted::prepare(req, now)?;
        let row = VdcRow {
            name: hosted.name.clone(),
            spec: serde_json::to_string(&hosted.spec)?,
            settings: serde_json::to_string(&hosted.settings)?,
            snapshot: Some(serde_json::to_string(&hosted.state.snapshot())?),
        };
        let mut vdcs = s2.vdcs();
        if vdcs.contains(&hosted.name) {
            return Err(ServiceError::Conflict {
                what: "VDC",
                name: hosted.name,
            });
        }
        s2.with_store(|store| store.insert_vdc(&row))?;
        let view = hosted.view(now, true);
        tracing::info!(vdc = %view.name, flows = view.flows, "VDC submitted");
        vdcs.insert(hosted);
        Ok(view)
    })
    .await?;
    s.vdc_wake.notify_one();
    json(StatusCode::CREATED, &view)
}

/// `GET /v1/vdcs/{vdc}`: the VDC with its file (admin).
async fn get_one(State(s): Shared, headers: HeaderMap, UrlPath(vdc): UrlPath<String>) -> Answer {
    s.admin(&headers)?;
    let view = s.vdcs().get(&vdc)?.view(s.clock.now_ns(), true);
    json(StatusCode::OK, &view)
}

/// `DELETE /v1/vdcs/{vdc}`: its controller stops; its enforcers get 404 from now on (admin).
async fn remove(State(s): Shared, headers: HeaderMap, UrlPath(vdc): UrlPath<String>) -> Answer {
    s.admin(&headers)?;
    let s2 = s.clone();
    let view = blocking(move || {
        let mut vdcs = s2.vdcs();
        let view = vdcs.get(&vdc)?.view(s2.clock.now_ns(), true);
        s2.with_store(|store| store.delete_vdc(&vdc))?;
        vdcs.remove(&vdc);
        tracing::info!(vdc = %vdc, "VDC removed");
        Ok(view)
    })
    .await?;
    json(StatusCode::OK, &view)
}

/// The caller may act as enforcer `id`: the admin, or the host `id`'s agent.
fn enforcer(s: &Service, headers: &HeaderMap, id: &str) -> Result<(), ServiceError> {
    match s.who(headers)? {
        Who::Admin => Ok(()),
        Who::Host(h) if h == id => Ok(()),
        Who::Host(h) => Err(ServiceError::Forbidden(format!(
            "host {h:?}'s token may act as enforcer {h:?} only, not {id:?}"
        ))),
        Who::Tenant(t) => Err(ServiceError::Forbidden(format!(
            "tenant {t:?}'s token cannot talk to VDC controllers; enforcers use the admin token or their host's"
        ))),
    }
}

/// The caller may read a VDC's datacenter and status: the admin or any host's agent.
fn reader(s: &Service, headers: &HeaderMap) -> Result<(), ServiceError> {
    match s.who(headers)? {
        Who::Admin | Who::Host(_) => Ok(()),
        Who::Tenant(t) => Err(ServiceError::Forbidden(format!(
            "tenant {t:?}'s token cannot read VDC controllers; use the admin token or a host's"
        ))),
    }
}

/// `GET /v1/vdcs/{vdc}/datacenter`: what an enforcer fetches first.
async fn datacenter(State(s): Shared, headers: HeaderMap, UrlPath(vdc): UrlPath<String>) -> Answer {
    reader(&s, &headers)?;
    let info = s.vdcs().get(&vdc)?.state.info();
    json(StatusCode::OK, &info)
}

/// `GET /v1/vdcs/{vdc}/status`: the allocations (every flow's demand, allocation and
/// guaranteed part), the enforcers (stale ones flagged), the resources.
async fn status(State(s): Shared, headers: HeaderMap, UrlPath(vdc): UrlPath<String>) -> Answer {
    reader(&s, &headers)?;
    let st = s.vdcs().get(&vdc)?.state.status(s.clock.now_ns());
    json(StatusCode::OK, &st)
}

/// `POST /v1/vdcs/{vdc}/enforcers/{id}/register`: stored before it is answered.
async fn register(
    State(s): Shared,
    headers: HeaderMap,
    UrlPath((vdc, id)): UrlPath<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    enforcer(&s, &headers, &id)?;
    let reg: Register = body(&s, &headers, bytes)?;
    let s2 = s.clone();
    let update = blocking(move || {
        let mut vdcs = s2.vdcs();
        let h = vdcs.get_mut(&vdc)?;
        let update = h
            .state
            .register(&id, &reg, s2.clock.now_ns())
            .map_err(control_error)?;
        let row = (vdc, serde_json::to_string(&h.state.snapshot())?);
        s2.with_store(|store| store.set_vdc_snapshots(&[row]))?;
        Ok(update)
    })
    .await?;
    json(StatusCode::OK, &update)
}

/// `POST /v1/vdcs/{vdc}/enforcers/{id}/report`: one interval's usage and backlog; answers
/// the enforcer's latest allocation.
async fn report(
    State(s): Shared,
    headers: HeaderMap,
    UrlPath((vdc, id)): UrlPath<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    enforcer(&s, &headers, &id)?;
    let rep: Report = body(&s, &headers, bytes)?;
    let now = s.clock.now_ns();
    let update = s
        .vdcs()
        .get_mut(&vdc)?
        .state
        .report(&id, rep, now)
        .map_err(control_error)?;
    json(StatusCode::OK, &update)
}

/// `GET /v1/vdcs/{vdc}/enforcers/{id}/allocation`.
async fn allocation(
    State(s): Shared,
    headers: HeaderMap,
    UrlPath((vdc, id)): UrlPath<(String, String)>,
) -> Answer {
    enforcer(&s, &headers, &id)?;
    let now = s.clock.now_ns();
    let update = s
        .vdcs()
        .get(&vdc)?
        .state
        .allocation(&id, now)
        .map_err(control_error)?;
    json(StatusCode::OK, &update)
}

/// The VDC routes (merged into [`crate::server::router`]).
pub fn routes() -> Router<Arc<Service>> {
    Router::new()
        .route("/v1/vdcs", get(list).post(submit))
        .route("/v1/vdcs/{vdc}", get(get_one).delete(remove))
        .route("/v1/vdcs/{vdc}/datacenter", get(datacenter))
        .route("/v1/vdcs/{vdc}/status", get(status))
        .route("/v1/vdcs/{vdc}/enforcers/{id}/register", post(register))
        .route("/v1/vdcs/{vdc}/enforcers/{id}/report", post(report))
        .route("/v1/vdcs/{vdc}/enforcers/{id}/allocation", get(allocation))
}

/// Runs the VDCs' control steps when they are due on the service's clock, until `shutdown`
/// (a manual clock never comes due by itself: its owner calls [`Service::step_vdcs`]).
pub async fn run_steps(service: Arc<Service>, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        let next = service.vdcs().next_step_ns();
        let deadline = next.and_then(|n| service.clock.deadline(n));
        tokio::select! {
            _ = &mut shutdown => return,
            _ = service.vdc_wake.notified() => {}
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
        let s = service.clone();
        match tokio::task::spawn_blocking(move || s.step_vdcs()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "storing the VDC controllers' state failed"),
            Err(e) => tracing::error!(error = %e, "VDC step worker failed"),
        }
    }
}
