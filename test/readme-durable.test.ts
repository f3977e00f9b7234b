import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { openDurableAgent } from '../examples/durable-log.js'

it('R4: the docs/stateless-hosts.md durable-log example resumes the mode and a pending selection after a restart', async () => {
  const guide = await readFile(new URL('../docs/stateless-hosts.md', import.meta.url), 'utf8')
  const example = await readFile(new URL('../examples/durable-log.ts', import.meta.url), 'utf8')
  expect(guide).toContain(example.trim())
  const dir = await mkdtemp(join(tmpdir(), 'plan-mode-readme-'))
  try {
    const first = await openDurableAgent(dir)
    expect(await first.planMode.set(first.agent, true)).toBe('committed')
    await first.agent.session.append('turn/start', {})
    expect(await first.planMode.set(first.agent, false)).toBe('queued')
    await first.agent.session.append('turn/end', {})
    await first.close()

    const second = await openDurableAgent(dir)
    expect(second.planMode.get(second.agent)).toEqual({ active: true, pending: false })
    await second.agent.session.append('turn/start', {})
    expect((await second.planMode.stepBoundary(second.agent)).section).toBe('')
    expect(second.planMode.get(second.agent)).toEqual({ active: false })
    await second.close()
    const lines = (await readFile(join(dir, 'session.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l).type)
    expect(lines).toEqual(['plan/mode', 'turn/start', 'turn/end', 'turn/start', 'plan/mode'])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
