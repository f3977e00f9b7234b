/**
 * An immutable map from strings, for the registry's and the queues' state (`agents.machine.ts`, `queue.machine.ts`): `set` and
 * `delete` return a new map and leave the one they were called on as it was, in O(log₃₂ n) (a hash
 * array mapped trie: only the nodes on the key's path are copied), so that a transition of a
 * service with thousands of agents makes a new value without copying them all.
 */

interface Leaf<V> {
  readonly hash: number
  readonly key: string
  readonly value: V
}

/** Keys whose hashes are equal in all 32 bits. */
interface Collision<V> {
  readonly hash: number
  readonly leaves: readonly Leaf<V>[]
}

/** Children indexed by 5 bits of the hash at this depth: `bitmap` says which are present. */
interface Branch<V> {
  readonly bitmap: number
  readonly children: readonly Child<V>[]
}

type Child<V> = Leaf<V> | Collision<V> | Branch<V>

const BITS = 5
const EMPTY: Branch<never> = { bitmap: 0, children: [] }

/**
 * The last key hashed, and its hash: a service reads one agent's entry many times in a row (`get`,
 * `section`). It starts as the empty string's, so that a key that is not a string is never taken
 * for the last one: it fails as it always did.
 */
let lastKey = ''
let lastHash = 0x811c9dc5

/** FNV-1a over the UTF-16 code units (of the last key again: its hash, remembered). */
function hashOf(key: string): number {
  if (key === lastKey) return lastHash
  // Hashed before it is remembered: a key that cannot be hashed (not a string) is never remembered.
  const hash = fnv1a(key)
  lastKey = key
  return (lastHash = hash)
}

function fnv1a(key: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  return hash >>> 0
}

function popcount(n: number): number {
  n -= (n >>> 1) & 0x55555555
  n = (n & 0x33333333) + ((n >>> 2) & 0x33333333)
  return (((n + (n >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24
}

const isBranch = <V>(node: Child<V>): node is Branch<V> => 'bitmap' in node
const isLeaf = <V>(node: Child<V>): node is Leaf<V> => 'key' in node

/** A copy of `array` with `item` at `i` (replacing, or inserted before what was there). */
function withItem<T>(array: readonly T[], i: number, item: T, insert: boolean): T[] {
  if (!insert) {
    const copy = array.slice()
    copy[i] = item
    return copy
  }
  const copy = new Array<T>(array.length + 1)
  for (let j = 0; j < i; j++) copy[j] = array[j]!
  copy[i] = item
  for (let j = i; j < array.length; j++) copy[j + 1] = array[j]!
  return copy
}

/** One node holding both `a` and `leaf`, whose hashes agree below `shift`. */
function pair<V>(a: Leaf<V> | Collision<V>, leaf: Leaf<V>, shift: number): Child<V> {
  if (a.hash === leaf.hash) return { hash: a.hash, leaves: [...('leaves' in a ? a.leaves : [a]), leaf] }
  const bitA = 1 << ((a.hash >>> shift) & 31)
  const bitB = 1 << ((leaf.hash >>> shift) & 31)
  if (bitA === bitB) return { bitmap: bitA, children: [pair(a, leaf, shift + BITS)] }
  // Unsigned: the bit of slot 31 is negative as an int32.
  return { bitmap: bitA | bitB, children: bitA >>> 0 < bitB >>> 0 ? [a, leaf] : [leaf, a] }
}

/** Whether the last `put` added a key (rather than replacing a value): `set` counts the size by it. */
let added = false

/** `node` with `leaf` set: a new node, or `node` itself when it already held that very value. */
function put<V>(node: Child<V>, leaf: Leaf<V>, shift: number): Child<V> {
  if (isLeaf(node)) {
    if (node.key === leaf.key) return node.value === leaf.value ? node : leaf
    added = true
    return pair(node, leaf, shift)
  }
  if (!isBranch(node)) {
    const i = node.hash === leaf.hash ? node.leaves.findIndex((l) => l.key === leaf.key) : -1
    if (i === -1) added = true
    if (node.hash !== leaf.hash) return pair(node, leaf, shift)
    return { hash: node.hash, leaves: i === -1 ? [...node.leaves, leaf] : withItem(node.leaves, i, leaf, false) }
  }
  const bit = 1 << ((leaf.hash >>> shift) & 31)
  const i = popcount(node.bitmap & (bit - 1))
  if ((node.bitmap & bit) === 0) {
    added = true
    return { bitmap: node.bitmap | bit, children: withItem(node.children, i, leaf, true) }
  }
  const child = node.children[i]!
  const changed = put(child, leaf, shift + BITS)
  return changed === child ? node : { bitmap: node.bitmap, children: withItem(node.children, i, changed, false) }
}

/** `node` without `key`: a new node, `node` itself when it did not hold it, undefined when it emptied. */
function remove<V>(node: Child<V>, key: string, hash: number, shift: number): Child<V> | undefined {
  if (isLeaf(node)) return node.key === key ? undefined : node
  if (!isBranch(node)) {
    const leaves = node.leaves.filter((l) => l.key !== key)
    if (leaves.length === node.leaves.length) return node
    return leaves.length === 1 ? leaves[0] : { hash: node.hash, leaves }
  }
  const bit = 1 << ((hash >>> shift) & 31)
  if ((node.bitmap & bit) === 0) return node
  const i = popcount(node.bitmap & (bit - 1))
  const child = node.children[i]!
  const changed = remove(child, key, hash, shift + BITS)
  if (changed === child) return node
  if (changed !== undefined) return { bitmap: node.bitmap, children: withItem(node.children, i, changed, false) }
  if (node.bitmap === bit) return undefined
  const children = node.children.slice()
  children.splice(i, 1)
  return { bitmap: node.bitmap & ~bit, children }
}

function* leaves<V>(node: Child<V>): Generator<Leaf<V>> {
  if (isLeaf(node)) yield node
  else if (isBranch(node)) for (const child of node.children) yield* leaves(child)
  else yield* node.leaves
}

/** An immutable map from strings to `V` (see the file's header). */
export class PersistentMap<V> {
  static empty<V>(): PersistentMap<V> {
    return new PersistentMap<V>(EMPTY, 0)
  }

  private constructor(
    private readonly root: Branch<V>,
    /** How many keys it holds. */
    readonly size: number,
  ) {}

  get(key: string): V | undefined {
    const hash = hashOf(key)
    let node: Child<V> = this.root
    for (let shift = 0; ; shift += BITS) {
      if (isLeaf(node)) return node.key === key ? node.value : undefined
      if (!isBranch(node)) return node.leaves.find((l) => l.key === key)?.value
      const bit = 1 << ((hash >>> shift) & 31)
      if ((node.bitmap & bit) === 0) return undefined
      node = node.children[popcount(node.bitmap & (bit - 1))]!
    }
  }

  has(key: string): boolean {
    return this.get(key) !== undefined
  }

  /** A map with `key` set to `value` (this one, when it already held that very value). */
  set(key: string, value: V): PersistentMap<V> {
    added = false
    const root = put(this.root, { hash: hashOf(key), key, value }, 0) as Branch<V>
    return root === this.root ? this : new PersistentMap(root, added ? this.size + 1 : this.size)
  }

  /** A map without `key` (this one, when it did not hold it). */
  delete(key: string): PersistentMap<V> {
    const root = remove(this.root, key, hashOf(key), 0) as Branch<V> | undefined
    if (root === this.root) return this
    return new PersistentMap(root ?? EMPTY, this.size - 1)
  }

  /** Its entries, in no particular order. */
  *entries(): Generator<[string, V]> {
    for (const leaf of leaves(this.root)) yield [leaf.key, leaf.value]
  }

  *values(): Generator<V> {
    for (const leaf of leaves(this.root)) yield leaf.value
  }
}
