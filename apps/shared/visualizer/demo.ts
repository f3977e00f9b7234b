/**
 * The visualizer's demo: one simulated agent driven by the real library (`createPlanMode` offering
 * the whole set of decisions, R101; a memory session log; a review channel whose answers come from
 * the page's buttons). Its "model" is a script: in plan mode each step presents a plan with
 * `exit_plan_mode`, revising it after feedback; in the default mode it "carries out" the plan and
 * ends the turn. After Approve in a fresh context it first hands the plan off (`dueHandoff`, R102):
 * its context starts again from one message holding the plan and the decisions made, logged as
 * that step's request; after Leave plan mode it carries nothing out: the next step leaves plan mode
 * and it stops, waiting for the user.
 */
import {
  PLAN_MODE_TEXTS,
  PLAN_LOG_EVENTS,
  createMemorySessionLog,
  createPlanMode,
  dueHandoff,
  episodeBefore,
  type PlanAgent,
  type ReviewAnswer,
  type ReviewChannel,
} from 'xstate-plan-mode'
import { createPlanModeInspector, type InspectionMessage } from 'xstate-plan-mode/inspect'
import { DEMO_DECISION_LABELS, type DemoComment, type DemoCommand, type DemoOption, type ServerMessage } from './client/protocol.js'

/** Options of the demo agent. */
export interface DemoOptions {
  /** Pause before each simulated step, so a person can follow it. Default 600 ms. */
  stepDelayMs?: number
  /** The agent's id. Default `demo-agent`. */
  agentId?: string
}

/** The running demo agent. */
export interface DemoAgent {
  /**
   * Runs a button's command; commands run one after the other. Keep planning answers with the
   * feedback and the comments on the plan (R100), which the library checks: a comment it refuses
   * fails the review (R46) and its message becomes the status.
   */
  command(command: DemoCommand, feedback?: string, comments?: DemoComment[]): Promise<void>
  /** The latest status line, for a page that connects late. */
  status(): Extract<ServerMessage, { kind: 'demo-status' }>
  /** Disposes the agent's plan mode (an open review fails as reloaded) and stops its timers. */
  close(): Promise<void>
}

/** The prompt section the demo runs with. */
const DEMO_SECTION = 'Plan mode is on: research and plan only; present the plan with exit_plan_mode.'

/**
 * Starts the demo agent; everything it does reaches the page through `hub.ingest`.
 * @param hub the visualizer's in-process inspection hub and status broadcast.
 */
export function startDemo(
  hub: { ingest(message: InspectionMessage): void; onStatus(status: Extract<ServerMessage, { kind: 'demo-status' }>): void },
  options: DemoOptions = {},
): DemoAgent {
  const stepDelayMs = options.stepDelayMs ?? 600
  const inspector = createPlanModeInspector({ send: (message) => hub.ingest(message) })
  const session = createMemorySessionLog()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  let closed = false
  let queue: Promise<unknown> = Promise.resolve()
  let turnRunning = false
  let commands = 0
  /** The open review: the plan under review, the question's options, and how to answer it. */
  let review: { plan: string; options: DemoOption[]; answer(answer: ReviewAnswer): void } | undefined
  let current: Extract<ServerMessage, { kind: 'demo-status' }> = {
    kind: 'demo-status',
    text: 'Idle. Press /plan to enter plan mode.',
    tone: 'info',
    reviewOpen: false,
  }
  const setStatus = (text: string, tone: 'info' | 'error' = 'info') => {
    current = { kind: 'demo-status', text, tone, reviewOpen: review !== undefined, ...(review ? { plan: review.plan, options: review.options } : {}) }
    hub.onStatus(current)
  }

  const channel: ReviewChannel = {
    ask({ questions: [question], signal }) {
      return new Promise<ReviewAnswer>((resolve, reject) => {
        const close = () => {
          review = undefined
          reject(signal.reason)
        }
        if (signal.aborted) return close()
        signal.addEventListener('abort', close, { once: true })
        review = {
          plan: question?.detail ?? '',
          // The buttons show the question's own options (R43, R101), in its order.
          options: (question?.options ?? []).map(({ label, description }) => ({ label, ...(description ? { description } : {}) })),
          answer(answer) {
            signal.removeEventListener('abort', close)
            review = undefined
            resolve(answer)
          },
        }
        setStatus(`The plan waits for your review: ${reviewChoices(review.options)}.`)
      })
    },
  }
  const agent: PlanAgent = {
    id: options.agentId ?? 'demo-agent',
    session,
    steer: (message) => void session.append('message', message),
  }
  const planMode = createPlanMode({ section: DEMO_SECTION, review: channel, inspect: inspector.inspect, decisions: 'all' })
  inspector.watch(agent, planMode.actor(agent))

  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer)
        resolve()
      }, stepDelayMs)
      timers.add(timer)
    })

  /** One turn of the scripted model; ends when the default mode is in force. */
  const runTurn = async () => {
    turnRunning = true
    session.append('turn/start', {})
    let version = 0
    let feedback: string | undefined
    /** The user left plan mode without carrying out the plan (R101): the next step stops. */
    let left = false
    try {
      for (let step = 1; step <= 20 && !closed; step++) {
        await pause()
        if (closed) return
        const { messages } = await planMode.stepBoundary(agent)
        for (const message of messages) session.append('message', message)
        if (!planMode.get(agent).active) {
          if (left) {
            session.append('message', { role: 'assistant', text: 'I left plan mode without carrying out the plan; I stop here and wait for your message.' })
            setStatus('Left plan mode: the plan is not carried out; the agent stops and waits for you.')
            return
          }
          // R102: a plan approved into a fresh context is handed off at the first request after its approval.
          const handoff = dueHandoff(session.events, planMode.approvedPlan(agent), episodeBefore(session, agent.id))
          if (handoff !== null) {
            // The step's request starts a fresh context: one message holding the plan and the decisions.
            session.append('message', { role: 'user', text: handoff.text, handoff: { version: handoff.version, decisions: handoff.decisions.length } })
            session.append(PLAN_LOG_EVENTS.requestHeader, { step, freshContext: true })
            session.append('message', { role: 'assistant', text: `Carrying out plan v${handoff.version} in a fresh context.` })
            setStatus(`Approved in a fresh context: the agent carries out plan v${handoff.version} from a context that holds only the plan and the decisions made.`)
            return
          }
          session.append('message', { role: 'assistant', text: version > 0 ? 'Carrying out the approved plan.' : 'Working in the default mode.' })
          setStatus(version > 0 ? 'Approved: the agent carries out the plan.' : 'The agent works in the default mode.')
          return
        }
        left = false // plan mode again (a /plan since): planning goes on
        version++
        setStatus(`The agent presents plan version ${version}.`)
        try {
          await planMode.exitTool.execute({ plan: demoPlan(version, feedback) }, { agent })
          session.append('tool/result', { tool: 'exit_plan_mode', text: planMode.exitTool.resultText })
        } catch (error) {
          const text = error instanceof Error ? error.message : String(error)
          session.append('tool/result', { tool: 'exit_plan_mode', error: text })
          // The library's own messages (R45): keep planning, with or without feedback.
          if (text === PLAN_MODE_TEXTS.review.messages.keepPlanning) feedback = undefined
          // Leave plan mode (R101): plan mode is left at the next step, where the agent stops.
          else if (text === PLAN_MODE_TEXTS.review.messages.left) {
            left = true
            setStatus('You left plan mode: the agent stops at its next step without carrying out the plan.')
          } else if (text.startsWith(PLAN_MODE_TEXTS.review.messages.keepPlanningWithFeedback)) feedback = text.slice(PLAN_MODE_TEXTS.review.messages.keepPlanningWithFeedback.length)
          // A direct switch closed the review: the next boundary applies it. Anything else
          // (a dismissal, a reload) stops the turn until the user speaks.
          else if (!text.startsWith(PLAN_MODE_TEXTS.review.messages.superseded)) {
            setStatus(text, 'error')
            return
          }
        }
      }
    } finally {
      if (!closed) session.append('turn/end', {})
      turnRunning = false
    }
  }
  const startTurnIfNeeded = () => {
    const state = planMode.get(agent)
    if (!turnRunning && !closed && (state.active || state.pending !== undefined)) {
      void runTurn().catch((error: unknown) => setStatus(String(error), 'error'))
    }
  }

  const runCommand = async (command: DemoCommand, feedback?: string, comments?: DemoComment[]) => {
    if (closed) return
    if (command === '/plan' || command === '/plan off') {
      const commandId = `demo-${++commands}`
      const args = command === '/plan off' ? 'off' : ''
      session.append('command/run', { commandId, name: 'plan', args })
      const result = await planMode.command.run({ agent, rawInput: args })
      session.append('command/done', { commandId, kind: result.kind, text: result.text })
      setStatus(result.text, result.kind === 'error' ? 'error' : 'info')
      startTurnIfNeeded()
      return
    }
    if (!review) {
      setStatus('No plan is under review.', 'error')
      return
    }
    const custom = feedback?.trim()
    // One option alone (R44, R101); only Keep planning carries feedback and comments.
    review.answer({
      answers: [
        command === 'keep-planning'
          ? {
              id: 'plan-review',
              selected: [DEMO_DECISION_LABELS['keep-planning']],
              ...(custom ? { custom } : {}),
              ...(comments && comments.length > 0 ? { comments } : {}),
            }
          : { id: 'plan-review', selected: [DEMO_DECISION_LABELS[command]] },
      ],
    })
  }

  return {
    command(command, feedback, comments) {
      const run = queue.then(() => runCommand(command, feedback, comments))
      queue = run.catch(() => {})
      return run.catch((error: unknown) => setStatus(String(error), 'error'))
    },
    status: () => current,
    async close() {
      if (closed) return
      closed = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      await planMode.dispose()
      await inspector.stop()
    },
  }
}

/** `Approve, Approve in a fresh context, Keep planning or Leave plan mode`: the question's options in words. */
function reviewChoices(options: readonly DemoOption[]): string {
  const labels = options.map((option) => option.label)
  return labels.length <= 1 ? labels.join('') : `${labels.slice(0, -1).join(', ')} or ${labels.at(-1)}`
}

/** The scripted model's plan, revised with the user's feedback. */
function demoPlan(version: number, feedback: string | undefined): string {
  return [
    `# Tidy the session log (v${version})`,
    '',
    '1. Read how events are appended today.',
    '2. Add a compaction step that keeps every `plan/*` event.',
    '3. Test resume after compaction.',
    ...(feedback ? ['', `Revised after feedback: ${feedback}`] : []),
  ].join('\n')
}
