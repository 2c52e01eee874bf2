//! A client of the service (HTTP/1.1, hyper) for `tailbound tenant` and the tests: one
//! request at a time, a timeout on every call, the service's errors kept with their status
//! and field.

use crate::api::ErrorBody;
use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};
use hyper::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use tailbound_control::http::{HttpClient, HttpError};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("invalid service URL {url:?}: {message}; expected http://HOST:PORT")]
    Url { url: String, message: String },
    #[error("service at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("service at {url} did not answer within {timeout_s} s")]
    Timeout { url: String, timeout_s: f64 },
    #[error("service answered {status}: {}{}", .body.error, .body.field.as_ref().map(|f| format!(" (field {f})")).unwrap_or_default())]
    Refused { status: u16, body: ErrorBody },
    #[error("service at {url} sent a malformed answer: {message}")]
    Malformed { url: String, message: String },
}

/// A raw answer: status and body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

/// A client of one service, with an optional bearer token.
#[derive(Debug, Clone)]
pub struct ServiceClient {
    http: HttpClient,
    token: Option<String>,
}

impl From<HttpError> for ClientError {
    fn from(e: HttpError) -> ClientError {
        match e {
            HttpError::Request { url, message } => ClientError::Url { url, message },
            HttpError::Unreachable { url, message } => ClientError::Unreachable { url, message },
            HttpError::Timeout { url, timeout_s } => ClientError::Timeout { url, timeout_s },
        }
    }
}

impl ServiceClient {
    /// A client of the service at `url` (`http://host:port`, no path).
    ///
    /// # Errors
    /// [`ClientError::Url`].
    pub fn new(
        url: &str,
        token: Option<String>,
        timeout: Duration,
    ) -> Result<ServiceClient, ClientError> {
        let http = HttpClient::new(url, timeout).map_err(|message| ClientError::Url {
            url: url.to_string(),
            message,
        })?;
        Ok(ServiceClient { http, token })
    }

    /// The same client with another token.
    pub fn with_token(&self, token: Option<String>) -> ServiceClient {
        ServiceClient {
            token,
            ..self.clone()
        }
    }

    /// Sends `method path` with `body` (sent as JSON with that content type) and returns the
    /// raw answer, whatever its status.
    ///
    /// # Errors
    /// The service cannot be reached or does not answer in time.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Result<Answer, ClientError> {
        let mut headers = Vec::new();
        if let Some(ct) = content_type {
            headers.push((CONTENT_TYPE, ct.to_string()));
        }
        if let Some(t) = &self.token {
            headers.push((AUTHORIZATION, format!("Bearer {t}")));
        }
        let (status, body) = self.http.exchange(method, path, &headers, body).await?;
        Ok(Answer { status, body })
    }

    /// `method path` with an optional JSON body; a 2xx answer parsed as `T`, anything else
    /// [`ClientError::Refused`].
    ///
    /// # Errors
    /// As [`ServiceClient::raw`], or the service refused.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<(u16, T), ClientError> {
        let (ct, bytes) = match body {
            Some(b) => (
                Some("application/json"),
                Bytes::from(serde_json::to_vec(b).map_err(|e| ClientError::Malformed {
                    url: self.http.base().to_string(),
                    message: e.to_string(),
                })?),
            ),
            None => (None, Bytes::new()),
        };
        let a = self.raw(method, path, ct, bytes).await?;
        if !(200..300).contains(&a.status) {
            let body = serde_json::from_slice(&a.body).unwrap_or_else(|_| ErrorBody {
                error: String::from_utf8_lossy(&a.body).into_owned(),
                field: None,
            });
            return Err(ClientError::Refused {
                status: a.status,
                body,
            });
        }
        let v = serde_json::from_slice(&a.body).map_err(|e| ClientError::Malformed {
            url: self.http.base().to_string(),
            message: e.to_string(),
        })?;
        Ok((a.status, v))
    }
}
