import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

it('npm run web starts the chat on PGlite with the offline model, prints its URL, and serves the plan state', async () => {
  // What `npm run web` runs after building the page (web/main.ts), on a free port.
  const child = spawn(process.execPath, ['--import', './visualizer/register.mjs', 'web/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', DATABASE_URL: '', OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', AI_GATEWAY_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let output = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk
        if (output.includes('\n')) resolve(output.split('\n')[0]!)
      })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
      child.once('exit', (code) => reject(new Error(`web/main.ts exited (${code}):\n${output}`)))
    })
    expect(line).toMatch(/^web chat: http:\/\/127\.0\.0\.1:\d+\/  \(model: offline \(a scripted model; no network\); log: PGlite, in memory\)$/)
    const url = /http:\/\/\S+/.exec(line)![0]
    const state = await (await fetch(new URL('/api/chats/first-chat/state', url))).json()
    expect(state).toEqual({
      instance: 'web',
      mode: { active: false },
      review: null,
      versions: [],
      chart: { value: { mode: 'inactive', turn: 'idle', review: 'idle', intent: 'logged', lifecycle: 'serving' } },
    })
    const command = await fetch(new URL('/api/chats/first-chat/command', url), { method: 'POST', body: JSON.stringify({ input: '' }) })
    expect(await command.json()).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect((await (await fetch(new URL('/api/chats/first-chat/state', url))).json()).mode).toEqual({ active: true })
    const refused = await fetch(new URL('/api/chats/..%2Fetc/state', url))
    expect([refused.status, await refused.json()]).toEqual([400, { error: 'a chat id is 1–100 letters, digits, - or _' }])
  } finally {
    child.kill('SIGKILL')
  }
}, 60_000)
