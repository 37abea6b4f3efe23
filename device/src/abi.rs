//! The launch contract between a clustered kernel and the host.
//!
//! Defined once, here, in a crate that compiles for both sides, so the layout
//! cannot drift. Bump [`ABI_VERSION`] on any change to these types.

/// The version of the launch contract.
pub const ABI_VERSION: u32 = 1;
