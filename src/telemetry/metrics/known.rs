//! The label values each counter and histogram is known to take, created at zero when the
//! metrics are: a series that appears only after first use leaves `increase()` and
//! `rate()` empty in a fresh process, so alerts such as `FlowTasksStuck` could never fire
//! and dashboards query series that may not exist. Device-call series are created per
//! manager as the registry configures it ([`manager`]). HTTP series stay created on use:
//! their status codes are not a closed set worth enumerating.

use super::Metrics;
use crate::domain::code::OperationCode;

/// The terminal statuses `flow_tasks_total` counts.
pub const TASK_END_STATUSES: &[&str] = &["succeeded", "failed", "cancelled"];
/// The outcomes of `flow_schedule_fires_total` (per rack of a fire).
pub const SCHEDULE_OUTCOMES: &[&str] = &["created", "skipped", "failed", "pending", "deferred"];
/// The calls `flow_temporal_client_errors_total` counts failures of.
pub const TEMPORAL_CALLS: &[&str] = &["start", "cancel", "state", "ping"];
/// The reasons `flow_auth_failures_total` counts.
pub const AUTH_FAILURE_REASONS: &[&str] = &["missing", "invalid", "expired", "sign_in"];
/// The outcomes of `flow_device_calls_total`.
pub const DEVICE_OUTCOMES: &[&str] = &["ok", "unreachable", "rejected", "unsupported"];

/// Creates every series whose labels are known when the process starts.
pub(super) fn create(m: &Metrics) {
    for operation in OperationCode::ALL {
        let operation = operation.as_str();
        for status in TASK_END_STATUSES {
            m.tasks.with_label_values(&[operation, *status]);
        }
        m.task_duration.with_label_values(&[operation]);
    }
    for outcome in SCHEDULE_OUTCOMES {
        m.schedule_fires.with_label_values(&[*outcome]);
    }
    for call in TEMPORAL_CALLS {
        m.temporal_errors.with_label_values(&[*call]);
    }
    for reason in AUTH_FAILURE_REASONS {
        m.auth_failures.with_label_values(&[*reason]);
    }
}

/// Creates the device-call series of one configured manager for the actions it offers.
pub fn manager(name: &str, actions: &[&str]) {
    let m = &*super::METRICS;
    for action in actions {
        for outcome in DEVICE_OUTCOMES {
            m.device_calls.with_label_values(&[name, action, outcome]);
        }
        m.device_call_duration.with_label_values(&[name, action]);
    }
}
