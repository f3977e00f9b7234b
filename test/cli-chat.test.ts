/**
 * `plan-mode chat`, driven in-process through `main` as a user types: lines go to a PassThrough
 * stdin when the prompt they answer appears. The offline model makes every run deterministic;
 * the working directory is a temp folder with known files. One test runs the real process, one
 * the real OpenAI provider against a fake server on 127.0.0.1.
 */
import { execFileSync, spawn } from 'node:child_process'
import { closeSync, constants, openSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHAT_SECTION, chooseOption, lineQuote, numberedLines, planVersionLines } from '../apps/cli/chat.js'
import { chooseChatModel, importProvider } from '../apps/shared/chat-model.js'
import { CliError, styles } from '../apps/cli/io.js'
import { main, type CliIo } from '../apps/cli/main.js'
import { createMemorySessionLog, type PlanAgent } from '../src/index.js'
import { terminalPage } from './fixtures/ansi-html.js'
import { sharedChromium } from './fixtures/browser.js'

const REPO = fileURLToPath(new URL('..', import.meta.url))
const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url))
const DOCS = fileURLToPath(new URL('../docs/', import.meta.url))

let root: string
let logs: string
let logCount = 0
beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true })
  root = await mkdtemp(join(tmpdir(), 'plan-mode-chat-root-'))
  logs = await mkdtemp(join(tmpdir(), 'plan-mode-chat-logs-'))
  await writeFile(join(root, 'README.md'), '# Report\n\nPrints the totals as a table.\n')
  await writeFile(join(root, 'package.json'), '{ "name": "report" }\n')
  await mkdir(join(root, 'src'))
  await writeFile(join(root, 'src', 'report.ts'), 'export function report(totals) { console.table(totals) }\n')
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
  await rm(logs, { recursive: true, force: true })
})

/** A fresh log path for one run. */
const newLog = () => join(logs, `session-${++logCount}.jsonl`)

interface LogEvent {
  seq: number
  type: string
  data: Record<string, unknown>
}

async function readLog(path: string): Promise<LogEvent[]> {
  const text = (await readFile(path, 'utf8')).trim()
  return text === '' ? [] : text.split('\n').map((line) => JSON.parse(line) as LogEvent)
}

/** The plan-mode events of a log, one short line each. */
const planEvents = (events: LogEvent[]) =>
  events.flatMap((event) => {
    if (event.type === 'plan/mode') return [`plan/mode ${String(event.data.active)}`]
    if (event.type === 'plan/review') return [`plan/review ${String(event.data.outcome)}`]
    return []
  })

/** A chat run in-process: type lines, wait for output, interrupt. */
interface ChatRun {
  /** Everything written to stdout so far. */
  out(): string
  err(): string
  /** Resolves once stdout holds `text` after what earlier waits consumed; then consumes it. */
  until(text: string): Promise<void>
  /** Types one line. */
  type(line: string): void
  /** Types `line` the moment stdout shows `text` (from inside the write): a mid-turn keystroke. */
  when(text: string, line: string): void
  /** Ctrl-C. */
  interrupt(): void
  /** Ctrl-D: the end of input. */
  end(): void
  /** The exit code. */
  done: Promise<number>
}

/** Answers prompts in order: waits for each prompt, then types its line. */
async function converse(chat: ChatRun, exchanges: [prompt: string, line: string][]): Promise<void> {
  for (const [prompt, line] of exchanges) {
    await chat.until(prompt)
    chat.type(line)
  }
}

/**
 * @param keyboard stdin is a terminal (the default: the tests type as a user does, also mid-turn);
 *   false makes it a pipe, whose lines chat reads as a script.
 * @param tty stdout is a terminal: chat colours its output (unless `--no-color` or NO_COLOR).
 */
function startChat(args: string[], { env = {} as Record<string, string | undefined>, keyboard = true, tty = false } = {}): ChatRun {
  const stdin = Object.assign(new PassThrough(), { isTTY: keyboard })
  let out = ''
  let err = ''
  let consumed = 0
  const triggers: { text: string; line: string }[] = []
  const waiters = new Set<() => void>()
  const interrupts = new Set<() => void>()
  const io: CliIo = {
    stdout: {
      isTTY: tty,
      write(text: string) {
        out += text
        for (const trigger of [...triggers]) {
          if (out.includes(trigger.text)) {
            triggers.splice(triggers.indexOf(trigger), 1)
            stdin.write(`${trigger.line}\n`)
          }
        }
        for (const waiter of [...waiters]) waiter()
      },
    },
    stderr: { write: (text: string) => void (err += text) },
    stdin,
    env,
    cwd: root,
    onInterrupt(listener) {
      interrupts.add(listener)
      return () => void interrupts.delete(listener)
    },
  }
  const done = main(['chat', ...args], io)
  return {
    out: () => out,
    err: () => err,
    until(text) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const at = out.indexOf(text, consumed)
          if (at < 0) return false
          consumed = at + text.length
          waiters.delete(check)
          clearTimeout(timer)
          resolve()
          return true
        }
        // The chat ending without the text fails the wait at once; the timer is only a hang guard.
        const fail = (why: string) => {
          if (!waiters.delete(check)) return
          clearTimeout(timer)
          reject(new Error(`${why} waiting for ${JSON.stringify(text)}; stdout:\n${out}\nstderr:\n${err}`))
        }
        const timer = setTimeout(() => fail('timed out'), 100_000)
        waiters.add(check)
        if (!check()) void done.then(() => fail('the chat ended'), () => fail('the chat failed'))
      })
    },
    type: (line) => void stdin.write(`${line}\n`),
    when: (text, line) => void triggers.push({ text, line }),
    interrupt: () => interrupts.forEach((listener) => listener()),
    end: () => void stdin.end(),
    done,
  }
}

/** The lines from the one equal to `first` up to (not including) the next line starting with `end`. */
function linesFrom(out: string, first: string, end: string, from = 0): string[] {
  const lines = out.split('\n')
  const i = lines.indexOf(first, from)
  if (i < 0) throw new Error(`no line ${JSON.stringify(first)} in:\n${out}`)
  const j = lines.findIndex((line, k) => k > i && line.startsWith(end))
  return lines.slice(i, j < 0 ? undefined : j)
}

const OFFLINE = ['--provider', 'offline', '--no-color']

/** What Keep planning shows of the offline model's first plan for the --json request: its lines with text, numbered, to comment on (R100). */
const V1_LINES = [
  'Comment on lines of the plan by number, or press Enter to go on to the feedback:',
  '   1 │ # Plan: Add a --json flag to the report command',
  '   3 │ I listed the working directory (3 entries) and read `README.md` (3 lines).',
  '   5 │ ## Steps',
  '   7 │ 1. Start from `README.md` and find the code the request touches.',
  '   8 │ 2. Make the change: Add a --json flag to the report command.',
  '   9 │ 3. Add or update the tests that cover it.',
  '  10 │ 4. Run the tests and review the diff.',
]

describe('plan-mode chat: the default mode', () => {
  it('answers a question directly, and /quit exits 0 with the log path and the inspect hint', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await converse(chat, [
      ['you> ', 'What does the report print?'],
      ['you> ', '/quit'],
    ])
    expect(await chat.done).toBe(0)
    expect(chat.err()).toBe('')
    expect(chat.out().split('\n')).toEqual([
      'plan-mode chat · offline (a scripted model; no network)',
      `log: ${log}`,
      'Type a request. /plan plans first, /plan off leaves plan mode, /help lists commands, /quit exits.',
      'you> What does the report print?',
      'You asked: "What does the report print?". In the default mode I act directly, without presenting a plan first. I am the offline model, so I only say so; type /plan to have me explore, plan and ask for your approval.',
      'you> /quit',
      `log: ${log} (3 events)`,
      `inspect it: plan-mode inspect ${log}`,
      '',
    ])
    expect((await readLog(log)).map((event) => event.type)).toEqual(['turn/start', 'request/header', 'turn/end'])
  })

  it('without a key or --provider, uses the offline model and says how to get a real one', async () => {
    const chat = startChat(['--no-color', '--log', newLog()])
    await chat.until('you> ')
    chat.end()
    expect(await chat.done).toBe(0)
    expect(chat.out().split('\n').slice(0, 2)).toEqual([
      'plan-mode chat · offline (a scripted model; no network)',
      'No API key set (OPENAI_API_KEY, ANTHROPIC_API_KEY, AI_GATEWAY_API_KEY): using the offline model. Set one, or pass --provider, for a real model.',
    ])
  })

  it('the end of input (Ctrl-D) exits 0', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await chat.until('you> ')
    chat.end()
    expect(await chat.done).toBe(0)
    expect(chat.out()).toContain(`\nlog: ${log} (0 events)\ninspect it: plan-mode inspect ${log}\n`)
  })

  it('Ctrl-C while idle exits 0', async () => {
    const chat = startChat([...OFFLINE, '--log', newLog()])
    await chat.until('you> ')
    chat.interrupt()
    expect(await chat.done).toBe(0)
  })

  it('/help lists the commands; an unknown command says so and changes nothing', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await converse(chat, [
      ['you> ', '/help'],
      ['you> ', '/frobnicate now'],
      ['you> ', '/quit'],
    ])
    expect(await chat.done).toBe(0)
    expect(linesFrom(chat.out(), 'you> /help', 'you> ')).toEqual([
      'you> /help',
      '  /plan            enter plan mode: the agent explores, then asks you to approve a plan',
      '  /plan <message>  enter plan mode and send the message',
      '  /plan off        leave plan mode',
      '  /quit            exit (also Ctrl-D; Ctrl-C when idle)',
      '  While the agent works, /plan and /plan off apply from its next step, other text goes with',
      '  its next step, and Ctrl-C stops the turn.',
    ])
    expect(linesFrom(chat.out(), 'you> /frobnicate now', 'you> ')).toEqual(['you> /frobnicate now', 'unknown command /frobnicate (see /help)'])
    expect(await readLog(log)).toEqual([])
  })
})

describe('plan-mode chat: plan mode', () => {
  it('R56, R55: /plan and /plan off while idle commit at once, and the prompt shows the mode', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await converse(chat, [
      ['you> ', '/plan'],
      ['plan> ', '/plan'],
      ['plan> ', '/plan off'],
      ['you> ', '/plan OFF'],
      ['you> ', '/quit'],
    ])
    expect(await chat.done).toBe(0)
    expect(chat.out().split('\n').slice(3, 11)).toEqual([
      'you> /plan',
      'Plan mode on. Use /plan off to leave.',
      'plan> /plan',
      'Plan mode is already on. Use /plan off to leave.',
      'plan> /plan off',
      'Plan mode off.',
      'you> /plan OFF',
      'Plan mode is already inactive.',
    ])
    const events = await readLog(log)
    expect(events.map((event) => event.type)).toEqual([
      'command/run', 'plan/mode', 'command/done',
      'command/run', 'command/done',
      'command/run', 'plan/mode', 'command/done',
      'command/run', 'command/done',
    ])
    expect(planEvents(events)).toEqual(['plan/mode true', 'plan/mode false'])
  })

  it('R43–R45, R47, R49, R96, R97: plans, shows the review (v1), keeps planning with feedback, revises, shows v2 with its changes from v1, approves and carries out', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await converse(chat, [
      ['you> ', '/plan'],
      ['plan> ', 'Add a --json flag to the report command.'],
      ['review [1/2/3/4]> ', 'maybe'],
      ['review [1/2/3/4]> ', '2'],
      ['comment on line (number, Enter to finish)> ', ''],
      ['feedback (Enter for none)> ', 'Also document the flag in the README.'],
      ['review [1/2/3/4]> ', 'approve'],
      ['you> ', '/quit'],
    ])
    expect(await chat.done).toBe(0)

    const out = chat.out()
    expect(linesFrom(out, 'plan> Add a --json flag to the report command.', 'review')).toEqual([
      'plan> Add a --json flag to the report command.',
      'Let me look around before I plan.',
      '  → list_files .',
      '  ← list_files: 3 entries',
      'Reading `README.md`.',
      '  → read_file README.md',
      '  ← read_file: 3 lines',
      'Here is my plan.',
      '  → exit_plan_mode "Plan: Add a --json flag to the report command"',
      '── Plan review ────────────────────────────────────────────',
      '  Plan: Add a --json flag to the report command',
      '',
      '  I listed the working directory (3 entries) and read `README.md` (3 lines).',
      '',
      '  Steps',
      '',
      '  1. Start from `README.md` and find the code the request touches.',
      '  2. Make the change: Add a --json flag to the report command.',
      '  3. Add or update the tests that cover it.',
      '  4. Run the tests and review the diff.',
      '────────────────────────────────────────────────────────────',
      'Plan v1',
      'Approve this plan and leave plan mode?',
      '  1. Approve                     Leave plan mode; the plan is carried out from the next step.',
      '  2. Keep planning               Stay in plan mode; feedback goes back to the model.',
      '  3. Approve in a fresh context  Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.',
      '  4. Leave plan mode             Leave plan mode without carrying out the plan; the model stops and waits.',
    ])
    expect(linesFrom(out, 'review [1/2/3/4]> maybe', '──')).toEqual([
      'review [1/2/3/4]> maybe',
      'Answer 1 (Approve), 2 (Keep planning), 3 (Approve in a fresh context) or 4 (Leave plan mode).',
      'review [1/2/3/4]> 2',
      ...V1_LINES,
      'comment on line (number, Enter to finish)> ',
      'feedback (Enter for none)> Also document the flag in the README.',
      '  ✗ exit_plan_mode: The user chose to keep planning; their feedback: Also document the flag in the README.',
      'I revised the plan with your feedback.',
      '  → exit_plan_mode "Plan: Add a --json flag to the report command (revision 2)"',
    ])
    expect(linesFrom(out, '  Plan: Add a --json flag to the report command (revision 2)', '───')).toEqual([
      '  Plan: Add a --json flag to the report command (revision 2)',
      '',
      '  I listed the working directory (3 entries) and read `README.md` (3 lines).',
      '',
      '  Steps',
      '',
      '  1. Start from `README.md` and find the code the request touches.',
      '  2. Make the change: Add a --json flag to the report command.',
      '  3. Add or update the tests that cover it.',
      '  4. Also document the flag in the README.',
      '  5. Run the tests and review the diff.',
      '',
      '  Feedback addressed',
      '',
      '  • Also document the flag in the README.',
    ])
    // R96, R97: the revision is v2, and the review shows what changed from v1 before the question.
    expect(linesFrom(out, '  • Also document the flag in the README.', 'review [1/2/3/4]> approve')).toEqual([
      '  • Also document the flag in the README.',
      '────────────────────────────────────────────────────────────',
      'Plan v2 — changes from v1:',
      '  - # Plan: Add a --json flag to the report command',
      '  + # Plan: Add a --json flag to the report command (revision 2)',
      '',
      '    I listed the working directory (3 entries) and read `README.md` (3 lines).',
      '    …',
      '    2. Make the change: Add a --json flag to the report command.',
      '    3. Add or update the tests that cover it.',
      '  - 4. Run the tests and review the diff.',
      '  + 4. Also document the flag in the README.',
      '  + 5. Run the tests and review the diff.',
      '  +',
      '  + ## Feedback addressed',
      '  +',
      '  + - Also document the flag in the README.',
      'Approve this plan and leave plan mode?',
      '  1. Approve                     Leave plan mode; the plan is carried out from the next step.',
      '  2. Keep planning               Stay in plan mode; feedback goes back to the model.',
      '  3. Approve in a fresh context  Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.',
      '  4. Leave plan mode             Leave plan mode without carrying out the plan; the model stops and waits.',
    ])
    expect(linesFrom(out, 'review [1/2/3/4]> approve', 'you> ')).toEqual([
      'review [1/2/3/4]> approve',
      '  ← exit_plan_mode: Plan approved — plan mode exited; carry out the plan starting with your next step.',
      '  · plan mode off from this step',
      'Approved. Carrying out "Plan: Add a --json flag to the report command (revision 2)", starting where the plan starts.',
      '  → read_file README.md',
      '  ← read_file: 3 lines',
      'Done with "Plan: Add a --json flag to the report command (revision 2)". As the offline model I change no files; this is what I carried out:',
      '',
      '1. Start from `README.md` and find the code the request touches.',
      '2. Make the change: Add a --json flag to the report command.',
      '3. Add or update the tests that cover it.',
      '4. Also document the flag in the README.',
      '5. Run the tests and review the diff.',
    ])

    const events = await readLog(log)
    expect(planEvents(events)).toEqual(['plan/mode true', 'plan/review keep-planning', 'plan/review approved', 'plan/mode false'])
    const keepPlanning = events.find((event) => event.type === 'plan/review')!
    expect(keepPlanning.data).toMatchObject({
      title: 'Plan: Add a --json flag to the report command',
      feedback: 'Also document the flag in the README.',
    })
    // R47: the approval's plan/mode off lands at the next boundary, right before its request.
    const off = events.findIndex((event) => event.type === 'plan/mode' && event.data.active === false)
    expect(events[off + 1]!.type).toBe('request/header')
  })

  it('R9, R16, R17, R32: a /plan off typed mid-turn waits as pending and lands at the next step, with a notice', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await chat.until('you> ')
    chat.type('/plan')
    await chat.until('plan> ')
    chat.when('  → list_files .', '/plan off')
    chat.type('Add a --json flag to the report command.')
    await chat.until('you> ')
    chat.type('/quit')
    expect(await chat.done).toBe(0)

    const out = chat.out()
    expect(out).toContain('\n  /plan off: Leaving plan mode (applies from the next step).\n')
    expect(linesFrom(out, '  · plan mode off from this step', 'you> ')).toEqual([
      '  · plan mode off from this step',
      'You switched back to the default mode, so I stop planning and act directly on "Add a --json flag to the report command.". As the offline model I change nothing, but a real model would make the change now, without a plan review.',
    ])
    const events = await readLog(log)
    const types = events.map((event) => event.type)
    const run = events.findIndex((event) => event.type === 'command/run' && event.data.args === 'off')
    const off = events.findIndex((event) => event.type === 'plan/mode' && event.data.active === false)
    // Typed during the open turn, after its first request...
    expect(types.slice(types.lastIndexOf('turn/start', run), run)).toEqual(['turn/start', 'request/header'])
    // ...queued, not committed: nothing appended until the next boundary after the run settled (a
    // step may begin while the command runs), whose append lands before that step's request/header.
    const done = events.findIndex((event, i) => i > run && event.type === 'command/done')
    expect(types.slice(run, done + 1).filter((type) => type !== 'request/header')).toEqual(['command/run', 'command/done'])
    expect(types.slice(done + 1, off + 2)).toEqual(['plan/mode', 'request/header'])
    expect(events[done]!.data).toMatchObject({ kind: 'success', text: 'Leaving plan mode (applies from the next step).' })
    expect(planEvents(events)).toEqual(['plan/mode true', 'plan/mode false'])
  })

  it('R56, R48: /plan <message> opens a plan-mode turn; /plan off at the review closes it and the model hears why', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await converse(chat, [
      ['you> ', '/plan Add a --json flag to the report command.'],
      ['review [1/2/3/4]> ', '/plan off'],
      ['you> ', '/quit'],
    ])
    expect(await chat.done).toBe(0)

    const out = chat.out()
    expect(linesFrom(out, 'you> /plan Add a --json flag to the report command.', 'Let me')).toEqual([
      'you> /plan Add a --json flag to the report command.',
      'Plan mode on. Use /plan off to leave.',
    ])
    expect(linesFrom(out, 'review [1/2/3/4]> /plan off', 'you> ')).toEqual([
      'review [1/2/3/4]> /plan off',
      '(review closed)',
      '  ✗ exit_plan_mode: The user changed the plan mode directly; the review is closed.',
      '  /plan off: Leaving plan mode (applies from the next step).',
      '  · plan mode off from this step',
      'You switched back to the default mode, so I stop planning and act directly on "Add a --json flag to the report command.". As the offline model I change nothing, but a real model would make the change now, without a plan review.',
    ])
    expect(planEvents(await readLog(log))).toEqual(['plan/mode true', 'plan/review superseded', 'plan/mode false'])
  })

  it('text typed mid-turn goes with the next step, and Ctrl-C during the review stops the turn (R46)', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await chat.until('you> ')
    chat.type('/plan')
    await chat.until('plan> ')
    chat.when('  → list_files .', 'Add a --csv flag instead.')
    chat.type('Add a --json flag to the report command.')
    await chat.until('review [1/2/3/4]> ')
    chat.interrupt()
    await chat.until('plan> ')
    chat.interrupt()
    expect(await chat.done).toBe(0)

    const out = chat.out()
    expect(out).toContain('\n  (goes with the next step) Add a --csv flag instead.\n')
    // The steered request is the model's latest: its plan is for it.
    expect(out).toContain('\n  → exit_plan_mode "Plan: Add a --csv flag instead"\n')
    expect(linesFrom(out, '  4. Leave plan mode             Leave plan mode without carrying out the plan; the model stops and waits.', 'plan> ').slice(1)).toEqual([
      'review [1/2/3/4]> ',
      '(review closed)',
      '(turn stopped)',
    ])
    const events = await readLog(log)
    expect(planEvents(events)).toEqual(['plan/mode true', 'plan/review aborted'])
    expect(events.at(-1)!.type).toBe('turn/end')
  })

  it('R60: a review still open when the input ends settles as reloaded; the exit code is 0', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log])
    await chat.until('you> ')
    chat.type('/plan Add a --json flag to the report command.')
    await chat.until('review [1/2/3/4]> ')
    chat.end()
    expect(await chat.done).toBe(0)
    const events = await readLog(log)
    expect(planEvents(events)).toEqual(['plan/mode true', 'plan/review reloaded'])
    expect(events.at(-1)!.type).toBe('turn/end')
  })
})

describe('plan-mode chat: piped input', () => {
  it('R43–R49: a piped script is read line by line as if typed at each prompt, and runs the whole arc', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log], { keyboard: false })
    for (const line of ['/plan', 'Add a --json flag to the report command.', '2', '', 'Also document the flag.', '1', '/quit']) chat.type(line)
    expect(await chat.done).toBe(0)
    const out = chat.out()
    expect(out).toContain('\nyou> /plan\nPlan mode on. Use /plan off to leave.\nplan> Add a --json flag to the report command.\n')
    expect(out).toContain(`\nreview [1/2/3/4]> 2\n${V1_LINES.join('\n')}\ncomment on line (number, Enter to finish)> \nfeedback (Enter for none)> Also document the flag.\n`)
    expect(out).toContain('\nreview [1/2/3/4]> 1\n')
    expect(out).toContain('\nyou> /quit\n')
    expect(planEvents(await readLog(log))).toEqual(['plan/mode true', 'plan/review keep-planning', 'plan/review approved', 'plan/mode false'])
  })

  it('the end of input waits for the lines before it; a review that opens after it settles as reloaded (R60)', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log], { keyboard: false })
    chat.type('/plan')
    chat.type('Add a --json flag to the report command.')
    chat.end()
    expect(await chat.done).toBe(0)
    expect(chat.out()).toContain('\nyou> /plan\nPlan mode on. Use /plan off to leave.\nplan> Add a --json flag to the report command.\n')
    expect(chat.out()).not.toContain('review [1/2/3/4]> ')
    expect(planEvents(await readLog(log))).toEqual(['plan/mode true', 'plan/review reloaded'])
  })
})

describe('plan-mode chat: comments on lines of the plan (R100)', () => {
  const KEEP_PLANNING = 'The user chose to keep planning; their feedback: '
  const ON_TESTS = { quote: 'Add or update the tests that cover it.', text: 'Cover the empty report too.' }
  const ON_RUN = { quote: 'Run the tests and review the diff.', text: 'Also run the linter.' }
  const ON_SMALL = { quote: 'Keep it small.', text: 'Smaller still: one flag, no config.' }
  const FEEDBACK_1 = `Keep it small.\n\nComments on the plan:\n1. On "${ON_TESTS.quote}": ${ON_TESTS.text}\n2. On "${ON_RUN.quote}": ${ON_RUN.text}`
  const FEEDBACK_2 = `Comments on the plan:\n1. On "${ON_SMALL.quote}": ${ON_SMALL.text}`

  it('R100, R45: Keep planning numbers the plan’s lines; comments on them quote the line, reach the model after the feedback (or alone), and the record keeps them', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log], { keyboard: false })
    const script = [
      '/plan', 'Add a --json flag to the report command.',
      // v1: two comments (a blank line, a word and an empty comment are no comment), then feedback.
      '2', '9', ON_TESTS.text, '2', 'x', '1', '', '10', ON_RUN.text, '', 'Keep it small.',
      // v2: a comment alone, no feedback.
      '2', '10', ON_SMALL.text, '', '',
      '1', '/quit',
    ]
    for (const line of script) chat.type(line)
    expect(await chat.done).toBe(0)
    const out = chat.out()

    expect(linesFrom(out, 'review [1/2/3/4]> 2', 'I revised')).toEqual([
      'review [1/2/3/4]> 2',
      ...V1_LINES,
      'comment on line (number, Enter to finish)> 9',
      `  On "${ON_TESTS.quote}"`,
      `comment> ${ON_TESTS.text}`,
      'comment on line (number, Enter to finish)> 2',
      'Answer the number of a line above, or press Enter to finish.',
      'comment on line (number, Enter to finish)> x',
      'Answer the number of a line above, or press Enter to finish.',
      'comment on line (number, Enter to finish)> 1',
      '  On "Plan: Add a --json flag to the report command"',
      'comment> ',
      '  (no comment added)',
      'comment on line (number, Enter to finish)> 10',
      `  On "${ON_RUN.quote}"`,
      `comment> ${ON_RUN.text}`,
      'comment on line (number, Enter to finish)> ',
      'feedback (Enter for none)> Keep it small.',
      // What the model is told, whole: its lines after the first indented under the tool line.
      `  ✗ exit_plan_mode: ${KEEP_PLANNING}Keep it small.`,
      '',
      '    Comments on the plan:',
      `    1. On "${ON_TESTS.quote}": ${ON_TESTS.text}`,
      `    2. On "${ON_RUN.quote}": ${ON_RUN.text}`,
    ])
    // The model got exactly R100's text: the offline model addresses each comment in its revision.
    expect(linesFrom(out, '  Steps', '───', out.split('\n').indexOf('  Plan: Add a --json flag to the report command (revision 2)'))).toEqual([
      '  Steps',
      '',
      '  1. Start from `README.md` and find the code the request touches.',
      '  2. Make the change: Add a --json flag to the report command.',
      '  3. Add or update the tests that cover it.',
      '  4. Keep it small.',
      `  5. On "${ON_TESTS.quote}": ${ON_TESTS.text}`,
      `  6. On "${ON_RUN.quote}": ${ON_RUN.text}`,
      '  7. Run the tests and review the diff.',
      '',
      '  Feedback addressed',
      '',
      '  • Keep it small.',
      `  • On "${ON_TESTS.quote}": ${ON_TESTS.text}`,
      `  • On "${ON_RUN.quote}": ${ON_RUN.text}`,
    ])
    // v2: line 10 is its step "4. Keep it small."; a comment alone is the whole feedback.
    const second = out.lastIndexOf('review [1/2/3/4]> 2')
    expect(linesFrom(out.slice(second), '  10 │ 4. Keep it small.', 'I revised')).toEqual([
      '  10 │ 4. Keep it small.',
      `  11 │ 5. On "${ON_TESTS.quote}": ${ON_TESTS.text}`,
      `  12 │ 6. On "${ON_RUN.quote}": ${ON_RUN.text}`,
      '  13 │ 7. Run the tests and review the diff.',
      '  15 │ ## Feedback addressed',
      '  17 │ - Keep it small.',
      `  18 │ - On "${ON_TESTS.quote}": ${ON_TESTS.text}`,
      `  19 │ - On "${ON_RUN.quote}": ${ON_RUN.text}`,
      'comment on line (number, Enter to finish)> 10',
      `  On "${ON_SMALL.quote}"`,
      `comment> ${ON_SMALL.text}`,
      'comment on line (number, Enter to finish)> ',
      'feedback (Enter for none)> ',
      `  ✗ exit_plan_mode: ${KEEP_PLANNING}Comments on the plan:`,
      `    1. On "${ON_SMALL.quote}": ${ON_SMALL.text}`,
    ])
    // v3 addresses it as a step of its own.
    expect(out).toContain(`\n  7. On "${ON_SMALL.quote}": ${ON_SMALL.text}\n`)

    const events = await readLog(log)
    expect(planEvents(events)).toEqual(['plan/mode true', 'plan/review keep-planning', 'plan/review keep-planning', 'plan/review approved', 'plan/mode false'])
    const [first, again] = events.filter((event) => event.type === 'plan/review') as [LogEvent, LogEvent]
    expect(first.data).toEqual({
      outcome: 'keep-planning',
      title: 'Plan: Add a --json flag to the report command',
      plan: expect.any(String),
      feedback: FEEDBACK_1,
      comments: [ON_TESTS, ON_RUN],
    })
    expect(again.data).toMatchObject({ outcome: 'keep-planning', feedback: FEEDBACK_2, comments: [ON_SMALL] })
    // Each quote is an exact excerpt of the plan it was made on.
    for (const { data } of [first, again]) {
      for (const { quote } of data.comments as { quote: string }[]) expect(data.plan as string).toContain(quote)
    }
  })
})

describe('plan-mode chat: plan versions and what changed (R96, R97)', () => {
  /** The whole arc, piped: plan, keep planning with feedback, approve the revision (v2). */
  const ARC = ['/plan', 'Add a --json flag to the report command.', '2', '', 'Also document the flag in the README.', '1', '/quit']
  const ESC = '\u001b'
  const stripAnsi = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '')

  it('R96, R97: on a terminal the review’s diff is coloured through the CLI’s styles: + green, - red, kept lines dim, the version bold', async () => {
    const chat = startChat(['--provider', 'offline', '--log', newLog()], { keyboard: false, tty: true })
    for (const line of ARC) chat.type(line)
    expect(await chat.done).toBe(0)
    const out = chat.out()
    const lines = out.split('\n')
    expect(lines).toContain(`${ESC}[1mPlan v1${ESC}[22m`)
    const from = lines.indexOf(`${ESC}[1mPlan v2 — changes from v1:${ESC}[22m`)
    expect(from).toBeGreaterThan(lines.indexOf(`${ESC}[1mPlan v1${ESC}[22m`))
    expect(lines.slice(from + 1, from + 8)).toEqual([
      `  ${ESC}[31m- # Plan: Add a --json flag to the report command${ESC}[39m`,
      `  ${ESC}[32m+ # Plan: Add a --json flag to the report command (revision 2)${ESC}[39m`,
      '',
      `  ${ESC}[2m  I listed the working directory (3 entries) and read \`README.md\` (3 lines).${ESC}[22m`,
      `  ${ESC}[2m  …${ESC}[22m`,
      `  ${ESC}[2m  2. Make the change: Add a --json flag to the report command.${ESC}[22m`,
      `  ${ESC}[2m  3. Add or update the tests that cover it.${ESC}[22m`,
    ])
    expect(lines[lines.indexOf('Approve this plan and leave plan mode?', from) - 1]).toBe(`  ${ESC}[32m+ - Also document the flag in the README.${ESC}[39m`)
    // The same text as without colours, only styled.
    expect(linesFrom(stripAnsi(out), 'Plan v2 — changes from v1:', 'Approve')).toHaveLength(15)
  })

  it('R96, R97: no colour codes without a terminal (nor with NO_COLOR): the versions and the diff as plain text', async () => {
    for (const options of [{ tty: false, env: {} }, { tty: true, env: { NO_COLOR: '1' } }]) {
      const chat = startChat(['--provider', 'offline', '--log', newLog()], { keyboard: false, ...options })
      for (const line of ARC) chat.type(line)
      expect(await chat.done).toBe(0)
      expect(chat.out()).not.toContain(ESC)
      expect(chat.out()).toContain('\nPlan v1\nApprove this plan and leave plan mode?\n')
      expect(chat.out()).toContain('\nPlan v2 — changes from v1:\n  - # Plan: Add a --json flag to the report command\n')
    }
  })

  it('R96: entering plan mode again starts a new episode: its first plan is v1 again', async () => {
    const log = newLog()
    const chat = startChat([...OFFLINE, '--log', log], { keyboard: false })
    for (const line of ['/plan', 'Add a --json flag to the report command.', '1', '/plan', 'Add a --csv flag to the report command.', '1', '/quit']) chat.type(line)
    expect(await chat.done).toBe(0)
    const shown = chat.out().split('\n').filter((line) => line.startsWith('Plan v'))
    expect(shown).toEqual(['Plan v1', 'Plan v1'])
    expect(planEvents(await readLog(log))).toEqual(['plan/mode true', 'plan/review approved', 'plan/mode false', 'plan/mode true', 'plan/review approved', 'plan/mode false'])
  })

  it('R96, R97: the review’s version lines read the agent’s log: v1, the changes from the previous version, or no change', () => {
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent: PlanAgent = { id: 'a', session }
    const plain = styles(false)
    const V1 = '# Plan\n\n1. One.\n2. Two.\n3. Three.\n4. Four.\n5. Five.\n6. Six.'
    const V2 = V1.replace('6. Six.', '6. Six, in full.')
    expect(planVersionLines(agent, V1, plain)).toEqual(['Plan v1'])
    session.append('plan/review', { outcome: 'keep-planning', title: 'Plan', plan: V1 })
    expect(planVersionLines(agent, V2, plain)).toEqual(['Plan v2 — changes from v1:', '    …', '    4. Four.', '    5. Five.', '  - 6. Six.', '  + 6. Six, in full.'])
    session.append('plan/review', { outcome: 'keep-planning', title: 'Plan', plan: V2 })
    expect(planVersionLines(agent, `${V2}\n`, plain)).toEqual(['Plan v3 — no change from v2'])
    session.append('plan/mode', { active: false })
    session.append('plan/mode', { active: true })
    expect(planVersionLines(agent, V2, plain)).toEqual(['Plan v1'])
    expect(planVersionLines(agent, V2, styles(true))).toEqual(['\u001b[1mPlan v1\u001b[22m'])
  })

  it('R96, R97: the terminal’s review of a v2, coloured, as a picture (docs/plan-diff-terminal.png)', async () => {
    const chat = startChat(['--provider', 'offline', '--log', newLog()], { keyboard: false, tty: true })
    for (const line of ARC) chat.type(line)
    expect(await chat.done).toBe(0)
    // From the keep-planning answer to the approval: the revision, its review and its diff.
    const lines = chat.out().split('\n')
    const plainLines = lines.map(stripAnsi)
    const first = plainLines.indexOf('review [1/2/3/4]> 2')
    const last = plainLines.indexOf('review [1/2/3/4]> 1')
    expect(first).toBeGreaterThan(0)
    const transcript = lines.slice(first, last + 2).join('\n')
    expect(transcript).toContain(`${ESC}[32m+ 5. Run the tests and review the diff.${ESC}[39m`)

    const browser = await sharedChromium()
    try {
      const page = await browser.newPage({ viewport: { width: 1100, height: 900 } })
      await page.route(() => true, (route) => route.abort()) // the page is self-contained
      await page.setContent(terminalPage(transcript, 'plan-mode chat — reviewing v2 of a plan'))
      const terminal = page.locator('#terminal')
      // The page shows the transcript's text, its colours as styles.
      expect(await terminal.textContent()).toBe(stripAnsi(transcript))
      const colourOf = (text: string) => terminal.locator('span', { hasText: text }).first().evaluate((span) => getComputedStyle(span).color)
      expect(await colourOf('+ 5. Run the tests and review the diff.')).toBe('rgb(143, 209, 139)')
      expect(await colourOf('- 4. Run the tests and review the diff.')).toBe('rgb(242, 119, 122)')
      const path = 'plan-diff-terminal.png'
      await page.locator('.window').screenshot({ path: `${ARTIFACTS}${path}` })
      // `PLAN_MODE_SCREENSHOTS=docs npx vitest run test/cli-chat.test.ts` refreshes docs/plan-diff-terminal.png.
      if (process.env.PLAN_MODE_SCREENSHOTS === 'docs') await page.locator('.window').screenshot({ path: `${DOCS}${path}` })
    } finally {
      await browser.close()
    }
  })
})

describe('plan-mode chat: bad input, one line on stderr and exit code 2', () => {
  const bad = async (args: string[], stderr: string, env: Record<string, string | undefined> = {}) => {
    const chat = startChat(args, { env })
    expect(await chat.done).toBe(2)
    expect(chat.out()).toBe('')
    expect(chat.err()).toBe(`${stderr}\n`)
  }

  it('an unknown provider', () =>
    bad(['--provider', 'frob'], 'plan-mode: chat: unknown provider "frob" (providers: openai, anthropic, gateway, offline)'))

  it('a provider without its API key', () => bad(['--provider', 'openai'], 'plan-mode: chat --provider openai needs OPENAI_API_KEY set to an API key'))

  it('a provider whose key is blank', () =>
    bad(['--provider', 'anthropic'], 'plan-mode: chat --provider anthropic needs ANTHROPIC_API_KEY set to an API key', { ANTHROPIC_API_KEY: ' ' }))

  it('an existing --log file', async () => {
    const log = newLog()
    await writeFile(log, '')
    await bad(['--provider', 'offline', '--log', log], `plan-mode: ${log}: already exists; chat writes a new log (give another --log path)`)
  })

  it('--model for the offline model', () => bad(['--provider', 'offline', '--model', 'x'], 'plan-mode: chat: the offline model takes no --model'))

  it('--model without a provider or a key', () =>
    bad(['--model', 'x'], 'plan-mode: chat: --model needs a provider: set OPENAI_API_KEY, ANTHROPIC_API_KEY, AI_GATEWAY_API_KEY or pass --provider'))

  it('--base-url that is not an http(s) URL', () => bad(['--base-url', 'localhost:8080'], 'plan-mode: chat: --base-url must be an http(s) URL, not "localhost:8080"'))

  it('--base-url without --model', () => bad(['--base-url', 'http://127.0.0.1:1/v1'], 'plan-mode: chat: --base-url needs --model (a model the server serves)'))

  it('an argument', () => bad(['hello'], 'plan-mode: chat: unexpected argument "hello"'))

  it('a missing provider package names the package to install', async () => {
    const missing = Object.assign(new Error("Cannot find package '@ai-sdk/anthropic' imported from /x/chat-model.js"), { code: 'ERR_MODULE_NOT_FOUND' })
    const load = importProvider('anthropic', () => Promise.reject(missing))
    await expect(load).rejects.toThrow(CliError)
    await expect(load).rejects.toThrow('chat --provider anthropic needs @ai-sdk/anthropic (npm install @ai-sdk/anthropic@3)')
    const other = new Error('boom')
    await expect(importProvider('openai', () => Promise.reject(other))).rejects.toBe(other)
  })
})

describe('the model choice', () => {
  const labelOf = async (request: Parameters<typeof chooseChatModel>[0], env: Record<string, string>) => (await chooseChatModel(request, env)).label

  it('without --provider, takes the first provider whose key is set: OpenAI, Anthropic, the AI Gateway', async () => {
    expect(await labelOf({}, { OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a', AI_GATEWAY_API_KEY: 'g' })).toBe('openai gpt-5-mini')
    expect(await labelOf({}, { ANTHROPIC_API_KEY: 'a', AI_GATEWAY_API_KEY: 'g' })).toBe('anthropic claude-sonnet-4-5')
    expect(await labelOf({}, { AI_GATEWAY_API_KEY: 'g' })).toBe('gateway openai/gpt-5-mini')
    expect(await labelOf({}, { OPENAI_API_KEY: '' })).toBe('offline (a scripted model; no network)')
  })

  it('--provider and --model win over the keys found; --base-url alone means an OpenAI-compatible server', async () => {
    expect(await labelOf({ provider: 'anthropic', model: 'claude-x' }, { OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' })).toBe('anthropic claude-x')
    expect(await labelOf({ provider: 'offline' }, { OPENAI_API_KEY: 'o' })).toBe('offline (a scripted model; no network)')
    expect(await labelOf({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama' }, {})).toBe('openai llama at http://127.0.0.1:11434/v1')
  })
})

describe('the review answer', () => {
  it('takes the number, the label or its initial, in any case; anything else is no answer', () => {
    const labels = ['Approve', 'Keep planning']
    for (const answer of ['1', 'a', 'A', 'approve', ' APPROVE ']) expect(chooseOption(labels, answer)).toBe('Approve')
    for (const answer of ['2', 'k', 'K', 'keep planning', 'Keep Planning']) expect(chooseOption(labels, answer)).toBe('Keep planning')
    for (const answer of ['', '0', '3', 'yes', 'keep', '1.5']) expect(chooseOption(labels, answer)).toBeUndefined()
  })

  it('R100: a comment on a line quotes it without its markdown marker, always an exact excerpt of the line; blank lines are not numbered', () => {
    const cases: [string, string][] = [
      ['# Plan: ship it', 'Plan: ship it'],
      ['### Steps  ', 'Steps'],
      ['1. Back up.', 'Back up.'],
      ['  12) Nested, numbered.', 'Nested, numbered.'],
      ['- [ ] A task', '[ ] A task'],
      ['* starred', 'starred'],
      ['> quoted', 'quoted'],
      ['#hashtag, not a heading', '#hashtag, not a heading'],
      ['Plain text\r', 'Plain text'],
      ['-', '-'],
      ['  > ', '>'],
    ]
    for (const [line, quote] of cases) expect(lineQuote(line)).toBe(quote)
    fc.assert(
      fc.property(fc.string(), (line) => {
        fc.pre(line.trim() !== '')
        const quote = lineQuote(line)
        return line.includes(quote) && quote.trim() !== ''
      }),
    )
    expect(numberedLines('# T\n\n1. A.\n   \n2. B.')).toEqual([
      { number: 1, text: '# T' },
      { number: 3, text: '1. A.' },
      { number: 5, text: '2. B.' },
    ])
  })
})

describe('plan-mode chat as a process', () => {
  /**
   * `plan-mode chat --provider offline` from the sources in `cwd`, with piped stdin. A stop gets a
   * generous grace (R108): on a busy machine closing may take longer than the default 0.5 s.
   */
  function spawnChat(cwd: string, log: string) {
    const child = spawn(
      process.execPath,
      ['--import', join(REPO, 'apps/shared/register.mjs'), join(REPO, 'apps/cli/bin.ts'), 'chat', '--provider', 'offline', '--log', log],
      { cwd, env: { ...process.env, NO_COLOR: '1', PLAN_MODE_STOP_GRACE_MS: '30000' }, stdio: ['pipe', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (data) => (out += String(data)))
    child.stderr.on('data', (data) => (err += String(data)))
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
    /** Resolves with the index after `text` once stdout shows it past `from`; the cap only guards a busy machine's start-up. */
    const seen = (text: string, from: number) =>
      new Promise<number>((resolve, reject) => {
        const check = () => {
          const at = out.indexOf(text, from)
          if (at < 0) return
          child.stdout.off('data', check)
          clearTimeout(timer)
          resolve(at + text.length)
        }
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${text}:\n${out}\n${err}`)), 100_000) // a hang guard: the test waits on the output
        child.stdout.on('data', check)
        check()
      })
    return { child, exited, seen, out: () => out, err: () => err }
  }

  it('runs from the sources with piped stdin: a question, then Ctrl-C (SIGINT) while idle exits 0', async () => {
    const log = newLog()
    const chat = spawnChat(root, log)
    try {
      let at = await chat.seen('you> ', 0)
      chat.child.stdin.write('What does the report print?\n')
      await chat.seen('you> ', at)
      chat.child.kill('SIGINT') // bin.ts hands it to chat, which leaves when idle
      expect((await chat.exited).code).toBe(0)
      expect(chat.err()).toBe('')
      expect(chat.out()).toContain('\nyou> What does the report print?\nYou asked: "What does the report print?".')
      expect(chat.out()).toContain(`\ninspect it: npm --prefix ${REPO.replace(/\/$/, '')} run cli -- inspect ${log}\n`)
    } finally {
      chat.child.kill('SIGKILL')
    }
  })

  it('R107, R108: in a directory whose README.md is a FIFO, read_file refuses it at once, and SIGTERM at the review ends the chat (exit 0, log closed)', async () => {
    const fifoRoot = await mkdtemp(join(tmpdir(), 'plan-mode-chat-fifo-'))
    execFileSync('mkfifo', [join(fifoRoot, 'README.md')])
    const log = newLog()
    const chat = spawnChat(fifoRoot, log)
    try {
      const at = await chat.seen('you> ', 0)
      chat.child.stdin.write('/plan Add a totals row\n')
      await chat.seen('  ✗ read_file: read_file: "README.md" is not a regular file\n', at)
      await chat.seen('review [1/2/3/4]> ', at)
      const sent = performance.now()
      chat.child.kill('SIGTERM')
      expect(await chat.exited).toEqual({ code: 0, signal: null })
      console.info(`chat at its review: ended ${Math.round(performance.now() - sent)} ms after SIGTERM`)
      // The review settled as reloaded (R60) and the log was closed.
      expect(chat.out()).toMatch(new RegExp(`\nlog: ${log} \\(\\d+ events\\)\n`))
      expect((await readLog(log)).filter((event) => event.type === 'plan/review').map((event) => event.data.outcome)).toEqual(['reloaded'])
    } finally {
      chat.child.kill('SIGKILL')
      // Only the code before the fix had it open, blocked until a writer came: let it go.
      try {
        closeSync(openSync(join(fifoRoot, 'README.md'), constants.O_WRONLY | constants.O_NONBLOCK))
      } catch {
        // nobody reads it
      }
      await rm(fifoRoot, { recursive: true, force: true })
    }
  })
})

/** A fake OpenAI chat-completions server: it streams a plan in plan mode, else plain text. */
interface FakeOpenAi {
  url: string
  requests: { authorization: string | undefined; body: { model: string; messages: { role: string; content: unknown }[]; tools?: { function: { name: string } }[] } }[]
  close(): Promise<void>
}

async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const requests: FakeOpenAi['requests'] = []
  const server: Server = createServer((request, response) => {
    let raw = ''
    request.on('data', (chunk) => (raw += String(chunk)))
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404).end()
        return
      }
      const body = JSON.parse(raw) as FakeOpenAi['requests'][number]['body']
      requests.push({ authorization: request.headers.authorization, body })
      const system = String(body.messages.find((message) => message.role === 'system')?.content ?? '')
      const last = body.messages.at(-1)!
      const chunk = (delta: unknown, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      if (system.includes(CHAT_SECTION) && last.role !== 'tool') {
        const args = JSON.stringify({ plan: '# Fake plan\n\n1. Do **it**.' })
        response.write(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'exit_plan_mode', arguments: args } }] }))
        response.write(chunk({}, 'tool_calls'))
      } else {
        response.write(chunk({ role: 'assistant', content: last.role === 'tool' ? 'Carried out ' : 'Hello from ' }))
        response.write(chunk({ content: last.role === 'tool' ? 'the fake plan.' : 'the fake server.' }))
        response.write(chunk({}, 'stop'))
      }
      response.end('data: [DONE]\n\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

describe('plan-mode chat with a real provider (a fake OpenAI-compatible server)', () => {
  let fake: FakeOpenAi
  beforeAll(async () => {
    fake = await startFakeOpenAi()
  })
  afterAll(() => fake.close())

  it('R101, R102: 3 approves into a fresh context (the next request holds only the handoff), 4 leaves plan mode without carrying the plan out', async () => {
    const fresh = startChat(['--provider', 'openai', '--base-url', fake.url, '--model', 'fake-model', '--no-color', '--log', newLog()], {
      env: { OPENAI_API_KEY: 'test-key' },
    })
    const from = fake.requests.length
    await converse(fresh, [
      ['you> ', 'Hi'],
      ['you> ', '/plan Plan something.'],
      ['review [1/2/3/4]> ', '3'],
      ['you> ', '/quit'],
    ])
    expect(await fresh.done).toBe(0)
    const handoff = 'The user approved this plan (v1) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.\n\nThe plan:\n\n# Fake plan\n\n1. Do **it**.'
    const afterApproval = fake.requests.slice(from).at(-1)!.body.messages
    expect(afterApproval.filter((message) => message.role !== 'system')).toEqual([{ role: 'user', content: handoff }])
    expect(fresh.out()).toContain('(a fresh context: the earlier conversation was set aside; it holds plan v1 and the decisions made)')

    const leave = startChat(['--provider', 'openai', '--base-url', fake.url, '--model', 'fake-model', '--no-color', '--log', newLog()], {
      env: { OPENAI_API_KEY: 'test-key' },
    })
    await converse(leave, [
      ['you> ', '/plan Plan something.'],
      ['review [1/2/3/4]> ', '4'],
      ['you> ', '/quit'],
    ])
    expect(await leave.done).toBe(0)
    expect(leave.out()).toContain('  ✗ exit_plan_mode: The user left plan mode without carrying out the plan; stop here and wait for their message.')
    expect(leave.out()).toContain('  · plan mode off from this step')
    fake.requests.splice(from) // the other tests read the server's requests from the start
  })

  it('R18, R40: sends the section only in plan mode, offers exit_plan_mode in both, and the review works', async () => {
    const chat = startChat(['--provider', 'openai', '--base-url', fake.url, '--model', 'fake-model', '--no-color', '--log', newLog()], {
      env: { OPENAI_API_KEY: 'test-key' },
    })
    await converse(chat, [
      ['you> ', 'Hi'],
      ['you> ', '/plan Plan something.'],
      ['review [1/2/3/4]> ', '1'],
      ['you> ', '/quit'],
    ])
    expect(await chat.done).toBe(0)

    expect(chat.out().split('\n')[0]).toBe(`plan-mode chat · openai fake-model at ${fake.url}`)
    expect(linesFrom(chat.out(), 'you> Hi', 'you> ')).toEqual(['you> Hi', 'Hello from the fake server.'])
    expect(linesFrom(chat.out(), '── Plan review ────────────────────────────────────────────', 'Approve')).toEqual([
      '── Plan review ────────────────────────────────────────────',
      '  Fake plan',
      '',
      '  1. Do it.',
      '────────────────────────────────────────────────────────────',
      'Plan v1',
    ])
    expect(linesFrom(chat.out(), 'review [1/2/3/4]> 1', 'you> ')).toEqual([
      'review [1/2/3/4]> 1',
      '  ← exit_plan_mode: Plan approved — plan mode exited; carry out the plan starting with your next step.',
      '  · plan mode off from this step',
      'Carried out the fake plan.',
    ])

    const systems = fake.requests.map((request) => String(request.body.messages.find((message) => message.role === 'system')?.content))
    expect(systems.map((system) => system.includes(CHAT_SECTION))).toEqual([false, true, false])
    for (const request of fake.requests) {
      expect(request.authorization).toBe('Bearer test-key')
      expect(request.body.model).toBe('fake-model')
      expect(request.body.tools!.map((tool) => tool.function.name)).toEqual(['list_files', 'read_file', 'exit_plan_mode'])
    }
    // R32, R56: the plan-mode request carried the /plan message, then the notice of the switch.
    const planRequest = fake.requests[1]!.body.messages
    expect(planRequest.slice(-2)).toEqual([
      { role: 'user', content: 'Plan something.' },
      { role: 'user', content: 'The user switched this session to plan mode.' },
    ])
    // The model saw the approval's result text (R50).
    expect(fake.requests[2]!.body.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: 'Plan approved — plan mode exited; carry out the plan starting with your next step.',
    })
  })
})
