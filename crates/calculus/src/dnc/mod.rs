//! PLACEHOLDER: the DNC helper replaces this module.

use crate::{BoundOptions, CalculusError, TenantBound};
use tailbound_model::Network;

pub(crate) fn bound_tenants(
    _net: &Network,
    _priorities: &[u32],
    _tenants: &[usize],
    _opts: &BoundOptions,
) -> Result<Vec<TenantBound>, CalculusError> {
    Err(CalculusError::Invalid("DNC analysis not built yet".into()))
}
