//! The enforcer's side of the controller protocol (`tailbound_control::protocol`): fetch the
//! datacenter, register the flows (which returns their current allocation: an enforcer that
//! restarts recovers it here), then every interval close the proxy's report, post it and apply
//! the allocation vectors that come back.
//!
//! Reports are timed to reach the controller a twentieth of an interval before its next step
//! (each answer says when that is), with `samples_per_interval` sub-interval samples between
//! them. When the controller cannot be reached the proxy keeps enforcing the last allocation;
//! the link logs the change once, says so in [`Link::reachable`], and tries again every
//! interval.

use crate::core::CoreError;
use crate::proxy::Proxy;
use std::future::Future;
use std::time::Duration;
use tailbound_control::protocol::{AllocationUpdate, DatacenterInfo, FlowStats, Register, Report};
use tailbound_control::{ClientError, ControlClient};

/// Why the link failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("applying the allocation of flow {flow:?}: {source}")]
    Apply {
        flow: String,
        #[source]
        source: CoreError,
    },
    #[error("the controller's allocation names flow {0:?}, which this enforcer does not police")]
    UnknownFlow(String),
}

/// A registered enforcer's connection to its controller.
#[derive(Debug)]
pub struct Link {
    client: ControlClient,
    id: String,
    /// the proxy's flows, `tenant/flow`, in proxy order
    flows: Vec<String>,
    interval_ns: u64,
    samples: u32,
    reachable: bool,
    epoch: u64,
}

/// The controller's datacenter, fetched before the proxy is built (its flows and costs).
///
/// # Errors
/// [`ClientError`].
pub async fn fetch_datacenter(client: &ControlClient) -> Result<DatacenterInfo, ClientError> {
    client.datacenter().await
}

impl Link {
    /// Registers `proxy`'s flows as enforcer `id` and applies the allocation the controller
    /// holds for them.
    ///
    /// # Errors
    /// [`LinkError`]: the controller is unreachable or refuses, or its vectors do not fit.
    pub async fn register(
        client: ControlClient,
        id: &str,
        info: &DatacenterInfo,
        proxy: &Proxy,
    ) -> Result<(Link, AllocationUpdate), LinkError> {
        let flows: Vec<String> = proxy.flows().into_iter().map(|f| f.name).collect();
        let update = client
            .register(
                id,
                &Register {
                    flows: flows.clone(),
                },
            )
            .await?;
        let mut link = Link {
            client,
            id: id.to_string(),
            flows,
            interval_ns: info.interval_ns,
            samples: info.samples_per_interval.max(1),
            reachable: true,
            epoch: 0,
        };
        link.apply(proxy, &update)?;
        Ok((link, update))
    }

    /// Whether the last exchange with the controller succeeded.
    pub fn reachable(&self) -> bool {
        self.reachable
    }

    /// The epoch of the last allocation applied.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Applies an allocation update to the proxy's flows; returns how many it set.
    ///
    /// # Errors
    /// [`LinkError`] for a flow the proxy does not have or a vector that does not fit.
    pub fn apply(&mut self, proxy: &Proxy, update: &AllocationUpdate) -> Result<usize, LinkError> {
        for a in &update.flows {
            let i = self
                .flows
                .iter()
                .position(|f| *f == a.flow)
                .ok_or_else(|| LinkError::UnknownFlow(a.flow.clone()))?;
            proxy
                .set_allocation(i, &a.rates)
                .map_err(|source| LinkError::Apply {
                    flow: a.flow.clone(),
                    source,
                })?;
        }
        self.epoch = update.epoch;
        Ok(update.flows.len())
    }

    /// Closes the proxy's interval, reports it and applies the answer.
    ///
    /// # Errors
    /// [`LinkError`]; the interval's statistics are then lost and the proxy keeps its
    /// allocation.
    pub async fn report_once(&mut self, proxy: &Proxy) -> Result<AllocationUpdate, LinkError> {
        let r = proxy.report();
        let report = Report {
            span_ns: r.to_ns.saturating_sub(r.from_ns).max(1),
            flows: self
                .flows
                .iter()
                .cloned()
                .zip(r.flows)
                .map(|(flow, report)| FlowStats { flow, report })
                .collect(),
        };
        let outcome = self.client.report(&self.id, &report).await;
        match outcome {
            Ok(update) => {
                if !self.reachable {
                    tracing::info!(controller = %self.client.url(), "controller reachable again");
                }
                self.reachable = true;
                self.apply(proxy, &update)?;
                Ok(update)
            }
            Err(e) => {
                if self.reachable {
                    tracing::warn!(
                        controller = %self.client.url(),
                        error = %e,
                        "controller unreachable; keeping the last allocation"
                    );
                }
                self.reachable = false;
                Err(e.into())
            }
        }
    }

    /// Reports every interval on the proxy's clock (which must be a real one) until
    /// `shutdown`.
    pub async fn run(
        mut self,
        proxy: &Proxy,
        first: &AllocationUpdate,
        shutdown: impl Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let interval = self.interval_ns.max(1);
        let guard = (interval / 20).max(1_000_000).min(interval / 2);
        let next_report = |now: u64, step_in: u64| {
            let mut at = now + step_in.saturating_sub(guard);
            while at < now + interval / 2 {
                at += interval;
            }
            at
        };
        let mut from = proxy.now_ns();
        let mut report_at = next_report(from, first.next_step_in_ns);
        loop {
            let k = u64::from(self.samples);
            for m in 1..=k {
                let at = from + (report_at.saturating_sub(from)) * m / k;
                let wait = Duration::from_nanos(at.saturating_sub(proxy.now_ns()));
                tokio::select! {
                    _ = &mut shutdown => return,
                    _ = tokio::time::sleep(wait) => {}
                }
                if m < k {
                    proxy.sample();
                }
            }
            let now = proxy.now_ns();
            report_at = match self.report_once(proxy).await {
                Ok(update) => next_report(proxy.now_ns(), update.next_step_in_ns),
                Err(_) => now + interval,
            };
            from = now;
        }
    }
}
