import { readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ENTRIES } from '../tsup.config.js'

/**
 * The README's install line names, beside each entry point, the optional peers it needs, and the
 * entry points that need nothing more. It is held to the imports: an entry point's peers are the
 * packages its source imports (static or dynamic, `import type` aside, through `src/`'s own
 * modules), other than the package's dependencies and Node's modules. Stop 36 found `/testing`
 * listed as needing nothing more while it imports `vitest`.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }

/** The packages `file` (relative to the root) imports, through the modules of `src/` it reaches. */
function packagesOf(file: string, seen = new Set<string>()): Set<string> {
  const found = new Set<string>()
  if (seen.has(file)) return found
  seen.add(file)
  const text = readFileSync(join(ROOT, file), 'utf8')
  const patterns = [/^\s*(import|export)\b([^'";]*?)\bfrom\s*['"]([^'"]+)['"]/gms, /^\s*(import)()\s*['"]([^'"]+)['"]/gm, /\b(import)\(()\s*['"]([^'"]+)['"]\s*\)/g]
  for (const pattern of patterns) {
    for (const [, , clause, specifier] of text.matchAll(pattern)) {
      if (/^\s*type\b/.test(clause!)) continue // erased: no import at run time
      if (specifier!.startsWith('.')) {
        const target = relative(ROOT, join(ROOT, dirname(file), specifier!)).replace(/\.js$/, '.ts')
        for (const name of packagesOf(target, seen)) found.add(name)
      } else {
        const name = specifier!.startsWith('@') ? specifier!.split('/').slice(0, 2).join('/') : specifier!.split('/')[0]!
        if (!name.startsWith('node:') && !builtinModules.includes(name) && !(name in PACKAGE.dependencies)) found.add(name)
      }
    }
  }
  return found
}

/** The README's install line: each entry point it names with the peers beside it, and those that need nothing more. */
function readmePeers(): { peers: Map<string, string[]>; none: string[] } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n/g, ' ')
  const line = /entry points that need more take optional peers: (.*?) need nothing more\./.exec(readme)
  if (line === null) throw new Error('the README has no install line of optional peers')
  const [named, rest] = line[1]!.split(/;(?=[^;]*$)/) as [string, string]
  const peers = new Map<string, string[]>()
  for (const [, entry, list] of named.matchAll(/`(\/[\w/<>-]+)` \(([^)]*)\)/g)) {
    peers.set(entry!, [...list!.matchAll(/`((?:@[\w.-]+\/)?[\w.-]+)(?:@[\w.]+)?`/g)].map((m) => m[1]!))
  }
  return { peers, none: [...rest.matchAll(/`(\/[\w/-]+)`/g)].map((m) => m[1]!) }
}

/** An entry's subpath as the README writes it: `testing-node` is `/testing/node`. */
const subpathOf = (entry: string) => `/${entry.replace(/^testing-/, 'testing/')}`

describe('README: the optional peers of each entry point', () => {
  const { peers, none } = readmePeers()

  it('the main entry point imports no package but the dependencies', () => {
    expect([...packagesOf(ENTRIES.index)]).toEqual([])
  })

  for (const [entry, source] of Object.entries(ENTRIES).filter(([entry]) => entry !== 'index')) {
    const subpath = subpathOf(entry)
    it(`${subpath} (${source}): every package it imports is named beside it, or it is named among those that need nothing`, () => {
      const imported = [...packagesOf(source)].sort()
      // `/testing/<framework>` takes its framework's peers, as the README says.
      const framework = /^\/testing\/(.+)$/.exec(subpath)?.[1]
      const named = peers.get(subpath) ?? (framework !== undefined && peers.has('/testing/<framework>') ? peers.get(`/${framework}`) : undefined)
      if (named === undefined) {
        expect(none, `${subpath} imports ${imported.join(', ')}`).toContain(subpath)
        expect(imported).toEqual([])
      } else {
        for (const name of imported) expect(named, `${subpath} imports ${name}`).toContain(name)
      }
    })
  }
})
