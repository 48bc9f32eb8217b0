//! Communication between processes: pipes and FIFOs (`pipe`), Unix-domain sockets
//! (`socket`), System V shared memory segments (`shm`), timer descriptors (`timerfd`), epoll
//! instances (`epoll`), event counters (`eventfd`), signal descriptors (`signalfd`), process
//! descriptors (`pidfd`).

pub mod epoll;
pub mod eventfd;
pub mod pidfd;
pub mod pipe;
pub mod shm;
pub mod signalfd;
pub mod socket;
pub mod timerfd;
