import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, expect, it } from 'vitest'
import { initialisedDataDir, pgliteCachePath, startPGlite } from '../apps/shared/pglite-cache.js'

/**
 * The PGlite of `npm start` and the tests starts from a cached initialised data directory
 * (apps/shared/pglite-cache.ts). Here in a clone of its own (a temp root whose node_modules names a
 * PGlite version), so that the machine's cache is not touched.
 */
const roots: string[] = []
afterAll(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true })
})

async function tempRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'plan-mode-pglite-cache-'))
  roots.push(root)
  await mkdir(join(root, 'node_modules/@electric-sql/pglite'), { recursive: true })
  await writeFile(join(root, 'node_modules/@electric-sql/pglite/package.json'), JSON.stringify({ version: '0.0.0-test' }))
  return root
}

it('a cache that does not load is made again: the PGlite starts, the cache is then a whole dump (no temp file left), and a database loaded from it is a fresh one that takes tables', async () => {
  const root = await tempRoot()
  const path = await pgliteCachePath(root)
  expect(path).toBe(join(root, 'node_modules/.cache/xstate-plan-mode/pglite-0.0.0-test-datadir.tar'))
  await mkdir(join(root, 'node_modules/.cache/xstate-plan-mode'), { recursive: true })
  await writeFile(path, 'not a data directory')

  const first = await startPGlite({}, root)
  try {
    expect((await first.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
  } finally {
    await first.close()
  }
  expect(await readdir(join(root, 'node_modules/.cache/xstate-plan-mode'))).toEqual(['pglite-0.0.0-test-datadir.tar'])
  expect((await readFile(path)).length).toBeGreaterThan(1_000_000)

  // Read back from the file (not this process's copy): a fresh cluster, with none of our tables.
  const loaded = new PGlite({ loadDataDir: await initialisedDataDir({ root }) })
  try {
    expect((await loaded.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).rows).toEqual([{ n: 0 }])
    await loaded.exec('CREATE TABLE t (x int); INSERT INTO t VALUES (1)')
    expect((await loaded.query('SELECT x FROM t')).rows).toEqual([{ x: 1 }])
  } finally {
    await loaded.close()
  }
})
