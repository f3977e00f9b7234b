import { open, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'

/**
 * Makes a new directory entry (a created or renamed file) durable. Best effort: some platforms
 * (Windows) cannot open or fsync a directory, and the file's own data was synced already.
 */
export async function syncDirectory(path: string): Promise<void> {
  let handle: FileHandle | undefined
  try {
    handle = await open(dirname(path), 'r')
    await handle.sync()
  } catch {
    // Nothing more can be done for the entry.
  } finally {
    await handle?.close().catch(() => undefined)
  }
}
