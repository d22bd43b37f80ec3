// files: a producer notices new files in inbox/ and publishes one event per file; a
// consumer writes an upper-cased copy to outbox/ as its one mutation, then publishes a
// `done` event from next. Running it again processes nothing twice: the producer
// remembers what it has seen, and event ids are the file names.
export default {
  topics: ['files', 'done'],

  producers: {
    scan: {
      schedule: { every: '5m' },
      publishes: ['files'],
      async handler(state) {
        const seen = new Set((state && state.seen) || []);
        const entries = await Files.list({ dir: 'inbox' });
        for (const e of entries) {
          if (e.dir || seen.has(e.name)) continue;
          await Topics.publish({ topic: 'files', id: e.name, payload: { name: e.name } });
          seen.add(e.name);
        }
        return { seen: [...seen].sort() };
      },
    },
  },

  consumers: {
    process: {
      subscribe: ['files'],
      publishes: ['done'],
      async prepare(state) {
        const events = await Topics.peek({ topic: 'files', limit: 1 });
        if (events.length === 0) return { reservations: [], data: null };
        const ev = events[0];
        const file = await Files.read({ path: 'inbox/' + ev.payload.name });
        return {
          reservations: [{ topic: 'files', ids: [ev.id] }],
          data: { name: ev.payload.name, content: file.content, processed: ((state && state.processed) || 0) + 1 },
        };
      },
      async mutate(prepared) {
        if (!prepared) return;
        await Files.write({ path: 'outbox/' + prepared.name, content: prepared.content.toUpperCase() });
      },
      async next(prepared, result) {
        if (!prepared) return undefined; // nothing reserved: keep the state
        await Topics.publish({ topic: 'done', id: prepared.name, payload: { name: prepared.name, status: result.status } });
        return { processed: prepared.processed };
      },
    },
    report: {
      subscribe: ['done'],
      async prepare() {
        const events = await Topics.peek({ topic: 'done', limit: 100 });
        return { reservations: events.length ? [{ topic: 'done', ids: events.map((e) => e.id) }] : [], data: events.map((e) => e.payload.name) };
      },
      async next(names) {
        if (names && names.length) console.log('done: ' + names.join(', '));
      },
    },
  },
};
