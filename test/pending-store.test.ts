import { fork, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createMemoryPendingStore, openJsonlPendingStore } from '../src/adapters/pending-store.js'
import { buildForChild } from './fixtures/build.js'

const PENDING_CHILD = fileURLToPath(new URL('./fixtures/pending-child.mjs', import.meta.url))

let dir: string
let storePath: string
let buildDir: string
let moduleUrl: string
const children: ChildProcess[] = []

beforeAll(async () => {
  buildDir = await mkdtemp(join(tmpdir(), 'plan-mode-pending-build-'))
  ;[moduleUrl] = (await buildForChild(buildDir, ['adapters/pending-store.ts'])) as [string]
})

afterAll(async () => {
  await rm(buildDir, { recursive: true, force: true })
})

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plan-mode-pending-'))
  storePath = join(dir, 'pending.json')
})

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await new Promise((resolve) => child.once('exit', resolve))
    }
  }
  await rm(dir, { recursive: true, force: true })
})

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (reason: unknown) => reason,
  )
  expect(error).toBeInstanceOf(Error)
  return error as Error
}

describe('openJsonlPendingStore', () => {
  it('opens a missing file as an empty store and creates nothing until a change', () => {
    const store = openJsonlPendingStore(storePath)
    expect(store.get('agent')).toBeUndefined()
    expect(existsSync(storePath)).toBe(false)
  })

  it('shows a selection at once and keeps it across a reopen', async () => {
    const store = openJsonlPendingStore(storePath)

    const written = store.set('a', false)
    expect(store.get('a')).toBe(false)
    await written

    expect(await readFile(storePath, 'utf8')).toBe('{\n  "a": false\n}\n')
    expect(openJsonlPendingStore(storePath).get('a')).toBe(false)
  })

  it('forgets a deleted selection across a reopen, and keeps the others', async () => {
    const store = openJsonlPendingStore(storePath)
    await store.set('a', true)
    await store.set('b', false)

    await store.delete('a')

    expect(store.get('a')).toBeUndefined()
    const reopened = openJsonlPendingStore(storePath)
    expect([reopened.get('a'), reopened.get('b')]).toEqual([undefined, false])
  })

  it('replaces the file by rename (a new inode), leaving no temp file', async () => {
    const store = openJsonlPendingStore(storePath)
    await store.set('a', true)
    const before = await stat(storePath)

    await store.set('a', false)

    expect((await stat(storePath)).ino).not.toBe(before.ino)
    expect(await readdir(dir)).toEqual(['pending.json'])
  })

  it('settles every change made while a write runs, with the latest state on disk', async () => {
    const store = openJsonlPendingStore(storePath)
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.set(`agent-${i % 5}`, i % 2 === 0)))

    // The last change to agent-k was i = 45 + k.
    expect(JSON.parse(await readFile(storePath, 'utf8'))).toEqual({
      'agent-0': false,
      'agent-1': true,
      'agent-2': false,
      'agent-3': true,
      'agent-4': false,
    })
  })

  it('keeps an agent id like __proto__ as plain data', async () => {
    const store = openJsonlPendingStore(storePath)
    await store.set('__proto__', true)
    expect(openJsonlPendingStore(storePath).get('__proto__')).toBe(true)
    expect(openJsonlPendingStore(storePath).get('constructor')).toBeUndefined()
  })

  it('rejects a failed write, keeps the change in memory, and writes it with the next change', async () => {
    const missingDir = join(dir, 'not-yet')
    const store = openJsonlPendingStore(join(missingDir, 'pending.json'))

    const failure = await rejection(store.set('a', true))

    expect((failure as NodeJS.ErrnoException).code).toBe('ENOENT')
    expect(store.get('a')).toBe(true)
    await mkdir(missingDir)
    await store.set('b', false)
    expect(JSON.parse(await readFile(join(missingDir, 'pending.json'), 'utf8'))).toEqual({ a: true, b: false })
  })

  it('rejects a non-boolean selection or a non-string id and changes nothing', async () => {
    const store = openJsonlPendingStore(storePath)

    const badValue = await rejection(store.set('a', 'yes' as unknown as boolean))
    const badId = await rejection(store.delete(7 as unknown as string))

    expect(badValue).toBeInstanceOf(TypeError)
    expect(badValue.message).toBe('pending selection must be a boolean, got "yes"')
    expect(badId.message).toBe('agent id must be a string, got number')
    expect(store.get('a')).toBeUndefined()
    expect(existsSync(storePath)).toBe(false)
  })

  it.each([
    ['not JSON', '{"a": tru', 'not valid JSON'],
    ['not an object', '[true]', 'expected a JSON object of agent ids to booleans'],
    ['a non-boolean selection', '{"a": true, "b": "leaving"}', 'pending selection of agent "b" is "leaving"; expected a boolean'],
  ])('fails to open a file that is %s with <path>: <reason>', async (_, text, reason) => {
    await writeFile(storePath, text)
    expect(() => openJsonlPendingStore(storePath)).toThrowError(new Error(`${storePath}: ${reason}`))
    expect(await readFile(storePath, 'utf8')).toBe(text)
  })

  it('keeps every acknowledged selection when the writer is SIGKILLed mid-stream', async () => {
    const child = fork(PENDING_CHILD, [moduleUrl, storePath], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    children.push(child)
    let lastAcked = -1
    await new Promise<void>((resolve) => {
      child.on('message', (i) => {
        lastAcked = i as number
        if (lastAcked === 30) {
          child.kill('SIGKILL')
          resolve()
        }
      })
    })
    await new Promise((resolve) => child.once('exit', resolve))

    // Always a whole file: the old one or the new one.
    const store = openJsonlPendingStore(storePath)
    const stored = JSON.parse(await readFile(storePath, 'utf8')) as Record<string, boolean>
    const count = Object.keys(stored).length
    // Sets run one at a time, so at most the one after the last acknowledged one may have landed.
    expect(count === lastAcked + 1 || count === lastAcked + 2).toBe(true)
    for (let i = 0; i < count; i++) expect(store.get(`agent-${i}`)).toBe(i % 2 === 0)
  })
})

describe('createMemoryPendingStore', () => {
  it('sets, gets and deletes synchronously, per agent', () => {
    const store = createMemoryPendingStore()

    expect(store.set('a', true)).toBeUndefined()
    store.set('b', false)
    expect([store.get('a'), store.get('b')]).toEqual([true, false])
    store.delete('a')
    expect([store.get('a'), store.get('b')]).toEqual([undefined, false])
  })

  it('throws on a non-boolean selection', () => {
    const store = createMemoryPendingStore()
    expect(() => store.set('a', null as unknown as boolean)).toThrowError(
      new TypeError('pending selection must be a boolean, got null'),
    )
  })
})
