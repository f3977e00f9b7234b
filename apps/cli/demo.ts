/**
 * `plan-mode demo`: a scripted agent runs the whole plan-mode arc in the real AI SDK loop
 * (`generateText` + `withPlanMode`) against an offline scripted model, and prints a timeline.
 *
 * The arc: a first turn in the default mode (so the model has been told a mode), `/plan
 * <message>` while idle, planning steps with a mid-turn `/plan off` then `/plan` (a round trip:
 * no notice), `exit_plan_mode`, keep planning with feedback, a revised plan, approval, and the
 * execution steps in the default mode.
 */
import { generateText, jsonSchema, stepCountIs, tool, type ModelMessage } from 'ai'
import { PLAN_LOG_EVENTS, createPlanMode, type PlanAgent, type ReviewAnswer, type ReviewChannel, type SessionEvent } from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'
import { createPlanModeInspector, type PlanModeInspector } from 'xstate-plan-mode/inspect'
import type { Visualizer } from '../shared/visualizer/server.js'
import { untilAborted, type CliIo, type Styles } from './io.js'
import { inspectHint } from './invocation.js'
import { newLogPath, openNewLog } from './log-file.js'
import { planCommandRunner } from './plan-command.js'
import { scriptedModel, type ScriptedReply } from '../shared/scripted-model.js'

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Where the JSONL log goes; default a new temp directory's `session.jsonl`. Must not exist. */
  log?: string
  /** Start the visualizer and keep serving until `io.signal` aborts. */
  visualize?: boolean
  /** The visualizer's port (default 5178; 0 picks a free one). */
  port?: number
  /** Pause before each step, in ms (default 0; 700 with `visualize`). */
  delayMs?: number
  styles: Styles
}

/** The section the demo's agent runs with in plan mode. */
export const DEMO_SECTION = 'Plan mode is on: explore read-only, then present the whole plan with exit_plan_mode.'
const SYSTEM = 'You are a careful coding agent working in a small repository.'

/** A reply of the demo's script; `clicks` are `/plan` inputs the user makes while its tools run. */
type DemoReply = ScriptedReply & { clicks?: string[] }

const PLAN_V1 = [
  '# Add --json to the report command',
  '',
  '1. Add a `--json` flag to `src/report.ts`.',
  '2. Print the totals with `JSON.stringify` when it is set.',
  '3. Test both outputs.',
].join('\n')
const PLAN_V2 = [
  '# Add --json to the report command (v2)',
  '',
  '1. Add a `--json` flag to `src/report.ts`.',
  '2. Print the totals with `JSON.stringify` when it is set.',
  '3. Document the flag in the README.',
  '4. Test both outputs.',
].join('\n')
/** The user's feedback on the first plan. */
export const DEMO_FEEDBACK = 'Also document the flag in the README.'
const FIRST_QUESTION = 'What does the report command print today?'
const PLAN_MESSAGE = 'Add a --json flag to the report command.'

/** Turn 1 (default mode): two requests. Turn 2 (plan mode, then execution): the rest. */
const SCRIPT: DemoReply[] = [
  { toolCalls: [{ name: 'read_file', input: { path: 'src/report.ts' } }] },
  { text: 'It prints the totals as a plain-text table.' },
  { toolCalls: [{ name: 'read_file', input: { path: 'src/report.ts' } }] },
  { toolCalls: [{ name: 'read_file', input: { path: 'test/report.test.ts' } }], clicks: ['off', ''] },
  { toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN_V1 } }] },
  { toolCalls: [{ name: 'exit_plan_mode', input: { plan: PLAN_V2 } }] },
  { toolCalls: [{ name: 'edit_file', input: { path: 'src/report.ts', change: 'add --json' } }] },
  { toolCalls: [{ name: 'edit_file', input: { path: 'README.md', change: 'document --json' } }] },
  { toolCalls: [{ name: 'run_tests', input: {} }] },
  { text: 'Done: `report --json` prints the totals as JSON, the README documents it, and the tests pass.' },
]

const FILES: Record<string, string> = {
  'src/report.ts': 'export function report(totals) { console.table(totals) }',
  'test/report.test.ts': "it('prints a table', () => { … })",
}

/**
 * Runs the demo and prints its timeline to `io.stdout`.
 * @returns the exit code (0).
 * @throws CliError when `--log` names an existing file, or the visualizer cannot start.
 */
export async function runDemo(options: DemoOptions, io: CliIo): Promise<number> {
  const s = options.styles
  const out = (text: string) => void io.stdout.write(`${text}\n`)
  const row = (tag: string, text: string, color: (t: string) => string = (t) => t) => out(`  ${color(tag.padEnd(8))} ${text}`)

  const path = await newLogPath(options.log, 'plan-mode-demo-', 'the demo')
  const session = await openNewLog(path)

  let visualizer: Visualizer | undefined
  let inspector: PlanModeInspector | undefined
  if (options.visualize) {
    const { startVisualizer } = await import('./visualize.js')
    visualizer = await startVisualizer(options.port ?? 5178)
    inspector = createPlanModeInspector(visualizer.transport)
  }

  // The review channel: the user keeps planning with feedback once, then approves.
  const answers: ReviewAnswer[] = [
    { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: DEMO_FEEDBACK }] },
    { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
  ]
  let planMode!: ReturnType<typeof createPlanMode>
  const review: ReviewChannel = {
    async ask({ questions }) {
      const answer = answers.shift() ?? { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
      const item = answer.answers[0]!
      const title = planMode.exitTool.presentCall({ plan: questions[0].detail }).title
      const verdict = item.selected[0] === 'Approve' ? s.green('Approve') : s.yellow('Keep planning')
      row('review', `"${title}": ${verdict}${item.custom ? ` — ${item.custom}` : ''}`, s.magenta)
      return answer
    },
  }
  planMode = createPlanMode({ section: DEMO_SECTION, review, ...(inspector ? { inspect: inspector.inspect } : {}) })
  const agent: PlanAgent = { id: 'demo-agent', session, steer: (message) => plan.steer(message) }
  if (inspector) inspector.watch(agent, planMode.actor(agent))

  // The log lines that matter to plan mode, as they land.
  const unsubscribe = session.subscribe((event: SessionEvent) => {
    if (event.type === PLAN_LOG_EVENTS.mode) row('log', `#${event.seq} plan/mode ${JSON.stringify(event.data)}`, s.blue)
    if (event.type === PLAN_LOG_EVENTS.review) {
      const data = event.data as { outcome: string; title: string }
      row('log', `#${event.seq} plan/review ${data.outcome} "${data.title}"`, s.blue)
    }
  })

  const runPlanCommand = planCommandRunner(planMode, agent)
  /** A `/plan` the user types, printed with its result. */
  const slashPlan = async (rawInput: string) => {
    row('user', s.bold(rawInput === '' ? '/plan' : `/plan ${rawInput}`), s.cyan)
    const result = await runPlanCommand(rawInput)
    row('command', result.text, result.kind === 'error' ? s.red : s.cyan)
    return result
  }

  let clicks: string[] = []
  let roundTrip = false
  let approved = false
  const hostTool = (name: string, run: (input: Record<string, unknown>) => string) =>
    tool({
      description: `The demo's ${name}.`,
      inputSchema: jsonSchema<Record<string, unknown>>({ type: 'object', additionalProperties: true }),
      execute: async (input) => {
        // The user clicks while this tool runs: mid-turn selections wait for the next step.
        for (const click of clicks.splice(0)) {
          await slashPlan(click)
          roundTrip = true
        }
        return run(input)
      },
    })
  const tools = {
    read_file: hostTool('read_file', (input) => FILES[String(input.path)] ?? ''),
    edit_file: hostTool('edit_file', (input) => `edited ${String(input.path)}`),
    run_tests: hostTool('run_tests', () => '12 passed'),
  }
  const plan = withPlanMode({ planMode, agent, system: SYSTEM, tools })

  const model = scriptedModel(SCRIPT, (request, reply) => {
    const on = request.system?.includes(DEMO_SECTION) === true
    row('section', on ? s.green('on') : s.dim('off'))
    for (const text of request.newUserTexts) {
      if (text.startsWith('The user switched')) row('notice', s.bold(text), s.yellow)
      else row('user', text, s.cyan)
    }
    if (roundTrip) row('note', s.dim('no notice: /plan off then /plan before this step is a round trip'))
    if (approved) row('note', s.dim('no notice: the approved review already told the model'))
    roundTrip = approved = false
    if (reply.text !== undefined) row('model', reply.text)
    for (const call of reply.toolCalls ?? []) {
      const input = call.name === 'exit_plan_mode'
        ? `"${planMode.exitTool.presentCall(call.input).title}"`
        : JSON.stringify(call.input)
      row('call', `${s.bold(call.name)} ${input}`)
    }
    clicks = [...((reply as DemoReply).clicks ?? [])]
  })

  const delayMs = options.delayMs ?? (options.visualize ? 700 : 0)
  const history: ModelMessage[] = []
  const runTurn = async (label: string, messages: ModelMessage[]) => {
    out(s.bold(`── ${label} ──`))
    await plan.runTurn(async () => {
      const result = await generateText({
        model,
        messages,
        tools: plan.tools,
        stopWhen: stepCountIs(12),
        prepareStep: async (step) => {
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
          out(`${s.bold(`step ${step.stepNumber}`)}`)
          return plan.prepareStep(step)
        },
        onStepFinish: (step) => {
          for (const part of step.content) {
            if (part.type === 'tool-result') {
              const shown = part.toolName === 'exit_plan_mode' ? planMode.exitTool.resultText : String(part.output)
              row('result', `${part.toolName} → ${shown}`, s.green)
              if (part.toolName === 'exit_plan_mode') approved = true
            } else if (part.type === 'tool-error') {
              const message = part.error instanceof Error ? part.error.message : String(part.error)
              row('error', `${part.toolName} → ${message}`, s.red)
            }
          }
        },
      })
      history.push(...messages, ...plan.transcript(result.response.messages))
    })
  }

  try {
    out(s.bold('plan-mode demo: a scripted agent in the AI SDK loop (offline model), with plan mode'))
    out(`log: ${path}`)
    if (visualizer) out(`visualizer: ${visualizer.url}`)
    await runTurn('turn 1: default mode', [{ role: 'user', content: FIRST_QUESTION }])
    out(s.bold('── idle ──'))
    await slashPlan(PLAN_MESSAGE)
    await runTurn('turn 2: plan mode, then the approved plan', [...history.splice(0), ...plan.takeSteered()])
    out(s.bold('── end ──'))
    out(`log: ${path} (${session.events.length} events)`)
    out(inspectHint(path))
    if (visualizer) {
      out(`visualizer: ${visualizer.url} (Ctrl-C to stop)`)
      await untilAborted(io.signal)
    }
  } finally {
    unsubscribe()
    await planMode.dispose()
    await session.close()
    await inspector?.stop()
    await visualizer?.close()
  }
  return 0
}
