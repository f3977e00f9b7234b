/**
 * The public types of xstate-plan-mode (SPEC §1). Names are fixed: hosts and outside
 * conformance tests depend on them.
 */
import type { SessionEvent, SessionLog } from './log/session.js'

export type { SessionEvent, SessionLog } from './log/session.js'

/** A text block of a message. */
export interface TextPart {
  type: 'text'
  text: string
}

/** Where a user message came from: the user, or a plugin's notice (R34). */
export type MessageSource =
  | { kind: 'user' }
  | { kind: 'plugin'; plugin: 'plan-mode'; form: 'notice'; summary: string }

/** A user-role message handed to the model (notices, R34) or steered into the agent (R56). */
export interface UserMessage {
  id: string
  role: 'user'
  /** Text blocks, and for steered messages the attachments the host passed, in order. */
  content: unknown[]
  source: MessageSource
}

/** The agent plan mode works for. The first call naming it attaches it (SPEC §1). */
export interface PlanAgent {
  id: string
  session: SessionLog
  /**
   * Sends a user message into the agent; needed for `/plan <message>` (R56). It may return a
   * promise: `/plan` awaits it and reports its rejection (R57).
   */
  steer?(message: UserMessage): void
  /** Set when the agent is owned by another live agent: it cannot ask the user (R42.7). */
  owner?: string
}

/** Where warnings about contained faults go (R19, R49, R61). */
export interface PlanModeLogger {
  warn(...args: unknown[]): void
}

/** The question a plan review asks (R43). */
export interface ReviewQuestion {
  id: 'plan-review'
  header: string
  question: string
  detail: string
  options: { label: string; description: string }[]
  intent: { kind: 'plan-review'; approve: string }
}

/** What the review channel is asked: one question, the agent, and a signal owned by the service. */
export interface ReviewRequest {
  questions: [ReviewQuestion]
  agent: PlanAgent
  signal: AbortSignal
}

/**
 * A comment anchored to the plan (R100): `quote` is an exact excerpt of the plan (the lines or
 * words it is about), `text` what the user says of it.
 */
export interface ReviewComment {
  quote: string
  text: string
}

/** The user's answer to a review. */
export interface ReviewAnswer {
  /** The `plan-review` item's `comments` are anchored to the plan (R100); they never consent (R44). */
  answers: { id: string; selected: string[]; custom?: string; comments?: ReviewComment[] }[]
  /**
   * Who answered, when it was not the user: `'policy'` for a headless review policy (R94). The
   * record of the outcome carries it (`plan/review { …, by: 'policy' }`), so a policy's approval
   * is never taken for a user's; a user's answer leaves it out. Any other value is not read.
   */
  by?: 'policy'
}

/**
 * The host's way to ask the user. A rejection whose error has `code: 'ASK_CANCELLED'`
 * means the user dismissed the review (R46); when that error also has `by: 'policy'`, a
 * headless review policy dismissed it, and the record says so (R94).
 */
export interface ReviewChannel {
  ask(request: ReviewRequest): Promise<ReviewAnswer>
}

/**
 * A host-side store of the selection that waits for a step boundary, so that a selection made
 * after a turn's last step survives a restart. `get` is read once, synchronously, at attach;
 * `set` and `delete` may be asynchronous and are awaited before `set` resolves.
 */
export interface PendingStore {
  get(agentId: string): boolean | undefined
  set(agentId: string, pending: boolean): void | Promise<void>
  delete(agentId: string): void | Promise<void>
}

/** A durable review the log holds open (R79), as `openReview` returns it. */
export interface OpenReviewView {
  reviewId: string
  title: string
  plan: string
  /** The plan's version in its planning episode (R96, R138): 1, 2, … as `planHistory` numbers it. */
  version: number
  /** The log position of the review's request record (its seq, R138). */
  seq: number
  /** The framework's id of the exit call that opened it, when it gave one (R79). */
  callId?: string
}

/** Options of `answerReview` (R80, R81). */
export interface AnswerReviewOptions {
  /** The host gives the outcome to the model in the exit call's result; no step boundary tells it (R81). */
  toldInResult?: boolean
}

/** What `get` reports (R7): `pending` is the pending selection's TARGET (false = leaving). */
export interface PlanModeState {
  active: boolean
  pending?: boolean
}

/** The result of `set` (R8–R10). */
export type SetOutcome = 'committed' | 'queued' | 'cancelled' | 'noop'

/** Options of `stepBoundary`. */
export interface StepBoundaryOptions {
  /** The step's abort signal: aborted, the boundary has no effect (R15). */
  signal?: AbortSignal
  /**
   * The step's request starts a fresh context whose first message tells the plan approved into it
   * (R102, `dueHandoff`): the boundary does not tell that approval (R81) a second time.
   */
  handoff?: boolean
}

/** What a step boundary hands the host for the step's request (R18, R32). */
export interface StepBoundaryResult {
  section: string
  messages: UserMessage[]
}

/** A generic presentation card for a host UI (R51). */
export interface Card {
  card: 'generic'
  title: string
  kind?: 'other'
  content: unknown[]
}

/** The result of `/plan` (R55–R57). */
export interface CommandResult {
  kind: 'success' | 'error'
  text: string
}
