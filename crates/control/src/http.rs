//! One HTTP/1.1 client (hyper) for tailbound's JSON services, shared by the enforcers' client
//! of the controller and `tailbound tenant`'s client of the service: an `http://HOST:PORT`
//! base only, one request at a time, a timeout on the whole exchange.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderName;
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// Why an exchange failed; each client words it for its own service.
#[derive(Debug)]
pub enum HttpError {
    /// the request could not be built (a path or header that is not valid HTTP)
    Request { url: String, message: String },
    /// no connection, or the answer broke off
    Unreachable { url: String, message: String },
    /// no whole answer within the timeout
    Timeout { url: String, timeout_s: f64 },
}

/// A client of the service at one base URL.
#[derive(Debug, Clone)]
pub struct HttpClient {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl HttpClient {
    /// A client of `url` (`http://host:port`, no path).
    ///
    /// # Errors
    /// What is wrong with `url`, to be reported beside it.
    pub fn new(url: &str, timeout: Duration) -> Result<HttpClient, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| e.to_string())?;
        if uri.scheme_str() != Some("http") {
            return Err("only http:// is supported".into());
        }
        if uri.authority().is_none() {
            return Err("no host and port".into());
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err("give no path".into());
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        Ok(HttpClient {
            base: url.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
        })
    }

    /// The base URL, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `method base+path` with `headers` and `body`: the answer's status and whole body.
    ///
    /// # Errors
    /// [`HttpError`].
    pub async fn exchange(
        &self,
        method: Method,
        path: &str,
        headers: &[(HeaderName, String)],
        body: Bytes,
    ) -> Result<(u16, Bytes), HttpError> {
        let url = format!("{}{path}", self.base);
        let mut req = Request::builder().method(method).uri(&url);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        let req = req.body(Full::new(body)).map_err(|e| HttpError::Request {
            url: url.clone(),
            message: e.to_string(),
        })?;
        let unreachable = |message: String| HttpError::Unreachable {
            url: url.clone(),
            message,
        };
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| unreachable(format!("{e:?}")))?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| unreachable(e.to_string()))?
                .to_bytes();
            Ok((status, body))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| HttpError::Timeout {
                url: url.clone(),
                timeout_s: self.timeout.as_secs_f64(),
            })?
    }
}
