import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { link, open, readFile, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises'
import { resolve } from 'node:path'
import { validatePlanModeEvent } from '../log/kinds.js'
import type { PlanModeLogger, SessionEvent, SessionLog } from '../types.js'
import { syncDirectory } from './fs-durable.js'

/** Options of `openJsonlSessionLog`. */
export interface JsonlSessionLogOptions {
  /**
   * fdatasync every write before acknowledging it (default `true`). Without it an acknowledged
   * event survives a crash of the process but not a crash of the machine.
   */
  fsync?: boolean
  /** Where the torn-line and failing-subscriber warnings go (default `console`). */
  logger?: PlanModeLogger
}

/**
 * A session log kept in a JSON Lines file, one event `{"seq":n,"type":"...","data":...}` a line.
 * `append` always returns a promise, settled once the line is on disk (see `openJsonlSessionLog`).
 */
export interface JsonlSessionLog extends SessionLog {
  /** The log file's path, as given to `openJsonlSessionLog`. */
  readonly path: string
  /**
   * Appends one event. Resolves with the stored event once its line is written (and
   * fdatasync'ed unless `fsync: false`); subscribers are told before it resolves.
   * The event's `data` is the JSON round trip of `data`: what a reopened log will hold.
   * @throws (rejects) TypeError when `type` is not a string or `data` is not JSON-serializable,
   * the R61 validator error for an invalid `plan/mode`, the file system's error when the write
   * fails, and an Error when the log is closed or an append issued before this one failed.
   */
  append(type: string, data: unknown): Promise<SessionEvent>
  /** Waits for the appends already issued, closes the file and removes the lock. Idempotent. */
  close(): Promise<void>
}

/** The most bytes one write carries when appends pile up behind a slow fsync. */
const MAX_BATCH_BYTES = 1 << 20

/** Node's error codes live on `code`; anything else has none. */
function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code
  return typeof code === 'string' ? code : undefined
}

function ignoreMissing(error: unknown): void {
  if (errorCode(error) !== 'ENOENT') throw error
}

// ---------------------------------------------------------------------------------------------
// The single-writer lock
// ---------------------------------------------------------------------------------------------

/**
 * Lock files this process holds, by absolute path. Kept on `globalThis` so that the ESM and the
 * CJS build loaded side by side still see each other's locks.
 */
const HELD_LOCKS: Set<string> = ((globalThis as unknown as Record<symbol, Set<string> | undefined>)[
  Symbol.for('xstate-plan-mode.jsonl-locks')
] ??= new Set<string>())

/** Hard links are missing on some file systems (FAT, some network and FUSE mounts). */
const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV'])

interface HeldLock {
  readonly lockPath: string
  readonly key: string
}

/** The holder a lock file names: its pid, the host it runs on and when its process started, when the file says (R75). */
interface LockHolder {
  readonly pid: number
  readonly host: string | undefined
  /** The holder process's start, in seconds since the epoch. */
  readonly started: number | undefined
}

/**
 * When this process started, in seconds since the epoch. The same in every thread of the process
 * (`process.uptime()` is the process's), so a lock another thread holds is told from one a dead
 * process with our pid left behind.
 */
const PROCESS_STARTED = Math.round((Date.now() - process.uptime() * 1000) / 1000)

function lockedError(path: string, lockPath: string, holder: LockHolder): Error {
  const where = holder.host !== undefined && holder.host !== hostname() ? ` on host ${holder.host}` : ''
  return new Error(`${path} is locked by process ${holder.pid}${where} (${lockPath}); a session log has one writer at a time`)
}

/** A pid that `process.kill(pid, 0)` does not report gone (EPERM: alive, someone else's). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return errorCode(error) !== 'ESRCH'
  }
}

/**
 * Creates `lockPath` holding our pid, atomically: the content is written to a private file
 * first and hard-linked into place, so no other process ever reads a lock file without a pid
 * (with a bare `wx` create there is a moment when it is empty). Returns false when the lock
 * exists.
 */
async function createLockFile(lockPath: string): Promise<boolean> {
  const content = `${process.pid}\n${hostname()}\n${PROCESS_STARTED}\n`
  const temp = `${lockPath}.${process.pid}-${randomBytes(4).toString('hex')}`
  await writeFile(temp, content, { flag: 'wx' })
  try {
    await link(temp, lockPath)
    return true
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    if (!LINK_UNSUPPORTED.has(errorCode(error) ?? '')) throw error
    // No hard links here: an exclusive create is the next best (the empty moment is accepted).
    try {
      await writeFile(lockPath, content, { flag: 'wx' })
      return true
    } catch (fallbackError) {
      if (errorCode(fallbackError) === 'EEXIST') return false
      throw fallbackError
    }
  } finally {
    await unlink(temp).catch(ignoreMissing)
  }
}

/**
 * The holder recorded in a lock file (`<pid>\n<host>\n<process start>\n`; a lock of an older
 * version holds the pid alone, or the pid and host): `null` when the file is gone (released meanwhile), pid 0 when it holds no pid (this
 * module never leaves such a file behind unless the machine crashed before the lock's data
 * reached the disk).
 */
async function readLockHolder(lockPath: string): Promise<LockHolder | null> {
  let text: string
  try {
    text = await readFile(lockPath, 'utf8')
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null
    throw error
  }
  // Read leniently: a lock read while it is being written (no hard links) may be cut short; a
  // host cut short is another host, and so counts as alive.
  const [pid = '', host, started] = text.split('\n')
  if (!/^\d+$/.test(pid)) return { pid: 0, host: undefined, started: undefined }
  return {
    pid: Number.parseInt(pid, 10),
    host: host === undefined || host === '' ? undefined : host,
    started: started !== undefined && /^\d+$/.test(started) ? Number.parseInt(started, 10) : undefined,
  }
}

/**
 * Whether a lock's holder may still be writing. A holder on another host (another machine, or a
 * container with its own pid namespace sharing the volume) cannot be checked, so it counts as
 * alive. On this host a lock with our own pid is held by another thread of this process when it
 * names our process's start, else stale: pids are unique among live processes of a host, so its
 * writer died and a restart (a container's, most often) gave us its pid.
 */
function holderIsAlive(holder: LockHolder): boolean {
  if (holder.pid <= 0) return false
  if (holder.host !== undefined && holder.host !== hostname()) return true
  if (holder.pid !== process.pid) return isAlive(holder.pid)
  // Our pid: another thread of this process holds it when it started when we did (give or take
  // the rounding); a process that started at another time, or an older lock, is a dead one's.
  return holder.started !== undefined && Math.abs(holder.started - PROCESS_STARTED) <= 2
}

/**
 * Takes `<path>.lock` for this process. A lock whose holder on this host is dead (ESRCH), holds
 * no pid, or carries our own pid without this process holding it (see `holderIsAlive`) is stale
 * and replaced; a lock held on another host is never taken over.
 * Not a distributed lock: two processes recovering the same stale lock at the same instant can
 * both succeed, and pid reuse by an unrelated live process blocks until the file is removed.
 * @throws Error `<path> is locked by process <pid>[ on host <host>] (<path>.lock); ...` when a
 *   holder that may be alive has it.
 */
async function acquireLock(path: string): Promise<HeldLock> {
  const lockPath = `${path}.lock`
  const key = resolve(lockPath)
  if (HELD_LOCKS.has(key)) throw lockedError(path, lockPath, { pid: process.pid, host: hostname(), started: PROCESS_STARTED })
  // Reserved before the first await, so a concurrent open in this process fails above.
  HELD_LOCKS.add(key)
  try {
    // A few rounds: each lost race means another opener came and went; more is pathological.
    for (let attempt = 0; attempt < 8; attempt++) {
      if (await createLockFile(lockPath)) return { lockPath, key }
      const holder = await readLockHolder(lockPath)
      if (holder === null) continue
      if (holderIsAlive(holder)) throw lockedError(path, lockPath, holder)
      await unlink(lockPath).catch(ignoreMissing)
    }
    throw new Error(`${path}: could not take ${lockPath}; other processes keep taking it`)
  } catch (error) {
    HELD_LOCKS.delete(key)
    throw error
  }
}

async function releaseLock(lock: HeldLock): Promise<void> {
  try {
    await unlink(lock.lockPath).catch(ignoreMissing)
  } finally {
    HELD_LOCKS.delete(lock.key)
  }
}

// ---------------------------------------------------------------------------------------------
// File helpers
// ---------------------------------------------------------------------------------------------

/** Writes all of `bytes` at `position`: a single write may be short (a full disk, a limit). */
async function writeAll(handle: FileHandle, bytes: Buffer, position: number): Promise<void> {
  let offset = 0
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, position + offset)
    if (bytesWritten <= 0) throw new Error('write made no progress')
    offset += bytesWritten
  }
}

/** Opens the log for reading and positioned writes, creating it empty when missing. */
async function openOrCreate(path: string, fsync: boolean): Promise<FileHandle> {
  try {
    return await open(path, 'r+')
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error
  }
  const handle = await open(path, 'wx+')
  if (fsync) await syncDirectory(path)
  return handle
}

/** Saves a torn line next to the log before it is cut, so the cut loses nothing. */
async function saveTornBytes(path: string, bytes: Buffer, fsync: boolean): Promise<string> {
  const stamp = Date.now()
  for (let n = 0; ; n++) {
    const savedTo = n === 0 ? `${path}.torn-${stamp}` : `${path}.torn-${stamp}-${n}`
    let handle: FileHandle
    try {
      handle = await open(savedTo, 'wx')
    } catch (error) {
      if (errorCode(error) === 'EEXIST') continue
      throw error
    }
    try {
      await writeAll(handle, bytes, 0)
      if (fsync) await handle.sync()
    } finally {
      await handle.close()
    }
    if (fsync) await syncDirectory(savedTo)
    return savedTo
  }
}

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

/** A JSONL log parsed: its events, the byte length they occupy, and a torn last line, if any. */
export interface LoadedLog {
  events: SessionEvent[]
  /** Bytes of the file that hold whole, valid lines. */
  length: number
  /** The last line, when a crash tore it: its bytes and its 1-based line number. */
  torn?: { bytes: Buffer; line: number }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Parses a log file. Only the LAST line may be torn (no trailing newline, or not JSON at all):
 * appends are written whole and in order, so a crash can damage nothing before it. Any other
 * bad line is corruption and fails the whole load, so that nothing is cut that was not torn.
 * @throws Error `<path>:<line>: <reason>`
 */
export function parseJsonlLog(path: string, bytes: Buffer): LoadedLog {
  // A UTF-8 byte order mark (an editor may add one) is not part of the first line.
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
  let length = bytes.length
  let torn: LoadedLog['torn']
  if (length > bom && bytes[length - 1] !== 0x0a) {
    length = Math.max(bom, bytes.lastIndexOf(0x0a) + 1)
    torn = { bytes: bytes.subarray(length), line: 0 }
  }
  // 0x0a never occurs inside a multi-byte UTF-8 sequence, so text lines are byte lines.
  const lines = bytes.toString('utf8', bom, length).split('\n')
  lines.pop() // the empty string after the last newline
  if (torn) {
    torn.line = lines.length + 1
  } else if (lines.length > 0 && isTornLastLine(lines[lines.length - 1]!)) {
    // Complete but garbage: a write the crash left as zeros or a fragment with a newline in it.
    // Its line starts after the newline before its own; a file that is one line long (`"\n"`
    // alone) has none. (`lastIndexOf` reads a negative offset from the end: it must not get one,
    // or the cut keeps the byte it reports and the next open refuses what was appended after it.)
    const start = length < 2 ? bom : Math.max(bom, bytes.lastIndexOf(0x0a, length - 2) + 1)
    torn = { bytes: bytes.subarray(start, length), line: lines.length }
    length = start
    lines.pop()
  }

  const events: SessionEvent[] = []
  for (let i = 0; i < lines.length; i++) events.push(readJsonlLogLine(path, i + 1, lines[i]!))
  return torn ? { events, length, torn } : { events, length }
}

/**
 * Line `line` (1-based) of a JSONL session log, read as its event with the checks every reader of
 * the format makes: a JSON object, `seq` equal to the line number, a string `type`, a `data`
 * field, and a valid `plan/mode` (R61). The one home of those checks and their words:
 * `parseJsonlLog` reads each line with it, and so does a reader that streams a log a chunk at a
 * time (`plan-mode inspect`, R108), so both read every log alike.
 * @returns the event, frozen, without the line's other fields.
 * @throws Error `<path>:<line>: <reason>` (the JSON or R61 error as its `cause`).
 */
export function readJsonlLogLine(path: string, line: number, text: string): SessionEvent {
  const fail = (reason: string, cause?: unknown): never => {
    throw new Error(`${path}:${line}: ${reason}`, cause === undefined ? undefined : { cause })
  }
  if (text.trim() === '') fail('empty line')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    fail('not valid JSON', error)
  }
  if (!isRecord(value)) return fail('expected an event {"seq":n,"type":"...","data":...}')
  if (value.seq !== line) fail(`expected seq ${line}, found ${JSON.stringify(value.seq) ?? 'none'}`)
  if (typeof value.type !== 'string') fail('"type" must be a string')
  if (!('data' in value)) fail('"data" is missing')
  const event: SessionEvent = Object.freeze({ seq: line, type: value.type as string, data: value.data })
  try {
    validatePlanModeEvent(event)
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error), error)
  }
  return event
}

/**
 * Whether the complete last line of a log (its newline seen) is a crash's torn write rather than
 * a corrupt event: it is not JSON at all (zeros, a fragment with a newline in it, an empty line).
 * Only the last line may be torn; a last line without its newline is torn whatever it holds (R75).
 */
export function isTornLastLine(text: string): boolean {
  try {
    JSON.parse(text)
    return false
  } catch {
    return true
  }
}

// ---------------------------------------------------------------------------------------------
// The log
// ---------------------------------------------------------------------------------------------

interface QueuedAppend {
  readonly seq: number
  readonly type: string
  readonly data: unknown
  readonly line: Buffer
  resolve(event: SessionEvent): void
  reject(error: unknown): void
}

/**
 * Opens (or creates, empty) a JSON Lines session log and takes its single-writer lock
 * `<path>.lock`, which holds this process's pid until `close()`.
 *
 * Loading checks every line: seq starts at 1 and rises by one per line, each line is an event
 * object, every `plan/mode` passes `validatePlanModeEvent` (R61). A torn last line (no trailing
 * newline, or not JSON: a crash during a write) is saved to `<path>.torn-<ms since epoch>`, cut
 * off the file, and reported with `logger.warn('plan-mode: torn last line cut from <path>',
 * { line, bytes, savedTo })`.
 *
 * Appends take their seq when called, in call order, and are written in that order; appends
 * that queue up behind a write share the next write and fsync (group commit). Durability is a
 * prefix: once an append resolves, every append called before it is on disk too. So when a
 * write fails, the log cuts the file back to its last durable byte, rejects that write's
 * appends with the file system's error, rejects the appends queued behind it (their seqs
 * followed a line that is not there) and hands out the failed seq again; later appends work
 * normally. If the cut itself fails, nothing more is written after the torn bytes: every later
 * append rejects until the log is reopened (which cuts the torn line).
 *
 * @throws (rejects) Error `<path>:<line>: <reason>` for a corrupt line other than a torn last
 * one, leaving the file untouched; Error `<path> is locked by process <pid> (<path>.lock); a
 * session log has one writer at a time` while a live process (this one included) holds it; the
 * file system's errors.
 */
export async function openJsonlSessionLog(
  path: string,
  options: JsonlSessionLogOptions = {},
): Promise<JsonlSessionLog> {
  const fsync = options.fsync ?? true
  const logger: PlanModeLogger = options.logger ?? console
  // A session log is a regular file: /dev/null or a FIFO would swallow or block every append.
  const found = await stat(path).catch(() => undefined)
  if (found !== undefined && !found.isFile()) throw new Error(`${path}: not a regular file; a session log is one`)
  const lock = await acquireLock(path)
  let handle: FileHandle | undefined
  try {
    handle = await openOrCreate(path, fsync)
    const loaded = parseJsonlLog(path, await handle.readFile())
    if (loaded.torn) {
      // Saved before cut: a crash between the two leaves a copy, never a loss.
      const savedTo = await saveTornBytes(path, loaded.torn.bytes, fsync)
      await handle.truncate(loaded.length)
      if (fsync) await handle.datasync()
      warn(logger, `plan-mode: torn last line cut from ${path}`, {
        line: loaded.torn.line,
        bytes: loaded.torn.bytes.length,
        savedTo,
      })
    }
    return createJsonlSessionLog(path, handle, lock, loaded, fsync, logger)
  } catch (error) {
    await handle?.close().catch(() => undefined)
    await releaseLock(lock)
    throw error
  }
}

/** A logger is a port too: its failure must not fail the log (R62). */
function warn(logger: PlanModeLogger, ...args: unknown[]): void {
  try {
    logger.warn(...args)
  } catch {
    // Nowhere left to report it.
  }
}

function createJsonlSessionLog(
  path: string,
  handle: FileHandle,
  lock: HeldLock,
  loaded: LoadedLog,
  fsync: boolean,
  logger: PlanModeLogger,
): JsonlSessionLog {
  const stored = loaded.events
  const listeners = new Set<(event: SessionEvent) => void>()
  const queue: QueuedAppend[] = []
  /** Bytes of the file that are durable, whole lines: where the next write goes. */
  let size = loaded.length
  let nextSeq = stored.length + 1
  let draining = false
  let idle: Promise<void> = Promise.resolve()
  let closing: Promise<void> | undefined
  /** Set when a failed write could not be cut back: the file may end in a torn line. */
  let broken: Error | undefined

  function tell(event: SessionEvent): void {
    // A snapshot: a listener that unsubscribes while being told must not skip another.
    for (const listener of [...listeners]) {
      try {
        listener(event)
      } catch (error) {
        // The event is on disk already; one faulty subscriber must not fail the append.
        warn(logger, 'plan-mode: session log subscriber failed', error)
      }
    }
  }

  /** The appends of one write: whatever queued up, within MAX_BATCH_BYTES (at least one). */
  function takeBatch(): QueuedAppend[] {
    let bytes = 0
    let count = 0
    while (count < queue.length && (count === 0 || bytes + queue[count]!.line.length <= MAX_BATCH_BYTES)) {
      bytes += queue[count]!.line.length
      count++
    }
    return queue.splice(0, count)
  }

  async function failBatch(batch: QueuedAppend[], error: unknown): Promise<void> {
    try {
      await handle.truncate(size)
    } catch (undoError) {
      broken = new Error(
        `${path} cannot take appends: a failed write could not be undone; reopen the log to cut the torn line`,
        { cause: undoError },
      )
    }
    // The seqs after the failed line would leave a gap: the failed seq is handed out again.
    nextSeq = batch[0]!.seq
    const behind = queue.splice(0)
    for (const item of batch) item.reject(error)
    for (const item of behind) {
      item.reject(
        broken ?? new Error(`${path}: "${item.type}" not appended: an earlier append failed`, { cause: error }),
      )
    }
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length > 0) {
        const batch = takeBatch()
        let bytes: Buffer
        try {
          bytes = batch.length === 1 ? batch[0]!.line : Buffer.concat(batch.map((item) => item.line))
          await writeAll(handle, bytes, size)
          if (fsync) await handle.datasync()
        } catch (error) {
          await failBatch(batch, error)
          continue
        }
        size += bytes.length
        for (const item of batch) {
          const event: SessionEvent = Object.freeze({ seq: item.seq, type: item.type, data: item.data })
          stored.push(event)
          tell(event)
          item.resolve(event)
        }
      }
    } finally {
      // Cleared in the same turn as the last empty-queue check, so an append made right after
      // starts a new drain instead of waiting on a finished one.
      draining = false
    }
  }

  async function prepare(type: string, data: unknown): Promise<SessionEvent> {
    if (typeof type !== 'string') throw new TypeError(`${path}: event type must be a string, got ${typeof type}`)
    let json: string | undefined
    try {
      json = JSON.stringify(data)
    } catch (error) {
      throw new TypeError(`${path}: data of "${type}" is not JSON-serializable`, { cause: error })
    }
    if (json === undefined) throw new TypeError(`${path}: data of "${type}" is not JSON-serializable`)
    // The stored data is what a reopened log will read back, so both views of the log agree.
    const stored: unknown = JSON.parse(json)
    // Refused here, because once written it would make every later open fail (R61).
    validatePlanModeEvent({ seq: nextSeq, type, data: stored })
    if (closing) throw new Error(`${path} is closed`)
    if (broken) throw broken
    const seq = nextSeq++
    const line = Buffer.from(`{"seq":${seq},"type":${JSON.stringify(type)},"data":${json}}\n`)
    return new Promise<SessionEvent>((resolve, reject) => {
      queue.push({ seq, type, data: stored, line, resolve, reject })
      if (!draining) {
        draining = true
        idle = drain()
      }
    })
  }

  return {
    path,
    get events(): readonly SessionEvent[] {
      return stored
    },
    append(type, data) {
      return prepare(type, data)
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
    close() {
      closing ??= (async () => {
        try {
          await idle
          await handle.close()
        } finally {
          await releaseLock(lock)
        }
      })()
      return closing
    },
  }
}
