//! A simulated NVMe controller for testing the `nvme` protocol core without hardware: register
//! file with CAP/CC/CSTS behaviour, admin and I/O queues in bus memory, Identify, Number of
//! Queues, queue creation, read/write/flush/DSM/write zeroes on RAM namespaces through PRP or
//! SGL data pointers, completions in or out of order, and hostile completions.
//!
//! The controller only runs when the test calls [`SimController::process`], which makes every
//! interleaving reproducible. [`host::Host`] is a small test host that drives the `nvme` crate
//! against it (it is not a copy of the kernel driver).

pub mod bus;
pub mod ctrl;
pub mod dptr;
pub mod exec;
pub mod host;
pub mod hostile;
pub mod ns;
pub mod regs;

pub use bus::Bus;
pub use ctrl::{SimConfig, SimController};
pub use hostile::Hostile;
pub use ns::{CtrlIdentity, LbaFormat, NsConfig};
pub use regs::{RegBehaviour, SimRegs};
