//! The controller's HTTP service with its own client, over loopback.

mod http;
