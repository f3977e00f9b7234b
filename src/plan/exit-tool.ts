import type { Card, PlanAgent } from '../types.js'
import { planTitle } from './review.js'

/** The exit tool's name (SPEC §1). */
export const EXIT_PLAN_MODE = 'exit_plan_mode'

/** The exit tool's description (R41), shown to the model in both states (R40). */
export const EXIT_PLAN_MODE_DESCRIPTION =
  'Use only in plan mode. Present your plan for the user\'s review and, on approval, leave plan mode. Send the COMPLETE plan as markdown, starting with a # heading that names it. The user may approve (carry out the plan from your next step) or keep planning — their feedback comes back in the tool result; revise and present again.'

/** The text a host shows the model when the tool succeeds (R50). */
export const EXIT_PLAN_MODE_RESULT_TEXT =
  'Plan approved — plan mode exited; carry out the plan starting with your next step.'

/** The tool's input: one required string `plan` (R41). */
export const EXIT_PLAN_MODE_PARAMETERS = {
  type: 'object',
  properties: {
    plan: {
      type: 'string',
      description: 'The complete plan, as markdown, starting with a # heading that names it.',
    },
  },
  required: ['plan'],
  additionalProperties: false,
} as const

/** The tool's output: `{ approved: true }` (R41). */
export const EXIT_PLAN_MODE_OUTPUT_SCHEMA = {
  type: 'object',
  properties: { approved: { type: 'boolean', const: true } },
  required: ['approved'],
  additionalProperties: false,
} as const

/** What the tool's `execute` receives besides its arguments. */
export interface ExitToolContext {
  agent?: PlanAgent
  signal?: AbortSignal
}

/** The always-registered `exit_plan_mode` tool (R40–R51). */
export interface ExitPlanModeTool {
  readonly name: typeof EXIT_PLAN_MODE
  readonly description: string
  readonly parameters: typeof EXIT_PLAN_MODE_PARAMETERS
  readonly outputSchema: typeof EXIT_PLAN_MODE_OUTPUT_SCHEMA
  readonly resultText: string
  /** Opens the user's review; resolves on consent, fails with the reason otherwise (R42–R49). */
  execute(args: unknown, context: ExitToolContext): Promise<{ approved: true }>
  /** A card for the call: the plan under its title (R51). */
  presentCall(args: unknown): Card
  /** A card for the result (R51). */
  presentResult(args: unknown, result: { content: unknown[] }): Card
}

/** The plan argument, when it is a string. */
export function planArgument(args: unknown): string | undefined {
  const plan = (args as { plan?: unknown } | null | undefined)?.plan
  return typeof plan === 'string' ? plan : undefined
}

/** Builds the tool around the facade's `execute`; everything else is pure (R60: keeps working). */
export function createExitTool(execute: ExitPlanModeTool['execute']): ExitPlanModeTool {
  return {
    name: EXIT_PLAN_MODE,
    description: EXIT_PLAN_MODE_DESCRIPTION,
    parameters: EXIT_PLAN_MODE_PARAMETERS,
    outputSchema: EXIT_PLAN_MODE_OUTPUT_SCHEMA,
    resultText: EXIT_PLAN_MODE_RESULT_TEXT,
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
