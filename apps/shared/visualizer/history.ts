/**
 * What the visualizer's server keeps of the messages it received, for pages that connect late
 * and pages that have not had everything yet (R109). Bounded three ways: a number of messages, a
 * number of definitions (`@xstate.actor` and `plan-mode.agent`: what every later message of an
 * actor or agent is read against, so they are kept apart and outlive the messages around them),
 * and the bytes of their JSON. Over a bound the oldest go, other messages before definitions.
 * Each message is kept as the JSON a page is sent, so what is counted is what is held.
 */

/** One kept message: its arrival number and its JSON. */
export interface RetainedEntry {
  seq: number
  json: string
  /** The UTF-8 length of `json`. */
  bytes: number
}

/** The bounds of a {@link RetainedHistory}. */
export interface RetentionLimits {
  /** Most messages kept, definitions not counted. */
  maxMessages: number
  /** Most definitions kept. */
  maxDefinitions: number
  /** Most bytes of JSON kept, definitions counted. */
  maxBytes: number
}

/** The retained messages, in arrival order. */
export interface RetainedHistory {
  /** Keeps a message; `definition` puts it with the definitions. Entries must come in rising `seq`. */
  add(seq: number, json: string, definition: boolean): void
  /**
   * The kept entries after `seq`, in arrival order: at most `maxItems`, and no more bytes than
   * `maxBytes` past the first (which comes however large it is).
   */
  after(seq: number, maxItems: number, maxBytes: number): RetainedEntry[]
  /** The kept entry of `seq`, or undefined when it was never added or has been dropped. */
  get(seq: number): RetainedEntry | undefined
  /** How many entries are kept. */
  readonly size: number
  /** The bytes of their JSON. */
  readonly bytes: number
  /** How many entries were dropped to keep the bounds. */
  readonly dropped: number
  /** The highest seq dropped (0 before the first drop): a page that has not had it yet has missed it. */
  readonly highestDroppedSeq: number
}

/** An empty history within `limits`. */
export function createRetainedHistory(limits: RetentionLimits): RetainedHistory {
  const messages = new Queue<RetainedEntry>()
  const definitions = new Queue<RetainedEntry>()
  let bytes = 0
  let dropped = 0
  let highestDroppedSeq = 0
  const drop = (queue: Queue<RetainedEntry>) => {
    const entry = queue.shift()!
    bytes -= entry.bytes
    dropped++
    highestDroppedSeq = Math.max(highestDroppedSeq, entry.seq)
  }
  return {
    add(seq, json, definition) {
      const entry = { seq, json, bytes: Buffer.byteLength(json) }
      ;(definition ? definitions : messages).push(entry)
      bytes += entry.bytes
      while (messages.length > limits.maxMessages) drop(messages)
      while (definitions.length > limits.maxDefinitions) drop(definitions)
      while (bytes > limits.maxBytes && messages.length + definitions.length > 0) drop(messages.length > 0 ? messages : definitions)
    },
    after(seq, maxItems, maxBytes) {
      const found: RetainedEntry[] = []
      let i = messages.firstIndexAfter(seq)
      let j = definitions.firstIndexAfter(seq)
      let size = 0
      while (found.length < maxItems) {
        const message = messages.at(i)
        const definition = definitions.at(j)
        const next = message && (!definition || message.seq < definition.seq) ? message : definition
        if (!next || (found.length > 0 && size + next.bytes > maxBytes)) break
        if (next === message) i++
        else j++
        found.push(next)
        size += next.bytes
      }
      return found
    },
    get(seq) {
      for (const queue of [definitions, messages]) {
        const entry = queue.at(queue.firstIndexAfter(seq - 1))
        if (entry?.seq === seq) return entry
      }
      return undefined
    },
    get size() {
      return messages.length + definitions.length
    },
    get bytes() {
      return bytes
    },
    get dropped() {
      return dropped
    },
    get highestDroppedSeq() {
      return highestDroppedSeq
    },
  }
}

/** A first-in first-out queue of entries in rising seq, with O(1) amortized `shift`. */
class Queue<T extends { seq: number }> {
  private items: T[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined
    const item = this.items[this.head++]
    // Drop the consumed front now and then, so the array does not keep what left the queue.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  /** The `index`-th entry from the front, or undefined past the end. */
  at(index: number): T | undefined {
    return index < this.length ? this.items[this.head + index] : undefined
  }

  /** The index of the first entry whose seq is above `seq` (the length when none is). */
  firstIndexAfter(seq: number): number {
    let low = this.head
    let high = this.items.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.items[middle]!.seq <= seq) low = middle + 1
      else high = middle
    }
    return low - this.head
  }
}
