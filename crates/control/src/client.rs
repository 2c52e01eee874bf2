//! The enforcers' side of the protocol: an HTTP/1.1 client (hyper) for the controller's
//! routes, with a timeout on every call.
//!
//! The controller is `tailbound vdc serve` at `http://HOST:PORT` (routes under `/v1`), or one
//! VDC of `tailbound serve` at `http://HOST:PORT/v1/vdcs/NAME` (the same routes under that
//! prefix, with a bearer token: [`ControlClient::with_token`]).

use crate::http::{HttpClient, HttpError};
use crate::protocol::{
    valid_id, AllocationUpdate, ApiError, DatacenterInfo, Register, Report, Status,
};
use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// Why a call to the controller failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("invalid controller URL {url:?}: {message}; expected http://HOST:PORT (vdc serve) or http://HOST:PORT/v1/vdcs/NAME (serve)")]
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
    /// what the routes' paths start with: `/v1`, or `/v1/vdcs/NAME`
    prefix: String,
    /// sent as `Authorization: Bearer TOKEN`
    token: Option<String>,
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
    /// A client of the controller at `url`: `http://host:port` (`tailbound vdc serve`), or
    /// `http://host:port/v1/vdcs/NAME` (VDC `NAME` of `tailbound serve`).
    ///
    /// # Errors
    /// [`ClientError::Url`].
    pub fn new(url: &str, timeout: Duration) -> Result<ControlClient, ClientError> {
        let bad = |message: String| ClientError::Url {
            url: url.to_string(),
            message,
        };
        let (base, prefix) = split_vdc_path(url).map_err(bad)?;
        let http = HttpClient::new(base, timeout).map_err(bad)?;
        Ok(ControlClient {
            http,
            prefix,
            token: None,
        })
    }

    /// The same client, sending `token` as `Authorization: Bearer TOKEN` (`tailbound serve`
    /// wants the admin token or the enforcer's host token).
    pub fn with_token(mut self, token: Option<String>) -> ControlClient {
        self.token = token;
        self
    }

    /// The controller's URL (with the VDC's path, if any).
    pub fn url(&self) -> String {
        match self.prefix.as_str() {
            "/v1" => self.http.base().to_string(),
            p => format!("{}{p}", self.http.base()),
        }
    }

    /// `method path` with an optional JSON body; a 200 answer parsed as `T`, anything else
    /// [`ClientError::Refused`].
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let path = format!("{}{path}", self.prefix);
        let url = format!("{}{path}", self.http.base());
        let mut headers = match body {
            Some(_) => vec![(CONTENT_TYPE, "application/json".to_string())],
            None => Vec::new(),
        };
        if let Some(t) = &self.token {
            headers.push((AUTHORIZATION, format!("Bearer {t}")));
        }
        let (status, bytes) = self
            .http
            .exchange(
                method,
                &path,
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
        self.call(Method::GET, "/datacenter", None).await
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
        let path = format!("/enforcers/{}/register", Self::id(id)?);
        self.call(Method::POST, &path, Some(Self::json(reg)?)).await
    }

    /// `POST /v1/enforcers/{id}/report`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn report(&self, id: &str, report: &Report) -> Result<AllocationUpdate, ClientError> {
        let path = format!("/enforcers/{}/report", Self::id(id)?);
        self.call(Method::POST, &path, Some(Self::json(report)?))
            .await
    }

    /// `GET /v1/enforcers/{id}/allocation`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn allocation(&self, id: &str) -> Result<AllocationUpdate, ClientError> {
        let path = format!("/enforcers/{}/allocation", Self::id(id)?);
        self.call(Method::GET, &path, None).await
    }

    /// `GET /v1/status`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub async fn status(&self) -> Result<Status, ClientError> {
        self.call(Method::GET, "/status", None).await
    }
}

/// `url` without the path of a VDC of `tailbound serve`, and the routes' prefix: `/v1` for
/// `http://host:port`, `/v1/vdcs/NAME` for `http://host:port/v1/vdcs/NAME`.
fn split_vdc_path(url: &str) -> Result<(&str, String), String> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Ok((url, "/v1".into()));
    };
    let Some(slash) = rest.find('/') else {
        return Ok((url, "/v1".into()));
    };
    let at = url.len() - rest.len() + slash;
    let path = url[at..].trim_end_matches('/');
    if path.is_empty() {
        return Ok((&url[..at], "/v1".into()));
    }
    match path.strip_prefix("/v1/vdcs/") {
        Some(name) if valid_id(name) => Ok((&url[..at], path.to_string())),
        _ => Err(format!(
            "the path {path:?} is not /v1/vdcs/NAME (a VDC of tailbound serve, NAME from [A-Za-z0-9._-])"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vdc_path_becomes_the_routes_prefix() {
        let p = |u: &str| split_vdc_path(u).map(|(b, p)| (b.to_string(), p));
        assert_eq!(
            p("http://h:1").unwrap(),
            ("http://h:1".into(), "/v1".into())
        );
        assert_eq!(
            p("http://h:1/").unwrap(),
            ("http://h:1".into(), "/v1".into())
        );
        assert_eq!(
            p("http://h:1/v1/vdcs/dc-1/").unwrap(),
            ("http://h:1".into(), "/v1/vdcs/dc-1".into())
        );
        let e = p("http://h:1/v2/x").unwrap_err();
        assert!(e.contains("\"/v2/x\" is not /v1/vdcs/NAME"), "{e}");
        assert!(p("http://h:1/v1/vdcs/a b").is_err());
        let c =
            ControlClient::new("http://127.0.0.1:9/v1/vdcs/dc", Duration::from_secs(1)).unwrap();
        assert_eq!(c.url(), "http://127.0.0.1:9/v1/vdcs/dc");
    }
}
