/**
 * The CLI's log files. `newLogPath` picks where `demo` and `chat` write a new log; `openNewLog`
 * opens it.
 *
 * `loadLogFile` reads a JSONL session log read-only, for `plan-mode inspect` and `plan-mode visualize`.
 * `openJsonlSessionLog` is the writer: it takes the log's lock and cuts a torn last line. A
 * viewer must do neither, so this reader only uses the writer's parser (its checks and its error
 * format `<path>:<line>: <reason>`).
 */
import { mkdtemp, readFile, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { SessionEvent } from 'xstate-plan-mode'
import { openJsonlSessionLog, parseJsonlLog, type JsonlSessionLog } from 'xstate-plan-mode/node'
import { CliError } from './io.js'

/** The largest log `inspect` and `visualize` read (they hold it in memory). */
const MAX_LOG_BYTES = 2 ** 30

/** A log loaded read-only. */
export interface LoadedLogFile {
  /** The events, seq 1, 2, … in order. */
  events: SessionEvent[]
  /** The 1-based line number of a torn last line (a crash during a write) that was skipped. */
  tornLine?: number
}

/**
 * Loads a JSONL session log without writing anything (no lock, no repair). A last line without
 * its newline that is not JSON is a torn write: it is skipped and reported in `tornLine`, as the
 * writer would cut it.
 * @throws CliError `<path>: no such file` when the file is missing, and
 *   `<path>:<line>: <reason>` for a corrupt line.
 */
export async function loadLogFile(path: string): Promise<LoadedLogFile> {
  let bytes: Buffer
  try {
    // Only a regular file, and at most MAX_LOG_BYTES: a FIFO would block in the kernel and
    // /dev/zero would grow without end, both deaf to SIGTERM.
    const found = await stat(path)
    if (found.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' })
    if (!found.isFile()) throw new CliError(`${path}: not a regular file, not a JSONL log`)
    if (found.size > MAX_LOG_BYTES) throw new CliError(`${path}: over ${MAX_LOG_BYTES / 2 ** 30} GiB; too large to read`)
    bytes = await readFile(path)
  } catch (error) {
    if (error instanceof CliError) throw error
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT') throw new CliError(`${path}: no such file`)
    if (code === 'EISDIR') throw new CliError(`${path}: is a directory, not a JSONL log`)
    throw new CliError(`${path}: ${error instanceof Error ? error.message : String(error)}`)
  }
  try {
    // The writer's own parser (one home for the format); reading never cuts or locks anything.
    const { events, torn } = parseJsonlLog(path, bytes)
    // Bytes and not one event: not a session log at all (not a crash's torn line).
    if (events.length === 0 && torn) throw new CliError(`${path}: not a JSONL session log (line 1 is not an event)`)
    return torn ? { events, tornLine: torn.line } : { events }
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error))
  }
}

/**
 * Where a command writes a new session log: `log` when given, else `session.jsonl` in a new
 * temp directory named with `tempPrefix`. An existing log is never written over: appending to
 * another session's log would mix two sessions' plan state.
 * @param writer who writes it, for the error (`the demo`, `chat`).
 * @throws CliError `<log>: already exists; <writer> writes a new log (give another --log path)`.
 */
export async function newLogPath(log: string | undefined, tempPrefix: string, writer: string): Promise<string> {
  if (log === undefined) return join(await mkdtemp(join(tmpdir(), tempPrefix)), 'session.jsonl')
  if (await stat(log).catch(() => undefined)) {
    throw new CliError(`${log}: already exists; ${writer} writes a new log (give another --log path)`)
  }
  const folder = dirname(log)
  const found = await stat(folder).catch(() => undefined)
  if (!found?.isDirectory()) throw new CliError(`${log}: cannot write the log here: ${folder} is not a directory`)
  return log
}

/**
 * Opens a new session log for writing.
 * @throws CliError `<log>: cannot write the log here: <reason>` (the lock file's name left out).
 */
export async function openNewLog(path: string): Promise<JsonlSessionLog> {
  try {
    return await openJsonlSessionLog(path)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    const reason = typeof code === 'string' ? code : error instanceof Error ? error.message.split('\n')[0] : String(error)
    throw new CliError(`${path}: cannot write the log here: ${reason}`)
  }
}
