//! The testbed on this machine: real namespaces, shaped links, memcached, replay clients. Every
//! test needs root, iproute2 and memcached; without them it says "skipped" and returns, except
//! under `CI=true`, where that is a failure. The tests take turns (one testbed at a time), so
//! each can check that it left no namespace and no process behind.

mod common;
mod errors;
mod persistent;
mod run;
