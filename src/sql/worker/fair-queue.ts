/**
 * The SQL pool's admission and order between projects (docs/api.md "Raw SQL": fairness).
 * Each tenant (project) has its own bounded FIFO and may run at most `perTenant` jobs at
 * once. The next job goes to the tenant with the fewest running jobs, ties to the one
 * served longest ago: a tenant that floods the pool only ever competes with its own
 * queue, and another tenant's job runs as soon as any worker frees up.
 */
interface Tenant<T> {
  queue: T[];
  running: number;
  /** Sequence number of its last start (0: never). */
  served: number;
}

export class FairQueue<T> {
  readonly #tenants = new Map<string, Tenant<T>>();
  #seq = 0;

  constructor(
    /** Jobs one tenant may run at once (at least 1). */
    readonly perTenant: number,
    /** Jobs one tenant may have waiting; a push beyond it is refused. */
    readonly maxQueued: number,
  ) {}

  /** Queues a job; false when the tenant's queue is full (the caller answers 429). */
  push(tenant: string, item: T): boolean {
    let t = this.#tenants.get(tenant);
    if (!t) {
      t = { queue: [], running: 0, served: 0 };
      this.#tenants.set(tenant, t);
    }
    if (t.queue.length >= this.maxQueued) return false;
    t.queue.push(item);
    return true;
  }

  /** Takes a job out of its queue before it started (its time ran out); false if it is not queued. */
  remove(tenant: string, item: T): boolean {
    const t = this.#tenants.get(tenant);
    const i = t ? t.queue.indexOf(item) : -1;
    if (i < 0) return false;
    t!.queue.splice(i, 1);
    this.#drop(tenant, t!);
    return true;
  }

  /** The next job to start, now counted as running for its tenant; null when none may start. */
  next(): { tenant: string; item: T } | null {
    let best: Tenant<T> | null = null;
    let bestName = '';
    for (const [name, t] of this.#tenants) {
      if (t.queue.length === 0 || t.running >= this.perTenant) continue;
      if (best === null || t.running < best.running || (t.running === best.running && t.served < best.served)) {
        best = t;
        bestName = name;
      }
    }
    if (best === null) return null;
    best.running++;
    best.served = ++this.#seq;
    return { tenant: bestName, item: best.queue.shift()! };
  }

  /** A started job of the tenant ended (answered, failed or its worker was replaced). */
  done(tenant: string): void {
    const t = this.#tenants.get(tenant);
    if (!t || t.running === 0) return;
    t.running--;
    this.#drop(tenant, t);
  }

  /** Running and queued jobs of a tenant (diagnostics, tests). */
  load(tenant: string): { running: number; queued: number } {
    const t = this.#tenants.get(tenant);
    return { running: t?.running ?? 0, queued: t?.queue.length ?? 0 };
  }

  /** Empties every queue (shutdown); returns the jobs that never started. */
  drain(): T[] {
    const out: T[] = [];
    for (const t of this.#tenants.values()) out.push(...t.queue.splice(0));
    for (const [name, t] of this.#tenants) this.#drop(name, t);
    return out;
  }

  #drop(name: string, t: Tenant<T>): void {
    // note: an idle tenant is forgotten; its served order restarts at 0, which favours it (it waited longest).
    if (t.running === 0 && t.queue.length === 0) this.#tenants.delete(name);
  }
}
