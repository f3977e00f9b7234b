import { createHash, randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { defineConfig, type Options } from 'tsup'

// TypeScript by `require`: an ESM import of its 9 MB CommonJS file first parses it whole for ES module syntax and
// for its named exports (~0.9 s of the build's CPU: 4.7 s with the import, 3.8 s with require, cached declarations).
const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript')

/** The package's entry points (package.json "exports") and their sources. */
export const ENTRIES = {
  index: 'src/index.ts',
  node: 'src/node.ts',
  'ai-sdk': 'src/adapters/ai-sdk.ts',
  'openai-agents': 'src/adapters/openai-agents.ts',
  inspect: 'src/adapters/inspect.ts',
  testing: 'src/testing/index.ts',
  'testing-scenarios': 'src/testing/scenarios.ts',
  'testing-node': 'src/testing/node.ts',
  'testing-ai-sdk': 'src/testing/ai-sdk.ts',
  'testing-openai-agents': 'src/testing/openai-agents.ts',
  'testing-langgraph': 'src/testing/langgraph.ts',
  postgres: 'src/adapters/postgres.ts',
  guard: 'src/guard/index.ts',
  langgraph: 'src/adapters/langgraph.ts',
}

/** Where {@link declarations} keeps the last build's, beside the dependencies (one file per TypeScript version and options). */
const DECLARATIONS_CACHE = 'node_modules/.cache/xstate-plan-mode-declarations'

/** A file's content hash; '' for what cannot be read as a file (a directory, a file since removed). */
function hashOf(path: string): string {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex')
  } catch {
    return ''
  }
}

/**
 * The sources' declarations (`.d.ts`, one per source file), emitted by one TypeScript program into
 * a temp directory removed when the build ends; returns the entry points' declarations there, which
 * tsup bundles into `<entry>.d.ts` and `.d.cts` (with .d.ts entries it compiles nothing itself).
 * Emitted with `noCheck`: the same declarations without the full type check (`npm run typecheck`
 * does that). The whole build takes ~12 s of CPU this way; tsup's own declaration build, which
 * emits each file through rollup with a checked program, made it ~27 s (most of `npm pack`).
 *
 * The program (~8 s of the 12) runs only when its inputs changed: the declarations are kept in
 * `node_modules/.cache/xstate-plan-mode-declarations/`, with the hash of every file the program
 * read (the sources, the dependencies' declarations, TypeScript's libs), of every name under src/,
 * and of npm's record of the installed tree (`node_modules/.package-lock.json`), under a key of the
 * TypeScript version, tsconfig.json, the options and this function's text. When all match, the
 * kept declarations are written out instead (well under a second). Names under node_modules/ are
 * of its real path, so a clone whose node_modules links here (test/pack.test.ts's) uses the same
 * entry. The entry is written whole (a temp file renamed into place), and entries of other keys are
 * removed; one that cannot be read or written costs a program run, never a failure.
 */
function declarations(): Record<string, string> {
  const tsconfig = readFileSync('tsconfig.json', 'utf8')
  const config = ts.getParsedCommandLineOfConfigFile('tsconfig.json', undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
    },
  })!
  const dir = mkdtempSync(join(tmpdir(), 'plan-mode-declarations-'))
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  const entries = Object.fromEntries(Object.entries(ENTRIES).map(([name, source]) => [name, join(dir, source.slice('src/'.length).replace(/\.ts$/, '.d.ts'))]))

  const overrides = { noEmit: false, declaration: true, emitDeclarationOnly: true, noCheck: true, declarationMap: false }
  const modules = realpathSync('node_modules')
  const nameOf = (path: string) => (path.startsWith(`${modules}/`) ? `node_modules/${path.slice(modules.length + 1)}` : relative('.', path))
  const pathOf = (name: string) => (name.startsWith('node_modules/') ? join(modules, name.slice('node_modules/'.length)) : resolve(name))
  // This function's own text too: a change to how the declarations are made makes a new entry.
  const key = createHash('sha256').update(JSON.stringify([ts.version, tsconfig, overrides, ENTRIES, declarations.toString()])).digest('hex').slice(0, 16)
  const cacheFile = join(DECLARATIONS_CACHE, `${key}.json`)
  const sourceNames = readdirSync('src', { recursive: true }).map((name) => `src/${String(name)}`)
  const lock = 'node_modules/.package-lock.json'

  let kept: { inputs: Record<string, string>; files: Record<string, string> } | undefined
  try {
    kept = JSON.parse(readFileSync(cacheFile, 'utf8')) as typeof kept
  } catch {
    // none yet, or unreadable: made again below
  }
  // An entry of another shape (written by hand, cut short) is no entry: it costs a program run.
  const usable =
    typeof kept?.inputs === 'object' && kept.inputs !== null && typeof kept.files === 'object' && kept.files !== null &&
    Object.values(kept.files).every((text) => typeof text === 'string')
  const keptSources = usable ? Object.keys(kept!.inputs).filter((name) => name.startsWith('src/')) : []
  if (
    usable &&
    keptSources.length === sourceNames.length &&
    sourceNames.every((name) => name in kept!.inputs) &&
    Object.entries(kept!.inputs).every(([name, hash]) => hashOf(pathOf(name)) === hash)
  ) {
    for (const [file, text] of Object.entries(kept!.files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true })
      writeFileSync(join(dir, file), text)
    }
    return entries
  }

  const program = ts.createProgram(
    Object.values(ENTRIES).map((source) => resolve(source)),
    { ...config.options, ...overrides, outDir: dir, rootDir: resolve('src') },
  )
  const files: Record<string, string> = {}
  const { diagnostics, emitSkipped } = program.emit(undefined, (path, text) => {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, text)
    files[relative(dir, path)] = text
  })
  if (emitSkipped || diagnostics.length > 0) {
    throw new Error(`declarations: ${ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (name) => name, getCurrentDirectory: ts.sys.getCurrentDirectory, getNewLine: () => '\n' })}`)
  }
  // The inputs are hashed from the disk after the program ran; a file saved (or checked out) while it
  // ran would record its new hash beside declarations of its old text. So the entry is kept only when
  // every file still holds the text the program read, and src/ still holds the same names.
  const changedMeanwhile =
    program.getSourceFiles().some((file) => readText(file.fileName) !== file.text) ||
    readdirSync('src', { recursive: true }).map((name) => `src/${String(name)}`).join('\0') !== sourceNames.join('\0')
  if (changedMeanwhile) return entries
  const temp = `${cacheFile}.${process.pid}.${randomUUID()}.tmp`
  try {
    const inputs = Object.fromEntries([...program.getSourceFiles().map((file) => nameOf(file.fileName)), ...sourceNames, lock].map((name) => [name, hashOf(pathOf(name))]))
    mkdirSync(DECLARATIONS_CACHE, { recursive: true })
    writeFileSync(temp, JSON.stringify({ inputs, files }))
    renameSync(temp, cacheFile)
    // Entries of other keys (another TypeScript, other options) are not kept.
    for (const name of readdirSync(DECLARATIONS_CACHE)) {
      if (name.endsWith('.json') && name !== `${key}.json`) rmSync(join(DECLARATIONS_CACHE, name), { force: true })
    }
  } catch {
    // a cache that cannot be written costs the next build a program run
    rmSync(temp, { force: true })
  }
  return entries
}

/** A file's text as TypeScript reads it (UTF-8, without a byte order mark); undefined when it cannot be read. */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').replace(/^\uFEFF/, '')
  } catch {
    return undefined
  }
}

/**
 * R170: the OpenAI Agents SDK is an optional peer, loaded when its entry points are imported, in
 * the host's module system: `src/adapters/openai-agents-sdk.ts` awaits `import()` (top-level
 * await, ESM only); the CommonJS build takes `openai-agents-sdk.cjs.ts`, which `require`s it.
 */
const commonJsOpenAiAgentsSdk: NonNullable<Options['esbuildPlugins']>[number] = {
  name: 'openai-agents-sdk-cjs',
  setup(build) {
    if (build.initialOptions.format !== 'cjs') return
    build.onResolve({ filter: /\/openai-agents-sdk\.js$/ }, (args) => ({ path: resolve(args.resolveDir, args.path.replace(/\.js$/, '.cjs.ts')) }))
  },
}

// `tsup --out-dir <dir>` builds the whole package into <dir> (test/pack.test.ts packs a build it
// made apart from dist/, which other work may be reading); the default is dist/.
export default defineConfig(({ outDir = 'dist' }): Options[] => [
  {
    entry: ENTRIES,
    format: ['esm', 'cjs'],
    dts: { entry: declarations() },
    // No source maps: a shipped map sends a user's stack trace (the kit's assertion failures
    // included) into src/ files the package does not hold; the bundles are readable as they are.
    sourcemap: false,
    clean: true,
    target: 'node20',
    // Keep `node:` on built-in imports: `node:test` (the kit's node:test wrapper) exists only so.
    removeNodeProtocol: false,
    // import.meta.url in the CommonJS builds (the inspect entry loads its optional peers from where it is installed).
    shims: true,
    // Peers are the host's own copies.
    external: ['ai', 'vitest', 'xstate', '@statelyai/inspect', 'ws', 'pg', '@electric-sql/pglite', /^@langchain\//, '@openai/agents-core'],
    esbuildPlugins: [commonJsOpenAiAgentsSdk],
  },
  {
    // The CLI is an app beside the library: it imports the package by its name, which Node
    // resolves through package.json "exports" (a self-reference) to the bundles above.
    entry: { cli: 'apps/cli/bin.ts' },
    format: ['esm'],
    sourcemap: false,
    clean: false,
    target: 'node20',
    external: [/^xstate-plan-mode(\/.*)?$/, 'ai', 'ai/test', 'vitest', 'xstate', '@statelyai/inspect', 'ws', 'typescript'],
    async onSuccess() {
      // elkjs ships in the package (users do not install it), as the file elkjs ships: the layout
      // worker of the visualizer's server loads it (R178, apps/shared/visualizer/chart-layout.ts).
      await copyFile(createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js'), `${outDir}/elk.cjs`)
      // The visualizer page, prebuilt: users do not have typescript at run time. It loads no elkjs.
      const from = 'apps/shared/visualizer/client/'
      const to = `${outDir}/visualizer-client/`
      await mkdir(to, { recursive: true })
      for (const name of await readdir(from)) {
        if (name.endsWith('.ts')) {
          const source = await readFile(`${from}${name}`, 'utf8')
          const { outputText } = ts.transpileModule(source, {
            fileName: name,
            compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
          })
          await writeFile(`${to}${name.slice(0, -3)}.js`, outputText)
        } else if (name.endsWith('.html') || name.endsWith('.css')) {
          await copyFile(`${from}${name}`, `${to}${name}`)
        }
      }
    },
  },
])
