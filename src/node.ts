/**
 * xstate-plan-mode/node: the durable adapters, which need Node's file system.
 * Kept apart from the main entry so that the core stays usable in any JavaScript runtime.
 *
 * @module xstate-plan-mode/node
 */
export {
  openJsonlSessionLog,
  parseJsonlLog,
  readJsonlLogLine,
  isTornLastLine,
  type LoadedLog,
  type JsonlSessionLog,
  type JsonlSessionLogOptions,
} from './adapters/jsonl.js'
export {
  openJsonlPendingStore,
  createMemoryPendingStore,
  type JsonlPendingStore,
  type JsonlPendingStoreOptions,
} from './adapters/pending-store.js'
export { openFileCheckpointStore, type FileCheckpointStoreOptions } from './adapters/checkpoint-store.js'
