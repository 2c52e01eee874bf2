//! The papers' orderings, asserted on the experiments' own data.

mod bounds;
mod eyeq;
mod soundness;
