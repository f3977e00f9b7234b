/**
 * Reading what a host, a port or a user hands over, which is untrusted (R62): each field is read
 * once, from the object itself. A getter that answers differently on each read, a value inherited
 * from a prototype (or from a polluted `Object.prototype`) and a Proxy cannot then make one reader
 * see what another did not.
 */

/**
 * `target`'s own property `key`, read once: a data property's value, or what its own getter
 * returns, called once. `undefined` when `target` is not an object (or function) or has no such
 * own property; an inherited one does not count.
 * @throws what a throwing getter or Proxy trap throws: the field cannot be read.
 */
export function ownField(target: unknown, key: PropertyKey): unknown {
  if ((typeof target !== 'object' && typeof target !== 'function') || target === null) return undefined
  const descriptor = Object.getOwnPropertyDescriptor(target, key)
  if (descriptor === undefined) return undefined
  return 'value' in descriptor ? descriptor.value : descriptor.get?.call(target)
}
