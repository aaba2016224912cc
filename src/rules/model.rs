//! Operation rules as data: the stages an operation walks, each stage's component types, actions,
//! parallelism, timeout, retry policy and failure handling, and the stored rule around them.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::duration;
use crate::domain::ComponentType;
use crate::domain::code::OperationCode;
use crate::domain::{DevicePower, PowerOp};
use crate::ids::RuleId;

/// The only definition format so far; stored with every definition so a later one can be told apart.
pub const DEFINITION_VERSION: &str = "v1";

/// The power operation a `power_control` action sends, named as operators and the API name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerCode {
    PowerOn,
    ForcePowerOn,
    PowerOff,
    ForcePowerOff,
    Restart,
    ForceRestart,
    WarmReset,
    ColdReset,
    BmcReset,
}

impl PowerCode {
    pub const ALL: [PowerCode; 9] = [
        Self::PowerOn,
        Self::ForcePowerOn,
        Self::PowerOff,
        Self::ForcePowerOff,
        Self::Restart,
        Self::ForceRestart,
        Self::WarmReset,
        Self::ColdReset,
        Self::BmcReset,
    ];

    /// The wire form, the same string serde writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PowerOn => "power_on",
            Self::ForcePowerOn => "force_power_on",
            Self::PowerOff => "power_off",
            Self::ForcePowerOff => "force_power_off",
            Self::Restart => "restart",
            Self::ForceRestart => "force_restart",
            Self::WarmReset => "warm_reset",
            Self::ColdReset => "cold_reset",
            Self::BmcReset => "bmc_reset",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }

    pub fn op(self) -> PowerOp {
        match self {
            Self::PowerOn => PowerOp::On,
            Self::ForcePowerOn => PowerOp::ForceOn,
            Self::PowerOff => PowerOp::Off,
            Self::ForcePowerOff => PowerOp::ForceOff,
            Self::Restart => PowerOp::Restart,
            Self::ForceRestart => PowerOp::ForceRestart,
            Self::WarmReset => PowerOp::WarmReset,
            Self::ColdReset => PowerOp::ColdReset,
            Self::BmcReset => PowerOp::BmcReset,
        }
    }

    /// The power operation a rule for `operation` sends when an action names none.
    pub fn inherited(operation: OperationCode) -> Option<Self> {
        match operation {
            OperationCode::PowerOn => Some(Self::PowerOn),
            OperationCode::PowerOff => Some(Self::PowerOff),
            OperationCode::ForcePowerOff => Some(Self::ForcePowerOff),
            _ => None,
        }
    }
}

/// One thing done to each component of a stage, in the order the stage lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Sends a power operation; without `operation`, the task's own (power on/off tasks only).
    PowerControl {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operation: Option<PowerCode>,
    },
    /// Polls the power status until it is `expect`, for at most `timeout`.
    VerifyPower {
        expect: DevicePower,
        #[serde(with = "duration::text")]
        timeout: Duration,
        #[serde(with = "duration::text")]
        poll_interval: Duration,
    },
    /// Polls until the component's manager answers for it at all, for at most `timeout`.
    VerifyReachable {
        #[serde(with = "duration::text")]
        timeout: Duration,
        #[serde(with = "duration::text")]
        poll_interval: Duration,
    },
    /// Waits.
    Sleep {
        #[serde(with = "duration::text")]
        duration: Duration,
    },
    /// Starts a firmware update to the task's version for the component's type: with
    /// `bundle`, only that bundle (from 0) of the version's recipe.
    FirmwareStart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bundle: Option<u32>,
    },
    /// Polls the update started earlier in the stage until it completes, fails or runs out of time.
    FirmwareWait {
        #[serde(with = "duration::text")]
        timeout: Duration,
        #[serde(with = "duration::text")]
        poll_interval: Duration,
    },
    /// Registers the component with its manager (injects the expectation).
    Register,
    /// Makes a pushed bundle live the way the recipe declares for it: `bmc_reset` restarts the
    /// BMC and waits for it to answer again, `power_cycle` cycles the tray and waits for it to
    /// report on; `ac_cycle` is left to the rack's AC-cycle stages. Without `bundle`, the
    /// strongest tray activation any bundle of the recipe needs.
    FirmwareActivate {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bundle: Option<u32>,
        #[serde(with = "duration::text")]
        timeout: Duration,
        #[serde(with = "duration::text")]
        poll_interval: Duration,
    },
    /// Polls until every part the recipe names runs the version it expects.
    FirmwareVerify {
        #[serde(with = "duration::text")]
        timeout: Duration,
        #[serde(with = "duration::text")]
        poll_interval: Duration,
    },
    /// The whole recipe on one tray, in at most `timeout`: each bundle in order pushed,
    /// followed to its end and activated, then the parts verified; images that need an AC
    /// cycle stay staged and are verified after the rack's AC cycle.
    FirmwareRecipe {
        #[serde(with = "duration::text")]
        timeout: Duration,
        #[serde(with = "duration::text")]
        poll_interval: Duration,
    },
}

impl Action {
    pub const NAMES: [&'static str; 10] = [
        "power_control",
        "verify_power",
        "verify_reachable",
        "sleep",
        "firmware_start",
        "firmware_wait",
        "register",
        "firmware_activate",
        "firmware_verify",
        "firmware_recipe",
    ];

    /// Short name for reports: `power_on`, `verify_power_off`, `sleep`, `firmware_start`, ...
    pub fn label(&self) -> String {
        match self {
            Self::PowerControl {
                operation: Some(code),
            } => code.as_str().into(),
            Self::PowerControl { operation: None } => "power_control".into(),
            Self::VerifyPower { expect, .. } => match expect {
                DevicePower::Off => "verify_power_off".into(),
                _ => "verify_power_on".into(),
            },
            Self::VerifyReachable { .. } => "verify_reachable".into(),
            Self::Sleep { .. } => "sleep".into(),
            Self::FirmwareStart { bundle: None } => "firmware_start".into(),
            Self::FirmwareStart { bundle: Some(i) } => format!("firmware_start_bundle_{i}"),
            Self::FirmwareWait { .. } => "firmware_wait".into(),
            Self::Register => "register".into(),
            Self::FirmwareActivate { bundle: None, .. } => "firmware_activate".into(),
            Self::FirmwareActivate {
                bundle: Some(i), ..
            } => format!("firmware_activate_bundle_{i}"),
            Self::FirmwareVerify { .. } => "firmware_verify".into(),
            Self::FirmwareRecipe { .. } => "firmware_recipe".into(),
        }
    }

    /// Longest the action itself may wait (polls and sleeps); device calls are bounded by their
    /// clients' own timeouts.
    pub fn bound(&self) -> Duration {
        match self {
            Self::VerifyPower { timeout, .. }
            | Self::VerifyReachable { timeout, .. }
            | Self::FirmwareWait { timeout, .. }
            | Self::FirmwareActivate { timeout, .. }
            | Self::FirmwareVerify { timeout, .. }
            | Self::FirmwareRecipe { timeout, .. } => *timeout,
            Self::Sleep { duration } => *duration,
            _ => Duration::ZERO,
        }
    }

    /// Whether the action changes the device (as opposed to checking or waiting).
    pub fn acts(&self) -> bool {
        matches!(
            self,
            Self::PowerControl { .. }
                | Self::FirmwareStart { .. }
                | Self::FirmwareActivate { .. }
                | Self::FirmwareRecipe { .. }
                | Self::Register
        )
    }
}

/// Retry policy for one component's pass through a stage. Only transient device errors and
/// verification timeouts are retried; a device that refuses is not.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Total attempts, the first included.
    pub max_attempts: u32,
    #[serde(with = "duration::text")]
    pub initial_interval: Duration,
    pub backoff_coefficient: f64,
    #[serde(with = "duration::text")]
    pub max_interval: Duration,
}

impl Retry {
    pub const NONE: Retry = Retry {
        max_attempts: 1,
        initial_interval: Duration::from_secs(1),
        backoff_coefficient: 1.0,
        max_interval: Duration::from_secs(1),
    };

    /// The longest total back-off between all attempts.
    pub fn total_backoff(&self) -> Duration {
        let mut total = Duration::ZERO;
        let mut interval = self.initial_interval;
        for _ in 1..self.max_attempts {
            total += interval.min(self.max_interval);
            interval = interval.mul_f64(self.backoff_coefficient);
        }
        total
    }
}

/// What a stage does when one of its components fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// The rack's task fails and later stages do not run.
    #[default]
    Stop,
    /// Later stages still run; the task ends failed, naming every failed component.
    Continue,
}

/// When a stage runs at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageWhen {
    /// Only when a tray of the rack staged an image that needs the rack's AC cycle (a
    /// firmware recipe bundle with `activate = "ac_cycle"`); skipped otherwise.
    AcCycle,
}

/// One stage: the components of its types, each taken through the actions in order, at most
/// `max_parallel` components at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageRule {
    pub name: String,
    pub component_types: Vec<ComponentType>,
    pub actions: Vec<Action>,
    pub max_parallel: u32,
    /// Limit for one attempt of one component's whole action list.
    #[serde(with = "duration::text")]
    pub timeout: Duration,
    pub retry: Retry,
    #[serde(default)]
    pub on_failure: OnFailure,
    /// Pause after the stage ends, before the next one starts (e.g. to let power drain).
    #[serde(with = "duration::text", default)]
    pub delay_after: Duration,
    /// Runs only under this condition (`ac_cycle`); always when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<StageWhen>,
}

/// A rule's plan: stages in the order they run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDefinition {
    pub version: String,
    pub stages: Vec<StageRule>,
}

/// Where the rule a task runs came from, in resolution order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleSource {
    /// Named in the request.
    Request,
    /// Associated with the rack for this operation.
    Rack,
    /// The default rule for the operation.
    Default,
    /// Flow's built-in rule for the operation.
    Builtin,
}

/// A rule with its identity: stored rules have an id and version, built-in ones have neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub id: Option<RuleId>,
    pub name: String,
    pub description: Option<String>,
    /// The operation the rule is for (`power_on`, `upgrade`, ...).
    pub operation: OperationCode,
    pub is_default: bool,
    pub builtin: bool,
    pub version: Option<i32>,
    pub definition: RuleDefinition,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// Which rule (and version) a task ran, as recorded on the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedRule {
    pub id: Option<RuleId>,
    pub name: String,
    pub version: Option<i32>,
    pub source: RuleSource,
}

impl Rule {
    pub fn applied(&self, source: RuleSource) -> AppliedRule {
        AppliedRule {
            id: self.id,
            name: self.name.clone(),
            version: self.version,
            source,
        }
    }
}
