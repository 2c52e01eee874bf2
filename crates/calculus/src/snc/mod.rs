//! PLACEHOLDER: the SNC helper replaces this module.

use crate::{BoundOptions, CalculusError, Method, TenantBound};
use tailbound_model::Network;

pub(crate) fn bound_tenants(
    _net: &Network,
    _method: Method,
    _priorities: &[u32],
    _tenants: &[usize],
    _opts: &BoundOptions,
) -> Result<Vec<TenantBound>, CalculusError> {
    Err(CalculusError::Invalid("SNC analysis not built yet".into()))
}
