import type { WsTopics } from './route.js';

/** How a backend publishes to a topic (uWS: `app.publish`; node: its in-process fan-out). */
export type TopicPublisher = (topic: string, data: string | Uint8Array) => void;

/**
 * The server's topics, for services that publish without holding a socket (e.g. the live log
 * to every `/live/ws` client of a project). The HTTP backend binds its publisher once it listens
 * and unbinds it at shutdown; before and after, a publish reaches nobody and returns false.
 */
export class TopicHub implements WsTopics {
  #publisher: TopicPublisher | null = null;

  bind(p: TopicPublisher | null): void {
    this.#publisher = p;
  }

  publish(topic: string, data: string | Uint8Array): boolean {
    const p = this.#publisher;
    if (p === null) return false;
    p(topic, data);
    return true;
  }
}
