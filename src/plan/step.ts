import { episodeBefore } from '../log/history.js'
import type { ApprovedPlan } from '../log/kinds.js'
import type { PlanAgent, PlanModeState, StepBoundaryOptions, StepBoundaryResult } from '../types.js'
import { dueHandoff, type PlanHandoff } from './handoff.js'
import { approvedPlanSection, type ReviewDecisions } from './review.js'

/**
 * A step as a framework adapter runs it (R14, R18, R93, R99, R102): the boundary, and what the
 * step runs under, decided here for every adapter: the state in force, the system prompt's part
 * (the plan-policy section, or the approved plan pinned while it is carried out), the notices, and
 * the handoff a fresh approval makes. The adapter only puts them where its framework wants them.
 *
 * @example
 * const step = await planMode.step(agent, { signal, pinApprovedPlan: true })
 * // step.active picks the model; step.section goes after the base system prompt;
 * // step.handoff, when set, is the first message of a fresh context.
 */

/** Options of `planMode.step`. */
export interface PlanStepOptions {
  /** The step's abort signal: aborted, the boundary has no effect (R15). */
  signal?: AbortSignal
  /** Pin the plan approved last into `section` while it is carried out (R99). */
  pinApprovedPlan?: boolean
}

/** What `planMode.step` decides for one step. */
export interface PlanStep {
  /** The state in force for the step (R18: F as it stands after the boundary). */
  readonly active: boolean
  /**
   * The step's part of the system prompt: the plan-policy section while the state in force is
   * active (R18); with `pinApprovedPlan`, `approvedPlanSection(plan)` of the plan approved last
   * while it is carried out (R99); else `''`.
   */
  readonly section: string
  /** The boundary's messages (R32, R81). */
  readonly messages: StepBoundaryResult['messages']
  /**
   * The handoff this step's request starts with (R102), or null: with `decisions: 'all'`, a plan
   * approved into a fresh context that no request has followed yet, at a step whose state in force
   * is inactive. The host starts a fresh context with `handoff.text` (the boundary told nothing of
   * that approval itself).
   */
  readonly handoff: PlanHandoff | null
}

/** What `planStep` needs of the service. */
export interface PlanStepService {
  readonly decisions: ReviewDecisions
  get(agent: PlanAgent): PlanModeState
  approvedPlan(agent: PlanAgent): ApprovedPlan | null
  /** `stepBoundary`, with the state in force it leaves (R18). */
  boundary(agent: PlanAgent, options: StepBoundaryOptions): Promise<StepBoundaryResult & { active: boolean }>
}

/**
 * Runs one step's boundary and decides what the step runs under (see `PlanStep`).
 * @throws (rejects) as `stepBoundary` does; the step does not run.
 */
export async function planStep(service: PlanStepService, agent: PlanAgent, options: PlanStepOptions = {}): Promise<PlanStep> {
  const { signal } = options
  const pin = options.pinApprovedPlan === true
  // A fresh approval (R101) is read with `decisions: 'all'`, which offers it.
  const handsOff = service.decisions === 'all'
  // R99, R102: the approved plan, read while one may be carried out: at a step whose state in force
  // will be inactive (E now, R18). Read before the boundary, which must know whether this step's
  // request hands a fresh approval off: then the boundary does not tell it too (once).
  const now = service.get(agent)
  const approvedNow = (pin || handsOff) && (now.pending ?? now.active) === false ? service.approvedPlan(agent) : undefined
  // Read before this step's header: a fresh approval no request followed yet is handed off now.
  const due = approvedNow?.fresh === true ? dueHandoff(agent.session.events, approvedNow, episodeBefore(agent.session, agent.id)) : null
  const readAt = lastSeq(agent)
  const boundary = await service.boundary(agent, { ...(signal ? { signal } : {}), ...(due !== null ? { handoff: true } : {}) })
  // A step whose flush failed runs in plan mode (R19): it hands nothing off, pins nothing.
  const carriesOut = !boundary.active
  // The boundary ran in the agent's turn, after the operations called before it: the log may have
  // changed since the read (plan mode entered and left again: no plan is approved any more, R98).
  const unchanged = approvedNow !== undefined && lastSeq(agent) === readAt
  const approved = !carriesOut ? null : unchanged ? approvedNow : pin || due !== null ? service.approvedPlan(agent) : null
  const pinned = pin ? approved : null
  return {
    active: boundary.active,
    section: pinned === null ? boundary.section : approvedPlanSection(pinned.plan),
    messages: boundary.messages,
    // The handoff of the approval still in force only.
    handoff: due !== null && approved !== null && approved.seq === approvedNow?.seq ? due : null,
  }
}

/** The seq of the log's newest event: unchanged, nothing was appended in between. */
function lastSeq(agent: PlanAgent): number | undefined {
  const { events } = agent.session
  return events[events.length - 1]?.seq
}
