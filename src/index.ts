/**
 * xstate-plan-mode: plan mode for AI agent loops, one XState v5 actor per agent.
 * The public surface is fixed by docs/spec.md §1.
 *
 * @module xstate-plan-mode
 */
export {
  createPlanMode,
  DISPOSED_MESSAGE,
  DISPOSED_BEFORE_TURN_MESSAGE,
  type PlanMode,
  type PlanModeActor,
  type PolicyReviewAnswer,
} from './service.js'
export { headlessReview, HEADLESS_STOP_MESSAGE, type HeadlessReviewPolicy, type HeadlessReviewOptions } from './plan/headless.js'
export { resolveConfig } from './config.js'
export {
  PLAN_MODE_EVENT,
  PLAN_REVIEW_EVENT,
  TURN_START_EVENT,
  TURN_END_EVENT,
  REQUEST_HEADER_EVENT,
  COMMAND_RUN_EVENT,
  COMMAND_DONE_EVENT,
  PLAN_VIOLATION_EVENT,
  PLAN_LOG_KINDS,
  presentsPlan,
  EMPTY_PLAN_LOG_FOLD,
  foldPlanMode,
  validatePlanModeEvent,
  replayPlanLog,
  foldPlanLogEvent,
  describePlanLogEvent,
  type PlanLogKind,
  type PlanLogFold,
  type PlanLogLine,
  type PlanModeData,
  type PlanReviewData,
  type ApprovedPlan,
  type PlanEpisode,
  type PlanDecision,
  type OpenPresentation,
  type PlanViolationData,
  type ViolationAction,
  type ReviewOutcome,
  type OpenPlanReview,
  type ReviewNews,
  type ReviewFold,
} from './log/kinds.js'
export { createPlanHistory, episodeBefore, planHistory, type PlanHistoryReader, type PresentedPlan } from './log/history.js'
export { diffPlans, formatPlanDiff, type PlanDiffLine } from './plan/diff.js'
export { foldViolations, type ViolationCounts, type ViolationEntry, type ViolationFold } from './log/violations.js'
export { planProjection, type PlanProjection, type PlanProjectionState, type PlanProjectionView } from './log/projection.js'
export { createMemorySessionLog, createMemoryCheckpointStore, type MemorySessionLogOptions } from './adapters/memory.js'
export {
  PLAN_CHECKPOINT_VERSION,
  readCheckpoint,
  replayFromCheckpoint,
  type CheckpointStore,
  type PlanCheckpoint,
} from './log/checkpoint.js'
export { eventDigest } from './log/digest.js'
export {
  EXIT_PLAN_MODE,
  EXIT_PLAN_MODE_DESCRIPTION,
  EXIT_PLAN_MODE_RESULT_TEXT,
  EXIT_PLAN_MODE_SUBMITTED_TEXT,
  type ExitPlanModeTool,
  type ExitToolResult,
  type ExitToolContext,
} from './plan/exit-tool.js'
export { type PlanCommand, type PlanCommandInput } from './plan/command.js'
export { NOTICE_TEXTS } from './plan/narration.js'
export type { NoticeKind } from './machines/planMode.events.js'
export { REVIEW_MESSAGES, APPROVED_NEWS_TEXT, APPROVE_FRESH_LABEL, KEEP_PLANNING_LABEL, LEAVE_LABEL, approvedPlanSection, commentsText, planTitle, reviewQuestion } from './plan/review.js'
export { dueHandoff, handoffText, type PlanHandoff } from './plan/handoff.js'
export { planModeMachine, type PlanModeContext } from './machines/planMode.machine.js'
export type { PlanModeEvent } from './machines/planMode.events.js'
export * from './types.js'

/** The plan-policy prompt section's name, for hosts that assemble named sections (SPEC §1). */
export const PLAN_POLICY_SECTION = 'plan:policy'
/** The plan-policy section's place among the named sections (SPEC §1). */
export const PLAN_POLICY_ORDER = 50
export type { ExitPlanModeParameters, ExitPlanModeOutputSchema } from './plan/exit-tool.js'
export { createCallTranscript, interleaveInjections, type CallTranscript, type CallInjection } from './plan/transcript.js'
