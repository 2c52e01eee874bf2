//! The enforcers' side of the protocol: an HTTP/1.1 client (hyper) for the controller's
//! routes, with a timeout on every call.

use crate::http::{HttpClient, HttpError};
use crate::protocol::{
    valid_id, AllocationUpdate, ApiError, DatacenterInfo, Register, Report, Status,
};
use bytes::Bytes;
use hyper::header::CONTENT_TYPE;
use hyper::{Method, StatusCode};
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
    http: HttpClient,
}

impl From<HttpError> for ClientError {
    fn from(e: HttpError) -> ClientError {
        match e {
            HttpError::Request { url, message } => ClientError::Malformed { url, message },
            HttpError::Unreachable { url, message } => ClientError::Unreachable { url, message },
            HttpError::Timeout { url, timeout_s } => ClientError::Timeout { url, timeout_s },
        }
    }
}

impl ControlClient {
    /// A client of the controller at `url` (`http://host:port`, no path).
    ///
    /// # Errors
    /// [`ClientError::Url`].
    pub fn new(url: &str, timeout: Duration) -> Result<ControlClient, ClientError> {
        let http = HttpClient::new(url, timeout).map_err(|message| ClientError::Url {
            url: url.to_string(),
            message,
        })?;
        Ok(ControlClient { http })
    }

    /// The controller's URL.
    pub fn url(&self) -> &str {
        self.http.base()
    }

    /// `method path` with an optional JSON body; a 200 answer parsed as `T`, anything else
    /// [`ClientError::Refused`].
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let url = format!("{}{path}", self.http.base());
        let headers = match body {
            Some(_) => vec![(CONTENT_TYPE, "application/json".to_string())],
            None => Vec::new(),
        };
        let (status, bytes) = self
            .http
            .exchange(
                method,
                path,
                &headers,
                Bytes::from(body.unwrap_or_default()),
            )
            .await?;
        if status != StatusCode::OK.as_u16() {
            let message = serde_json::from_slice::<ApiError>(&bytes)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
            return Err(ClientError::Refused {
                url,
                status,
                message,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Malformed {
            url,
            message: e.to_string(),
        })
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
