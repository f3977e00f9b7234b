#!/usr/bin/env node
/**
 * `npm run web:build` (and the first half of `npm start`): builds the web chat's page
 * (`apps/web/page/`) into `apps/web/dist/` with vite, unless the build there was made from the same sources
 * (R111). A build records in `apps/web/dist/.sources.json` every file of this repository it bundled
 * (what vite read, `node_modules` aside; every file of `apps/web/page/`), this script, `apps/web/vite.config.ts` and
 * `package-lock.json` (the versions of what it bundled from `node_modules`), each with its
 * SHA-256; a start whose recorded files all hash the same skips the build and loads no vite.
 *
 * Options: `--out-dir <dir>` builds there instead (tests); `--force` builds whatever the record says.
 * A build is written to a sibling temp directory and renamed into place, so two builds at once (two
 * `npm start`s, a test run beside a start) never mix their files, and a reader sees one whole build.
 * Plain JavaScript, so that checking costs no TypeScript either.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFile, readdir, rename, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

/** The repository's root: recorded paths are relative to it. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Where the record goes, in the build's output directory. */
export const SOURCES_FILE = '.sources.json'
/** What every build depends on besides the files it read. */
const ALWAYS = ['apps/web/build.mjs', 'apps/web/vite.config.ts', 'package-lock.json']

/** Each file's SHA-256 (`missing` for one that is gone), by its path relative to the root. */
async function hashFiles(files) {
  const entries = await Promise.all(
    files.map(async (file) => {
      const text = await readFile(join(ROOT, file)).catch(() => undefined)
      return [file, text === undefined ? 'missing' : createHash('sha256').update(text).digest('hex')]
    }),
  )
  return Object.fromEntries(entries)
}

/** Every file under `apps/web/page/`, relative to the root. */
async function pageFiles() {
  const names = await readdir(join(ROOT, 'apps', 'web', 'page'), { recursive: true, withFileTypes: true })
  return names.filter((entry) => entry.isFile()).map((entry) => relative(ROOT, join(entry.parentPath ?? entry.path, entry.name)).split(sep).join('/'))
}

/**
 * The vite plugin that writes the record when a build has written its files: every module the
 * bundle read from this repository, every file of `apps/web/page/`, and {@link ALWAYS}.
 */
export function recordSources() {
  let outDir = ''
  return {
    name: 'plan-mode:record-sources',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir)
    },
    async writeBundle() {
      const files = new Set([...ALWAYS, ...(await pageFiles())])
      for (const id of this.getModuleIds()) {
        const file = id.split('?')[0]
        if (file.startsWith('\0') || !isAbsolute(file)) continue
        const path = relative(ROOT, file)
        if (path.startsWith('..') || isAbsolute(path) || path.split(sep).includes('node_modules')) continue
        files.add(path.split(sep).join('/'))
      }
      const sources = await hashFiles([...files].sort())
      await writeFile(join(outDir, SOURCES_FILE), `${JSON.stringify({ sources }, null, 2)}\n`)
    },
  }
}

/** Whether `outDir` holds a build whose recorded sources all hash as they do now. */
export async function isCurrent(outDir) {
  try {
    await readFile(join(outDir, 'index.html'))
    const { sources } = JSON.parse(await readFile(join(outDir, SOURCES_FILE), 'utf8'))
    const now = await hashFiles([...new Set([...Object.keys(sources), ...ALWAYS, ...(await pageFiles())])])
    return Object.entries(now).every(([file, hash]) => sources[file] === hash)
  } catch {
    return false
  }
}

async function main() {
  const { values } = parseArgs({ options: { 'out-dir': { type: 'string' }, force: { type: 'boolean' } } })
  const outDir = resolve(values['out-dir'] ?? join(ROOT, 'apps', 'web', 'dist'))
  const shown = relative(process.cwd(), outDir) || '.'
  if (!values.force && (await isCurrent(outDir))) {
    console.log(`${shown} is current (its sources are unchanged): build skipped`)
    return 0
  }
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js')
  const temp = `${outDir}.${process.pid}.tmp`
  const args = [vite, 'build', '--config', join(ROOT, 'apps', 'web', 'vite.config.ts'), '--outDir', temp]
  // Vite bundles React's development build when NODE_ENV says so (a test runner sets `test`): the
  // page is always the production build, whatever the environment that asked for it.
  const env = { ...process.env, NODE_ENV: 'production' }
  const { status, signal } = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit', env })
  if (status !== 0) {
    await rm(temp, { recursive: true, force: true })
    return status ?? (signal ? 1 : 0)
  }
  await replaceDir(outDir, temp)
  console.log(`${shown}: built`)
  return 0
}

/**
 * Puts the finished build `temp` in place of `outDir`: the old one is renamed aside and removed.
 * When another build landed in between (its sources were the same), that one stays and `temp` goes.
 */
async function replaceDir(outDir, temp) {
  const old = `${outDir}.${process.pid}.old`
  await rename(outDir, old).catch((error) => {
    if (error.code !== 'ENOENT') throw error
  })
  try {
    await rename(temp, outDir)
  } catch (error) {
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error
    await rm(temp, { recursive: true, force: true })
  }
  await rm(old, { recursive: true, force: true })
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) process.exitCode = await main()
