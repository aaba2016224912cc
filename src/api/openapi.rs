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
pub const AUTH: &str = "auth";
pub const HOLDS: &str = "holds";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Flow",
        description = "Inventory of GPU datacenter racks (expected racks, components, BMCs, NVLink domains) \
and rack-level operations on them. Errors are RFC 9457 `application/problem+json` documents with a stable \
`code` and, for bad input, one `errors` entry per field. Lists are paged with `limit` and an opaque `cursor`; they say how many items match (`total`) only when asked with `count=exact` or `count=estimate`. \
Every route but the probes and this document needs a bearer token (an OIDC JWT or a `flow_` API token); \
each operation names the role it needs: `viewer`, `operator`, `editor` or `admin`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    // Referenced only through the shared operation responses (and, `CountDoc`, the lists'
    // `count` parameter), so listed here to be emitted.
    components(schemas(crate::api::schema::operation::SubmissionDoc, crate::api::schema::operation::RejectionDoc,
        crate::api::schema::rule::DryRunDoc, crate::api::schema::common::CountDoc)),
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
        (name = HOLDS, description = "Safety interlocks: holds a workload scheduler sets on racks, components or NVLink domains while jobs run, and health reports from other systems; operations on held or not-ready targets are refused unless an admin overrides"),
        (name = SYSTEM, description = "Version, liveness and readiness"),
        (name = AUTH, description = "API tokens for automation and the audit log of every change (admin only)"),
    )
)]
pub struct ApiDoc;

/// Turns the access each operation declares (`security(("access" = [..]))` in its
/// `#[utoipa::path]`, see [`super::access`]) into the document's: the `bearerAuth` scheme,
/// `security` (empty on public routes), the role in the description, and the 401/403 answers.
/// An operation that declares nothing is described as the guard treats it: `admin` only.
/// `/metrics` is public as `FLOW_METRICS_PUBLIC` says.
pub fn secure(doc: &mut utoipa::openapi::OpenApi, metrics_public: bool) {
    use utoipa::openapi::path::Operation;
    use utoipa::openapi::security::{
        HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
    };
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearerAuth",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .description(Some(
                    "An OIDC access token from the configured identity provider, or a Flow API \
token (`flow_…`, created with `flow token create` or `POST /v1/tokens`).",
                ))
                .build(),
        ),
    );
    let problem = |text: &str| {
        ResponseBuilder::new()
            .description(text)
            .content(
                "application/problem+json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Problem")))
                    .build(),
            )
            .build()
    };
    let secure_op = |op: &mut Operation| {
        let access = super::access::table::declared_in(op)
            .unwrap_or(super::access::Access::Needs(crate::auth::Role::Admin));
        if metrics_public && access == super::access::Access::Metrics {
            op.security = Some(Vec::new());
            op.description = op
                .description
                .take()
                .map(|text| format!("{text}\n\nPublic (`FLOW_METRICS_PUBLIC=true`, the default)."));
            return;
        }
        let Some(rule) = super::access::describe(access) else {
            op.security = Some(Vec::new());
            return;
        };
        op.security = Some(vec![SecurityRequirement::new(
            "bearerAuth",
            Vec::<String>::new(),
        )]);
        op.description = Some(match op.description.take() {
            Some(text) if !text.is_empty() => format!("{text}\n\n{rule}"),
            _ => rule.to_string(),
        });
        op.responses
            .responses
            .entry("401".into())
            .or_insert_with(|| {
                problem("Missing, invalid or expired credentials (`WWW-Authenticate: Bearer`)")
                    .into()
            });
        op.responses
            .responses
            .entry("403".into())
            .or_insert_with(|| problem("The caller lacks the role this route needs").into());
    };
    for item in doc.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            secure_op(op);
        }
    }
}
