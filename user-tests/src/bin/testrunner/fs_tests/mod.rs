//! File-system tests: contents, offsets, open flags, names, directories, sizes. Linux semantics.
//!
//! One module per group; the runner's table (in `main.rs`) names every test through the
//! re-exports below, so its order and names do not depend on this split.

mod attrs;
mod common;
mod dirs;
mod io;
mod names;
mod open;

pub use attrs::*;
pub use dirs::*;
pub use io::*;
pub use names::*;
pub use open::*;
