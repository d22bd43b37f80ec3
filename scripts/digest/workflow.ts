// digest: a producer notices new bills in inbox/ and publishes one event per file; a
// consumer turns each into a Markdown line in outbox/ (its one mutation), formatting
// dates with the date-fns package and its own modules in src/.
import { parseBill } from './src/parse';
import { render } from './src/render';
import type { Prepared } from './src/types';

export default {
  topics: ['bills', 'digested'],

  producers: {
    scan: {
      schedule: { every: '5m' },
      publishes: ['bills'],
      async handler(state: { seen?: string[] } | null) {
        const seen = new Set(state?.seen ?? []);
        for (const e of await Files.list({ dir: 'inbox' })) {
          if (e.dir || !e.name.endsWith('.json') || seen.has(e.name)) continue;
          await Topics.publish({ topic: 'bills', id: e.name, payload: { name: e.name } });
          seen.add(e.name);
        }
        return { seen: [...seen].sort() };
      },
    },
  },

  consumers: {
    digest: {
      subscribe: ['bills'],
      publishes: ['digested'],
      async prepare(state: { digested?: number } | null) {
        const events = await Topics.peek({ topic: 'bills', limit: 1 });
        if (events.length === 0) return { reservations: [], data: null };
        const ev = events[0];
        const name = (ev.payload as { name: string }).name;
        const file = await Files.read({ path: 'inbox/' + name });
        const bill = parseBill(name, file.content);
        const data: Prepared = { name, markdown: render(bill, new Date()), digested: (state?.digested ?? 0) + 1 };
        return { reservations: [{ topic: 'bills', ids: [ev.id] }], data };
      },
      async mutate(prepared: Prepared | null) {
        if (!prepared) return;
        await Files.write({ path: 'outbox/' + prepared.name.replace(/\.json$/, '.md'), content: prepared.markdown });
      },
      async next(prepared: Prepared | null, result: { status: string }) {
        if (!prepared) return undefined;
        await Topics.publish({ topic: 'digested', id: prepared.name, payload: { name: prepared.name, status: result.status } });
        return { digested: prepared.digested };
      },
    },
  },
};
