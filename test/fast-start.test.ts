/**
 * Fast starts (R111, R112): `npm start` builds the web page only when its sources changed, and
 * the CLI from a clone answers `--version` without loading TypeScript once its files are cached.
 *
 * Neither is checked with a clock (a busy machine is slow at anything): a hook registered before
 * the program refuses to resolve the heavy module (vite, typescript), so a start that would load
 * it fails, and a start that does not, passes. Each check first shows the hook bites when the
 * module is needed.
 */
import { execFile } from 'node:child_process'
import { access, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The child's environment: no `npm_*` variables of an outer `npm test`, no NODE_OPTIONS of ours. */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE_OPTIONS'))

let temp: string

/**
 * A module for `--import` that makes resolving any module whose URL or specifier matches `pattern`
 * throw `<what> was loaded`, in this process and (through NODE_OPTIONS) in the processes it starts.
 */
async function refuse(what: string, pattern: RegExp): Promise<string> {
  const hooks = join(temp, `refuse-${what}-hooks.mjs`)
  await writeFile(
    hooks,
    `export async function resolve(specifier, context, nextResolve) {\n` +
      `  if (${pattern}.test(specifier)) throw new Error(${JSON.stringify(`${what} was loaded`)})\n` +
      `  const resolved = await nextResolve(specifier, context)\n` +
      `  if (${pattern}.test(resolved.url)) throw new Error(${JSON.stringify(`${what} was loaded`)})\n` +
      `  return resolved\n}\n`,
  )
  const register = join(temp, `refuse-${what}.mjs`)
  await writeFile(register, `import { register } from 'node:module'\nregister(${JSON.stringify(`file://${hooks}`)})\n`)
  return register
}

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), 'plan-mode-fast-start-'))
})

afterAll(async () => {
  if (temp) await rm(temp, { recursive: true, force: true })
})

describe('npm start builds the web page only when its sources changed', () => {
  it('R111: two first starts at once (NODE_ENV test, and development) both build and leave one whole build (each written beside the directory and renamed into place, no temp directory behind), React\'s production page whichever of them made it; a second start skips the build and loads no vite; a changed source builds again', async () => {
    const out = join(temp, 'page')
    const build = (env: Record<string, string> = {}) =>
      run(process.execPath, [join(ROOT, 'apps', 'web', 'build.mjs'), '--out-dir', 'page'], { cwd: temp, env: { ...ENV, ...env }, maxBuffer: 1 << 24 })

    // Two starts at once (two `npm start`s, a test run beside a start): both build, one build stays, whole.
    // One with NODE_ENV=development: neither that nor vitest's `test` makes a development build.
    // Which of the two builds stays is a race: a run checks one of them, runs in turn both.
    const both = await Promise.all([build(), build({ NODE_ENV: 'development' })])
    for (const first of both) expect(first.stdout).toMatch(/(^|\n)page: built\n$/)
    const index = await readFile(join(out, 'index.html'), 'utf8')
    const assets = [...index.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((match) => match[1]!)
    expect(assets.length).toBeGreaterThan(0)
    for (const asset of assets) await access(join(out, asset))
    // React's production build: its development build (which NODE_ENV=test gave the browser tests,
    // twice the script time per page) carries this marker of its owner stacks.
    const scripts = await Promise.all(assets.filter((asset) => asset.endsWith('.js')).map((asset) => readFile(join(out, asset), 'utf8')))
    expect(scripts.length).toBeGreaterThan(0)
    for (const script of scripts) expect(script).not.toContain('react-stack-top-frame')
    expect((await readdir(temp)).filter((name) => name.startsWith('page'))).toEqual(['page'])
    const record = JSON.parse(await readFile(join(out, '.sources.json'), 'utf8')) as { sources: Record<string, string> }
    for (const file of ['apps/web/page/App.tsx', 'apps/web/page/index.html', 'apps/web/page/style.css', 'apps/shared/visualizer/client/chart.ts', 'apps/web/build.mjs', 'apps/web/vite.config.ts', 'package-lock.json']) {
      expect(record.sources[file]).toMatch(/^[0-9a-f]{64}$/)
    }
    const built = await stat(join(out, 'index.html'))

    // The second start: with vite refused, it succeeds only by not running it.
    const noVite = `--import=${await refuse('vite', /\/node_modules\/vite\/|^vite$/)}`
    const second = await build({ NODE_OPTIONS: noVite })
    expect(second.stdout).toBe('page is current (its sources are unchanged): build skipped\n')
    expect((await stat(join(out, 'index.html'))).mtimeMs).toBe(built.mtimeMs)

    // A source that changed since (its recorded hash differs): the build runs, so vite is loaded.
    record.sources['apps/web/page/App.tsx'] = '0'.repeat(64)
    await writeFile(join(out, '.sources.json'), JSON.stringify(record))
    const stale = await build({ NODE_OPTIONS: noVite }).then(
      () => 'built without vite',
      (error: { stderr: string }) => error.stderr,
    )
    expect(stale).toContain('vite was loaded')
  }, 120_000)
})

describe('the CLI from a clone starts without compiling TypeScript', () => {
  it('R112: --version and --help load no typescript once the transpile cache holds their files', async () => {
    const env = { ...ENV, PLAN_MODE_TS_CACHE: join(temp, 'ts-cache') }
    const noTypescript = await refuse('typescript', /\/node_modules\/typescript\/|^typescript$/)
    const cli = (args: string[], imports: string[] = []) =>
      run(process.execPath, [...imports.flatMap((file) => ['--import', file]), '--import', './apps/shared/register.mjs', 'apps/cli/bin.ts', ...args], {
        cwd: ROOT,
        env,
      })
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }

    // An empty cache: the files are compiled, so refusing typescript fails the start.
    const cold = await cli(['--version'], [noTypescript]).then(
      () => 'started without typescript',
      (error: { stderr: string }) => error.stderr,
    )
    expect(cold).toContain('typescript was loaded')

    expect((await cli(['--version'])).stdout).toBe(`${version}\n`)
    expect((await cli(['--version'], [noTypescript])).stdout).toBe(`${version}\n`)
    expect((await cli(['--help'], [noTypescript])).stdout).toMatch(/^Usage: plan-mode <command> \[options\]\n/)
  })
})
