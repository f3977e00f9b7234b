/**
 * `plan-mode chat`: an interactive terminal agent with plan mode, in the AI SDK loop
 * (`streamText` + `withPlanMode`), against a real provider or the offline model.
 *
 * One line dispatcher reads the user's lines: an open review question takes the line as its
 * answer; while a turn runs, `/plan…` goes to the command (a selection waits for the next step
 * boundary) and other text is steered into the next request; while idle, a line starts a turn or
 * runs a command. Input that is not a terminal is a script: each line waits until the agent is
 * idle or asks, as if typed at the prompt (a terminal user types ahead on purpose; a pipe does not). Ctrl-C stops the running turn (when idle it exits). Everything about plan mode
 * is the service's: this module only shows what it says and carries the user's answers to it.
 */
import { randomUUID } from 'node:crypto'
import { createInterface } from 'node:readline'
import { stepCountIs, streamText, type LanguageModel, type ModelMessage, type TextStreamPart, type ToolSet } from 'ai'
import {
  PLAN_MODE_TEXTS,
  PLAN_LOG_EVENTS,
  createPlanHistory,
  createPlanMode,
  diffPlans,
  formatPlanDiff,
  type PlanAgent,
  type ReviewAnswer,
  type ReviewChannel,
  type ReviewComment,
  type ReviewQuestion,
  type UserMessage,
} from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'
import { chooseChatModel } from '../shared/chat-model.js'
import { errorMessage, styles as makeStyles, type CliIo, type Styles } from './io.js'
import { newLogPath, openNewLog } from './log-file.js'
import { renderMarkdown } from './markdown.js'
import { offlineChatModel } from '../shared/offline-model.js'
import { planCommandRunner } from './plan-command.js'
import { countLines, workspaceTools } from '../shared/workspace-tools.js'
import { inspectHint } from './invocation.js'
// One rule for what a comment on a line quotes, in the chat and in the visualizer's page (R100).
import { lineQuote } from '../shared/visualizer/client/model.js'

export { lineQuote }

/** Options of {@link runChat}. */
export interface ChatOptions {
  /** `openai`, `anthropic`, `gateway` or `offline`; default: the first whose API key is set, else offline. */
  provider?: string
  /** The provider's model id (default per provider). */
  model?: string
  /** An OpenAI-compatible server (or a proxy of the chosen provider). */
  baseUrl?: string
  /** Where the JSONL log goes; default a new temp directory's `session.jsonl`. Must not exist. */
  log?: string
  /** ANSI colours in the output (prompts, tool lines, the rendered plan). */
  color: boolean
  /** The most steps one turn may take (default {@link DEFAULT_MAX_STEPS}). */
  maxSteps?: number
}

/** The section chat's agent runs with in plan mode (R18): it goes into the system prompt. */
export const CHAT_SECTION =
  'Plan mode is on: explore read-only with list_files and read_file, design the change, and present the complete plan with exit_plan_mode (markdown starting with a # heading). Carry nothing out until the user approves the plan.'

/** The offline model's think time per reply in a terminal, in ms. */
export const OFFLINE_THINK_MS = 700

/** The most steps one turn takes unless `maxSteps` says otherwise. */
export const DEFAULT_MAX_STEPS = 20

const HELP_LINES = [
  '/plan            enter plan mode: the agent explores, then asks you to approve a plan',
  '/plan <message>  enter plan mode and send the message',
  '/plan off        leave plan mode',
  '/quit            exit (also Ctrl-D; Ctrl-C when idle)',
  'While the agent works, /plan and /plan off apply from its next step, other text goes with',
  'its next step, and Ctrl-C stops the turn.',
]

/** A line the user typed, read as a command or as text for the model. */
type Input =
  | { kind: 'plan'; rawInput: string }
  | { kind: 'quit' }
  | { kind: 'help' }
  | { kind: 'unknown'; name: string }
  | { kind: 'text'; text: string }

/**
 * Runs the chat until `/quit`, the end of input, Ctrl-C while idle, or `io.signal`.
 * @returns the exit code (0).
 * @throws CliError for bad options (see `chooseChatModel`) or an existing `--log` file.
 */
export async function runChat(options: ChatOptions, io: CliIo): Promise<number> {
  const s = makeStyles(options.color)
  const root = io.cwd ?? process.cwd()
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS
  const choice = await chooseChatModel(
    {
      ...(options.provider !== undefined ? { provider: options.provider } : {}),
      ...(options.model !== undefined ? { model: options.model } : {}),
      ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
    },
    io.env ?? process.env,
  )
  const stdin = io.stdin ?? process.stdin
  // Line editing needs a terminal at both ends; otherwise lines are read as they come.
  const terminal = stdin.isTTY === true && io.stdout.isTTY === true
  // In a terminal the offline model thinks about as long as a real one, so that /plan typed
  // while it works lands mid-turn, as it would with a real model.
  const model: LanguageModel =
    choice.provider === 'offline' ? offlineChatModel({ section: CHAT_SECTION, ...(terminal ? { replyDelayMs: OFFLINE_THINK_MS } : {}) }) : choice.model
  const path = await newLogPath(options.log, 'plan-mode-chat-', 'chat')
  const session = await openNewLog(path)
  const rl = createInterface({
    input: stdin,
    ...(terminal ? { output: io.stdout as NodeJS.WritableStream, terminal: true } : { terminal: false }),
  })
  // Readline echoes what is typed in terminal mode; otherwise chat echoes it into the transcript.
  const screen = createScreen(io, terminal ? (text) => (rl.setPrompt(text), rl.prompt()) : undefined, !terminal)
  const scripted = stdin.isTTY !== true

  // State of the conversation and of the terminal.
  const history: ModelMessage[] = []
  /** The abort controller of the turn in progress, and the run of turns it belongs to (see `startTurns`). */
  let turn: AbortController | undefined
  let running: Promise<void> | undefined
  let question: { answer(text: string): void } | undefined
  let inputEnded = false
  let quitting = false
  let finish!: (code: number) => void
  const finished = new Promise<number>((resolve) => (finish = resolve))
  /** A scripted line waiting for the agent to become idle or to ask. */
  let wakeScript: (() => void) | undefined
  const agentListens = () => {
    const wake = wakeScript
    wakeScript = undefined
    wake?.()
  }

  const review: ReviewChannel = {
    async ask({ questions: [reviewed], agent: asking, signal }) {
      // The stream's tool-call line may trail the tool's execution by a few ticks: let it print first.
      await new Promise((resolve) => setImmediate(resolve))
      signal.throwIfAborted()
      showReview(reviewed, asking)
      return answerReview(reviewed, signal)
    },
  }
  // The whole set of decisions (R101): approve here or in a fresh context, keep planning, or leave.
  const planMode = createPlanMode({ section: CHAT_SECTION, review, decisions: 'all' })
  const agent: PlanAgent = { id: 'chat', session, steer: (message) => plan.steer(message) }
  const plan = withPlanMode({ planMode, agent, system: systemPrompt(root), tools: workspaceTools(root) })
  const runPlanCommand = planCommandRunner(planMode, agent)

  // A switch that lands at a step boundary is worth a line: it is when the model learns of it.
  const unsubscribe = session.subscribe((event) => {
    if (event.type === PLAN_LOG_EVENTS.mode && turn && !quitting) {
      const active = (event.data as { active: boolean }).active
      screen.line(s.dim(`  · plan mode ${active ? 'on' : 'off'} from this step`))
    }
  })

  /** The idle prompt: the mode the next request runs in, and a selection on its way. */
  const idlePrompt = () => {
    const { active, pending } = planMode.get(agent)
    const label = active ? 'plan' : 'you'
    const on = pending === undefined ? '' : pending ? ' (entering plan mode)' : ' (leaving plan mode)'
    return `${active ? s.bold(s.magenta(label)) : s.bold(s.cyan(label))}${s.dim(on)}> `
  }

  /** Asks one line of the user; the dispatcher hands it the next line. Closes when `signal` aborts. */
  function askLine(promptText: string, signal: AbortSignal): Promise<string> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason)
      const open = {
        answer(text: string) {
          signal.removeEventListener('abort', onAbort)
          question = undefined
          resolve(text)
        },
      }
      const onAbort = () => {
        if (question === open) question = undefined
        if (!quitting) screen.line(s.dim('(review closed)'))
        reject(signal.reason)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      question = open
      agentListens()
      // Nobody is left to answer: leaving settles the review as reloaded (R60).
      if (inputEnded) return void quit()
      screen.prompt(promptText)
    })
  }

  function showReview(reviewed: ReviewQuestion, asking: PlanAgent) {
    screen.line(`${s.magenta('──')} ${s.bold(reviewed.header)} ${s.magenta('─'.repeat(44))}`)
    for (const line of renderMarkdown(reviewed.detail, options.color)) screen.line(line === '' ? '' : `  ${line}`)
    screen.line(s.magenta('─'.repeat(60)))
    for (const line of planVersionLines(asking, reviewed.detail, s)) screen.line(line)
    screen.line(reviewed.question)
    const width = Math.max(...reviewed.options.map((option) => option.label.length))
    reviewed.options.forEach((option, i) => screen.line(`  ${i + 1}. ${s.bold(option.label.padEnd(width))}  ${s.dim(option.description)}`))
  }

  async function answerReview(reviewed: ReviewQuestion, signal: AbortSignal): Promise<ReviewAnswer> {
    const labels = reviewed.options.map((option) => option.label)
    for (;;) {
      const label = chooseOption(labels, await askLine(`review [${labels.map((_, i) => i + 1).join('/')}]> `, signal))
      if (label === undefined) {
        const choices = labels.map((l, i) => `${i + 1} (${l})`)
        screen.line(`Answer ${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}.`)
        continue
      }
      // Only Keep planning asks for comments and feedback: with any other option they would keep planning (R44, R101).
      if (label !== PLAN_MODE_TEXTS.review.labels.keepPlanning) return { answers: [{ id: reviewed.id, selected: [label] }] }
      const comments = await askComments(reviewed.detail, signal)
      const feedback = (await askLine(`${s.bold('feedback')} (Enter for none)> `, signal)).trim()
      return {
        answers: [
          {
            id: reviewed.id,
            selected: [label],
            ...(feedback !== '' ? { custom: feedback } : {}),
            ...(comments.length > 0 ? { comments } : {}),
          },
        ],
      }
    }
  }

  /**
   * Comments anchored to lines of the plan (R100), asked before the free feedback when the user
   * keeps planning: the plan's lines with text, numbered as in the plan; a line's number, then the
   * comment, adds `{ quote: lineQuote(line), text }`; Enter alone finishes.
   */
  async function askComments(plan: string, signal: AbortSignal): Promise<ReviewComment[]> {
    const lines = numberedLines(plan)
    if (lines.length === 0) return []
    screen.line(COMMENT_TEXTS.heading)
    const width = String(lines[lines.length - 1]!.number).length
    for (const line of lines) screen.line(`  ${s.dim(`${String(line.number).padStart(width)} │`)} ${line.text.trimEnd()}`)
    const comments: ReviewComment[] = []
    for (;;) {
      const answer = (await askLine(`${s.bold('comment')} on line (number, Enter to finish)> `, signal)).trim()
      if (answer === '') return comments
      const line = /^\d+$/.test(answer) ? lines.find((candidate) => candidate.number === Number(answer)) : undefined
      if (!line) {
        screen.line(COMMENT_TEXTS.noSuchLine)
        continue
      }
      const quote = lineQuote(line.text)
      screen.line(s.dim(`  On ${JSON.stringify(quote)}`))
      const text = (await askLine(`${s.bold('comment')}> `, signal)).trim()
      if (text === '') screen.line(s.dim(COMMENT_TEXTS.noComment))
      else comments.push({ quote, text })
    }
  }

  /** A `/plan` the user typed, with its result on one line. */
  async function slashPlan(rawInput: string, midTurn: boolean) {
    const result = await runPlanCommand(rawInput)
    const text = result.kind === 'error' ? s.red(result.text) : result.text
    screen.line(midTurn ? `  ${s.cyan(rawInput === '' ? '/plan' : `/plan ${rawInput}`)}: ${text}` : text)
  }

  /** Runs turns from `input`, then from what the user typed meanwhile, until nothing waits. */
  function startTurns(input: ModelMessage[]) {
    running = (async () => {
      let next: ModelMessage[] = input
      for (;;) {
        const stopped = await runTurn(next)
        if (stopped || quitting) return
        next = plan.takeSteered()
        if (next.length === 0) return
        screen.line(s.dim('(sending what you typed during the turn)'))
      }
    })().finally(() => {
      running = undefined
      agentListens()
      if (quitting) return
      if (inputEnded) void quit()
      else screen.prompt(idlePrompt())
    })
  }

  /** One turn of the AI SDK loop. @returns true when the user stopped it. */
  async function runTurn(input: ModelMessage[]): Promise<boolean> {
    const controller = new AbortController()
    turn = controller
    let called = false
    let completed: ModelMessage[] = []
    try {
      await plan.runTurn(
        async () => {
          called = true
          const result = streamText({
            model,
            messages: [...history, ...input],
            tools: plan.tools,
            prepareStep: plan.prepareStep,
            stopWhen: stepCountIs(maxSteps),
            abortSignal: controller.signal,
            onStepFinish: (step) => void (completed = step.response.messages),
            onError: () => {}, // shown from the stream's error part
          })
          for await (const part of result.fullStream) show(part)
        },
        { abortSignal: controller.signal },
      )
    } catch (error) {
      if (!quitting) screen.line(s.red(`error: ${errorMessage(error)}`))
    } finally {
      turn = undefined
      // What the model saw stays in the history, also after an error or a stop: the notices and
      // steered messages where it saw them (the transcript), the steps it finished.
      const told = called ? plan.transcript(completed) : []
      if (plan.handoff !== null) {
        // R102: a plan approved into a fresh context: the history starts again from its first message.
        history.splice(0, history.length, ...told)
        screen.line(s.dim(`(a fresh context: the earlier conversation was set aside; it holds plan v${plan.handoff.version} and the decisions made)`))
      } else {
        history.push(...input, ...told)
      }
      screen.endLine()
    }
    return controller.signal.aborted
  }

  function show(part: TextStreamPart<ToolSet>) {
    if (quitting && part.type !== 'abort') return
    switch (part.type) {
      case 'text-delta':
        return screen.write(part.text)
      case 'reasoning-delta':
        return screen.write(s.dim(part.text))
      case 'reasoning-end':
        return screen.endLine()
      case 'tool-call':
        return screen.line(`  ${s.dim('→')} ${describeCall(part.toolName, part.input)}`)
      case 'tool-result':
        return screen.line(`  ${s.dim('←')} ${describeResult(part.toolName, part.output)}`)
      case 'tool-error':
        // What the model is told, whole: a keep-planning message with comments (R100) has several lines.
        return screen.line(`  ${s.red('✗')} ${part.toolName}: ${indentFollowingLines(errorMessage(part.error))}`)
      case 'error':
        return screen.line(s.red(`error: ${errorMessage(part.error)}`))
      case 'abort':
        return screen.line(s.dim('(turn stopped)'))
      case 'finish':
        if (part.finishReason === 'tool-calls') screen.line(s.dim(`(stopped after ${maxSteps} steps; send a message to go on)`))
        return
    }
  }

  function describeCall(toolName: string, input: unknown): string {
    if (toolName === planMode.exitTool.name) return `${s.bold(toolName)} "${planMode.exitTool.presentCall(input).title}"`
    const path = (input as { path?: unknown } | null)?.path
    const shown = typeof path === 'string' && Object.keys(input as object).length === 1 ? path : JSON.stringify(input)
    return `${s.bold(toolName)} ${clip(shown ?? '', 100)}`
  }

  function describeResult(toolName: string, output: unknown): string {
    if (toolName === planMode.exitTool.name) return `${toolName}: ${s.green(planMode.exitTool.resultText)}`
    const text = typeof output === 'string' ? output : JSON.stringify(output) ?? ''
    const lines = countLines(text)
    if (lines <= 1) return `${toolName}: ${clip(text.trimEnd(), 100)}`
    const noun = toolName === 'list_files' ? 'entries' : 'lines'
    return `${toolName}: ${lines} ${noun}`
  }

  /** The line dispatcher: every line the user types comes here, one at a time. */
  async function onLine(raw: string) {
    while (scripted && running && !question && !quitting) await new Promise<void>((resolve) => (wakeScript = resolve))
    if (quitting) return
    screen.typed(raw)
    const input = readInput(raw)
    if (question) {
      // A /plan selection made during a review closes it (R48); /quit leaves.
      if (input.kind === 'plan') return slashPlan(input.rawInput, true)
      if (input.kind === 'quit') return quit()
      return question.answer(raw)
    }
    if (running) {
      switch (input.kind) {
        case 'plan':
          return slashPlan(input.rawInput, true)
        case 'quit':
          return quit()
        case 'help':
          return HELP_LINES.forEach((line) => screen.line(s.dim(`  ${line}`)))
        case 'unknown':
          return screen.line(s.red(`  unknown command /${input.name} (see /help)`))
        case 'text':
          if (input.text === '') return
          plan.steer(userMessage(input.text))
          return screen.line(s.dim(`  (goes with the next step) ${input.text}`))
      }
    }
    switch (input.kind) {
      case 'quit':
        return quit()
      case 'help':
        HELP_LINES.forEach((line) => screen.line(`  ${line}`))
        break
      case 'unknown':
        screen.line(s.red(`unknown command /${input.name} (see /help)`))
        break
      case 'plan': {
        await slashPlan(input.rawInput, false)
        // `/plan <message>` steered its message: it opens the next turn.
        const steered = plan.takeSteered()
        if (steered.length > 0) return startTurns(steered)
        break
      }
      case 'text':
        if (input.text !== '') return startTurns([{ role: 'user', content: input.text }])
    }
    screen.prompt(idlePrompt())
  }

  /** Ctrl-C: stops the running turn (its review too); when idle, or pressed again, leaves. */
  function interrupt() {
    if (quitting) return
    if (turn && !turn.signal.aborted) return turn.abort()
    void quit()
  }

  async function quit() {
    if (quitting) return
    quitting = true
    screen.endLine()
    // A review still open settles as reloaded (R60) before its turn is stopped.
    const disposed = planMode.dispose()
    turn?.abort()
    await disposed
    await running
    finish(0)
  }

  // Lines are handled one at a time, in order; the end of input queues behind the last line.
  let lines: Promise<unknown> = Promise.resolve()
  const enqueue = (handle: () => unknown) => {
    lines = lines
      .then(handle)
      .catch((error: unknown) => void (quitting || screen.line(s.red(`error: ${errorMessage(error)}`))))
  }
  rl.on('line', (raw) => enqueue(() => onLine(raw)))
  rl.on('close', () =>
    enqueue(() => {
      inputEnded = true
      // A running turn finishes first (unless a question waits for an answer that cannot come).
      if (!running || question) void quit()
    }),
  )
  rl.on('SIGINT', interrupt)
  const stopInterrupts = io.onInterrupt?.(interrupt)
  const onSignal = () => void quit()
  io.signal?.addEventListener('abort', onSignal, { once: true })

  try {
    screen.line(`${s.bold('plan-mode chat')} · ${choice.label}`)
    if (choice.provider === 'offline' && choice.note) screen.line(s.dim(choice.note))
    screen.line(`log: ${path}`)
    screen.line(s.dim('Type a request. /plan plans first, /plan off leaves plan mode, /help lists commands, /quit exits.'))
    if (io.signal?.aborted) void quit()
    else if (!inputEnded) screen.prompt(idlePrompt())
    return await finished
  } finally {
    stopInterrupts?.()
    io.signal?.removeEventListener('abort', onSignal)
    rl.close()
    unsubscribe()
    await planMode.dispose()
    await session.close()
    screen.line(`log: ${path} (${session.events.length} events)`)
    screen.line(inspectHint(path))
  }
}

/**
 * The plan under review as a version of its planning episode (R96), and from v2 on what changed
 * from the previous version (R97): `Plan v1`, or `Plan v<n> — changes from v<n-1>:` and the
 * diff's lines with two lines of context (`formatPlanDiff`, indented by two spaces, without
 * trailing spaces: `+` green, `-` red, kept lines dim), or `Plan v<n> — no change from v<n-1>`
 * when it is the same plan. The plan under review has no record yet (its review's record is
 * written when it ends): it is the one the agent's log presents next.
 */
export function planVersionLines(agent: PlanAgent, plan: string, s: Styles): string[] {
  const history = createPlanHistory()
  for (const event of agent.session.events) history.read(event)
  const { version, previous } = history.next()
  if (previous === null) return [s.bold(`Plan v${version}`)]
  const changes = formatPlanDiff(diffPlans(previous, plan), 2)
  if (changes.length === 0) return [s.bold(`Plan v${version} — no change from v${version - 1}`)]
  const colour = (line: string) => (line.startsWith('+') ? s.green(line) : line.startsWith('-') ? s.red(line) : s.dim(line))
  // No trailing spaces: a kept blank line is an empty line, an added one a lone `+`.
  const shown = (line: string) => (line.trim() === '' ? '' : `  ${colour(line.trimEnd())}`)
  return [s.bold(`Plan v${version} — changes from v${version - 1}:`), ...changes.map(shown)]
}

/** What the chat says while the user comments on lines of a plan (R100). */
export const COMMENT_TEXTS = {
  heading: 'Comment on lines of the plan by number, or press Enter to go on to the feedback:',
  noSuchLine: 'Answer the number of a line above, or press Enter to finish.',
  noComment: '  (no comment added)',
} as const

/** The plan's lines that hold text, numbered as in the plan (from 1), for comments (R100). */
export function numberedLines(plan: string): { number: number; text: string }[] {
  return plan.split('\n').flatMap((text, i) => (text.trim() === '' ? [] : [{ number: i + 1, text }]))
}

/** A multi-line message under its first line: the following lines indented by 4 spaces (blank ones left empty). */
function indentFollowingLines(text: string): string {
  return text
    .split('\n')
    .map((line, i) => (i === 0 || line === '' ? line : `    ${line}`))
    .join('\n')
}

/** The base system prompt: where the agent works and what its tools can do. */
function systemPrompt(root: string): string {
  return [
    `You are a coding agent in a terminal chat, working in ${root}.`,
    'Your tools read the working directory (list_files, read_file); you cannot change files or run commands,',
    'so when a task needs changes, say exactly which changes you would make. Be brief.',
  ].join(' ')
}

/** Reads a typed line: `/plan [off|message]`, `/quit` (or `/exit`), `/help`, or text for the model. */
function readInput(raw: string): Input {
  const text = raw.trim()
  const command = /^\/([a-z][\w-]*)(?:\s+([\s\S]*))?$/i.exec(text)
  if (!command) return { kind: 'text', text }
  const name = command[1]!.toLowerCase()
  if (name === 'plan') return { kind: 'plan', rawInput: (command[2] ?? '').trim() }
  if (name === 'quit' || name === 'exit') return { kind: 'quit' }
  if (name === 'help') return { kind: 'help' }
  return { kind: 'unknown', name: command[1]! }
}

/** The option a review answer picks: its number, its label, or its label's first letter, in any case. */
export function chooseOption(labels: readonly string[], answer: string): string | undefined {
  const text = answer.trim().toLowerCase()
  if (text === '') return undefined
  const index = Number(text)
  if (Number.isInteger(index) && index >= 1 && index <= labels.length) return labels[index - 1]
  const byLabel = labels.find((label) => label.toLowerCase() === text)
  if (byLabel) return byLabel
  const byInitial = labels.filter((label) => label[0]?.toLowerCase() === text)
  return byInitial.length === 1 ? byInitial[0] : undefined
}

/** A message the user typed while a turn ran, steered into its next request. */
function userMessage(text: string): UserMessage {
  return { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

/** The terminal as chat writes to it: streamed text, whole lines, prompts, typed lines. */
interface Screen {
  /** Writes streamed text as it comes. */
  write(text: string): void
  /** Writes one line, on a line of its own. */
  line(text: string): void
  /** Ends a line of streamed text, if one is open. */
  endLine(): void
  /** Shows a prompt and waits (the dispatcher gets the answer). */
  prompt(text: string): void
  /** A line the user typed arrived. */
  typed(line: string): void
}

/**
 * @param showPrompt the readline prompt of a terminal (it redraws while the user edits);
 *   without one the prompt is written to stdout.
 * @param echo write typed lines after their prompt: input that is not a terminal is not shown
 *   by anyone else, and a transcript reads better with the answers in it.
 */
function createScreen(io: CliIo, showPrompt: ((text: string) => void) | undefined, echo: boolean): Screen {
  let atLineStart = true
  let promptOpen = false
  const write = (text: string) => {
    if (text === '') return
    io.stdout.write(text)
    atLineStart = text.endsWith('\n')
    promptOpen = false
  }
  const endLine = () => {
    if (!atLineStart) write('\n')
  }
  return {
    write,
    endLine,
    line(text) {
      endLine()
      write(`${text}\n`)
    },
    prompt(text) {
      endLine()
      if (showPrompt) showPrompt(text)
      else io.stdout.write(text)
      atLineStart = false
      promptOpen = true
    },
    typed(line) {
      if (promptOpen && echo) io.stdout.write(line)
      if (promptOpen && !showPrompt) io.stdout.write('\n')
      atLineStart = true
      promptOpen = false
    },
  }
}
