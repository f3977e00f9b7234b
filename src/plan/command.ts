import type { CommandResult, PlanAgent, PlanModeState, SetOutcome, UserMessage } from '../types.js'
import { selectsPlanMode } from '../log/kinds.js'
import { errorMessage } from './review.js'

/** What `/plan` needs of the service: a selection and the state right after it. */
interface PlanCommandPorts {
  select(agent: PlanAgent, active: boolean): Promise<{ outcome: SetOutcome; state: PlanModeState }>
}

/** The input of a `/plan` run. */
export interface PlanCommandInput {
  agent: PlanAgent
  rawInput: string
  attachments?: unknown[]
}

/** The `/plan [off|message]` command (R53–R57). */
export interface PlanCommand {
  readonly name: 'plan'
  readonly description: string
  readonly hint: string
  run(input: PlanCommandInput): Promise<CommandResult>
}

/** Texts of the exit branch by `set(false)` outcome (R55). */
const LEAVING_TEXTS = {
  committed: 'Plan mode off.',
  queued: 'Leaving plan mode (applies from the next step).',
  cancelled: 'Plan mode entry cancelled.',
  noop: 'Plan mode is already inactive.',
} as const satisfies Record<SetOutcome, string>

/** Texts of the entry branch by `set(true)` outcome (R56). */
const ENTERING_TEXTS = {
  committed: 'Plan mode on. Use /plan off to leave.',
  queued: 'Entering plan mode (applies from the next step). Use /plan off to leave.',
  cancelled: 'Plan mode exit cancelled. Use /plan off to leave.',
  noop: 'Plan mode is already on. Use /plan off to leave.',
} as const satisfies Record<SetOutcome, string>

/** Errors of `/plan` (R55, R57). */
const PLAN_COMMAND_ERRORS = {
  attachmentsWithOff: 'Image attachments cannot accompany /plan off.',
  cannotSteer: 'This agent cannot take a plan message; use /plan alone.',
  notChanged: 'Plan mode could not be changed: ',
} as const

/** Builds `/plan` over the service's selection port. */
export function createPlanCommand(ports: PlanCommandPorts): PlanCommand {
  return {
    name: 'plan',
    description: 'Enter or leave plan mode',
    hint: '[off|message]',
    async run({ agent, rawInput, attachments }) {
      const message = String(rawInput ?? '').trim()
      const attached = Array.isArray(attachments) ? attachments : []
      const entering = selectsPlanMode(message)
      if (!entering && attached.length > 0) return { kind: 'error', text: PLAN_COMMAND_ERRORS.attachmentsWithOff }
      const steers = entering && (message !== '' || attached.length > 0)
      if (steers && typeof agent.steer !== 'function') return { kind: 'error', text: PLAN_COMMAND_ERRORS.cannotSteer }

      let selection: { outcome: SetOutcome; state: PlanModeState }
      try {
        selection = await ports.select(agent, entering)
      } catch (error) {
        return { kind: 'error', text: PLAN_COMMAND_ERRORS.notChanged + errorMessage(error) }
      }
      const text = outcomeText(entering, selection.outcome, selection.state)
      if (!steers) return { kind: 'success', text }
      try {
        // An asynchronous steer is awaited: its rejection is this command's to report, never an
        // unhandled rejection in the host (R57, R62).
        const steered: unknown = agent.steer!(steeredMessage(attached, message))
        if (typeof (steered as PromiseLike<unknown> | null)?.then === 'function') await steered
      } catch (error) {
        // The mode changed; only the message was lost. Say both, and keep the service usable (R62).
        return { kind: 'error', text: `${text} The plan message could not be sent: ${errorMessage(error)}` }
      }
      return { kind: 'success', text }
    },
  }
}

/** The branch's text; a noop names a selection already on its way (R55, R56). */
function outcomeText(entering: boolean, outcome: SetOutcome, state: PlanModeState): string {
  const texts = entering ? ENTERING_TEXTS : LEAVING_TEXTS
  if (outcome === 'noop' && state.pending === entering) return texts.queued
  return texts[outcome]
}

/** The steered message: the attachments in order, then the text (R56). */
function steeredMessage(attachments: unknown[], text: string): UserMessage {
  return {
    id: globalThis.crypto.randomUUID(),
    role: 'user',
    content: text === '' ? [...attachments] : [...attachments, { type: 'text', text }],
    source: { kind: 'user' },
  }
}
