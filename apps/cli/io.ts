/** The CLI's plumbing: where output goes, colours, and the one error type that means "exit 2". */
import { constants } from 'node:os'

/** A stream the CLI writes to (`process.stdout`, or a collector in tests). */
export interface CliStream {
  write(text: string): unknown
  /** Colours are used by default only on a terminal. */
  isTTY?: boolean
}

/** A stream the CLI reads lines from (`process.stdin`, or a `PassThrough` in tests). */
export type CliInput = NodeJS.ReadableStream & { isTTY?: boolean }

/** What `main` runs against: the streams, a stop signal, Ctrl-C, the environment. */
export interface CliIo {
  stdout: CliStream
  stderr: CliStream
  /** Where `chat` reads the user's lines; defaults to `process.stdin`. */
  stdin?: CliInput
  /**
   * Stops the long-running modes (`demo --visualize`, `visualize`, `chat`), and the reading of a
   * log (`inspect`, `visualize <file>`). `bin.ts` aborts it, with a {@link CliStopped} reason, on
   * SIGTERM, and on Ctrl-C (SIGINT) unless a command took Ctrl-C through `onInterrupt` (R108);
   * without one they run until the process ends.
   */
  signal?: AbortSignal
  /**
   * Lets an interactive command take Ctrl-C itself (`chat` stops the running turn with it):
   * while a listener is subscribed, `bin.ts` calls it on SIGINT instead of aborting `signal`.
   * @returns the unsubscribe function.
   */
  onInterrupt?(listener: () => void): () => void
  /** Environment (`NO_COLOR`, API keys); defaults to `process.env`. */
  env?: Record<string, string | undefined>
  /** The directory `chat`'s file tools may read; defaults to `process.cwd()`. */
  cwd?: string
}

/** Bad input: `main` prints its message as one line on stderr and returns exit code 2. */
export { CliError } from '../shared/cli-error.js'

/**
 * Why `bin.ts` aborts `CliIo.signal`: the signal that asked the CLI to stop (R108). A command
 * whose work the stop cut short (a log still being read) throws it, and `main` exits with
 * {@link CliStopped.exitCode}.
 */
export class CliStopped extends Error {
  override readonly name = 'CliStopped'
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(`stopped by ${signal}`)
  }

  /** 128 + the signal's number, as a shell reports a process the signal ended: 130 for SIGINT, 143 for SIGTERM. */
  get exitCode(): number {
    return 128 + constants.signals[this.signal]
  }
}

/** The exit code of a command a stop cut short: the {@link CliStopped} one, else 130 (an in-process caller's abort reads as Ctrl-C). */
export function stoppedExitCode(reason: unknown): number {
  return reason instanceof CliStopped ? reason.exitCode : 130
}

/** Lets the event loop run (signals, sockets, timers) before going on, and throws the stop's reason once `signal` has aborted. */
export async function yieldUnlessStopped(signal: AbortSignal | undefined): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
  signal?.throwIfAborted()
}

/** The message of any thrown value: an Error's own message, else its string form. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** ANSI styles; every one is the identity when colours are off. */
export interface Styles {
  bold(text: string): string
  dim(text: string): string
  italic(text: string): string
  red(text: string): string
  green(text: string): string
  yellow(text: string): string
  blue(text: string): string
  magenta(text: string): string
  cyan(text: string): string
}

/** Styles that colour when `enabled`, else leave the text as it is. */
export function styles(enabled: boolean): Styles {
  const style = (open: number, close: number) => (text: string) => (enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text)
  return {
    bold: style(1, 22),
    dim: style(2, 22),
    italic: style(3, 23),
    red: style(31, 39),
    green: style(32, 39),
    yellow: style(33, 39),
    blue: style(34, 39),
    magenta: style(35, 39),
    cyan: style(36, 39),
  }
}

/** Colours on a terminal unless `NO_COLOR` is set; `--no-color` turns them off anyway. */
export function useColor(io: CliIo, noColor: boolean): boolean {
  const env = io.env ?? process.env
  return !noColor && io.stdout.isTTY === true && !env.NO_COLOR
}

/** Waits until `signal` aborts (forever without one). */
export function untilAborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!signal) return
    if (signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })
}
