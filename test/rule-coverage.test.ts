import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const here = dirname(fileURLToPath(import.meta.url))
const SPEC = resolve(here, '../../shared/SPEC.md')

/** Every rule R1–R64 that SPEC.md defines (`- **Rn**`). */
function specRules(): number[] {
  const text = readFileSync(SPEC, 'utf8')
  return [...text.matchAll(/^- \*\*R(\d+)\*\*/gm)].map((m) => Number(m[1])).filter((n) => n >= 1 && n <= 64)
}

/** Rules named by a test title (`it('R16: …'` or `it(\`R44: …\``) in any test file. */
function testedRules(): Set<number> {
  const named = new Set<number>()
  const files = readdirSync(here, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts'))
  for (const file of files) {
    const source = readFileSync(join(here, file), 'utf8')
    for (const m of source.matchAll(/\bit\(\s*['"`]R(\d+):/g)) named.add(Number(m[1]))
  }
  return named
}

describe('rule coverage', () => {
  const present = existsSync(SPEC)
  if (!present) console.warn(`rule coverage: ${SPEC} not found; the check that every rule has a test is skipped`)

  it.skipIf(!present)('every rule R1–R64 of SPEC.md has a test that names it', () => {
    const rules = specRules()
    expect(rules.length).toBeGreaterThanOrEqual(50)
    const tested = testedRules()
    const missing = rules.filter((rule) => !tested.has(rule)).map((rule) => `R${rule}`)
    expect(missing).toEqual([])
  })
})
