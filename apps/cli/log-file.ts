/**
 * The CLI's log files. `newLogPath` picks where `demo` and `chat` write a new log; `openNewLog`
 * opens it.
 *
 * `loadLogFile` reads a JSONL session log read-only, for `plan-mode inspect` and `plan-mode visualize`.
 * `openJsonlSessionLog` is the writer: it takes the log's lock and cuts a torn last line. A
 * viewer must do neither. It reads the file as a stream, line by line and within bounds (R108),
 * where the writer's `parseJsonlLog` takes the whole file at once: each line is read by the
 * library's own line reader (`readJsonlLogLine`: the writer's checks, in its words
 * `<path>:<line>: <reason>`, R61) and a torn last line is told by the library's rule
 * (`isTornLastLine`), so the two cannot drift apart.
 */
import { constants } from 'node:fs'
import { mkdtemp, open, stat, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { SessionEvent } from 'xstate-plan-mode'
import { isTornLastLine, openJsonlSessionLog, readJsonlLogLine, type JsonlSessionLog } from 'xstate-plan-mode/node'
import { CliError } from './io.js'

/** The largest log `inspect` and `visualize` read (they hold its events in memory). */
const MAX_LOG_BYTES = 2 ** 30
/** The longest line they read (R108): a longer one is refused once its bytes pass the bound, never held whole. */
export const MAX_LOG_LINE_BYTES = 16 * 2 ** 20
/** How much is read at a time. Each read lets the event loop run, so a stop is seen within one. */
const READ_CHUNK_BYTES = 2 ** 20

/** A log loaded read-only. */
export interface LoadedLogFile {
  /** The events, seq 1, 2, … in order. */
  events: SessionEvent[]
  /** The 1-based line number of a torn last line (a crash during a write) that was skipped. */
  tornLine?: number
}

/**
 * Loads a JSONL session log without writing anything (no lock, no repair), reading it in chunks
 * (R108). A last line without its newline, or a complete last line that is not JSON, is a torn
 * write: it is skipped and reported in `tornLine`, as the writer would cut it.
 * @param signal stops the reading: the load rejects with its reason before the next chunk.
 * @throws CliError `<path>: no such file` when the file is missing, `<path>: not a regular file,
 *   not a JSONL log` for a FIFO or a device, `<path>:<line>: line longer than 16 MiB`, and
 *   `<path>:<line>: <reason>` for a corrupt line.
 */
export async function loadLogFile(path: string, signal?: AbortSignal): Promise<LoadedLogFile> {
  const handle = await openLogFile(path)
  try {
    return await readLogLines(path, handle, signal)
  } finally {
    await handle.close().catch(() => {})
  }
}

/** Opens a regular file of at most MAX_LOG_BYTES for reading, never waiting on a FIFO. */
async function openLogFile(path: string): Promise<FileHandle> {
  // Only a regular file, and at most MAX_LOG_BYTES: a FIFO would block in the kernel and
  // /dev/zero would grow without end, both deaf to SIGTERM.
  const notRegular = () => new CliError(`${path}: not a regular file, not a JSONL log`)
  try {
    const found = await stat(path)
    if (found.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' })
    if (!found.isFile()) throw notRegular()
    if (found.size > MAX_LOG_BYTES) throw tooLarge(path)
    // O_NONBLOCK: a FIFO swapped in after the stat opens without waiting for a writer; fstat
    // checks what was really opened.
    const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK)
    const opened = await handle.stat().catch(async (error: unknown) => {
      await handle.close().catch(() => {})
      throw error
    })
    if (!opened.isFile()) {
      await handle.close().catch(() => {})
      throw notRegular()
    }
    return handle
  } catch (error) {
    if (error instanceof CliError) throw error
    const code = (error as { code?: unknown }).code
    if (code === 'ENOENT') throw new CliError(`${path}: no such file`)
    if (code === 'EISDIR') throw new CliError(`${path}: is a directory, not a JSONL log`)
    throw new CliError(`${path}: ${error instanceof Error ? error.message : String(error)}`)
  }
}

function tooLarge(path: string): CliError {
  return new CliError(`${path}: over ${MAX_LOG_BYTES / 2 ** 30} GiB; too large to read`)
}

/**
 * The events of an open log, read a chunk at a time. Each complete line is checked once the next
 * one is known: only the last line may be a torn write (the writer's rule).
 */
async function readLogLines(path: string, handle: FileHandle, signal: AbortSignal | undefined): Promise<LoadedLogFile> {
  const events: SessionEvent[] = []
  const chunk = Buffer.alloc(READ_CHUNK_BYTES)
  /** The start of the line being read, copied out of `chunk` (which the next read overwrites). */
  let partial: Buffer[] = []
  let partialBytes = 0
  /** Complete lines so far. */
  let lines = 0
  /** The last complete line, not checked yet. */
  let held: string | undefined
  let total = 0
  const tooLong = () => new CliError(`${path}:${lines + 1}: line longer than ${MAX_LOG_LINE_BYTES / 2 ** 20} MiB`)
  for (;;) {
    signal?.throwIfAborted()
    let bytesRead: number
    try {
      ;({ bytesRead } = await handle.read(chunk, 0, chunk.length, null))
    } catch (error) {
      throw new CliError(`${path}: ${error instanceof Error ? error.message : String(error)}`)
    }
    if (bytesRead === 0) break
    // A UTF-8 byte order mark (an editor may add one) is not part of the first line.
    let start = total === 0 && bytesRead >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0
    total += bytesRead
    if (total > MAX_LOG_BYTES) throw tooLarge(path)
    const read = chunk.subarray(0, bytesRead)
    for (;;) {
      // 0x0a never occurs inside a multi-byte UTF-8 sequence, so text lines are byte lines.
      const end = read.indexOf(0x0a, start)
      if (end === -1) {
        partialBytes += bytesRead - start
        if (partialBytes > MAX_LOG_LINE_BYTES) throw tooLong()
        partial.push(Buffer.from(read.subarray(start)))
        break
      }
      if (partialBytes + (end - start) > MAX_LOG_LINE_BYTES) throw tooLong()
      const line = Buffer.concat([...partial, read.subarray(start, end)]).toString('utf8')
      partial = []
      partialBytes = 0
      if (held !== undefined) events.push(readEventLine(path, lines, held))
      lines++
      held = line
      start = end + 1
    }
  }
  let tornLine: number | undefined
  if (partialBytes > 0) {
    // The last line has no newline: the writer's crash cut it.
    tornLine = lines + 1
    if (held !== undefined) events.push(readEventLine(path, lines, held))
  } else if (held !== undefined) {
    // Complete but garbage: a write the crash left as zeros or a fragment with a newline in it.
    if (isTornLastLine(held)) tornLine = lines
    else events.push(readEventLine(path, lines, held))
  }
  // Bytes and not one event: not a session log at all (not a crash's torn line).
  if (events.length === 0 && tornLine !== undefined) throw new CliError(`${path}: not a JSONL session log (line 1 is not an event)`)
  return tornLine !== undefined ? { events, tornLine } : { events }
}

/**
 * Line `line` of the log as an event, read by the library's line reader (the writer's checks).
 * @throws CliError `<path>:<line>: <reason>`.
 */
function readEventLine(path: string, line: number, text: string): SessionEvent {
  try {
    return readJsonlLogLine(path, line, text)
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
