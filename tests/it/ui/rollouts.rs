//! The rollout pages: list, wave progress, the live stream and the steering forms. Rollouts are
//! stored directly (their workflow is tested in `rollouts::`): what is tested is the page.

use chrono::Utc;
use flow::api::schema::rollout::CreateRolloutRequest;
use flow::rollouts::model::{RackState, Wave, WaveRack, WaveStatus};
use flow::rollouts::{Rollout, RolloutStatus};
use serde_json::json;
use uuid::Uuid;

use super::{assert_html, cookie_of, post_form};
use crate::on_both_backends;
use crate::support::TestApp;

on_both_backends!(
    rollouts_are_listed_and_a_rollout_shows_its_waves_and_gate,
    an_ended_rollout_streams_once_and_closes,
);

fn rack(name: &str, state: RackState) -> WaveRack {
    WaveRack {
        rack_id: Uuid::new_v4().into(),
        rack_name: name.into(),
        state,
        task_id: None,
        reason: (state == RackState::Skipped).then(|| "busy <rack>".into()),
        verify_failed: false,
    }
}

/// A stored rollout of three racks: a canary wave done, a second wave waiting for approval.
pub async fn stored(app: &TestApp, name: &str, status: RolloutStatus) -> Uuid {
    let request: CreateRolloutRequest = serde_json::from_value(json!({
        "name": name,
        "operation": {"kind": "power_on"},
        "target_spec": {"racks": [{"name": "rack-a"}, {"name": "rack-b"}, {"name": "rack-c"}]},
        "strategy": {"canary": 1, "batch_size": 2, "approval_after_canary": true},
    }))
    .unwrap();
    let now = Utc::now();
    let ended = status.is_terminal();
    let rollout = Rollout {
        id: Uuid::now_v7().into(),
        spec: request.to_domain().unwrap(),
        status,
        waves: vec![
            Wave {
                index: 0,
                canary: true,
                status: WaveStatus::Succeeded,
                racks: vec![rack("rack-a", RackState::Skipped)],
                started_at: Some(now),
                finished_at: Some(now),
            },
            Wave {
                index: 1,
                canary: false,
                status: if ended {
                    WaveStatus::NotRun
                } else {
                    WaveStatus::Pending
                },
                racks: vec![
                    rack(
                        "rack-b",
                        if ended {
                            RackState::NotRun
                        } else {
                            RackState::Pending
                        },
                    ),
                    rack(
                        "rack-c",
                        if ended {
                            RackState::NotRun
                        } else {
                            RackState::Pending
                        },
                    ),
                ],
                started_at: None,
                finished_at: None,
            },
        ],
        current_wave: Some(1),
        approved: false,
        message: "waiting for approval".into(),
        revision: 0,
        created_at: now,
        updated_at: now,
        started_at: Some(now),
        finished_at: ended.then_some(now),
    };
    flow::rollouts::store::insert(&app.db.db, &rollout)
        .await
        .unwrap();
    rollout.id.into()
}

async fn rollouts_are_listed_and_a_rollout_shows_its_waves_and_gate(app: TestApp) {
    let id = stored(&app, "fw <canary>", RolloutStatus::AwaitingApproval).await;
    stored(&app, "older", RolloutStatus::Aborted).await;
    let list = app.get("/ui/rollouts").await;
    assert_html(&list, 200);
    assert!(list.text.contains("aria-current=\"page\""), "{}", list.text);
    assert!(list.text.contains("fw &lt;canary&gt;"), "{}", list.text);
    assert!(list.text.contains("<span>2 shown</span>"), "{}", list.text);
    let filtered = app.get("/ui/rollouts?status=aborted&name=").await;
    assert_html(&filtered, 200);
    assert!(
        filtered.text.contains("<span>1 shown</span>"),
        "{}",
        filtered.text
    );
    assert!(!filtered.text.contains("fw &lt;canary&gt;"));
    let first = app.get("/ui/rollouts?limit=1").await;
    assert!(first.text.contains("rel=\"next\""), "{}", first.text);
    let r = app.get("/ui/rollouts?status=exploded").await;
    assert_html(&r, 400);
    assert!(r.text.contains("<strong>status</strong>"), "{}", r.text);

    let page = app.get(&format!("/ui/rollouts/{id}")).await;
    assert_html(&page, 200);
    for expected in [
        "Wave 1 (canary)",
        "Wave 2",
        "rack-b",
        "busy &lt;rack&gt;",
        "waiting for approval",
        "awaiting_approval",
        &format!("sse-connect=\"/ui/rollouts/{id}/live\""),
        &format!("/ui/rollouts/{id}/approve"),
        &format!("/ui/rollouts/{id}/pause"),
        &format!("/ui/rollouts/{id}/abort-cancel"),
    ] {
        assert!(
            page.text.contains(expected),
            "lacks {expected}: {}",
            page.text
        );
    }
    assert_html(
        &app.get(&format!("/ui/rollouts/{}", Uuid::new_v4())).await,
        404,
    );
    assert_html(&app.get("/ui/rollouts/nope").await, 400);

    let (cookie, token) = cookie_of(&page);
    let csrf = format!("csrf={token}");
    let path = format!("/ui/rollouts/{id}/explode");
    assert_html(&post_form(&app, &path, Some(&cookie), &csrf).await, 404);
    // No workflow engine in this process: the command is refused, readably.
    let path = format!("/ui/rollouts/{id}/approve");
    let r = post_form(&app, &path, Some(&cookie), &csrf).await;
    assert_html(&r, 503);
    assert!(r.text.contains("role=\"alert\""), "{}", r.text);
    // An ended rollout offers no steering, and refuses it.
    let done = stored(&app, "done", RolloutStatus::Succeeded).await;
    let page = app.get(&format!("/ui/rollouts/{done}")).await;
    assert!(!page.text.contains("/approve"), "{}", page.text);
    assert!(!page.text.contains("sse-connect"), "{}", page.text);
    let path = format!("/ui/rollouts/{done}/pause");
    assert_html(&post_form(&app, &path, Some(&cookie), &csrf).await, 409);
}

async fn an_ended_rollout_streams_once_and_closes(app: TestApp) {
    let id = stored(&app, "finished", RolloutStatus::Halted).await;
    let r = app.get(&format!("/ui/rollouts/{id}/live")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.text.starts_with("event: rollout\n"), "{}", r.text);
    assert!(r.text.contains("Wave 1 (canary)"), "{}", r.text);
    assert!(r.text.contains("event: done\ndata: ended"), "{}", r.text);
    let missing = app
        .get(&format!("/ui/rollouts/{}/live", Uuid::new_v4()))
        .await;
    assert_html(&missing, 404);
}
