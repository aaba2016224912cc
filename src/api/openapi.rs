//! The OpenAPI document's fixed parts: info, servers, tags. Paths and schemas come from the routes.

use utoipa::OpenApi;

pub const RACKS: &str = "racks";
pub const COMPONENTS: &str = "components";
pub const NVL_DOMAINS: &str = "nvl-domains";
pub const OPERATIONS: &str = "operations";
pub const TASKS: &str = "tasks";
pub const RULES: &str = "operation-rules";
pub const VALIDATION: &str = "validation";
pub const SCHEDULES: &str = "task-schedules";
pub const ROLLOUTS: &str = "rollouts";
pub const SYSTEM: &str = "system";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Flow",
        description = "Inventory of GPU datacenter racks (expected racks, components, BMCs, NVLink domains) \
and rack-level operations on them. Errors are RFC 9457 `application/problem+json` documents with a stable \
`code` and, for bad input, one `errors` entry per field. Lists are paged with `limit` and an opaque `cursor`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    // Referenced only through the shared operation responses, so listed here to be emitted.
    components(schemas(crate::api::schema::operation::SubmissionDoc, crate::api::schema::operation::RejectionDoc,
        crate::api::schema::rule::DryRunDoc)),
    tags(
        (name = RACKS, description = "Expected racks and what they contain"),
        (name = COMPONENTS, description = "Trays, switches, power shelves and other devices, with their BMCs"),
        (name = NVL_DOMAINS, description = "NVLink domains and the racks they join"),
        (name = OPERATIONS, description = "Power, firmware, bring-up and ingest: one task per rack, run as a durable workflow"),
        (name = RULES, description = "Operation rules: the stages each operation walks, per rack or as the default, every version kept"),
        (name = TASKS, description = "Tasks, their per-component reports, cancellation and live events"),
        (name = VALIDATION, description = "Expected vs actual: live validation against the component managers, and the drift the periodic sync records"),
        (name = SCHEDULES, description = "Recurring and one-time operations on racks: timers, scope, runs and conflict advice"),
        (name = ROLLOUTS, description = "Fleet rollouts: one operation across many racks in waves (canary, batches, approval, failure budget, windows) as one durable workflow"),
        (name = SYSTEM, description = "Version, liveness and readiness"),
    )
)]
pub struct ApiDoc;
