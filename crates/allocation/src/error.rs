//! Errors of the allocation crate: malformed MRA inputs and VDC specs, and controller inputs
//! that do not match the datacenter.

/// Something wrong with an allocation input, a VDC spec or a controller report. Returned before
/// any state changes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// A capacity is outside 0 or [`MIN_QUANTITY`](crate::problem::MIN_QUANTITY) to
    /// [`MAX_QUANTITY`](crate::problem::MAX_QUANTITY) (negative, tiny, huge, NaN).
    #[error("resource {resource:?}: capacity {value:?} is not allowed; expected 0 or 1e-3 to 1e12 [tokens/s]")]
    Capacity {
        /// the resource's name (or index)
        resource: String,
        /// the rejected capacity [tokens/s]
        value: f64,
    },
    /// A demand entry is outside 0 or the quantity range (as [`AllocError::Capacity`]).
    #[error("flow {flow:?}: demand {value:?} on resource {resource:?} is not allowed; expected 0 or 1e-3 to 1e12 [tokens/s]")]
    Demand {
        flow: String,
        resource: String,
        /// the rejected demand [tokens/s]
        value: f64,
    },
    /// A weight is outside [`MIN_WEIGHT`](crate::problem::MIN_WEIGHT) to
    /// [`MAX_WEIGHT`](crate::problem::MAX_WEIGHT) (zero, negative, tiny, huge, NaN).
    #[error("{what} {name:?}: weight {value:?} is not allowed; expected 1e-3 to 1e3")]
    Weight {
        /// "flow" or "tenant"
        what: &'static str,
        name: String,
        value: f64,
    },
    /// A flow names a resource (or tenant) that does not exist.
    #[error("{what} {name:?}: unknown {kind} {reference:?}; known: {known}")]
    Unknown {
        /// what holds the reference ("flow", "tenant", ...)
        what: &'static str,
        name: String,
        /// what kind of thing was referenced ("resource", "tenant", "vm", ...)
        kind: &'static str,
        reference: String,
        /// the accepted names, comma-separated (possibly shortened)
        known: String,
    },
    /// A name appears twice where names must be unique.
    #[error("{kind} {name:?} appears twice; names must be unique")]
    Duplicate { kind: &'static str, name: String },
    /// A flow lists the same resource twice in its demand.
    #[error("flow {flow:?} lists resource {resource:?} twice; give one demand per resource")]
    DuplicateDemand { flow: String, resource: String },
    /// A spec field is invalid.
    #[error("{context}: {message}")]
    Invalid {
        /// where (file, tenant, field)
        context: String,
        /// what is wrong and what is accepted
        message: String,
    },
    /// A file could not be parsed.
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    /// A report or vector does not match the flow's path.
    #[error("{what}: got {got} entries, expected {expected}")]
    Length {
        what: String,
        got: usize,
        expected: usize,
    },
}

/// The names in `names`, comma-separated, at most eight of them.
pub(crate) fn known_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    let mut s = names.iter().take(8).copied().collect::<Vec<_>>().join(", ");
    if names.len() > 8 {
        s.push_str(&format!(", ... ({} in all)", names.len()));
    }
    if s.is_empty() {
        s.push_str("(none)");
    }
    s
}
