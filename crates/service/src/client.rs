//! A client of the service (HTTP/1.1, hyper) for `tailbound tenant` and the tests: one
//! request at a time, a timeout on every call, the service's errors kept with their status
//! and field.

use crate::api::ErrorBody;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

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
    base: String,
    token: Option<String>,
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
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
        Ok(ServiceClient {
            base: url.trim_end_matches('/').to_string(),
            token,
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
        })
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
        let url = format!("{}{path}", self.base);
        let mut req = Request::builder().method(method).uri(&url);
        if let Some(ct) = content_type {
            req = req.header(hyper::header::CONTENT_TYPE, ct);
        }
        if let Some(t) = &self.token {
            req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = req.body(Full::new(body)).map_err(|e| ClientError::Url {
            url: url.clone(),
            message: e.to_string(),
        })?;
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| ClientError::Unreachable {
                    url: url.clone(),
                    message: format!("{e:?}"),
                })?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| ClientError::Unreachable {
                    url: url.clone(),
                    message: e.to_string(),
                })?
                .to_bytes();
            Ok(Answer { status, body })
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout {
                url,
                timeout_s: self.timeout.as_secs_f64(),
            }),
        }
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
                    url: self.base.clone(),
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
            url: self.base.clone(),
            message: e.to_string(),
        })?;
        Ok((a.status, v))
    }
}
