/**
 * The chat agent's host tools: `list_files` and `read_file`, read-only and confined to one
 * directory. Read-only on purpose: the chat exists to show plan mode with a real model, and a
 * command a user tries out on their checkout must not be able to change it. Plan mode gates no
 * tool (R52); these are harmless in both modes.
 */
import { constants } from 'node:fs'
import { lstat, open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { jsonSchema, tool } from 'ai'

/** The most bytes `read_file` reads and returns; the rest is cut, with a note saying so (R107). */
export const MAX_READ_BYTES = 64 * 1024
/** The most entries `list_files` returns. */
export const MAX_LIST_ENTRIES = 500

/** Builds the two tools over `root` (the chat's working directory). */
export function workspaceTools(root: string) {
  return {
    list_files: tool({
      description: 'List the entries of a directory of the working directory (not recursive); directories end with "/".',
      inputSchema: jsonSchema<{ path?: string }>({
        type: 'object',
        properties: { path: { type: 'string', description: 'A directory, relative to the working directory (default ".").' } },
        additionalProperties: false,
      }),
      execute: ({ path }) => listFiles(root, path ?? '.'),
    }),
    read_file: tool({
      description: `Read a text file of the working directory (at most ${MAX_READ_BYTES / 1024} KiB).`,
      inputSchema: jsonSchema<{ path: string }>({
        type: 'object',
        properties: { path: { type: 'string', description: 'A file, relative to the working directory.' } },
        required: ['path'],
        additionalProperties: false,
      }),
      execute: ({ path }) => readTextFile(root, path),
    }),
  }
}

/**
 * The entries of the directory `path` under `root`, sorted, one a line, directories with a
 * trailing `/`; `(empty directory)` for none.
 * @throws Error when `path` leaves `root`, is missing, or is not a directory.
 */
export async function listFiles(root: string, path: string): Promise<string> {
  const checked = await insideRoot(root, path, 'list_files')
  // O_DIRECTORY refuses a FIFO or a device (ENOTDIR) without opening it (R107).
  const handle = await open(checked.real, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK).catch((error: unknown) => {
    throw fileError('list_files', path, error)
  })
  const entries = await confineOpened(handle, checked, path, 'list_files')
    .then((listable) =>
      readdir(listable, { withFileTypes: true }).catch((error: unknown) => {
        throw fileError('list_files', path, error)
      }),
    )
    .finally(() => handle.close().catch(() => {}))
  const names = entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name)).sort()
  if (names.length === 0) return '(empty directory)'
  const shown = names.slice(0, MAX_LIST_ENTRIES)
  if (names.length > shown.length) shown.push(`… (${names.length - shown.length} more)`)
  return shown.join('\n')
}

/**
 * The text of the file `path` under `root`, cut after {@link MAX_READ_BYTES} with a note; a
 * binary file is named, not shown (R107). Only a regular file is read, and only its first
 * MAX_READ_BYTES + 1 bytes: a FIFO would wait for a writer in the kernel, and a huge file would
 * fill memory before being cut.
 * @throws Error when `path` leaves `root`, is missing, is a directory or is not a regular file.
 */
export async function readTextFile(root: string, path: string): Promise<string> {
  if (typeof path !== 'string' || path === '') throw new Error('read_file needs a "path"')
  const checked = await insideRoot(root, path, 'read_file')
  const file = checked.real
  const info = await stat(file).catch((error: unknown) => {
    throw fileError('read_file', path, error)
  })
  if (info.isDirectory()) throw new Error(`read_file: "${path}" is a directory; use list_files`)
  if (!info.isFile()) throw notRegularFile(path)
  // What was checked may be swapped before the open: O_NONBLOCK opens a FIFO without waiting for
  // a writer, O_NOFOLLOW follows no link swapped in, and fstat checks what was really opened.
  // (A link that was there at the check was resolved by insideRoot: `file` names its target.)
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW).catch((error: unknown) => {
    throw SWAPPED_IN_AT_OPEN.has(errorCode(error) ?? '') ? notRegularFile(path) : fileError('read_file', path, error)
  })
  try {
    await confineOpened(handle, checked, path, 'read_file')
    const opened = await handle.stat()
    if (!opened.isFile()) throw notRegularFile(path)
    // One byte over the cap tells that there is more to cut.
    const bytes = await readHead(handle, MAX_READ_BYTES + 1).catch((error: unknown) => {
      throw fileError('read_file', path, error)
    })
    const size = Math.max(opened.size, bytes.length)
    if (bytes.subarray(0, 8192).includes(0)) return `(binary file, ${size} bytes)`
    if (bytes.length <= MAX_READ_BYTES) return bytes.toString('utf8')
    return `${bytes.subarray(0, MAX_READ_BYTES).toString('utf8')}\n… (cut: the file has ${size} bytes)`
  } finally {
    await handle.close().catch(() => {})
  }
}

/** The first `limit` bytes of an open file (fewer when it is shorter), in one buffer of that size. */
async function readHead(handle: FileHandle, limit: number): Promise<Buffer> {
  const buffer = Buffer.alloc(limit)
  let length = 0
  while (length < limit) {
    const { bytesRead } = await handle.read(buffer, length, limit - length, length)
    if (bytesRead === 0) break
    length += bytesRead
  }
  return buffer.subarray(0, length)
}

/** The lines of a text: a final line break ends the last line rather than starting another. */
export function countLines(text: string): number {
  if (text === '') return 0
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

/** A path checked to be inside the working directory: both with symbolic links resolved. */
interface CheckedPath {
  readonly realRoot: string
  readonly real: string
}

/**
 * `path` resolved under `root`, symbolic links followed, refused when it ends up outside.
 * A missing path is resolved without following links, so the caller reports it as missing.
 * Only a check of the path: what an open of it finds is checked again by {@link confineOpened}.
 */
async function insideRoot(root: string, path: string, toolName: string): Promise<CheckedPath> {
  const realRoot = await realpath(root)
  const resolved = resolve(realRoot, path)
  const real = await realpath(resolved).catch(() => resolved)
  if (!isWithin(realRoot, resolved) || !isWithin(realRoot, real)) throw outsideError(toolName, path)
  return { realRoot, real }
}

/**
 * Refuses what `handle` opened unless it is inside the working directory, and returns the path
 * to read it again by (a directory's entries). A directory of the checked path can be swapped
 * for a link to outside between the check and the open, and the open follows it (R107), so what
 * was opened is checked, not the path. Linux names an open file's real place in
 * /proc/self/fd/<fd>, and opening that path reaches the same file. Where there is no /proc, the
 * checked path, resolved again after the open, must be inside and name the opened file (device
 * and inode): that narrows the race but cannot close it (a swap back and forth timed around these
 * checks passes), as Node has no openat() to walk the path from the root's descriptor.
 */
async function confineOpened(handle: FileHandle, checked: CheckedPath, path: string, toolName: string): Promise<string> {
  const byDescriptor = `/proc/self/fd/${handle.fd}`
  const opened = await readlink(byDescriptor).catch(() => undefined)
  if (opened !== undefined) {
    if (!isAbsolute(opened) || !isWithin(checked.realRoot, opened)) throw outsideError(toolName, path)
    return byDescriptor
  }
  if (!(await stillNamesOpened(handle, checked))) throw outsideError(toolName, path)
  return checked.real
}

/** Whether `checked.real`, resolved again, is inside the working directory and is the file `handle` opened. */
async function stillNamesOpened(handle: FileHandle, checked: CheckedPath): Promise<boolean> {
  const real = await realpath(checked.real).catch(() => undefined)
  if (real === undefined || !isWithin(checked.realRoot, real)) return false
  const [opened, named] = await Promise.all([handle.stat(), lstat(real)]).catch(() => [undefined, undefined])
  return opened !== undefined && named !== undefined && opened.dev === named.dev && opened.ino === named.ino
}

function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path)
  return rel === '' || (!isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`))
}

/**
 * What open() answers for a path that was a regular file at the check and is something else now:
 * a symbolic link (ELOOP, refused by O_NOFOLLOW) or a socket or a device without a driver (ENXIO).
 */
const SWAPPED_IN_AT_OPEN = new Set(['ELOOP', 'ENXIO'])

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

function outsideError(toolName: string, path: string): Error {
  return new Error(`${toolName}: "${path}" is outside the working directory`)
}

function notRegularFile(path: string): Error {
  return new Error(`read_file: "${path}" is not a regular file`)
}

function fileError(toolName: string, path: string, error: unknown): Error {
  const code = errorCode(error)
  if (code === 'ENOENT') return new Error(`${toolName}: no such file or directory "${path}"`)
  if (code === 'ENOTDIR') return new Error(`${toolName}: "${path}" is not a directory`)
  return new Error(`${toolName}: "${path}": ${error instanceof Error ? error.message : String(error)}`)
}
