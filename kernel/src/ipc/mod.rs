//! Communication between processes: pipes and FIFOs (`pipe`), Unix-domain socket names
//! (`socket`).

pub mod pipe;
pub mod socket;
