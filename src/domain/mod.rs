//! The shared vocabulary: the words several layers use to talk to each other — component and
//! BMC kinds, operation codes, devices with their power and firmware terms, operation requests
//! (targets, conflict strategy, templates) and the roles callers hold. It imports nothing of
//! Flow but `ids` and `error`, so the inventory, rules, operations, components, config, tasks
//! and the API can all name these types without importing one another.

pub mod code;
pub mod device;
pub mod kinds;
pub mod network;
pub mod operation;
pub mod role;

pub use code::OperationCode;
pub use device::{Device, DevicePower, FirmwareRequest, PowerOp};
pub use kinds::{BmcType, ComponentType, MacAddress, PowerState};
pub use network::ManagementNetworks;
pub use operation::{
    ConflictStrategy, Operation, OperationSpec, OperationTemplate, RackRef, TargetSpec,
};
pub use role::Role;
