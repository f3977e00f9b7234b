/**
 * xstate-plan-mode: plan mode for AI agent loops, one XState v5 actor per agent.
 * The public surface is fixed by docs/spec.md §1: what a host calls (the service, the review
 * channels, the memory log, the readers a UI or dashboard uses), the types it writes code against,
 * and two tables: `PLAN_LOG_EVENTS` (the log's event types) and `PLAN_MODE_TEXTS` (every text).
 * The statechart itself is in `xstate-plan-mode/inspect`; test/surface.test.ts pins this list.
 *
 * @module xstate-plan-mode
 */

// The service.
export { createPlanMode, type PlanMode, type PlanModeActor } from './service.js'
export type { PlanModeOptions } from './options.js'
export type {
  PlanAgent,
  SessionEvent,
  SessionLog,
  UserMessage,
  PendingStore,
  ReviewChannel,
  ReviewRequest,
  ReviewQuestion,
  ReviewAnswer,
  ReviewComment,
  StepBoundaryResult,
  OpenReviewView,
  CommandResult,
} from './types.js'
export { EXIT_PLAN_MODE, type ExitPlanModeTool } from './plan/exit-tool.js'
export type { PlanCommand } from './plan/command.js'
export { headlessReview } from './plan/headless.js'
export { PLAN_MODE_TEXTS } from './plan/texts.js'

// The log: its event types, the memory log and checkpoints, and the readers of a log.
export {
  PLAN_LOG_EVENTS,
  foldPlanMode,
  validatePlanModeEvent,
  replayPlanLog,
  foldPlanLogEvent,
  describePlanLogEvent,
  type PlanLogFold,
  type PlanLogLine,
  type PlanModeData,
  type PlanReviewData,
  type ReviewOutcome,
  type ApprovedPlan,
} from './log/kinds.js'
export { createMemorySessionLog, createMemoryCheckpointStore } from './adapters/memory.js'
export { PLAN_CHECKPOINT_VERSION, readCheckpoint, replayFromCheckpoint, type CheckpointStore, type PlanCheckpoint } from './log/checkpoint.js'
export { eventDigest } from './log/digest.js'
export { createPlanHistory, episodeBefore, planHistory, type PlanHistoryReader, type PresentedPlan } from './log/history.js'
export { planProjection, type PlanProjection } from './log/projection.js'
export { foldViolations, type ViolationFold } from './log/violations.js'
export { diffPlans, formatPlanDiff, type PlanDiffLine } from './plan/diff.js'
export { dueHandoff } from './plan/handoff.js'

// For hosts whose framework's step hook adds messages for one step only.
export { createCallTranscript } from './plan/transcript.js'

/** The plan-policy prompt section's name, for hosts that assemble named sections (SPEC §1). */
export const PLAN_POLICY_SECTION = 'plan:policy'
/** The plan-policy section's place among the named sections (SPEC §1). */
export const PLAN_POLICY_ORDER = 50
