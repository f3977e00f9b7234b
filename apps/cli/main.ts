/**
 * The `plan-mode` command line: `demo`, `inspect`, `visualize`, `chat`. `main` runs in-process
 * (tests call it with collecting streams); `bin.ts` wires it to the process.
 */
import { createRequire } from 'node:module'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { CliError, stoppedExitCode, styles, useColor, type CliIo } from './io.js'

export type { CliIo, CliStream } from './io.js'
export { CliError, CliStopped } from './io.js'

const USAGE = `Usage: plan-mode <command> [options]

Commands:
  demo [--log file.jsonl] [--visualize] [--port N] [--delay MS] [--no-color]
                 a scripted agent runs the whole plan-mode arc; prints its timeline
  inspect <file.jsonl> [--at SEQ] [--json] [--no-color]
                 the log's plan-mode state per event, and its plan reviews
  visualize [file.jsonl] [--port N]
                 serves the live visualizer page; replays a log file into it
  chat [--provider NAME] [--model ID] [--base-url URL] [--log file.jsonl] [--no-color]
                 an interactive agent with plan mode (a real model, or the offline one)

Run plan-mode <command> --help for a command's options; plan-mode --version prints the version.
`

const HELP: Record<string, string> = {
  demo: `Usage: plan-mode demo [--log file.jsonl] [--visualize] [--port N] [--delay MS] [--no-color]

A scripted agent (an offline model in the AI SDK loop, with withPlanMode) runs the whole arc:
/plan <message>, planning steps, a mid-turn /plan off then /plan (a round trip: no notice),
exit_plan_mode, keep planning with feedback, a revised plan, approval, execution steps.
Prints the timeline and writes the session's JSONL log.

Options:
  --log file.jsonl  where the log goes (a new file; default: a new temp file, path printed)
  --visualize       also serve the visualizer page and show the agent live; Ctrl-C stops
  --port N          the visualizer's port (default 5178; 0 picks a free one)
  --delay MS        pause before each step (default 0; 700 with --visualize)
  --no-color        plain text (also when NO_COLOR is set or stdout is not a terminal)
`,
  inspect: `Usage: plan-mode inspect <file.jsonl> [--at SEQ] [--json] [--no-color]

Reads a session log (read-only: no lock is taken, nothing is repaired) and prints one row per
event: seq, type, F (plan mode after the event), pending (a selection on its way), K (what the
model was last told: the last request/header or approved review), then the state and the plan
review history.

Options:
  --at SEQ    stop at event SEQ: the table up to it and the state there
  --json      print { file, at, events, state, reviews } as JSON
  --no-color  plain text
`,
  visualize: `Usage: plan-mode visualize [file.jsonl] [--port N]

Serves the visualizer page on 127.0.0.1 until Ctrl-C. Inspectors send to its /inspect socket.
With a file, its events are replayed into the page (as plan-mode.log messages, with the chart).

Options:
  --port N    the port (default 5178; 0 picks a free one)
`,
  chat: `Usage: plan-mode chat [--provider NAME] [--model ID] [--base-url URL] [--log file.jsonl] [--no-color]

An interactive agent with plan mode in the AI SDK loop (streamText + withPlanMode). It reads the
current directory with read-only tools (list_files, read_file) and changes nothing.
Type a request, or:
  /plan            enter plan mode: the agent explores, then asks you to approve a plan
  /plan <message>  enter plan mode and send the message
  /plan off        leave plan mode
  /quit            exit (also Ctrl-D, or Ctrl-C when idle)
A plan review shows the plan and asks Approve (1) or Keep planning (2). Keep planning lists the
plan's lines by number: comment on any of them (each comment quotes its line), then give your
feedback; the model gets both.
While the agent works, /plan and /plan off apply from its next step, other text goes with its
next step, and Ctrl-C stops the turn. Piped input is read as a script: each line waits for
the prompt it answers.

Options:
  --provider NAME   openai, anthropic, gateway (the Vercel AI Gateway) or offline (a scripted
                    model, no network). Default: the first whose key is set of OPENAI_API_KEY,
                    ANTHROPIC_API_KEY, AI_GATEWAY_API_KEY; else offline
  --model ID        the model (default: gpt-5-mini, claude-sonnet-4-5, openai/gpt-5-mini)
  --base-url URL    an OpenAI-compatible server (its chat-completions API; needs --model; the
                    key is optional), e.g. http://127.0.0.1:11434/v1; with anthropic or
                    gateway, a proxy of that API
  --log file.jsonl  where the session log goes (a new file; default: a new temp file, path printed)
  --no-color        plain text (also when NO_COLOR is set or stdout is not a terminal)

openai needs @ai-sdk/openai and anthropic @ai-sdk/anthropic (npm install @ai-sdk/openai@3).
`,
}

type Options = NonNullable<ParseArgsConfig['options']>

const COMMON: Options = { help: { type: 'boolean', short: 'h' } }
const OPTIONS: Record<string, Options> = {
  demo: {
    ...COMMON,
    log: { type: 'string' },
    visualize: { type: 'boolean' },
    port: { type: 'string' },
    delay: { type: 'string' },
    'no-color': { type: 'boolean' },
  },
  inspect: { ...COMMON, at: { type: 'string' }, json: { type: 'boolean' }, 'no-color': { type: 'boolean' } },
  visualize: { ...COMMON, port: { type: 'string' } },
  chat: {
    ...COMMON,
    provider: { type: 'string' },
    model: { type: 'string' },
    'base-url': { type: 'string' },
    log: { type: 'string' },
    'no-color': { type: 'boolean' },
  },
}
const POSITIONALS: Record<string, [min: number, max: number]> = { demo: [0, 0], inspect: [1, 1], visualize: [0, 1], chat: [0, 0] }

/** The commands that hold something to close when stopped: a log, a review, a server. */
const CLOSING_COMMANDS = new Set(['demo', 'visualize', 'chat'])

/**
 * Whether the command `argv` names closes something when stopped, and so takes SIGTERM and
 * Ctrl-C through `io.signal` (R108). The others (`inspect`, `--help`, …) hold nothing to close:
 * the signal's default action ends them at once, whatever they are doing.
 */
export function closesOnStop(argv: readonly string[]): boolean {
  return CLOSING_COMMANDS.has(argv[0] ?? '')
}

/** How long a stopped command may take to close by default (R108): with start-up noise, the process is gone within a second. */
export const DEFAULT_STOP_GRACE_MS = 500

/**
 * How long a stopped command may take to close before it is ended with 128 + the signal's
 * number (R108): `PLAN_MODE_STOP_GRACE_MS` in `env` (an integer 0..2147483647, the longest
 * timer Node keeps), else {@link DEFAULT_STOP_GRACE_MS}. A slow machine, or a test running
 * beside others, gives it more.
 * @throws CliError `PLAN_MODE_STOP_GRACE_MS must be an integer 0..2147483647, not "<value>"`.
 */
export function stopGraceMs(env: Record<string, string | undefined>): number {
  const value = env.PLAN_MODE_STOP_GRACE_MS
  return value === undefined ? DEFAULT_STOP_GRACE_MS : integer('PLAN_MODE_STOP_GRACE_MS', value, 0, 2 ** 31 - 1)
}

/**
 * Runs the CLI.
 * @param argv the arguments after the program name, e.g. `['inspect', 'session.jsonl']`.
 * @param io where output goes, and the signal that stops the serving modes.
 * @returns the exit code: 0 on success, 2 on bad input (one line on stderr), 1 on a failure,
 *   128 + the signal's number when `io.signal` cut the command's work short (R108: 143 for
 *   SIGTERM, 130 for Ctrl-C).
 */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      io.stdout.write(USAGE)
      return command === undefined ? 2 : 0
    }
    if (command === '--version' || command === '-v') {
      io.stdout.write(`${version()}\n`)
      return 0
    }
    const options = OPTIONS[command]
    if (!options) throw new CliError(`unknown command "${command}" (commands: demo, inspect, visualize, chat; see plan-mode --help)`)
    let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] }
    try {
      parsed = parseArgs({ args: joinNegativeValues(rest, options), options, allowPositionals: true, strict: true }) as typeof parsed
    } catch (error) {
      const code = (error as { code?: unknown }).code
      const option = /'(-[^']*)'/.exec(firstLine(error))?.[1]
      if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) throw new CliError(`${command}: unknown option ${option} (see plan-mode ${command} --help)`)
      throw new CliError(`${command}: ${firstLine(error)}`)
    }
    const { values, positionals } = parsed
    if (values.help) {
      io.stdout.write(HELP[command]!)
      return 0
    }
    // bin.ts gives a stopped command this long to close: a bad value is refused before anything starts (R108).
    if (closesOnStop(argv)) stopGraceMs(io.env ?? process.env)
    const [min, max] = POSITIONALS[command]!
    if (positionals.length < min) throw new CliError(`${command}: missing <file.jsonl> (see plan-mode ${command} --help)`)
    if (positionals.length > max) throw new CliError(`${command}: unexpected argument "${positionals[max]}"`)
    const color = useColor(io, values['no-color'] === true)
    const s = styles(color)

    switch (command) {
      case 'demo': {
        const { runDemo } = await import('./demo.js')
        return await runDemo(
          {
            styles: s,
            visualize: values.visualize === true,
            ...(typeof values.log === 'string' ? { log: values.log } : {}),
            ...(typeof values.port === 'string' ? { port: integer('--port', values.port, 0, 65535) } : {}),
            ...(typeof values.delay === 'string' ? { delayMs: integer('--delay', values.delay, 0, 60_000) } : {}),
          },
          io,
        )
      }
      case 'inspect': {
        const { runInspect } = await import('./inspect.js')
        const at = typeof values.at === 'string' ? integer('--at', values.at, 1, Number.MAX_SAFE_INTEGER) : undefined
        return await runInspect({ file: positionals[0]!, json: values.json === true, styles: s, ...(at !== undefined ? { at } : {}) }, io)
      }
      case 'visualize': {
        const { runVisualize } = await import('./visualize.js')
        const port = typeof values.port === 'string' ? integer('--port', values.port, 0, 65535) : 5178
        return await runVisualize({ port, ...(positionals[0] !== undefined ? { file: positionals[0] } : {}) }, io)
      }
      default: {
        const { runChat } = await import('./chat.js')
        const { provider, model, 'base-url': baseUrl, log } = values
        return await runChat(
          {
            color,
            ...(typeof provider === 'string' ? { provider } : {}),
            ...(typeof model === 'string' ? { model } : {}),
            ...(typeof baseUrl === 'string' ? { baseUrl } : {}),
            ...(typeof log === 'string' ? { log } : {}),
          },
          io,
        )
      }
    }
  } catch (error) {
    // A stop that came while a log was still being read: nothing to report, the work is not done.
    if (io.signal?.aborted && error === io.signal.reason) return stoppedExitCode(error)
    const peer = missingPeer(error)
    if (peer !== undefined) {
      io.stderr.write(`plan-mode: ${command} needs the \`${peer}\` package (npm install ${PEERS[peer]})\n`)
      return 2
    }
    if (error instanceof CliError) {
      io.stderr.write(`plan-mode: ${error.message}\n`)
      return 2
    }
    io.stderr.write(`plan-mode: ${firstLine(error)}\n`)
    return 1
  }
}

/**
 * The optional peer dependencies some commands load, and what installs each: `ai` (demo, chat),
 * `ws` and `@statelyai/inspect` (visualize, demo --visualize). A missing one is bad input (R110).
 */
const PEERS = { ai: 'ai@6', ws: 'ws@8', '@statelyai/inspect': '@statelyai/inspect@0.7' } as const

/** The optional peer `error` says is not installed (Node's module-not-found, or R110's error of the inspect entry), if any. */
function missingPeer(error: unknown): keyof typeof PEERS | undefined {
  const code = (error as { code?: unknown }).code
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined
  const name = /^Cannot find (?:package|module) '((?:@[^/']+\/)?[^/']+)|needs the `([^`]+)` package/.exec(firstLine(error))
  const peer = name?.[1] ?? name?.[2]
  return peer !== undefined && Object.hasOwn(PEERS, peer) ? (peer as keyof typeof PEERS) : undefined
}

function integer(name: string, text: string, min: number, max: number): number {
  const value = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new CliError(`${name} must be an integer ${min}..${max}, not "${text}"`)
  }
  return value
}

/** The package's version, from its package.json (found by the package's own name: from `apps/cli/` in a clone, from `dist/` when built). */
function version(): string {
  return (createRequire(import.meta.url)('xstate-plan-mode/package.json') as { version: string }).version
}

/**
 * `--at -1` as `--at=-1`: a string option's value that starts with `-` is the value, so that the
 * option's own check answers it ("must be an integer"), not the parser ("ambiguous").
 */
function joinNegativeValues(args: string[], options: Options): string[] {
  const joined: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const name = arg.startsWith('--') ? arg.slice(2) : undefined
    const next = args[i + 1]
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`)
      i++
    } else joined.push(arg)
  }
  return joined
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!
}
