import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
// The kit's scenarios, each named by its rule, run on the guide's example host.
import '../examples/conformance-host.js'
// The durable scenarios, told in the result, on the guide's waiting host.
import '../examples/waiting-host.js'
// The stock AI SDK drivers, as the guide shows them.
import '../examples/ai-sdk-conformance.js'

describe('docs/conformance.md: the conformance kit on examples/conformance-host.ts', () => {
  it('docs/conformance.md shows examples/conformance-host.ts verbatim', () => {
    const guide = readFileSync(new URL('../docs/conformance.md', import.meta.url), 'utf8')
    expect(guide).toContain(readFileSync(new URL('../examples/conformance-host.ts', import.meta.url), 'utf8').trim())
  })

  it('docs/conformance.md shows examples/ai-sdk-conformance.ts verbatim', () => {
    const guide = readFileSync(new URL('../docs/conformance.md', import.meta.url), 'utf8')
    expect(guide).toContain(readFileSync(new URL('../examples/ai-sdk-conformance.ts', import.meta.url), 'utf8').trim())
  })

  it('docs/conformance.md shows examples/waiting-host.ts verbatim', () => {
    const guide = readFileSync(new URL('../docs/conformance.md', import.meta.url), 'utf8')
    expect(guide).toContain(readFileSync(new URL('../examples/waiting-host.ts', import.meta.url), 'utf8').trim())
  })
})
