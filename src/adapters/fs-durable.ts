import { randomBytes } from 'node:crypto'
import { open, rename, unlink, type FileHandle } from 'node:fs/promises'
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

/**
 * Replaces `path` with `text` atomically: a reader (or a restart after a crash) sees the old
 * file or the new one, never a mix. The temp name is unique so that two stores on one path
 * cannot write into each other's temp file.
 */
export async function replaceFile(path: string, text: string, fsync: boolean): Promise<void> {
  const temp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    const handle = await open(temp, 'wx')
    try {
      await handle.writeFile(text)
      // Synced before the rename: otherwise a machine crash can leave the new name on an empty file.
      if (fsync) await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, path)
  } catch (error) {
    await unlink(temp).catch(() => undefined)
    throw error
  }
  if (fsync) await syncDirectory(path)
}
