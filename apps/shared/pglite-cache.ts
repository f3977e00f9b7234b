/**
 * An in-memory PGlite that starts in a fraction of the time `new PGlite()` takes, for `npm start`
 * and the tests: `new PGlite()` runs initdb in WebAssembly (about 7 s of CPU on a 2-core machine),
 * every time. Here that runs once per machine: the freshly initialised data directory is dumped
 * (`dumpDataDir`) into a cache beside the dependencies, `node_modules/.cache/xstate-plan-mode/`, and
 * every later PGlite loads it (`loadDataDir`: about 1.5 s of CPU). The dump is of an empty cluster
 * (no table of ours): each user of the database runs its own migrations, as on a new server.
 *
 * The cache is written whole or not at all (a temp file renamed into place), so that two processes
 * starting at once (two copies of `npm test`, `npm start` beside them) both succeed: each may make
 * the dump, the last rename wins, and a reader only ever sees a complete file. Its name carries
 * PGlite's version, so an upgrade makes a new one. A cache that cannot be read or loaded is
 * made again.
 */
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { randomUUID } from 'node:crypto'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Where the dump of a fresh data directory is kept, named for the PGlite version that made it. */
export async function pgliteCachePath(root = ROOT): Promise<string> {
  const manifest = JSON.parse(await readFile(join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }
  return join(root, 'node_modules/.cache/xstate-plan-mode', `pglite-${manifest.version}-datadir.tar`)
}

/** Runs initdb (a fresh PGlite) and writes its data directory's dump to `path`, atomically. */
async function writeDump(path: string): Promise<Blob> {
  const fresh = new PGlite()
  try {
    await fresh.waitReady
    const dump = await fresh.dumpDataDir('none')
    await mkdir(dirname(path), { recursive: true })
    const temp = `${path}.${process.pid}.${randomUUID()}.tmp`
    try {
      await writeFile(temp, new Uint8Array(await dump.arrayBuffer()))
      await rename(temp, path)
    } finally {
      await rm(temp, { force: true })
    }
    return dump
  } finally {
    await fresh.close()
  }
}

/**
 * Makes the cache when it is missing, without reading it (for a run's global setup: the files
 * then start their PGlites from it instead of each making it at once).
 */
export async function ensurePGliteCache(root = ROOT): Promise<void> {
  const path = await pgliteCachePath(root)
  const found = await stat(path).catch(() => undefined)
  if (found === undefined || found.size === 0) await writeDump(path)
}

/** The dump in this process, read (or made) once. */
const dumps = new Map<string, Promise<Blob>>()

/**
 * The dump of a freshly initialised data directory: read from the cache, made (and cached) when
 * missing. `fresh` makes it again, over a cache that failed to load.
 */
export function initialisedDataDir({ root = ROOT, fresh = false }: { root?: string; fresh?: boolean } = {}): Promise<Blob> {
  const made = pgliteCachePath(root).then(async (path) => {
    if (!fresh) {
      const cached = await readFile(path).catch(() => undefined)
      if (cached && cached.length > 0) return new Blob([cached])
    }
    return writeDump(path)
  })
  dumps.set(root, made)
  made.catch(() => dumps.delete(root))
  return made
}

/**
 * A new in-memory PGlite on a freshly initialised data directory, loaded from the cache (see the
 * file's header); the same database `new PGlite(options)` gives, ready when the promise resolves.
 * Rejects only when PGlite itself cannot start.
 */
export async function startPGlite(options: Omit<PGliteOptions, 'loadDataDir' | 'dataDir'> = {}, root = ROOT): Promise<PGlite> {
  const dump = await (dumps.get(root) ?? initialisedDataDir({ root }))
  const lite = new PGlite({ ...options, loadDataDir: dump })
  try {
    await lite.waitReady
    return lite
  } catch {
    // A cache that does not load (written by hand, a disk that lost it): made again, once.
    await lite.close().catch(() => {})
    const again = new PGlite({ ...options, loadDataDir: await initialisedDataDir({ root, fresh: true }) })
    await again.waitReady
    return again
  }
}
