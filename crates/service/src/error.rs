//! The service's one error type: every failure maps to an HTTP status, a message that quotes
//! the bad value and says what is accepted, and the field to blame.

use crate::api::ErrorBody;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// the body is not the JSON the route takes (syntax, types, unknown or missing fields): 400
    #[error("{message}")]
    Malformed {
        field: Option<String>,
        message: String,
    },
    /// well-formed but not acceptable (an SLO of 0, an unknown host): 422
    #[error("{message}")]
    Invalid { field: String, message: String },
    /// the name is taken: 409
    #[error("{what} {name:?} already exists")]
    Conflict { what: &'static str, name: String },
    /// no such tenant or host: 404
    #[error("no {what} named {name:?}")]
    NotFound { what: &'static str, name: String },
    /// no token or an unknown one: 401
    #[error("{0}")]
    Unauthorized(String),
    /// a valid token for something else: 403
    #[error("{0}")]
    Forbidden(String),
    /// the body's content type is not JSON: 415
    #[error("content type {0:?} is not accepted; send application/json")]
    UnsupportedMediaType(String),
    /// the body is larger than the service accepts: 413
    #[error("the body is larger than {limit} bytes, the most this service accepts (a trace may be sent as a smaller part, or as traffic.flows models)")]
    TooLarge { limit: usize },
    /// too many requests: 429
    #[error("too many {what} from {client}; at most {per_s} per second, retry after {retry_after_s:.3} s")]
    RateLimited {
        /// "mutating requests" or "reads"
        what: &'static str,
        /// who they count against (a token's digest prefix, or a peer address)
        client: String,
        per_s: f64,
        /// when one more request fits [s]
        retry_after_s: f64,
    },
    /// the database or the calculus failed: 500 (the state is unchanged)
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServiceError {
    /// A 422 for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> ServiceError {
        ServiceError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            ServiceError::Malformed { .. } => 400,
            ServiceError::Unauthorized(_) => 401,
            ServiceError::Forbidden(_) => 403,
            ServiceError::NotFound { .. } => 404,
            ServiceError::Conflict { .. } => 409,
            ServiceError::TooLarge { .. } => 413,
            ServiceError::UnsupportedMediaType(_) => 415,
            ServiceError::Invalid { .. } => 422,
            ServiceError::RateLimited { .. } => 429,
            ServiceError::Internal(_) => 500,
        }
    }

    /// The field to blame, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            ServiceError::Malformed { field, .. } => field.as_deref(),
            ServiceError::Invalid { field, .. } => Some(field),
            ServiceError::Conflict { .. } => Some("name"),
            _ => None,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.to_string(),
            field: self.field().map(str::to_string),
        }
    }
}

impl From<rusqlite::Error> for ServiceError {
    fn from(e: rusqlite::Error) -> ServiceError {
        ServiceError::Internal(format!("database: {e}"))
    }
}

impl From<serde_json::Error> for ServiceError {
    fn from(e: serde_json::Error) -> ServiceError {
        ServiceError::Internal(format!("stored JSON: {e}"))
    }
}

/// Parses a JSON body into `T`; a failure names the field path (`traffic.model.duration_s`).
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ServiceError> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // serde names a missing or unknown field in the message, not in the path
        let text = inner.to_string();
        let named = (text.starts_with("missing field") || text.starts_with("unknown field"))
            .then(|| quoted_field(&text))
            .flatten();
        let root = path == "." || path.is_empty();
        let field = match (root, named) {
            (true, named) => named,
            (false, Some(n)) if path == n || path.ends_with(&format!(".{n}")) => Some(path),
            (false, Some(n)) => Some(format!("{path}.{n}")),
            (false, None) => Some(path),
        };
        ServiceError::Malformed {
            message: match &field {
                Some(f) => format!("field {f}: {inner}"),
                None => format!("the body is not valid JSON for this request: {inner}"),
            },
            field,
        }
    })
}

/// The field serde quotes in "missing field `x`" and "unknown field `x`".
fn quoted_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}
