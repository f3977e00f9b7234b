/**
 * `plan-mode chat`'s host tools: read-only, and confined to the working directory (symbolic
 * links included), with errors the model can act on.
 */
import { execFileSync, spawn } from 'node:child_process'
import { constants, openSync, closeSync, readFileSync } from 'node:fs'
import { lstat, mkdir, mkdtemp, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { MAX_READ_BYTES, countLines, listFiles, readTextFile } from '../apps/shared/workspace-tools.js'

/**
 * What runs before the tools' next open() or readdir() (which opens a directory), once: a test
 * swaps what the path names there, between the check and the open, as another process could.
 * Unset, open() and readdir() are Node's own.
 */
const beforeNextOpen = vi.hoisted(() => ({ swap: undefined as undefined | (() => Promise<void>) }))
/** Set, readlink() of /proc/self/fd/<fd> fails as on a system without /proc (macOS). */
const withoutProc = vi.hoisted(() => ({ on: false }))
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>()
  const runSwap = async () => {
    const swap = beforeNextOpen.swap
    beforeNextOpen.swap = undefined
    await swap?.()
  }
  return {
    ...actual,
    open: async (...args: Parameters<typeof actual.open>) => {
      await runSwap()
      return actual.open(...args)
    },
    readdir: async (...args: Parameters<typeof actual.readdir>) => {
      await runSwap()
      return actual.readdir(...args)
    },
    readlink: async (...args: Parameters<typeof actual.readlink>) => {
      if (withoutProc.on && String(args[0]).startsWith('/proc/self/fd/')) {
        throw Object.assign(new Error(`ENOENT: no such file or directory, readlink '${String(args[0])}'`), { code: 'ENOENT' })
      }
      return actual.readlink(...args)
    },
  }
})
afterEach(() => {
  beforeNextOpen.swap = undefined
  withoutProc.on = false
})

/** `call` is refused with `message`, and `swap` ran right before the tools' open, between their check and the open. */
async function expectRefusedAfterSwap(swap: () => Promise<void>, call: () => Promise<unknown>, message: string) {
  let swapped = false
  beforeNextOpen.swap = async () => {
    await swap()
    swapped = true
  }
  await expect(call()).rejects.toThrow(new Error(message))
  expect(swapped).toBe(true)
}

let base: string
let root: string
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'plan-mode-tools-'))
  root = join(base, 'root')
  await mkdir(join(root, 'src'), { recursive: true })
  await mkdir(join(root, 'empty'))
  await writeFile(join(root, 'README.md'), '# Hi\n')
  await writeFile(join(root, 'src', 'a.ts'), 'export const a = 1\n')
  await writeFile(join(root, 'big.txt'), 'x'.repeat(MAX_READ_BYTES + 10))
  await writeFile(join(root, 'blob.bin'), Buffer.from([1, 0, 2]))
  await writeFile(join(base, 'secret.txt'), 'outside')
  await symlink(join(base, 'secret.txt'), join(root, 'link.txt'))
  await symlink(join(root, 'src', 'a.ts'), join(root, 'inside-link.ts'))
})
afterAll(() => rm(base, { recursive: true, force: true }))

describe('list_files', () => {
  it('lists a directory sorted, directories with a trailing slash', async () => {
    expect(await listFiles(root, '.')).toBe(['README.md', 'big.txt', 'blob.bin', 'empty/', 'inside-link.ts', 'link.txt', 'src/'].join('\n'))
    expect(await listFiles(root, 'src')).toBe('a.ts')
    expect(await listFiles(root, 'empty')).toBe('(empty directory)')
  })

  it('refuses a directory outside the working directory, a missing one and a file', async () => {
    await expect(listFiles(root, '..')).rejects.toThrow('list_files: ".." is outside the working directory')
    await expect(listFiles(root, 'nope')).rejects.toThrow('list_files: no such file or directory "nope"')
    await expect(listFiles(root, 'README.md')).rejects.toThrow('list_files: "README.md" is not a directory')
  })
})

describe('read_file', () => {
  it('reads a text file, and follows a link that stays inside', async () => {
    expect(await readTextFile(root, 'README.md')).toBe('# Hi\n')
    expect(await readTextFile(root, './src/../inside-link.ts')).toBe('export const a = 1\n')
  })

  it('cuts a large file with a note, and names a binary file without showing it', async () => {
    const big = await readTextFile(root, 'big.txt')
    expect(big).toBe(`${'x'.repeat(MAX_READ_BYTES)}\n… (cut: the file has ${MAX_READ_BYTES + 10} bytes)`)
    expect(await readTextFile(root, 'blob.bin')).toBe('(binary file, 3 bytes)')
  })

  it('refuses paths outside the working directory, also through a symbolic link', async () => {
    await expect(readTextFile(root, '../secret.txt')).rejects.toThrow('read_file: "../secret.txt" is outside the working directory')
    await expect(readTextFile(root, join(base, 'secret.txt'))).rejects.toThrow('is outside the working directory')
    await expect(readTextFile(root, 'link.txt')).rejects.toThrow('read_file: "link.txt" is outside the working directory')
  })

  it('says what is wrong with a missing file, a directory and an empty path', async () => {
    await expect(readTextFile(root, 'nope.txt')).rejects.toThrow('read_file: no such file or directory "nope.txt"')
    await expect(readTextFile(root, 'src')).rejects.toThrow('read_file: "src" is a directory; use list_files')
    await expect(readTextFile(root, '')).rejects.toThrow('read_file needs a "path"')
  })
})

describe('read_file and list_files: only regular files, read with a bound (R107)', () => {
  let special: string
  beforeAll(async () => {
    special = join(base, 'special')
    await mkdir(special)
    execFileSync('mkfifo', [join(special, 'README.md')])
    await symlink(join(special, 'README.md'), join(special, 'pipe-link'))
  })

  /**
   * Opens the FIFO for writing and closes it again: a reader blocked in open() or read() wakes up
   * at end of file. Only there for the code before the fix, so that its blocked read does not
   * outlive the test; it fails (ENXIO) when nobody reads, which is what the fixed code leaves.
   */
  const releaseFifo = (fifo: string) => {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK))
    } catch {
      // nobody had it open for reading
    }
  }

  it('R107: read_file refuses a FIFO with an exact message instead of waiting for a writer', async () => {
    try {
      await expect(readTextFile(special, 'README.md')).rejects.toThrow(new Error('read_file: "README.md" is not a regular file'))
      await expect(readTextFile(special, 'pipe-link')).rejects.toThrow(new Error('read_file: "pipe-link" is not a regular file'))
    } finally {
      releaseFifo(join(special, 'README.md'))
    }
  })

  it('R107: list_files of a FIFO answers at once that it is not a directory', async () => {
    try {
      await expect(listFiles(special, 'README.md')).rejects.toThrow(new Error('list_files: "README.md" is not a directory'))
    } finally {
      releaseFifo(join(special, 'README.md'))
    }
  })

  it('R107: read_file of a 1 GiB (sparse) file reads its first 64 KiB only, not the whole file', async () => {
    const file = join(special, 'huge.log')
    await writeFile(file, 'y'.repeat(MAX_READ_BYTES * 2))
    await truncate(file, 2 ** 30)
    const before = bytesReadByThisProcess()
    const text = await readTextFile(special, 'huge.log')
    const read = bytesReadByThisProcess() - before
    expect(text).toBe(`${'y'.repeat(MAX_READ_BYTES)}\n… (cut: the file has ${2 ** 30} bytes)`)
    // Reading the whole file reads 1 GiB, however it is read (one buffer or chunks); the bound
    // reads 64 KiB + 1 byte. The margin is for whatever else this process reads meanwhile (the
    // test runner's messages): kilobytes, not the file.
    console.info(`read_file of a 1 GiB file: this process read ${read} bytes`)
    expect(read).toBeLessThan(64 * 2 ** 20)
  })

  it('R107: a symbolic link swapped in between the check and the open is refused as not a regular file, and not followed', async () => {
    const file = join(special, 'swapped.txt')
    await writeFile(file, 'checked\n')
    const swapForLink = async () => {
      await rm(file)
      await symlink(join(base, 'secret.txt'), file)
    }
    await expectRefusedAfterSwap(swapForLink, () => readTextFile(special, 'swapped.txt'), 'read_file: "swapped.txt" is not a regular file')
  })

  it('R107: a socket swapped in between the check and the open is refused as not a regular file', async () => {
    const file = join(special, 'swapped.sock')
    await writeFile(file, 'checked\n')
    const server = createServer()
    const swapForSocket = async () => {
      await rm(file)
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(file, () => resolve()))
    }
    try {
      await expectRefusedAfterSwap(swapForSocket, () => readTextFile(special, 'swapped.sock'), 'read_file: "swapped.sock" is not a regular file')
    } finally {
      await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()))
    }
  })
})

describe('read_file and list_files: a directory of the path swapped for a link to outside (R107)', () => {
  const secret = 'SECRET outside the working directory'
  let swapRoot: string
  let sub: string
  let outside: string
  beforeAll(async () => {
    swapRoot = join(base, 'swap-root')
    sub = join(swapRoot, 'sub')
    outside = join(base, 'swap-outside')
    await mkdir(sub, { recursive: true })
    await mkdir(outside)
    await writeFile(join(sub, 'notes.txt'), 'inside')
    await writeFile(join(outside, 'notes.txt'), secret)
    await writeFile(join(outside, 'only-outside.txt'), secret)
  })

  /** Swaps `sub` for a link to the outside directory (as another process could), undone after the test. */
  const swapSubForLinkToOutside = async () => {
    await rename(sub, `${sub}-real`)
    await symlink(outside, sub)
  }
  afterEach(async () => {
    if ((await lstat(sub)).isSymbolicLink()) {
      await rm(sub)
      await rename(`${sub}-real`, sub)
    }
  })

  it('R107: read_file refuses as outside the working directory a file opened through a parent directory swapped for a link after the check', async () => {
    await expectRefusedAfterSwap(swapSubForLinkToOutside, () => readTextFile(swapRoot, 'sub/notes.txt'), 'read_file: "sub/notes.txt" is outside the working directory')
  })

  it('R107: list_files refuses as outside the working directory a directory swapped for a link after the check', async () => {
    await expectRefusedAfterSwap(swapSubForLinkToOutside, () => listFiles(swapRoot, 'sub'), 'list_files: "sub" is outside the working directory')
  })

  it('R107: without /proc, read_file refuses as outside the working directory a file opened through a parent directory swapped for a link after the check', async () => {
    withoutProc.on = true
    await expectRefusedAfterSwap(swapSubForLinkToOutside, () => readTextFile(swapRoot, 'sub/notes.txt'), 'read_file: "sub/notes.txt" is outside the working directory')
    expect(await readTextFile(root, 'README.md')).toBe('# Hi\n')
    expect(await listFiles(root, 'src')).toBe('a.ts')
  })

  it('R107: read_file never returns a file outside the working directory while another process swaps a directory of its path for a link and back, as fast as it can', async () => {
    const link = join(swapRoot, 'link')
    await symlink(outside, link)
    // Another process swaps `sub` for the link to outside and back, each swap one rename (atomic).
    // Killed, it leaves them mid-swap: the test puts them back below.
    const flipper = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const r = ${JSON.stringify(swapRoot)};
         for (;;) { fs.renameSync(r + '/sub', r + '/real'); fs.renameSync(r + '/link', r + '/sub'); fs.renameSync(r + '/sub', r + '/link'); fs.renameSync(r + '/real', r + '/sub') }`,
      ],
      { stdio: 'ignore' },
    )
    const seen = new Set<string>()
    let flipperAlive = false
    try {
      // Reads until the swaps have shown both sides (a read of the real file, and a refusal while
      // the link or nothing stood at `sub`) over 2,000 reads at least, or the secret leaks.
      const bothSidesSeen = () => seen.has('inside') && [...seen].some((answer) => answer.startsWith('refused: '))
      for (let i = 0; i < 20_000 && !seen.has(secret) && !(i >= 2_000 && bothSidesSeen()); i++) {
        try {
          seen.add(await readTextFile(swapRoot, 'sub/notes.txt'))
        } catch (error) {
          seen.add(`refused: ${(error as Error).message}`)
        }
      }
      flipperAlive = flipper.exitCode === null && flipper.signalCode === null
    } finally {
      if (flipper.exitCode === null && flipper.signalCode === null) {
        const exited = new Promise((resolve) => flipper.once('exit', resolve))
        flipper.kill('SIGKILL')
        await exited
      }
      await restoreAfterFlipper(swapRoot)
    }
    console.info(`read_file under a swapping parent answered: ${[...seen].join(' | ')}`)
    expect(seen.has(secret)).toBe(false)
    // The race was run: the other process was swapping all along, and the reads saw both sides.
    expect(flipperAlive).toBe(true)
    expect(seen.has('inside')).toBe(true)
    expect([...seen].some((answer) => answer.startsWith('refused: '))).toBe(true)
  }, 120_000)
})

/** Puts the real directory back at `sub` and removes the link, wherever the killed flipper left them. */
async function restoreAfterFlipper(swapRoot: string): Promise<void> {
  const at = (name: string) => lstat(join(swapRoot, name)).then((info) => (info.isSymbolicLink() ? 'link' : 'dir'), () => 'none')
  if ((await at('sub')) === 'link') await rename(join(swapRoot, 'sub'), join(swapRoot, 'link'))
  if ((await at('real')) === 'dir') await rename(join(swapRoot, 'real'), join(swapRoot, 'sub'))
  await rm(join(swapRoot, 'link'))
}

/**
 * The bytes this process has read through read()-family system calls so far (Linux's
 * /proc/self/io `rchar`): counted by the kernel, whatever buffers the reader used or freed.
 */
function bytesReadByThisProcess(): number {
  const rchar = /^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))
  if (!rchar) throw new Error('/proc/self/io has no rchar line')
  return Number(rchar[1])
}

describe('countLines', () => {
  it('counts a final line break as the end of the last line', () => {
    expect([countLines(''), countLines('a'), countLines('a\n'), countLines('a\nb'), countLines('a\n\n')]).toEqual([0, 1, 1, 2, 2])
  })
})
