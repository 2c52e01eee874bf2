//! The enforcer proxy against a real memcached (started on loopback by PID, stopped at the end
//! of each test) and the real controller service. Time that matters to an assertion is a
//! manual clock; waits on the real one only bound how long a test may take.

mod common;
mod link;
mod proxy;
