import { readFileSync } from 'node:fs'
import type { PendingStore } from '../types.js'
import { replaceFile } from './fs-durable.js'

/** A pending store backed by a JSON file: `set` and `delete` resolve once the file is replaced. */
export interface JsonlPendingStore extends PendingStore {
  /** The store file's path, as given to `openJsonlPendingStore`. */
  readonly path: string
  /**
   * Records `agentId`'s pending selection (its target: `false` = leaving). `get` shows it at
   * once; the promise resolves when a file holding it replaced the old one.
   * @throws (rejects) TypeError for a non-string id or a non-boolean selection; the file
   * system's error when the write fails (the selection stays in memory and the next write
   * carries it again).
   */
  set(agentId: string, pending: boolean): Promise<void>
  /** Forgets `agentId`'s pending selection; settles like `set`. */
  delete(agentId: string): Promise<void>
}

/** Options of `openJsonlPendingStore`. */
export interface JsonlPendingStoreOptions {
  /** fsync the new file and its directory before resolving (default `true`). */
  fsync?: boolean
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code
  return typeof code === 'string' ? code : undefined
}

// Checked at the door: a bad value written to the file would make every later open fail.
function checkAgentId(agentId: unknown): void {
  if (typeof agentId !== 'string') throw new TypeError(`agent id must be a string, got ${typeof agentId}`)
}

function checkPending(pending: unknown): void {
  if (typeof pending !== 'boolean') {
    throw new TypeError(`pending selection must be a boolean, got ${JSON.stringify(pending) ?? typeof pending}`)
  }
}

/**
 * Reads the store file synchronously (attach reads `get` synchronously, so the data must be in
 * memory before the first call). A missing file is an empty store.
 * @throws Error `<path>: <reason>` when the file is not a JSON object of booleans.
 */
function loadSelections(path: string): Map<string, boolean> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return new Map()
    throw error
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    // The file is only ever replaced whole (rename), so this is damage, not a torn write.
    throw new Error(`${path}: not valid JSON`, { cause: error })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${path}: expected a JSON object of agent ids to booleans`)
  }
  const selections = new Map<string, boolean>()
  for (const [agentId, pending] of Object.entries(value)) {
    if (typeof pending !== 'boolean') {
      throw new Error(`${path}: pending selection of agent ${JSON.stringify(agentId)} is ${JSON.stringify(pending)}; expected a boolean`)
    }
    selections.set(agentId, pending)
  }
  return selections
}

/**
 * Opens a pending store kept in a JSON file `{ "<agentId>": <pending target> }`, loaded
 * synchronously now (a missing file is an empty store) and rewritten atomically (temp file,
 * fsync, rename, directory fsync) on every change. Writes are serialized; changes made while
 * a write runs share the next one. Assumes one writer per file (no lock).
 * @throws Error `<path>: not valid JSON` / `<path>: expected a JSON object of agent ids to
 * booleans` / `<path>: pending selection of agent "<id>" is <JSON>; expected a boolean` for a
 * damaged file, or the file system's read error.
 */
export function openJsonlPendingStore(path: string, options: JsonlPendingStoreOptions = {}): JsonlPendingStore {
  const fsync = options.fsync ?? true
  const selections = loadSelections(path)
  const serialize = (): string => `${JSON.stringify(Object.fromEntries(selections), null, 2)}\n`
  /** What the file holds now: a change that leaves this unchanged needs no write. */
  let written = serialize()
  let waiting: { resolve(): void; reject(error: unknown): void }[] = []
  let writing = false

  async function writeLoop(): Promise<void> {
    try {
      while (waiting.length > 0) {
        const batch = waiting
        waiting = []
        // The snapshot holds every change made before its waiters asked (memory changes first).
        const text = serialize()
        try {
          if (text !== written) {
            await replaceFile(path, text, fsync)
            written = text
          }
        } catch (error) {
          for (const waiter of batch) waiter.reject(error)
          continue
        }
        for (const waiter of batch) waiter.resolve()
      }
    } finally {
      writing = false
    }
  }

  /** Resolves once a write that includes the current memory state is done. */
  function persist(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      waiting.push({ resolve, reject })
      if (!writing) {
        writing = true
        void writeLoop()
      }
    })
  }

  return {
    path,
    get(agentId) {
      return selections.get(agentId)
    },
    set(agentId, pending) {
      try {
        checkAgentId(agentId)
        checkPending(pending)
      } catch (error) {
        return Promise.reject(error)
      }
      selections.set(agentId, pending)
      return persist()
    },
    delete(agentId) {
      try {
        checkAgentId(agentId)
      } catch (error) {
        return Promise.reject(error)
      }
      selections.delete(agentId)
      return persist()
    },
  }
}

/**
 * A pending store in memory: the default, under which no pending selection survives a
 * restart, and a stand-in for tests. Synchronous.
 * @throws TypeError from `set` for a non-string id or a non-boolean selection.
 */
export function createMemoryPendingStore(): PendingStore {
  const selections = new Map<string, boolean>()
  return {
    get(agentId) {
      return selections.get(agentId)
    },
    set(agentId, pending) {
      checkAgentId(agentId)
      checkPending(pending)
      selections.set(agentId, pending)
    },
    delete(agentId) {
      checkAgentId(agentId)
      selections.delete(agentId)
    },
  }
}
