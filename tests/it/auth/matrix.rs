//! The role × route-class matrix, with JWTs (roles claim) and with API tokens of each role.

use axum::http::Method;
use flow::auth::Role;
use serde_json::{Value, json};

use super::{TestKey, api_token, bearer, claims, secured_app};
use crate::support::fixtures::readme_rack;
use crate::support::{Backend, TestApp};

/// One class of route, with a request standing for it.
struct Class {
    name: &'static str,
    method: Method,
    path: String,
    body: Option<Value>,
    /// Roles allowed through (others get 403).
    allowed: &'static [Role],
}

fn classes(rack: &str) -> Vec<Class> {
    use Role::{Admin, Editor, Operator, Viewer};
    let all: &'static [Role] = &[Viewer, Operator, Editor, Admin];
    vec![
        Class {
            name: "read",
            method: Method::GET,
            path: "/v1/racks".into(),
            body: None,
            allowed: all,
        },
        Class {
            name: "dry run",
            method: Method::POST,
            path: "/v1/operations/power-off?dry_run=true".into(),
            body: Some(json!({"target_spec": {"racks": [{"name": "g10"}]}})),
            allowed: all,
        },
        Class {
            name: "power off",
            method: Method::POST,
            path: "/v1/operations/power-off".into(),
            body: Some(json!({"target_spec": {"racks": [{"name": "g10"}]}})),
            allowed: &[Operator, Admin],
        },
        Class {
            name: "cancel",
            method: Method::POST,
            path: "/v1/tasks/0192f3a0-0000-7000-8000-0000000000ab/cancel".into(),
            body: None,
            allowed: &[Operator, Admin],
        },
        Class {
            name: "edit inventory",
            method: Method::PATCH,
            path: format!("/v1/racks/{rack}"),
            body: Some(json!({"description": "edited"})),
            allowed: &[Editor, Admin],
        },
        Class {
            name: "change rules",
            method: Method::POST,
            path: "/v1/operation-rules".into(),
            body: Some(json!({})),
            allowed: &[Admin],
        },
        Class {
            name: "purge",
            method: Method::POST,
            path: format!("/v1/racks/{rack}/purge"),
            body: None,
            allowed: &[Admin],
        },
        Class {
            name: "tokens",
            method: Method::GET,
            path: "/v1/tokens".into(),
            body: None,
            allowed: &[Admin],
        },
        Class {
            name: "audit",
            method: Method::GET,
            path: "/v1/audit".into(),
            body: None,
            allowed: &[Admin],
        },
        Class {
            name: "delete inventory",
            method: Method::DELETE,
            path: format!("/v1/racks/{rack}"),
            body: None,
            allowed: &[Editor, Admin],
        },
    ]
}

async fn check(app: &TestApp, class: &Class, who: &str, role: Role, token: &str) {
    let auth = bearer(token);
    let r = app
        .call(
            class.method.clone(),
            &class.path,
            class.body.as_ref(),
            &[("authorization", &auth)],
        )
        .await;
    let status = r.status.as_u16();
    if class.allowed.contains(&role) {
        assert!(
            status != 401 && status != 403,
            "{who} ({role}) must be allowed to {}: {status} {}",
            class.name,
            r.text
        );
    } else {
        let body = r.assert_problem(403, "forbidden");
        let detail = body["detail"].as_str().unwrap();
        let needed = class.allowed[0].as_str();
        assert!(
            detail.contains(needed),
            "403 names the role {needed}: {detail}"
        );
    }
}

async fn every_role_gets_what_its_role_allows_with_jwts_and_api_tokens(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let admin = api_token(&app, "setup", Role::Admin).await;
    let auth = bearer(&admin);
    let rack = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            Some(&readme_rack()),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(rack.status, 201, "{}", rack.text);
    let rack_id = rack.body["id"].as_str().unwrap().to_string();
    let mut tokens = Vec::new();
    for role in Role::ALL {
        let jwt = key.sign(&claims(&format!("{role}-person"), &[role.as_str()]));
        tokens.push((format!("jwt {role}"), role, jwt));
        let api = api_token(&app, &format!("bot-{role}"), role).await;
        tokens.push((format!("api token {role}"), role, api));
    }
    // Admins last: their delete makes the rack gone for whoever would come after.
    tokens.sort_by_key(|(_, role, _)| *role == Role::Admin);
    for class in classes(&rack_id) {
        for (who, role, token) in &tokens {
            check(&app, &class, who, *role, token).await;
        }
    }
    app.db.cleanup().run().await;
}

async fn a_jwt_without_a_flow_role_is_refused_with_403_and_mapped_groups_grant_roles(
    backend: Backend,
) {
    let key = TestKey::eddsa("ed1");
    let jwks = super::Jwks::serve(&[&key]).await;
    let mut config = super::auth_config(&jwks);
    config.auth.jwt.role_map = "dc-admins=admin,noc=operator".into();
    config.auth.jwt.roles_claim = "groups".into();
    let app = TestApp::with_config(backend, config).await;
    let mut c = claims("nobody", &[]);
    c["groups"] = json!("staff admin");
    let r = app
        .call(
            Method::GET,
            "/v1/racks",
            None,
            &[("authorization", &bearer(&key.sign(&c)))],
        )
        .await;
    let detail = r.assert_problem(403, "forbidden")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("no Flow role") && detail.contains("viewer"),
        "{detail}"
    );
    c["groups"] = json!("staff noc");
    let noc = bearer(&key.sign(&c));
    let r = app
        .call(Method::GET, "/v1/racks", None, &[("authorization", &noc)])
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .call(Method::GET, "/v1/tokens", None, &[("authorization", &noc)])
        .await;
    r.assert_problem(403, "forbidden");
    c["groups"] = json!(["dc-admins"]);
    let admin = bearer(&key.sign(&c));
    let r = app
        .call(
            Method::GET,
            "/v1/tokens",
            None,
            &[("authorization", &admin)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.db.cleanup().run().await;
}

async fn public_routes_answer_without_credentials_and_the_rest_ask_for_them(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    for path in ["/healthz", "/readyz", "/openapi.json", "/swagger-ui/"] {
        let r = app.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    let r = app.get("/v1/racks").await;
    r.assert_problem(401, "unauthorized");
    assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"flow\""));
    let r = app.post("/v1/expected-racks", &readme_rack()).await;
    r.assert_problem(401, "unauthorized");
    assert_eq!(app.count_rows("racks").await, 0);
    app.db.cleanup().run().await;
}

crate::on_both_secured!(
    every_role_gets_what_its_role_allows_with_jwts_and_api_tokens,
    a_jwt_without_a_flow_role_is_refused_with_403_and_mapped_groups_grant_roles,
    public_routes_answer_without_credentials_and_the_rest_ask_for_them,
);
