import { describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { PersistentMap } from '../src/machines/persistent-map.js'

/** The registry chart's immutable map (src/machines/persistent-map.ts) against a `Map`. */
describe('PersistentMap', () => {
  it('a key that is not a string fails the same whether or not it is the first key the process reads (the last key\'s hash is remembered)', async () => {
    vi.resetModules()
    const fresh = await import('../src/machines/persistent-map.js')
    // The first key this module instance hashes: none was hashed before it.
    expect(() => fresh.PersistentMap.empty<number>().get(undefined as unknown as string)).toThrow(TypeError)
    // Nor is one that failed remembered as the last key.
    expect(() => fresh.PersistentMap.empty<number>().get(undefined as unknown as string)).toThrow(TypeError)
    const map = fresh.PersistentMap.empty<number>().set('a', 1)
    expect(map.get('a')).toBe(1)
    expect(() => map.get(undefined as unknown as string)).toThrow(TypeError)
    expect(map.get('')).toBeUndefined()
    expect(map.set('', 2).get('')).toBe(2)
  })

  it('agrees with a Map after any sequence of sets and deletes, and every earlier version stays as it was', () => {
    const key = fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: 0, max: 3000 }).map((n) => `agent-${n}`))
    const op = fc.tuple(fc.boolean(), key, fc.integer())
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        let map = PersistentMap.empty<number>()
        const model = new Map<string, number>()
        const versions: [PersistentMap<number>, Map<string, number>][] = []
        for (const [isSet, k, v] of ops) {
          map = isSet ? map.set(k, v) : map.delete(k)
          if (isSet) model.set(k, v)
          else model.delete(k)
          versions.push([map, new Map(model)])
        }
        for (const [version, expected] of versions) {
          expect(version.size).toBe(expected.size)
          expect(new Map(version.entries())).toEqual(expected)
          for (const k of expected.keys()) expect(version.get(k)).toBe(expected.get(k))
        }
      }),
      { numRuns: 200 },
    )
  })

  it('holds thousands of keys; set and delete return the same map when nothing changes', () => {
    let map = PersistentMap.empty<number>()
    for (let i = 0; i < 5000; i++) map = map.set(`agent-${i}`, i)
    expect(map.size).toBe(5000)
    for (let i = 0; i < 5000; i++) expect(map.get(`agent-${i}`)).toBe(i)
    expect(map.set('agent-7', 7)).toBe(map)
    expect(map.delete('absent')).toBe(map)
    for (let i = 0; i < 5000; i += 2) map = map.delete(`agent-${i}`)
    expect(map.size).toBe(2500)
    expect([...map.values()].sort((a, b) => a - b)).toEqual(Array.from({ length: 2500 }, (_, i) => 2 * i + 1))
  })

  it('keeps keys whose hashes are equal in all 32 bits apart', () => {
    // Two pairs of keys with equal FNV-1a hashes (found by search).
    const pairs = [['a651y', 'a1c544'], ['a651x', 'a1c545']] as const
    let map = PersistentMap.empty<string>().set('other', 'o')
    for (const [a, b] of pairs) map = map.set(a, a).set(b, b)
    expect(map.size).toBe(5)
    for (const [a, b] of pairs) expect([map.get(a), map.get(b)]).toEqual([a, b])
    const without = map.delete('a651y')
    expect([without.get('a651y'), without.get('a1c544'), without.size]).toEqual([undefined, 'a1c544', 4])
    expect(map.get('a651y')).toBe('a651y')
    expect(without.set('a1c544', 'changed').get('a1c544')).toBe('changed')
    expect(new Map(without.delete('a1c544').entries())).toEqual(new Map([['other', 'o'], ['a651x', 'a651x'], ['a1c545', 'a1c545']]))
  })
})
