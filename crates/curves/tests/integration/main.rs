//! Integration tests of tailbound-curves against real traces in `../shared/traces/` and the
//! original tools' outputs in `../shared/reference/`.

mod mmpp;
mod rb;
