//! Communication between processes: pipes and FIFOs (`pipe`), Unix-domain sockets
//! (`socket`), System V IPC (`sysv`: keys, ids, permissions; shared memory segments `shm`,
//! message queues `msg`, semaphore sets `sem`), timer descriptors (`timerfd`), epoll
//! instances (`epoll`), event counters (`eventfd`), signal descriptors (`signalfd`), process
//! descriptors (`pidfd`).

pub mod epoll;
pub mod eventfd;
pub mod msg;
pub mod pidfd;
pub mod pipe;
pub mod sem;
pub mod shm;
pub mod signalfd;
pub mod socket;
pub mod sysv;
pub mod timerfd;
