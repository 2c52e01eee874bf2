//! PLACEHOLDER: the scenario helper replaces this crate.
