// Sharing one request among the callers of a process that need the same answer "as of now". A caller is answered by
// a call that started after it asked: the one in flight when it asked started too early (a listing begun before
// its own put may miss it), so it joins the next, which starts when the one in flight ends. Every caller who asks
// while a call runs shares that next one: with no call in flight a caller waits for nothing, and under load a burst
// of callers costs two calls instead of one each.

interface Slot<T> {
  running: Promise<T> | undefined;
  next: Promise<T> | undefined;
}

export class Coalescer<T> {
  private readonly slots = new Map<string, Slot<T>>();

  /** `fn`'s answer from a call started after this one was made; callers of the same key share calls. */
  run(key: string, fn: () => Promise<T>): Promise<T> {
    let slot = this.slots.get(key);
    if (!slot) {
      slot = { running: undefined, next: undefined };
      this.slots.set(key, slot);
    }
    if (slot.next) return slot.next;
    const running = slot.running;
    if (!running) return this.start(key, slot, fn);
    const s = slot;
    s.next = running.then(
      () => this.start(key, s, fn),
      () => this.start(key, s, fn),
    );
    return s.next;
  }

  /** Keys with a call in flight or waiting (tests). */
  get size(): number {
    return this.slots.size;
  }

  private start(key: string, slot: Slot<T>, fn: () => Promise<T>): Promise<T> {
    slot.next = undefined;
    const call = fn();
    slot.running = call;
    const settle = () => {
      if (slot.running === call) slot.running = undefined;
      if (!slot.running && !slot.next && this.slots.get(key) === slot) this.slots.delete(key);
    };
    call.then(settle, settle);
    return call;
  }
}

/** A set that forgets its oldest members past `capacity`: what a process remembers about groups it saw finish. */
export class BoundedSet {
  private readonly items = new Set<string>();
  constructor(private readonly capacity: number) {}
  has(key: string): boolean {
    return this.items.has(key);
  }
  add(key: string): void {
    this.items.delete(key);
    this.items.add(key);
    while (this.items.size > this.capacity) this.items.delete(this.items.values().next().value as string);
  }
}
