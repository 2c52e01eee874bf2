//! Integration tests of tailbound-allocation: the MRA laws on random instances, the two-step
//! VDC allocation and the controller loop.

mod controller;
mod extremes;
mod fuzz;
mod mra;
mod steps;
