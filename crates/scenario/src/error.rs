//! The one error type of this crate: every variant names the file it came from, and where a
//! problem is inside a file, the place (client, flow, tenant, host) and the field.
//!
//! Parsing traces and fitting models report their own errors (`tailbound-trace`,
//! `tailbound-curves`); they arrive here wrapped with the scenario file and tenant.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        /// the parser's message, with line and column
        message: String,
    },
    #[error("{}: {at}: field `{field}`: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        /// where in the file: `client C1 flow F1In`, `tenant web`, `host a`
        at: String,
        /// the field's name as written in the file
        field: String,
        /// what is wrong, quoting the value and saying what is accepted
        problem: String,
    },
    #[error("{}: {at}: trace {}: {message}", path.display(), trace.display())]
    Trace {
        path: PathBuf,
        at: String,
        trace: PathBuf,
        /// the trace reader's, splitter's or fitter's message
        message: String,
    },
    #[error("{}: the network it describes is inconsistent: {source}", path.display())]
    Network {
        path: PathBuf,
        #[source]
        source: tailbound_model::NetworkError,
    },
    #[error("{}: {message}", path.display())]
    Format { path: PathBuf, message: String },
    #[error("tenant {0:?} has no requests to replay: it comes from an SNC-Meister model config, which holds fitted MMPPs but no trace; simulate a topology or tailbound scenario with traces instead")]
    NoRequests(String),
}

impl ScenarioError {
    pub(crate) fn invalid(
        path: &std::path::Path,
        at: impl Into<String>,
        field: impl Into<String>,
        problem: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError::Invalid {
            path: path.to_path_buf(),
            at: at.into(),
            field: field.into(),
            problem: problem.into(),
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> ScenarioError {
        ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
