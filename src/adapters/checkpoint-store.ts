import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CheckpointStore, PlanCheckpoint } from '../log/checkpoint.js'
import { replaceFile } from './fs-durable.js'

/** Options of `openFileCheckpointStore`. */
export interface FileCheckpointStoreOptions {
  /** fsync each new file and its directory before `save` resolves (default `true`). */
  fsync?: boolean
}

/**
 * A checkpoint store that keeps each agent's latest checkpoint in its own JSON file,
 * `<directory>/<encodeURIComponent(agentId)>.json`, replaced atomically (temp file, fsync, rename,
 * directory fsync) on every save (R76). The directory is created on the first save.
 * `load` resolves `undefined` when the agent has no checkpoint, and rejects with
 * `<file>: not valid JSON` for a damaged one (the host then loads the whole log).
 */
export function openFileCheckpointStore(directory: string, options: FileCheckpointStoreOptions = {}): CheckpointStore {
  const fsync = options.fsync ?? true
  const fileOf = (agentId: string) => {
    if (typeof agentId !== 'string' || agentId === '') throw new TypeError(`agent id must be a non-empty string, got ${JSON.stringify(agentId)}`)
    return join(directory, `${encodeURIComponent(agentId)}.json`)
  }
  return {
    async load(agentId) {
      const file = fileOf(agentId)
      let text: string
      try {
        text = await readFile(file, 'utf8')
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ENOENT') return undefined
        throw error
      }
      try {
        return JSON.parse(text) as unknown
      } catch (error) {
        throw new Error(`${file}: not valid JSON`, { cause: error })
      }
    },
    async save(agentId, checkpoint: PlanCheckpoint) {
      const file = fileOf(agentId)
      await mkdir(directory, { recursive: true })
      await replaceFile(file, `${JSON.stringify(checkpoint)}\n`, fsync)
    },
  }
}
