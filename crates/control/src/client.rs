//! The enforcers' side of the protocol: an HTTP/1.1 client (hyper) for the controller's
//! routes, with a timeout on every call.

use crate::protocol::{
    valid_id, AllocationUpdate, ApiError, DatacenterInfo, Register, Report, Status,
};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// Why a call to the controller failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("invalid controller URL {url:?}: {message}; expected http://HOST:PORT")]
    Url { url: String, message: String },
    #[error("invalid enforcer id {0:?}: use 1 to 64 characters from [A-Za-z0-9._-]")]
    BadId(String),
    #[error("controller at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("controller at {url} did not answer within {timeout_s} s")]
    Timeout { url: String, timeout_s: f64 },
    #[error("controller at {url} answered {status}: {message}")]
    Refused {
        url: String,
        status: u16,
        message: String,
    },
    #[error("controller at {url} sent a malformed answer: {message}")]
    Malformed { url: String, message: String },
}

/// A client of one controller.
#[derive(Debug, Clone)]
pub struct ControlClient {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl ControlClient {
    /// A client of the controller at `url` (`http://host:port`, no path).
    ///
    /// # Errors
    /// [`ClientError::Url`].
    pub fn new(url: &str, timeout: Duration) -> Result<ControlClient, ClientError> {
        let bad = |message: &str| ClientError::Url {
            url: url.to_string(),
            message: message.to_string(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| bad(&e.to_string()))?;
        if uri.scheme_str() != Some("http") {
            return Err(bad("only http:// is supported"));
        }
        if uri.authority().is_none() {
            return Err(bad("no host and port"));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(bad("give no path"));
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        Ok(ControlClient {
            base: url.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
        })
    }

    /// The controller's URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let url = format!("{}{path}", self.base);
        let malformed = |message: String| ClientError::Malformed {
            url: url.clone(),
            message,
        };
        let mut req = Request::builder().method(method).uri(&url);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| malformed(e.to_string()))?;
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| ClientError::Unreachable {
                    url: url.clone(),
                    message: format!("{e:#}"),
                })?;
            let status = resp.status();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| ClientError::Unreachable {
                    url: url.clone(),
                    message: e.to_string(),
                })?
                .to_bytes();
            Ok::<_, ClientError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout {
                url: url.clone(),
                timeout_s: self.timeout.as_secs_f64(),
            })??;
        if status != StatusCode::OK {
            let message = serde_json::from_slice::<ApiError>(&bytes)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
            return Err(ClientError::Refused {
                url,
                status: status.as_u16(),
                message,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))
    }

    fn json(value: &impl Serialize) -> Result<Vec<u8>, ClientError> {
        serde_json::to_vec(value).map_err(|e| ClientError::Malformed {
            url: String::new(),
            message: e.to_string(),
        })
    }

    fn id(id: &str) -> Result<&str, ClientError> {
        if valid_id(id) {
            Ok(id)
        } else {
            Err(ClientError::BadId(id.to_string()))
        }
    }

    /// `GET /v1/datacenter`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn datacenter(&self) -> Result<DatacenterInfo, ClientError> {
        self.call(Method::GET, "/v1/datacenter", None).await
    }

    /// `POST /v1/enforcers/{id}/register`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn register(
        &self,
        id: &str,
        reg: &Register,
    ) -> Result<AllocationUpdate, ClientError> {
        let path = format!("/v1/enforcers/{}/register", Self::id(id)?);
        self.call(Method::POST, &path, Some(Self::json(reg)?)).await
    }

    /// `POST /v1/enforcers/{id}/report`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn report(&self, id: &str, report: &Report) -> Result<AllocationUpdate, ClientError> {
        let path = format!("/v1/enforcers/{}/report", Self::id(id)?);
        self.call(Method::POST, &path, Some(Self::json(report)?))
            .await
    }

    /// `GET /v1/enforcers/{id}/allocation`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn allocation(&self, id: &str) -> Result<AllocationUpdate, ClientError> {
        let path = format!("/v1/enforcers/{}/allocation", Self::id(id)?);
        self.call(Method::GET, &path, None).await
    }

    /// `GET /v1/status`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn status(&self) -> Result<Status, ClientError> {
        self.call(Method::GET, "/v1/status", None).await
    }
}
