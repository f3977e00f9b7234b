import { isReviewOutcome, type ReviewOutcome } from '../log/kinds.js'
import type { Card, PlanAgent } from '../types.js'
import { closedReviewMessage, planTitle } from './review.js'

/** The exit tool's name (SPEC §1). */
export const EXIT_PLAN_MODE = 'exit_plan_mode'

/** The exit tool's description (R41), shown to the model in both states (R40). */
export const EXIT_PLAN_MODE_DESCRIPTION =
  'Use only in plan mode. Present your plan for the user\'s review and, on approval, leave plan mode. Send the COMPLETE plan as markdown, starting with a # heading that names it. The user may approve (carry out the plan from your next step) or keep planning — their feedback comes back in the tool result; revise and present again.'

/** What the model is given when a durable review's request is recorded (R79). */
export const EXIT_PLAN_MODE_SUBMITTED_TEXT =
  'Your plan is now with the user for review. Stop here: do not call more tools or continue the work. Their answer comes in a later message.'

/** What `execute` resolves with: consent (R47), or a durable review's request recorded (R79). */
export type ExitToolResult = { approved: true } | { submitted: true; reviewId: string }

/** The text a host shows the model when the tool succeeds (R50). */
export const EXIT_PLAN_MODE_RESULT_TEXT =
  'Plan approved — plan mode exited; carry out the plan starting with your next step.'

/**
 * The JSON Schema of the tool's input (R41): one required string `plan`.
 *
 * Typed without `readonly`, so that it can be handed as it is to the JSON Schema types of
 * frameworks and libraries (json-schema's `JSONSchema7`, an object schema with `required:
 * string[]`, a `Record<string, unknown>`): no cast is needed. Each read of `exitTool.parameters`
 * is the caller's own plain copy (R137): a framework may change or extend it.
 */
export type ExitPlanModeParameters = {
  type: 'object'
  properties: {
    plan: {
      type: 'string'
      description: string
    }
  }
  required: ['plan']
  additionalProperties: false
}

/**
 * The JSON Schema of the tool's output (R41): `{ approved: true }`. Typed without `readonly` like
 * {@link ExitPlanModeParameters}, and handed out as a copy like it (R137).
 */
export type ExitPlanModeOutputSchema = {
  type: 'object'
  properties: { approved: { type: 'boolean'; const: true } }
  required: ['approved']
  additionalProperties: false
}

/** Freezes a JSON value and everything in it; its type stays as declared (see ExitPlanModeParameters). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

/** The tool's input: one required string `plan` (R41). Frozen: `exitTool.parameters` hands out copies (R137). */
export const EXIT_PLAN_MODE_PARAMETERS: ExitPlanModeParameters = deepFreeze({
  type: 'object',
  properties: {
    plan: {
      type: 'string',
      description: 'The complete plan, as markdown, starting with a # heading that names it.',
    },
  },
  required: ['plan'],
  additionalProperties: false,
})

/** The tool's output: `{ approved: true }` (R41). Frozen: `exitTool.outputSchema` hands out copies (R137). */
export const EXIT_PLAN_MODE_OUTPUT_SCHEMA: ExitPlanModeOutputSchema = deepFreeze({
  type: 'object',
  properties: { approved: { type: 'boolean', const: true } },
  required: ['approved'],
  additionalProperties: false,
})

/** What the tool's `execute` receives besides its arguments. */
export interface ExitToolContext {
  /** The agent that called the tool; without one the call fails (R42.1). */
  agent?: PlanAgent
  /** The tool call's abort signal: aborting it closes the review and fails the call (R46). */
  signal?: AbortSignal
  /** The framework's id of this tool call: a durable review records it (R79). */
  callId?: string
}

/**
 * The always-registered `exit_plan_mode` tool (R40–R51), in no framework's format: register
 * `name`, `description` and `parameters` as a function tool of your framework in both states,
 * and run `execute` for the model's calls.
 */
export interface ExitPlanModeTool {
  /** `exit_plan_mode`. */
  readonly name: typeof EXIT_PLAN_MODE
  /** The description the model sees (R41). */
  readonly description: string
  /** The input's JSON Schema (R41); assignable to common JSON Schema types without a cast; each read is the caller's own copy (R137). */
  readonly parameters: ExitPlanModeParameters
  /** The output's JSON Schema (R41), for frameworks that declare one; each read is the caller's own copy (R137). */
  readonly outputSchema: ExitPlanModeOutputSchema
  /** What to show the model when `execute` resolves `{ approved: true }` (R50). */
  readonly resultText: string
  /** What to show the model when `execute` resolves `{ submitted: true, reviewId }` (R79). */
  readonly submittedText: string
  /** How the service opens reviews (R78): adapters with their own approval flow use it for durable ones. */
  readonly reviews: 'channel' | 'durable'
  /**
   * Opens the user's review; resolves `{ approved: true }` on consent, and otherwise rejects with
   * an `Error` whose `message` is the text for the model (a failed check, keep planning with the
   * user's feedback, a dismissal: R42–R49). On any framework, hand the model `resultText` on
   * success and the rejection's `message` on failure, as the tool's result. A service with
   * durable reviews resolves `{ submitted: true, reviewId }` once the request is logged: hand the
   * model `submittedText` (R79).
   */
  execute(args: unknown, context: ExitToolContext): Promise<ExitToolResult>
  /** A card for the call: the plan under its title (R51). */
  presentCall(args: unknown): Card
  /** A card for the result (R51). */
  presentResult(args: unknown, result: { content: unknown[] }): Card
}

/** The plan argument, read once, when it is a string; undefined when it is not or cannot be read (a getter that throws). */
export function planArgument(args: unknown): string | undefined {
  try {
    const plan = (args as { plan?: unknown } | null | undefined)?.plan
    return typeof plan === 'string' ? plan : undefined
  } catch {
    return undefined
  }
}

/** Builds the tool around the facade's `execute`; everything else is pure (R60: keeps working). */
export function createExitTool(execute: ExitPlanModeTool['execute'], reviews: 'channel' | 'durable' = 'channel'): ExitPlanModeTool {
  return {
    reviews,
    name: EXIT_PLAN_MODE,
    description: EXIT_PLAN_MODE_DESCRIPTION,
    // R137: each read is the caller's own copy, which a framework may change (LangChain's `tool()`
    // extends it); the tool's checks (R42) read none of them.
    get parameters() {
      return structuredClone(EXIT_PLAN_MODE_PARAMETERS)
    },
    get outputSchema() {
      return structuredClone(EXIT_PLAN_MODE_OUTPUT_SCHEMA)
    },
    resultText: EXIT_PLAN_MODE_RESULT_TEXT,
    submittedText: EXIT_PLAN_MODE_SUBMITTED_TEXT,
    execute,
    presentCall(args) {
      const plan = planArgument(args) ?? ''
      return { card: 'generic', title: planTitle(plan) ?? 'Plan', kind: 'other', content: [{ type: 'text', text: plan }] }
    },
    presentResult(_args, result) {
      return { card: 'generic', title: 'Plan review', content: result.content }
    },
  }
}

/**
 * What the model gets when a durable review's outcome is told in the exit call's result (R81,
 * R135): `isError: false` and R50's result text for an approval, else `isError: true` and the text
 * the call fails with (`closedReviewMessage`). `review` is the closing record or its `planHistory`
 * entry: its `feedback` already holds R100's comments after the custom text.
 */
export interface ToldInResult {
  /** The closed review's outcome. */
  readonly outcome: ReviewOutcome
  /** Whether the call failed (every outcome but an approval): a framework's tool error status. */
  readonly isError: boolean
  /** The text the model reads as the call's result. */
  readonly text: string
}

/**
 * The result an exit call gets when its durable review's outcome is told there (R81, R135), read
 * off the closed review's record or `planHistory` entry (`outcome`, `feedback`).
 * @throws TypeError `toldInResult needs the outcome of a closed plan review; got <JSON>` for an
 *   open review (`'open'`, `'requested'`) or a value that is no outcome.
 */
export function toldInResult(review: { readonly outcome: unknown; readonly feedback?: unknown }): ToldInResult {
  const outcome = review?.outcome
  if (!isReviewOutcome(outcome)) {
    throw new TypeError(`toldInResult needs the outcome of a closed plan review; got ${JSON.stringify(outcome) ?? String(outcome)}`)
  }
  if (outcome === 'approved') return { outcome, isError: false, text: EXIT_PLAN_MODE_RESULT_TEXT }
  const feedback = typeof review.feedback === 'string' && review.feedback.trim() !== '' ? review.feedback : undefined
  return { outcome, isError: true, text: closedReviewMessage(outcome, feedback) }
}
