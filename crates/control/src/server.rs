//! The controller as an HTTP service (axum): the routes of [`crate::protocol`] over a
//! [`ControlState`], and the task that runs a control step every interval on the service's
//! [`Clock`]. [`router`] can be mounted in a larger service.

use crate::protocol::{ApiError, Register, Report};
use crate::state::{ControlError, ControlState};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use tailbound_dataplane::clock::Clock;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// The state and the clock the routes share.
#[derive(Debug)]
pub struct Service {
    state: Mutex<ControlState>,
    clock: Arc<dyn Clock>,
    /// the step task re-reads the next step time
    wake: Notify,
}

impl Service {
    pub fn new(state: ControlState, clock: Arc<dyn Clock>) -> Arc<Service> {
        Arc::new(Service {
            state: Mutex::new(state),
            clock,
            wake: Notify::new(),
        })
    }

    /// The state (for tests and embedding services).
    pub fn state(&self) -> MutexGuard<'_, ControlState> {
        // every ControlState method validates before it changes anything, so a poisoned lock
        // still holds a consistent state
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current time on the service's clock [ns].
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Runs a step if one is due now; with a manual clock, call it after moving the clock.
    ///
    /// # Errors
    /// As [`ControlState::step`].
    pub fn step(&self) -> Result<bool, ControlError> {
        let now = self.now_ns();
        self.state().step(now)
    }

    /// Pokes the step task (after moving a manual clock).
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

struct Failure(ControlError);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (
            status,
            Json(ApiError {
                error: self.0.to_string(),
            }),
        )
            .into_response()
    }
}

type Shared = State<Arc<Service>>;

async fn datacenter(State(s): Shared) -> Response {
    Json(s.state().info()).into_response()
}

async fn register(State(s): Shared, Path(id): Path<String>, Json(reg): Json<Register>) -> Response {
    let now = s.now_ns();
    let r = s.state().register(&id, &reg, now);
    match r {
        Ok(u) => Json(u).into_response(),
        Err(e) => Failure(e).into_response(),
    }
}

async fn report(State(s): Shared, Path(id): Path<String>, Json(rep): Json<Report>) -> Response {
    let now = s.now_ns();
    let r = s.state().report(&id, rep, now);
    match r {
        Ok(u) => Json(u).into_response(),
        Err(e) => Failure(e).into_response(),
    }
}

async fn allocation(State(s): Shared, Path(id): Path<String>) -> Response {
    let now = s.now_ns();
    let r = s.state().allocation(&id, now);
    match r {
        Ok(u) => Json(u).into_response(),
        Err(e) => Failure(e).into_response(),
    }
}

async fn status(State(s): Shared) -> Response {
    let now = s.now_ns();
    Json(s.state().status(now)).into_response()
}

/// The protocol's routes over `service`.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/v1/datacenter", get(datacenter))
        .route("/v1/status", get(status))
        .route("/v1/enforcers/{id}/register", post(register))
        .route("/v1/enforcers/{id}/report", post(report))
        .route("/v1/enforcers/{id}/allocation", get(allocation))
        .with_state(service)
}

/// Runs a control step whenever one is due on the service's clock, until `shutdown`.
pub async fn run_steps(service: Arc<Service>, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        let next = service.state().next_step_ns();
        let deadline = service.clock.deadline(next);
        tokio::select! {
            _ = &mut shutdown => return,
            _ = service.wake.notified() => {}
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
        if let Err(e) = service.step() {
            tracing::error!(error = %e, "control step failed");
        }
    }
}

/// Serves the protocol on `listener` and runs the steps, until `shutdown`.
///
/// # Errors
/// The server's I/O error.
pub async fn serve(
    listener: TcpListener,
    service: Arc<Service>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut steps_stop = stop_rx.clone();
    let steps = tokio::spawn(run_steps(service.clone(), async move {
        let _ = steps_stop.changed().await;
    }));
    let mut http_stop = stop_rx;
    let r = axum::serve(listener, router(service))
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = shutdown => {}
                _ = http_stop.changed() => {}
            }
        })
        .await;
    let _ = stop_tx.send(true);
    let _ = steps.await;
    r
}
