/** How often each pod says it is alive on `<prefix>.ctl.pod`. */
export const ANNOUNCE_MS = 1000;
/**
 * Silence after which a pod is gone (a SIGKILL, a lost network), and so are its publishers: two
 * announcements missed, with half an interval's grace for a busy event loop on either side.
 */
export const POD_SILENCE_MS = 2.5 * ANNOUNCE_MS;
/** Pods heard at once: far above any deployment; announcements from more are refused (`overload`). */
export const MAX_PODS = 256;

/**
 * The other pods this pod hears announce themselves, and when each was last
 * heard. One silent for two announcements is forgotten and reported once;
 * heard again, it counts as new. Bounded by MAX_PODS.
 */
export class Pods {
  private readonly lastHeard = new Map<string, number>();

  /** An announcement: 'new' for a pod not heard before (or since it went silent), 'known', or 'full' when no more fit. */
  heard(pod: string, now: number): 'new' | 'known' | 'full' {
    const known = this.lastHeard.has(pod);
    if (!known && this.lastHeard.size >= MAX_PODS) return 'full';
    this.lastHeard.set(pod, now);
    return known ? 'known' : 'new';
  }

  /** Pods unheard for two announcements: forgotten here and returned, each once. */
  silent(now: number): string[] {
    const gone: string[] = [];
    for (const [pod, at] of this.lastHeard) {
      if (now - at <= POD_SILENCE_MS) continue;
      this.lastHeard.delete(pod);
      gone.push(pod);
    }
    return gone;
  }
}
