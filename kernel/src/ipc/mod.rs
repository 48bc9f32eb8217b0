//! Communication between processes: pipes and FIFOs (`pipe`).

pub mod pipe;
