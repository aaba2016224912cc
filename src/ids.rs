//! Typed ids: one newtype over [`Uuid`] per kind of record, so that a rack id cannot be passed
//! where a task id is expected.
//!
//! Each id is `Copy`, ordered and hashable, serializes as the bare UUID (`serde(transparent)`),
//! prints and parses as one, and converts from and into [`Uuid`]. Each is also a sea-orm value
//! type, so a column filter takes it directly (`tasks::Column::Id.eq(task_id)`); the entities keep
//! `Uuid` columns and the store functions convert at the row boundary. New ids are UUIDv7: they
//! sort by creation time, which keeps the primary-key indexes append-mostly.
//!
//! The module knows nothing of HTTP or OpenAPI: the API layer keeps `Uuid` in its documents and
//! converts at its edge.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// Declares one id newtype with its conversions.
macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone,
            Copy,
            Debug,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
            sea_orm::DeriveValueType,
        )]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh id (UUIDv7, time-ordered).
            #[must_use]
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// The id as a bare UUID.
            #[must_use]
            pub const fn uuid(self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::from_str(s).map(Self)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl PartialEq<Uuid> for $name {
            fn eq(&self, other: &Uuid) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for Uuid {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

typed_id!(
    /// A rack in the inventory.
    RackId
);
typed_id!(
    /// A component (tray, switch, power shelf…) of a rack.
    ComponentId
);
typed_id!(
    /// A BMC record.
    BmcId
);
typed_id!(
    /// A hold: "do not touch" on a rack, a component or an NVLink domain.
    HoldId
);
typed_id!(
    /// An NVL domain.
    NvlDomainId
);
typed_id!(
    /// One rack's task: its share of an operation.
    TaskId
);
typed_id!(
    /// An operation request: what an operator asked for, across one or more racks.
    OperationRequestId
);
typed_id!(
    /// An operation rule.
    RuleId
);
typed_id!(
    /// A task schedule.
    ScheduleId
);
typed_id!(
    /// A rollout: one operation across many racks in waves.
    RolloutId
);
typed_id!(
    /// An API token.
    TokenId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_parse_and_serialize_as_bare_uuids() {
        let id = TaskId::new();
        let text = id.to_string();
        assert_eq!(text.parse::<TaskId>().unwrap(), id);
        assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{text}\""));
        let back: TaskId = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        assert_eq!(back, id);
        assert_eq!(Uuid::from(id), id.uuid());
        assert!("not-a-uuid".parse::<RackId>().is_err());
    }

    #[test]
    fn ids_are_sea_orm_values() {
        let id = RackId::new();
        let value: sea_orm::Value = id.into();
        assert_eq!(value, sea_orm::Value::from(id.uuid()));
    }
}
