//! A submission whose runs could not all start: what is withdrawn and what the caller hears.

use super::{Created, RefusalCode, Rejection, Submission};
use crate::error::Result;
use crate::ids::TaskId;
use crate::tasks::TaskService;
use crate::tasks::engine::{EngineError, engine_error};
use crate::tasks::model::TaskStatus;

impl TaskService {
    /// The engine stopped answering while this request's runs were being started: the tasks
    /// whose run did not start are deleted (never left behind as failed). When none started, so
    /// is every task of the request (queued ones included) and the caller hears 503; otherwise
    /// the withdrawn racks are listed as rejected with `engine_unavailable`.
    pub(super) async fn withdraw(
        &self,
        submission: &mut Submission,
        created: &[Created],
        unreachable: &[(TaskId, String)],
    ) -> Result<()> {
        let missed = |id: TaskId| unreachable.iter().any(|(u, _)| *u == id);
        let started = created
            .iter()
            .any(|c| c.task.status == TaskStatus::Pending && !missed(c.task.id));
        let withdrawn: Vec<&Created> = created
            .iter()
            .filter(|c| !started || missed(c.task.id))
            .collect();
        let ids: Vec<TaskId> = withdrawn.iter().map(|c| c.task.id).collect();
        self.discard_unstarted(&ids).await?;
        let reason = unreachable
            .first()
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        if !started {
            return Err(engine_error(EngineError::Unavailable(reason)));
        }
        tracing::warn!(withdrawn = ids.len(), error = %reason, "some runs could not start; their tasks were withdrawn");
        submission.task_ids.retain(|id| !ids.contains(id));
        for c in withdrawn {
            submission.rejected.push(Rejection {
                rack_id: c.task.rack_id,
                rack_name: c.rack_name.clone(),
                code: RefusalCode::EngineUnavailable,
                reason: format!("the workflow engine is unavailable: {reason}"),
            });
        }
        Ok(())
    }
}
